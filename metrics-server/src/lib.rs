//! tinykube-metrics-server: the cluster's resource metrics pipeline, as metrics-server is on a
//! real cluster. It watches nodes and pods, scrapes each node's kubelet `/metrics/resource`
//! every `--metric-resolution` ([`scrape`]), keeps the last two points of every node and
//! container ([`storage`]), and serves `metrics.k8s.io/v1beta1` NodeMetrics and PodMetrics
//! ([`api`]) to the API server's aggregator, with which it registers itself ([`register`]).
//! `kubectl top` and the HorizontalPodAutoscaler read it through the API server.
//!
//! One entry, [`run`].

pub mod api;
pub mod prom;
pub mod register;
pub mod scrape;
pub mod storage;

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tinykube_client::reflector::Informer;
use tinykube_client::{Api, Client, ListParams};
use tinykube_clock::Clock;
use tokio_util::sync::CancellationToken;

/// Settings of one metrics server.
#[derive(Debug, Clone)]
pub struct Config {
    pub client: tinykube_client::Config,
    /// Where the metrics API is served (plain HTTP; port 0 picks a free one).
    pub bind: SocketAddr,
    /// How often the kubelets are scraped (`--metric-resolution`).
    pub metric_resolution: Duration,
    /// How long one kubelet scrape may take.
    pub kubelet_request_timeout: Duration,
    /// Create the Service and APIService that put this server behind the aggregator.
    pub register: bool,
    /// The cluster's time: scrape cadence and the metrics' creation times (the kubelets stamp
    /// the samples with theirs).
    pub clock: Clock,
}

impl Config {
    /// Defaults of the binary: loopback, any port, 15 s resolution, registering.
    pub fn new(client: tinykube_client::Config) -> Config {
        Config {
            client,
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            metric_resolution: Duration::from_secs(15),
            kubelet_request_timeout: Duration::from_secs(10),
            register: true,
            clock: Clock::real(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("connecting to the API server: {0}")]
    Client(#[from] tinykube_client::ClientError),
    #[error("serving the metrics API on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("building the kubelet client: {0}")]
    Http(#[from] reqwest::Error),
}

/// Serve until `shutdown`; `bound` hears the address once listening.
pub async fn run_with(
    config: Config,
    shutdown: CancellationToken,
    bound: Option<tokio::sync::oneshot::Sender<SocketAddr>>,
) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .map_err(|source| Error::Bind {
            addr: config.bind,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| Error::Bind {
        addr: config.bind,
        source,
    })?;
    tracing::info!(%addr, "serving metrics.k8s.io/v1beta1");
    if let Some(tx) = bound {
        let _ = tx.send(addr);
    }
    let client = Client::new(config.client.clone())?;
    let nodes = Informer::new(Api::<Node>::all(client.clone()), ListParams::default())
        .with_transform(slim_node);
    let pods = Informer::new(Api::<Pod>::all(client.clone()), ListParams::default())
        .with_transform(slim_pod);
    let (node_store, pod_store) = (nodes.store(), pods.store());
    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(run_until(nodes.run(), shutdown.clone())));
    tasks.push(tokio::spawn(run_until(pods.run(), shutdown.clone())));
    let storage = Arc::new(RwLock::new(storage::Storage::new(config.metric_resolution)));
    let http = tinykube_client::http_builder("http://127.0.0.1")
        .timeout(config.kubelet_request_timeout)
        .build()?;
    let scraper = scrape::Scraper {
        http,
        nodes: node_store.clone(),
        storage: storage.clone(),
        clock: config.clock.clone(),
        resolution: config.metric_resolution,
    };
    {
        let (mut n, mut p) = (node_store.clone(), pod_store.clone());
        let shutdown = shutdown.clone();
        tasks.push(tokio::spawn(async move {
            n.wait_ready().await;
            p.wait_ready().await;
            scraper.run(shutdown).await;
        }));
    }
    if config.register {
        tasks.push(tokio::spawn(run_until(
            {
                let client = client.clone();
                async move { register::register(&client, addr).await }
            },
            shutdown.clone(),
        )));
    }
    let shared = Arc::new(api::Shared {
        storage,
        nodes: node_store,
        pods: pod_store,
        clock: config.clock.clone(),
    });
    let app = api::router(shared);
    let stop = shutdown.clone();
    let served =
        axum::serve(listener, app).with_graceful_shutdown(async move { stop.cancelled().await });
    if let Err(e) = served.await {
        tracing::error!(error = %e, "metrics API server failed");
    }
    shutdown.cancel();
    if config.register {
        register::withdraw(&client).await;
    }
    for t in tasks {
        let _ = t.await;
    }
    Ok(())
}

/// What the metrics server reads of a node: its name, labels and kubelet address annotation.
fn slim_node(node: Node) -> Node {
    let m = node.metadata;
    let address = m
        .annotations
        .and_then(|mut a| a.remove_entry(scrape::ADDRESS_ANNOTATION));
    Node {
        metadata: ObjectMeta {
            name: m.name,
            labels: m.labels,
            annotations: address.map(|(k, v)| [(k, v)].into()),
            resource_version: m.resource_version,
            ..ObjectMeta::default()
        },
        ..Node::default()
    }
}

/// What the metrics server reads of a pod: name, namespace, labels, node and phase (as
/// metrics-server's informer keeps only metadata and these).
fn slim_pod(pod: Pod) -> Pod {
    let m = pod.metadata;
    Pod {
        metadata: ObjectMeta {
            name: m.name,
            namespace: m.namespace,
            labels: m.labels,
            resource_version: m.resource_version,
            ..ObjectMeta::default()
        },
        spec: pod.spec.map(|s| PodSpec {
            node_name: s.node_name,
            ..PodSpec::default()
        }),
        status: pod.status.map(|s| PodStatus {
            phase: s.phase,
            ..PodStatus::default()
        }),
    }
}

/// Serve until `shutdown`.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), Error> {
    run_with(config, shutdown, None).await
}

async fn run_until(task: impl std::future::Future<Output = ()>, shutdown: CancellationToken) {
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = task => {}
    }
}

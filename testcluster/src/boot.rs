//! Starting a cluster: a runtime of its own, the API server on a port-0 listener, the
//! controller manager, the scheduler and one kubelet task per node, then the wait until the
//! nodes are Ready and schedulable.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use serde_json::json;
use tinykube_client::{Api, Client, ListParams, Patch};
use tinykube_clock::Clock;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::builder::{addresses, Builder};
use crate::{lock, Running, StartError, TestCluster};

/// How long the nodes may take to become Ready before `start` gives up.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

/// One node's kubelet: how to start it again, and the task running it (if any).
pub(crate) struct KubeletRun {
    pub config: tinykube_kubelet::Config,
    pub stop: CancellationToken,
    pub task: Option<JoinHandle<()>>,
}

pub(crate) async fn start(b: Builder) -> Result<TestCluster, StartError> {
    let enabled = tinykube_controllers::registry::enabled(&b.controllers)
        .map_err(|e| StartError::Controllers(e.to_string()))?;
    let enabled: Vec<&str> = enabled.iter().map(|e| e.name).collect();
    let dir = match &b.temp_parent {
        Some(parent) => tempfile::Builder::new()
            .prefix("tinykube-test-")
            .tempdir_in(parent),
        None => tempfile::Builder::new().prefix("tinykube-test-").tempdir(),
    }
    .map_err(StartError::TempDir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("tinykube-test")
        .enable_all()
        .build()
        .map_err(StartError::Runtime)?;
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(StartError::Listen)?;
    listener.set_nonblocking(true).map_err(StartError::Listen)?;
    let addr = listener.local_addr().map_err(StartError::Listen)?;
    let url = format!("http://{addr}");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, kubeconfig_text(&url)).map_err(StartError::TempDir)?;
    let clock = match b.manual_clock {
        Some(start) => Clock::manual(start),
        None => Clock::real(),
    };
    let shutdown = CancellationToken::new();
    let running = Running {
        runtime: Some(runtime),
        shutdown: shutdown.clone(),
        tasks: Mutex::new(Vec::new()),
        kubelets: Mutex::new(BTreeMap::new()),
        dir: Some(dir),
        etcd: Mutex::new(None),
    };
    // From here on, dropping `running` stops whatever was started and removes the data.
    let data = running.dir().to_path_buf();
    let handle = running.handle();

    let mut api_config = tinykube_apiserver::Config::new(addr, data.join("apiserver"));
    api_config.clock = clock.clone();
    api_config.store = tinykube_store::StoreConfig {
        durable: b.durable,
        ..Default::default()
    };
    std::fs::create_dir_all(&api_config.data_dir).map_err(StartError::TempDir)?;
    if b.etcd {
        let etcd_dir = data.join("etcd");
        let etcd = handle
            .spawn(async move { tinykube_store::LocalEtcd::start(&etcd_dir).await })
            .await
            .map_err(|e| StartError::Component(e.to_string()))?
            .map_err(|e| StartError::Component(format!("etcd: {e}")))?;
        let servers = vec![etcd.client_url()];
        *lock(&running.etcd) = Some(etcd);
        api_config.storage =
            tinykube_apiserver::Storage::Etcd(tinykube_store::EtcdConfig::new(servers));
    }
    let token = shutdown.clone();
    running.spawn("apiserver", async move {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
        tinykube_apiserver::serve(listener, api_config, token)
            .await
            .map_err(|e| e.to_string())
    });
    let client_config = tinykube_client::Config::new(&url);
    handle
        .spawn(wait_for_api(client_config.clone()))
        .await
        .map_err(|e| StartError::Component(e.to_string()))??;

    if !enabled.is_empty() {
        let mut options = tinykube_controllers::Options {
            root_ca_file: Some(data.join("apiserver").join("ca.crt")),
            service_account_private_key_file: Some(data.join("apiserver").join("ca.key")),
            ..Default::default()
        };
        if let Some(g) = b.node_monitor_grace_period {
            options.node_monitor_grace_period = g;
        }
        if let Some(p) = b.pod_gc_period {
            options.pod_gc_check_period = p;
        }
        if let Some(n) = b.terminated_pod_gc_threshold {
            options.terminated_pod_gc_threshold = n;
        }
        if let Some(d) = b.job_pod_failure_backoff {
            options.job_pod_failure_backoff = d;
        }
        let config = tinykube_controllers::Config {
            client: client_config.clone(),
            controllers: b.controllers.clone(),
            leader_election: None,
            host: "tinykube-test".into(),
            options,
            clock: clock.clone(),
        };
        let token = shutdown.clone();
        running.spawn("controller-manager", async move {
            tinykube_controllers::run(config, token)
                .await
                .map_err(|e| e.to_string())
        });
    }
    if b.scheduler {
        let config = tinykube_scheduler::Config {
            client: client_config.clone(),
            profiles: vec![tinykube_scheduler::config::Profile::default_named(
                "default-scheduler",
            )],
            seed: b.seed,
            host: "tinykube-test".into(),
            leader_election: None,
            health_addr: None,
            clock: clock.clone(),
        };
        let token = shutdown.clone();
        running.spawn("scheduler", async move {
            tinykube_scheduler::run(config, token)
                .await
                .map_err(|e| e.to_string())
        });
    }
    if let Some(resolution) = b.metrics_resolution {
        let config = tinykube_metrics_server::Config {
            metric_resolution: resolution,
            clock: clock.clone(),
            ..tinykube_metrics_server::Config::new(client_config.clone())
        };
        let token = shutdown.clone();
        running.spawn("metrics-server", async move {
            tinykube_metrics_server::run(config, token)
                .await
                .map_err(|e| e.to_string())
        });
    }
    for (i, spec) in b.nodes.iter().enumerate() {
        let config = kubelet_config(&b, i, &data, &client_config, &clock)?;
        for (file, manifest) in &spec.static_pods {
            let dir = data.join("nodes").join(&spec.name).join("manifests");
            std::fs::write(dir.join(file), manifest).map_err(StartError::TempDir)?;
        }
        running.start_kubelet(&spec.name, config);
    }
    let names: Vec<String> = b.nodes.iter().map(|n| n.name.clone()).collect();
    let waits = handle.spawn(wait_ready(
        client_config,
        names.clone(),
        !enabled.contains(&"nodelifecycle"),
        enabled.contains(&"serviceaccount"),
    ));
    waits
        .await
        .map_err(|e| StartError::Component(e.to_string()))??;
    Ok(TestCluster {
        url,
        kubeconfig,
        nodes: names,
        clock,
        step: Duration::from_secs((b.lease_seconds() as u64 / 4).max(1)),
        running: Some(running),
    })
}

/// The kubelet of node `i`, as `tinykube up` would start it.
fn kubelet_config(
    b: &Builder,
    i: usize,
    data: &Path,
    client: &tinykube_client::Config,
    clock: &Clock,
) -> Result<tinykube_kubelet::Config, StartError> {
    let spec = &b.nodes[i];
    let bad = |e: &dyn std::fmt::Display| StartError::Node {
        node: spec.name.clone(),
        message: e.to_string(),
    };
    let manifests: PathBuf = data.join("nodes").join(&spec.name).join("manifests");
    std::fs::create_dir_all(&manifests).map_err(StartError::TempDir)?;
    let (node_ip, pod_cidr) = addresses(i);
    let node = tinykube_kubelet::node::NodeConfig {
        name: spec.name.clone(),
        labels: spec.labels.clone(),
        taints: tinykube_kubelet::node::parse_taints(&spec.taints).map_err(|e| bad(&e))?,
        node_ip,
        pod_cidr,
        manifest_path: Some(manifests),
    };
    let update = b
        .node_status_update_frequency
        .unwrap_or(Duration::from_secs(10));
    Ok(tinykube_kubelet::Config {
        client: client.clone(),
        nodes: vec![node],
        capacity: tinykube_kubelet::node::parse_capacity(&spec.capacity).map_err(|e| bad(&e))?,
        register_node: true,
        file_check_frequency: b.file_check_frequency,
        manifest_url: None,
        http_check_frequency: Duration::from_secs(20),
        node_status_update_frequency: update,
        node_status_report_frequency: if b.node_status_update_frequency.is_some() {
            update
        } else {
            Duration::from_secs(300)
        },
        node_lease_duration_seconds: b.lease_seconds(),
        serve_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cluster_dns: "10.96.0.10".into(),
        cluster_domain: "cluster.local".into(),
        seed: b.seed.unwrap_or(0),
        clock: clock.clone(),
    })
}

/// The kubeconfig of a cluster served over plain HTTP on loopback.
fn kubeconfig_text(url: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: {url}\n  name: tinykube\ncontexts:\n- context:\n    cluster: tinykube\n    user: admin\n  name: tinykube\ncurrent-context: tinykube\nusers:\n- name: admin\n  user: {{}}\n"
    )
}

/// Poll `what` every few milliseconds until it answers `Some`, or give up after the timeout.
async fn poll<T, F, Fut>(what: &str, mut f: F) -> Result<T, StartError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Some(t) = f().await {
            return Ok(t);
        }
        if Instant::now() > deadline {
            return Err(StartError::Timeout(what.to_string()));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Wait until the API server answers (its bootstrap objects are there before it does).
async fn wait_for_api(config: tinykube_client::Config) -> Result<(), StartError> {
    let client = Client::new(config).map_err(|e| StartError::Component(e.to_string()))?;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
    poll("the API server", || async {
        namespaces.get("default").await.ok().map(|_| ())
    })
    .await
}

/// Wait until every node is Ready without the not-ready taint (lifting it when no node
/// lifecycle controller runs, as `tinykube up` does), and for the `default` ServiceAccount
/// that pods of the `default` namespace need.
async fn wait_ready(
    config: tinykube_client::Config,
    names: Vec<String>,
    lift_taints: bool,
    service_account: bool,
) -> Result<(), StartError> {
    let client = Client::new(config).map_err(|e| StartError::Component(e.to_string()))?;
    let nodes: Api<Node> = Api::all(client.clone());
    let what = format!("nodes {} Ready and schedulable", names.join(", "));
    poll(&what, || async {
        let list = nodes.list(&ListParams::default()).await.ok()?;
        let mut pending = 0;
        for name in &names {
            let node = list
                .items
                .iter()
                .find(|n| n.metadata.name.as_deref() == Some(name.as_str()))?;
            if !is_ready(node) {
                return None;
            }
            let taints = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default();
            if taints.iter().any(|t| t.key == NOT_READY_TAINT) {
                pending += 1;
                if lift_taints {
                    let kept: Vec<_> = taints
                        .into_iter()
                        .filter(|t| t.key != NOT_READY_TAINT)
                        .collect();
                    let patch = json!({
                        "metadata": {"resourceVersion": node.metadata.resource_version},
                        "spec": {"taints": kept},
                    });
                    let _ = nodes.patch(name, &Patch::Merge(patch)).await;
                }
            }
        }
        (pending == 0).then_some(())
    })
    .await?;
    if service_account {
        let accounts: Api<ServiceAccount> = Api::namespaced(client, "default");
        poll("the default ServiceAccount", || async {
            accounts.get("default").await.ok().map(|_| ())
        })
        .await?;
    }
    Ok(())
}

fn is_ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A component task that reports on stderr if it stops with an error while the cluster runs.
pub(crate) fn report(
    name: &str,
    shutdown: &CancellationToken,
    result: Result<Result<(), String>, tokio::task::JoinError>,
) {
    let error = match result {
        Ok(Ok(())) => return,
        Ok(Err(e)) => e,
        Err(e) if e.is_cancelled() => return,
        Err(e) => format!("panicked: {e}"),
    };
    if !shutdown.is_cancelled() {
        eprintln!("tinykube-testcluster: {name} stopped: {error}");
    }
}

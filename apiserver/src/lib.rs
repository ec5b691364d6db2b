//! tinykube-apiserver: the Kubernetes REST API over the tinykube store.
//!
//! One entry, [`serve`] (or [`run`], which binds first), used alike by the binary, the
//! launcher and tests. Requests go through [`handlers::dispatch`]; per-kind rules live in
//! [`registry`]; tables in [`printers`].

mod admission;
mod aggregator;
mod authz;
mod convert;
mod crds;
mod default_class;
mod discovery;
mod error;
mod fieldmanager;
mod filter;
pub mod fuzzing;
pub mod handlers;
mod identity;
mod kinds;
mod object;
mod openapi;
mod policy;
pub mod printers;
mod protobuf;
pub mod registry;
mod request;
pub mod services;
mod state;
mod storage;
mod table;
pub mod tls;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use serde_json::json;
use tinykube_store::{EtcdConfig, Store, StoreConfig};

use crate::policy::UserInfo;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use authz::AuthorizationMode;
pub use error::ApiError;

/// Settings of one API server.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    /// CSV file of `token,user,uid[,"group1,group2"]`; when set, every request needs a bearer token.
    pub token_auth_file: Option<PathBuf>,
    /// Interval of BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Settings of the sled store (`Storage::Sled`).
    pub store: StoreConfig,
    /// Where objects live: the sled store in `data_dir` (the default), or etcd.
    pub storage: Storage,
    /// `--service-cluster-ip-range` and `--service-node-port-range`.
    pub services: services::ServiceNet,
    /// `--authorization-mode`: AlwaysAllow (the default) or RBAC.
    pub authorization: AuthorizationMode,
    /// HTTPS (with client certificates when it names a client CA); `None`: plain HTTP.
    pub tls: Option<tls::TlsConfig>,
    /// The time of the timestamps the server writes (creation, deletion and grace periods,
    /// conditions, managed fields) and of the tables' AGE columns; the real clock unless a
    /// test runs the cluster on a manual one.
    pub clock: tinykube_clock::Clock,
}

impl Config {
    pub fn new(listen: SocketAddr, data_dir: PathBuf) -> Self {
        Config {
            listen,
            data_dir,
            token_auth_file: None,
            bookmark_interval: Duration::from_secs(60),
            store: StoreConfig::default(),
            storage: Storage::Sled,
            services: services::ServiceNet::default(),
            authorization: AuthorizationMode::default(),
            tls: None,
            clock: tinykube_clock::Clock::real(),
        }
    }
}

/// `--storage-backend`: the store the objects live in.
#[derive(Debug, Clone)]
pub enum Storage {
    /// sled, embedded, in `DATA_DIR` (one API server per data dir).
    Sled,
    /// etcd v3 (several API servers may share it, and a data dir for the keys).
    Etcd(EtcdConfig),
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("binding {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("opening the store (data dir {dir}): {source}")]
    Store {
        dir: PathBuf,
        #[source]
        source: tinykube_store::StoreError,
    },
    #[error("reading the token file {path}: {source}")]
    Tokens {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the cluster CA: {0}")]
    Keys(#[source] identity::KeyError),
    #[error(
        "creating the initial namespaces, priority classes, StorageClass and RBAC policy: {0}"
    )]
    Bootstrap(#[source] ApiError),
    #[error("repairing the service allocations and the kubernetes service: {0}")]
    Services(#[source] ApiError),
    #[error("setting up HTTPS: {0}")]
    Tls(#[source] tls::TlsError),
    #[error("serving HTTP: {0}")]
    Serve(#[source] std::io::Error),
}

/// Read a token auth file: one `token,user,uid,"group1,group2"` per line.
fn read_tokens(path: &PathBuf) -> Result<HashMap<String, UserInfo>, ServerError> {
    let text = std::fs::read_to_string(path).map_err(|source| ServerError::Tokens {
        path: path.clone(),
        source,
    })?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(token_line)
        .collect())
}

/// One line of a token file: the token and its user (groups quoted when several).
fn token_line(line: &str) -> Option<(String, UserInfo)> {
    let (head, groups) = match line.split_once('"') {
        Some((head, rest)) => (head, rest.trim_end_matches('"')),
        None => (line, ""),
    };
    let mut fields = head.split(',').map(str::trim);
    let token = fields.next().filter(|t| !t.is_empty())?.to_string();
    let username = fields.next().unwrap_or("").to_string();
    let uid = fields.next().unwrap_or("").to_string();
    let mut groups: Vec<String> = groups
        .split(',')
        .chain(fields)
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_string)
        .collect();
    groups.push("system:authenticated".into());
    Some((
        token,
        UserInfo {
            username,
            uid,
            groups,
            extra: Default::default(),
        },
    ))
}

/// The namespaces every cluster starts with.
const INITIAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// The PriorityClasses upstream's API server creates at start-up (its
/// `scheduling/bootstrap-system-priority-classes` hook): name, value, description.
const SYSTEM_PRIORITY_CLASSES: &[(&str, i64, &str)] = &[
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The namespaces and system PriorityClasses every cluster starts with (created when missing).
async fn bootstrap(
    objects: &storage::Objects,
    clock: &tinykube_clock::Clock,
) -> Result<(), ApiError> {
    let info =
        tinykube_proto::registry::builtin("", "v1", "namespaces").expect("namespaces are served");
    for ns in INITIAL_NAMESPACES {
        if objects.try_get(info, None, ns)?.is_some() {
            continue;
        }
        let obj = json!({
            "kind": "Namespace", "apiVersion": "v1",
            "metadata": {
                "name": ns, "uid": uuid::Uuid::new_v4().to_string(),
                "creationTimestamp": object::timestamp(clock.utc()),
                "labels": {"kubernetes.io/metadata.name": ns},
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        });
        match objects.create(info, &obj).await {
            Ok(_) | Err(ApiError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let info = tinykube_proto::registry::builtin("scheduling.k8s.io", "v1", "priorityclasses")
        .expect("priorityclasses are served");
    for (name, value, description) in SYSTEM_PRIORITY_CLASSES {
        if objects.try_get(info, None, name)?.is_some() {
            continue;
        }
        let obj = json!({
            "kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1",
            "metadata": {
                "name": name, "uid": uuid::Uuid::new_v4().to_string(), "generation": 1,
                "creationTimestamp": object::timestamp(clock.utc()),
            },
            "value": value,
            "description": description,
            "preemptionPolicy": "PreemptLowerPriority",
        });
        match objects.create(info, &obj).await {
            Ok(_) | Err(ApiError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Serve on an already bound listener until `shutdown` is cancelled.
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: CancellationToken,
) -> Result<(), ServerError> {
    let tokens = match &config.token_auth_file {
        Some(path) => Some(read_tokens(path)?),
        None => None,
    };
    let store_err = |source| ServerError::Store {
        dir: config.data_dir.clone(),
        source,
    };
    let store = match &config.storage {
        Storage::Sled => {
            let store = Store::open(&config.data_dir, config.store.clone()).map_err(store_err)?;
            storage::migrate_layout(&store).await.map_err(store_err)?;
            store
        }
        Storage::Etcd(etcd) => {
            std::fs::create_dir_all(&config.data_dir)
                .map_err(|e| store_err(tinykube_store::StoreError::OpenLog(e)))?;
            Store::connect(etcd.clone()).await.map_err(store_err)?
        }
    };
    let keys = identity::Keys::load_or_create(&config.data_dir).map_err(ServerError::Keys)?;
    let addr = listener.local_addr().map_err(ServerError::Serve)?;
    let tls = match &config.tls {
        Some(tls) => {
            let ips = identity::serving::ip_addresses(config.services.ips.first(), addr.ip());
            let generated = || identity::serving::load_or_create(&config.data_dir, &keys, &ips);
            Some(tls::server_config(tls, generated).map_err(ServerError::Tls)?)
        }
        None => None,
    };
    let objects = storage::Objects::new(store.clone());
    if default_class::first_start(&objects).map_err(ServerError::Bootstrap)? {
        default_class::create(&objects, &config.clock)
            .await
            .map_err(ServerError::Bootstrap)?;
    }
    bootstrap(&objects, &config.clock)
        .await
        .map_err(ServerError::Bootstrap)?;
    authz::bootstrap::ensure(&objects, &config.clock)
        .await
        .map_err(ServerError::Bootstrap)?;
    let state = state::AppState(Arc::new(state::Shared {
        objects,
        kinds: kinds::Kinds::default(),
        tokens,
        authorization: config.authorization,
        keys: Arc::new(keys),
        shutdown: shutdown.clone(),
        bookmark_interval: config.bookmark_interval,
        services: config.services,
        client_certs: tls.as_ref().is_some_and(|(_, ca)| ca.is_some()),
        clock: config.clock,
        aggregator: aggregator::Aggregator::default(),
    }));
    // On etcd other API servers may be reserving values for Services they are writing: the
    // repair frees only what stays unclaimed for a while, in the background.
    match config.storage {
        Storage::Sled => {
            let repaired = services::repair::run(&state, None)
                .await
                .map_err(ServerError::Services)?;
            tracing::info!(?repaired, "service allocations repaired");
        }
        Storage::Etcd(_) => {
            let state = state.clone();
            tokio::spawn(async move {
                match services::repair::run(&state, Some(Duration::from_secs(5))).await {
                    Ok(repaired) => tracing::info!(?repaired, "service allocations repaired"),
                    Err(e) => {
                        tracing::warn!(error = %e, "repairing the service allocations failed")
                    }
                }
            });
        }
    }
    // On sled the store is this server's alone: no other API server's lease can be live.
    let shared_store = matches!(config.storage, Storage::Etcd(_));
    let apiservers = services::kubernetes::ensure_all(&state, addr, shared_store)
        .await
        .map_err(ServerError::Services)?;
    crds::start(state.clone()).await;
    aggregator::start(state.clone()).await;
    policy::status::start(state.clone());
    let app = Router::new()
        .fallback(handlers::dispatch)
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(state);
    let result = match tls {
        None => axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await
            .map_err(ServerError::Serve),
        Some((server_config, client_ca)) => {
            let listener =
                tls::TlsListener::new(listener, server_config, client_ca, shutdown.clone())
                    .map_err(ServerError::Serve)?;
            let app = app.into_make_service_with_connect_info::<tls::Peer>();
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await
                .map_err(ServerError::Serve)
        }
    };
    apiservers.stop().await;
    store.close().await;
    result
}

/// Bind `config.listen` and serve; the bound address is logged and printed as a URL.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), ServerError> {
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServerError::Bind {
            addr: config.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(ServerError::Serve)?;
    // The printed URL tells the launcher that the cluster CA is there to sign client
    // certificates with (and to publish as `kube-root-ca.crt`).
    std::fs::create_dir_all(&config.data_dir).map_err(|source| {
        ServerError::Keys(identity::KeyError::Write {
            path: config.data_dir.clone(),
            source,
        })
    })?;
    identity::Keys::load_or_create(&config.data_dir).map_err(ServerError::Keys)?;
    tracing::info!(%addr, "tinykube-apiserver listening");
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    println!("tinykube-apiserver listening on {scheme}://{addr}");
    serve(listener, config, shutdown).await
}

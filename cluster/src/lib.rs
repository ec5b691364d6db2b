//! tinykube-cluster: `tinykube up`, the launcher. It starts the API server, the scheduler, the
//! controller manager and the kubelets as child processes found next to its own executable,
//! waits until every node is Ready, writes the kubeconfig, prints how to use the cluster and
//! stays in the foreground until Ctrl-C or SIGTERM, reporting any component that dies.
//!
//! One entry, [`run`]. [`layout`] decides names, addresses and paths; [`process`] runs children;
//! [`control_plane`] starts the store ([`etcd`] with `--etcd`) and the API servers, behind the
//! [`balancer`] when there are several.

pub mod balancer;
pub mod control_plane;
pub mod etcd;
pub mod layout;
pub mod pki;
pub mod process;
pub mod summary;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use serde_json::json;
use tinykube_client::{Api, Client, ListParams, Patch};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::layout::{Layout, Requested, Shape};
use crate::process::{Component, Exit, Processes};

/// How long the nodes may take to become Ready.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

/// What `tinykube up` was asked for; unset values come from the saved cluster, then defaults.
#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    pub workers: Option<usize>,
    pub masters: Option<usize>,
    pub port: Option<u16>,
    /// Where the component binaries are (the launcher's own directory).
    pub bin_dir: PathBuf,
    /// The controller manager's `--node-monitor-grace-period` (upstream's 40 s when unset);
    /// below 40 s the kubelets' node leases are shortened to match, so that a healthy node
    /// never misses it.
    pub node_monitor_grace_period: Option<Duration>,
    /// The human summary, or one JSON line for a test fixture.
    pub output: summary::Output,
    /// HTTPS with client certificates (`--secure`); unset: as the saved cluster, else HTTP.
    pub secure: Option<bool>,
    /// The metrics server's `--metric-resolution` (its 15 s when unset).
    pub metric_resolution: Option<Duration>,
    /// The controller manager's `--horizontal-pod-autoscaler-sync-period` (15 s when unset).
    pub hpa_sync_period: Option<Duration>,
    /// The controller manager's `--horizontal-pod-autoscaler-downscale-stabilization` (5 min
    /// when unset).
    pub hpa_downscale_stabilization: Option<Duration>,
    /// `--etcd`: a local etcd (`Some(false)`: back to sled); unset: as the saved cluster.
    pub etcd: Option<bool>,
    /// `--etcd-servers URL,URL`: etcd run by someone else.
    pub etcd_servers: Option<Vec<String>>,
    /// `--apiservers N` (several need etcd); unset: as the saved cluster, else one.
    pub apiservers: Option<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("preparing the data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Flags(String),
    #[error("etcd not found on PATH: install Debian's etcd-server or pass --etcd-servers")]
    EtcdMissing,
    #[error("the API servers' balancer cannot listen on 127.0.0.1:{port} (in use? try --port 0): {source}")]
    Balancer {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("{0} not found next to tinykube: build it (cargo build --release --workspace --bins)")]
    Missing(PathBuf),
    #[error("starting {component}: {source}")]
    Spawn {
        component: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{name} did not start{hint}; its log ends with:\n{log}")]
    ApiServer {
        name: String,
        /// Why it might not have, when the port was the user's choice.
        hint: String,
        log: String,
    },
    #[error("{component} {how} before the cluster was ready; its log ends with:\n{log}")]
    Died {
        component: String,
        how: String,
        log: String,
    },
    #[error("nodes not Ready after {}s: {}", READY_TIMEOUT.as_secs(), .0.join(", "))]
    NotReady(Vec<String>),
    #[error("the cluster's certificates: {0}")]
    Pki(#[from] pki::PkiError),
    #[error("talking to the API server: {0}")]
    Client(#[from] tinykube_client::ClientError),
    #[error("stopped before the cluster was ready")]
    Interrupted,
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ClusterError + '_ {
    move |source| ClusterError::DataDir {
        path: path.to_path_buf(),
        source,
    }
}

fn binary(dir: &Path, name: &str) -> Result<PathBuf, ClusterError> {
    let p = dir.join(name);
    if p.exists() {
        Ok(p)
    } else {
        Err(ClusterError::Missing(p))
    }
}

/// Bring the cluster up and keep it running until `shutdown`.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), ClusterError> {
    let started = Instant::now();
    std::fs::create_dir_all(&config.data_dir).map_err(io_err(&config.data_dir))?;
    let root = std::fs::canonicalize(&config.data_dir).map_err(io_err(&config.data_dir))?;
    let layout = Layout::new(&root);
    let saved: Option<Shape> = std::fs::read(layout.shape_file())
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let resumed = saved.is_some();
    let shape = Shape::resolve(
        saved,
        &Requested {
            workers: config.workers,
            masters: config.masters,
            port: config.port,
            secure: config.secure,
            etcd: config.etcd,
            etcd_servers: config.etcd_servers.clone(),
            apiservers: config.apiservers,
        },
    );
    shape.check().map_err(ClusterError::Flags)?;
    let plans = layout::plan(&shape);
    let node_names: Vec<String> = plans.iter().flat_map(|p| p.node_names()).collect();
    let logs = layout.logs();
    std::fs::create_dir_all(&logs).map_err(io_err(&logs))?;
    for name in &node_names {
        let dir = layout.manifests(name);
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    }
    let shape_file = layout.shape_file();
    std::fs::write(
        &shape_file,
        serde_json::to_vec_pretty(&shape).unwrap_or_default(),
    )
    .map_err(io_err(&shape_file))?;
    // The kubeconfig appears only once the cluster is ready.
    let _ = std::fs::remove_file(layout.kubeconfig());

    let apiserver_bin = binary(&config.bin_dir, "tinykube-apiserver")?;
    let kubelet_bin = binary(&config.bin_dir, "tinykube-kubelet")?;
    let scheduler_bin = binary(&config.bin_dir, "tinykube-scheduler").ok();
    let cm_bin = binary(&config.bin_dir, "tinykube-controller-manager").ok();
    let metrics_bin = binary(&config.bin_dir, "tinykube-metrics-server").ok();

    let (tx, mut exits) = mpsc::unbounded_channel();
    let mut procs = Processes {
        components: Vec::new(),
        exited: BTreeSet::new(),
    };
    let result = async {
        let cp = control_plane::start(&layout, &shape, &apiserver_bin, &tx, &mut procs, &mut exits)
            .await?;
        let url = cp.url.clone();
        let ca = match shape.secure {
            true => Some(pki::Ca::load(&layout.apiserver_data())?),
            false => None,
        };
        let admin = match &ca {
            Some(ca) => {
                let (user, groups) = pki::identity("admin");
                Some(ca.issue(&user, &groups)?)
            }
            None => None,
        };
        let client = Client::new(client_config(&url, admin.as_ref()))?;
        let connect = |component: &str| connect_args(&layout, ca.as_ref(), &url, component);
        if let Some(bin) = &scheduler_bin {
            let mut args = connect("scheduler")?;
            // As a kubeadm cluster's: it holds kube-system/kube-scheduler while it schedules.
            args.extend([
                "--secure-port".into(),
                "0".into(),
                "--leader-elect=true".into(),
            ]);
            let (c, _) = process::spawn(
                "scheduler",
                bin,
                &args,
                &layout.log("scheduler"),
                false,
                tx.clone(),
            )
            .await?;
            procs.components.push(c);
        }
        if let Some(bin) = &cm_bin {
            let log = layout.log("controller-manager");
            let mut args = connect("controller-manager")?;
            // The CA the API server generated into its data dir, for `kube-root-ca.crt`, and its
            // key, which signs ServiceAccount tokens (legacy token Secrets' too).
            args.extend([
                "--root-ca-file".into(),
                layout.apiserver_data().join("ca.crt").display().to_string(),
                "--service-account-private-key-file".into(),
                layout.apiserver_data().join("ca.key").display().to_string(),
            ]);
            let periods = [
                (
                    "--node-monitor-grace-period",
                    config.node_monitor_grace_period,
                ),
                (
                    "--horizontal-pod-autoscaler-sync-period",
                    config.hpa_sync_period,
                ),
                (
                    "--horizontal-pod-autoscaler-downscale-stabilization",
                    config.hpa_downscale_stabilization,
                ),
            ];
            for (flag, period) in periods {
                if let Some(d) = period {
                    args.extend([flag.into(), format!("{}ms", d.as_millis())]);
                }
            }
            let (c, _) =
                process::spawn("controller-manager", bin, &args, &log, false, tx.clone()).await?;
            procs.components.push(c);
        }
        if let Some(bin) = &metrics_bin {
            let mut args = connect("metrics-server")?;
            if let Some(d) = config.metric_resolution {
                args.extend(["--metric-resolution".into(), format!("{}ms", d.as_millis())]);
            }
            let log = layout.log("metrics-server");
            let (c, _) =
                process::spawn("metrics-server", bin, &args, &log, false, tx.clone()).await?;
            procs.components.push(c);
        }
        for p in &plans {
            let mut args = connect(&p.component())?;
            args.extend(p.args(&layout));
            if let Some(lease) = config.node_monitor_grace_period.and_then(lease_for_grace) {
                args.extend(["--node-lease-duration-seconds".into(), lease.to_string()]);
            }
            let name = p.component();
            let (c, _) = process::spawn(
                &name,
                &kubelet_bin,
                &args,
                &layout.log(&name),
                false,
                tx.clone(),
            )
            .await?;
            procs.components.push(c);
        }
        let run_dir = layout.run_dir();
        std::fs::create_dir_all(&run_dir).map_err(io_err(&run_dir))?;
        for c in &procs.components {
            write_run_files(&layout, c)?;
        }
        wait_ready(&client, &node_names, &mut procs, &mut exits, &shutdown).await?;
        if cm_bin.is_none() {
            // Without a controller manager nobody lifts the not-ready taint that the API server
            // puts on new nodes; do what its node lifecycle controller would.
            lift_not_ready_taints(&client, &node_names).await;
        }
        Ok::<_, ClusterError>((cp, admin))
    }
    .await;
    let (cp, admin) = match result {
        Ok(ready) => ready,
        Err(e) => {
            procs.stop(&mut exits).await;
            return Err(e);
        }
    };
    let url = cp.url.clone();
    let kubeconfig = layout.kubeconfig();
    write_private(&kubeconfig, &layout::kubeconfig(&url, admin.as_ref()))?;
    let components: Vec<(&str, u32)> = procs
        .components
        .iter()
        .map(|c| (c.name.as_str(), c.pid))
        .collect();
    let ready = summary::Summary {
        elapsed: started.elapsed(),
        resumed,
        url: &url,
        layout: &layout,
        nodes: &node_names,
        components: &components,
        controller_manager: cm_bin.is_some(),
        apiservers: &cp.apiservers,
        etcd_servers: &cp.etcd_servers,
        local_etcd: shape.storage == layout::Storage::LocalEtcd,
    };
    // println! flushes at the newline: a fixture blocked on reading this line gets it now.
    match config.output {
        summary::Output::Text => println!("{}", summary::render(&ready)),
        summary::Output::Json => println!("{}", summary::json(&ready)),
    }
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            e = exits.recv() => {
                let Some(e) = e else { break };
                procs.exited.insert(e.name.clone());
                if let Some(c) = procs.find(&e.name) {
                    eprintln!(
                        "tinykube: {} (pid {}) {}; it is not restarted. Log: {}\n  restart it by hand: {} &",
                        c.name,
                        c.pid,
                        process::describe(e.status),
                        c.log.display(),
                        layout.restart_script(&c.name).display()
                    );
                }
            }
        }
    }
    eprintln!("tinykube: stopping the cluster");
    procs.stop(&mut exits).await;
    if let Some(balancer) = cp.balancer {
        balancer.abort();
    }
    Ok(())
}

/// A client of the API server at `url`: plain, or with the CA and a user's certificate.
fn client_config(url: &str, creds: Option<&pki::Credentials>) -> tinykube_client::Config {
    let mut config = tinykube_client::Config::new(url);
    if let Some(c) = creds {
        config.tls = tinykube_client::Tls {
            ca_pem: Some(c.ca_pem.clone().into_bytes()),
            client_cert_pem: Some(c.cert_pem.clone().into_bytes()),
            client_key_pem: Some(c.key_pem.clone().into_bytes()),
            insecure: false,
        };
    }
    config
}

/// How a component finds the cluster: `--master URL` over plain HTTP; for a secure cluster,
/// `--kubeconfig pki/COMPONENT.kubeconfig` with the CA and its own client certificate.
fn connect_args(
    layout: &Layout,
    ca: Option<&pki::Ca>,
    url: &str,
    component: &str,
) -> Result<Vec<String>, ClusterError> {
    let Some(ca) = ca else {
        return Ok(vec!["--master".into(), url.into()]);
    };
    let (user, groups) = pki::identity(component);
    let creds = ca.issue(&user, &groups)?;
    let path = layout.component_kubeconfig(component);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    write_private(&path, &layout::kubeconfig(url, Some(&creds)))?;
    Ok(vec!["--kubeconfig".into(), path.display().to_string()])
}

/// Write a file only its owner may read (it may hold a private key).
fn write_private(path: &Path, text: &str) -> Result<(), ClusterError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(io_err(path))
}

/// The node lease (in seconds) that keeps heartbeats well inside `grace`, when upstream's
/// 40 s lease would not: renewed every quarter of its duration, it is renewed about four
/// times per grace period.
fn lease_for_grace(grace: Duration) -> Option<u64> {
    let secs = grace.as_secs();
    (secs < 40).then_some(secs.max(2))
}

/// `run/COMPONENT.pid` (the process to kill to simulate a failure) and `run/COMPONENT.sh`,
/// which starts the component again by hand with the same flags and log, recording its new pid.
fn write_run_files(layout: &Layout, c: &Component) -> Result<(), ClusterError> {
    let pid = layout.pid_file(&c.name);
    std::fs::write(&pid, format!("{}\n", c.pid)).map_err(io_err(&pid))?;
    let script = layout.restart_script(&c.name);
    let text = format!(
        "#!/bin/sh\n# Starts {name} of this cluster again (tinykube up does not restart a component\n# that died); run it in the background: {path} &\necho $$ > {pid}\nexec {command} >>{log} 2>&1\n",
        name = c.name,
        path = script.display(),
        pid = process::shell_quote(&pid.display().to_string()),
        command = c.command,
        log = process::shell_quote(&c.log.display().to_string()),
    );
    std::fs::write(&script, text).map_err(io_err(&script))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .map_err(io_err(&script))?;
    Ok(())
}

/// Wait until every node in `names` reports Ready.
async fn wait_ready(
    client: &Client,
    names: &[String],
    procs: &mut Processes,
    exits: &mut mpsc::UnboundedReceiver<Exit>,
    shutdown: &CancellationToken,
) -> Result<(), ClusterError> {
    let api: Api<Node> = Api::all(client.clone());
    let wanted: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let deadline = Instant::now() + READY_TIMEOUT;
    let mut missing: Vec<String> = names.to_vec();
    while Instant::now() < deadline {
        if shutdown.is_cancelled() {
            return Err(ClusterError::Interrupted);
        }
        if let Ok(e) = exits.try_recv() {
            let log = procs
                .find(&e.name)
                .map(|c| c.log.clone())
                .unwrap_or_default();
            procs.exited.insert(e.name.clone());
            return Err(ClusterError::Died {
                component: e.name,
                how: process::describe(e.status),
                log: process::tail(&log, 5),
            });
        }
        if let Ok(list) = api.list(&ListParams::default()).await {
            let ready: BTreeSet<String> = list
                .items
                .iter()
                .filter(|n| is_ready(n))
                .filter_map(|n| n.metadata.name.clone())
                .filter(|n| wanted.contains(n.as_str()))
                .collect();
            missing = names
                .iter()
                .filter(|n| !ready.contains(*n))
                .cloned()
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(ClusterError::NotReady(missing))
}

fn is_ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Lift the not-ready taint of the Ready nodes in `names`; returns how many were lifted.
async fn lift_not_ready_taints(client: &Client, names: &[String]) -> usize {
    let api: Api<Node> = Api::all(client.clone());
    let mut lifted = 0;
    for name in names {
        let Ok(node) = api.get(name).await else {
            continue;
        };
        if !is_ready(&node) {
            continue;
        }
        let taints = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default();
        if !taints.iter().any(|t| t.key == NOT_READY_TAINT) {
            continue;
        }
        let kept: Vec<_> = taints
            .into_iter()
            .filter(|t| t.key != NOT_READY_TAINT)
            .collect();
        let patch = json!({"metadata": {"resourceVersion": node.metadata.resource_version},
                           "spec": {"taints": kept}});
        match api.patch(name, &Patch::Merge(patch)).await {
            Ok(_) => lifted += 1,
            Err(e) => {
                tracing::warn!(node = %name, error = %e, "could not lift the not-ready taint")
            }
        }
    }
    lifted
}

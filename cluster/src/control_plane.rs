//! The control plane's processes, started before the other components: the local etcd
//! (`--etcd`), the API servers (one on the cluster's port, or `--apiservers N` each on a free
//! port of its own behind the balancer on the cluster's port), all sharing `DATA_DIR/apiserver`
//! for the cluster CA and the ServiceAccount key.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::layout::{Layout, Shape, Storage};
use crate::process::{self, Exit, Processes};
use crate::{balancer, etcd, io_err, ClusterError};

/// How long the local etcd may take to report healthy.
const ETCD_TIMEOUT: Duration = Duration::from_secs(20);

/// A started control plane.
pub struct ControlPlane {
    /// What clients use: the API server, or the balancer in front of several.
    pub url: String,
    /// Each API server's name and URL, in order of start.
    pub apiservers: Vec<(String, String)>,
    /// The etcd client URLs the API servers use (none on sled).
    pub etcd_servers: Vec<String>,
    /// The balancer task (several API servers), aborted when the cluster stops.
    pub balancer: Option<JoinHandle<()>>,
}

/// The API servers' names: `apiserver` alone, else `apiserver-0`, `apiserver-1`, …
pub fn apiserver_names(n: usize) -> Vec<String> {
    match n {
        1 => vec!["apiserver".into()],
        _ => (0..n).map(|i| format!("apiserver-{i}")).collect(),
    }
}

/// One API server's flags.
pub fn apiserver_args(layout: &Layout, shape: &Shape, port: u16, etcd: &[String]) -> Vec<String> {
    let mut args = vec![
        "--listen".to_string(),
        format!("127.0.0.1:{port}"),
        "--data-dir".into(),
        layout.apiserver_data().display().to_string(),
    ];
    if shape.secure {
        // The CA the first one generates also signs the users' client certificates.
        args.extend([
            "--secure".into(),
            "--client-ca-file".into(),
            layout.ca_cert().display().to_string(),
        ]);
    }
    if !etcd.is_empty() {
        args.extend([
            "--storage-backend".into(),
            "etcd".into(),
            "--etcd-servers".into(),
            etcd.join(","),
        ]);
    }
    args
}

/// Start the local etcd and wait until it is healthy; its client URL.
async fn start_etcd(
    layout: &Layout,
    tx: &mpsc::UnboundedSender<Exit>,
    procs: &mut Processes,
    exits: &mut mpsc::UnboundedReceiver<Exit>,
) -> Result<String, ClusterError> {
    let bin = etcd::find().ok_or(ClusterError::EtcdMissing)?;
    let data = layout.etcd_data();
    etcd::prepare(&data).map_err(io_err(&data))?;
    let free = || etcd::free_port().map_err(io_err(Path::new("127.0.0.1:0")));
    let (client, peer) = (free()?, free()?);
    let log = layout.log(process::ETCD);
    let args = etcd::args(&data, client, peer);
    let (c, _) = process::spawn(process::ETCD, &bin, &args, &log, false, tx.clone()).await?;
    procs.components.push(c);
    let deadline = Instant::now() + ETCD_TIMEOUT;
    while !etcd::check(client).await {
        let exited = exits.try_recv().ok();
        if exited.is_some() || Instant::now() > deadline {
            let how = match exited {
                Some(e) => {
                    procs.exited.insert(e.name);
                    process::describe(e.status)
                }
                None => format!("was not healthy after {}s", ETCD_TIMEOUT.as_secs()),
            };
            return Err(ClusterError::Died {
                component: process::ETCD.into(),
                how,
                log: process::tail(&log, 5),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(etcd::client_url(client))
}

/// Start the store (a local etcd), the API servers and, for several, the balancer.
pub async fn start(
    layout: &Layout,
    shape: &Shape,
    bin: &Path,
    tx: &mpsc::UnboundedSender<Exit>,
    procs: &mut Processes,
    exits: &mut mpsc::UnboundedReceiver<Exit>,
) -> Result<ControlPlane, ClusterError> {
    let etcd_servers = match &shape.storage {
        Storage::Sled => Vec::new(),
        Storage::LocalEtcd => vec![start_etcd(layout, tx, procs, exits).await?],
        Storage::Etcd { servers } => servers.clone(),
    };
    let names = apiserver_names(shape.apiservers);
    // Bound before any API server starts, so that a taken port fails at once.
    let (balancer, ports) = if names.len() > 1 {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", shape.port))
            .await
            .map_err(|source| ClusterError::Balancer {
                port: shape.port,
                source,
            })?;
        let mut ports = Vec::new();
        for _ in &names {
            ports.push(etcd::free_port().map_err(io_err(Path::new("127.0.0.1:0")))?);
        }
        (Some(listener), ports)
    } else {
        (None, vec![shape.port])
    };
    let mut apiservers = Vec::new();
    // One after the other: the first creates the CA and keys the others load.
    for (name, port) in names.iter().zip(&ports) {
        let args = apiserver_args(layout, shape, *port, &etcd_servers);
        let log = layout.log(name);
        let (c, line) = process::spawn(name, bin, &args, &log, true, tx.clone()).await?;
        procs.components.push(c);
        let url = line
            .and_then(|l| l.rsplit(' ').next().map(str::to_string))
            .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
            .ok_or_else(|| ClusterError::ApiServer {
                name: match balancer.is_some() {
                    true => format!("the API server {name}"),
                    false => "the API server".into(),
                },
                hint: match (balancer.is_some(), *port) {
                    // The launcher picked the port of each of several, and 0 is any free one.
                    (true, _) | (false, 0) => String::new(),
                    (false, p) => format!(" (is port {p} in use? try --port 0)"),
                },
                log: process::tail(&log, 5),
            })?;
        apiservers.push((name.clone(), url));
    }
    let (url, balancer) = match balancer {
        None => (apiservers[0].1.clone(), None),
        Some(listener) => {
            let addr = listener
                .local_addr()
                .map_err(io_err(Path::new("127.0.0.1")))?;
            let scheme = apiservers[0].1.split("://").next().unwrap_or("http");
            let backends: Vec<SocketAddr> = ports
                .iter()
                .map(|p| SocketAddr::from(([127, 0, 0, 1], *p)))
                .collect();
            let task = balancer::spawn(listener, backends);
            (format!("{scheme}://{addr}"), Some(task))
        }
    };
    Ok(ControlPlane {
        url,
        apiservers,
        etcd_servers,
        balancer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_servers_share_the_data_dir_and_the_store() {
        let layout = Layout::new(Path::new("/d"));
        let sled = Shape::default();
        let secure_etcd = Shape {
            secure: true,
            storage: Storage::LocalEtcd,
            apiservers: 3,
            ..Shape::default()
        };
        let etcd = ["http://127.0.0.1:2379".to_string(), "http://e:2379".into()];
        let cases = [
            (
                &sled,
                6443,
                &[][..],
                "--listen 127.0.0.1:6443 --data-dir /d/apiserver",
            ),
            (
                &secure_etcd,
                40001,
                &etcd[..],
                "--listen 127.0.0.1:40001 --data-dir /d/apiserver --secure --client-ca-file /d/apiserver/ca.crt \
                 --storage-backend etcd --etcd-servers http://127.0.0.1:2379,http://e:2379",
            ),
        ];
        for (shape, port, etcd, want) in cases {
            assert_eq!(apiserver_args(&layout, shape, port, etcd).join(" "), want);
        }
        let cases: [(usize, &[&str]); 3] = [
            (1, &["apiserver"]),
            (2, &["apiserver-0", "apiserver-1"]),
            (3, &["apiserver-0", "apiserver-1", "apiserver-2"]),
        ];
        for (n, want) in cases {
            assert_eq!(apiserver_names(n), want);
        }
    }
}

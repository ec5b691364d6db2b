//! Local `etcd` processes on loopback: one member for `tinykube up --etcd` and the tests, or a
//! cluster of several for the tests that kill one. The `etcd` binary comes from PATH (Debian's
//! `etcd-server` package) or from `$TINYKUBE_ETCD`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::StoreError;

/// How long a started member may take to answer.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// One member's settings.
#[derive(Debug, Clone)]
pub struct Member {
    pub name: String,
    pub dir: PathBuf,
    pub client_port: u16,
    pub peer_port: u16,
}

impl Member {
    pub fn client_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    /// The command-line flags of this member of `cluster` (every member, itself included).
    pub fn args(&self, cluster: &[Member], new_cluster: bool) -> Vec<String> {
        let initial: Vec<String> = cluster
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect();
        let state = if new_cluster { "new" } else { "existing" };
        [
            ("--name", self.name.clone()),
            ("--data-dir", self.dir.join("data").display().to_string()),
            ("--listen-client-urls", self.client_url()),
            ("--advertise-client-urls", self.client_url()),
            ("--listen-peer-urls", self.peer_url()),
            ("--initial-advertise-peer-urls", self.peer_url()),
            ("--initial-cluster", initial.join(",")),
            ("--initial-cluster-state", state.to_string()),
            ("--initial-cluster-token", "tinykube".to_string()),
            ("--logger", "zap".to_string()),
            ("--log-level", "warn".to_string()),
        ]
        .into_iter()
        .flat_map(|(k, v)| [k.to_string(), v])
        .collect()
    }
}

/// A running local etcd member; killed when dropped.
pub struct LocalEtcd {
    member: Member,
    cluster: Vec<Member>,
    child: Option<tokio::process::Child>,
}

/// A free port on loopback (the port is released again before etcd binds it).
pub fn free_port() -> Result<u16, StoreError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| StoreError::Etcd(format!("finding a free port: {e}")))
}

impl LocalEtcd {
    /// The `etcd` binary: `$TINYKUBE_ETCD`, else `etcd` on PATH.
    pub fn binary() -> Result<PathBuf, StoreError> {
        if let Some(path) = std::env::var_os("TINYKUBE_ETCD") {
            return Ok(PathBuf::from(path));
        }
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join("etcd"))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                StoreError::Etcd(
                    "etcd not found on PATH: install Debian's etcd-server package (or set \
                     TINYKUBE_ETCD to an etcd binary)"
                        .into(),
                )
            })
    }

    /// Start one member with its data in `dir` on free loopback ports; returns once it answers.
    pub async fn start(dir: &Path) -> Result<LocalEtcd, StoreError> {
        let mut members = LocalEtcd::start_cluster(dir, 1).await?;
        Ok(members.remove(0))
    }

    /// Start `size` members, `dir/member0` …, as one new cluster; returns once each answers.
    pub async fn start_cluster(dir: &Path, size: usize) -> Result<Vec<LocalEtcd>, StoreError> {
        let mut cluster = Vec::with_capacity(size);
        for i in 0..size {
            cluster.push(Member {
                name: format!("member{i}"),
                dir: if size == 1 {
                    dir.to_path_buf()
                } else {
                    dir.join(format!("member{i}"))
                },
                client_port: free_port()?,
                peer_port: free_port()?,
            });
        }
        let mut started = Vec::with_capacity(size);
        for member in &cluster {
            let mut etcd = LocalEtcd {
                member: member.clone(),
                cluster: cluster.clone(),
                child: None,
            };
            etcd.spawn(true)?;
            started.push(etcd);
        }
        for etcd in &mut started {
            etcd.wait_ready().await?;
        }
        Ok(started)
    }

    fn spawn(&mut self, new_cluster: bool) -> Result<(), StoreError> {
        let binary = LocalEtcd::binary()?;
        std::fs::create_dir_all(&self.member.dir).map_err(|e| {
            StoreError::Etcd(format!("creating {}: {e}", self.member.dir.display()))
        })?;
        let log_path = self.member.dir.join("etcd.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| StoreError::Etcd(format!("opening {}: {e}", log_path.display())))?;
        let err_log = log
            .try_clone()
            .map_err(|e| StoreError::Etcd(format!("opening {}: {e}", log_path.display())))?;
        let child = tokio::process::Command::new(&binary)
            .args(self.member.args(&self.cluster, new_cluster))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err_log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| StoreError::Etcd(format!("starting {}: {e}", binary.display())))?;
        self.child = Some(child);
        Ok(())
    }

    async fn wait_ready(&mut self) -> Result<(), StoreError> {
        let url = self.member.client_url();
        let deadline = tokio::time::Instant::now() + READY_WITHIN;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(StoreError::Etcd(format!(
                        "etcd {} exited ({status}) before answering; see {}",
                        self.member.name,
                        self.member.dir.join("etcd.log").display()
                    )));
                }
            }
            let options =
                etcd_client::ConnectOptions::new().with_connect_timeout(Duration::from_secs(1));
            if let Ok(Ok(mut client)) = tokio::time::timeout(
                Duration::from_secs(2),
                etcd_client::Client::connect([url.as_str()], Some(options)),
            )
            .await
            {
                // A read through raft: answered only once the member has a leader.
                let read = tokio::time::timeout(Duration::from_secs(2), client.get("health", None));
                if let Ok(Ok(_)) = read.await {
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(StoreError::Etcd(format!(
                    "etcd {} did not answer at {url} within {READY_WITHIN:?}",
                    self.member.name
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn client_url(&self) -> String {
        self.member.client_url()
    }

    pub fn name(&self) -> &str {
        &self.member.name
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(|c| c.id())
    }

    /// Kill the process at once (SIGKILL), as a crash.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Start the member again on its data and ports (after `kill`); returns once it answers
    /// (for a member of a cluster, once the cluster has a leader).
    pub async fn restart(&mut self) -> Result<(), StoreError> {
        self.kill().await;
        self.spawn(false)?;
        self.wait_ready().await
    }
}

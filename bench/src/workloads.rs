//! `tinykube-bench workloads`: the whole stack (`tinykube up`) running the workload controllers
//! of the batch and stateful kinds: the time a Job of many short completions takes to be
//! `Complete`, and the time a `Parallel` StatefulSet takes to have every replica Ready (with a
//! claim per replica, provisioned and bound, unless told otherwise).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::binary;
use crate::kubelet::terminate;

/// How long one workload may take before the run is called failed.
const TIMEOUT: Duration = Duration::from_secs(1800);

/// `tinykube up` on a fresh data dir.
pub(crate) struct Up {
    child: Child,
    pub(crate) url: String,
    /// From the launcher's spawn to its `export KUBECONFIG=` line (every node Ready).
    pub(crate) ready: Duration,
    dir: tempfile::TempDir,
}

impl Drop for Up {
    /// On an early return: at least ask the launcher to stop its components.
    fn drop(&mut self) {
        terminate(&self.child);
    }
}

impl Up {
    /// Stop the cluster and wait for the launcher to have stopped its components (killing it
    /// at once would leave them running).
    pub(crate) async fn down(mut self) {
        terminate(&self.child);
        let _ = tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await;
    }

    /// The data directory (`run/*.pid` name every component's process).
    pub(crate) fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The launcher's own pid.
    pub(crate) fn launcher_pid(&self) -> Result<u32> {
        self.child.id().context("launcher pid")
    }
}

async fn up(nodes: usize) -> Result<Up> {
    up_with(nodes, &[]).await
}

/// `tinykube up --nodes N` with `extra` flags, until its export line (every node Ready).
pub(crate) async fn up_with(nodes: usize, extra: &[String]) -> Result<Up> {
    let bin = binary("tinykube")?;
    up_from(&bin, nodes, extra).await
}

/// The launcher `bin` (next to the components it starts) on a fresh data dir, `--nodes N` and
/// `extra` flags, until its export line.
pub(crate) async fn up_from(bin: &Path, nodes: usize, extra: &[String]) -> Result<Up> {
    let dir = tempfile::tempdir()?;
    let started = Instant::now();
    let mut child = Command::new(bin)
        .args(["up", "--port", "0", "--nodes", &nodes.to_string()])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let mut kubeconfig = None;
    while let Some(line) = lines.next_line().await? {
        if let Some(path) = line.strip_prefix("export KUBECONFIG=") {
            kubeconfig = Some(path.trim_matches(['"', '\'']).to_string());
            break;
        }
    }
    let ready = started.elapsed();
    let mut up = Up {
        child,
        url: String::new(),
        ready,
        dir,
    };
    let kubeconfig = kubeconfig.context("tinykube up printed no export line")?;
    let text = std::fs::read_to_string(&kubeconfig)?;
    up.url = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .context("no server in the kubeconfig")?
        .to_string();
    // Keep draining its stdout so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(up)
}

async fn create(http: &reqwest::Client, url: &str, path: &str, body: &Value) -> Result<()> {
    let resp = http.post(format!("{url}{path}")).json(body).send().await?;
    if !resp.status().is_success() {
        bail!("POST {path}: {} {}", resp.status(), resp.text().await?);
    }
    Ok(())
}

/// Poll `path` every 200 ms until `done` says so; the time it took.
async fn until(
    http: &reqwest::Client,
    url: &str,
    path: &str,
    started: Instant,
    done: impl Fn(&Value) -> bool,
) -> Result<Duration> {
    loop {
        let obj: Value = http
            .get(format!("{url}{path}"))
            .send()
            .await?
            .json()
            .await?;
        if done(&obj) {
            return Ok(started.elapsed());
        }
        if started.elapsed() > TIMEOUT {
            bail!("{path} not done after {TIMEOUT:?}: {}", obj["status"]);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub async fn bench_workloads(
    nodes: usize,
    completions: usize,
    parallelism: usize,
    replicas: usize,
    claims: bool,
) -> Result<()> {
    let http = reqwest::Client::new();
    if completions > 0 {
        let cluster = up(nodes).await?;
        let job = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "many"},
            "spec": {
                "completions": completions, "parallelism": parallelism, "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "busybox", "command": ["sh", "-c", "exit 0"],
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
            }
        });
        let started = Instant::now();
        create(
            &http,
            &cluster.url,
            "/apis/batch/v1/namespaces/default/jobs",
            &job,
        )
        .await?;
        let took = until(
            &http,
            &cluster.url,
            "/apis/batch/v1/namespaces/default/jobs/many",
            started,
            |j| {
                j["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Complete" && c["status"] == "True")
                })
            },
        )
        .await?;
        cluster.down().await;
        println!(
            "job: {completions} completions at parallelism {parallelism} Complete in {:.1} s ({:.0} pods/s)  (workload: `tinykube up --nodes {nodes}`, busybox `sh -c 'exit 0'`, restartPolicy Never)",
            took.as_secs_f64(),
            completions as f64 / took.as_secs_f64()
        );
    }
    if replicas > 0 {
        let cluster = up(nodes).await?;
        let mut sts = json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": replicas, "podManagementPolicy": "Parallel", "serviceName": "nginx",
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [{
                    "name": "nginx", "image": "registry.k8s.io/nginx-slim:0.24",
                    "ports": [{"containerPort": 80, "name": "web"}],
                    // TCP: an empty claim on the docroot makes nginx answer `/` with 403, as a real one.
                    "readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 1},
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
            }
        });
        if claims {
            sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] =
                json!([{"name": "www", "mountPath": "/usr/share/nginx/html"}]);
            sts["spec"]["volumeClaimTemplates"] = json!([{
                "metadata": {"name": "www"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }]);
        }
        let started = Instant::now();
        create(
            &http,
            &cluster.url,
            "/apis/apps/v1/namespaces/default/statefulsets",
            &sts,
        )
        .await?;
        let took = until(
            &http,
            &cluster.url,
            "/apis/apps/v1/namespaces/default/statefulsets/web",
            started,
            |s| s["status"]["readyReplicas"].as_u64() == Some(replicas as u64),
        )
        .await?;
        cluster.down().await;
        let with = if claims {
            "a 1Gi claim each (default class, provisioned)"
        } else {
            "no claims"
        };
        println!(
            "statefulset: {replicas} replicas (Parallel) Ready in {:.1} s  (workload: `tinykube up --nodes {nodes}`, nginx-slim with a TCP readiness probe, {with})",
            took.as_secs_f64()
        );
    }
    Ok(())
}

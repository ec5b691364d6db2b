//! Controller-manager benchmark (a command, not a test): starts the built API server and
//! controller manager on a temporary data dir, then times (1) a Deployment of `--replicas`
//! pods from creation until every pod exists, and (2) `set image` on a Deployment of
//! `--rollout` replicas until the rollout finished, with this program standing in for the
//! kubelets (it marks pods Running and Ready as they appear). Prints the controller manager's
//! RSS.
//!
//! ```sh
//! cargo build --release -p tinykube-apiserver -p tinykube-controllers --bins --examples
//! ./target/release/examples/scale_bench --replicas 10000 --rollout 1000
//! ```

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use tinykube_client::{Api, Client, ListParams, Patch, WatchEvent};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bin_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    // target/<profile>/examples/scale_bench -> target/<profile>
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .context("locating the built binaries")
}

fn arg(name: &str, default: usize) -> Result<usize> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == name) {
        Some(i) => args
            .get(i + 1)
            .context("missing value")?
            .parse()
            .with_context(|| format!("{name} takes a number")),
        None => Ok(default),
    }
}

fn rss_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn deployment(name: &str, replicas: usize, image: &str) -> Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "c", "image": image}]}},
        },
    }))?)
}

/// Watch pods of `app`, count those seen and, when `mark`, mark each new one Running and
/// Ready as a kubelet would.
async fn kubelet(
    client: Client,
    app: String,
    seen: Arc<std::sync::Mutex<HashSet<String>>>,
    mark: bool,
) {
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let lp = ListParams::default().labels(&format!("app={app}"));
    let mut rv = "0".to_string();
    loop {
        let Ok(stream) = pods.watch(&lp, &rv).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let mut stream = Box::pin(stream.map_err(anyhow::Error::from));
        let mut pending = futures::stream::FuturesUnordered::new();
        loop {
            tokio::select! {
                ev = stream.next() => match ev {
                    Some(Ok(WatchEvent::Added(p))) => {
                        rv = p.metadata.resource_version.clone().unwrap_or(rv);
                        let name = p.metadata.name.clone().unwrap_or_default();
                        let new = seen.lock().map(|mut s| s.insert(name.clone())).unwrap_or(false);
                        if new && mark {
                            let pods = pods.clone();
                            pending.push(async move {
                                let status = json!({"status": {"phase": "Running", "conditions": [
                                    {"type": "Ready", "status": "True",
                                     "lastTransitionTime": "2020-01-01T00:00:00Z"}]}});
                                let _ = pods.patch_status(&name, &Patch::Merge(status)).await;
                            });
                        }
                    }
                    Some(Ok(WatchEvent::Modified(p) | WatchEvent::Deleted(p))) => {
                        rv = p.metadata.resource_version.clone().unwrap_or(rv);
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break,
                },
                Some(()) = pending.next(), if !pending.is_empty() => {}
            }
        }
        while pending.next().await.is_some() {}
    }
}

async fn wait_rolled_out(api: &Api<Deployment>, name: &str, replicas: i32) -> Result<()> {
    loop {
        let d = api.get(name).await?;
        let s = d.status.clone().unwrap_or_default();
        let done = s.observed_generation >= d.metadata.generation
            && s.updated_replicas == Some(replicas)
            && s.replicas == Some(replicas)
            && s.available_replicas == Some(replicas);
        if done {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let replicas = arg("--replicas", 10_000)?;
    let rollout = arg("--rollout", 1_000)?;
    let bins = bin_dir()?;
    let data = std::env::temp_dir().join(format!("tinykube-scale-bench-{}", std::process::id()));
    let mut api = Command::new(bins.join("tinykube-apiserver"))
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .context("starting tinykube-apiserver (build it with --release first)")?;
    let stdout = api.stdout.take().context("apiserver stdout")?;
    let _api = Killed(api);
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().context("apiserver exited")??;
    std::thread::spawn(move || for _ in lines {});
    let Some(url) = first
        .rsplit(' ')
        .next()
        .filter(|u| u.starts_with("http://"))
    else {
        bail!("unexpected first line from the apiserver: {first}");
    };
    let cm = Command::new(bins.join("tinykube-controller-manager"))
        .args(["--master", url, "--leader-elect=false"])
        .env("RUST_LOG", "warn")
        .spawn()
        .context("starting tinykube-controller-manager")?;
    let cm_pid = cm.id();
    let _cm = Killed(cm);
    let client = Client::new(tinykube_client::Config::new(url))?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    for _ in 0..100 {
        if deployments.list(&ListParams::default()).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rss_idle = rss_kib(cm_pid).unwrap_or(0);

    // (1) A Deployment of `replicas` pods: creation until every pod exists.
    let seen = Arc::new(std::sync::Mutex::new(HashSet::new()));
    let watcher = tokio::spawn(kubelet(client.clone(), "big".into(), seen.clone(), false));
    let start = Instant::now();
    deployments
        .create(&deployment("big", replicas, "nginx:1.14.2")?)
        .await?;
    while seen.lock().map(|s| s.len()).unwrap_or(0) < replicas {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let create_secs = start.elapsed().as_secs_f64();
    let rss_big = rss_kib(cm_pid).unwrap_or(0);
    watcher.abort();
    println!(
        "deployment of {replicas} replicas: {replicas} pods exist after {create_secs:.2} s ({:.0} pods/s); controller manager RSS {:.1} MiB ({:.1} MiB idle)",
        replicas as f64 / create_secs,
        rss_big as f64 / 1024.0,
        rss_idle as f64 / 1024.0
    );
    deployments.delete("big", None).await?;

    // (2) set image on a Deployment of `rollout` ready replicas, until it rolled out.
    let seen = Arc::new(std::sync::Mutex::new(HashSet::new()));
    let watcher = tokio::spawn(kubelet(client.clone(), "web".into(), seen, true));
    deployments
        .create(&deployment("web", rollout, "nginx:1.14.2")?)
        .await?;
    wait_rolled_out(&deployments, "web", rollout as i32).await?;
    let start = Instant::now();
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.16.1"}]}}}});
    deployments.patch("web", &Patch::Strategic(patch)).await?;
    wait_rolled_out(&deployments, "web", rollout as i32).await?;
    let rollout_secs = start.elapsed().as_secs_f64();
    watcher.abort();
    println!(
        "set image on {rollout} ready replicas (25% surge/unavailable): rolled out after {rollout_secs:.2} s; controller manager RSS {:.1} MiB",
        rss_kib(cm_pid).unwrap_or(0) as f64 / 1024.0
    );
    let _ = std::fs::remove_dir_all(&data);
    Ok(())
}

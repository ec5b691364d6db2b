//! tinykube-bench: starts the real binaries and prints performance figures with their workload,
//! so runs can be compared over time and against upstream Kubernetes on the same machine.

mod containers;
mod custom;
mod density;
mod kubelet;
mod metrics;
mod rest;
mod scheduler;
mod storage;
mod testcluster;
mod workloads;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

#[derive(Parser)]
#[command(name = "tinykube-bench", about = "Print tinykube performance figures")]
struct Flags {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Subcommand)]
enum Bench {
    /// API server: durable creates/s of ConfigMaps and of custom objects, CRD create to first
    /// custom object, watch delivery latency, RSS per 10 000 pods.
    Apiserver {
        /// ConfigMaps, and custom objects, created for the creates/s figures.
        #[arg(long, default_value_t = 4000)]
        creates: usize,
        /// Concurrent clients creating.
        #[arg(long, default_value_t = 8)]
        clients: usize,
        /// CRDs installed one after another for the time from CRD create to the first custom
        /// object accepted (median and max printed; 0 skips it).
        #[arg(long, default_value_t = 5)]
        crd_installs: usize,
        /// Concurrent watchers for the latency figure.
        #[arg(long, default_value_t = 100)]
        watchers: usize,
        /// Pods created one by one while the watchers listen.
        #[arg(long, default_value_t = 200)]
        watch_events: usize,
        /// Pods stored before RSS is read.
        #[arg(long, default_value_t = 10_000)]
        pods: usize,
    },
    /// Store backends side by side: durable pod creates/s and watch latency through the API
    /// server on sled, on one local etcd and on a 3-member etcd (etcd from PATH).
    Storage {
        /// Pods created for the creates/s figure.
        #[arg(long, default_value_t = 4000)]
        creates: usize,
        /// Concurrent keep-alive clients creating.
        #[arg(long, default_value_t = 8)]
        clients: usize,
        /// Concurrent watchers for the latency figure.
        #[arg(long, default_value_t = 100)]
        watchers: usize,
        /// Pods created one by one while the watchers listen.
        #[arg(long, default_value_t = 200)]
        watch_events: usize,
    },
    /// Scheduler: pods/s binding pending pods to Ready nodes, and its peak RSS.
    Scheduler {
        /// Ready nodes (4 cpu, 8Gi, 110 pods each).
        #[arg(long, default_value_t = 1000)]
        nodes: usize,
        /// Plain pending pods (100m cpu, 64Mi) of the first run.
        #[arg(long, default_value_t = 10_000)]
        pods: usize,
        /// Pods of the second run, in 10 groups with required anti-affinity to their own group.
        #[arg(long, default_value_t = 1000)]
        spread_pods: usize,
        /// Nodes of the created-and-bound run (the scheduler running while the pods are
        /// created).
        #[arg(long, default_value_t = 100)]
        bind_nodes: usize,
        /// Pods of the created-and-bound run (0 skips it).
        #[arg(long, default_value_t = 1000)]
        bind_pods: usize,
    },
    /// Kubelet: cold start of `tinykube up --nodes 3`, and CPU/RSS of one kubelet simulating
    /// many nodes at rest and while pods start on them.
    Kubelet {
        /// Cold starts measured (the median is printed).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Nodes simulated by the one kubelet.
        #[arg(long, default_value_t = 1000)]
        nodes: usize,
        /// Pods started on them (needs tinykube-scheduler; 0 skips).
        #[arg(long, default_value_t = 10_000)]
        pods: usize,
        /// Seconds the kubelet is watched at rest.
        #[arg(long, default_value_t = 30)]
        rest_seconds: u64,
    },
    /// Simulated containers: the kubelet's CPU and RSS with pods running the logging page's
    /// counter loop, and with pods whose liveness probes fire every second.
    Containers {
        /// Pods that only sleep, with no probe: the baseline the others are read against
        /// (0 skips).
        #[arg(long, default_value_t = 0)]
        sleep_pods: usize,
        /// Pods running the counter loop (0 skips).
        #[arg(long, default_value_t = 10_000)]
        counter_pods: usize,
        /// nginx pods with an HTTP liveness probe every second (0 skips).
        #[arg(long, default_value_t = 1000)]
        probe_pods: usize,
        /// busybox pods with an exec liveness probe every second (0 skips).
        #[arg(long, default_value_t = 1000)]
        exec_probe_pods: usize,
        /// Nodes simulated by the one kubelet (the pods are bound to them round-robin).
        #[arg(long, default_value_t = 100)]
        nodes: usize,
        /// Seconds over which CPU is measured once every pod is Running.
        #[arg(long, default_value_t = 30)]
        window_seconds: u64,
        /// Give the sleeping and counter containers a liveness probe that does not fire during
        /// the run (initialDelaySeconds of a day).
        #[arg(long)]
        dormant_probe: bool,
    },
    /// Upstream's density scale on the whole stack (`tinykube up`, one kubelet simulating every
    /// node): pause pods created by concurrent clients until every one is Running; throughput,
    /// API call and pod startup latency (p50/p99), every component's peak RSS and CPU.
    Density {
        /// Nodes of the cluster (30 pods per node at the defaults, as upstream's SLO scale).
        #[arg(long, default_value_t = 5000)]
        nodes: usize,
        /// Pods created.
        #[arg(long, default_value_t = 150_000)]
        pods: usize,
        /// Concurrent keep-alive clients creating them.
        #[arg(long, default_value_t = 8)]
        clients: usize,
    },
    /// Workload controllers on `tinykube up`: a Job of many completions until Complete, and a
    /// Parallel StatefulSet until every replica is Ready.
    Workloads {
        /// Nodes of the cluster.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Completions of the Job (0 skips it).
        #[arg(long, default_value_t = 1000)]
        completions: usize,
        /// The Job's parallelism.
        #[arg(long, default_value_t = 100)]
        parallelism: usize,
        /// Replicas of the StatefulSet (0 skips it).
        #[arg(long, default_value_t = 100)]
        replicas: usize,
        /// Give each replica no claim (the default is one 1Gi claim each, dynamically
        /// provisioned).
        #[arg(long)]
        no_claims: bool,
    },
    /// Resource metrics: one kubelet simulating many nodes with sleeping pods, its CPU without
    /// and with a metrics server scraping it, the metrics server's CPU and RSS, and the time of
    /// a list of every PodMetrics through the aggregator.
    Metrics {
        /// Nodes simulated by the one kubelet.
        #[arg(long, default_value_t = 1000)]
        nodes: usize,
        /// Sleeping pods bound to them round-robin.
        #[arg(long, default_value_t = 10_000)]
        pods: usize,
        /// The metrics server's --metric-resolution, in seconds.
        #[arg(long, default_value_t = 15)]
        resolution_seconds: u64,
        /// Seconds over which CPU is measured, without and with scraping.
        #[arg(long, default_value_t = 60)]
        window_seconds: u64,
    },
    /// How fast a test gets a cluster: an in-process TestCluster (1 and 3 nodes) to ready and
    /// to a Deployment's 3 pods Running, the memory it adds, and `tinykube up` to ready.
    Testcluster {
        /// Rounds, each of every shape.
        #[arg(long, default_value_t = 5)]
        rounds: usize,
    },
    /// The whole stack at rest: every process's VmRSS (anon, file, PSS, threads) and the sum,
    /// of `tinykube up` after its nodes have been Ready a while, and its cold start.
    Rest {
        /// Nodes of the cluster.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Seconds at rest after the ready line before memory is read.
        #[arg(long, default_value_t = 30)]
        seconds: u64,
        /// Runs (alternated with --before's when given).
        #[arg(long, default_value_t = 1)]
        runs: usize,
        /// Another build's binary folder (its `tinykube` and components), run alternately.
        #[arg(long)]
        before: Option<PathBuf>,
    },
}

fn binary(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().context("bench binary has a folder")?;
    let path = dir.join(name);
    if !path.exists() {
        bail!(
            "{} not found: build it first (cargo build --release --workspace --bins)",
            path.display()
        );
    }
    Ok(path)
}

struct Server {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

async fn start_apiserver() -> Result<Server> {
    start_apiserver_with(&[]).await
}

/// Start the release API server on a fresh data dir with extra flags.
async fn start_apiserver_with(flags: &[String]) -> Result<Server> {
    let dir = tempfile::tempdir()?;
    let mut child = Command::new(binary("tinykube-apiserver")?)
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .args(flags)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let line = lines
        .next_line()
        .await?
        .context("apiserver printed nothing")?;
    let url = line.rsplit(' ').next().context("address")?.to_string();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(Server {
        child,
        url,
        _dir: dir,
    })
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": "bench"}},
           "spec": {"containers": [{"name": "c", "image": "nginx:1.14.2",
                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}})
}

/// Create `total` objects with `clients` concurrent clients; returns objects/s.
async fn create_many(
    url: &str,
    path: &str,
    total: usize,
    clients: usize,
    prefix: &str,
    body: impl Fn(&str) -> Value + Send + Sync + 'static,
) -> Result<f64> {
    let http = reqwest::Client::new();
    let body = Arc::new(body);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let http = http.clone();
        let next = next.clone();
        let target = format!("{url}{path}");
        let prefix = prefix.to_string();
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= total {
                    return Ok::<(), anyhow::Error>(());
                }
                let resp = http
                    .post(&target)
                    .json(&(*body)(&format!("{prefix}-{i}")))
                    .send()
                    .await?;
                if resp.status().as_u16() != 201 {
                    bail!("create returned {}", resp.status());
                }
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(total as f64 / start.elapsed().as_secs_f64())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

async fn watch_latency(
    url: &str,
    watchers: usize,
    events: usize,
) -> Result<(Duration, Duration, usize)> {
    let http = reqwest::Client::new();
    let ns = format!("{url}/api/v1/namespaces/default/pods");
    let list: Value = http.get(&ns).send().await?.json().await?;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string();
    let sent: Arc<Mutex<std::collections::HashMap<String, Instant>>> = Arc::default();
    let latencies: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let mut tasks = Vec::new();
    for _ in 0..watchers {
        let resp = http
            .get(format!(
                "{ns}?watch=true&resourceVersion={rv}&labelSelector=app%3Dwatch&timeoutSeconds=120"
            ))
            .send()
            .await?;
        let sent = sent.clone();
        let latencies = latencies.clone();
        tasks.push(tokio::spawn(async move {
            let mut stream = resp.bytes_stream();
            let mut buf = Vec::new();
            let mut seen = 0;
            while let Some(chunk) = stream.next().await {
                let Ok(chunk) = chunk else { break };
                buf.extend_from_slice(&chunk);
                while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=pos).collect();
                    let Ok(ev) = serde_json::from_slice::<Value>(&line) else {
                        continue;
                    };
                    if ev["type"] != "ADDED" {
                        continue;
                    }
                    let name = ev["object"]["metadata"]["name"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    let at = Instant::now();
                    if let Some(t0) = sent.lock().await.get(&name) {
                        latencies.lock().await.push(at - *t0);
                    }
                    seen += 1;
                    if seen == events {
                        return;
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..events {
        let name = format!("watch-{i}");
        let mut body = pod(&name);
        body["metadata"]["labels"]["app"] = "watch".into();
        sent.lock().await.insert(name, Instant::now());
        http.post(&ns).json(&body).send().await?;
    }
    for t in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(60), t).await;
    }
    let mut l = latencies.lock().await.clone();
    l.sort();
    Ok((percentile(&l, 0.5), percentile(&l, 0.99), l.len()))
}

/// Watch every pod from `rv` for up to `timeout_secs`, calling `on_pod` with each event's
/// object as it comes.
async fn watch_pods(
    url: &str,
    rv: &str,
    timeout_secs: u64,
    mut on_pod: impl FnMut(&Value),
) -> Result<()> {
    watch_events(url, rv, timeout_secs, |ev: Value| on_pod(&ev["object"])).await
}

/// Watch every pod from `rv` for up to `timeout_secs`, calling `on_event` with each event
/// decoded as `E` (a type that reads only what the caller needs is cheaper than a `Value`).
async fn watch_events<E: serde::de::DeserializeOwned>(
    url: &str,
    rv: &str,
    timeout_secs: u64,
    mut on_event: impl FnMut(E),
) -> Result<()> {
    let resp = reqwest::Client::new()
        .get(format!(
            "{url}/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds={timeout_secs}"
        ))
        .send()
        .await?;
    let mut stream = resp.bytes_stream();
    let mut buf = Vec::new();
    while let Some(chunk) = stream.next().await {
        buf.extend_from_slice(&chunk?);
        let mut start = 0;
        while let Some(pos) = buf[start..].iter().position(|b| *b == b'\n') {
            if let Ok(ev) = serde_json::from_slice::<E>(&buf[start..start + pos]) {
                on_event(ev);
            }
            start += pos + 1;
        }
        buf.drain(..start);
    }
    Ok(())
}

/// The store's current revision, as a list of pods reports it: where a watch starts.
async fn current_revision(http: &reqwest::Client, url: &str) -> Result<String> {
    let list: Value = http
        .get(format!("{url}/api/v1/pods?limit=1"))
        .send()
        .await?
        .json()
        .await?;
    Ok(list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string())
}

/// The processes of a `tinykube up` data dir: each component's name and pid, from `run/*.pid`.
fn component_pids(data: &std::path::Path) -> Result<Vec<(String, u32)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(data.join("run"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "pid") {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((name, std::fs::read_to_string(&path)?.trim().parse()?));
        }
    }
    out.sort();
    Ok(out)
}

fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("VmRSS")?;
    Ok(line.split_whitespace().nth(1).context("value")?.parse()?)
}

async fn bench_apiserver(
    creates: usize,
    clients: usize,
    crd_installs: usize,
    watchers: usize,
    watch_events: usize,
    pods: usize,
) -> Result<()> {
    let server = start_apiserver().await?;
    let pid = server.child.id().context("pid")?;
    let cm = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}});
    let rate = create_many(
        &server.url,
        "/api/v1/namespaces/default/configmaps",
        creates,
        clients,
        "cm",
        cm,
    )
    .await?;
    println!("apiserver durable creates: {rate:.0}/s  (workload: {creates} ConfigMaps, {clients} concurrent clients, ack after fsync)");
    custom::bench_custom(creates, clients, crd_installs).await?;
    let (p50, p99, n) = watch_latency(&server.url, watchers, watch_events).await?;
    println!(
        "apiserver watch latency: p50 {:.2} ms, p99 {:.2} ms  (workload: {watchers} watchers x {watch_events} pod creates, {n} deliveries)",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    let before = rss_kib(pid)?;
    let rate = create_many(
        &server.url,
        "/api/v1/namespaces/default/pods",
        pods,
        clients,
        "pod",
        pod,
    )
    .await?;
    let after = rss_kib(pid)?;
    println!(
        "apiserver pod creates: {rate:.0}/s  (workload: {pods} pods, {clients} concurrent clients)"
    );
    println!(
        "apiserver RSS: {:.1} MiB with {pods} pods stored ({:.1} MiB before them)",
        after as f64 / 1024.0,
        before as f64 / 1024.0
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    match Flags::parse().bench {
        Bench::Apiserver {
            creates,
            clients,
            crd_installs,
            watchers,
            watch_events,
            pods,
        } => bench_apiserver(creates, clients, crd_installs, watchers, watch_events, pods).await,
        Bench::Storage {
            creates,
            clients,
            watchers,
            watch_events,
        } => storage::bench_storage(creates, clients, watchers, watch_events).await,
        Bench::Scheduler {
            nodes,
            pods,
            spread_pods,
            bind_nodes,
            bind_pods,
        } => scheduler::bench_scheduler(nodes, pods, spread_pods, bind_nodes, bind_pods).await,
        Bench::Kubelet {
            runs,
            nodes,
            pods,
            rest_seconds,
        } => kubelet::bench_kubelet(runs, nodes, pods, Duration::from_secs(rest_seconds)).await,
        Bench::Containers {
            sleep_pods,
            counter_pods,
            probe_pods,
            exec_probe_pods,
            nodes,
            window_seconds,
            dormant_probe,
        } => {
            containers::bench_containers(
                sleep_pods,
                counter_pods,
                probe_pods,
                exec_probe_pods,
                nodes,
                Duration::from_secs(window_seconds),
                dormant_probe,
            )
            .await
        }
        Bench::Workloads {
            nodes,
            completions,
            parallelism,
            replicas,
            no_claims,
        } => {
            workloads::bench_workloads(nodes, completions, parallelism, replicas, !no_claims).await
        }
        Bench::Density {
            nodes,
            pods,
            clients,
        } => density::bench_density(nodes, pods, clients).await,
        Bench::Testcluster { rounds } => testcluster::bench_testcluster(rounds).await,
        Bench::Rest {
            nodes,
            seconds,
            runs,
            before,
        } => rest::bench_rest(nodes, Duration::from_secs(seconds), runs, before).await,
        Bench::Metrics {
            nodes,
            pods,
            resolution_seconds,
            window_seconds,
        } => {
            metrics::bench_metrics(
                nodes,
                pods,
                Duration::from_secs(resolution_seconds),
                Duration::from_secs(window_seconds),
            )
            .await
        }
    }
}

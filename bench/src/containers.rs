//! `tinykube-bench containers`: what the kubelet's simulated containers cost. One kubelet
//! simulating many nodes runs pods created already bound to them: the logging page's counter
//! loop (a line a second from each pod), then pods whose liveness probes fire every second
//! (HTTP against nginx, and `exec` in busybox). For each it prints the time to all Running, the
//! kubelet's CPU and RSS over a window while they run, and the pod status writes it made then.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use tokio::process::{Child, Command};

use crate::kubelet::{cpu_time, ready_nodes, terminate};
use crate::{binary, create_many, rss_kib, start_apiserver, Server};

/// The counter of the Kubernetes docs' logging page (`debug/debug-cluster/logging`).
const COUNTER: &str = r#"i=0; while true; do echo "$i: $(date)"; i=$((i+1)); sleep 1; done"#;
/// Concurrent clients creating the pods.
const CLIENTS: usize = 8;
/// How long the pods may take to be all Running.
const RUNNING_TIMEOUT: Duration = Duration::from_secs(900);

/// What the pod watch has seen so far.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// Pods whose latest phase is Running.
    running: usize,
    /// Watch events (each a write of a pod) since the watch began.
    events: u64,
    /// The sum of the pods' latest restart counts.
    restarts: i64,
}

/// Follow every pod from `rv` and publish what has been seen after each event.
async fn follow_pods(url: String, rv: String, tx: tokio::sync::watch::Sender<Seen>) -> Result<()> {
    let mut pods: HashMap<String, (bool, i64)> = HashMap::new();
    let mut seen = Seen::default();
    crate::watch_pods(&url, &rv, 3600, |pod| {
        let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
        let running = pod["status"]["phase"] == "Running";
        let restarts = pod["status"]["containerStatuses"]
            .as_array()
            .map(|cs| cs.iter().filter_map(|c| c["restartCount"].as_i64()).sum())
            .unwrap_or(0);
        let (was_running, was_restarts) =
            pods.insert(name, (running, restarts)).unwrap_or_default();
        seen.running = seen.running + running as usize - was_running as usize;
        seen.restarts += restarts - was_restarts;
        seen.events += 1;
        let _ = tx.send(seen);
    })
    .await
}

/// An API server and one kubelet simulating `nodes` nodes; both are killed when dropped.
pub(crate) struct Cluster {
    pub(crate) server: Server,
    kubelet: Child,
    pub(crate) kubelet_pid: u32,
    pub(crate) http: reqwest::Client,
    _stderr: tempfile::TempDir,
}

impl Cluster {
    pub(crate) async fn start(nodes: usize, pods_per_node: usize) -> Result<Cluster> {
        let server = start_apiserver().await?;
        let stderr = tempfile::tempdir()?;
        let log = std::fs::File::create(stderr.path().join("kubelet.log"))?;
        let kubelet = Command::new(binary("tinykube-kubelet")?)
            .args(["--master", &server.url, "--hostname-override", "sim"])
            .args(["--simulate-nodes", &nodes.to_string()])
            .args(["--read-only-port", "0"])
            .args(["--capacity", &format!("pods={pods_per_node}")])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()?;
        let kubelet_pid = kubelet.id().context("kubelet pid")?;
        let cluster = Cluster {
            server,
            kubelet,
            kubelet_pid,
            http: reqwest::Client::new(),
            _stderr: stderr,
        };
        let started = Instant::now();
        while ready_nodes(&cluster.http, &cluster.server.url)
            .await
            .unwrap_or(0)
            < nodes
        {
            if started.elapsed() > Duration::from_secs(120) {
                bail!("{nodes} nodes not Ready after 120 s");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(cluster)
    }

    /// Warning lines the kubelet logged so far.
    fn kubelet_warnings(&self) -> usize {
        std::fs::read_to_string(self._stderr.path().join("kubelet.log"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    pub(crate) async fn stop(mut self) {
        terminate(&self.kubelet);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.kubelet.wait()).await;
        terminate(&self.server.child);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.server.child.wait()).await;
    }
}

/// Figures of one workload: pods made by `body`, bound round-robin to the nodes.
pub(crate) struct Run {
    /// Until the last pod was created, and until all were Running.
    created: Duration,
    pub(crate) running: Duration,
    /// The kubelet's and the API server's share of one core over the window.
    pub(crate) kubelet_cpu: f64,
    apiserver_cpu: f64,
    /// The kubelet's RSS at the end of the window, and before the pods.
    pub(crate) rss_kib: u64,
    rss_before_kib: u64,
    /// The kubelet's RSS at the start of the window (all Running).
    rss_running_kib: u64,
    /// Pod writes seen on the watch per second of the window.
    writes_per_s: f64,
    /// Restarts summed over every pod at the end.
    restarts: i64,
    warnings: usize,
}

pub(crate) async fn run(
    cluster: &Cluster,
    pods: usize,
    nodes: usize,
    window: Duration,
    prefix: &'static str,
    body: impl Fn(&str) -> Value + Send + Sync + 'static,
) -> Result<Run> {
    let url = &cluster.server.url;
    let rv = crate::current_revision(&cluster.http, url).await?;
    let (tx, mut seen) = tokio::sync::watch::channel(Seen::default());
    let watcher = tokio::spawn(follow_pods(url.clone(), rv, tx));
    let rss_before_kib = rss_kib(cluster.kubelet_pid)?;
    let started = Instant::now();
    let bound = move |name: &str| {
        let i: usize = name
            .rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let mut pod = body(name);
        pod["spec"]["nodeName"] = format!("sim-{}", i % nodes).into();
        pod
    };
    create_many(
        url,
        "/api/v1/namespaces/default/pods",
        pods,
        CLIENTS,
        prefix,
        bound,
    )
    .await?;
    let created = started.elapsed();
    loop {
        let now = *seen.borrow_and_update();
        if now.running >= pods {
            break;
        }
        if started.elapsed() > RUNNING_TIMEOUT {
            bail!(
                "only {} of {pods} pods Running after {RUNNING_TIMEOUT:?}",
                now.running
            );
        }
        let _ = tokio::time::timeout(Duration::from_millis(250), seen.changed()).await;
    }
    let running = started.elapsed();

    let apiserver_pid = cluster.server.child.id().context("apiserver pid")?;
    let events0 = seen.borrow().events;
    let rss_running_kib = rss_kib(cluster.kubelet_pid)?;
    let (k0, a0, t0) = (
        cpu_time(cluster.kubelet_pid)?,
        cpu_time(apiserver_pid)?,
        Instant::now(),
    );
    tokio::time::sleep(window).await;
    let (k1, a1, took) = (
        cpu_time(cluster.kubelet_pid)?,
        cpu_time(apiserver_pid)?,
        t0.elapsed(),
    );
    let rss = rss_kib(cluster.kubelet_pid)?;
    let after = *seen.borrow();
    watcher.abort();
    let share = |d: Duration| d.as_secs_f64() / took.as_secs_f64();
    Ok(Run {
        created,
        running,
        kubelet_cpu: share(k1 - k0),
        apiserver_cpu: share(a1 - a0),
        rss_kib: rss,
        rss_before_kib,
        rss_running_kib,
        writes_per_s: (after.events - events0) as f64 / took.as_secs_f64(),
        restarts: after.restarts,
        warnings: cluster.kubelet_warnings(),
    })
}

fn print(what: &str, pods: usize, nodes: usize, window: Duration, r: &Run) {
    println!(
        "{what}: {pods} pods Running in {:.1} s ({:.0} pods/s; all created at {:.1} s)",
        r.running.as_secs_f64(),
        pods as f64 / r.running.as_secs_f64(),
        r.created.as_secs_f64(),
    );
    println!(
        "  kubelet over {:.0} s: {:.1}% of one core, RSS {:.1} MiB ({:.1} MiB at its start, {:.1} MiB before the pods); API server {:.1}% of one core; {:.1} pod writes/s; restarts {}; kubelet log lines {}  (one kubelet, {nodes} simulated nodes)",
        window.as_secs_f64(),
        r.kubelet_cpu * 100.0,
        r.rss_kib as f64 / 1024.0,
        r.rss_running_kib as f64 / 1024.0,
        r.rss_before_kib as f64 / 1024.0,
        r.apiserver_cpu * 100.0,
        r.writes_per_s,
        r.restarts,
        r.warnings,
    );
}

fn counter_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": "counter"}},
           "spec": {"containers": [{"name": "count", "image": "busybox:1.28",
                     "args": ["/bin/sh", "-c", COUNTER]}]}})
}

/// The baseline: a container that only sleeps, with no probe.
pub(crate) fn sleep_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": "sleep"}},
           "spec": {"containers": [{"name": "sleep", "image": "busybox:1.28",
                     "args": ["/bin/sh", "-c", "sleep 3600"]}]}})
}

fn http_probe_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": "http-probe"}},
           "spec": {"containers": [{"name": "nginx", "image": "nginx",
                     "ports": [{"containerPort": 80}],
                     "livenessProbe": {"httpGet": {"path": "/", "port": 80},
                                       "periodSeconds": 1}}]}})
}

fn exec_probe_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": "exec-probe"}},
           "spec": {"containers": [{"name": "liveness", "image": "busybox",
                     "args": ["/bin/sh", "-c", "touch /tmp/healthy; sleep 3600"],
                     "livenessProbe": {"exec": {"command": ["cat", "/tmp/healthy"]},
                                       "periodSeconds": 1}}]}})
}

/// A liveness probe that never fires in the run (its initial delay is a day): what a container
/// with a probe costs before its first probe.
fn dormant_probe() -> Value {
    json!({"exec": {"command": ["true"]}, "initialDelaySeconds": 86_400})
}

/// One kind of pod the benchmark runs.
struct Workload {
    what: &'static str,
    /// Its pods are `PREFIX-0` … `PREFIX-(N-1)`.
    prefix: &'static str,
    body: fn(&str) -> Value,
    /// Print the last pod's log through the API server.
    show_log: bool,
    /// Add the dormant probe with `--dormant-probe` (containers without a probe of their own).
    dormant: bool,
}

const SLEEP: Workload = Workload {
    what: "sleeping containers (busybox:1.28 `sleep 3600`; the baseline)",
    prefix: "sleep",
    body: sleep_pod,
    show_log: false,
    dormant: true,
};
const COUNTER_LOOP: Workload = Workload {
    what: "counter loop (busybox:1.28, the logging page's `echo \"$i: $(date)\"; sleep 1` loop)",
    prefix: "counter",
    body: counter_pod,
    show_log: true,
    dormant: true,
};
const HTTP_PROBES: Workload = Workload {
    what: "HTTP liveness probes (nginx, httpGet / on 80 every 1 s)",
    prefix: "http-probe",
    body: http_probe_pod,
    show_log: false,
    dormant: false,
};
const EXEC_PROBES: Workload = Workload {
    what: "exec liveness probes (busybox `touch /tmp/healthy; sleep 3600`, `cat /tmp/healthy` every 1 s)",
    prefix: "exec-probe",
    body: exec_probe_pod,
    show_log: false,
    dormant: false,
};

/// Run `pods` pods of `w` on a fresh cluster and print the figures.
async fn workload(
    w: &Workload,
    pods: usize,
    nodes: usize,
    window: Duration,
    dormant: bool,
) -> Result<()> {
    if pods == 0 {
        return Ok(());
    }
    let cluster = Cluster::start(nodes, pods.div_ceil(nodes).max(110)).await?;
    let (body, prefix) = (w.body, w.prefix);
    let dormant = dormant && w.dormant;
    let r = if dormant {
        let with_probe = move |name: &str| {
            let mut pod = body(name);
            pod["spec"]["containers"][0]["livenessProbe"] = dormant_probe();
            pod
        };
        run(&cluster, pods, nodes, window, prefix, with_probe).await?
    } else {
        run(&cluster, pods, nodes, window, prefix, body).await?
    };
    let what = if dormant {
        format!("{}, with a dormant liveness probe", w.what)
    } else {
        w.what.to_string()
    };
    print(&what, pods, nodes, window, &r);
    if w.show_log {
        let url = &cluster.server.url;
        let last = format!("{prefix}-{}", pods - 1);
        let log = cluster
            .http
            .get(format!(
                "{url}/api/v1/namespaces/default/pods/{last}/log?tailLines=2"
            ))
            .send()
            .await?;
        let status = log.status();
        let text = log.text().await?;
        if !status.is_success() {
            bail!("log of {last}: {status}: {text}");
        }
        println!("  kubectl logs {last} --tail 2:");
        for line in text.lines() {
            println!("    {line}");
        }
    }
    cluster.stop().await;
    Ok(())
}

pub async fn bench_containers(
    sleep_pods: usize,
    counter_pods: usize,
    probe_pods: usize,
    exec_probe_pods: usize,
    nodes: usize,
    window: Duration,
    dormant: bool,
) -> Result<()> {
    for (w, pods) in [
        (&SLEEP, sleep_pods),
        (&COUNTER_LOOP, counter_pods),
        (&HTTP_PROBES, probe_pods),
        (&EXEC_PROBES, exec_probe_pods),
    ] {
        workload(w, pods, nodes, window, dormant).await?;
    }
    Ok(())
}

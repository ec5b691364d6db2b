//! `tinykube-bench scheduler`: the scheduler's own throughput. Nodes and pending pods are created
//! through the API first; then the scheduler starts and the benchmark times, from a watch on
//! pods, how long it takes to bind them all.

use std::collections::HashSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::process::{Child, Command};

use crate::kubelet::cpu_time;
use crate::{binary, create_many, rss_kib, start_apiserver, Server};

/// What one run measured.
struct Run {
    /// From the scheduler's start to the last binding.
    total: Duration,
    /// From the first binding to the last.
    steady: Duration,
    bound: usize,
    peak_rss_kib: u64,
    /// The scheduler's CPU time (user and system) over the run, informer start-up included.
    cpu: Duration,
}

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "topology.kubernetes.io/zone": zone_of(name)}}})
}

fn zone_of(name: &str) -> String {
    let n: usize = name
        .rsplit('-')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    format!("zone-{}", n % 3)
}

/// Create `count` nodes, mark them Ready with 4 cpu / 8Gi / 110 pods, and lift the not-ready
/// taint the API server puts on new nodes (the node-lifecycle controller's job).
async fn create_nodes(server: &Server, count: usize, clients: usize) -> Result<()> {
    create_many(&server.url, "/api/v1/nodes", count, clients, "node", node).await?;
    let http = reqwest::Client::new();
    let status = json!({"status": {
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "kubelet is posting ready status"}]}});
    let names: Vec<String> = (0..count).map(|i| format!("node-{i}")).collect();
    let results = futures::stream::iter(names)
        .map(|name| {
            let http = http.clone();
            let status = status.clone();
            let url = server.url.clone();
            async move {
                for (path, body) in [
                    (format!("{url}/api/v1/nodes/{name}/status"), status),
                    (
                        format!("{url}/api/v1/nodes/{name}"),
                        json!({"spec": {"taints": null}}),
                    ),
                ] {
                    let resp = http
                        .patch(path)
                        .header("content-type", "application/merge-patch+json")
                        .json(&body)
                        .send()
                        .await?;
                    if !resp.status().is_success() {
                        bail!("patching node {name}: {}", resp.status());
                    }
                }
                Ok(())
            }
        })
        .buffer_unordered(clients)
        .collect::<Vec<Result<()>>>()
        .await;
    results.into_iter().collect()
}

fn plain_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": "bench"}},
           "spec": {"containers": [{"name": "c", "image": "nginx:1.14.2",
                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}})
}

/// Pod `spread-I` of group I mod GROUPS, which refuses to share a node with its group.
fn spread_pod(name: &str) -> Value {
    let i: usize = name
        .rsplit('-')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let group = format!("g{}", i % GROUPS);
    let mut pod = plain_pod(name);
    pod["metadata"]["labels"] = json!({"app": "spread", "group": group});
    pod["spec"]["affinity"] = json!({"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"group": group}},
            "topologyKey": "kubernetes.io/hostname"}]}});
    pod
}

/// The release scheduler against `server`, without leader election.
fn start_scheduler(server: &Server) -> Result<Child> {
    Command::new(binary("tinykube-scheduler")?)
        .args(["--master", &server.url, "--secure-port", "0"])
        .args(["--leader-elect=false", "--seed", "1"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting tinykube-scheduler")
}

/// Start the scheduler and wait, from a watch, until `expected` pods are bound.
async fn time_bindings(server: &Server, expected: usize) -> Result<Run> {
    let http = reqwest::Client::new();
    let pods = format!("{}/api/v1/pods", server.url);
    let rv = crate::current_revision(&http, &server.url).await?;
    let resp = http
        .get(format!(
            "{pods}?watch=true&resourceVersion={rv}&timeoutSeconds=3600"
        ))
        .send()
        .await?;
    let mut stream = resp.bytes_stream();

    let start = Instant::now();
    let mut scheduler = start_scheduler(server)?;
    let pid = scheduler.id().context("scheduler pid")?;

    let mut bound = HashSet::new();
    let mut first = None;
    let mut buf = Vec::new();
    let mut peak_rss_kib = 0;
    let mut last_sample = Instant::now();
    while bound.len() < expected {
        let chunk = tokio::time::timeout(Duration::from_secs(120), stream.next())
            .await
            .with_context(|| format!("no binding for 120 s; {} bound", bound.len()))?
            .context("watch ended")??;
        buf.extend_from_slice(&chunk);
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            let Ok(ev) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            let obj = &ev["object"];
            if obj["spec"]["nodeName"].is_string() {
                let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
                if bound.insert(name) && first.is_none() {
                    first = Some(Instant::now());
                }
            }
        }
        if last_sample.elapsed() > Duration::from_millis(100) {
            peak_rss_kib = peak_rss_kib.max(rss_kib(pid)?);
            last_sample = Instant::now();
        }
    }
    let end = Instant::now();
    peak_rss_kib = peak_rss_kib.max(rss_kib(pid)?);
    let cpu = cpu_time(pid)?;
    scheduler.kill().await.ok();
    Ok(Run {
        total: end - start,
        steady: end - first.unwrap_or(start),
        bound: bound.len(),
        peak_rss_kib,
        cpu,
    })
}

fn report(what: &str, run: &Run, workload: &str) {
    println!(
        "scheduler {what}: {:.0} pods/s from start, {:.0} pods/s from the first binding  \
         ({} pods bound in {:.2} s; scheduler CPU {:.2} s, {:.0} µs per pod; peak RSS {:.1} MiB; \
         workload: {workload})",
        run.bound as f64 / run.total.as_secs_f64(),
        run.bound as f64 / run.steady.as_secs_f64().max(1e-3),
        run.bound,
        run.total.as_secs_f64(),
        run.cpu.as_secs_f64(),
        run.cpu.as_secs_f64() * 1e6 / run.bound.max(1) as f64,
        run.peak_rss_kib as f64 / 1024.0,
    );
}

/// The scheduler already running: `pods` pods created by `clients` concurrent clients while a
/// watch counts bindings; pods/s from the first create to the last binding, and the API
/// server's CPU over that time.
async fn created_and_bound(server: &Server, pods: usize, clients: usize) -> Result<(f64, f64)> {
    let http = reqwest::Client::new();
    let mut scheduler = start_scheduler(server)?;
    let path = "/api/v1/namespaces/default/pods";
    // The scheduler is ready once it binds a first pod.
    create_many(&server.url, path, 1, 1, "warmup", plain_pod).await?;
    let warm = Instant::now();
    loop {
        let pod: Value = http
            .get(format!("{}{path}/warmup-0", server.url))
            .send()
            .await?
            .json()
            .await?;
        if pod["spec"]["nodeName"].is_string() {
            break;
        }
        if warm.elapsed() > Duration::from_secs(60) {
            bail!("the scheduler bound no pod in 60 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rv = crate::current_revision(&http, &server.url).await?;
    let (tx, mut bound) = tokio::sync::watch::channel(0usize);
    let url = server.url.clone();
    let watcher = tokio::spawn(async move {
        let mut names = HashSet::new();
        crate::watch_events(&url, &rv, 3600, |ev: crate::density::Event| {
            let pod = ev.object;
            if pod.spec.node_name.is_some() && pod.metadata.name.starts_with("pod-") {
                names.insert(pod.metadata.name);
                tx.send_replace(names.len());
            }
        })
        .await
    });
    let apiserver_pid = server.child.id().context("apiserver pid")?;
    let cpu0 = cpu_time(apiserver_pid)?;
    let start = Instant::now();
    let url = server.url.clone();
    let creating =
        tokio::spawn(async move { create_many(&url, path, pods, clients, "pod", plain_pod).await });
    let all = tokio::time::timeout(
        Duration::from_secs(120 + pods as u64 / 10),
        bound.wait_for(|n| *n >= pods),
    )
    .await
    .is_ok();
    let took = start.elapsed();
    watcher.abort();
    if !all {
        bail!("only {} of {pods} pods bound", *bound.borrow());
    }
    creating.await??;
    let cpu = cpu_time(apiserver_pid)? - cpu0;
    scheduler.kill().await.ok();
    Ok((
        pods as f64 / took.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / pods as f64,
    ))
}

/// Groups of the anti-affinity run; the pods of a group need a node each.
const GROUPS: usize = 10;

pub async fn bench_scheduler(
    nodes: usize,
    pods: usize,
    spread_pods: usize,
    bind_nodes: usize,
    bind_pods: usize,
) -> Result<()> {
    let clients = 8;
    if bind_pods > 0 {
        let server = start_apiserver().await?;
        create_nodes(&server, bind_nodes, clients).await?;
        let (rate, cpu_per_pod) = created_and_bound(&server, bind_pods, clients).await?;
        println!(
            "pods created and bound: {rate:.0} pods/s (API server CPU {cpu_per_pod:.0} µs per pod; workload: {bind_pods} pods of 100m/64Mi created by {clients} concurrent keep-alive clients while tinykube-scheduler binds them to {bind_nodes} Ready nodes; from the first create to the last binding seen on a watch)"
        );
    }
    if pods > 0 {
        let server = start_apiserver().await?;
        create_nodes(&server, nodes, clients).await?;
        let path = "/api/v1/namespaces/default/pods";
        create_many(&server.url, path, pods, clients, "pod", plain_pod).await?;
        let run = time_bindings(&server, pods).await?;
        let workload = format!(
            "{pods} pending pods of 100m cpu / 64Mi, {nodes} Ready nodes of 4 cpu / 8Gi, default plugins"
        );
        report("plain pods", &run, &workload);
    }
    if spread_pods > 0 {
        if spread_pods > nodes * GROUPS {
            bail!(
                "--spread-pods {spread_pods} needs at least {} nodes",
                spread_pods.div_ceil(GROUPS)
            );
        }
        let server = start_apiserver().await?;
        create_nodes(&server, nodes, clients).await?;
        let path = "/api/v1/namespaces/default/pods";
        create_many(
            &server.url,
            path,
            spread_pods,
            clients,
            "spread",
            spread_pod,
        )
        .await?;
        let run = time_bindings(&server, spread_pods).await?;
        let workload = format!(
            "{spread_pods} pending pods in {GROUPS} groups, each with required anti-affinity to its own group on kubernetes.io/hostname, {nodes} Ready nodes"
        );
        report("pod anti-affinity", &run, &workload);
    }
    Ok(())
}

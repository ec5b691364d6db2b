//! `tinykube-bench kubelet`: cold start of `tinykube up --nodes 3` until every node is Ready
//! (median of several runs), and what one kubelet process simulating many nodes costs in CPU
//! and memory, at rest and (when the scheduler is built) while pods bound to its nodes start.

use std::collections::HashSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::process::{Child, Command};

use crate::{binary, create_many, pod, rss_kib, start_apiserver};

/// CPU time (user + system) a process has used so far.
pub(crate) fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces) start at the state, field 3.
    let rest = stat.rsplit_once(')').context("stat format")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11).context("utime")?.parse::<u64>()?
        + fields.get(12).context("stime")?.parse::<u64>()?;
    let hz = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(100);
    Ok(Duration::from_millis(ticks * 1000 / hz))
}

pub(crate) fn terminate(child: &Child) {
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("kill")
            .arg(pid.to_string())
            .status();
    }
}

/// One cold start: from spawning `tinykube up` to its `export KUBECONFIG=` line.
pub(crate) async fn cold_start(nodes: usize) -> Result<Duration> {
    let up = crate::workloads::up_with(nodes, &[]).await?;
    let took = up.ready;
    up.down().await;
    Ok(took)
}

pub(crate) async fn ready_nodes(http: &reqwest::Client, url: &str) -> Result<usize> {
    let list: Value = http
        .get(format!("{url}/api/v1/nodes"))
        .send()
        .await?
        .json()
        .await?;
    Ok(list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|n| {
                    n["status"]["conditions"].as_array().is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
                })
                .count()
        })
        .unwrap_or(0))
}

/// Watch every pod from `rv` and report, as they happen, how many are bound and how many
/// Running (by name, so repeats of an event count once).
async fn watch_progress(
    url: &str,
    rv: &str,
    progress: tokio::sync::watch::Sender<(usize, usize)>,
) -> Result<()> {
    let (mut bound, mut running) = (HashSet::new(), HashSet::new());
    crate::watch_pods(url, rv, 900, |pod| {
        let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
        if pod["spec"]["nodeName"].is_string() {
            bound.insert(name.clone());
        }
        if pod["status"]["phase"] == "Running" {
            running.insert(name);
        }
        let _ = progress.send((bound.len(), running.len()));
    })
    .await
}

/// Lift the not-ready taint of every node (the node lifecycle controller's job).
async fn lift_taints(http: &reqwest::Client, url: &str, names: Vec<String>) -> Result<()> {
    let results = futures::stream::iter(names)
        .map(|name| {
            let http = http.clone();
            let url = url.to_string();
            async move {
                http.patch(format!("{url}/api/v1/nodes/{name}"))
                    .header("Content-Type", "application/merge-patch+json")
                    .body(json!({"spec": {"taints": null}}).to_string())
                    .send()
                    .await
                    .map(|r| r.status().is_success())
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    if results.iter().any(|r| !matches!(r, Ok(true))) {
        bail!("could not lift the not-ready taint of every node");
    }
    Ok(())
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

pub async fn bench_kubelet(runs: usize, nodes: usize, pods: usize, rest: Duration) -> Result<()> {
    // Cold start of `tinykube up --nodes 3`.
    let mut times = Vec::new();
    for _ in 0..runs {
        times.push(cold_start(3).await?);
    }
    times.sort();
    println!(
        "tinykube up cold start: median {:.0} ms (min {:.0}, max {:.0})  (workload: `tinykube up --nodes 3 --port 0` on a fresh data dir until its export line, i.e. every node Ready; {runs} runs)",
        times[times.len() / 2].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3
    );

    // One kubelet simulating `nodes` nodes.
    let server = start_apiserver().await?;
    let http = reqwest::Client::new();
    let started = Instant::now();
    let mut kubelet = Command::new(binary("tinykube-kubelet")?)
        .args(["--master", &server.url, "--hostname-override", "sim"])
        .args([
            "--simulate-nodes",
            &nodes.to_string(),
            "--read-only-port",
            "0",
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let pid = kubelet.id().context("kubelet pid")?;
    loop {
        if ready_nodes(&http, &server.url).await.unwrap_or(0) >= nodes {
            break;
        }
        if started.elapsed() > Duration::from_secs(120) {
            bail!("{nodes} nodes not Ready after 120 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "kubelet --simulate-nodes {nodes}: all Ready in {:.2} s  (workload: one process registers {nodes} Nodes and their Leases)",
        started.elapsed().as_secs_f64()
    );
    let cpu0 = cpu_time(pid)?;
    tokio::time::sleep(rest).await;
    let cpu = cpu_time(pid)? - cpu0;
    println!(
        "kubelet at rest with {nodes} nodes: {:.1}% of one core, RSS {:.1} MiB  (workload: {:.0} s of lease renewals, {} per 10 s, and status reports)",
        cpu.as_secs_f64() / rest.as_secs_f64() * 100.0,
        mib(rss_kib(pid)?),
        rest.as_secs_f64(),
        nodes
    );

    if pods > 0 {
        let Ok(scheduler_bin) = binary("tinykube-scheduler") else {
            println!("(tinykube-scheduler not built: no pod start figure)");
            return Ok(());
        };
        let names: Vec<String> = (0..nodes).map(|i| format!("sim-{i}")).collect();
        lift_taints(&http, &server.url, names).await?;
        let mut scheduler = Command::new(scheduler_bin)
            .args(["--master", &server.url, "--secure-port", "0"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let rv = crate::current_revision(&http, &server.url).await?;
        let (tx, mut progress) = tokio::sync::watch::channel((0usize, 0usize));
        let url = server.url.clone();
        let watcher = tokio::spawn(async move { watch_progress(&url, &rv, tx).await });
        let cpu0 = cpu_time(pid)?;
        let started = Instant::now();
        create_many(
            &server.url,
            "/api/v1/namespaces/default/pods",
            pods,
            8,
            "start",
            pod,
        )
        .await?;
        let created = started.elapsed();
        let mut peak = rss_kib(pid)?;
        let mut all_bound = None;
        loop {
            let (bound, running) = *progress.borrow_and_update();
            peak = peak.max(rss_kib(pid)?);
            if bound >= pods && all_bound.is_none() {
                all_bound = Some(started.elapsed());
            }
            if running >= pods {
                break;
            }
            if started.elapsed() > Duration::from_secs(600) {
                bail!("only {bound} of {pods} pods bound and {running} Running after 600 s");
            }
            let _ = tokio::time::timeout(Duration::from_millis(250), progress.changed()).await;
        }
        watcher.abort();
        let all_bound = all_bound.unwrap_or_else(|| started.elapsed());
        let took = started.elapsed();
        let cpu = cpu_time(pid)? - cpu0;
        println!(
            "{pods} pods created, scheduled and Running: {:.0} pods/s end to end ({:.1} s; all created at {:.1} s, all bound at {:.1} s)  (workload: {pods} pods of 100m/64Mi created by 8 clients, tinykube-scheduler binding them to {nodes} simulated nodes)",
            pods as f64 / took.as_secs_f64(),
            took.as_secs_f64(),
            created.as_secs_f64(),
            all_bound.as_secs_f64()
        );
        println!(
            "kubelet while they start: {:.1} s of CPU ({:.0}% of one core), peak RSS {:.1} MiB",
            cpu.as_secs_f64(),
            cpu.as_secs_f64() / took.as_secs_f64() * 100.0,
            mib(peak)
        );
        terminate(&scheduler);
        let _ = scheduler.wait().await;
    }
    terminate(&kubelet);
    let _ = kubelet.wait().await;
    Ok(())
}

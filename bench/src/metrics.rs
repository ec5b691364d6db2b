//! `tinykube-bench metrics`: what resource metrics cost. One kubelet simulating many nodes runs
//! sleeping pods bound to them; its CPU is measured over a window without a metrics server,
//! then over the same window while `tinykube-metrics-server` scrapes every node each
//! `--resolution`. Printed: both kubelet figures, the metrics server's CPU and RSS, and how long
//! a list of every PodMetrics and NodeMetrics takes through the API server's aggregator.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;
use tokio::process::Command;

use crate::containers::{run, sleep_pod, Cluster};
use crate::kubelet::{cpu_time, terminate};
use crate::{binary, rss_kib};

/// How many items a metrics list has, and how long it took.
async fn timed_list(http: &reqwest::Client, url: &str) -> Result<(usize, Duration)> {
    let started = Instant::now();
    let resp = http.get(url).send().await?;
    let status = resp.status();
    let body: Value = resp.json().await?;
    if !status.is_success() {
        bail!("{url}: {status}: {body}");
    }
    let n = body["items"].as_array().map_or(0, Vec::len);
    Ok((n, started.elapsed()))
}

pub async fn bench_metrics(
    nodes: usize,
    pods: usize,
    resolution: Duration,
    window: Duration,
) -> Result<()> {
    let cluster = Cluster::start(nodes, pods.div_ceil(nodes).max(110)).await?;
    let idle = run(&cluster, pods, nodes, window, "sleep", sleep_pod).await?;
    println!(
        "kubelet without a metrics server: {:.1}% of one core over {:.0} s, RSS {:.1} MiB  (workload: {pods} sleeping pods on {nodes} simulated nodes of one kubelet, Running in {:.1} s)",
        idle.kubelet_cpu * 100.0,
        window.as_secs_f64(),
        idle.rss_kib as f64 / 1024.0,
        idle.running.as_secs_f64()
    );

    let url = cluster.server.url.clone();
    let mut metrics = Command::new(binary("tinykube-metrics-server")?)
        .args(["--master", &url])
        .args([
            "--metric-resolution",
            &format!("{}ms", resolution.as_millis()),
        ])
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let metrics_pid = metrics.id().context("metrics server pid")?;
    let nodes_url = format!("{url}/apis/metrics.k8s.io/v1beta1/nodes");
    let pods_url = format!("{url}/apis/metrics.k8s.io/v1beta1/pods");
    let started = Instant::now();
    let mut first = None;
    let mut all = None;
    while all.is_none() {
        if started.elapsed() > Duration::from_secs(120) + resolution * 3 {
            bail!("the metrics API did not report every pod");
        }
        if let Ok((n, _)) = timed_list(&cluster.http, &nodes_url).await {
            if n >= nodes && first.is_none() {
                first = Some(started.elapsed());
            }
        }
        if let Ok((n, _)) = timed_list(&cluster.http, &pods_url).await {
            if n >= pods {
                all = Some(started.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    println!(
        "metrics server: every node reported {:.1} s after its start, every pod {:.1} s  (--metric-resolution {}s)",
        first.unwrap_or_default().as_secs_f64(),
        all.unwrap_or_default().as_secs_f64(),
        resolution.as_secs_f64()
    );
    let (k0, m0, t0) = (
        cpu_time(cluster.kubelet_pid)?,
        cpu_time(metrics_pid)?,
        Instant::now(),
    );
    tokio::time::sleep(window).await;
    let (k1, m1, took) = (
        cpu_time(cluster.kubelet_pid)?,
        cpu_time(metrics_pid)?,
        t0.elapsed(),
    );
    let share = |d: Duration| d.as_secs_f64() / took.as_secs_f64() * 100.0;
    println!(
        "kubelet while scraped: {:.1}% of one core over {:.0} s (was {:.1}%); metrics server {:.1}% of one core, RSS {:.1} MiB  (workload: {nodes} nodes scraped every {}s, {pods} pods)",
        share(k1 - k0),
        took.as_secs_f64(),
        idle.kubelet_cpu * 100.0,
        share(m1 - m0),
        rss_kib(metrics_pid)? as f64 / 1024.0,
        resolution.as_secs_f64()
    );
    let mut lists = Vec::new();
    for _ in 0..5 {
        let (n, d) = timed_list(&cluster.http, &pods_url).await?;
        lists.push((n, d));
    }
    lists.sort_by_key(|l| l.1);
    let (n, median) = lists[lists.len() / 2];
    let (nn, node_list) = timed_list(&cluster.http, &nodes_url).await?;
    println!(
        "list through the aggregator: {n} PodMetrics in {:.0} ms (median of 5), {nn} NodeMetrics in {:.0} ms  (kubectl top pods -A, kubectl top nodes)",
        median.as_secs_f64() * 1e3,
        node_list.as_secs_f64() * 1e3
    );
    terminate(&metrics);
    let _ = tokio::time::timeout(Duration::from_secs(10), metrics.wait()).await;
    cluster.stop().await;
    Ok(())
}

//! `tinykube-bench density`: the whole stack (`tinykube up`, one kubelet process simulating
//! every node) at upstream's density scale: pods created by concurrent clients, scheduled,
//! started and observed Running on a watch. It prints the throughput of each stage, upstream's
//! SLIs as a client sees them (mutating API call latency, pod startup latency from the create to
//! the watch seeing the pod Running) and every component's peak RSS and CPU time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::kubelet::cpu_time;
use crate::workloads::up_with;
use crate::{percentile, rss_kib};

/// What the bench reads of a pod on the watch; the rest of the object is skipped unparsed.
#[derive(Deserialize)]
pub(crate) struct Event {
    pub(crate) object: PodView,
}

#[derive(Deserialize)]
pub(crate) struct PodView {
    pub(crate) metadata: Meta,
    #[serde(default)]
    pub(crate) spec: Spec,
    #[serde(default)]
    pub(crate) status: Status,
}

#[derive(Deserialize)]
pub(crate) struct Meta {
    pub(crate) name: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Spec {
    pub(crate) node_name: Option<String>,
}

#[derive(Deserialize, Default)]
pub(crate) struct Status {
    pub(crate) phase: Option<String>,
}

/// When each pod's create was sent, answered, bound and seen Running.
#[derive(Default, Clone, Copy)]
struct Times {
    sent: Option<Instant>,
    bound: Option<Instant>,
    running: Option<Instant>,
}

#[derive(Default)]
struct Progress {
    pods: HashMap<String, Times>,
    bound: usize,
    running: usize,
    last_bound: Option<Instant>,
}

/// A pause pod, as upstream's density test creates: small requests so that 30 fit a node.
fn pause_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": "density"}},
           "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                     "resources": {"requests": {"cpu": "10m", "memory": "10Mi"}}}]}})
}

/// Follow every pod from `rv`, recording when each is first seen bound and Running.
async fn follow(url: String, rv: String, progress: Arc<Mutex<Progress>>) -> Result<()> {
    crate::watch_events(&url, &rv, 3600, |ev: Event| {
        let now = Instant::now();
        let mut p = progress.lock().expect("progress lock");
        let times = p.pods.entry(ev.object.metadata.name).or_default();
        let bound = ev.object.spec.node_name.is_some() && times.bound.is_none();
        let running =
            ev.object.status.phase.as_deref() == Some("Running") && times.running.is_none();
        if bound {
            times.bound = Some(now);
        }
        if running {
            times.running = Some(now);
        }
        if bound {
            p.bound += 1;
            p.last_bound = Some(now);
        }
        if running {
            p.running += 1;
        }
    })
    .await
}

/// Create `total` pods with `clients` concurrent clients, recording each create's latency.
async fn create_pods(
    url: &str,
    total: usize,
    clients: usize,
    progress: Arc<Mutex<Progress>>,
) -> Result<Vec<Duration>> {
    let http = reqwest::Client::new();
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (http, next, progress) = (http.clone(), next.clone(), progress.clone());
        let target = format!("{url}/api/v1/namespaces/default/pods");
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return Ok::<_, anyhow::Error>(latencies);
                }
                let name = format!("density-{i}");
                let body = pause_pod(&name).to_string();
                let sent = Instant::now();
                progress
                    .lock()
                    .expect("progress lock")
                    .pods
                    .entry(name)
                    .or_default()
                    .sent = Some(sent);
                let resp = http
                    .post(&target)
                    .header("Content-Type", "application/json")
                    .body(body)
                    .send()
                    .await?;
                if resp.status().as_u16() != 201 {
                    bail!("create returned {}: {}", resp.status(), resp.text().await?);
                }
                latencies.push(sent.elapsed());
            }
        }));
    }
    let mut all = Vec::with_capacity(total);
    for t in tasks {
        all.extend(t.await??);
    }
    all.sort();
    Ok(all)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub async fn bench_density(nodes: usize, pods: usize, clients: usize) -> Result<()> {
    let started = Instant::now();
    let up = up_with(nodes, &[]).await?;
    let ready = started.elapsed();
    println!(
        "tinykube up --nodes {nodes}: every node Ready in {:.1} s",
        ready.as_secs_f64()
    );
    let url = up.url.clone();
    let procs = crate::component_pids(&up.data_dir())?;
    let rv = crate::current_revision(&reqwest::Client::new(), &url).await?;
    let progress = Arc::new(Mutex::new(Progress::default()));
    let watcher = tokio::spawn(follow(url.clone(), rv, progress.clone()));

    // Peak RSS of every component, sampled every second until the end.
    let peaks: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    let sampler = {
        let (peaks, procs) = (peaks.clone(), procs.clone());
        tokio::spawn(async move {
            loop {
                for (name, pid) in &procs {
                    if let Ok(kib) = rss_kib(*pid) {
                        let mut p = peaks.lock().expect("peaks lock");
                        let e = p.entry(name.clone()).or_default();
                        *e = (*e).max(kib);
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    };
    let cpu0: Vec<Duration> = procs
        .iter()
        .map(|(_, pid)| cpu_time(*pid).unwrap_or_default())
        .collect();

    let t0 = Instant::now();
    let create_latencies = create_pods(&url, pods, clients, progress.clone()).await?;
    let created = t0.elapsed();
    let deadline = Duration::from_secs(600 + pods as u64 / 50);
    loop {
        let (bound, running) = {
            let p = progress.lock().expect("progress lock");
            (p.bound, p.running)
        };
        if running >= pods {
            break;
        }
        if t0.elapsed() > deadline {
            bail!("only {bound} of {pods} pods bound and {running} Running after {deadline:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let all_running = t0.elapsed();
    watcher.abort();
    sampler.abort();

    let (all_bound, mut startup, mut scheduling) = {
        let p = progress.lock().expect("progress lock");
        let all_bound = p.last_bound.map(|t| t - t0).unwrap_or(all_running);
        let mut startup: Vec<Duration> = Vec::new();
        let mut scheduling: Vec<Duration> = Vec::new();
        for t in p.pods.values() {
            if let (Some(sent), Some(running)) = (t.sent, t.running) {
                startup.push(running.saturating_duration_since(sent));
            }
            if let (Some(sent), Some(bound)) = (t.sent, t.bound) {
                scheduling.push(bound.saturating_duration_since(sent));
            }
        }
        (all_bound, startup, scheduling)
    };
    startup.sort();
    scheduling.sort();
    let rate = |d: Duration| pods as f64 / d.as_secs_f64();
    println!(
        "workload: {pods} pause pods (10m/10Mi) created by {clients} concurrent clients on {nodes} nodes of one simulated kubelet, whole stack of tinykube up"
    );
    println!(
        "pods created: {:.0}/s ({:.1} s); created and bound: {:.0} pods/s ({:.1} s); created and Running: {:.0} pods/s ({:.1} s)",
        rate(created),
        created.as_secs_f64(),
        rate(all_bound),
        all_bound.as_secs_f64(),
        rate(all_running),
        all_running.as_secs_f64()
    );
    println!(
        "mutating API call latency (pod create, as the client sees it): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms  (upstream SLO: p99 <= 1 s)",
        ms(percentile(&create_latencies, 0.5)),
        ms(percentile(&create_latencies, 0.99)),
        ms(create_latencies.last().copied().unwrap_or_default())
    );
    println!(
        "pod startup latency (create sent to Running seen on a watch): p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms  (upstream SLO: p99 <= 5 s)",
        ms(percentile(&startup, 0.5)),
        ms(percentile(&startup, 0.9)),
        ms(percentile(&startup, 0.99))
    );
    println!(
        "create to bound: p50 {:.1} ms, p99 {:.1} ms",
        ms(percentile(&scheduling, 0.5)),
        ms(percentile(&scheduling, 0.99))
    );
    let peaks = peaks.lock().expect("peaks lock").clone();
    let mut total = 0;
    for ((name, pid), cpu0) in procs.iter().zip(cpu0) {
        let peak = peaks.get(name).copied().unwrap_or(0);
        total += peak;
        let cpu = cpu_time(*pid).unwrap_or_default().saturating_sub(cpu0);
        println!(
            "  {name}: peak RSS {:.1} MiB, CPU {:.1} s ({:.0}% of one core)",
            peak as f64 / 1024.0,
            cpu.as_secs_f64(),
            cpu.as_secs_f64() / all_running.as_secs_f64() * 100.0
        );
    }
    println!("  sum of peaks: {:.1} MiB", total as f64 / 1024.0);
    up.down().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_view_reads_name_node_and_phase() {
        let line = br#"{"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"a","labels":{"x":"y"}},"spec":{"nodeName":"worker-1","containers":[]},"status":{"phase":"Running"}}}"#;
        let ev: Event = serde_json::from_slice(line).expect("parses");
        assert_eq!(ev.object.metadata.name, "a");
        assert_eq!(ev.object.spec.node_name.as_deref(), Some("worker-1"));
        assert_eq!(ev.object.status.phase.as_deref(), Some("Running"));
        let pending =
            br#"{"type":"ADDED","object":{"metadata":{"name":"b"},"spec":{},"status":{}}}"#;
        let ev: Event = serde_json::from_slice(pending).expect("parses");
        assert!(ev.object.spec.node_name.is_none());
        assert!(ev.object.status.phase.is_none());
    }
}

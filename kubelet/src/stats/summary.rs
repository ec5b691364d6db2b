//! `/stats/summary`: upstream's Summary API (`k8s.io/kubelet/pkg/apis/stats/v1alpha1`) of one
//! node, from a [`Snapshot`]. What is simulated is there: CPU (time, usageNanoCores over the
//! last sampling window, usageCoreNanoSeconds) and memory (time, availableBytes where a limit
//! or capacity bounds it, usageBytes, workingSetBytes, rssBytes, pageFaults,
//! majorPageFaults) of the node, its `kubelet` and `pods` system containers, each pod and each
//! running container, and each pod's process count. Network, filesystems, volumes, rlimit and
//! swap are omitted, as upstream omits what it cannot measure.
//! `?only_cpu_and_memory=true` drops the process counts, as upstream's CPU-and-memory summary.

use std::time::SystemTime;

use k8s_openapi::jiff::Timestamp;
use serde_json::{json, Map, Value};

use super::view::{Figures, Snapshot};

/// The share of the node's system baseline the `kubelet` system container shows (the rest is
/// the runtime and the OS).
pub const KUBELET_SHARE: f64 = 0.4;

/// `2026-11-25T00:36:22Z`, as `metav1.Time` marshals.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    Timestamp::from_second(secs)
        .unwrap_or(Timestamp::UNIX_EPOCH)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn cpu(f: &Figures, time: &str) -> Value {
    json!({
        "time": time,
        "usageNanoCores": f.nano_cores,
        "usageCoreNanoSeconds": f.cpu_ns,
    })
}

fn memory(f: &Figures, time: &str, limit: Option<u64>) -> Value {
    let mut m = Map::new();
    m.insert("time".into(), json!(time));
    if let Some(l) = limit {
        m.insert(
            "availableBytes".into(),
            json!(l.saturating_sub(f.working_set)),
        );
    }
    m.insert("usageBytes".into(), json!(f.usage));
    m.insert("workingSetBytes".into(), json!(f.working_set));
    m.insert("rssBytes".into(), json!(f.rss));
    m.insert("pageFaults".into(), json!(f.page_faults));
    m.insert("majorPageFaults".into(), json!(f.major_page_faults));
    Value::Object(m)
}

fn scaled(f: &Figures, by: f64) -> Figures {
    let s = |v: u64| (v as f64 * by) as u64;
    Figures {
        cpu_ns: s(f.cpu_ns),
        nano_cores: s(f.nano_cores),
        working_set: s(f.working_set),
        usage: s(f.usage),
        rss: s(f.rss),
        page_faults: s(f.page_faults),
        major_page_faults: s(f.major_page_faults),
    }
}

/// The summary of node `name`.
pub fn render(name: &str, s: &Snapshot, only_cpu_and_memory: bool) -> Value {
    let time = rfc3339(s.time);
    let started = rfc3339(s.node_started);
    let kubelet = scaled(&s.system, KUBELET_SHARE);
    let mut pods_total = Figures::default();
    for p in &s.pods {
        pods_total.cpu_ns += p.figures.cpu_ns;
        pods_total.nano_cores += p.figures.nano_cores;
        pods_total.working_set += p.figures.working_set;
        pods_total.usage += p.figures.usage;
        pods_total.rss += p.figures.rss;
        pods_total.page_faults += p.figures.page_faults;
        pods_total.major_page_faults += p.figures.major_page_faults;
    }
    let system = |cname: &str, f: &Figures| {
        json!({
            "name": cname,
            "startTime": started,
            "cpu": cpu(f, &time),
            "memory": memory(f, &time, None),
        })
    };
    let pods: Vec<Value> = s
        .pods
        .iter()
        .map(|p| {
            let containers: Vec<Value> = p
                .containers
                .iter()
                .map(|c| {
                    json!({
                        "name": c.name,
                        "startTime": rfc3339(c.started),
                        "cpu": cpu(&c.figures, &time),
                        "memory": memory(&c.figures, &time, c.spec.memory_limit),
                    })
                })
                .collect();
            let mut v = json!({
                "podRef": {"name": p.name, "namespace": p.namespace, "uid": p.uid},
                "startTime": rfc3339(p.started),
                "containers": containers,
                "cpu": cpu(&p.figures, &time),
                "memory": memory(&p.figures, &time, None),
            });
            if !only_cpu_and_memory {
                v["process_stats"] = json!({"process_count": p.containers.len()});
            }
            v
        })
        .collect();
    json!({
        "node": {
            "nodeName": name,
            "systemContainers": [system("kubelet", &kubelet), system("pods", &pods_total)],
            "startTime": started,
            "cpu": cpu(&s.node, &time),
            "memory": memory(&s.node, &time, Some(s.capacity_memory)),
        },
        "pods": pods,
    })
}

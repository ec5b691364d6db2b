//! `/metrics/cadvisor`: cAdvisor's metric names, help texts and labels for the node's
//! cgroups: the root (`id="/"`), each pod's cgroup (`container=""`, under
//! `/kubepods[/burstable|/besteffort]/pod<UID>` by QoS class, cgroupfs layout) and each
//! container's (`id` its cgroup, `name` its containerd ID, `image` as containerd names it).
//! A faithful subset: CPU usage (`cpu="total"`), CFS periods and throttling of CPU-limited
//! containers, memory working set / usage / RSS, the spec's CPU shares, quota, period and
//! memory limit, start times, and the machine's cores and memory.

use super::meter::CFS_PERIOD;
use super::prometheus::{millis, seconds, Sample, Text};
use super::view::{ContainerView, Figures, PodView, Snapshot};
use crate::containers::normalize_image;

/// The machine labels of `machine_*` (as the node's nodeInfo has them).
pub struct MachineIds {
    pub boot_id: String,
    pub machine_id: String,
    pub system_uuid: String,
}

fn pod_cgroup(p: &PodView) -> String {
    let qos = p
        .containers
        .first()
        .map_or("BestEffort", |c| c.spec.qos.as_str());
    match qos {
        "Guaranteed" => format!("/kubepods/pod{}", p.uid),
        "Burstable" => format!("/kubepods/burstable/pod{}", p.uid),
        _ => format!("/kubepods/besteffort/pod{}", p.uid),
    }
}

fn runtime_id(c: &ContainerView) -> &str {
    c.spec
        .id
        .split_once("://")
        .map_or(c.spec.id.as_str(), |(_, id)| id)
}

/// The six cAdvisor labels, in name order.
fn labels(
    container: &str,
    id: String,
    image: String,
    name: &str,
    p: Option<&PodView>,
) -> Vec<(&'static str, String)> {
    vec![
        ("container", container.to_string()),
        ("id", id),
        ("image", image),
        ("name", name.to_string()),
        (
            "namespace",
            p.map_or(String::new(), |p| p.namespace.clone()),
        ),
        ("pod", p.map_or(String::new(), |p| p.name.clone())),
    ]
}

/// What one cgroup shows, with its labels.
struct Row<'a> {
    labels: Vec<(&'static str, String)>,
    figures: Figures,
    container: Option<&'a ContainerView>,
}

/// `/metrics/cadvisor` of one node.
pub fn render(s: &Snapshot, machine: &MachineIds) -> String {
    let ts = Some(millis(s.time));
    let mut rows = vec![Row {
        labels: labels("", "/".into(), String::new(), "", None),
        figures: s.node,
        container: None,
    }];
    for p in &s.pods {
        let cgroup = pod_cgroup(p);
        for c in &p.containers {
            let id = runtime_id(c);
            rows.push(Row {
                labels: labels(
                    &c.name,
                    format!("{cgroup}/{id}"),
                    normalize_image(&c.spec.image),
                    id,
                    Some(p),
                ),
                figures: c.figures,
                container: Some(c),
            });
        }
        rows.push(Row {
            labels: labels("", cgroup, String::new(), "", Some(p)),
            figures: p.figures,
            container: None,
        });
    }
    let each = |f: &dyn Fn(&Row) -> Option<(f64, bool)>| -> Vec<Sample> {
        rows.iter()
            .filter_map(|r| {
                f(r).map(|(v, stamped)| (r.labels.clone(), v, if stamped { ts } else { None }))
            })
            .collect()
    };
    let limited = |r: &Row| r.container.and_then(|c| c.spec.cpu_limit_milli);
    let mut t = Text::default();
    t.family(
        "container_cpu_cfs_periods_total",
        "Number of elapsed enforcement period intervals.",
        "counter",
        each(&|r| {
            limited(r)
                .and(r.container)
                .map(|c| (c.periods as f64, true))
        }),
    );
    t.family(
        "container_cpu_cfs_throttled_periods_total",
        "Number of throttled period intervals.",
        "counter",
        each(&|r| {
            limited(r)
                .and(r.container)
                .map(|c| (c.throttled_periods as f64, true))
        }),
    );
    t.family(
        "container_cpu_cfs_throttled_seconds_total",
        "Total time duration the container has been throttled.",
        "counter",
        each(&|r| {
            limited(r)
                .and(r.container)
                .map(|c| (c.throttled_ns as f64 / 1e9, true))
        }),
    );
    let mut cpu = each(&|r| Some((r.figures.cpu_ns as f64 / 1e9, true)));
    for (labels, _, _) in &mut cpu {
        labels.insert(1, ("cpu", "total".into()));
    }
    t.family(
        "container_cpu_usage_seconds_total",
        "Cumulative cpu time consumed in seconds.",
        "counter",
        cpu,
    );
    t.family(
        "container_memory_rss",
        "Size of RSS in bytes.",
        "gauge",
        each(&|r| Some((r.figures.rss as f64, true))),
    );
    t.family(
        "container_memory_usage_bytes",
        "Current memory usage in bytes, including all memory regardless of when it was accessed",
        "gauge",
        each(&|r| Some((r.figures.usage as f64, true))),
    );
    t.family(
        "container_memory_working_set_bytes",
        "Current working set in bytes.",
        "gauge",
        each(&|r| Some((r.figures.working_set as f64, true))),
    );
    t.family(
        "container_spec_cpu_period",
        "CPU period of the container.",
        "gauge",
        each(&|r| limited(r).map(|_| (CFS_PERIOD.as_micros() as f64, false))),
    );
    t.family(
        "container_spec_cpu_quota",
        "CPU quota of the container.",
        "gauge",
        each(&|r| limited(r).map(|l| ((l * CFS_PERIOD.as_micros() as i64 / 1000) as f64, false))),
    );
    t.family(
        "container_spec_cpu_shares",
        "CPU share of the container.",
        "gauge",
        each(&|r| {
            r.container.map(|c| {
                (
                    (c.spec.cpu_request_milli * 1024 / 1000).max(2) as f64,
                    false,
                )
            })
        }),
    );
    t.family(
        "container_spec_memory_limit_bytes",
        "Memory limit for the container.",
        "gauge",
        each(&|r| {
            r.container
                .map(|c| (c.spec.memory_limit.unwrap_or(0) as f64, false))
        }),
    );
    t.family(
        "container_start_time_seconds",
        "Start time of the container since unix epoch in seconds.",
        "gauge",
        each(&|r| r.container.map(|c| (seconds(c.started), false))),
    );
    let machine = || {
        vec![
            ("boot_id", machine.boot_id.clone()),
            ("machine_id", machine.machine_id.clone()),
            ("system_uuid", machine.system_uuid.clone()),
        ]
    };
    t.family(
        "machine_cpu_cores",
        "Number of logical CPU cores.",
        "gauge",
        vec![(machine(), s.capacity_cores, None)],
    );
    t.family(
        "machine_memory_bytes",
        "Amount of memory installed on the machine.",
        "gauge",
        vec![(machine(), s.capacity_memory as f64, None)],
    );
    t.out
}

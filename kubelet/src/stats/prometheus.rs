//! The Prometheus text format (0.0.4) as Go's client writes it, and the kubelet's own two
//! pages in it: `/metrics/resource` (upstream's resource metrics collector, what the metrics
//! server scrapes) and `/metrics` (a subset of the kubelet's own metrics). Families come in
//! name order and samples in label-value order, as the Go registry gathers them.

use std::fmt::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use super::view::Snapshot;

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A float as Go's `strconv.FormatFloat(v, 'g', -1, 64)`: shortest digits, an exponent from
/// 1e+06 up and below 1e-04 (`1.6285696e+08`, `0.975`, `5`).
pub fn go_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let sci = format!("{v:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        return format!("{v}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// Milliseconds since the epoch (the samples' timestamps).
pub fn millis(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()
}

/// Seconds since the epoch, with their fraction.
pub fn seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// A page of metric families being written.
#[derive(Default)]
pub struct Text {
    pub out: String,
}

/// One sample: its label pairs (in label-name order), value and timestamp.
pub type Sample = (Vec<(&'static str, String)>, f64, Option<u128>);

impl Text {
    /// Write a family: `# HELP`, `# TYPE`, and its samples sorted by label values.
    pub fn family(&mut self, name: &str, help: &str, kind: &str, mut samples: Vec<Sample>) {
        if samples.is_empty() {
            return;
        }
        samples.sort_by(|a, b| {
            let values = |s: &Sample| s.0.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>();
            values(a).cmp(&values(b))
        });
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
        for (labels, value, ts) in samples {
            self.out.push_str(name);
            if !labels.is_empty() {
                self.out.push('{');
                for (i, (k, v)) in labels.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    let _ = write!(self.out, "{k}=\"{}\"", escape(v));
                }
                self.out.push('}');
            }
            let _ = write!(self.out, " {}", go_float(value));
            if let Some(ts) = ts {
                let _ = write!(self.out, " {ts}");
            }
            self.out.push('\n');
        }
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `/metrics/resource` of one node.
pub fn resource(s: &Snapshot) -> String {
    let ts = Some(millis(s.time));
    let mut cpu = Vec::new();
    let mut mem = Vec::new();
    let mut start = Vec::new();
    let mut pod_cpu = Vec::new();
    let mut pod_mem = Vec::new();
    for p in &s.pods {
        for c in &p.containers {
            let labels = vec![
                ("container", c.name.clone()),
                ("namespace", p.namespace.clone()),
                ("pod", p.name.clone()),
            ];
            cpu.push((labels.clone(), c.figures.cpu_ns as f64 / 1e9, ts));
            mem.push((labels.clone(), c.figures.working_set as f64, ts));
            start.push((labels, seconds(c.started), None));
        }
        let labels = vec![("namespace", p.namespace.clone()), ("pod", p.name.clone())];
        pod_cpu.push((labels.clone(), p.figures.cpu_ns as f64 / 1e9, ts));
        pod_mem.push((labels, p.figures.working_set as f64, ts));
    }
    let mut t = Text::default();
    t.family(
        "container_cpu_usage_seconds_total",
        "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
        "counter",
        cpu,
    );
    t.family(
        "container_memory_working_set_bytes",
        "[STABLE] Current working set of the container in bytes",
        "gauge",
        mem,
    );
    t.family(
        "container_start_time_seconds",
        "[STABLE] Start time of the container since unix epoch in seconds",
        "gauge",
        start,
    );
    t.family(
        "node_cpu_usage_seconds_total",
        "[STABLE] Cumulative cpu time consumed by the node in core-seconds",
        "counter",
        vec![(vec![], s.node.cpu_ns as f64 / 1e9, ts)],
    );
    t.family(
        "node_memory_working_set_bytes",
        "[STABLE] Current working set of the node in bytes",
        "gauge",
        vec![(vec![], s.node.working_set as f64, ts)],
    );
    t.family(
        "pod_cpu_usage_seconds_total",
        "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
        "counter",
        pod_cpu,
    );
    t.family(
        "pod_memory_working_set_bytes",
        "[STABLE] Current working set of the pod in bytes",
        "gauge",
        pod_mem,
    );
    t.family(
        "resource_scrape_error",
        "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
        "gauge",
        vec![(vec![], 0.0, None)],
    );
    t.out
}

/// How many of a node's containers are in each state (`kubelet_running_containers`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct States {
    pub created: u64,
    pub exited: u64,
    pub running: u64,
    /// Pods with a running container (a running sandbox).
    pub running_pods: u64,
}

/// `/metrics` of one node: a subset of the kubelet's own metrics.
pub fn kubelet(node: &str, s: &Snapshot, states: States) -> String {
    let mut t = Text::default();
    t.family(
        "kubelet_node_name",
        "[ALPHA] The node's name. The count is always 1.",
        "gauge",
        vec![(vec![("node", node.to_string())], 1.0, None)],
    );
    let by_state = [
        ("created", states.created),
        ("exited", states.exited),
        ("running", states.running),
    ];
    t.family(
        "kubelet_running_containers",
        "[ALPHA] Number of containers currently running",
        "gauge",
        by_state
            .iter()
            .map(|(k, v)| (vec![("container_state", k.to_string())], *v as f64, None))
            .collect(),
    );
    t.family(
        "kubelet_running_pods",
        "[ALPHA] Number of pods that have a running pod sandbox",
        "gauge",
        vec![(vec![], states.running_pods as f64, None)],
    );
    let by_type = [
        (
            "container",
            s.started_containers - s.started_init_containers,
        ),
        ("init_container", s.started_init_containers),
    ];
    t.family(
        "kubelet_started_containers_total",
        "[ALPHA] Cumulative number of containers started",
        "counter",
        by_type
            .iter()
            .map(|(k, v)| (vec![("container_type", k.to_string())], *v as f64, None))
            .collect(),
    );
    t.family(
        "kubelet_started_pods_total",
        "[ALPHA] Cumulative number of pods started",
        "counter",
        vec![(vec![], s.started_pods as f64, None)],
    );
    t.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_go_prints_them() {
        let rows = [
            (0.0, "0"),
            (5.0, "5"),
            (0.975, "0.975"),
            (123456.0, "123456"),
            (1_000_000.0, "1e+06"),
            (162_856_960.0, "1.6285696e+08"),
            (1.7e9 + 0.123, "1.700000000123e+09"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
        ];
        for (v, want) in rows {
            assert_eq!(go_float(v), want, "{v}");
        }
    }

    #[test]
    fn families_sort_samples_and_escape_labels() {
        let mut t = Text::default();
        t.family(
            "x_total",
            "[ALPHA] X",
            "counter",
            vec![
                (vec![("a", "b".into())], 2.0, Some(5)),
                (vec![("a", "a\"q".into())], 1.0, None),
            ],
        );
        t.family("empty", "nothing", "gauge", vec![]);
        assert_eq!(
            t.out,
            "# HELP x_total [ALPHA] X\n# TYPE x_total counter\nx_total{a=\"a\\\"q\"} 1\nx_total{a=\"b\"} 2 5\n"
        );
    }
}

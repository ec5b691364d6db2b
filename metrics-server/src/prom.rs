//! The kubelet's `/metrics/resource` answer (Prometheus text format 0.0.4) read into metric
//! points, as metrics-server's decoder reads it: the node's cumulative CPU and working set, and
//! each container's, with their sample timestamps and the containers' start times.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One scrape of one node: what metrics-server's `MetricsBatch` holds for it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    pub node: Option<Point>,
    /// `(namespace, pod)` → container → point.
    pub pods: HashMap<(String, String), HashMap<String, Point>>,
}

/// A cumulative CPU reading and a memory reading taken at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub timestamp: SystemTime,
    /// Core-nanoseconds used since the start.
    pub cpu_ns: u128,
    /// Working set bytes.
    pub memory: u64,
    /// When the container started (`None` for a node).
    pub start: Option<SystemTime>,
}

/// One sample line: `name{label="value",…} value [timestamp_ms]`.
#[derive(Debug, Clone, PartialEq)]
struct Sample<'a> {
    name: &'a str,
    labels: Vec<(&'a str, String)>,
    value: f64,
    timestamp_ms: Option<i64>,
}

impl Sample<'_> {
    fn label(&self, name: &str) -> &str {
        self.labels
            .iter()
            .find(|(k, _)| *k == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// `{a="x",b="y\"z"}` → pairs; the rest of the line after `}`.
fn labels(text: &str) -> Option<(Vec<(&str, String)>, &str)> {
    let mut out = Vec::new();
    let mut rest = text.strip_prefix('{')?;
    loop {
        rest = rest.trim_start_matches([',', ' ']);
        if let Some(after) = rest.strip_prefix('}') {
            return Some((out, after));
        }
        let eq = rest.find('=')?;
        let key = rest[..eq].trim();
        rest = rest[eq + 1..].strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (_, c) => value.push(c),
            }
        };
        out.push((key, value));
        rest = &rest[end + 1..];
    }
}

fn sample(line: &str) -> Option<Sample<'_>> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(['{', ' ']).unwrap_or(line.len());
    let name = &line[..name_end];
    let (labels, rest) = if line[name_end..].starts_with('{') {
        labels(&line[name_end..])?
    } else {
        (Vec::new(), &line[name_end..])
    };
    let mut fields = rest.split_whitespace();
    let value = fields.next()?.parse().ok()?;
    let timestamp_ms = fields.next().and_then(|t| t.parse().ok());
    Some(Sample {
        name,
        labels,
        value,
        timestamp_ms,
    })
}

fn time_of_ms(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

fn time_of_secs(secs: f64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs_f64(secs.max(0.0))
}

/// Read a `/metrics/resource` answer. Samples without a timestamp take `scraped_at`; rows
/// naming no pod or container are skipped, as are containers missing their CPU or memory.
pub fn decode(text: &str, scraped_at: SystemTime) -> Batch {
    #[derive(Default)]
    struct Partial {
        cpu: Option<(u128, SystemTime)>,
        memory: Option<(u64, SystemTime)>,
        start: Option<SystemTime>,
    }
    let mut node = Partial::default();
    let mut containers: HashMap<(String, String, String), Partial> = HashMap::new();
    for s in text.lines().filter_map(sample) {
        let at = s.timestamp_ms.map_or(scraped_at, time_of_ms);
        let cpu = || ((s.value.max(0.0) * 1e9) as u128, at);
        let memory = || (s.value.max(0.0) as u64, at);
        let key = || {
            (
                s.label("namespace").to_string(),
                s.label("pod").to_string(),
                s.label("container").to_string(),
            )
        };
        match s.name {
            "node_cpu_usage_seconds_total" => node.cpu = Some(cpu()),
            "node_memory_working_set_bytes" => node.memory = Some(memory()),
            "container_cpu_usage_seconds_total" => {
                containers.entry(key()).or_default().cpu = Some(cpu())
            }
            "container_memory_working_set_bytes" => {
                containers.entry(key()).or_default().memory = Some(memory())
            }
            "container_start_time_seconds" => {
                containers.entry(key()).or_default().start = Some(time_of_secs(s.value))
            }
            _ => {}
        }
    }
    let mut batch = Batch::default();
    if let (Some((cpu_ns, at)), Some((memory, _))) = (node.cpu, node.memory) {
        batch.node = Some(Point {
            timestamp: at,
            cpu_ns,
            memory,
            start: None,
        });
    }
    for ((ns, pod, container), p) in containers {
        let (Some((cpu_ns, at)), Some((memory, _))) = (p.cpu, p.memory) else {
            continue;
        };
        if ns.is_empty() || pod.is_empty() || container.is_empty() {
            continue;
        }
        batch.pods.entry((ns, pod)).or_default().insert(
            container,
            Point {
                timestamp: at,
                cpu_ns,
                memory,
                start: p.start,
            },
        );
    }
    batch
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web-1"} 1.5 1700000010000
container_cpu_usage_seconds_total{container="side\"car",namespace="default",pod="web-1"} 0.25 1700000010000
container_cpu_usage_seconds_total{container="lonely",namespace="default",pod="web-2"} 2 1700000010000
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="default",pod="web-1"} 1.2582912e+07 1700000010000
container_memory_working_set_bytes{container="side\"car",namespace="default",pod="web-1"} 1024 1700000010000
container_start_time_seconds{container="app",namespace="default",pod="web-1"} 1.7e+09 1700000000000
node_cpu_usage_seconds_total 120.5 1700000010500
node_memory_working_set_bytes 2.147483648e+09 1700000010500
resource_scrape_error 0
"#;

    #[test]
    fn decodes_nodes_and_containers() {
        let at = UNIX_EPOCH + Duration::from_secs(5);
        let b = decode(TEXT, at);
        let node = b.node.unwrap();
        assert_eq!(node.cpu_ns, 120_500_000_000);
        assert_eq!(node.memory, 2_147_483_648);
        assert_eq!(node.timestamp, time_of_ms(1_700_000_010_500));
        let web1 = &b.pods[&("default".to_string(), "web-1".to_string())];
        assert_eq!(web1.len(), 2);
        assert_eq!(web1["app"].cpu_ns, 1_500_000_000);
        assert_eq!(web1["app"].memory, 12_582_912);
        assert_eq!(
            web1["app"].start,
            Some(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        );
        assert_eq!(web1["side\"car"].memory, 1024);
        // A container without its memory reading is left out, as metrics-server drops it.
        assert!(!b
            .pods
            .contains_key(&("default".to_string(), "web-2".to_string())));
    }

    #[test]
    fn tolerates_garbage() {
        for text in [
            "",
            "no_value",
            "x{a=\"b\" 1",
            "x{a=b} 1",
            "# only comments\n",
        ] {
            let b = decode(text, UNIX_EPOCH);
            assert!(b.node.is_none() && b.pods.is_empty(), "{text}");
        }
    }
}

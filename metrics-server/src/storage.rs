//! The last two points of every node and container, and the usage they give: CPU is the slope
//! of the cumulative counter between them (nanocores over the window), memory the last working
//! set. A point is kept as "previous" only while the container has not restarted; a container
//! younger than one resolution but at least 10 s old counts from its start with zero usage, as
//! metrics-server does, so a new pod shows up after one scrape.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use crate::prom::{Batch, Point};

/// A fresh container's start counts as a previous point only this long after it.
const FRESH_CONTAINER_MIN: Duration = Duration::from_secs(10);

/// Usage over a window ending at `timestamp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub timestamp: SystemTime,
    pub window: Duration,
    pub cpu_nanocores: u64,
    pub memory: u64,
}

fn usage(last: &Point, prev: &Point) -> Option<Usage> {
    let window = last.timestamp.duration_since(prev.timestamp).ok()?;
    if window.is_zero() || last.cpu_ns < prev.cpu_ns {
        return None;
    }
    let nanocores = (last.cpu_ns - prev.cpu_ns) * 1_000_000_000 / window.as_nanos();
    Some(Usage {
        timestamp: last.timestamp,
        window,
        cpu_nanocores: u64::try_from(nanocores).unwrap_or(u64::MAX),
        memory: last.memory,
    })
}

/// The two points of one series.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Pair {
    last: Point,
    prev: Option<Point>,
}

type Pods = HashMap<(String, String), HashMap<String, Pair>>;

#[derive(Debug, Default)]
struct NodeEntry {
    node: Option<Pair>,
    pods: Pods,
}

/// Points by node; a node's pods are replaced by each scrape of that node.
#[derive(Debug, Default)]
pub struct Storage {
    resolution: Duration,
    nodes: HashMap<String, NodeEntry>,
}

/// The previous point a node's new reading keeps.
fn next_node(new: Point, old: Option<&Pair>) -> Pair {
    let prev = old.and_then(|old| {
        if new.timestamp > old.last.timestamp {
            Some(old.last)
        } else {
            old.prev.filter(|p| p.timestamp < new.timestamp)
        }
    });
    Pair { last: new, prev }
}

impl Storage {
    pub fn new(resolution: Duration) -> Self {
        Storage {
            resolution,
            nodes: HashMap::new(),
        }
    }

    /// The previous point a container's new reading keeps.
    fn next_container(&self, new: Point, old: Option<&Pair>) -> Pair {
        if let Some(start) = new.start {
            if let Ok(age) = new.timestamp.duration_since(start) {
                if age < self.resolution && age >= FRESH_CONTAINER_MIN {
                    let from_start = Point {
                        timestamp: start,
                        cpu_ns: 0,
                        ..new
                    };
                    return Pair {
                        last: new,
                        prev: Some(from_start),
                    };
                }
            }
        }
        // A container that restarted since the stored point starts a new series.
        let old = old.filter(|o| new.start.is_none_or(|s| s < o.last.timestamp));
        next_node(new, old)
    }

    /// Keep one scrape of `node`.
    pub fn store(&mut self, node: &str, batch: Batch) {
        let old = self.nodes.remove(node).unwrap_or_default();
        let mut entry = NodeEntry {
            node: batch.node.map(|p| next_node(p, old.node.as_ref())),
            pods: HashMap::with_capacity(batch.pods.len()),
        };
        for (pod, containers) in batch.pods {
            let old_pod = old.pods.get(&pod);
            let pairs = containers
                .into_iter()
                .map(|(name, point)| {
                    let pair = self.next_container(point, old_pod.and_then(|p| p.get(&name)));
                    (name, pair)
                })
                .collect();
            entry.pods.insert(pod, pairs);
        }
        self.nodes.insert(node.to_string(), entry);
    }

    /// Forget the nodes that are gone.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.nodes.retain(|n, _| keep(n));
    }

    /// When `node`'s last point was taken (`None`: never scraped, or it had no node figures).
    pub fn last_point(&self, node: &str) -> Option<SystemTime> {
        Some(self.nodes.get(node)?.node?.last.timestamp)
    }

    /// Whether `node` has a usage to report (two points).
    pub fn has_node(&self, node: &str) -> bool {
        self.node(node).is_some()
    }

    pub fn node(&self, node: &str) -> Option<Usage> {
        let pair = self.nodes.get(node)?.node?;
        usage(&pair.last, &pair.prev?)
    }

    /// A pod's containers' usage, and the earliest of their timestamps and its window; `None`
    /// unless every container has two points (metrics-server reports whole pods only).
    pub fn pod(
        &self,
        node: &str,
        namespace: &str,
        name: &str,
    ) -> Option<(Usage, Vec<(String, Usage)>)> {
        let pod = self
            .nodes
            .get(node)?
            .pods
            .get(&(namespace.to_string(), name.to_string()))?;
        let mut containers = Vec::with_capacity(pod.len());
        let mut earliest: Option<Usage> = None;
        for (container, pair) in pod {
            let u = usage(&pair.last, &pair.prev?)?;
            if earliest.is_none_or(|e| u.timestamp < e.timestamp) {
                earliest = Some(u);
            }
            containers.push((container.clone(), u));
        }
        containers.sort_by(|a, b| a.0.cmp(&b.0));
        Some((earliest?, containers))
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_000_000 + secs)
    }

    fn point(secs: u64, cpu_ms: u128, memory: u64, start: Option<u64>) -> Point {
        Point {
            timestamp: at(secs),
            cpu_ns: cpu_ms * 1_000_000,
            memory,
            start: start.map(at),
        }
    }

    fn batch(node: Option<Point>, containers: &[(&str, Point)]) -> Batch {
        let mut b = Batch {
            node,
            ..Batch::default()
        };
        for (name, p) in containers {
            b.pods
                .entry(("default".into(), "web".into()))
                .or_default()
                .insert(name.to_string(), *p);
        }
        b
    }

    #[test]
    fn usage_is_the_slope_between_two_scrapes() {
        let mut s = Storage::new(Duration::from_secs(15));
        s.store(
            "n",
            batch(
                Some(point(100, 1_000, 100, None)),
                &[("app", point(100, 0, 7, Some(0)))],
            ),
        );
        assert_eq!(s.node("n"), None, "one point is not enough");
        s.store(
            "n",
            batch(
                Some(point(115, 4_000, 200, None)),
                &[("app", point(115, 7_500, 9, Some(0)))],
            ),
        );
        let node = s.node("n").unwrap();
        assert_eq!(
            node.cpu_nanocores, 200_000_000,
            "3 s of CPU over 15 s = 200m"
        );
        assert_eq!((node.memory, node.window), (200, Duration::from_secs(15)));
        let (pod, containers) = s.pod("n", "default", "web").unwrap();
        assert_eq!(containers[0].1.cpu_nanocores, 500_000_000);
        assert_eq!(pod.timestamp, at(115));
    }

    #[test]
    fn series_rules() {
        let res = Duration::from_secs(15);
        // (first point, second point, expected nanocores of the container after the second)
        let cases = [
            // A fresh container 12 s old counts from its start after one scrape.
            (None, point(12, 1_200, 5, Some(0)), Some(100_000_000)),
            // Younger than 10 s: not yet.
            (None, point(5, 500, 5, Some(0)), None),
            // Restarted since the last point: a new series, nothing to report.
            (
                Some(point(100, 9_000, 5, Some(0))),
                point(115, 10, 5, Some(110)),
                None,
            ),
            // A counter that went backwards is skipped.
            (
                Some(point(100, 9_000, 5, Some(0))),
                point(115, 8_000, 5, Some(0)),
                None,
            ),
            // A stale reading (older than the stored one) keeps nothing newer.
            (
                Some(point(100, 9_000, 5, Some(0))),
                point(90, 8_000, 5, Some(0)),
                None,
            ),
        ];
        for (i, (first, second, want)) in cases.into_iter().enumerate() {
            let mut s = Storage::new(res);
            if let Some(p) = first {
                s.store("n", batch(None, &[("app", p)]));
            }
            s.store("n", batch(None, &[("app", second)]));
            let got = s
                .pod("n", "default", "web")
                .map(|(_, c)| c[0].1.cpu_nanocores);
            assert_eq!(got, want, "case {i}");
        }
    }

    #[test]
    fn a_pod_is_reported_whole_or_not_at_all() {
        let mut s = Storage::new(Duration::from_secs(15));
        s.store("n", batch(None, &[("app", point(0, 0, 1, Some(0)))]));
        s.store(
            "n",
            batch(
                None,
                &[
                    ("app", point(30, 300, 1, Some(0))),
                    ("late", point(30, 0, 1, Some(29))),
                ],
            ),
        );
        assert!(s.pod("n", "default", "web").is_none());
        s.retain(|n| n != "n");
        assert!(!s.has_node("n"));
    }
}

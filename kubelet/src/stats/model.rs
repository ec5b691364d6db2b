//! The figures the usage model starts from: a container's idle CPU and memory (its image's
//! [`tinykube_runtime::images::Footprint`], jittered by a hash of the kubelet's `--seed` and
//! the container's namespace, pod and name, so the figures look measured yet repeat run to
//! run), and a node's system baseline (kubelet, runtime and OS: 50–100 m of CPU and 5–10 % of
//! its memory, by a hash of the seed and the node's name).

use tinykube_proto::hash::{fnv1a_64, OFFSET_BASIS_64};
use tinykube_runtime::images::footprint_of;

use super::meter::ContainerKey;

/// Idle CPU and memory of a container, or of a node's system part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Baseline {
    pub idle_cores: f64,
    pub idle_memory: u64,
}

/// Idle CPU of a container: its image's, times 0.75–1.25.
pub const CPU_JITTER: (f64, f64) = (0.75, 1.25);
/// Idle memory of a container: its image's, times 0.97–1.03.
pub const MEMORY_JITTER: (f64, f64) = (0.97, 1.03);
/// A node's system CPU, in cores.
pub const SYSTEM_CPU: (f64, f64) = (0.050, 0.100);
/// A node's system memory, as a part of its capacity.
pub const SYSTEM_MEMORY: (f64, f64) = (0.05, 0.10);

/// A number in [0, 1) fixed by `seed` and `parts`.
pub(crate) fn unit(seed: u64, parts: &[&[u8]]) -> f64 {
    let mut h = fnv1a_64(OFFSET_BASIS_64, &seed.to_le_bytes());
    for p in parts {
        h = fnv1a_64(h, &(p.len() as u64).to_le_bytes());
        h = fnv1a_64(h, p);
    }
    // FNV alone barely moves the high bits for names that differ in their last byte
    // (worker0, worker1): finish with MurmurHash3's avalanche, then keep 53 bits.
    let mut h = h ^ (h >> 33);
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    (h >> 11) as f64 / (1u64 << 53) as f64
}

fn between((lo, hi): (f64, f64), u: f64) -> f64 {
    lo + (hi - lo) * u
}

/// The idle baseline of container `key` of `image`.
pub(crate) fn container(seed: u64, key: &ContainerKey, image: &str) -> Baseline {
    let f = footprint_of(image);
    let who = [
        key.namespace.as_bytes(),
        key.pod.as_bytes(),
        key.container.as_bytes(),
    ];
    let draw = |what: &[u8]| {
        let mut parts: Vec<&[u8]> = vec![what];
        parts.extend(who);
        unit(seed, &parts)
    };
    Baseline {
        idle_cores: f.idle_millicores / 1000.0 * between(CPU_JITTER, draw(b"cpu")),
        idle_memory: (f.idle_memory as f64 * between(MEMORY_JITTER, draw(b"memory"))) as u64,
    }
}

/// The system baseline of node `name` (never above half its CPU or memory).
pub(crate) fn system(seed: u64, name: &str, cores: f64, memory: u64) -> Baseline {
    let cpu = between(SYSTEM_CPU, unit(seed, &[b"system-cpu", name.as_bytes()]));
    let part = between(
        SYSTEM_MEMORY,
        unit(seed, &[b"system-memory", name.as_bytes()]),
    );
    Baseline {
        idle_cores: cpu.min(cores / 2.0),
        idle_memory: (memory as f64 * part) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(pod: &str, c: &str) -> ContainerKey {
        ContainerKey {
            namespace: "default".into(),
            pod: pod.into(),
            container: c.into(),
        }
    }

    #[test]
    fn nodes_named_alike_draw_unlike_figures() {
        let memory = 8u64 << 30;
        let figures: Vec<Baseline> = ["worker0", "worker1", "worker2"]
            .iter()
            .map(|n| system(0, n, 4.0, memory))
            .collect();
        for (i, a) in figures.iter().enumerate() {
            for b in &figures[i + 1..] {
                assert!((a.idle_cores - b.idle_cores).abs() > 1e-3, "{a:?} {b:?}");
                assert!(
                    a.idle_memory.abs_diff(b.idle_memory) > 1 << 20,
                    "{a:?} {b:?}"
                );
            }
        }
    }

    #[test]
    fn baselines_are_deterministic_jittered_and_in_range() {
        let rows: &[(&str, f64, u64)] = &[
            ("busybox", 0.1, 380 << 10),
            ("nginx:1.14.2", 0.2, 3482 << 10),
            ("registry.k8s.io/hpa-example", 0.4, 10 << 20),
            ("registry.k8s.io/pause:3.10", 0.0, 240 << 10),
            ("myapp:v1", 0.5, 2 << 20),
        ];
        for (image, millicores, memory) in rows {
            let a = container(0, &key("web", "app"), image);
            assert_eq!(a, container(0, &key("web", "app"), image), "{image}");
            let cores = millicores / 1000.0;
            assert!(a.idle_cores >= cores * CPU_JITTER.0 && a.idle_cores <= cores * CPU_JITTER.1);
            let m = *memory as f64;
            let got = a.idle_memory as f64;
            assert!(got >= m * 0.97 - 1.0 && got <= m * 1.03, "{image}: {got}");
        }
        // Another pod, container or seed draws other figures.
        let a = container(0, &key("web", "app"), "nginx");
        for other in [
            container(0, &key("web-2", "app"), "nginx"),
            container(0, &key("web", "sidecar"), "nginx"),
            container(7, &key("web", "app"), "nginx"),
        ] {
            assert_ne!(a.idle_memory, other.idle_memory);
        }
    }

    #[test]
    fn system_baseline_is_a_small_part_of_the_node() {
        for name in ["worker0", "node-1", "node-999"] {
            let s = system(0, name, 4.0, 8 << 30);
            assert_eq!(s, system(0, name, 4.0, 8 << 30));
            assert!((0.05..=0.1).contains(&s.idle_cores), "{name}: {s:?}");
            let part = s.idle_memory as f64 / (8u64 << 30) as f64;
            assert!((0.05..=0.1).contains(&part), "{name}: {part}");
        }
        assert_eq!(system(0, "tiny", 0.05, 1 << 30).idle_cores, 0.025);
    }
}

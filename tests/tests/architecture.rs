//! ARCHITECTURE.md's invariants, checked (as rust-analyzer's tidy tests check theirs): no
//! component imports another, only `store` touches sled and etcd, only `apiserver` and the
//! kubelet's endpoint know axum, `proto` does no I/O and knows no runtime, components reach the
//! cluster through `client`, and every source file says what it is for on its first line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The component crates, by directory and package name.
const COMPONENTS: &[(&str, &str)] = &[
    ("apiserver", "tinykube-apiserver"),
    ("scheduler", "tinykube-scheduler"),
    ("controllers", "tinykube-controllers"),
    ("kubelet", "tinykube-kubelet"),
    ("metrics-server", "tinykube-metrics-server"),
    ("cluster", "tinykube-cluster"),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// The workspace's member directories, from the root manifest.
fn members() -> Vec<String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("a members list");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The normal (not dev) dependencies of a member, by name.
fn dependencies(member: &str) -> Vec<String> {
    let manifest = std::fs::read_to_string(root().join(member).join("Cargo.toml")).unwrap();
    let mut section = String::new();
    let mut out = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_string();
            continue;
        }
        let normal = section == "dependencies" || section.ends_with(".dependencies");
        if !normal || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap_or("").trim();
        out.push(name.to_string());
    }
    out
}

/// Every Rust source file of a member (src, tests, examples, benches), with its text.
fn sources(member: &str) -> BTreeMap<PathBuf, String> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.insert(path.clone(), std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    for dir in ["src", "tests", "examples", "benches"] {
        walk(&root().join(member).join(dir), &mut out);
    }
    out
}

/// Members other than `allowed` whose manifests or sources use `crate_name`.
fn users_of(crate_name: &str, allowed: &[&str]) -> Vec<String> {
    let path_use = format!("{}::", crate_name.replace('-', "_"));
    members()
        .into_iter()
        .filter(|m| !allowed.contains(&m.as_str()))
        .filter(|m| {
            dependencies(m).iter().any(|d| d == crate_name)
                || sources(m).values().any(|text| text.contains(&path_use))
        })
        .collect()
}

#[test]
fn the_members_are_the_crates_architecture_describes() {
    let architecture = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    for m in members() {
        let package = if m == "cluster" {
            "tinykube-cluster".to_string()
        } else {
            format!("tinykube-{m}")
        };
        assert!(
            architecture.contains(&format!("### `{m}` ({package}")),
            "ARCHITECTURE.md has no section for the member {m}"
        );
    }
}

#[test]
fn no_component_imports_another() {
    for (dir, _) in COMPONENTS {
        let deps = dependencies(dir);
        for (other_dir, other) in COMPONENTS {
            assert!(
                dir == other_dir || !deps.iter().any(|d| d == other),
                "{dir} depends on the component {other}: components talk through the API only"
            );
        }
    }
}

#[test]
fn only_store_touches_sled() {
    assert_eq!(users_of("sled", &["store"]), Vec::<String>::new());
    assert_eq!(users_of("etcd-client", &["store"]), Vec::<String>::new());
}

#[test]
fn only_the_http_servers_know_axum() {
    // The kubelet serves its streaming endpoints (WebSocket exec and attach) with it, the
    // metrics server the metrics.k8s.io API (query strings, content negotiation).
    assert_eq!(
        users_of("axum", &["apiserver", "kubelet", "metrics-server"]),
        Vec::<String>::new()
    );
}

#[test]
fn proto_does_no_io_and_knows_no_runtime() {
    let deps = dependencies("proto");
    for banned in ["tokio", "reqwest", "sled", "axum", "futures"] {
        assert!(
            !deps.iter().any(|d| d == banned),
            "proto depends on {banned}"
        );
    }
    // The library itself; its integration tests may read their corpus from disk.
    let library = root().join("proto/src");
    for (path, text) in sources("proto")
        .into_iter()
        .filter(|(p, _)| p.starts_with(&library))
    {
        for banned in ["std::fs", "std::net", "std::process", "tokio::"] {
            assert!(
                !text.contains(banned),
                "{} uses {banned}: proto is pure",
                path.display()
            );
        }
    }
}

#[test]
fn runtime_does_no_io_and_knows_no_async_runtime() {
    // What a container does is decided without I/O: the kubelet drives it through `Host`.
    let deps = dependencies("runtime");
    for banned in ["tokio", "reqwest", "sled", "axum", "tinykube-client"] {
        assert!(
            !deps.iter().any(|d| d == banned),
            "runtime depends on {banned}"
        );
    }
    for (path, text) in sources("runtime") {
        for banned in [
            "std::fs",
            "std::net::Tcp",
            "std::net::Udp",
            "std::process",
            "std::thread",
            "tokio::",
        ] {
            assert!(
                !text.contains(banned),
                "{} uses {banned}: the runtime crate does no I/O",
                path.display()
            );
        }
    }
}

#[test]
fn components_reach_the_cluster_through_client() {
    // The kubelet fetches `--manifest-url` itself (not the cluster), as upstream's does, and
    // asks the other kubelets for their pods' answers (the simulated pod network); the
    // metrics server scrapes the kubelets (not the API server) as metrics-server does.
    for (dir, _) in COMPONENTS {
        if ["apiserver", "kubelet", "metrics-server"].contains(dir) {
            continue;
        }
        assert!(
            !dependencies(dir).iter().any(|d| d == "reqwest"),
            "{dir} speaks HTTP itself instead of through tinykube-client"
        );
    }
}

#[test]
fn every_source_file_starts_with_what_it_is_for() {
    let mut missing = Vec::new();
    for m in members() {
        for (path, text) in sources(&m) {
            if !text.starts_with("//!") {
                missing.push(path.display().to_string());
            }
        }
    }
    assert_eq!(missing, Vec::<String>::new(), "files without a //! line");
}

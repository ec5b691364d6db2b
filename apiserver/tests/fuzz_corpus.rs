//! The API server's fuzz targets (request bodies in JSON, YAML and Kubernetes protobuf; custom
//! objects against a CRD's schema and rules; CRDs themselves), each run over its corpus in
//! `fuzz/corpus/<target>` and a bounded number of deterministic mutants of each entry: the
//! short fuzzing run of every `cargo test`. `FUZZ_MUTANTS` (20 000 per target,
//! spread over the entries) raises the count; cargo
//! fuzz runs the same target for longer, coverage-guided campaigns (README, Reliability).

use std::path::PathBuf;

/// Run `target` over the corpus of `name` and its mutants; a panic names the input.
fn run(name: &str, target: fn(&[u8])) {
    let budget: usize = std::env::var("FUZZ_MUTANTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let entries: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert!(!entries.is_empty(), "no corpus in {}", dir.display());
    let mutants = (budget / entries.len()).max(10);
    for (i, entry) in entries.iter().enumerate() {
        target(entry);
        let other = &entries[(i + 1) % entries.len()];
        let variants = tinykube_proto::fuzzing::mutants(entry, other, mutants, 0x5eed + i as u64);
        for m in variants {
            let outcome = std::panic::catch_unwind(|| target(&m));
            assert!(
                outcome.is_ok(),
                "{name} failed on {:?} (mutant of {})",
                String::from_utf8_lossy(&m),
                files[i].display()
            );
        }
    }
}

#[test]
fn bodies() {
    run("bodies", tinykube_apiserver::fuzzing::bodies);
}

#[test]
fn custom_objects() {
    run(
        "custom_objects",
        tinykube_apiserver::fuzzing::custom_objects,
    );
}

#[test]
fn definitions() {
    run("definitions", tinykube_apiserver::fuzzing::definitions);
}

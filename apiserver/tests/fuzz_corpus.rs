//! The request-body fuzz target (JSON, YAML and Kubernetes protobuf decoding), run over the
//! corpus kept in `fuzz/corpus/bodies` and a bounded number of deterministic mutants of each
//! entry: the short fuzzing run of every `cargo test`. `FUZZ_MUTANTS` (20 000 per target,
//! spread over the entries) raises the count; cargo
//! fuzz runs the same target for longer, coverage-guided campaigns (README, Reliability).

use std::path::PathBuf;

#[test]
fn bodies() {
    let budget: usize = std::env::var("FUZZ_MUTANTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/bodies");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let entries: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert!(!entries.is_empty(), "no corpus in {}", dir.display());
    let mutants = (budget / entries.len()).max(10);
    for (i, entry) in entries.iter().enumerate() {
        tinykube_apiserver::fuzzing::bodies(entry);
        let other = &entries[(i + 1) % entries.len()];
        let variants = tinykube_proto::fuzzing::mutants(entry, other, mutants, 0x5eed + i as u64);
        for m in variants {
            let outcome = std::panic::catch_unwind(|| tinykube_apiserver::fuzzing::bodies(&m));
            assert!(
                outcome.is_ok(),
                "bodies failed on {:?} (mutant of {})",
                String::from_utf8_lossy(&m),
                files[i].display()
            );
        }
    }
}

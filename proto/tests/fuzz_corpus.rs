//! The fuzz targets of proto, run over the corpus kept in `fuzz/corpus/` and a bounded number
//! of deterministic mutants of each entry: the short fuzzing run of every `cargo test` (longer,
//! coverage-guided campaigns run the same targets under cargo fuzz: see README, Reliability).
//! `FUZZ_MUTANTS` (20 000) is the number of mutants per target, spread over its entries.

use std::path::PathBuf;

use tinykube_proto::fuzzing;

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus for {target}");
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

/// Run `target` over its corpus and `FUZZ_MUTANTS` (20 000) mutants spread over the entries.
fn run(name: &str, target: fn(&[u8])) {
    let budget: usize = std::env::var("FUZZ_MUTANTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let entries = corpus(name);
    let mutants = (budget / entries.len()).max(10);
    for (i, entry) in entries.iter().enumerate() {
        target(entry);
        let other = &entries[(i + 1) % entries.len()];
        for m in fuzzing::mutants(entry, other, mutants, 0x9e37_79b9 + i as u64) {
            let outcome = std::panic::catch_unwind(|| target(&m));
            assert!(
                outcome.is_ok(),
                "{name} failed on {:?} (mutant of entry {i})",
                String::from_utf8_lossy(&m)
            );
        }
    }
}

#[test]
fn selectors() {
    run("selectors", fuzzing::selectors);
}

#[test]
fn quantities() {
    run("quantity", fuzzing::quantity);
}

#[test]
fn patches() {
    run("patches", fuzzing::patches);
}

#[test]
fn objects() {
    run("objects", fuzzing::objects);
}

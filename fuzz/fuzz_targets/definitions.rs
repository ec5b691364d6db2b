//! cargo fuzz target: `tinykube_apiserver::fuzzing::definitions` (corpus in `fuzz/corpus/definitions`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinykube_apiserver::fuzzing::definitions(data));

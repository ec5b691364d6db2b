//! cargo fuzz target: `tinykube_apiserver::fuzzing::custom_objects` (corpus in `fuzz/corpus/custom_objects`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinykube_apiserver::fuzzing::custom_objects(data));

//! cargo fuzz target: `tinykube_proto::fuzzing::selectors` (corpus in `fuzz/corpus/selectors`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinykube_proto::fuzzing::selectors(data));

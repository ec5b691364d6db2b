//! cargo fuzz target: `tinykube_proto::fuzzing::patches` (corpus in `fuzz/corpus/patches`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinykube_proto::fuzzing::patches(data));

//! cargo fuzz target: `tinykube_proto::fuzzing::objects` (corpus in `fuzz/corpus/objects`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinykube_proto::fuzzing::objects(data));

//! cargo fuzz target: `tinykube_proto::fuzzing::quantity` (corpus in `fuzz/corpus/quantity`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinykube_proto::fuzzing::quantity(data));

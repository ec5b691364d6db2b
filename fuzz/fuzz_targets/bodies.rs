//! cargo fuzz target: `tinykube_apiserver::fuzzing::bodies`, request bodies as JSON, YAML and
//! Kubernetes protobuf (corpus in `fuzz/corpus/bodies`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinykube_apiserver::fuzzing::bodies(data));

//! Fuzz entry point for request bodies, shared by the `fuzz/` target (cargo fuzz, for long
//! campaigns) and the corpus test that `cargo test` runs: arbitrary bytes decoded as JSON, YAML
//! and Kubernetes protobuf, as the API server decodes a body, answer an object or a 400, never
//! a panic.

use crate::request::{decode_body, BodyFormat};

/// Decode `data` in every body format the API server accepts.
pub fn bodies(data: &[u8]) {
    for format in [BodyFormat::Json, BodyFormat::Yaml, BodyFormat::Protobuf] {
        if let Ok(v) = decode_body(data, format, "Pod") {
            assert!(v.is_object(), "{format:?} decoded a non-object: {v}");
            tinykube_proto::fuzzing::objects(v.to_string().as_bytes());
        }
    }
}

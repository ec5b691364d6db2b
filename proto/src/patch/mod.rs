//! Patches as the API server applies them: JSON patch (RFC 6902), JSON merge patch (RFC 7386)
//! and Kubernetes strategic merge patch.

mod json_patch;
mod strategic;

pub use json_patch::json_patch;
pub use strategic::strategic_merge_patch;

use serde_json::Value;

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    #[error("invalid patch: {0}")]
    Invalid(String),
    #[error("doc is missing path: {0:?}: missing value")]
    MissingPath(String),
    #[error("testing value {path:?} failed: test failed")]
    TestFailed { path: String },
    #[error("unknown patch directive: {0}")]
    Directive(String),
}

/// RFC 7386 JSON merge patch: objects merge recursively, `null` deletes, anything else replaces.
pub fn merge_patch(doc: &Value, patch: &Value) -> Value {
    match patch {
        Value::Object(p) => {
            let mut out = match doc {
                Value::Object(d) => d.clone(),
                _ => serde_json::Map::new(),
            };
            for (k, v) in p {
                if v.is_null() {
                    out.remove(k);
                } else {
                    let merged = merge_patch(out.get(k).unwrap_or(&Value::Null), v);
                    out.insert(k.clone(), merged);
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (json!(["a"]), json!({"a": "b"}), json!({"a": "b"})),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
        ];
        for (doc, patch, want) in cases {
            assert_eq!(merge_patch(&doc, &patch), want, "{patch}");
        }
    }
}

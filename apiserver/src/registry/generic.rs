//! The checks upstream's generic registry store makes of every object after its kind's own
//! validation (ValidateObjectMetaAccessor): for kinds whose validation says nothing of names
//! (PodDisruptionBudgets, core/v1 Events) a name only has to be a path segment.

use serde_json::Value;

use super::field::{ErrorType, FieldError};
use super::names::{validate_object_meta, NameRule};
use super::rules::path_segment_name;

/// Metadata errors of an object whose name only has to be a path segment.
pub fn meta_with_any_name(obj: &Value) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = validate_object_meta(obj, NameRule::Subdomain)
        .into_iter()
        .filter(|e| !(e.field == "metadata.name" && e.kind == ErrorType::Invalid))
        .collect();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    errs.splice(0..0, path_segment_name("metadata.name", name));
    errs
}

/// Upstream runs a kind's own validation first and the generic checks only when it passed: the
/// answer has one set of errors or the other.
pub fn kind_then_generic(kind: Vec<FieldError>, obj: &Value) -> Vec<FieldError> {
    if kind.is_empty() {
        meta_with_any_name(obj)
    } else {
        kind
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_need_only_be_path_segments() {
        let cases = [
            ("web.17a3f", vec![]),
            ("Mixed_Case", vec![]),
            (
                "..",
                vec!["metadata.name: Invalid value: \"..\": may not be '..'"],
            ),
            (
                "a/b%c",
                vec![
                    "metadata.name: Invalid value: \"a/b%c\": may not contain '/'",
                    "metadata.name: Invalid value: \"a/b%c\": may not contain '%'",
                ],
            ),
        ];
        for (name, want) in cases {
            let obj = json!({"metadata": {"name": name}});
            let got: Vec<String> = meta_with_any_name(&obj)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, want, "{name}");
        }
        let labelled = json!({"metadata": {"name": "x", "labels": {"bad key": "v"}}});
        assert_eq!(meta_with_any_name(&labelled)[0].field, "metadata.labels");
    }
}

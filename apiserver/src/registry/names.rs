//! Names and label syntax shared by every kind: names (DNS-1123 subdomains and labels, from
//! `proto::names`, with upstream's "must not contain dots" for labels), label keys and values,
//! and the field errors for a name, a label map and an immutable field. ObjectMeta as a whole is
//! `meta`'s.

use serde_json::Value;
pub use tinykube_proto::names::subdomain_errors;

use super::field::FieldError;
use super::rules::{label_value_errors, qualified_name_errors};

/// The ConfigMap key syntax lives with the other shared value rules.
pub use super::rules::config_key_errors;

/// Which rule a kind's names follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    Subdomain,
    Label,
    /// Anything usable as one path segment (RBAC names, `system:masters`).
    PathSegment,
}

/// Problems with a DNS-1123 label, as upstream words them (empty when valid): a valid
/// subdomain that is no label is told it "must not contain dots".
pub fn label_errors(s: &str) -> Vec<String> {
    tinykube_proto::names::label_errors(s)
        .into_iter()
        .map(|m| {
            if m == tinykube_proto::names::LABEL_MSG && subdomain_errors(s).is_empty() {
                "must not contain dots".to_string()
            } else {
                m
            }
        })
        .collect()
}

/// Problems with a name by `rule`; a `prefix` (a `generateName`) may end in `-`.
pub fn name_errors(name: &str, rule: NameRule, prefix: bool) -> Vec<String> {
    let masked;
    let name = match name.strip_suffix('-') {
        Some(head) if prefix => {
            masked = format!("{head}a");
            masked.as_str()
        }
        _ => name,
    };
    match rule {
        NameRule::Subdomain => subdomain_errors(name),
        NameRule::Label => label_errors(name),
        NameRule::PathSegment => super::rules::path_segment_name("", name)
            .into_iter()
            .map(|e| e.detail)
            .collect(),
    }
}

/// Validate a name at `field` by `rule`.
pub fn validate_name(field: &str, name: &str, rule: NameRule) -> Vec<FieldError> {
    name_errors(name, rule, false)
        .into_iter()
        .map(|p| FieldError::invalid(field, name, p))
        .collect()
}

/// A label key (a qualified name) at `field`.
pub fn validate_label_key(field: &str, key: &str) -> Vec<FieldError> {
    qualified_name_errors(key)
        .into_iter()
        .map(|m| FieldError::invalid(field, key, m))
        .collect()
}

/// Label keys and values of a map at `field` (`metadata.labels`), both reported at `field` as
/// upstream's ValidateLabels does.
pub fn validate_labels(field: &str, labels: Option<&Value>) -> Vec<FieldError> {
    let mut out = Vec::new();
    let Some(Value::Object(map)) = labels else {
        return out;
    };
    for (k, v) in map {
        out.extend(validate_label_key(field, k));
        let value = v.as_str().unwrap_or("");
        for m in label_value_errors(value) {
            out.push(FieldError::invalid(field, value, m));
        }
    }
    out
}

/// Generic ObjectMeta checks of a new object (see `meta::validate`).
pub fn validate_object_meta(obj: &Value, rule: NameRule) -> Vec<FieldError> {
    super::meta::validate(obj, rule)
}

/// `field` must not change between `old` and `new`.
pub fn immutable(field: &str, new: Option<&Value>, old: Option<&Value>) -> Option<FieldError> {
    if new != old {
        let shown = new.cloned().unwrap_or(Value::Null);
        Some(FieldError::invalid(field, shown, "field is immutable"))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_checked_as_upstream_words_them() {
        let cases = [
            ("nginx", NameRule::Subdomain, 0),
            ("192.168.122.20", NameRule::Subdomain, 0),
            ("Bad_Name", NameRule::Subdomain, 1),
            ("a.b", NameRule::Label, 1),
            ("-x", NameRule::Label, 1),
            ("kube-system", NameRule::Label, 0),
        ];
        for (name, rule, n) in cases {
            assert_eq!(
                validate_name("metadata.name", name, rule).len(),
                n,
                "{name}"
            );
        }
        let e = &validate_name("metadata.name", "Bad_Name", NameRule::Subdomain)[0];
        assert_eq!(
            e.message(),
            format!(
                "Invalid value: \"Bad_Name\": {}",
                tinykube_proto::names::SUBDOMAIN_MSG
            )
        );
        assert_eq!(label_errors("a.b"), ["must not contain dots"]);
        assert_eq!(label_errors("A"), [tinykube_proto::names::LABEL_MSG]);
        assert!(name_errors("web-", NameRule::Subdomain, true).is_empty());
        assert_eq!(name_errors("web-", NameRule::Subdomain, false).len(), 1);
    }

    #[test]
    fn labels_are_reported_at_the_map() {
        let ok = json!({"app": "web", "example.com/tier": ""});
        assert!(validate_labels("metadata.labels", Some(&ok)).is_empty());
        let bad = json!({"bad key": "v", "k": "-bad"});
        let errs = validate_labels("metadata.labels", Some(&bad));
        let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(shown.len(), 2);
        assert!(shown[0]
            .starts_with("metadata.labels: Invalid value: \"bad key\": name part must consist of"));
        assert!(shown[1].starts_with(
            "metadata.labels: Invalid value: \"-bad\": a valid label must be an empty string"
        ));
    }
}

//! Name and metadata validation shared by every kind: names (DNS-1123 subdomains and labels,
//! from `proto::names`), ConfigMap keys, label and annotation syntax, with upstream
//! apimachinery's wording, as field errors.

use serde_json::Value;
use tinykube_proto::labels::{validate_key, validate_value};
pub use tinykube_proto::names::{label_errors, subdomain_errors};

use super::field::FieldError;

const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// Which rule a kind's names follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    Subdomain,
    Label,
}

/// Problems with a ConfigMap data key (empty when valid): at most 253 of `[-._a-zA-Z0-9]`.
pub fn config_key_errors(s: &str) -> Vec<String> {
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c));
    if ok {
        Vec::new()
    } else {
        vec![CONFIG_KEY_MSG.to_string()]
    }
}

/// Validate a name at `field` by `rule`.
pub fn validate_name(field: &str, name: &str, rule: NameRule) -> Vec<FieldError> {
    let problems = match rule {
        NameRule::Subdomain => subdomain_errors(name),
        NameRule::Label => label_errors(name),
    };
    problems
        .into_iter()
        .map(|p| FieldError::invalid(field, name, p))
        .collect()
}

/// Label keys and values of a map at `field` (`metadata.labels`).
pub fn validate_labels(field: &str, labels: Option<&Value>) -> Vec<FieldError> {
    let mut out = Vec::new();
    let Some(Value::Object(map)) = labels else {
        return out;
    };
    for (k, v) in map {
        if let Err(e) = validate_key(k) {
            out.push(FieldError::invalid(field, k.as_str(), e));
        }
        let value = v.as_str().unwrap_or("");
        if let Err(e) = validate_value(value) {
            out.push(FieldError::invalid(format!("{field}[{k}]"), value, e));
        }
    }
    out
}

const ANNOTATIONS_MAX: usize = 256 * 1024;

/// Generic ObjectMeta checks: name (unless generated), labels, annotations.
pub fn validate_object_meta(obj: &Value, rule: NameRule) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        errs.extend(validate_name("metadata.name", name, rule));
    }
    errs.extend(validate_labels(
        "metadata.labels",
        obj.pointer("/metadata/labels"),
    ));
    if let Some(Value::Object(ann)) = obj.pointer("/metadata/annotations") {
        let mut size = 0;
        for (k, v) in ann {
            if let Err(e) = validate_key(k) {
                errs.push(FieldError::invalid("metadata.annotations", k.as_str(), e));
            }
            size += k.len() + v.as_str().map(str::len).unwrap_or(0);
        }
        if size > ANNOTATIONS_MAX {
            errs.push(FieldError::too_long(
                "metadata.annotations",
                "",
                ANNOTATIONS_MAX,
            ));
        }
    }
    errs
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
    }

    #[test]
    fn config_keys_are_checked() {
        let long = "k".repeat(254);
        let cases = [
            ("key.name", 0),
            ("KEY_NAME", 0),
            ("key-name", 0),
            ("", 1),
            ("a/b", 1),
            ("a b", 1),
            (long.as_str(), 1),
        ];
        for (key, n) in cases {
            assert_eq!(config_key_errors(key).len(), n, "{key}");
        }
    }

    #[test]
    fn object_meta_checks_labels_and_names() {
        let ok =
            json!({"metadata": {"name": "x", "labels": {"app": "web", "example.com/tier": ""}}});
        assert!(validate_object_meta(&ok, NameRule::Subdomain).is_empty());
        let bad = json!({"metadata": {"labels": {"bad key": "v", "k": "-bad"}}});
        let errs = validate_object_meta(&bad, NameRule::Subdomain);
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            ["metadata.name", "metadata.labels", "metadata.labels[k]"]
        );
    }
}

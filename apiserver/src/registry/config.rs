//! Secrets and ServiceAccounts (core/v1): a Secret's `stringData` folded into `data`, its type
//! defaulted and immutable, the keys each type requires (upstream's ValidateSecret), `immutable`
//! and the 1 MiB limit; a ServiceAccount's name.

use base64::Engine;
use serde_json::{json, Value};

use super::field::FieldError;
use super::names::{config_key_errors, immutable, validate_object_meta, NameRule};
use super::Strategy;

/// Upstream's MaxSecretSize: the decoded bytes of all values.
const MAX_SECRET_SIZE: usize = 1024 * 1024;
const IMMUTABLE_MSG: &str = "field is immutable when `immutable` is set";

pub struct SecretStrategy;

/// The bytes of one `data` value (base64).
fn decoded(v: &Value) -> Vec<u8> {
    let text = v.as_str().unwrap_or("");
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_default()
}

/// What Go's `json.Unmarshal` into a map says of `bytes`, or None when it is a JSON object.
fn json_object_error(bytes: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(_) | Value::Null) => None,
        Ok(other) => {
            let kind = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            };
            Some(format!(
                "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
            ))
        }
        Err(e) if e.is_eof() => Some("unexpected end of JSON input".into()),
        Err(e) => {
            let text = String::from_utf8_lossy(bytes);
            let first = text.trim_start().chars().next().unwrap_or(' ');
            if "{[\"-0123456789tfn".contains(first) {
                Some(e.to_string())
            } else {
                Some(format!(
                    "invalid character '{first}' looking for beginning of value"
                ))
            }
        }
    }
}

/// The keys a Secret's type requires, as upstream's ValidateSecret (bootstrap tokens and
/// other types are checked by no one but their consumers).
fn type_rules(obj: &Value) -> Vec<FieldError> {
    let data = obj.get("data").and_then(Value::as_object);
    let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
    let key = |k: &str| format!("data[{k}]");
    let json_key = |k: &str| -> Vec<FieldError> {
        match data.and_then(|d| d.get(k)) {
            None => vec![FieldError::required(key(k), "")],
            Some(v) => json_object_error(&decoded(v))
                .map(|m| FieldError::invalid(key(k), "<secret contents redacted>", m))
                .into_iter()
                .collect(),
        }
    };
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "kubernetes.io/service-account-token" => {
            let named = obj
                .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty());
            if named {
                vec![]
            } else {
                vec![FieldError::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                )]
            }
        }
        "kubernetes.io/dockercfg" => json_key(".dockercfg"),
        "kubernetes.io/dockerconfigjson" => json_key(".dockerconfigjson"),
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => vec![
            FieldError::required(key("username"), ""),
            FieldError::required(key("password"), ""),
        ],
        "kubernetes.io/ssh-auth"
            if data
                .and_then(|d| d.get("ssh-privatekey"))
                .is_none_or(|v| decoded(v).is_empty()) =>
        {
            vec![FieldError::required(key("ssh-privatekey"), "")]
        }
        "kubernetes.io/tls" => ["tls.crt", "tls.key"]
            .iter()
            .filter(|k| !has(k))
            .map(|k| FieldError::required(key(k), ""))
            .collect(),
        _ => vec![],
    }
}

impl SecretStrategy {
    fn validate(obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        let mut size = 0;
        if let Some(Value::Object(data)) = obj.get("data") {
            for (k, v) in data {
                for m in config_key_errors(k) {
                    errs.push(FieldError::invalid(format!("data[{k}]"), k.as_str(), m));
                }
                size += decoded(v).len();
            }
        }
        if size > MAX_SECRET_SIZE {
            errs.push(FieldError::too_long("data", "", MAX_SECRET_SIZE));
        }
        errs.extend(type_rules(obj));
        errs
    }
}

impl Strategy for SecretStrategy {
    /// `type` defaults to Opaque; `stringData` is merged into `data` (base64), overwriting,
    /// and never stored, as upstream's conversion does on every write.
    fn default(&self, obj: &mut Value) {
        let Some(m) = obj.as_object_mut() else {
            return;
        };
        if m.get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            m.insert("type".into(), "Opaque".into());
        }
        if let Some(Value::Object(strings)) = m.remove("stringData") {
            let data = m.entry("data").or_insert_with(|| json!({}));
            if !data.is_object() {
                *data = json!({});
            }
            if let Some(d) = data.as_object_mut() {
                for (k, v) in strings {
                    let text = v.as_str().unwrap_or("");
                    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                    d.insert(k, encoded.into());
                }
            }
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        Self::validate(obj)
    }

    /// The type never changes; once `immutable: true`, neither the flag nor the data do.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs: Vec<FieldError> = immutable("type", new.get("type"), old.get("type"))
            .into_iter()
            .collect();
        if old.get("immutable").and_then(Value::as_bool) == Some(true) {
            if new.get("immutable").and_then(Value::as_bool) != Some(true) {
                errs.push(FieldError::forbidden("immutable", IMMUTABLE_MSG));
            }
            let data = |o: &Value| o.get("data").filter(|v| !v.is_null()).cloned();
            if data(new) != data(old) {
                errs.push(FieldError::forbidden("data", IMMUTABLE_MSG));
            }
        }
        errs.extend(Self::validate(new));
        errs
    }
}

pub struct ServiceAccountStrategy;

impl Strategy for ServiceAccountStrategy {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        validate_object_meta(obj, NameRule::Subdomain)
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        validate_object_meta(new, NameRule::Subdomain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(kind: &str, data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"},
               "type": kind, "data": data})
    }

    fn messages(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn string_data_is_folded_into_data() {
        let mut obj = json!({"metadata": {"name": "s"}, "data": {"a": "eA=="},
                             "stringData": {"a": "admin", "b": "p"}});
        SecretStrategy.default(&mut obj);
        assert_eq!(obj["type"], "Opaque");
        assert_eq!(obj["data"], json!({"a": "YWRtaW4=", "b": "cA=="}));
        assert!(obj.get("stringData").is_none());
    }

    #[test]
    fn each_type_requires_its_keys() {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (secret("Opaque", json!({})), vec![]),
            (secret("bootstrap.kubernetes.io/token", json!({})), vec![]),
            (
                secret("kubernetes.io/tls", json!({"tls.crt": ""})),
                vec!["data[tls.key]: Required value"],
            ),
            (
                secret("kubernetes.io/basic-auth", json!({})),
                vec!["data[username]: Required value", "data[password]: Required value"],
            ),
            (secret("kubernetes.io/basic-auth", json!({"password": ""})), vec![]),
            (
                secret("kubernetes.io/ssh-auth", json!({"ssh-privatekey": ""})),
                vec!["data[ssh-privatekey]: Required value"],
            ),
            (
                secret("kubernetes.io/dockerconfigjson", json!({".dockerconfigjson": b64("xyz")})),
                vec!["data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": invalid character 'x' looking for beginning of value"],
            ),
            (
                secret("kubernetes.io/dockercfg", json!({})),
                vec!["data[.dockercfg]: Required value"],
            ),
            (
                secret("kubernetes.io/service-account-token", json!({})),
                vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"],
            ),
            (
                secret("Opaque", json!({"bad key": ""})),
                vec!["data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"],
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(
                messages(SecretStrategy.validate_create(&obj)),
                want,
                "{obj}"
            );
        }
    }

    #[test]
    fn immutable_secrets_keep_their_data_and_type() {
        let mut old = secret("Opaque", json!({"a": "eA=="}));
        old["immutable"] = true.into();
        let mut new = old.clone();
        new["data"] = json!({"username": "eQ=="});
        new["type"] = "kubernetes.io/basic-auth".into();
        assert_eq!(
            messages(SecretStrategy.validate_update(&new, &old)),
            vec![
                "type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"] = json!({"a": "b"});
        assert!(SecretStrategy.validate_update(&relabelled, &old).is_empty());
    }
}

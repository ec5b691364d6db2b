//! apiregistration.k8s.io/v1: APIService, as upstream's kube-aggregator registry: the service
//! port defaults to 443; a new object's status is cleared, and a Local one (no `spec.service`)
//! is Available at once; validation is upstream's ValidateAPIService (the name is
//! `VERSION.GROUP`, priorities in range, a DNS-1035 version, caBundle and
//! insecureSkipTLSVerify only for a service, and not both).

use serde_json::{json, Value};

use super::field::FieldError;
use super::names::{subdomain_errors, validate_object_meta, NameRule};
use super::rules::port;
use super::Strategy;

/// The condition every Local APIService has from its creation on.
pub const LOCAL_REASON: &str = "Local";
pub const LOCAL_MESSAGE: &str = "Local APIServices are always available";

const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// Upstream's IsDNS1035Label.
fn dns1035_errors(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push("must be no more than 63 characters".to_string());
    }
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-';
    if !ok {
        out.push(DNS1035_MSG.to_string());
    }
    out
}

/// The Available condition of a Local APIService, as of `at`.
pub fn local_condition(at: &str) -> Value {
    json!({"type": "Available", "status": "True", "lastTransitionTime": at,
           "reason": LOCAL_REASON, "message": LOCAL_MESSAGE})
}

fn has_service(obj: &Value) -> bool {
    obj.pointer("/spec/service").is_some_and(|s| !s.is_null())
}

/// Upstream's ValidateAPIService.
fn validate(obj: &Value) -> Vec<FieldError> {
    let spec = |k: &str| obj.pointer(&format!("/spec/{k}"));
    let text = |k: &str| spec(k).and_then(Value::as_str).unwrap_or("");
    let (group, version) = (text("group"), text("version"));
    let mut errs = validate_object_meta(obj, NameRule::PathSegment);
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let required = format!("{version}.{group}");
    if !name.is_empty() && !errs.iter().any(|e| e.field == "metadata.name") && name != required {
        errs.push(FieldError::invalid(
            "metadata.name",
            name,
            format!("must be `spec.version+\".\"+spec.group`: {required:?}"),
        ));
    }
    if group.is_empty() && version != "v1" {
        errs.push(FieldError::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for m in subdomain_errors(group) {
            errs.push(FieldError::invalid("spec.group", group, m));
        }
    }
    for m in dns1035_errors(version) {
        errs.push(FieldError::invalid("spec.version", version, m));
    }
    let int = |k: &str| spec(k).and_then(Value::as_i64).unwrap_or(0);
    let group_priority = int("groupPriorityMinimum");
    if !(1..=20000).contains(&group_priority) {
        errs.push(FieldError::invalid(
            "spec.groupPriorityMinimum",
            group_priority,
            "must be positive and less than 20000",
        ));
    }
    let version_priority = int("versionPriority");
    if !(1..=1000).contains(&version_priority) {
        errs.push(FieldError::invalid(
            "spec.versionPriority",
            version_priority,
            "must be positive and less than 1000",
        ));
    }
    let ca_bundle = text("caBundle");
    let insecure = spec("insecureSkipTLSVerify")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if !has_service(obj) {
        if !ca_bundle.is_empty() {
            // The bytes, as the base64 on the wire decodes (roughly: 3 bytes per 4 chars).
            let bytes = ca_bundle.trim_end_matches('=').len() * 3 / 4;
            errs.push(FieldError::invalid(
                "spec.caBundle",
                format!("{bytes} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(FieldError::invalid(
                "spec.insecureSkipTLSVerify",
                true,
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errs;
    }
    for k in ["namespace", "name"] {
        if obj
            .pointer(&format!("/spec/service/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            errs.push(FieldError::required(format!("spec.service.{k}"), ""));
        }
    }
    if let Some(p) = obj.pointer("/spec/service/port").filter(|p| !p.is_null()) {
        errs.extend(port("spec.service.port", Some(p)));
    }
    if insecure && !ca_bundle.is_empty() {
        errs.push(FieldError::invalid(
            "spec.insecureSkipTLSVerify",
            true,
            "may not be true if caBundle is present",
        ));
    }
    errs
}

/// Upstream's ValidateAPIServiceStatus: condition statuses are True, False or Unknown.
fn validate_status(obj: &Value) -> Vec<FieldError> {
    let conditions = obj.pointer("/status/conditions").and_then(Value::as_array);
    let mut errs = Vec::new();
    for (i, c) in conditions.into_iter().flatten().enumerate() {
        let status = c.get("status").and_then(Value::as_str).unwrap_or("");
        if !matches!(status, "True" | "False" | "Unknown") {
            errs.push(FieldError::not_supported(
                format!("status.conditions[{i}].status"),
                status,
                &["True", "False", "Unknown"],
            ));
        }
    }
    errs
}

pub struct ApiServiceStrategy;

impl Strategy for ApiServiceStrategy {
    /// The v1 defaults: a service's port is 443.
    fn default(&self, obj: &mut Value) {
        if let Some(service) = obj
            .pointer_mut("/spec/service")
            .and_then(Value::as_object_mut)
        {
            service.entry("port").or_insert(json!(443));
        }
    }

    /// Upstream's PrepareForCreate: no status, except that a Local APIService is Available
    /// from the start.
    fn prepare_for_create(&self, obj: &mut Value) {
        let created = obj
            .pointer("/metadata/creationTimestamp")
            .cloned()
            .unwrap_or(Value::Null);
        let local = !has_service(obj);
        if let Some(m) = obj.as_object_mut() {
            m.remove("status");
            if local {
                let at = created.as_str().unwrap_or("");
                m.insert(
                    "status".into(),
                    json!({"conditions": [local_condition(at)]}),
                );
            }
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        validate(obj)
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        validate(new)
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        validate_status(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_service(name: &str, spec: Value) -> Value {
        let mut obj = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                             "metadata": {"name": name}, "spec": spec});
        ApiServiceStrategy.default(&mut obj);
        obj
    }

    fn errors(obj: &Value) -> Vec<String> {
        ApiServiceStrategy
            .validate_create(obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn api_services_are_validated_as_upstream() {
        let metrics = json!({"group": "metrics.k8s.io", "version": "v1beta1",
            "groupPriorityMinimum": 100, "versionPriority": 100, "insecureSkipTLSVerify": true,
            "service": {"namespace": "kube-system", "name": "metrics-server"}});
        let cases: Vec<(&str, Value, Vec<&str>)> = vec![
            ("v1beta1.metrics.k8s.io", metrics.clone(), vec![]),
            (
                "v1.",
                json!({"group": "", "version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}),
                vec![],
            ),
            (
                "metrics",
                metrics.clone(),
                vec!["metadata.name: Invalid value: \"metrics\": must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\""],
            ),
            (
                "v2.",
                json!({"version": "v2", "groupPriorityMinimum": 1, "versionPriority": 1}),
                vec!["spec.group: Required value: only v1 may have an empty group and it better be legacy kube"],
            ),
            (
                "V1.example.com",
                json!({"group": "example.com", "version": "V1", "groupPriorityMinimum": 1, "versionPriority": 1}),
                vec![
                    "spec.version: Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                ],
            ),
            (
                "v1.example.com",
                json!({"group": "example.com", "version": "v1", "groupPriorityMinimum": 0, "versionPriority": 1001}),
                vec![
                    "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                    "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
                ],
            ),
            (
                "v1.example.com",
                json!({"group": "example.com", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1,
                       "insecureSkipTLSVerify": true}),
                vec!["spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify"],
            ),
            (
                "v1.example.com",
                json!({"group": "example.com", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1,
                       "caBundle": "AAAA", "insecureSkipTLSVerify": true,
                       "service": {"namespace": "", "name": "x", "port": 70000}}),
                vec![
                    "spec.service.namespace: Required value",
                    "spec.service.port: Invalid value: 70000: must be between 1 and 65535, inclusive",
                    "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
                ],
            ),
        ];
        for (name, spec, want) in cases {
            assert_eq!(
                errors(&api_service(name, spec.clone())),
                want,
                "{name} {spec}"
            );
        }
    }

    #[test]
    fn services_default_to_port_443_and_local_ones_start_available() {
        let mut remote = api_service(
            "v1beta1.metrics.k8s.io",
            json!({"service": {"namespace": "kube-system", "name": "metrics-server"}}),
        );
        assert_eq!(remote["spec"]["service"]["port"], 443);
        remote["status"] = json!({"conditions": [{"type": "Available", "status": "True"}]});
        ApiServiceStrategy.prepare_for_create(&mut remote);
        assert!(remote.get("status").is_none());
        let mut local = api_service("v1.example.com", json!({"group": "example.com"}));
        local["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        ApiServiceStrategy.prepare_for_create(&mut local);
        assert_eq!(
            local["status"]["conditions"][0],
            local_condition("2026-01-01T00:00:00Z")
        );
    }

    #[test]
    fn status_conditions_are_true_false_or_unknown() {
        let obj = json!({"status": {"conditions": [{"type": "Available", "status": "Maybe"}]}});
        let got: Vec<String> = validate_status(&obj)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            got,
            ["status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\""]
        );
    }
}

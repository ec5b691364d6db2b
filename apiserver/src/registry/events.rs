//! Events, as upstream's event validation (core/validation/events.go). Every Event, whichever
//! API writes it, passes the legacy rules: an old-style Event (no `eventTime`) is in its
//! object's namespace (or `default` for a cluster-scoped object), a new-style one names its
//! reporting controller, instance, action and reason. Events written through events.k8s.io/v1
//! also get the strict rules: a DNS-subdomain name, `eventTime`, type Normal or Warning, none of
//! the deprecated fields, a valid series, and on update nothing but the series changes.
//!
//! Events are stored in their core/v1 form, so the fields have their core names here
//! (`involvedObject`, `reportingComponent`); error paths are upstream's (`reportingController`).

use serde_json::Value;

use super::field::FieldError;
use super::generic::kind_then_generic;
use super::names::{immutable, subdomain_errors, validate_object_meta, NameRule};
use super::rules::qualified_name_errors;
use super::semantic;
use super::Strategy;

const REPORTING_INSTANCE_MAX: usize = 128;
const ACTION_MAX: usize = 128;
const REASON_MAX: usize = 128;
const NOTE_MAX: usize = 1024;

/// A string field, "" when absent or null.
fn text<'a>(event: &'a Value, pointer: &str) -> &'a str {
    event.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Whether a (time) field is set: absent, null and "" are Go's zero value.
fn is_set(event: &Value, key: &str) -> bool {
    !semantic::equal(event.get(key), None)
}

/// Upstream's legacyValidateEvent.
fn legacy(event: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ns = text(event, "/metadata/namespace");
    let object_ns = text(event, "/involvedObject/namespace");
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            object_ns,
            "does not match event.namespace",
        )
    };
    if !is_set(event, "eventTime") {
        let agrees = if object_ns.is_empty() {
            ns.is_empty() || ns == "default"
        } else {
            ns == object_ns
        };
        if !agrees {
            errs.push(mismatch());
        }
    } else {
        if object_ns.is_empty() && ns != "default" && ns != "kube-system" {
            errs.push(mismatch());
        }
        let controller = text(event, "/reportingComponent");
        if controller.is_empty() {
            errs.push(FieldError::required("reportingController", ""));
        }
        // Upstream's ValidateQualifiedName: every message of IsQualifiedName, so an empty
        // controller gets "name part must be non-empty" and the syntax message.
        for msg in qualified_name_errors(controller) {
            errs.push(FieldError::invalid("reportingController", controller, msg));
        }
        for (field, key, max) in [
            (
                "reportingInstance",
                "/reportingInstance",
                REPORTING_INSTANCE_MAX,
            ),
            ("action", "/action", ACTION_MAX),
            ("reason", "/reason", REASON_MAX),
        ] {
            let value = text(event, key);
            if value.is_empty() {
                errs.push(FieldError::required(field, ""));
            }
            if value.len() > max {
                errs.push(FieldError::invalid(
                    field,
                    "",
                    format!("can have at most {max} characters"),
                ));
            }
        }
        if text(event, "/message").len() > NOTE_MAX {
            errs.push(FieldError::invalid(
                "message",
                "",
                format!("can have at most {NOTE_MAX} characters"),
            ));
        }
    }
    for msg in subdomain_errors(ns) {
        errs.push(FieldError::invalid("namespace", ns, msg));
    }
    errs
}

/// Upstream's validateV1EventSeries.
fn series(event: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(series) = event.get("series").filter(|s| !s.is_null()) else {
        return errs;
    };
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errs.push(FieldError::invalid(
            "series.count",
            "",
            "should be at least 2",
        ));
    }
    if !is_set(series, "lastObservedTime") {
        errs.push(FieldError::required("series.lastObservedTime", ""));
    }
    errs
}

/// The strict rules of an Event created through events.k8s.io/v1 (upstream's
/// ValidateEventCreate for the new API).
fn strict_create(event: &Value) -> Vec<FieldError> {
    let mut errs = validate_object_meta(event, NameRule::Subdomain);
    errs.extend(series(event));
    if !is_set(event, "eventTime") {
        errs.push(FieldError::required("eventTime", ""));
    }
    let kind = text(event, "/type");
    if kind != "Normal" && kind != "Warning" {
        errs.push(FieldError::invalid(
            "type",
            "",
            format!("has invalid value: {kind}"),
        ));
    }
    for key in ["firstTimestamp", "lastTimestamp", "count", "source"] {
        if is_set(event, key) {
            errs.push(FieldError::invalid(key, "", "needs to be unset"));
        }
    }
    errs
}

/// The fields an events.k8s.io/v1 update may not change: (upstream's path, stored key). Upstream
/// checks `reason` twice, and so reports it twice.
const IMMUTABLE: &[(&str, &str)] = &[
    ("involvedObject", "involvedObject"),
    ("reason", "reason"),
    ("message", "message"),
    ("source", "source"),
    ("firstTimestamp", "firstTimestamp"),
    ("lastTimestamp", "lastTimestamp"),
    ("count", "count"),
    ("reason", "reason"),
    ("type", "type"),
    ("eventTime", "eventTime"),
    ("action", "action"),
    ("related", "related"),
    ("reportingController", "reportingComponent"),
    ("reportingInstance", "reportingInstance"),
];

/// Events; `strict` for the events.k8s.io/v1 endpoint.
pub struct EventStrategy {
    pub strict: bool,
}

impl Strategy for EventStrategy {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = legacy(obj);
        if self.strict {
            errs.extend(strict_create(obj));
        }
        kind_then_generic(errs, obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = legacy(new);
        if self.strict {
            if !semantic::equal(new.get("series"), old.get("series")) {
                errs.extend(series(new));
            }
            for (field, key) in IMMUTABLE {
                if !semantic::equal(new.get(*key), old.get(*key)) {
                    errs.extend(immutable(
                        field,
                        Some(new.get(*key).unwrap_or(&Value::Null)),
                        Some(old.get(*key).unwrap_or(&Value::Null)),
                    ));
                }
            }
        }
        kind_then_generic(errs, new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An Event as client-go's legacy recorder (and tinykube's `Recorder`) writes it.
    fn legacy_event() -> Value {
        json!({"metadata": {"name": "web-7d4b9.17a3f5e2c", "namespace": "default"},
               "involvedObject": {"kind": "Pod", "name": "web-7d4b9", "namespace": "default"},
               "reason": "Scheduled", "message": "Successfully assigned", "type": "Normal",
               "count": 1, "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
               "source": {"component": "default-scheduler"}, "reportingComponent": "default-scheduler",
               "reportingInstance": ""})
    }

    /// An Event as events.k8s.io recorders (client-go's, kube-rs', tinykube's scheduler) write it.
    fn new_event() -> Value {
        json!({"metadata": {"name": "web-7d4b9.17a3f5e2c", "namespace": "default"},
               "involvedObject": {"kind": "Pod", "name": "web-7d4b9", "namespace": "default"},
               "reason": "Scheduled", "message": "Successfully assigned", "type": "Normal",
               "eventTime": "2026-01-01T00:00:00.000000Z", "action": "Binding",
               "reportingComponent": "default-scheduler", "reportingInstance": "default-scheduler-host"})
    }

    fn with(mut event: Value, changes: &[(&str, Value)]) -> Value {
        for (key, v) in changes {
            let (parent, key) = key.rsplit_once('/').unwrap_or(("", key));
            let target = if parent.is_empty() {
                &mut event
            } else {
                event.pointer_mut(parent).unwrap()
            };
            match v {
                Value::Null => target.as_object_mut().unwrap().remove(key),
                v => target
                    .as_object_mut()
                    .unwrap()
                    .insert(key.to_string(), v.clone()),
            };
        }
        event
    }

    fn errors(strict: bool, event: &Value) -> Vec<String> {
        EventStrategy { strict }
            .validate_create(event)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn core_events_pass_the_legacy_rules() {
        let node_event = with(
            legacy_event(),
            &[
                ("/involvedObject/namespace", json!("")),
                ("/involvedObject/kind", json!("Node")),
            ],
        );
        let cases = [
            (legacy_event(), vec![]),
            (node_event.clone(), vec![]),
            (new_event(), vec![]),
            (with(legacy_event(), &[("/metadata/name", json!("Upper_Case.1"))]), vec![]),
            (
                with(legacy_event(), &[("/involvedObject/namespace", json!("kube-system"))]),
                vec!["involvedObject.namespace: Invalid value: \"kube-system\": does not match event.namespace"],
            ),
            (
                with(node_event, &[("/metadata/namespace", json!("web"))]),
                vec!["involvedObject.namespace: Invalid value: \"\": does not match event.namespace"],
            ),
            (
                with(new_event(), &[("/action", Value::Null), ("/reportingComponent", Value::Null)]),
                vec![
                    "reportingController: Required value",
                    "reportingController: Invalid value: \"\": name part must be non-empty",
                    "reportingController: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                    "action: Required value",
                ],
            ),
            (
                with(new_event(), &[("/message", json!("x".repeat(1025)))]),
                vec!["message: Invalid value: \"\": can have at most 1024 characters"],
            ),
        ];
        for (event, want) in cases {
            assert_eq!(errors(false, &event), want, "{event}");
        }
    }

    #[test]
    fn events_k8s_io_adds_the_strict_rules() {
        let cases = [
            (new_event(), vec![]),
            (
                with(new_event(), &[("/type", json!("Info"))]),
                vec!["type: Invalid value: \"\": has invalid value: Info"],
            ),
            (
                with(
                    new_event(),
                    &[("/count", json!(2)), ("/source", json!({"component": "x"}))],
                ),
                vec![
                    "count: Invalid value: \"\": needs to be unset",
                    "source: Invalid value: \"\": needs to be unset",
                ],
            ),
            (
                with(new_event(), &[("/series", json!({"count": 1}))]),
                vec![
                    "series.count: Invalid value: \"\": should be at least 2",
                    "series.lastObservedTime: Required value",
                ],
            ),
        ];
        for (event, want) in cases {
            assert_eq!(errors(true, &event), want, "{event}");
        }
        let legacy = errors(true, &legacy_event());
        assert!(
            legacy.contains(&"eventTime: Required value".to_string()),
            "{legacy:?}"
        );
        // A repeat counts on the series; the note may not change.
        let s = EventStrategy { strict: true };
        let old = new_event();
        let repeat = with(
            old.clone(),
            &[(
                "/series",
                json!({"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}),
            )],
        );
        assert!(s.validate_update(&repeat, &old).is_empty());
        let edited = with(old.clone(), &[("/message", json!("other"))]);
        assert_eq!(
            s.validate_update(&edited, &old)[0].to_string(),
            "message: Invalid value: \"other\": field is immutable"
        );
        assert!(EventStrategy { strict: false }
            .validate_update(&edited, &old)
            .is_empty());
    }
}

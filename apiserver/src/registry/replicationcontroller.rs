//! core/v1 ReplicationControllers, as upstream's SetDefaults_ReplicationController (selector
//! and labels from the template's labels, one replica), ValidateReplicationController (a
//! non-empty equality selector the template's labels match, the full pod template) and
//! ValidateReplicationControllerStatus.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::apps::{at, check_template};
use super::field::FieldError;
use super::meta::validate_annotations;
use super::names::{validate_object_meta, NameRule};
use super::rules::non_negative_int;
use super::workloads::default_template;
use super::Strategy;

pub struct ReplicationControllerStrategy;

/// A string map (`null` and non-objects as empty).
fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn is_empty_map(v: Option<&Value>) -> bool {
    v.and_then(Value::as_object).is_none_or(|m| m.is_empty())
}

/// Upstream's ValidateReplicationControllerSpec, in its order.
pub fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let spec = at(obj, "/spec").cloned().unwrap_or(json!({}));
    let mut errs = Vec::new();
    errs.extend(non_negative_int(
        "spec.minReadySeconds",
        at(&spec, "/minReadySeconds"),
    ));
    let selector = string_map(at(&spec, "/selector"));
    if selector.is_empty() {
        errs.push(FieldError::required("spec.selector", ""));
    }
    errs.extend(non_negative_int("spec.replicas", at(&spec, "/replicas")));
    if at(&spec, "/template").is_none() {
        errs.push(FieldError::required("spec.template", ""));
        return errs;
    }
    let labels = at(&spec, "/template/metadata/labels");
    let set = string_map(labels);
    if !selector.is_empty() && !selector.iter().all(|(k, v)| set.get(k) == Some(v)) {
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            labels.cloned().unwrap_or(json!({})),
            "`selector` does not match template `labels`",
        ));
    }
    errs.extend(validate_annotations(
        "spec.template.annotations",
        at(&spec, "/template/metadata/annotations"),
    ));
    check_template(&spec, "ReplicationController", &mut errs);
    errs
}

/// Upstream's ValidateReplicationControllerStatus.
pub fn validate_status(new: &Value) -> Vec<FieldError> {
    let null = Value::Null;
    let status = new.get("status").unwrap_or(&null);
    let count = |name: &str| status.get(name).and_then(Value::as_i64).unwrap_or(0);
    let mut errs = Vec::new();
    for name in [
        "replicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "observedGeneration",
    ] {
        errs.extend(non_negative_int(
            &format!("status.{name}"),
            at(status, &format!("/{name}")),
        ));
    }
    for name in ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"] {
        if count(name) > count("replicas") {
            errs.push(FieldError::invalid(
                format!("status.{name}"),
                count(name),
                "cannot be greater than status.replicas",
            ));
        }
    }
    if count("availableReplicas") > count("readyReplicas") {
        errs.push(FieldError::invalid(
            "status.availableReplicas",
            count("availableReplicas"),
            "cannot be greater than readyReplicas",
        ));
    }
    errs
}

impl Strategy for ReplicationControllerStrategy {
    fn default(&self, obj: &mut Value) {
        let labels = obj.pointer("/spec/template/metadata/labels").cloned();
        if let Some(labels) = labels.filter(Value::is_object) {
            if is_empty_map(obj.pointer("/spec/selector")) {
                if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.insert("selector".into(), labels.clone());
                }
            }
            if is_empty_map(obj.pointer("/metadata/labels")) {
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert("labels".into(), labels);
                }
            }
        }
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            if spec.get("replicas").is_none_or(Value::is_null) {
                spec.insert("replicas".into(), json!(1));
            }
        }
        default_template(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({"replicas": 0}));
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(validate_spec(obj));
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        validate_status(new)
    }

    fn warnings(&self, obj: &Value) -> Vec<String> {
        super::deprecated_master_warnings(obj.pointer("/spec/template/spec"), "spec.template.spec")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nginx() -> Value {
        json!({"metadata": {"name": "nginx", "namespace": "default"},
               "spec": {"replicas": 3,
                        "template": {"metadata": {"labels": {"app": "nginx"}},
                                     "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}})
    }

    #[test]
    fn defaults_take_the_template_labels() {
        let mut rc = nginx();
        ReplicationControllerStrategy.default(&mut rc);
        assert_eq!(rc["spec"]["selector"], json!({"app": "nginx"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "nginx"}));
        assert_eq!(rc["spec"]["replicas"], 3);
        assert_eq!(rc["spec"]["template"]["spec"]["restartPolicy"], "Always");
        // Given ones stay; replicas default to 1.
        let mut given = nginx();
        given["spec"]["selector"] = json!({"tier": "web"});
        given["metadata"]["labels"] = json!({"team": "a"});
        given["spec"].as_object_mut().unwrap().remove("replicas");
        ReplicationControllerStrategy.default(&mut given);
        assert_eq!(given["spec"]["selector"], json!({"tier": "web"}));
        assert_eq!(given["metadata"]["labels"], json!({"team": "a"}));
        assert_eq!(given["spec"]["replicas"], 1);
    }

    #[test]
    fn validation_as_upstream() {
        let errors = |f: &dyn Fn(&mut Value)| {
            let mut rc = nginx();
            f(&mut rc);
            ReplicationControllerStrategy.default(&mut rc);
            ReplicationControllerStrategy
                .validate_create(&rc)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        type Change<'a> = &'a dyn Fn(&mut Value);
        let cases: Vec<(Change, Vec<&str>)> = vec![
            (&|_| {}, vec![]),
            (
                &|rc| rc["spec"]["selector"] = json!({"app": "other"}),
                vec!["spec.template.metadata.labels: Invalid value: {\"app\":\"nginx\"}: `selector` does not match template `labels`"],
            ),
            (
                &|rc| rc["spec"]["replicas"] = json!(-1),
                vec!["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (
                &|rc| rc["spec"]["template"]["metadata"] = json!({}),
                vec!["spec.selector: Required value"],
            ),
            (
                &|rc| {
                    rc["spec"].as_object_mut().unwrap().remove("template");
                },
                vec!["spec.selector: Required value", "spec.template: Required value"],
            ),
            (
                &|rc| rc["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(5),
                vec!["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported"],
            ),
            (
                &|rc| rc["spec"]["template"]["spec"]["restartPolicy"] = json!("Never"),
                vec!["spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\""],
            ),
            (
                &|rc| rc["spec"]["minReadySeconds"] = json!(-3),
                vec!["spec.minReadySeconds: Invalid value: -3: must be greater than or equal to 0"],
            ),
        ];
        for (i, (change, want)) in cases.into_iter().enumerate() {
            assert_eq!(errors(change), want, "case {i}");
        }
        // The pod spec is validated as a pod's.
        let no_containers = errors(&|rc| rc["spec"]["template"]["spec"]["containers"] = json!([]));
        assert!(
            no_containers
                .iter()
                .any(|e| e.starts_with("spec.template.spec.containers: Required value")),
            "{no_containers:?}"
        );
    }

    #[test]
    fn status_rules() {
        let msgs = |status: Value| {
            validate_status(&json!({ "status": status }))
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert!(
            msgs(json!({"replicas": 2, "readyReplicas": 2, "availableReplicas": 2})).is_empty()
        );
        assert_eq!(
            msgs(json!({"replicas": 1, "readyReplicas": 2, "availableReplicas": 3})),
            vec![
                "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
                "status.availableReplicas: Invalid value: 3: cannot be greater than status.replicas",
                "status.availableReplicas: Invalid value: 3: cannot be greater than readyReplicas",
            ]
        );
    }
}

//! Deployments, ReplicaSets and DaemonSets: apps/v1 defaults, selector and template rules, and
//! the spec/status split.

use serde_json::{json, Value};
use tinykube_proto::labels::Selector;

use super::field::FieldError;
use super::names::{immutable, validate_labels, validate_object_meta, NameRule};
use super::podspec::{default_pod_spec, validate_pod_spec};
use super::Strategy;

/// Which workload.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Deployment,
    ReplicaSet,
    DaemonSet,
}

pub struct WorkloadStrategy(pub Workload);

fn default_template(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
        default_pod_spec(spec, false);
    }
}

fn validate_spec(kind: Workload, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    if kind != Workload::DaemonSet {
        if let Some(r) = spec.get("replicas").and_then(Value::as_i64) {
            if r < 0 {
                errs.push(FieldError::invalid(
                    "spec.replicas",
                    r,
                    "must be greater than or equal to 0",
                ));
            }
        }
    }
    let template_labels = spec.pointer("/template/metadata/labels").cloned();
    match spec.get("selector") {
        None | Some(Value::Null) => errs.push(FieldError::required("spec.selector", "")),
        Some(sel) => match serde_json::from_value(sel.clone())
            .ok()
            .map(|s| Selector::from_label_selector(&s))
        {
            Some(Ok(selector)) => {
                if selector.is_everything() {
                    errs.push(FieldError::invalid(
                        "spec.selector",
                        sel.clone(),
                        "empty selector is invalid for deployment",
                    ));
                }
                let labels: std::collections::BTreeMap<String, String> = template_labels
                    .as_ref()
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                            .collect()
                    })
                    .unwrap_or_default();
                if !selector.is_everything() && !selector.matches(&labels) {
                    errs.push(FieldError::invalid(
                        "spec.template.metadata.labels",
                        template_labels.clone().unwrap_or(json!({})),
                        "`selector` does not match template `labels`",
                    ));
                }
            }
            _ => errs.push(FieldError::invalid(
                "spec.selector",
                sel.clone(),
                "invalid label selector",
            )),
        },
    }
    errs.extend(validate_labels(
        "spec.template.metadata.labels",
        template_labels.as_ref(),
    ));
    let pod_spec = spec
        .pointer("/template/spec")
        .cloned()
        .unwrap_or(Value::Null);
    errs.extend(validate_pod_spec(&pod_spec, "spec.template.spec"));
    if let Some(p) = pod_spec.get("restartPolicy").and_then(Value::as_str) {
        if p != "Always" {
            errs.push(FieldError::not_supported(
                "spec.template.spec.restartPolicy",
                p,
                &["Always"],
            ));
        }
    }
    if kind == Workload::Deployment {
        if let Some(t) = spec.pointer("/strategy/type").and_then(Value::as_str) {
            if !["Recreate", "RollingUpdate"].contains(&t) {
                errs.push(FieldError::not_supported(
                    "spec.strategy.type",
                    t,
                    &["Recreate", "RollingUpdate"],
                ));
            }
            if t == "Recreate"
                && spec
                    .pointer("/strategy/rollingUpdate")
                    .is_some_and(|v| !v.is_null())
            {
                errs.push(FieldError::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
    }
    errs
}

/// The annotation in which apps/v1 carries a DaemonSet's template generation (upstream's
/// internal `spec.templateGeneration`).
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

fn template_generation(obj: &Value) -> Option<i64> {
    obj.pointer("/metadata/annotations")?
        .get(TEMPLATE_GENERATION)?
        .as_str()?
        .parse()
        .ok()
}

fn set_template_generation(obj: &mut Value, generation: i64) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    if let Some(a) = annotations.as_object_mut() {
        a.insert(TEMPLATE_GENERATION.into(), generation.to_string().into());
    }
}

impl Strategy for WorkloadStrategy {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        match self.0 {
            Workload::Deployment => {
                spec.entry("replicas").or_insert(json!(1));
                let strategy = spec.entry("strategy").or_insert_with(|| json!({}));
                if let Some(s) = strategy.as_object_mut() {
                    s.entry("type").or_insert(json!("RollingUpdate"));
                    if s.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                        let ru = s.entry("rollingUpdate").or_insert_with(|| json!({}));
                        if let Some(ru) = ru.as_object_mut() {
                            ru.entry("maxUnavailable").or_insert(json!("25%"));
                            ru.entry("maxSurge").or_insert(json!("25%"));
                        }
                    }
                }
                spec.entry("revisionHistoryLimit").or_insert(json!(10));
                spec.entry("progressDeadlineSeconds").or_insert(json!(600));
            }
            Workload::ReplicaSet => {
                spec.entry("replicas").or_insert(json!(1));
            }
            Workload::DaemonSet => {
                let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
                if let Some(s) = strategy.as_object_mut() {
                    s.entry("type").or_insert(json!("RollingUpdate"));
                    if s.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                        let ru = s.entry("rollingUpdate").or_insert_with(|| json!({}));
                        if let Some(ru) = ru.as_object_mut() {
                            ru.entry("maxUnavailable").or_insert(json!(1));
                            ru.entry("maxSurge").or_insert(json!(0));
                        }
                    }
                }
                spec.entry("revisionHistoryLimit").or_insert(json!(10));
            }
        }
        default_template(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({}));
        }
        if self.0 == Workload::DaemonSet {
            if let Some(m) = obj.as_object_mut() {
                m.insert(
                    "status".into(),
                    json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0}),
                );
            }
            let given = template_generation(obj).filter(|&g| g >= 1);
            set_template_generation(obj, given.unwrap_or(1));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if self.0 == Workload::DaemonSet {
            // Server-owned, as upstream's spec.templateGeneration: kept from the stored object,
            // one more when the pod template changes.
            let mut generation = template_generation(old).unwrap_or(1);
            if new.pointer("/spec/template") != old.pointer("/spec/template") {
                generation += 1;
            }
            set_template_generation(new, generation);
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(validate_spec(self.0, obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        errs.extend(immutable(
            "spec.selector",
            new.pointer("/spec/selector"),
            old.pointer("/spec/selector"),
        ));
        errs
    }

    fn warnings(&self, obj: &Value) -> Vec<String> {
        super::deprecated_master_warnings(obj.pointer("/spec/template/spec"), "spec.template.spec")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> Value {
        json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.14.2"}]}}}})
    }

    #[test]
    fn deployment_defaults_match_upstream() {
        let mut d = deployment();
        WorkloadStrategy(Workload::Deployment).default(&mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert!(d["spec"]["template"]["spec"]
            .get("enableServiceLinks")
            .is_none());
    }

    #[test]
    fn daemonset_template_generation_is_server_owned() {
        let s = WorkloadStrategy(Workload::DaemonSet);
        let generation = |o: &Value| {
            o["metadata"]["annotations"]["deprecated.daemonset.template.generation"].clone()
        };
        let mut ds = deployment();
        s.default(&mut ds);
        s.prepare_for_create(&mut ds);
        assert_eq!(generation(&ds), "1");
        // Another spec field: same template generation; a client's value is ignored.
        let mut strategy = ds.clone();
        strategy["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
        strategy["metadata"]["annotations"] = json!({"x": "y"});
        s.default(&mut strategy);
        s.prepare_for_update(&mut strategy, &ds);
        assert_eq!(generation(&strategy), "1");
        assert_eq!(strategy["metadata"]["annotations"]["x"], "y");
        // A template change: one more.
        let mut image = strategy.clone();
        image["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.16".into();
        s.default(&mut image);
        s.prepare_for_update(&mut image, &strategy);
        assert_eq!(generation(&image), "2");
        // Not for other workloads.
        let mut d = deployment();
        WorkloadStrategy(Workload::Deployment).prepare_for_create(&mut d);
        assert!(d["metadata"].get("annotations").is_none());
    }

    #[test]
    fn selectors_must_match_and_stay() {
        let s = WorkloadStrategy(Workload::Deployment);
        assert!(s.validate_create(&deployment()).is_empty());
        let mut typo = deployment();
        typo["spec"]["template"]["metadata"] = json!({"lables": {"app": "x"}});
        let errs = s.validate_create(&typo);
        assert!(
            errs[0]
                .to_string()
                .contains("`selector` does not match template `labels`"),
            "{errs:?}"
        );
        let mut changed = deployment();
        changed["spec"]["selector"]["matchLabels"]["app"] = "y".into();
        changed["spec"]["template"]["metadata"]["labels"]["app"] = "y".into();
        assert!(s
            .validate_update(&changed, &deployment())
            .iter()
            .any(|e| e.field == "spec.selector"));
    }
}

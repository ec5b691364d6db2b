//! Deployments, ReplicaSets and DaemonSets: apps/v1 defaults, the DaemonSet's template
//! generation, and the strategy that runs the apps validation (`apps`, `apps_status`).

use serde_json::{json, Map, Value};

use super::apps::{selector_unchanged, validate_spec};
use super::apps_status::validate_status;
use super::field::FieldError;
use super::names::{validate_object_meta, NameRule};
use super::podspec::default_pod_spec;
use super::Strategy;

/// Which workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Deployment,
    ReplicaSet,
    DaemonSet,
}

pub struct WorkloadStrategy(pub Workload);

/// The pod template's defaults. Upstream defaults requests from limits only in Pods, never in
/// templates: what the pod spec defaults add to a template's requests is taken back.
pub(super) fn default_template(obj: &mut Value) {
    default_pod_template(obj, "/spec/template/spec");
}

/// The defaults of the template pod spec at `pointer` (the batch kinds' templates too).
pub(super) fn default_pod_template(obj: &mut Value, pointer: &str) {
    const LISTS: [&str; 2] = ["initContainers", "containers"];
    let Some(spec) = obj.pointer_mut(pointer) else {
        return;
    };
    let given: Vec<Vec<Option<Value>>> = LISTS
        .iter()
        .map(|list| {
            let containers = spec.get(*list).and_then(Value::as_array);
            containers
                .into_iter()
                .flatten()
                .map(|c| c.pointer("/resources/requests").cloned())
                .collect()
        })
        .collect();
    default_pod_spec(spec, false);
    for (list, before) in LISTS.iter().zip(given) {
        let containers = spec.get_mut(*list).and_then(Value::as_array_mut);
        for (c, requests) in containers.into_iter().flatten().zip(before) {
            let Some(resources) = c.get_mut("resources").and_then(Value::as_object_mut) else {
                continue;
            };
            match requests {
                Some(r) => resources.insert("requests".into(), r),
                None => resources.remove("requests"),
            };
        }
    }
}

/// An object field's value, created as `{}` when absent, null or not an object.
pub(super) fn object_at<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> &'a mut Map<String, Value> {
    let v = m.entry(key).or_insert_with(|| json!({}));
    if !v.is_object() {
        *v = json!({});
    }
    v.as_object_mut().expect("made an object above")
}

/// Set `key` unless it has a value (absent, null and `""` have none).
pub(super) fn default_to(m: &mut Map<String, Value>, key: &str, value: Value) {
    if m.get(key).is_none_or(|v| v.is_null() || v == "") {
        m.insert(key.into(), value);
    }
}

/// A rolling update strategy's defaults (upstream's SetDefaults_Deployment and _DaemonSet).
fn default_strategy(spec: &mut Map<String, Value>, key: &str, unavailable: Value, surge: Value) {
    let strategy = object_at(spec, key);
    default_to(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
        let ru = object_at(strategy, "rollingUpdate");
        default_to(ru, "maxUnavailable", unavailable);
        default_to(ru, "maxSurge", surge);
    }
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
                default_to(spec, "replicas", json!(1));
                default_strategy(spec, "strategy", json!("25%"), json!("25%"));
                default_to(spec, "revisionHistoryLimit", json!(10));
                default_to(spec, "progressDeadlineSeconds", json!(600));
            }
            Workload::ReplicaSet => default_to(spec, "replicas", json!(1)),
            Workload::DaemonSet => {
                default_strategy(spec, "updateStrategy", json!(1), json!(0));
                default_to(spec, "revisionHistoryLimit", json!(10));
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
        errs.extend(selector_unchanged(new, old));
        errs
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        validate_status(self.0, new, old)
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
    fn templates_get_no_requests_from_limits() {
        let s = WorkloadStrategy(Workload::Deployment);
        let mut d = deployment();
        d["spec"]["template"]["spec"]["containers"][0]["resources"] =
            json!({"limits": {"memory": "1Gi"}});
        d["spec"]["template"]["spec"]["initContainers"] = json!([{"name": "i", "image": "busybox",
            "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}}]);
        s.default(&mut d);
        let template = &d["spec"]["template"]["spec"];
        assert_eq!(
            template["containers"][0]["resources"],
            json!({"limits": {"memory": "1Gi"}})
        );
        assert_eq!(
            template["initContainers"][0]["resources"]["requests"],
            json!({"cpu": "500m"})
        );
        assert!(s.validate_create(&d).is_empty());
    }
}

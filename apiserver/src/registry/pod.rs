//! Pods: defaults, the initial status, validation of a new pod (metadata, pod annotations, the
//! spec, pod-only rules), what an update may change (`update`) and writes through `pods/status`
//! (`status`).

mod annotations;
mod status;
mod update;

use serde_json::{json, Value};

use super::field::FieldError;
use super::names::{validate_object_meta, NameRule};
use super::podspec::{
    default_pod_spec, default_tolerations, qos_class, validate_pod_only, validate_spec,
};
use super::Strategy;

pub struct PodStrategy;

/// Upstream's validatePodMetadataAndSpec: metadata, the pod's annotations (`old` tells whether
/// an invalid deletion cost was already there), the spec and the pod-only rules.
fn validate_pod(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = validate_object_meta(obj, NameRule::Subdomain);
    errs.extend(annotations::validate(obj, old));
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    errs.extend(validate_spec(spec, "spec", true));
    errs.extend(validate_pod_only(spec, "spec"));
    errs
}

impl Strategy for PodStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec") {
            default_pod_spec(spec, true);
            default_tolerations(spec);
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        let qos = obj.get("spec").map(qos_class).unwrap_or("BestEffort");
        if let Some(m) = obj.as_object_mut() {
            m.insert(
                "status".into(),
                json!({"phase": "Pending", "qosClass": qos}),
            );
        }
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value, _now: super::Now) {
        status::prepare(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_pod(obj, None);
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        if spec
            .get("ephemeralContainers")
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty())
        {
            errs.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                "cannot be set on create",
            ));
        }
        let gated = spec
            .get("schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty());
        if gated
            && spec
                .get("nodeName")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty())
        {
            errs.push(FieldError::forbidden(
                "spec.nodeName",
                "cannot be set until all schedulingGates have been cleared",
            ));
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_pod(new, Some(old));
        errs.extend(annotations::validate_update(new, old));
        errs.extend(update::validate(new, old));
        super::field::dedup(errs)
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        status::validate(new, old)
    }

    fn warnings(&self, obj: &Value) -> Vec<String> {
        super::deprecated_master_warnings(obj.get("spec"), "spec")
    }
}

#[cfg(test)]
mod tests {
    use super::update::MUTABLE_MESSAGE;
    use super::*;

    fn pod() -> Value {
        let mut p = json!({"metadata": {"name": "p", "resourceVersion": "1"}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}], "nodeName": "w0"}});
        PodStrategy.default(&mut p);
        PodStrategy.prepare_for_create(&mut p);
        p
    }

    fn shown(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn defaulted_pods_are_valid() {
        assert_eq!(
            shown(&PodStrategy.validate_create(&pod())),
            Vec::<String>::new()
        );
    }

    #[test]
    fn updates_as_upstream() {
        let old = pod();
        type Case = (&'static str, Box<dyn Fn(&mut Value)>, Vec<String>);
        let cases: Vec<Case> = vec![
            ("image", Box::new(|p| p["spec"]["containers"][0]["image"] = "nginx:2".into()), vec![]),
            ("deadline set", Box::new(|p| p["spec"]["activeDeadlineSeconds"] = 30.into()), vec![]),
            ("toleration added", Box::new(|p| p["spec"]["tolerations"].as_array_mut().unwrap().push(json!({"key": "k", "operator": "Exists"}))), vec![]),
            ("toleration seconds", Box::new(|p| p["spec"]["tolerations"][0]["tolerationSeconds"] = 60.into()), vec![]),
            ("restart policy", Box::new(|p| p["spec"]["restartPolicy"] = "Never".into()), vec![format!("spec: Forbidden: {MUTABLE_MESSAGE}\n- spec.restartPolicy: \"Always\"\n+ spec.restartPolicy: \"Never\"")]),
            ("node", Box::new(|p| p["spec"]["nodeName"] = "w1".into()), vec![format!("spec: Forbidden: {MUTABLE_MESSAGE}\n- spec.nodeName: \"w0\"\n+ spec.nodeName: \"w1\"")]),
            ("container added", Box::new(|p| p["spec"]["containers"].as_array_mut().unwrap().push(json!({"name": "d", "image": "i", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}))), vec!["spec.containers: Forbidden: pod updates may not add or remove containers".into()]),
            ("toleration changed", Box::new(|p| p["spec"]["tolerations"][0]["operator"] = "Equal".into()), vec!["spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds".into()]),
            ("image blank", Box::new(|p| p["spec"]["containers"][0]["image"] = " nginx".into()), vec!["spec.containers[0].image: Invalid value: \" nginx\": must not have leading or trailing whitespace".into()]),
        ];
        for (what, change, want) in cases {
            let mut new = old.clone();
            change(&mut new);
            PodStrategy.default(&mut new);
            assert_eq!(
                shown(&PodStrategy.validate_update(&new, &old)),
                want,
                "{what}"
            );
        }
        let mut with_deadline = old.clone();
        with_deadline["spec"]["activeDeadlineSeconds"] = 30.into();
        let mut longer = with_deadline.clone();
        longer["spec"]["activeDeadlineSeconds"] = 60.into();
        assert_eq!(
            shown(&PodStrategy.validate_update(&longer, &with_deadline)),
            ["spec.activeDeadlineSeconds: Invalid value: 60: must be less than or equal to previous value"]
        );
        let mut cleared = with_deadline.clone();
        cleared["spec"]
            .as_object_mut()
            .unwrap()
            .remove("activeDeadlineSeconds");
        assert_eq!(
            shown(&PodStrategy.validate_update(&cleared, &with_deadline)),
            ["spec.activeDeadlineSeconds: Invalid value: \"null\": must not update from a positive integer to nil value"]
        );
    }

    #[test]
    fn creates_forbid_ephemeral_containers_and_gated_nodes() {
        let mut p = pod();
        p["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox"}]);
        p["spec"]["schedulingGates"] = json!([{"name": "example.com/wait"}]);
        assert_eq!(
            shown(&PodStrategy.validate_create(&p)),
            [
                "spec.ephemeralContainers: Forbidden: cannot be set on create",
                "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"
            ]
        );
    }

    #[test]
    fn status_is_split_from_spec() {
        let old = pod();
        assert_eq!(
            old["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
        let mut new = old.clone();
        new["status"]["phase"] = "Running".into();
        new["spec"]["containers"][0]["image"] = "other".into();
        let mut main = new.clone();
        crate::registry::keep_status(&mut main, &old);
        assert_eq!(main["status"]["phase"], "Pending");
        let mut status = new.clone();
        crate::registry::keep_spec_take_status(&mut status, &old);
        assert_eq!(status["status"]["phase"], "Running");
        assert_eq!(status["spec"]["containers"][0]["image"], "nginx:1");
    }
}

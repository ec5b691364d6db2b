//! apps/v1 spec validation, as upstream's apps validation: Deployments, ReplicaSets and
//! DaemonSets (selector and template, counts, strategies), the pod template they share, and the
//! selector that may not change on update. Status rules are in `apps_status`.

use serde_json::{json, Value};
use tinykube_proto::labels::Selector;

use super::field::FieldError;
use super::names::{immutable, validate_labels};
use super::podspec::validate_pod_spec;
use super::rules::{
    int_or_percent, int_or_string_text, label_selector, non_negative_int, percent_value,
    resource_requirements,
};
use super::semantic;
use super::workloads::Workload;

/// A field of `v` at a JSON pointer, `null` read as absent.
pub(super) fn at<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    v.pointer(pointer).filter(|v| !v.is_null())
}

/// What a workload's selector is, once checked.
enum Chosen {
    /// None given: upstream's LabelSelectorAsSelector(nil), which matches nothing.
    Nothing,
    /// A selector that could be built (the empty one matches everything).
    Selector(Selector),
    /// One that could not be.
    Invalid,
}

/// Upstream's ValidateLabelSelector, the "empty selector" rule and LabelSelectorAsSelector.
fn check_selector(spec: &Value, kind: Workload, errs: &mut Vec<FieldError>) -> Chosen {
    let Some(sel) = at(spec, "/selector") else {
        if kind != Workload::DaemonSet {
            errs.push(FieldError::required("spec.selector", ""));
        }
        return Chosen::Nothing;
    };
    let problems = label_selector("spec.selector", Some(sel));
    let is_empty = ["matchLabels", "matchExpressions"]
        .iter()
        .all(|k| semantic::equal(sel.get(*k), None));
    let built = serde_json::from_value(sel.clone())
        .ok()
        .and_then(|s| Selector::from_label_selector(&s).ok())
        .filter(|_| problems.is_empty());
    errs.extend(problems);
    if is_empty {
        let which = if kind == Workload::DaemonSet {
            "daemonset"
        } else {
            // Upstream's ReplicaSet rule says "deployment" too.
            "deployment"
        };
        errs.push(FieldError::invalid(
            "spec.selector",
            sel.clone(),
            format!("empty selector is invalid for {which}"),
        ));
    }
    match built {
        Some(s) => Chosen::Selector(s),
        None => Chosen::Invalid,
    }
}

/// The template's labels must be selected (a selector that matches everything needs no check).
fn check_match(spec: &Value, chosen: &Chosen, errs: &mut Vec<FieldError>) {
    match chosen {
        Chosen::Nothing => errs.push(not_selected(spec)),
        Chosen::Selector(s) => require_selected(spec, s, errs),
        Chosen::Invalid => {}
    }
}

/// Upstream's "`selector` does not match template `labels`" unless `selector` selects the
/// labels of the template in `spec` (or everything). Shared by every kind with a pod template.
pub(super) fn require_selected(spec: &Value, selector: &Selector, errs: &mut Vec<FieldError>) {
    let set: std::collections::BTreeMap<String, String> = at(spec, "/template/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    if !selector.is_everything() && !selector.matches(&set) {
        errs.push(not_selected(spec));
    }
}

fn not_selected(spec: &Value) -> FieldError {
    FieldError::invalid(
        "spec.template.metadata.labels",
        at(spec, "/template/metadata/labels")
            .cloned()
            .unwrap_or(json!({})),
        "`selector` does not match template `labels`",
    )
}

/// Upstream's ValidatePodTemplateSpec of the template at `path` (`spec.template`): its labels,
/// its pod spec (resources included). Shared with the batch kinds' templates.
pub(super) fn pod_template(template: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = validate_labels(
        &format!("{path}.labels"),
        template.and_then(|t| at(t, "/metadata/labels")),
    );
    let pod_spec = template
        .and_then(|t| at(t, "/spec"))
        .cloned()
        .unwrap_or(json!({}));
    let mut pod_errs = validate_pod_spec(&pod_spec, &format!("{path}.spec"));
    // The container resources, as the pod spec validation may not check them yet (each error once).
    for list in ["initContainers", "containers"] {
        let containers = pod_spec.get(list).and_then(Value::as_array);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            let path = format!("{path}.spec.{list}[{i}].resources");
            for e in resource_requirements(&path, c.get("resources")) {
                if !pod_errs.contains(&e) {
                    pod_errs.push(e);
                }
            }
        }
    }
    errs.extend(pod_errs);
    errs
}

/// Upstream's ValidatePodTemplateSpec for a workload, with its rules for workloads: the template's
/// labels, its pod spec (resources included), restartPolicy Always and no activeDeadlineSeconds
/// (`owner` names the kind in that message).
pub(super) fn check_template(spec: &Value, owner: &str, errs: &mut Vec<FieldError>) {
    errs.extend(pod_template(at(spec, "/template"), "spec.template"));
    let pod_spec = at(spec, "/template/spec").cloned().unwrap_or(json!({}));
    if let Some(p) = pod_spec.get("restartPolicy").and_then(Value::as_str) {
        if p != "Always" {
            errs.push(FieldError::not_supported(
                "spec.template.spec.restartPolicy",
                p,
                &["Always"],
            ));
        }
    }
    if at(&pod_spec, "/activeDeadlineSeconds").is_some() {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            format!("activeDeadlineSeconds in {owner} is not Supported"),
        ));
    }
}

/// Upstream's getIntOrPercentValue: the number, the percentage's number, or a string's
/// `Atoi` (0 when it is neither, so `-5%` counts as 0).
pub(super) fn int_or_percent_value(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => percent_value(s).unwrap_or_else(|| s.parse().unwrap_or(0)),
        _ => 0,
    }
}

/// The "not more than 100%" error of an integer-or-percent, apart from its other errors.
pub(super) fn over_100(field: &str, v: Option<&Value>) -> Vec<FieldError> {
    let others = int_or_percent(field, v, true);
    int_or_percent(field, v, false)
        .into_iter()
        .filter(|e| !others.contains(e))
        .collect()
}

fn deployment_strategy(spec: &Value, errs: &mut Vec<FieldError>) {
    let strategy = at(spec, "/strategy").cloned().unwrap_or(json!({}));
    let rolling = at(&strategy, "/rollingUpdate");
    match strategy.get("type").and_then(Value::as_str).unwrap_or("") {
        "Recreate" => {
            if rolling.is_some() {
                errs.push(FieldError::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => {
            let Some(ru) = rolling else {
                errs.push(FieldError::required(
                    "spec.strategy.rollingUpdate",
                    "this should be defaulted and never be nil",
                ));
                return;
            };
            let path = "spec.strategy.rollingUpdate";
            let (mu_path, ms_path) = (format!("{path}.maxUnavailable"), format!("{path}.maxSurge"));
            let (mu, ms) = (at(ru, "/maxUnavailable"), at(ru, "/maxSurge"));
            errs.extend(int_or_percent(&mu_path, mu, true));
            errs.extend(int_or_percent(&ms_path, ms, true));
            if int_or_percent_value(mu) == 0 && int_or_percent_value(ms) == 0 {
                errs.push(FieldError::invalid_go(
                    mu_path.as_str(),
                    int_or_string_text(mu),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
            errs.extend(over_100(&mu_path, mu));
        }
        _ => errs.push(FieldError::not_supported(
            "spec.strategy",
            strategy.clone(),
            &["Recreate", "RollingUpdate"],
        )),
    }
}

fn daemon_set_strategy(spec: &Value, errs: &mut Vec<FieldError>) {
    let strategy = at(spec, "/updateStrategy").cloned().unwrap_or(json!({}));
    match strategy.get("type").and_then(Value::as_str).unwrap_or("") {
        "OnDelete" => {}
        "RollingUpdate" => {
            let Some(ru) = at(&strategy, "/rollingUpdate") else {
                errs.push(FieldError::required(
                    "spec.updateStrategy.rollingUpdate",
                    "",
                ));
                return;
            };
            let path = "spec.updateStrategy.rollingUpdate";
            let (mu_path, ms_path) = (format!("{path}.maxUnavailable"), format!("{path}.maxSurge"));
            let (mu, ms) = (at(ru, "/maxUnavailable"), at(ru, "/maxSurge"));
            errs.extend(int_or_percent(&mu_path, mu, true));
            errs.extend(int_or_percent(&ms_path, ms, true));
            errs.extend(over_100(&mu_path, mu));
            errs.extend(over_100(&ms_path, ms));
            match (int_or_percent_value(mu) != 0, int_or_percent_value(ms) != 0) {
                (true, true) => errs.push(FieldError::invalid_go(
                    ms_path.as_str(),
                    int_or_string_text(ms),
                    "may not be set when maxUnavailable is non-zero",
                )),
                (false, false) => errs.push(FieldError::required(
                    mu_path.as_str(),
                    "cannot be 0 when maxSurge is 0",
                )),
                _ => {}
            }
        }
        _ => errs.push(FieldError::not_supported(
            "spec.updateStrategy",
            strategy.clone(),
            &["RollingUpdate", "OnDelete"],
        )),
    }
}

/// The spec of a workload, as upstream's ValidateDeploymentSpec, ValidateReplicaSetSpec and
/// ValidateDaemonSetSpec, in their order.
pub fn validate_spec(kind: Workload, obj: &Value) -> Vec<FieldError> {
    let spec = at(obj, "/spec").cloned().unwrap_or(json!({}));
    let field = |name: &str| at(&spec, &format!("/{name}"));
    let mut errs = Vec::new();
    if kind != Workload::DaemonSet {
        errs.extend(non_negative_int("spec.replicas", field("replicas")));
    }
    if kind == Workload::ReplicaSet {
        errs.extend(non_negative_int(
            "spec.minReadySeconds",
            field("minReadySeconds"),
        ));
    }
    let chosen = check_selector(&spec, kind, &mut errs);
    match (&chosen, kind) {
        // An unusable selector: upstream checks no template against it.
        (Chosen::Invalid, Workload::Deployment | Workload::ReplicaSet) => {
            errs.push(FieldError::invalid(
                "spec.selector",
                field("selector").cloned().unwrap_or(Value::Null),
                "invalid label selector",
            ));
        }
        _ => {
            check_match(&spec, &chosen, &mut errs);
            let owner = if kind == Workload::DaemonSet {
                "DaemonSet"
            } else {
                "ReplicaSet"
            };
            check_template(&spec, owner, &mut errs);
        }
    }
    match kind {
        Workload::Deployment => {
            deployment_strategy(&spec, &mut errs);
            errs.extend(non_negative_int(
                "spec.minReadySeconds",
                field("minReadySeconds"),
            ));
            errs.extend(non_negative_int(
                "spec.revisionHistoryLimit",
                field("revisionHistoryLimit"),
            ));
            if let Some(deadline) = field("progressDeadlineSeconds") {
                let path = "spec.progressDeadlineSeconds";
                errs.extend(non_negative_int(path, Some(deadline)));
                let min_ready = field("minReadySeconds").and_then(Value::as_i64);
                if deadline.as_i64() <= Some(min_ready.unwrap_or(0)) {
                    errs.push(FieldError::invalid(
                        path,
                        deadline.clone(),
                        "must be greater than minReadySeconds",
                    ));
                }
            }
        }
        Workload::DaemonSet => {
            errs.extend(non_negative_int(
                "spec.minReadySeconds",
                field("minReadySeconds"),
            ));
            daemon_set_strategy(&spec, &mut errs);
            errs.extend(non_negative_int(
                "spec.revisionHistoryLimit",
                field("revisionHistoryLimit"),
            ));
        }
        Workload::ReplicaSet => {}
    }
    errs
}

/// apps/v1 selectors never change (upstream's strategies, for every version but the old betas).
pub fn selector_unchanged(new: &Value, old: &Value) -> Option<FieldError> {
    let (n, o) = (at(new, "/spec/selector"), at(old, "/spec/selector"));
    if semantic::equal(n, o) {
        return None;
    }
    immutable(
        "spec.selector",
        Some(n.unwrap_or(&Value::Null)),
        Some(o.unwrap_or(&Value::Null)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::workloads::WorkloadStrategy;
    use crate::registry::Strategy;

    fn workload(kind: Workload) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
               "kind": format!("{kind:?}")})
    }

    /// Changes to a valid workload: (JSON pointer, value; null removes).
    type Changes<'a> = Vec<(&'a str, Value)>;

    /// The errors of `kind` with `changes` (pointer, value; null removes) applied, defaulted
    /// first as a create would be.
    fn errors(kind: Workload, changes: &[(&str, Value)]) -> Vec<String> {
        let mut obj = workload(kind);
        for (pointer, v) in changes {
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            let target = obj.pointer_mut(parent).unwrap().as_object_mut().unwrap();
            match v {
                Value::Null => target.remove(key),
                v => target.insert(key.to_string(), v.clone()),
            };
        }
        let s = WorkloadStrategy(kind);
        s.default(&mut obj);
        s.validate_create(&obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn deployments_as_upstream() {
        use Workload::Deployment as D;
        let no_match = "spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`";
        let cases: Vec<(Changes, Vec<&str>)> = vec![
            (vec![], vec![]),
            (vec![("/spec/replicas", json!(-1))], vec!["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]),
            (vec![("/spec/template/metadata/labels", json!({"app": "other"}))], vec![no_match]),
            (
                vec![("/spec/selector", Value::Null)],
                vec![
                    "spec.selector: Required value",
                    "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
                ],
            ),
            (vec![("/spec/selector", json!({}))], vec!["spec.selector: Invalid value: {}: empty selector is invalid for deployment"]),
            (
                vec![("/spec/selector", json!({"matchExpressions": [{"key": "app", "operator": "In"}]}))],
                vec![
                    "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                    "spec.selector: Invalid value: {\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\"}]}: invalid label selector",
                ],
            ),
            (vec![("/spec/template/spec/restartPolicy", json!("Never"))], vec!["spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\""]),
            (vec![("/spec/template/spec/activeDeadlineSeconds", json!(10))], vec!["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"]),
            (
                vec![("/spec/template/spec/containers/0/resources", json!({"limits": {"memory": "-5Gi"}}))],
                vec!["spec.template.spec.containers[0].resources.limits[memory]: Invalid value: \"-5Gi\": must be greater than or equal to 0"],
            ),
            (vec![("/spec/minReadySeconds", json!(-1))], vec!["spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"]),
            (vec![("/spec/revisionHistoryLimit", json!(-2))], vec!["spec.revisionHistoryLimit: Invalid value: -2: must be greater than or equal to 0"]),
            (vec![("/spec/revisionHistoryLimit", json!(0))], vec![]),
            (
                vec![("/spec/minReadySeconds", json!(600)), ("/spec/progressDeadlineSeconds", json!(600))],
                vec!["spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"],
            ),
            (vec![("/spec/strategy", json!({"type": "Recreate"}))], vec![]),
            (
                vec![("/spec/strategy", json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}))],
                vec!["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"],
            ),
            (
                vec![("/spec/strategy", json!({"type": "Rolling"}))],
                vec!["spec.strategy: Unsupported value: {\"type\":\"Rolling\"}: supported values: \"Recreate\", \"RollingUpdate\""],
            ),
            (
                vec![("/spec/strategy", json!({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}))],
                vec!["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0%: may not be 0 when `maxSurge` is 0"],
            ),
            (
                vec![("/spec/strategy", json!({"rollingUpdate": {"maxUnavailable": "110%"}}))],
                vec!["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 110%: must not be greater than 100%"],
            ),
            (vec![("/spec/strategy", json!({"rollingUpdate": {"maxSurge": "200%"}}))], vec![]),
            (
                vec![("/spec/strategy", json!({"rollingUpdate": {"maxSurge": -1, "maxUnavailable": 1}}))],
                vec!["spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (vec![("/spec/strategy", json!({"type": "", "rollingUpdate": {"maxSurge": null}}))], vec![]),
        ];
        for (changes, want) in cases {
            assert_eq!(errors(D, &changes), want, "{changes:?}");
        }
    }

    #[test]
    fn replica_sets_and_daemon_sets_as_upstream() {
        use Workload::{DaemonSet as DS, ReplicaSet as RS};
        let cases: Vec<(Workload, Changes, Vec<&str>)> = vec![
            (RS, vec![], vec![]),
            (RS, vec![("/spec/replicas", json!(-3))], vec!["spec.replicas: Invalid value: -3: must be greater than or equal to 0"]),
            (RS, vec![("/spec/selector", json!({"matchLabels": {}}))], vec!["spec.selector: Invalid value: {\"matchLabels\":{}}: empty selector is invalid for deployment"]),
            (RS, vec![("/spec/template/metadata/labels", json!({"app": "web", "bad key": "x"}))], vec!["spec.template.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
            (DS, vec![], vec![]),
            (
                DS,
                vec![("/spec/selector", Value::Null)],
                vec!["spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"],
            ),
            (DS, vec![("/spec/selector", json!({}))], vec!["spec.selector: Invalid value: {}: empty selector is invalid for daemonset"]),
            (DS, vec![("/spec/template/spec/activeDeadlineSeconds", json!(5))], vec!["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"]),
            (DS, vec![("/spec/updateStrategy", json!({"type": "OnDelete"}))], vec![]),
            (
                DS,
                vec![("/spec/updateStrategy", json!({"type": "Sometimes"}))],
                vec!["spec.updateStrategy: Unsupported value: {\"type\":\"Sometimes\"}: supported values: \"RollingUpdate\", \"OnDelete\""],
            ),
            (
                DS,
                vec![("/spec/updateStrategy", json!({"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}))],
                vec!["spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"],
            ),
            (
                DS,
                vec![("/spec/updateStrategy", json!({"rollingUpdate": {"maxUnavailable": 1, "maxSurge": "10%"}}))],
                vec!["spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 10%: may not be set when maxUnavailable is non-zero"],
            ),
            (
                DS,
                vec![("/spec/updateStrategy", json!({"rollingUpdate": {"maxUnavailable": 0, "maxSurge": "101%"}}))],
                vec!["spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 101%: must not be greater than 100%"],
            ),
            (DS, vec![("/spec/minReadySeconds", json!(-1))], vec!["spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"]),
        ];
        for (kind, changes, want) in cases {
            assert_eq!(errors(kind, &changes), want, "{kind:?} {changes:?}");
        }
    }

    #[test]
    fn selectors_never_change() {
        let old = workload(Workload::Deployment);
        let mut same = old.clone();
        same["spec"]["selector"]["matchExpressions"] = json!([]);
        assert!(selector_unchanged(&same, &old).is_none());
        let mut changed = old.clone();
        changed["spec"]["selector"] = json!({"matchLabels": {"app": "api"}});
        assert_eq!(
            selector_unchanged(&changed, &old).unwrap().to_string(),
            "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"api\"}}: field is immutable"
        );
    }
}

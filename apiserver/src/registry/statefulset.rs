//! apps/v1 StatefulSets, as upstream's SetDefaults_StatefulSet, ValidateStatefulSet,
//! ValidateStatefulSetUpdate and ValidateStatefulSetStatusUpdate: the pod management policy,
//! the update strategy (partition, maxUnavailable), the claim retention policy, the selector
//! against the template's labels, and the spec fields that may change after creation.
//!
//! As upstream, the template's pod spec is not validated here (only its labels, annotations,
//! restartPolicy and activeDeadlineSeconds); a pod the template cannot make is refused when
//! the controller creates it.

use serde_json::{json, Map, Value};
use tinykube_proto::labels::Selector;

use super::apps::{at, int_or_percent_value, over_100, require_selected};
use super::field::FieldError;
use super::meta::validate_annotations;
use super::names::{validate_labels, validate_object_meta, NameRule};
use super::rules::{int_or_percent, int_or_string_text, label_selector, non_negative_int};
use super::semantic;
use super::workloads::{default_template, default_to, object_at};
use super::Strategy;

pub struct StatefulSetStrategy;

/// The spec fields an update may change (upstream's ValidateStatefulSetUpdate).
const MUTABLE: [&str; 6] = [
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

const FORBIDDEN_UPDATE: &str = "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";

/// A volume claim template's defaults (upstream's SetDefaults_PersistentVolumeClaim and
/// SetDefaults_PersistentVolumeClaimSpec): phase Pending, volumeMode Filesystem.
fn default_claim_template(claim: &mut Value) {
    let Some(m) = claim.as_object_mut() else {
        return;
    };
    default_to(object_at(m, "spec"), "volumeMode", json!("Filesystem"));
    default_to(object_at(m, "status"), "phase", json!("Pending"));
}

fn default_spec(spec: &mut Map<String, Value>) {
    default_to(spec, "podManagementPolicy", json!("OrderedReady"));
    let strategy = object_at(spec, "updateStrategy");
    if strategy.get("type").is_none_or(|t| t.is_null() || t == "") {
        strategy.insert("type".into(), json!("RollingUpdate"));
        if strategy.get("rollingUpdate").is_none_or(Value::is_null) {
            strategy.insert("rollingUpdate".into(), json!({}));
        }
    }
    let rolling = strategy.get("type") == Some(&json!("RollingUpdate"));
    if let Some(ru) = strategy
        .get_mut("rollingUpdate")
        .and_then(Value::as_object_mut)
        .filter(|_| rolling)
    {
        if ru.get("partition").is_none_or(Value::is_null) {
            ru.insert("partition".into(), json!(0));
        }
    }
    let retention = object_at(spec, "persistentVolumeClaimRetentionPolicy");
    default_to(retention, "whenDeleted", json!("Retain"));
    default_to(retention, "whenScaled", json!("Retain"));
    if spec.get("replicas").is_none_or(Value::is_null) {
        spec.insert("replicas".into(), json!(1));
    }
    if spec.get("revisionHistoryLimit").is_none_or(Value::is_null) {
        spec.insert("revisionHistoryLimit".into(), json!(10));
    }
    let claims = spec
        .get_mut("volumeClaimTemplates")
        .and_then(Value::as_array_mut);
    for claim in claims.into_iter().flatten() {
        default_claim_template(claim);
    }
}

/// Upstream's validateRollingUpdateStatefulSet.
fn rolling_update(ru: &Value, errs: &mut Vec<FieldError>) {
    let path = "spec.updateStrategy.rollingUpdate";
    errs.extend(non_negative_int(
        &format!("{path}.partition"),
        at(ru, "/partition"),
    ));
    let Some(mu) = at(ru, "/maxUnavailable") else {
        return;
    };
    let mu_path = format!("{path}.maxUnavailable");
    errs.extend(int_or_percent(&mu_path, Some(mu), true));
    if int_or_percent_value(Some(mu)) == 0 {
        errs.push(FieldError::invalid_go(
            mu_path.as_str(),
            int_or_string_text(Some(mu)),
            "cannot be 0",
        ));
    }
    errs.extend(over_100(&mu_path, Some(mu)));
}

fn retention_policy(spec: &Value, errs: &mut Vec<FieldError>) {
    let Some(policy) = at(spec, "/persistentVolumeClaimRetentionPolicy") else {
        return;
    };
    for key in ["whenDeleted", "whenScaled"] {
        let v = policy.get(key).and_then(Value::as_str).unwrap_or("");
        if v != "Retain" && v != "Delete" {
            errs.push(FieldError::not_supported(
                format!("spec.persistentVolumeClaimRetentionPolicy.{key}"),
                v,
                &["Retain", "Delete"],
            ));
        }
    }
}

/// The selector's checks and the template's labels against it (upstream's selector rules
/// and ValidatePodTemplateSpecForStatefulSet).
fn selector_and_template(spec: &Value, errs: &mut Vec<FieldError>) {
    let selector = at(spec, "/selector");
    let built = match selector {
        None => {
            errs.push(FieldError::required("spec.selector", ""));
            Some(Selector::nothing())
        }
        Some(sel) => {
            errs.extend(label_selector("spec.selector", Some(sel)));
            let is_empty = ["matchLabels", "matchExpressions"]
                .iter()
                .all(|k| semantic::equal(sel.get(*k), None));
            if is_empty {
                errs.push(FieldError::invalid(
                    "spec.selector",
                    sel.clone(),
                    "empty selector is invalid for statefulset",
                ));
            }
            serde_json::from_value(sel.clone())
                .ok()
                .and_then(|s| Selector::from_label_selector(&s).ok())
        }
    };
    let Some(built) = built else {
        errs.push(FieldError::invalid(
            "spec.selector",
            selector.cloned().unwrap_or(Value::Null),
            "",
        ));
        return;
    };
    require_selected(spec, &built, errs);
    errs.extend(validate_labels(
        "spec.template.labels",
        at(spec, "/template/metadata/labels"),
    ));
    errs.extend(validate_annotations(
        "spec.template.annotations",
        at(spec, "/template/metadata/annotations"),
    ));
}

/// Upstream's ValidateStatefulSetSpec, in its order.
pub fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let spec = at(obj, "/spec").cloned().unwrap_or(json!({}));
    let mut errs = Vec::new();
    match at(&spec, "/podManagementPolicy").and_then(Value::as_str) {
        None | Some("") => errs.push(FieldError::required("spec.podManagementPolicy", "")),
        Some("OrderedReady" | "Parallel") => {}
        Some(other) => errs.push(FieldError::invalid(
            "spec.podManagementPolicy",
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let strategy = at(&spec, "/updateStrategy").cloned().unwrap_or(json!({}));
    let rolling = at(&strategy, "/rollingUpdate");
    match strategy.get("type").and_then(Value::as_str).unwrap_or("") {
        "" => errs.push(FieldError::required("spec.updateStrategy", "")),
        "OnDelete" => {
            if let Some(ru) = rolling {
                errs.push(FieldError::invalid(
                    "spec.updateStrategy.rollingUpdate",
                    ru.clone(),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(ru) = rolling {
                rolling_update(ru, &mut errs);
            }
        }
        _ => errs.push(FieldError::invalid(
            "spec.updateStrategy",
            strategy.clone(),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    retention_policy(&spec, &mut errs);
    errs.extend(non_negative_int("spec.replicas", at(&spec, "/replicas")));
    errs.extend(non_negative_int(
        "spec.minReadySeconds",
        at(&spec, "/minReadySeconds"),
    ));
    if let Some(ordinals) = at(&spec, "/ordinals") {
        errs.extend(non_negative_int(
            "spec.ordinals.start",
            at(ordinals, "/start"),
        ));
    }
    selector_and_template(&spec, &mut errs);
    let pod_spec = at(&spec, "/template/spec").cloned().unwrap_or(json!({}));
    let policy = pod_spec
        .get("restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    if policy != "Always" {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            policy,
            &["Always"],
        ));
    }
    if at(&pod_spec, "/activeDeadlineSeconds").is_some() {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
    errs
}

/// Only the fields of [`MUTABLE`] may change after creation.
pub fn validate_spec_update(new: &Value, old: &Value) -> Option<FieldError> {
    let strip = |obj: &Value| {
        let mut spec = at(obj, "/spec").cloned().unwrap_or(json!({}));
        if let Some(m) = spec.as_object_mut() {
            for k in MUTABLE {
                m.remove(k);
            }
        }
        spec
    };
    let (n, o) = (strip(new), strip(old));
    (!semantic::equal(Some(&n), Some(&o))).then(|| FieldError::forbidden("spec", FORBIDDEN_UPDATE))
}

/// Upstream's ValidateStatefulSetStatus and the collisionCount that never goes down.
pub fn validate_status(new: &Value, old: &Value) -> Vec<FieldError> {
    let null = Value::Null;
    let status = new.get("status").unwrap_or(&null);
    let count = |name: &str| status.get(name).and_then(Value::as_i64).unwrap_or(0);
    let mut errs = Vec::new();
    for name in [
        "replicas",
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
        "availableReplicas",
        "observedGeneration",
        "collisionCount",
    ] {
        errs.extend(non_negative_int(
            &format!("status.{name}"),
            at(status, &format!("/{name}")),
        ));
    }
    const OVER: &str = "cannot be greater than status.replicas";
    for name in [
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
        "availableReplicas",
    ] {
        if count(name) > count("replicas") {
            errs.push(FieldError::invalid(
                format!("status.{name}"),
                count(name),
                OVER,
            ));
        }
    }
    if count("availableReplicas") > count("readyReplicas") {
        errs.push(FieldError::invalid(
            "status.availableReplicas",
            count("availableReplicas"),
            "cannot be greater than status.readyReplicas",
        ));
    }
    let collisions = |o: &Value| o.pointer("/status/collisionCount").and_then(Value::as_i64);
    match (collisions(new), collisions(old)) {
        (None, Some(_)) => errs.push(FieldError::invalid(
            "status.collisionCount",
            0,
            "cannot be decremented",
        )),
        (Some(n), Some(o)) if n < o => errs.push(FieldError::invalid(
            "status.collisionCount",
            n,
            "cannot be decremented",
        )),
        _ => {}
    }
    errs
}

impl Strategy for StatefulSetStrategy {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        default_spec(spec);
        default_template(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert(
                "status".into(),
                json!({"replicas": 0, "availableReplicas": 0}),
            );
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Label);
        errs.extend(validate_spec(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        errs.extend(validate_spec_update(new, old));
        errs
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        validate_status(new, old)
    }

    fn warnings(&self, obj: &Value) -> Vec<String> {
        super::deprecated_master_warnings(obj.pointer("/spec/template/spec"), "spec.template.spec")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn web() -> Value {
        json!({"metadata": {"name": "web", "namespace": "default"},
               "spec": {"serviceName": "nginx", "selector": {"matchLabels": {"app": "nginx"}},
                        "template": {"metadata": {"labels": {"app": "nginx"}},
                                     "spec": {"containers": [{"name": "nginx", "image": "registry.k8s.io/nginx-slim:0.24"}]}},
                        "volumeClaimTemplates": [{"metadata": {"name": "www"},
                            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})
    }

    /// Apply `changes` (pointer, value; null removes) to a valid StatefulSet, default it and
    /// return its create errors.
    fn errors(changes: &[(&str, Value)]) -> Vec<String> {
        let mut obj = web();
        for (pointer, v) in changes {
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            let target = obj.pointer_mut(parent).unwrap().as_object_mut().unwrap();
            match v {
                Value::Null => target.remove(key),
                v => target.insert(key.to_string(), v.clone()),
            };
        }
        StatefulSetStrategy.default(&mut obj);
        StatefulSetStrategy
            .validate_create(&obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn defaults_match_upstream() {
        let mut s = web();
        StatefulSetStrategy.default(&mut s);
        let spec = &s["spec"];
        assert_eq!(spec["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            spec["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(spec["replicas"], 1);
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(
            spec["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        assert_eq!(
            spec["volumeClaimTemplates"][0]["spec"]["volumeMode"],
            "Filesystem"
        );
        assert_eq!(
            spec["volumeClaimTemplates"][0]["status"],
            json!({"phase": "Pending"})
        );
        assert_eq!(spec["template"]["spec"]["restartPolicy"], "Always");
        // OnDelete gets no rollingUpdate.
        let mut on_delete = web();
        on_delete["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
        StatefulSetStrategy.default(&mut on_delete);
        assert_eq!(
            on_delete["spec"]["updateStrategy"],
            json!({"type": "OnDelete"})
        );
    }

    #[test]
    fn validation_as_upstream() {
        type Changes<'a> = Vec<(&'a str, Value)>;
        let cases: Vec<(Changes, Vec<&str>)> = vec![
            (vec![], vec![]),
            (
                vec![("/metadata/name", json!("web.v1"))],
                vec!["metadata.name: Invalid value: \"web.v1\": must not contain dots"],
            ),
            (
                vec![("/spec/podManagementPolicy", json!("Random"))],
                vec!["spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"],
            ),
            (
                vec![("/spec/updateStrategy", json!({"type": "Sometimes"}))],
                vec!["spec.updateStrategy: Invalid value: {\"type\":\"Sometimes\"}: must be 'RollingUpdate' or 'OnDelete'"],
            ),
            (
                vec![("/spec/updateStrategy", json!({"type": "OnDelete", "rollingUpdate": {"partition": 1}}))],
                vec!["spec.updateStrategy.rollingUpdate: Invalid value: {\"partition\":1}: only allowed for updateStrategy 'RollingUpdate'"],
            ),
            (
                vec![("/spec/updateStrategy", json!({"type": "RollingUpdate", "rollingUpdate": {"partition": -1}}))],
                vec!["spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (
                vec![("/spec/updateStrategy", json!({"rollingUpdate": {"maxUnavailable": 0}}))],
                vec!["spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0"],
            ),
            (
                vec![("/spec/updateStrategy", json!({"rollingUpdate": {"maxUnavailable": "120%"}}))],
                vec!["spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 120%: must not be greater than 100%"],
            ),
            (vec![("/spec/updateStrategy", json!({"rollingUpdate": {"maxUnavailable": "50%"}}))], vec![]),
            (
                vec![("/spec/persistentVolumeClaimRetentionPolicy", json!({"whenDeleted": "Keep"}))],
                vec!["spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: \"Keep\": supported values: \"Retain\", \"Delete\""],
            ),
            (vec![("/spec/replicas", json!(-1))], vec!["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]),
            (
                vec![("/spec/ordinals", json!({"start": -2}))],
                vec!["spec.ordinals.start: Invalid value: -2: must be greater than or equal to 0"],
            ),
            (
                vec![("/spec/selector", Value::Null)],
                vec![
                    "spec.selector: Required value",
                    "spec.template.metadata.labels: Invalid value: {\"app\":\"nginx\"}: `selector` does not match template `labels`",
                ],
            ),
            (vec![("/spec/selector", json!({}))], vec!["spec.selector: Invalid value: {}: empty selector is invalid for statefulset"]),
            (
                vec![("/spec/template/metadata/labels", json!({"app": "web"}))],
                vec!["spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"],
            ),
            (
                vec![("/spec/template/spec/restartPolicy", json!("OnFailure"))],
                vec!["spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\""],
            ),
            (
                vec![("/spec/template/spec/activeDeadlineSeconds", json!(5))],
                vec!["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported"],
            ),
        ];
        for (changes, want) in cases {
            assert_eq!(errors(&changes), want, "{changes:?}");
        }
    }

    #[test]
    fn only_some_spec_fields_change() {
        let mut old = web();
        StatefulSetStrategy.default(&mut old);
        let update = |f: &dyn Fn(&mut Value)| {
            let mut new = old.clone();
            f(&mut new);
            StatefulSetStrategy.default(&mut new);
            StatefulSetStrategy
                .validate_update(&new, &old)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert!(update(&|n| n["spec"]["replicas"] = json!(5)).is_empty());
        assert!(update(
            &|n| n["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2")
        )
        .is_empty());
        assert!(
            update(&|n| n["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = json!(2))
                .is_empty()
        );
        assert!(update(&|n| n["spec"]["ordinals"] = json!({"start": 3})).is_empty());
        assert!(update(&|n| n["spec"]["minReadySeconds"] = json!(3)).is_empty());
        let forbidden = format!("spec: Forbidden: {FORBIDDEN_UPDATE}");
        assert_eq!(
            update(&|n| n["spec"]["serviceName"] = json!("other")),
            vec![forbidden.clone()]
        );
        assert_eq!(
            update(
                &|n| n["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]
                    ["storage"] = json!("2Gi")
            ),
            vec![forbidden.clone()]
        );
        assert_eq!(
            update(&|n| n["spec"]["podManagementPolicy"] = json!("Parallel")),
            vec![forbidden]
        );
    }

    #[test]
    fn status_rules() {
        let msgs = |status: Value, old: Value| {
            validate_status(&json!({"status": status}), &json!({"status": old}))
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert!(msgs(
            json!({"replicas": 2, "readyReplicas": 2, "availableReplicas": 1}),
            json!({})
        )
        .is_empty());
        assert_eq!(
            msgs(
                json!({"replicas": 1, "readyReplicas": 2, "currentReplicas": -1}),
                json!({})
            ),
            vec![
                "status.currentReplicas: Invalid value: -1: must be greater than or equal to 0",
                "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
            ]
        );
        assert_eq!(
            msgs(json!({"replicas": 2, "readyReplicas": 1, "availableReplicas": 2}), json!({})),
            vec!["status.availableReplicas: Invalid value: 2: cannot be greater than status.readyReplicas"]
        );
        assert_eq!(
            msgs(json!({"collisionCount": 1}), json!({"collisionCount": 2})),
            vec!["status.collisionCount: Invalid value: 1: cannot be decremented"]
        );
    }
}

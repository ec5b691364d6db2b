//! core/v1 ResourceQuota, as upstream's ValidateResourceQuota: `hard` and `used` name standard
//! quota resources (or qualified ones: `count/deployments.apps`, extended resources) with
//! non-negative quantities, whole numbers for counts; scopes are known, fit the resources they
//! limit and do not conflict; scopes never change. The status is the controller's: cleared on
//! create, kept by spec updates.

use serde_json::Value;

use super::field::FieldError;
use super::names::{validate_object_meta, NameRule};
use super::rules::{qualified_name_errors, resource_value};
use super::Strategy;

/// Upstream's standardResources: names valid without a domain.
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];
/// Upstream's standardQuotaResources.
const QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];
const SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
];
/// Resources a pod scope may limit (upstream's podObjectCountQuotaResources and
/// podComputeQuotaResources).
const POD_COMPUTE: &[&str] = &[
    "pods",
    "cpu",
    "limits.cpu",
    "memory",
    "limits.memory",
    "requests.cpu",
    "requests.memory",
];
const EXISTS_ONLY: &str = "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity";

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// Upstream's validateResourceName: a qualified name, standard when it has no domain.
pub(super) fn resource_name(field: &str, name: &str) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = qualified_name_errors(name)
        .into_iter()
        .map(|m| FieldError::invalid(field, name, m))
        .collect();
    if errs.is_empty()
        && !name.contains('/')
        && !STANDARD_RESOURCES.contains(&name)
        && !is_hugepages(name)
    {
        errs.push(FieldError::invalid(
            field,
            name,
            "must be a standard resource type or fully qualified",
        ));
    }
    errs
}

/// Upstream's ValidateResourceQuotaResourceName.
fn quota_resource_name(field: &str, name: &str) -> Vec<FieldError> {
    let mut errs = resource_name(field, name);
    if !name.contains('/') && !QUOTA_RESOURCES.contains(&name) && !is_hugepages(name) {
        errs.push(FieldError::invalid(
            field,
            name,
            "must be a standard resource for quota",
        ));
    }
    errs
}

/// `hard` or `used` at `path`.
fn resource_list(path: &str, list: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in list.and_then(Value::as_object).into_iter().flatten() {
        let field = format!("{path}[{k}]");
        errs.extend(quota_resource_name(&field, k));
        errs.extend(resource_value(&field, k, v));
    }
    errs
}

/// Whether a scope may restrict a standard resource (upstream's
/// IsResourceQuotaScopeValidForResource).
fn scope_fits(scope: &str, resource: &str) -> bool {
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => POD_COMPUTE.contains(&resource),
        "BestEffort" => resource == "pods",
        "VolumeAttributesClass" => {
            matches!(resource, "persistentvolumeclaims" | "requests.storage")
        }
        _ => true,
    }
}

/// Go's rendering of a scope list in messages: `[]core.ResourceQuotaScope{"BestEffort"}`.
fn go_scopes(scopes: &[&str]) -> String {
    if scopes.is_empty() {
        return "[]core.ResourceQuotaScope(nil)".into();
    }
    let quoted: Vec<String> = scopes.iter().map(|s| format!("{s:?}")).collect();
    format!("[]core.ResourceQuotaScope{{{}}}", quoted.join(", "))
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Upstream's ValidateResourceQuotaSpec.
fn validate_spec(spec: Option<&Value>) -> Vec<FieldError> {
    let empty = Value::Null;
    let spec = spec.unwrap_or(&empty);
    let mut errs = resource_list("spec.hard", spec.get("hard"));
    let hard: Vec<&String> = spec
        .get("hard")
        .and_then(Value::as_object)
        .map(|m| {
            let mut k: Vec<&String> = m.keys().collect();
            k.sort();
            k
        })
        .unwrap_or_default();
    let standard = |k: &str| QUOTA_RESOURCES.contains(&k) || is_hugepages(k);
    let scopes = strings(spec.get("scopes"));
    let rendered = go_scopes(&scopes);
    for scope in &scopes {
        if !SCOPES.contains(scope) {
            errs.push(FieldError::invalid_go(
                "spec.scopes",
                &rendered,
                "unsupported scope",
            ));
        }
        for k in &hard {
            if standard(k) && !scope_fits(scope, k) {
                errs.push(FieldError::invalid_go(
                    "spec.scopes",
                    &rendered,
                    "unsupported scope applied to resource",
                ));
            }
        }
    }
    let conflicting = |set: &[&str]| {
        (set.contains(&"BestEffort") && set.contains(&"NotBestEffort"))
            || (set.contains(&"Terminating") && set.contains(&"NotTerminating"))
    };
    if conflicting(&scopes) {
        errs.push(FieldError::invalid_go(
            "spec.scopes",
            &rendered,
            "conflicting scopes",
        ));
    }
    let Some(selector) = spec.get("scopeSelector").filter(|s| !s.is_null()) else {
        return errs;
    };
    let path = "spec.scopeSelector.matchExpressions";
    let mut names = Vec::new();
    for e in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
        let (scope, operator) = (text("scopeName"), text("operator"));
        let values = strings(e.get("values"));
        if !SCOPES.contains(&scope) {
            errs.push(FieldError::invalid(
                format!("{path}.scopeName"),
                scope,
                "unsupported scope",
            ));
        }
        for k in &hard {
            if standard(k) && !scope_fits(scope, k) {
                errs.push(FieldError::invalid_go(
                    path,
                    "&core.ScopeSelector{...}",
                    "unsupported scope applied to resource",
                ));
            }
        }
        let exists_only = matches!(
            scope,
            "BestEffort"
                | "NotBestEffort"
                | "Terminating"
                | "NotTerminating"
                | "CrossNamespacePodAffinity"
        );
        if exists_only && operator != "Exists" {
            errs.push(FieldError::invalid(
                format!("{path}.operator"),
                operator,
                EXISTS_ONLY,
            ));
        }
        match operator {
            "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
                format!("{path}.values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                let quoted: Vec<String> = values.iter().map(|s| format!("{s:?}")).collect();
                errs.push(FieldError::invalid_go(
                    format!("{path}.values"),
                    format!("[]string{{{}}}", quoted.join(", ")),
                    "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                ));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::invalid(
                format!("{path}.operator"),
                other,
                "not a valid selector operator",
            )),
        }
        names.push(scope);
    }
    if conflicting(&names) {
        errs.push(FieldError::invalid_go(
            path,
            &rendered,
            "conflicting scopes",
        ));
    }
    errs
}

fn validate_status(obj: &Value) -> Vec<FieldError> {
    let mut errs = resource_list("status.hard", obj.pointer("/status/hard"));
    errs.extend(resource_list("status.used", obj.pointer("/status/used")));
    errs
}

pub struct ResourceQuotaStrategy;

impl Strategy for ResourceQuotaStrategy {
    /// The status is the quota controller's to write.
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.remove("status");
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(validate_spec(obj.get("spec")));
        errs.extend(validate_status(obj));
        errs
    }

    /// Upstream's ValidateResourceQuotaUpdate: the spec as on create, the scopes unchanged.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_spec(new.get("spec"));
        fn set(o: &Value) -> Vec<&str> {
            let mut s = strings(o.pointer("/spec/scopes"));
            s.sort_unstable();
            s.dedup();
            s
        }
        if set(new) != set(old) {
            errs.push(FieldError::invalid_go(
                "spec.scopes",
                go_scopes(&strings(new.pointer("/spec/scopes"))),
                "field is immutable",
            ));
        }
        errs
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        validate_status(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(obj: Value) -> Vec<String> {
        let obj = json!({"metadata": {"name": "q", "namespace": "ns"}, "spec": obj});
        ResourceQuotaStrategy
            .validate_create(&obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn quotas_as_upstream() {
        let cases = [
            (json!({"hard": {"pods": "2", "requests.cpu": "1", "count/deployments.apps": "3"}}), vec![]),
            (json!({"hard": {"requests.nvidia.com/gpu": "4", "hugepages-2Mi": "1Gi"}}), vec![]),
            (
                json!({"hard": {"pods": "1.5"}}),
                vec!["spec.hard[pods]: Invalid value: resource.Quantity{i:resource.int64Amount{value:1500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1500m\", Format:\"DecimalSI\"}: must be an integer"],
            ),
            (
                json!({"hard": {"memory": "-1Gi"}}),
                vec!["spec.hard[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0"],
            ),
            (
                json!({"hard": {"foo": "1"}}),
                vec![
                    "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
                    "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource for quota",
                ],
            ),
            (
                json!({"hard": {"cpu": "1"}, "scopes": ["BestEffort"]}),
                vec!["spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: unsupported scope applied to resource"],
            ),
            (
                json!({"hard": {"pods": "1"}, "scopes": ["Terminating", "NotTerminating"]}),
                vec!["spec.scopes: Invalid value: []core.ResourceQuotaScope{\"Terminating\", \"NotTerminating\"}: conflicting scopes"],
            ),
            (
                json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In"}]}}),
                vec!["spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"],
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(messages(spec.clone()), want, "{spec}");
        }
    }

    #[test]
    fn scopes_never_change() {
        let old = json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}});
        let new = json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}});
        let errs: Vec<String> = ResourceQuotaStrategy
            .validate_update(&new, &old)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            ["spec.scopes: Invalid value: []core.ResourceQuotaScope(nil): field is immutable"]
        );
    }
}

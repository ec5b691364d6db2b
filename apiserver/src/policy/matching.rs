//! Which requests a policy's `matchConstraints` and a binding's `matchResources` select, as
//! upstream's policy matcher: the namespace selector (cluster-scoped objects other than
//! namespaces always pass; a namespace is judged by its own labels), the object selector (the
//! new or the old object's labels), the exclude rules, then the resource rules (operations,
//! groups, versions, resources with `x/y`, `x/*`, `*/y`, `*`, `*/*`, scope, resource names).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;
use tinykube_proto::labels::Selector;

use super::request::Attributes;

fn strings(v: Option<&Value>) -> impl Iterator<Item = &str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn listed(v: Option<&Value>, want: &str) -> bool {
    strings(v).any(|s| s == "*" || s == want)
}

/// Whether `resources` (`deployments`, `deployments/scale`, `*/status`, …) names the resource
/// `plural` with `sub` (`""` for the main resource).
fn resource_listed(resources: Option<&Value>, plural: &str, sub: &str) -> bool {
    strings(resources).any(|r| {
        let (res, rsub) = r.split_once('/').unwrap_or((r, ""));
        let resource_ok = res == "*" || res == plural;
        let sub_ok = rsub == sub || (rsub == "*" && !sub.is_empty());
        r == "*/*" || (resource_ok && sub_ok)
    })
}

/// Upstream's rule matcher for one NamedRuleWithOperations.
pub fn rule_matches(rule: &Value, attrs: &Attributes) -> bool {
    let info = attrs.info;
    let is_namespace = info.group.is_empty() && info.plural == "namespaces";
    let scope_ok = match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" => attrs.namespace.is_empty() || is_namespace,
        "Namespaced" => !attrs.namespace.is_empty() && !is_namespace,
        _ => true,
    };
    let names_ok = {
        let mut names = strings(rule.get("resourceNames")).peekable();
        names.peek().is_none() || names.any(|n| n == attrs.name)
    };
    listed(rule.get("operations"), attrs.operation.as_str())
        && listed(rule.get("apiGroups"), info.group)
        && listed(rule.get("apiVersions"), info.version)
        && resource_listed(rule.get("resources"), info.plural, attrs.subresource)
        && scope_ok
        && names_ok
}

fn any_rule(rules: Option<&Value>, attrs: &Attributes) -> bool {
    rules
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| rule_matches(r, attrs))
}

/// A metav1 LabelSelector from JSON; an empty one selects everything.
fn selector(v: Option<&Value>) -> Result<Option<Selector>, String> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let parsed: LabelSelector = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    let empty = parsed.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && parsed
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty());
    if empty {
        return Ok(None);
    }
    Selector::from_label_selector(&parsed)
        .map(Some)
        .map_err(|e| e.to_string())
}

pub fn labels_of(obj: Option<&Value>) -> BTreeMap<String, String> {
    obj.and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// The labels a namespace selector judges, when it has to judge: `None` for cluster-scoped
/// objects that are not namespaces.
pub enum NamespaceLabels {
    NotApplicable,
    Labels(BTreeMap<String, String>),
    /// The request's namespace does not exist.
    Missing(String),
}

/// Upstream's Matcher.Matches over one MatchResources.
pub fn matches(mr: &Value, attrs: &Attributes, ns: &NamespaceLabels) -> Result<bool, String> {
    let ns_ok = match selector(mr.get("namespaceSelector"))? {
        None => Ok(true),
        Some(sel) => match ns {
            NamespaceLabels::NotApplicable => Ok(true),
            NamespaceLabels::Labels(labels) => Ok(sel.matches(labels)),
            NamespaceLabels::Missing(name) => Err(format!("namespaces \"{name}\" not found")),
        },
    };
    if let Ok(false) = ns_ok {
        return Ok(false);
    }
    let obj_ok = match selector(mr.get("objectSelector"))? {
        None => true,
        Some(sel) => {
            sel.matches(&labels_of(attrs.object)) || sel.matches(&labels_of(attrs.old_object))
        }
    };
    if !obj_ok {
        return Ok(false);
    }
    if any_rule(mr.get("excludeResourceRules"), attrs) {
        return Ok(false);
    }
    let rules = mr.get("resourceRules").and_then(Value::as_array);
    if rules.is_some_and(|r| !r.is_empty()) && !any_rule(mr.get("resourceRules"), attrs) {
        return Ok(false);
    }
    ns_ok
}

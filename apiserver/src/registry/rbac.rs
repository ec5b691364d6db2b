//! rbac.authorization.k8s.io/v1: Roles, ClusterRoles and their bindings, as upstream's
//! `pkg/apis/rbac/validation`: path-segment names, rules that name verbs and either resources
//! (with API groups) or, for ClusterRoles only, non-resource URLs; aggregation selectors;
//! bindings to a role of this group with known subject kinds; a binding's role never changes.

use serde_json::{json, Value};

use super::field::FieldError;
use super::names::{validate_name, validate_object_meta, NameRule};
use super::rules::label_selector;
use super::Strategy;

/// The RBAC API group, the only one a roleRef (and a User or Group subject) may name.
const GROUP: &str = tinykube_proto::registry::RBAC;

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Go's `%#v` of a `[]string`.
fn go_strings(list: &[&str]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// One rule at `rules[i]` (upstream's ValidatePolicyRule).
fn validate_rule(rule: &Value, path: &str, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if strings(rule.get("verbs")).is_empty() {
        errs.push(FieldError::required(
            format!("{path}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = strings(rule.get("nonResourceURLs"));
    let groups = strings(rule.get("apiGroups"));
    let resources = strings(rule.get("resources"));
    if !urls.is_empty() {
        let field = format!("{path}.nonResourceURLs");
        if namespaced {
            errs.push(FieldError::invalid_go(
                &field,
                go_strings(&urls),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !groups.is_empty()
            || !resources.is_empty()
            || !strings(rule.get("resourceNames")).is_empty()
        {
            errs.push(FieldError::invalid_go(
                &field,
                go_strings(&urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if groups.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if resources.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errs
}

fn validate_rules(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    obj.get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .flat_map(|(i, r)| validate_rule(r, &format!("rules[{i}]"), namespaced))
        .collect()
}

/// A binding's roleRef and subjects; `namespaced` for RoleBindings.
fn validate_binding(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = validate_object_meta(obj, NameRule::PathSegment);
    let text = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
    let api_group = text("/roleRef/apiGroup");
    if api_group != GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            api_group,
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    let kind = text("/roleRef/kind");
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported("roleRef.kind", kind, kinds));
    }
    let role = text("/roleRef/name");
    if role.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    } else {
        errs.extend(validate_name("roleRef.name", role, NameRule::PathSegment));
    }
    for (i, subject) in obj
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        errs.extend(validate_subject(
            subject,
            &format!("subjects[{i}]"),
            namespaced,
        ));
    }
    errs
}

fn validate_subject(subject: &Value, path: &str, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let text = |k: &str| subject.get(k).and_then(Value::as_str).unwrap_or("");
    let name = text("name");
    if name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    }
    let api_group = text("apiGroup");
    match text("kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                errs.extend(validate_name(
                    &format!("{path}.name"),
                    name,
                    NameRule::Subdomain,
                ));
            }
            if !api_group.is_empty() {
                errs.push(FieldError::not_supported(
                    format!("{path}.apiGroup"),
                    api_group,
                    &[""],
                ));
            }
            if !namespaced && text("namespace").is_empty() {
                errs.push(FieldError::required(format!("{path}.namespace"), ""));
            }
        }
        "User" | "Group" if api_group != GROUP => {
            errs.push(FieldError::not_supported(
                format!("{path}.apiGroup"),
                api_group,
                &[GROUP],
            ));
        }
        "User" | "Group" => {}
        kind => errs.push(FieldError::not_supported(
            format!("{path}.kind"),
            kind,
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errs
}

/// Upstream's v1 defaults: a roleRef's group, and each subject's group by its kind.
fn default_binding(obj: &mut Value) {
    if let Some(role_ref) = obj.get_mut("roleRef").and_then(Value::as_object_mut) {
        if role_ref
            .get("apiGroup")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            role_ref.insert("apiGroup".into(), json!(GROUP));
        }
    }
    for subject in obj
        .get_mut("subjects")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(m) = subject.as_object_mut() else {
            continue;
        };
        if !m
            .get("apiGroup")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            continue;
        }
        match m.get("kind").and_then(Value::as_str) {
            Some("ServiceAccount") => m.insert("apiGroup".into(), json!("")),
            Some("User" | "Group") => m.insert("apiGroup".into(), json!(GROUP)),
            _ => None,
        };
    }
}

/// A binding's roleRef may not change (upstream's ValidateRoleBindingUpdate), shown as Go's
/// `%#v` of the new `rbac.RoleRef`.
fn role_ref_unchanged(new: &Value, old: &Value) -> Vec<FieldError> {
    if new.get("roleRef") == old.get("roleRef") {
        return Vec::new();
    }
    let text = |p: &str| new.pointer(p).and_then(Value::as_str).unwrap_or("");
    let shown = format!(
        "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
        text("/roleRef/apiGroup"),
        text("/roleRef/kind"),
        text("/roleRef/name")
    );
    vec![FieldError::invalid_go(
        "roleRef",
        shown,
        "cannot change roleRef",
    )]
}

pub struct RoleStrategy;

impl Strategy for RoleStrategy {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::PathSegment);
        errs.extend(validate_rules(obj, true));
        errs
    }
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }
}

pub struct ClusterRoleStrategy;

impl Strategy for ClusterRoleStrategy {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::PathSegment);
        errs.extend(validate_rules(obj, false));
        if let Some(rule) = obj.get("aggregationRule").filter(|r| !r.is_null()) {
            let selectors = rule
                .get("clusterRoleSelectors")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            if selectors.is_empty() {
                errs.push(FieldError::required(
                    "aggregationRule.clusterRoleSelectors",
                    "at least one clusterRoleSelector required if aggregationRule is non-nil",
                ));
            }
            for (i, s) in selectors.iter().enumerate() {
                errs.extend(label_selector(
                    &format!("aggregationRule.clusterRoleSelectors[{i}]"),
                    Some(s),
                ));
            }
        }
        errs
    }
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }
}

/// RoleBinding (`namespaced`) and ClusterRoleBinding.
pub struct BindingStrategy {
    pub namespaced: bool,
}

impl Strategy for BindingStrategy {
    fn default(&self, obj: &mut Value) {
        default_binding(obj);
    }
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        validate_binding(obj, self.namespaced)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_binding(new, self.namespaced);
        errs.extend(role_ref_unchanged(new, old));
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn rules_are_checked_as_upstream_words_them() {
        let role = json!({"metadata": {"name": "r", "namespace": "default"}, "rules": [
            {"verbs": [], "apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
            {"verbs": ["get"]},
        ]});
        assert_eq!(
            messages(RoleStrategy.validate_create(&role)),
            vec![
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[1].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
                "rules[2].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[2].resources: Required value: resource rules must supply at least one resource",
            ]
        );
        let cluster = json!({"metadata": {"name": "system:x"}, "rules": [
            {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}], "aggregationRule": {}});
        assert_eq!(
            messages(ClusterRoleStrategy.validate_create(&cluster)),
            vec!["aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"]
        );
    }

    #[test]
    fn bindings_are_defaulted_and_checked() {
        let mut b = json!({"metadata": {"name": "b"}, "roleRef": {"kind": "Role", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "default"},
                         {"kind": "Robot", "name": "r2"}]});
        BindingStrategy { namespaced: false }.default(&mut b);
        assert_eq!(b["roleRef"]["apiGroup"], GROUP);
        assert_eq!(b["subjects"][0]["apiGroup"], GROUP);
        assert_eq!(b["subjects"][1]["apiGroup"], "");
        assert_eq!(
            messages(BindingStrategy { namespaced: false }.validate_create(&b)),
            vec![
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "subjects[1].namespace: Required value",
                "subjects[2].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
            ]
        );
        let mut moved = b.clone();
        moved["roleRef"]["name"] = json!("edit");
        assert!(messages(BindingStrategy { namespaced: true }.validate_update(&moved, &b))
            .contains(&"roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"edit\"}: cannot change roleRef".to_string()));
    }
}

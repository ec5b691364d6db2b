//! The params of one binding, as upstream's CollectParams: none when the policy has no
//! paramKind or the binding no paramRef (the policy runs once with `params` null); else the
//! object named, or every object the selector picks, in the paramRef's namespace (or the
//! request's, for a namespaced kind); `parameterNotFoundAction: Deny` turns "none found" into a
//! configuration error.

use serde_json::Value;
use tinykube_proto::labels::Selector;

use super::matching::labels_of;
use crate::convert;
use crate::state::AppState;

/// The params to evaluate with: `[None]` for "no params", `[]` for "none found, allowed".
pub fn collect(
    state: &AppState,
    param_kind: Option<&Value>,
    param_ref: Option<&Value>,
    request_namespace: &str,
) -> Result<Vec<Option<Value>>, String> {
    let (Some(kind), Some(pr)) = (
        param_kind.filter(|k| !k.is_null()),
        param_ref.filter(|r| !r.is_null()),
    ) else {
        return Ok(vec![None]);
    };
    let str_at = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let api_version = str_at(kind, "apiVersion");
    let kind_name = str_at(kind, "kind");
    let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
    let served = state.kinds.snapshot();
    let Some(info) = served.by_kind(group, version, &kind_name) else {
        return Err(format!(
            "failed to find resource referenced by paramKind: '{}'",
            gvk_string(group, version, &kind_name)
        ));
    };
    let ref_namespace = str_at(pr, "namespace");
    let namespace = if info.namespaced {
        if !ref_namespace.is_empty() {
            Some(ref_namespace.clone())
        } else if !request_namespace.is_empty() {
            Some(request_namespace.to_string())
        } else {
            return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
        }
    } else if !ref_namespace.is_empty() {
        return Err(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
        );
    } else {
        None
    };
    let name = str_at(pr, "name");
    let found: Vec<Value> = if !name.is_empty() {
        state
            .objects
            .try_get(info, namespace.as_deref(), &name)
            .map_err(|e| e.to_string())?
            .into_iter()
            .collect()
    } else if let Some(sel) = pr.get("selector").filter(|s| !s.is_null()) {
        let parsed = serde_json::from_value(sel.clone()).map_err(|e| e.to_string())?;
        let selector = Selector::from_label_selector(&parsed).map_err(|e| e.to_string())?;
        state
            .objects
            .list(info, namespace.as_deref(), None, None)
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter(|o| selector.matches(&labels_of(Some(o))))
            .collect()
    } else {
        return Err("one of name or selector must be provided".into());
    };
    if found.is_empty() && pr.get("parameterNotFoundAction").and_then(Value::as_str) == Some("Deny")
    {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(found
        .into_iter()
        .map(|o| Some(convert::outgoing(info, o)))
        .collect())
}

/// A GroupVersionKind as Go's `String()` prints it: `rules.example.com/v1, Kind=ReplicaLimit`.
fn gvk_string(group: &str, version: &str, kind: &str) -> String {
    if group.is_empty() {
        format!("/{version}, Kind={kind}")
    } else {
        format!("{group}/{version}, Kind={kind}")
    }
}

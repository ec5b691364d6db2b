//! The ValidatingAdmissionPolicy admission plugin, as upstream's: every create, update and
//! delete of every served kind (built-in or custom, subresources as the rules name them) is
//! checked against each policy whose `matchConstraints` select it and each of its bindings whose
//! `matchResources` do, with the binding's params; failed validations act as the binding's
//! `validationActions` say (Deny: the request fails with the first denial; Warn: a `Warning`
//! header; Audit: a log line, tinykube keeps no audit log), and evaluation or configuration
//! errors as the policy's `failurePolicy` says.
//!
//! Policies and bindings are read from the store on every request (compiled expressions are
//! cached by the CEL engine), so a change applies from the next request on. The `authorizer`
//! variable is not offered: every request is allowed in tinykube, and the CEL crate has no
//! receiver-style custom types to model it with.

mod evaluate;
mod matching;
mod params;
mod request;
pub mod status;
#[cfg(test)]
mod tests;

use cel::Value as Cel;
use serde_json::Value;
use tinykube_proto::registry::{self, ResourceInfo};

use crate::error::{ApiError, ApiResult, Qualified};
use crate::object;
use crate::registry::cel::values;
use crate::state::AppState;
use evaluate::{Activation, Decision};
use matching::NamespaceLabels;

pub use request::{Attributes, Operation, UserInfo};

pub fn policies_info() -> &'static ResourceInfo {
    registry::builtin(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
    )
    .expect("validatingadmissionpolicies are served")
}

fn bindings_info() -> &'static ResourceInfo {
    registry::builtin(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
    )
    .expect("validatingadmissionpolicybindings are served")
}

/// One denial, with the policy and binding it came from.
struct Denied {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: String,
}

/// Run every matching policy on the request. Returns the warnings to send, or the denial.
pub fn admit(state: &AppState, attrs: &Attributes) -> ApiResult<Vec<String>> {
    let bindings = state.objects.list(bindings_info(), None, None, None)?.items;
    if bindings.is_empty() {
        return Ok(Vec::new());
    }
    let policies = state.objects.list(policies_info(), None, None, None)?.items;
    let mut run = Run {
        state,
        attrs,
        namespace: None,
        denied: Vec::new(),
        warnings: Vec::new(),
        uid: uuid::Uuid::new_v4().to_string(),
    };
    for policy in &policies {
        let policy_name = object::name(policy);
        let bound: Vec<&Value> = bindings
            .iter()
            .filter(|b| b.pointer("/spec/policyName").and_then(Value::as_str) == Some(policy_name))
            .collect();
        if !bound.is_empty() {
            run.policy(policy, &bound);
        }
    }
    if let Some(d) = run.denied.into_iter().next() {
        let message = match &d.binding {
            Some(b) => format!(
                "ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}",
                d.policy, d.message
            ),
            None => format!(
                "ValidatingAdmissionPolicy '{}' denied request: {}",
                d.policy, d.message
            ),
        };
        return Err(ApiError::PolicyDenied {
            resource: Qualified::of(attrs.info),
            name: attrs.error_name(),
            message,
            reason: d.reason,
        });
    }
    Ok(run.warnings)
}

struct Run<'a> {
    state: &'a AppState,
    attrs: &'a Attributes<'a>,
    /// The request's namespace, read once when a selector or an expression needs it.
    namespace: Option<Option<Value>>,
    denied: Vec<Denied>,
    warnings: Vec<String>,
    uid: String,
}

impl Run<'_> {
    fn is_namespace_request(&self) -> bool {
        self.attrs.info.group.is_empty() && self.attrs.info.plural == "namespaces"
    }

    /// The stored namespace of a namespaced request.
    fn namespace_object(&mut self) -> Option<Value> {
        if self.namespace.is_none() {
            let ns = self.attrs.namespace;
            let found = if ns.is_empty() || self.is_namespace_request() {
                None
            } else {
                let info =
                    registry::builtin("", "v1", "namespaces").expect("namespaces are served");
                self.state.objects.try_get(info, None, ns).ok().flatten()
            };
            self.namespace = Some(found);
        }
        self.namespace.clone().flatten()
    }

    fn namespace_labels(&mut self) -> NamespaceLabels {
        if self.is_namespace_request() && self.attrs.subresource.is_empty() {
            let obj = self.attrs.object.or(self.attrs.old_object);
            return NamespaceLabels::Labels(matching::labels_of(obj));
        }
        if self.attrs.namespace.is_empty() {
            return NamespaceLabels::NotApplicable;
        }
        match self.namespace_object() {
            Some(ns) => NamespaceLabels::Labels(matching::labels_of(Some(&ns))),
            None => NamespaceLabels::Missing(self.attrs.namespace.to_string()),
        }
    }

    /// A configuration or evaluation error, as the policy's failure policy says.
    fn failed(&mut self, policy: &Value, binding: Option<&Value>, message: String) {
        if policy
            .pointer("/spec/failurePolicy")
            .and_then(Value::as_str)
            == Some("Ignore")
        {
            tracing::debug!(policy = object::name(policy), %message, "ignored policy failure");
            return;
        }
        self.denied.push(Denied {
            policy: object::name(policy).to_string(),
            binding: binding.map(|b| object::name(b).to_string()),
            message,
            reason: "Invalid".into(),
        });
    }

    fn policy(&mut self, policy: &Value, bindings: &[&Value]) {
        let null = Value::Null;
        let constraints = policy.pointer("/spec/matchConstraints").unwrap_or(&null);
        let labels = self.namespace_labels();
        match matching::matches(constraints, self.attrs, &labels) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => return self.failed(policy, None, format!("failed to configure policy: {e}")),
        }
        for binding in bindings {
            let matched = match binding.pointer("/spec/matchResources") {
                Some(mr) if !mr.is_null() => matching::matches(mr, self.attrs, &labels),
                _ => Ok(true),
            };
            match matched {
                Ok(true) => self.binding(policy, binding),
                Ok(false) => {}
                Err(e) => self.failed(
                    policy,
                    Some(binding),
                    format!("failed to configure binding: {e}"),
                ),
            }
        }
    }

    fn binding(&mut self, policy: &Value, binding: &Value) {
        let params = params::collect(
            self.state,
            policy.pointer("/spec/paramKind"),
            binding.pointer("/spec/paramRef"),
            self.attrs.namespace,
        );
        let params = match params {
            Ok(p) => p,
            Err(e) => {
                return self.failed(
                    policy,
                    Some(binding),
                    format!("failed to configure binding: {e}"),
                )
            }
        };
        for param in params {
            let decisions = self.evaluate(policy, param.as_ref());
            for d in decisions {
                match d {
                    Decision::Error(message) => self.failed(policy, Some(binding), message),
                    Decision::Deny { message, reason } => {
                        self.act(policy, binding, message, reason)
                    }
                }
            }
        }
    }

    /// A failed validation, as the binding's validation actions say.
    fn act(&mut self, policy: &Value, binding: &Value, message: String, reason: String) {
        let (policy_name, binding_name) = (object::name(policy), object::name(binding));
        let actions = binding
            .pointer("/spec/validationActions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for action in actions.iter().filter_map(Value::as_str) {
            match action {
                "Deny" => self.denied.push(Denied {
                    policy: policy_name.to_string(),
                    binding: Some(binding_name.to_string()),
                    message: message.clone(),
                    reason: reason.clone(),
                }),
                "Warn" => self.warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}': {message}"
                )),
                "Audit" => tracing::info!(
                    policy = policy_name,
                    binding = binding_name,
                    %message,
                    "validation.policy.admission.k8s.io/validation_failure"
                ),
                _ => {}
            }
        }
    }

    /// Match conditions, variables, validations and audit annotations for one param.
    fn evaluate(&mut self, policy: &Value, param: Option<&Value>) -> Vec<Decision> {
        let spec = policy.get("spec").cloned().unwrap_or(Value::Null);
        let list = |k: &str| {
            spec.get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let to_cel = |v: Option<&Value>| v.map_or(Cel::Null, values::dynamic);
        let namespace = if self.is_namespace_request() {
            None
        } else {
            self.namespace_object().map(namespace_view)
        };
        let mut act = Activation::new(vec![
            ("object", to_cel(self.attrs.object)),
            ("oldObject", to_cel(self.attrs.old_object)),
            (
                "request",
                values::dynamic(&self.attrs.request_value(&self.uid)),
            ),
            ("params", to_cel(param)),
            ("namespaceObject", to_cel(namespace.as_ref())),
        ]);
        act.bind_variables(&list("variables"));
        match evaluate::match_conditions(&mut act, &list("matchConditions")) {
            Ok(true) => {}
            Ok(false) => return Vec::new(),
            Err(e) => return vec![Decision::Error(e)],
        }
        let mut decisions = evaluate::validations(&mut act, &list("validations"));
        let (published, errors) = evaluate::audit_annotations(&mut act, &list("auditAnnotations"));
        for (key, value) in published {
            tracing::info!(annotation = %format!("{}/{key}", object::name(policy)), %value, "audit annotation");
        }
        decisions.extend(errors);
        decisions
    }
}

/// The namespace as `namespaceObject` shows it: upstream's copy keeps the spec, the status and
/// the metadata fields a policy may read (no managed fields, no owners).
fn namespace_view(ns: Value) -> Value {
    let mut out = serde_json::Map::new();
    for k in ["spec", "status"] {
        if let Some(v) = ns.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    let mut meta = serde_json::Map::new();
    for k in [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "finalizers",
    ] {
        if let Some(v) = ns.pointer(&format!("/metadata/{k}")) {
            meta.insert(k.into(), v.clone());
        }
    }
    out.insert("metadata".into(), Value::Object(meta));
    Value::Object(out)
}

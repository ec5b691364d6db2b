//! Typed views of the served kinds through `k8s-openapi`: decoding a JSON object into its Rust
//! type checks field types, and comparing the re-encoded object with the input finds fields the
//! schema does not declare (what `fieldValidation=Strict` rejects and upstream prunes).

use k8s_openapi::api::admissionregistration::v1 as admissionregistration;
use k8s_openapi::api::authentication::v1 as authentication;
use k8s_openapi::api::authorization::v1 as authorization;
use k8s_openapi::api::batch::v1 as batch;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::api::networking::v1 as networking;
use k8s_openapi::api::node::v1 as node;
use k8s_openapi::api::rbac::v1 as rbac;
use k8s_openapi::api::storage::v1 as storage;
use k8s_openapi::api::{apps::v1 as apps, coordination::v1 as coordination, core::v1 as core};
use k8s_openapi::api::{events::v1 as events, policy::v1 as policy, scheduling::v1 as scheduling};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as crd;
use serde_json::Value;

/// Why an object could not be decoded into its type.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("no type is registered for {group}/{kind}")]
    UnknownKind { group: String, kind: String },
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

/// The object decoded and re-encoded through its type: unknown fields dropped, every declared
/// field kept. `group` is the API group (empty for core).
pub fn normalize(group: &str, kind: &str, obj: &Value) -> Result<Value, DecodeError> {
    fn through<T: serde::de::DeserializeOwned + serde::Serialize>(
        obj: &Value,
    ) -> Result<Value, DecodeError> {
        let typed: T = serde_json::from_value(obj.clone())?;
        Ok(serde_json::to_value(typed)?)
    }
    match (group, kind) {
        ("", "Pod") => through::<core::Pod>(obj),
        ("", "Node") => through::<core::Node>(obj),
        ("", "Namespace") => through::<core::Namespace>(obj),
        ("", "Event") => through::<core::Event>(obj),
        ("", "ConfigMap") => through::<core::ConfigMap>(obj),
        ("", "Binding") => through::<core::Binding>(obj),
        ("", "LimitRange") => through::<core::LimitRange>(obj),
        ("", "ResourceQuota") => through::<core::ResourceQuota>(obj),
        ("", "Secret") => through::<core::Secret>(obj),
        ("", "ServiceAccount") => through::<core::ServiceAccount>(obj),
        ("", "Service") => through::<core::Service>(obj),
        ("", "Endpoints") => through::<core::Endpoints>(obj),
        ("", "PersistentVolume") => through::<core::PersistentVolume>(obj),
        ("", "PersistentVolumeClaim") => through::<core::PersistentVolumeClaim>(obj),
        ("", "ReplicationController") => through::<core::ReplicationController>(obj),
        ("apps", "Deployment") => through::<apps::Deployment>(obj),
        ("apps", "ReplicaSet") => through::<apps::ReplicaSet>(obj),
        ("apps", "DaemonSet") => through::<apps::DaemonSet>(obj),
        ("apps", "ControllerRevision") => through::<apps::ControllerRevision>(obj),
        ("apps", "StatefulSet") => through::<apps::StatefulSet>(obj),
        ("batch", "Job") => through::<batch::Job>(obj),
        ("batch", "CronJob") => through::<batch::CronJob>(obj),
        ("storage.k8s.io", "StorageClass") => through::<storage::StorageClass>(obj),
        ("coordination.k8s.io", "Lease") => through::<coordination::Lease>(obj),
        ("events.k8s.io", "Event") => through::<events::Event>(obj),
        ("networking.k8s.io", "Ingress") => through::<networking::Ingress>(obj),
        ("networking.k8s.io", "IngressClass") => through::<networking::IngressClass>(obj),
        ("networking.k8s.io", "NetworkPolicy") => through::<networking::NetworkPolicy>(obj),
        ("policy", "PodDisruptionBudget") => through::<policy::PodDisruptionBudget>(obj),
        ("policy", "Eviction") => through::<policy::Eviction>(obj),
        ("scheduling.k8s.io", "PriorityClass") => through::<scheduling::PriorityClass>(obj),
        ("node.k8s.io", "RuntimeClass") => through::<node::RuntimeClass>(obj),
        ("discovery.k8s.io", "EndpointSlice") => through::<discovery::EndpointSlice>(obj),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            through::<admissionregistration::ValidatingAdmissionPolicy>(obj)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            through::<admissionregistration::ValidatingAdmissionPolicyBinding>(obj)
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            through::<crd::CustomResourceDefinition>(obj)
        }
        ("apiregistration.k8s.io", "APIService") => {
            through::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>(obj)
        }
        ("rbac.authorization.k8s.io", "Role") => through::<rbac::Role>(obj),
        ("rbac.authorization.k8s.io", "ClusterRole") => through::<rbac::ClusterRole>(obj),
        ("rbac.authorization.k8s.io", "RoleBinding") => through::<rbac::RoleBinding>(obj),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            through::<rbac::ClusterRoleBinding>(obj)
        }
        ("authorization.k8s.io", "SubjectAccessReview") => {
            through::<authorization::SubjectAccessReview>(obj)
        }
        ("authorization.k8s.io", "SelfSubjectAccessReview") => {
            through::<authorization::SelfSubjectAccessReview>(obj)
        }
        ("authorization.k8s.io", "LocalSubjectAccessReview") => {
            through::<authorization::LocalSubjectAccessReview>(obj)
        }
        ("authorization.k8s.io", "SelfSubjectRulesReview") => {
            through::<authorization::SelfSubjectRulesReview>(obj)
        }
        ("authentication.k8s.io", "SelfSubjectReview") => {
            through::<authentication::SelfSubjectReview>(obj)
        }
        ("authentication.k8s.io", "TokenReview") => through::<authentication::TokenReview>(obj),
        ("autoscaling", "Scale") => through::<k8s_openapi::api::autoscaling::v1::Scale>(obj),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            through::<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler>(obj)
        }
        _ => Err(DecodeError::UnknownKind {
            group: group.to_string(),
            kind: kind.to_string(),
        }),
    }
}

/// As [`normalize`], for the schema of one served version: the kinds served in two versions
/// with different schemas (autoscaling/v1 and v2 HorizontalPodAutoscalers) decode through
/// the type of the version asked for.
pub fn normalize_version(
    group: &str,
    version: &str,
    kind: &str,
    obj: &Value,
) -> Result<Value, DecodeError> {
    use k8s_openapi::api::autoscaling::v1 as autoscaling_v1;
    match (group, version, kind) {
        ("autoscaling", "v1", "HorizontalPodAutoscaler") => {
            let typed: autoscaling_v1::HorizontalPodAutoscaler =
                serde_json::from_value(obj.clone())?;
            Ok(serde_json::to_value(typed)?)
        }
        _ => normalize(group, kind, obj),
    }
}

/// Paths (`spec.containers[0].foo`) present in `input` but absent from `normalized`: the
/// fields the schema does not know. `null` values in the input are not counted.
pub fn unknown_fields(input: &Value, normalized: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(input, normalized, String::new(), &mut out);
    out
}

fn walk(input: &Value, known: &Value, path: String, out: &mut Vec<String>) {
    match (input, known) {
        (Value::Object(i), Value::Object(k)) => {
            for (key, value) in i {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match k.get(key) {
                    Some(known_value) => walk(value, known_value, child, out),
                    None if value.is_null() => {}
                    None => out.push(child),
                }
            }
        }
        (Value::Array(i), Value::Array(k)) => {
            for (n, (a, b)) in i.iter().zip(k.iter()).enumerate() {
                walk(a, b, format!("{path}[{n}]"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_found_with_their_paths() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "x", "bogus": 1},
            "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "Always", "colour": "red"}]}
        });
        let normal = normalize("", "Pod", &pod).unwrap();
        assert_eq!(
            unknown_fields(&pod, &normal),
            vec!["metadata.bogus", "spec.containers[0].colour"]
        );
        assert_eq!(normal["spec"]["containers"][0]["imagePullPolicy"], "Always");
    }

    #[test]
    fn wrong_types_do_not_decode() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": "nope"}});
        assert!(normalize("", "Pod", &pod).is_err());
        assert!(normalize("", "Widget", &pod).is_err());
    }
}

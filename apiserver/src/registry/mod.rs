//! Per-kind rules of the API server, as upstream's registry strategies: defaulting, validation,
//! what create and update may change, and the spec/status split.
//!
//! Objects are handled as `serde_json::Value` with the fields named as on the wire.

mod admissionregistration;
pub mod apiextensions;
pub mod apiregistration;
mod apps;
mod apps_status;
pub mod autoscaling;
pub mod batch;
pub mod cel;
mod cluster;
mod config;
mod coordination;
mod custom;
mod endpoints;
mod events;
pub mod field;
mod generic;
mod limitrange;
pub mod meta;
pub mod names;
mod networking;
mod node;
mod pod;
mod podspec;
mod policy;
mod quota;
mod rbac;
mod replicationcontroller;
pub mod rules;
mod scheduling;
pub mod schema;
mod semantic;
pub mod service;
mod statefulset;
mod storage;
mod workloads;

use std::sync::Arc;

use field::FieldError;
use serde_json::Value;
use tinykube_proto::registry::ResourceInfo;

/// The time of a write, by the server's clock.
pub type Now = chrono::DateTime<chrono::Utc>;

/// What a kind does at each stage of a write. Every method has a neutral default so a kind only
/// overrides what it needs. `obj` always has `apiVersion`, `kind` and `metadata` set.
pub trait Strategy: Send + Sync {
    /// Fill defaults (pod `restartPolicy: Always`, deployment `replicas: 1`, …), on create and
    /// on update of the main resource, after decoding and before validation.
    fn default(&self, _obj: &mut Value) {}

    /// Adjust a new object before it is stored: e.g. clear `status` of kinds whose status only
    /// controllers write, set a pod's initial `status.phase: Pending` and `qosClass`.
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// Adjust an update of the main resource. The generic spec/status split (the stored
    /// `status` is kept for kinds with a status subresource) has already been applied.
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// Adjust an update through the `status` subresource, written `now` (the server's clock).
    /// Everything but `status` has already been taken from the stored object.
    fn prepare_for_status_update(&self, _new: &mut Value, _old: &Value, _now: Now) {}

    /// Validate a new object (metadata included: name, labels, annotations).
    fn validate_create(&self, _obj: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Validate an update of the main resource against the stored object (immutable fields).
    /// `registry::strategy` runs the ObjectMeta update rules every kind shares first.
    fn validate_update(&self, _new: &Value, _old: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Validate an update through the `status` subresource.
    fn validate_status_update(&self, _new: &Value, _old: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Warnings returned to the client in `Warning:` headers on create and update
    /// (e.g. the deprecated `node-role.kubernetes.io/master` node-affinity key).
    fn warnings(&self, _obj: &Value) -> Vec<String> {
        Vec::new()
    }
}

/// A kind with no rules of its own (subresource bodies such as Binding).
pub struct Plain;
impl Strategy for Plain {}

/// The strategy of a served resource, with the metadata rules every kind shares.
pub fn strategy(info: &ResourceInfo) -> WithMeta {
    match &info.custom {
        Some(custom) => WithMeta(Rules::Custom(Arc::new(custom::CustomStrategy(
            custom.clone(),
        )))),
        None => WithMeta(Rules::Builtin(kind_strategy(info))),
    }
}

/// A built-in kind's strategy, or the one a custom resource's definition makes.
#[derive(Clone)]
enum Rules {
    Builtin(&'static dyn Strategy),
    Custom(Arc<dyn Strategy>),
}

/// A kind's strategy as `strategy()` hands it out: the kind's own methods through `Deref`
/// (so a method added to `Strategy` reaches the kind unchanged), except the update
/// validations, which first run the ObjectMeta update rules every kind shares
/// (`meta::validate_update`: fields clients may not change, no finalizer added once deletion
/// started, label, annotation and owner syntax), then the kind's own.
#[derive(Clone)]
pub struct WithMeta(Rules);

impl std::ops::Deref for WithMeta {
    type Target = dyn Strategy;
    fn deref(&self) -> &Self::Target {
        match &self.0 {
            Rules::Builtin(s) => *s,
            Rules::Custom(s) => s.as_ref(),
        }
    }
}

impl WithMeta {
    /// Validate an update of the main resource: shared metadata rules, then the kind's.
    pub fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = meta::validate_update(new, old);
        errs.extend((**self).validate_update(new, old));
        field::dedup(errs)
    }

    /// Validate an update through `status`: shared metadata rules, then the kind's.
    pub fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = meta::validate_update(new, old);
        errs.extend((**self).validate_status_update(new, old));
        field::dedup(errs)
    }
}

fn kind_strategy(info: &ResourceInfo) -> &'static dyn Strategy {
    use workloads::{Workload, WorkloadStrategy};
    match (info.group, info.kind) {
        ("", "Pod") => &pod::PodStrategy,
        ("", "Node") => &cluster::NodeStrategy,
        ("", "Namespace") => &cluster::NamespaceStrategy,
        ("", "ConfigMap") => &cluster::ConfigMapStrategy,
        ("", "LimitRange") => &limitrange::LimitRangeStrategy,
        ("", "ResourceQuota") => &quota::ResourceQuotaStrategy,
        ("", "Secret") => &config::SecretStrategy,
        ("", "ServiceAccount") => &config::ServiceAccountStrategy,
        ("networking.k8s.io", "Ingress") => &networking::IngressStrategy,
        ("networking.k8s.io", "IngressClass") => &networking::IngressClassStrategy,
        ("networking.k8s.io", "NetworkPolicy") => &networking::NetworkPolicyStrategy,
        ("", "Service") => &service::ServiceStrategy,
        ("", "Endpoints") => &endpoints::EndpointsStrategy,
        ("discovery.k8s.io", "EndpointSlice") => &endpoints::EndpointSliceStrategy,
        ("apps", "Deployment") => &WorkloadStrategy(Workload::Deployment),
        ("apps", "ReplicaSet") => &WorkloadStrategy(Workload::ReplicaSet),
        ("apps", "DaemonSet") => &WorkloadStrategy(Workload::DaemonSet),
        ("apps", "StatefulSet") => &statefulset::StatefulSetStrategy,
        ("", "ReplicationController") => &replicationcontroller::ReplicationControllerStrategy,
        ("batch", "Job") => &batch::JobStrategy,
        ("batch", "CronJob") => &batch::CronJobStrategy,
        ("policy", "PodDisruptionBudget") => &policy::PdbStrategy,
        ("autoscaling", "HorizontalPodAutoscaler") => &autoscaling::HpaStrategy,
        ("scheduling.k8s.io", "PriorityClass") => &scheduling::PriorityClassStrategy,
        ("node.k8s.io", "RuntimeClass") => &node::RuntimeClassStrategy,
        ("", "Event") => &events::EventStrategy { strict: false },
        ("events.k8s.io", "Event") => &events::EventStrategy { strict: true },
        ("coordination.k8s.io", "Lease") => &coordination::LeaseStrategy,
        ("apps", "ControllerRevision") => &apps_status::ControllerRevisionStrategy,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => &apiextensions::CrdStrategy,
        ("apiregistration.k8s.io", "APIService") => &apiregistration::ApiServiceStrategy,
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            &admissionregistration::PolicyStrategy
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            &admissionregistration::BindingStrategy
        }
        ("", "PersistentVolume") => &storage::PersistentVolumeStrategy,
        ("", "PersistentVolumeClaim") => &storage::PersistentVolumeClaimStrategy,
        ("storage.k8s.io", "StorageClass") => &storage::StorageClassStrategy,
        ("rbac.authorization.k8s.io", "Role") => &rbac::RoleStrategy,
        ("rbac.authorization.k8s.io", "ClusterRole") => &rbac::ClusterRoleStrategy,
        ("rbac.authorization.k8s.io", "RoleBinding") => &rbac::BindingStrategy { namespaced: true },
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            &rbac::BindingStrategy { namespaced: false }
        }
        _ => &Plain,
    }
}

/// The warning every request to a deprecated built-in resource gets, as upstream's (v1
/// Endpoints since v1.33).
pub fn builtin_deprecation(info: &ResourceInfo) -> Option<String> {
    endpoints::deprecation(info)
}

/// Updates of the main resource keep the stored status.
pub fn keep_status(new: &mut Value, old: &Value) {
    if let Some(m) = new.as_object_mut() {
        match old.get("status") {
            Some(s) => m.insert("status".into(), s.clone()),
            None => m.remove("status"),
        };
    }
}

/// Updates through `status` take only the status; everything else stays as stored.
pub fn keep_spec_take_status(new: &mut Value, old: &Value) {
    let status = new.get("status").cloned();
    let mut kept = old.clone();
    if let Some(m) = kept.as_object_mut() {
        match status {
            Some(s) => m.insert("status".into(), s),
            None => m.remove("status"),
        };
        // The writer's resourceVersion precondition and metadata stay the new object's own.
        if let Some(meta) = new.get("metadata") {
            m.insert("metadata".into(), meta.clone());
        }
    }
    *new = kept;
}

/// Upstream's warning for the deprecated `node-role.kubernetes.io/master` key in node
/// selectors and node affinity of a pod spec at `path`.
pub(crate) fn deprecated_master_warnings(spec: Option<&Value>, path: &str) -> Vec<String> {
    const OLD: &str = "node-role.kubernetes.io/master";
    let mut out = Vec::new();
    let Some(spec) = spec else {
        return out;
    };
    if spec
        .pointer("/nodeSelector")
        .and_then(|m| m.get(OLD))
        .is_some()
    {
        out.push(format!(
            "{path}.nodeSelector[{OLD}]: use \"node-role.kubernetes.io/control-plane\" instead"
        ));
    }
    let mut flag = |terms: Option<&Value>,
                    expressions: &str,
                    field: &dyn Fn(usize, usize) -> String| {
        for (i, term) in terms
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let keys = term.pointer(expressions).and_then(Value::as_array);
            for (j, e) in keys.into_iter().flatten().enumerate() {
                if e.get("key").and_then(Value::as_str) == Some(OLD) {
                    out.push(format!(
                        "{path}.affinity.nodeAffinity.{}.key: {OLD} is use \"node-role.kubernetes.io/control-plane\" instead",
                        field(i, j)
                    ));
                }
            }
        }
    };
    flag(
        spec.pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms"),
        "/matchExpressions",
        &|i, j| format!("requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}].matchExpressions[{j}]"),
    );
    flag(
        spec.pointer("/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution"),
        "/preference/matchExpressions",
        &|i, j| {
            format!("preferredDuringSchedulingIgnoredDuringExecution[{i}].preference.matchExpressions[{j}]")
        },
    );
    out
}

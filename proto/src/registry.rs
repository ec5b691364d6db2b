//! The resource registry: every kind tinykube serves, with the facts discovery, routing,
//! storage and printing need (group, version, names, scope, subresources, verbs).
//!
//! The built-in kinds are the static table [`RESOURCES`]; custom resources are described at run
//! time from their CustomResourceDefinitions by [`custom::resources`]. The API server holds both
//! in one run-time registry.

pub mod custom;

use std::sync::Arc;

pub use custom::Custom;

/// Verbs of a full CRUD resource, in discovery order.
pub const CRUD_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// Verbs of a status or scale subresource.
pub const SUBRESOURCE_VERBS: &[&str] = &["get", "patch", "update"];

/// One subresource of a resource, as discovery lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Subresource {
    /// `status`, `scale`, `binding`, `eviction`, `finalize`.
    pub name: &'static str,
    /// Kind of the subresource's body.
    pub kind: &'static str,
    /// Group of that kind when it differs from the parent's (`policy` for `pods/eviction`).
    pub group: Option<&'static str>,
    /// Version of that kind when it differs from the parent's.
    pub version: Option<&'static str>,
    pub verbs: &'static [&'static str],
}

/// One served resource: a built-in from [`RESOURCES`], or a version of a custom resource whose
/// facts come from its CustomResourceDefinition at run time (see [`custom`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    /// API group; empty for the core (legacy) group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub list_kind: &'static str,
    /// Plural resource name used in URLs (`pods`).
    pub plural: &'static str,
    pub singular: &'static str,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub namespaced: bool,
    pub verbs: &'static [&'static str],
    pub subresources: &'static [Subresource],
    /// Whether `metadata.generation` is maintained (bumped on spec changes).
    pub has_generation: bool,
    /// The definition of a custom resource; `None` for built-in kinds.
    pub custom: Option<Arc<Custom>>,
}

impl ResourceInfo {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `pods` or `deployments.apps`, as kubectl names a resource in messages.
    pub fn qualified_plural(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Whether the subresource exists.
    pub fn subresource(&self, name: &str) -> Option<&'static Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// Whether the resource has a `status` subresource (and so a spec/status split).
    pub fn has_status(&self) -> bool {
        self.subresource("status").is_some()
    }
}

const STATUS: Subresource = Subresource {
    name: "status",
    kind: "",
    group: None,
    version: None,
    verbs: SUBRESOURCE_VERBS,
};

const fn status(kind: &'static str) -> Subresource {
    Subresource { kind, ..STATUS }
}

const fn scale() -> Subresource {
    Subresource {
        name: "scale",
        kind: "Scale",
        group: Some("autoscaling"),
        version: Some("v1"),
        verbs: SUBRESOURCE_VERBS,
    }
}

const NONE: &[&str] = &[];

/// A kind served with every CRUD verb and no subresources (the RBAC kinds).
const fn crud(
    group: &'static str,
    kind: &'static str,
    list_kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
) -> ResourceInfo {
    ResourceInfo {
        group,
        version: "v1",
        kind,
        list_kind,
        plural,
        singular,
        short_names: NONE,
        categories: NONE,
        namespaced,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: false,
        custom: None,
    }
}

/// A create-only review kind (access reviews, SelfSubjectReview): answered, never stored.
const fn review(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
) -> ResourceInfo {
    ResourceInfo {
        group,
        version: "v1",
        kind,
        list_kind: "",
        plural,
        singular,
        short_names: NONE,
        categories: NONE,
        namespaced,
        verbs: &["create"],
        subresources: &[],
        has_generation: false,
        custom: None,
    }
}

/// Every served resource, in discovery order within each group version.
pub static RESOURCES: &[ResourceInfo] = &[
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Binding",
        list_kind: "BindingList",
        plural: "bindings",
        singular: "binding",
        short_names: NONE,
        categories: NONE,
        namespaced: true,
        verbs: &["create"],
        subresources: &[],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "ConfigMap",
        list_kind: "ConfigMapList",
        plural: "configmaps",
        singular: "configmap",
        short_names: &["cm"],
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Endpoints",
        list_kind: "EndpointsList",
        plural: "endpoints",
        singular: "endpoints",
        short_names: &["ep"],
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Event",
        list_kind: "EventList",
        plural: "events",
        singular: "event",
        short_names: &["ev"],
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "LimitRange",
        list_kind: "LimitRangeList",
        plural: "limitranges",
        singular: "limitrange",
        short_names: &["limits"],
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Namespace",
        list_kind: "NamespaceList",
        plural: "namespaces",
        singular: "namespace",
        short_names: &["ns"],
        categories: NONE,
        namespaced: false,
        verbs: &[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ],
        subresources: &[
            Subresource {
                name: "finalize",
                kind: "Namespace",
                group: None,
                version: None,
                verbs: &["update"],
            },
            status("Namespace"),
        ],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Node",
        list_kind: "NodeList",
        plural: "nodes",
        singular: "node",
        short_names: &["no"],
        categories: NONE,
        namespaced: false,
        verbs: CRUD_VERBS,
        subresources: &[
            Subresource {
                name: "proxy",
                kind: "NodeProxyOptions",
                group: None,
                version: None,
                verbs: &["create", "delete", "get", "patch", "update"],
            },
            status("Node"),
        ],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "PersistentVolumeClaim",
        list_kind: "PersistentVolumeClaimList",
        plural: "persistentvolumeclaims",
        singular: "persistentvolumeclaim",
        short_names: &["pvc"],
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[status("PersistentVolumeClaim")],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "PersistentVolume",
        list_kind: "PersistentVolumeList",
        plural: "persistentvolumes",
        singular: "persistentvolume",
        short_names: &["pv"],
        categories: NONE,
        namespaced: false,
        verbs: CRUD_VERBS,
        subresources: &[status("PersistentVolume")],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Pod",
        list_kind: "PodList",
        plural: "pods",
        singular: "pod",
        short_names: &["po"],
        categories: &["all"],
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[
            Subresource {
                name: "attach",
                kind: "PodAttachOptions",
                group: None,
                version: None,
                verbs: &["create", "get"],
            },
            Subresource {
                name: "binding",
                kind: "Binding",
                group: None,
                version: None,
                verbs: &["create"],
            },
            Subresource {
                name: "eviction",
                kind: "Eviction",
                group: Some("policy"),
                version: Some("v1"),
                verbs: &["create"],
            },
            Subresource {
                name: "exec",
                kind: "PodExecOptions",
                group: None,
                version: None,
                verbs: &["create", "get"],
            },
            Subresource {
                name: "log",
                kind: "Pod",
                group: None,
                version: None,
                verbs: &["get"],
            },
            Subresource {
                name: "portforward",
                kind: "PodPortForwardOptions",
                group: None,
                version: None,
                verbs: &["create", "get"],
            },
            status("Pod"),
        ],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "ReplicationController",
        list_kind: "ReplicationControllerList",
        plural: "replicationcontrollers",
        singular: "replicationcontroller",
        short_names: &["rc"],
        categories: &["all"],
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[scale(), status("ReplicationController")],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "ResourceQuota",
        list_kind: "ResourceQuotaList",
        plural: "resourcequotas",
        singular: "resourcequota",
        short_names: &["quota"],
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[status("ResourceQuota")],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Secret",
        list_kind: "SecretList",
        plural: "secrets",
        singular: "secret",
        short_names: NONE,
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "ServiceAccount",
        list_kind: "ServiceAccountList",
        plural: "serviceaccounts",
        singular: "serviceaccount",
        short_names: &["sa"],
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[Subresource {
            name: "token",
            kind: "TokenRequest",
            group: Some("authentication.k8s.io"),
            version: Some("v1"),
            verbs: &["create"],
        }],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Service",
        list_kind: "ServiceList",
        plural: "services",
        singular: "service",
        short_names: &["svc"],
        categories: &["all"],
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[status("Service")],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "apps",
        version: "v1",
        kind: "ControllerRevision",
        list_kind: "ControllerRevisionList",
        plural: "controllerrevisions",
        singular: "controllerrevision",
        short_names: NONE,
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "apps",
        version: "v1",
        kind: "DaemonSet",
        list_kind: "DaemonSetList",
        plural: "daemonsets",
        singular: "daemonset",
        short_names: &["ds"],
        categories: &["all"],
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[status("DaemonSet")],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "apps",
        version: "v1",
        kind: "Deployment",
        list_kind: "DeploymentList",
        plural: "deployments",
        singular: "deployment",
        short_names: &["deploy"],
        categories: &["all"],
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[scale(), status("Deployment")],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "apps",
        version: "v1",
        kind: "ReplicaSet",
        list_kind: "ReplicaSetList",
        plural: "replicasets",
        singular: "replicaset",
        short_names: &["rs"],
        categories: &["all"],
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[scale(), status("ReplicaSet")],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "apps",
        version: "v1",
        kind: "StatefulSet",
        list_kind: "StatefulSetList",
        plural: "statefulsets",
        singular: "statefulset",
        short_names: &["sts"],
        categories: &["all"],
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[scale(), status("StatefulSet")],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "autoscaling",
        version: "v2",
        kind: "HorizontalPodAutoscaler",
        list_kind: "HorizontalPodAutoscalerList",
        plural: "horizontalpodautoscalers",
        singular: "horizontalpodautoscaler",
        short_names: &["hpa"],
        categories: &["all"],
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[status("HorizontalPodAutoscaler")],
        has_generation: false,
        custom: None,
    },
    // The same stored objects through the older schema (see `storage_group`).
    ResourceInfo {
        group: "autoscaling",
        version: "v1",
        kind: "HorizontalPodAutoscaler",
        list_kind: "HorizontalPodAutoscalerList",
        plural: "horizontalpodautoscalers",
        singular: "horizontalpodautoscaler",
        short_names: &["hpa"],
        categories: &["all"],
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[status("HorizontalPodAutoscaler")],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "batch",
        version: "v1",
        kind: "CronJob",
        list_kind: "CronJobList",
        plural: "cronjobs",
        singular: "cronjob",
        short_names: &["cj"],
        categories: &["all"],
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[status("CronJob")],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "batch",
        version: "v1",
        kind: "Job",
        list_kind: "JobList",
        plural: "jobs",
        singular: "job",
        short_names: NONE,
        categories: &["all"],
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[status("Job")],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "storage.k8s.io",
        version: "v1",
        kind: "StorageClass",
        list_kind: "StorageClassList",
        plural: "storageclasses",
        singular: "storageclass",
        short_names: &["sc"],
        categories: NONE,
        namespaced: false,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "admissionregistration.k8s.io",
        version: "v1",
        kind: "ValidatingAdmissionPolicy",
        list_kind: "ValidatingAdmissionPolicyList",
        plural: "validatingadmissionpolicies",
        singular: "validatingadmissionpolicy",
        short_names: NONE,
        categories: &["api-extensions"],
        namespaced: false,
        verbs: CRUD_VERBS,
        subresources: &[status("ValidatingAdmissionPolicy")],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "admissionregistration.k8s.io",
        version: "v1",
        kind: "ValidatingAdmissionPolicyBinding",
        list_kind: "ValidatingAdmissionPolicyBindingList",
        plural: "validatingadmissionpolicybindings",
        singular: "validatingadmissionpolicybinding",
        short_names: NONE,
        categories: &["api-extensions"],
        namespaced: false,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "apiregistration.k8s.io",
        version: "v1",
        kind: "APIService",
        list_kind: "APIServiceList",
        plural: "apiservices",
        singular: "apiservice",
        short_names: NONE,
        categories: &["api-extensions"],
        namespaced: false,
        verbs: CRUD_VERBS,
        subresources: &[status("APIService")],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "apiextensions.k8s.io",
        version: "v1",
        kind: "CustomResourceDefinition",
        list_kind: "CustomResourceDefinitionList",
        plural: "customresourcedefinitions",
        singular: "customresourcedefinition",
        short_names: &["crd", "crds"],
        categories: &["api-extensions"],
        namespaced: false,
        verbs: CRUD_VERBS,
        subresources: &[status("CustomResourceDefinition")],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "coordination.k8s.io",
        version: "v1",
        kind: "Lease",
        list_kind: "LeaseList",
        plural: "leases",
        singular: "lease",
        short_names: NONE,
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "events.k8s.io",
        version: "v1",
        kind: "Event",
        list_kind: "EventList",
        plural: "events",
        singular: "event",
        short_names: &["ev"],
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "networking.k8s.io",
        version: "v1",
        kind: "IngressClass",
        list_kind: "IngressClassList",
        plural: "ingressclasses",
        singular: "ingressclass",
        short_names: NONE,
        categories: NONE,
        namespaced: false,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "networking.k8s.io",
        version: "v1",
        kind: "Ingress",
        list_kind: "IngressList",
        plural: "ingresses",
        singular: "ingress",
        short_names: &["ing"],
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[status("Ingress")],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "networking.k8s.io",
        version: "v1",
        kind: "NetworkPolicy",
        list_kind: "NetworkPolicyList",
        plural: "networkpolicies",
        singular: "networkpolicy",
        short_names: &["netpol"],
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "policy",
        version: "v1",
        kind: "PodDisruptionBudget",
        list_kind: "PodDisruptionBudgetList",
        plural: "poddisruptionbudgets",
        singular: "poddisruptionbudget",
        short_names: &["pdb"],
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[status("PodDisruptionBudget")],
        has_generation: true,
        custom: None,
    },
    ResourceInfo {
        group: "scheduling.k8s.io",
        version: "v1",
        kind: "PriorityClass",
        list_kind: "PriorityClassList",
        plural: "priorityclasses",
        singular: "priorityclass",
        short_names: &["pc"],
        categories: NONE,
        namespaced: false,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "node.k8s.io",
        version: "v1",
        kind: "RuntimeClass",
        list_kind: "RuntimeClassList",
        plural: "runtimeclasses",
        singular: "runtimeclass",
        short_names: NONE,
        categories: NONE,
        namespaced: false,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: false,
        custom: None,
    },
    ResourceInfo {
        group: "discovery.k8s.io",
        version: "v1",
        kind: "EndpointSlice",
        list_kind: "EndpointSliceList",
        plural: "endpointslices",
        singular: "endpointslice",
        short_names: NONE,
        categories: NONE,
        namespaced: true,
        verbs: CRUD_VERBS,
        subresources: &[],
        has_generation: true,
        custom: None,
    },
    review(
        "authentication.k8s.io",
        "SelfSubjectReview",
        "selfsubjectreviews",
        "selfsubjectreview",
        false,
    ),
    review(
        "authentication.k8s.io",
        "TokenReview",
        "tokenreviews",
        "tokenreview",
        false,
    ),
    review(
        "authorization.k8s.io",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        "localsubjectaccessreview",
        true,
    ),
    review(
        "authorization.k8s.io",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        false,
    ),
    review(
        "authorization.k8s.io",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        "selfsubjectrulesreview",
        false,
    ),
    review(
        "authorization.k8s.io",
        "SubjectAccessReview",
        "subjectaccessreviews",
        "subjectaccessreview",
        false,
    ),
    crud(
        RBAC,
        "ClusterRoleBinding",
        "ClusterRoleBindingList",
        "clusterrolebindings",
        "clusterrolebinding",
        false,
    ),
    crud(
        RBAC,
        "ClusterRole",
        "ClusterRoleList",
        "clusterroles",
        "clusterrole",
        false,
    ),
    crud(
        RBAC,
        "RoleBinding",
        "RoleBindingList",
        "rolebindings",
        "rolebinding",
        true,
    ),
    crud(RBAC, "Role", "RoleList", "roles", "role", true),
];

/// The RBAC API group.
pub const RBAC: &str = "rbac.authorization.k8s.io";

/// Groups in the order `/apis` lists them (the core group is served under `/api`).
pub const GROUPS: &[&str] = &[
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
];

/// The built-in resource served at `group/version/plural`.
pub fn builtin(group: &str, version: &str, plural: &str) -> Option<&'static ResourceInfo> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The resource of a kind in a group.
pub fn by_kind(group: &str, kind: &str) -> Option<&'static ResourceInfo> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.kind == kind)
}

/// Every resource of one group version.
pub fn group_version(group: &str, version: &str) -> impl Iterator<Item = &'static ResourceInfo> {
    let group = group.to_string();
    let version = version.to_string();
    RESOURCES
        .iter()
        .filter(move |r| r.group == group && r.version == version)
}

/// The versions served for a group (one each today).
pub fn versions(group: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for r in RESOURCES.iter().filter(|r| r.group == group) {
        if !out.contains(&r.version) {
            out.push(r.version);
        }
    }
    out
}

/// The storage key prefix shared by both views of one stored kind: events.k8s.io/v1 Events are
/// the core Events seen through another schema, so both use the core key space.
pub fn storage_group(info: &ResourceInfo) -> &'static str {
    if info.group.is_empty() || info.group == "events.k8s.io" {
        "core"
    } else {
        info.group
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_find_served_resources() {
        let pods = builtin("", "v1", "pods").unwrap();
        assert_eq!(pods.kind, "Pod");
        assert!(pods.has_status());
        assert_eq!(pods.subresource("eviction").unwrap().group, Some("policy"));
        assert_eq!(by_kind("apps", "Deployment").unwrap().plural, "deployments");
        assert!(builtin("apps", "v1", "pods").is_none());
        assert_eq!(versions("apps"), vec!["v1"]);
        // autoscaling/v2 is preferred; v1 is a view of the same storage.
        assert_eq!(versions("autoscaling"), vec!["v2", "v1"]);
        let (v2, v1) = (
            builtin("autoscaling", "v2", "horizontalpodautoscalers").unwrap(),
            builtin("autoscaling", "v1", "horizontalpodautoscalers").unwrap(),
        );
        assert_eq!(storage_group(v2), storage_group(v1));
        assert_eq!(by_kind("autoscaling", "HorizontalPodAutoscaler"), Some(v2));
        assert_eq!(
            builtin("apps", "v1", "deployments").unwrap().api_version(),
            "apps/v1"
        );
    }

    #[test]
    fn every_group_is_listed() {
        for r in RESOURCES {
            assert!(
                r.group.is_empty() || GROUPS.contains(&r.group),
                "{}",
                r.group
            );
        }
    }
}

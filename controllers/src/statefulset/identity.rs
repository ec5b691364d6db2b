//! A StatefulSet pod's stable identity, as upstream's stateful_set_utils: the name
//! `SET-ORDINAL`, hostname and subdomain, the `statefulset.kubernetes.io/pod-name`,
//! `apps.kubernetes.io/pod-index` and `controller-revision-hash` labels, and its claims
//! `TEMPLATE-SET-ORDINAL` with the owner references the retention policy asks for. Pure.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::Resource;

use crate::history::HASH_LABEL;
use crate::util::new_controller_ref;

pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// The parent's name and the ordinal of a pod named `PARENT-ORDINAL` (upstream's
/// getParentNameAndOrdinal); `None` when the name has no such shape.
pub fn parent_and_ordinal(name: &str) -> Option<(&str, i32)> {
    let (parent, ordinal) = name.rsplit_once('-')?;
    if parent.is_empty() || ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((parent, ordinal.parse().ok()?))
}

pub fn ordinal_of(pod: &Pod) -> Option<i32> {
    parent_and_ordinal(pod.metadata.name.as_deref()?).map(|(_, o)| o)
}

pub fn set_name(set: &StatefulSet) -> &str {
    set.metadata.name.as_deref().unwrap_or_default()
}

pub fn pod_name(set: &StatefulSet, ordinal: i32) -> String {
    format!("{}-{ordinal}", set_name(set))
}

/// `spec.ordinals.start`, 0 when unset.
pub fn start_ordinal(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.ordinals.as_ref())
        .and_then(|o| o.start)
        .unwrap_or(0)
}

pub fn replicas(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1)
        .max(0)
}

/// Whether the pod's ordinal is within `[start, start + replicas)`.
pub fn in_ordinal_range(set: &StatefulSet, pod: &Pod) -> bool {
    let start = start_ordinal(set);
    ordinal_of(pod).is_some_and(|o| o >= start && o < start + replicas(set))
}

/// Whether a pod belongs to the set by its name (upstream's isMemberOf).
pub fn is_member_of(set: &StatefulSet, pod: &Pod) -> bool {
    pod.metadata
        .name
        .as_deref()
        .and_then(parent_and_ordinal)
        .is_some_and(|(parent, _)| parent == set_name(set))
}

/// The claims a pod of this ordinal has, by volume (template) name (upstream's
/// getPersistentVolumeClaims): `TEMPLATE-SET-ORDINAL`, labelled with the selector's labels.
pub fn claims_for(set: &StatefulSet, ordinal: i32) -> BTreeMap<String, PersistentVolumeClaim> {
    let spec = set.spec.as_ref();
    let templates = spec.and_then(|s| s.volume_claim_templates.clone());
    let match_labels = spec
        .and_then(|s| s.selector.match_labels.clone())
        .unwrap_or_default();
    let mut out = BTreeMap::new();
    for template in templates.into_iter().flatten() {
        let volume = template.metadata.name.clone().unwrap_or_default();
        let mut labels = template.metadata.labels.clone().unwrap_or_default();
        labels.extend(match_labels.clone());
        let claim = PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(format!("{volume}-{}-{ordinal}", set_name(set))),
                namespace: set.metadata.namespace.clone(),
                labels: Some(labels),
                annotations: template.metadata.annotations.clone(),
                ..Default::default()
            },
            spec: template.spec.clone(),
            status: None,
        };
        out.insert(volume, claim);
    }
    out
}

/// The pod's volumes with each claim template's volume pointing at its claim (upstream's
/// updateStorage), claim volumes first in name order.
fn storage_volumes(set: &StatefulSet, ordinal: i32, current: &[Volume]) -> Vec<Volume> {
    let claims = claims_for(set, ordinal);
    let mut volumes: Vec<Volume> = claims
        .iter()
        .map(|(volume, claim)| Volume {
            name: volume.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.metadata.name.clone().unwrap_or_default(),
                read_only: Some(false),
            }),
            ..Default::default()
        })
        .collect();
    volumes.extend(
        current
            .iter()
            .filter(|v| !claims.contains_key(&v.name))
            .cloned(),
    );
    volumes
}

/// The identity labels of the pod at `ordinal`.
fn set_identity(set: &StatefulSet, pod: &mut Pod, ordinal: i32) {
    let name = pod_name(set, ordinal);
    let labels = pod.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(POD_NAME_LABEL.into(), name.clone());
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
    pod.metadata.name = Some(name);
    pod.metadata.namespace = set.metadata.namespace.clone();
}

/// A new pod of `set` at `ordinal` from `template` (the template of `revision`), labelled
/// with that revision's name (upstream's newVersionedStatefulSetPod).
pub fn new_pod(set: &StatefulSet, template: &PodTemplateSpec, ordinal: i32, revision: &str) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    let mut pod = Pod {
        metadata: ObjectMeta {
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![new_controller_ref::<StatefulSet>(&set.metadata)]),
            ..Default::default()
        },
        spec: template.spec.clone(),
        status: None,
    };
    set_identity(set, &mut pod, ordinal);
    let labels = pod.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(HASH_LABEL.into(), revision.into());
    let name = pod.metadata.name.clone();
    let service = set.spec.as_ref().and_then(|s| s.service_name.clone());
    if let Some(spec) = pod.spec.as_mut() {
        spec.hostname = name;
        spec.subdomain = service.filter(|s| !s.is_empty());
        spec.volumes = Some(storage_volumes(
            set,
            ordinal,
            spec.volumes.as_deref().unwrap_or_default(),
        ))
        .filter(|v| !v.is_empty());
    }
    pod
}

/// Whether the pod carries the identity of its ordinal (upstream's identityMatches).
pub fn identity_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let Some(ordinal) = ordinal_of(pod) else {
        return false;
    };
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    is_member_of(set, pod)
        && pod.metadata.namespace == set.metadata.namespace
        && labels.get(POD_NAME_LABEL) == pod.metadata.name.as_ref()
        && labels.get(POD_INDEX_LABEL) == Some(&ordinal.to_string())
}

/// The pod with its identity labels put back (upstream's updateIdentity).
pub fn with_identity(set: &StatefulSet, pod: &Pod) -> Option<Pod> {
    let ordinal = ordinal_of(pod)?;
    let mut fixed = pod.clone();
    set_identity(set, &mut fixed, ordinal);
    Some(fixed)
}

/// Whether every claim template has its volume pointing at the claim (upstream's
/// storageMatches).
pub fn storage_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let Some(ordinal) = ordinal_of(pod) else {
        return false;
    };
    let volumes = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.clone())
        .unwrap_or_default();
    claims_for(set, ordinal).iter().all(|(volume, claim)| {
        volumes.iter().any(|v| {
            v.name == *volume
                && v.persistent_volume_claim
                    .as_ref()
                    .is_some_and(|c| Some(&c.claim_name) == claim.metadata.name.as_ref())
        })
    })
}

/// `spec.persistentVolumeClaimRetentionPolicy` as (whenDeleted, whenScaled) is Delete.
pub fn retention(set: &StatefulSet) -> (bool, bool) {
    let policy = set
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_claim_retention_policy.as_ref());
    let delete = |v: Option<&String>| v.is_some_and(|v| v == "Delete");
    (
        delete(policy.and_then(|p| p.when_deleted.as_ref())),
        delete(policy.and_then(|p| p.when_scaled.as_ref())),
    )
}

/// A plain owner reference (no `controller`), as upstream's retention policy sets on claims.
fn plain_ref<K: Resource>(meta: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        controller: None,
        block_owner_deletion: None,
        ..new_controller_ref::<K>(meta)
    }
}

/// The owner references a claim of `pod` should have under the set's retention policy
/// (upstream's updateClaimOwnerRefForSetAndPod), or `None` when it already has them:
/// WhenDeleted=Delete makes the set an owner, WhenScaled=Delete makes the pod an owner once
/// it is scaled down (then no longer the set).
pub fn claim_owners(
    set: &StatefulSet,
    pod: &Pod,
    claim: &ObjectMeta,
) -> Option<Vec<OwnerReference>> {
    let (when_deleted, when_scaled) = retention(set);
    let scaled_down = !in_ordinal_range(set, pod);
    let set_uid = set.metadata.uid.clone().unwrap_or_default();
    let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
    let (want_set, want_pod) = match (when_deleted, when_scaled) {
        (false, false) => (false, false),
        (true, false) => (true, false),
        (false, true) => (false, scaled_down),
        (true, true) => (!scaled_down, scaled_down),
    };
    let current = claim.owner_references.clone().unwrap_or_default();
    let mut next: Vec<OwnerReference> = current
        .iter()
        .filter(|r| {
            (r.uid != set_uid || want_set) && (r.uid != pod_uid || want_pod || pod_uid.is_empty())
        })
        .cloned()
        .collect();
    if want_set && !next.iter().any(|r| r.uid == set_uid) {
        next.push(plain_ref::<StatefulSet>(&set.metadata));
    }
    if want_pod && !pod_uid.is_empty() && !next.iter().any(|r| r.uid == pod_uid) {
        next.push(plain_ref::<Pod>(&pod.metadata));
    }
    (next != current).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn web(policy: serde_json::Value) -> StatefulSet {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "set-uid"},
            "spec": {"replicas": 2, "serviceName": "nginx", "selector": {"matchLabels": {"app": "nginx"}},
                     "persistentVolumeClaimRetentionPolicy": policy,
                     "template": {"metadata": {"labels": {"app": "nginx"}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx"}],
                                           "volumes": [{"name": "cache", "emptyDir": {}}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "www"},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}
        }))
        .unwrap()
    }

    #[test]
    fn ordinals_parse_as_upstream() {
        let table: &[(&str, Option<(&str, i32)>)] = &[
            ("web-0", Some(("web", 0))),
            ("web-12", Some(("web", 12))),
            ("my-web-3", Some(("my-web", 3))),
            ("web", None),
            ("web-", None),
            ("-3", None),
            ("web-x1", None),
            ("web-+1", None),
            ("web-99999999999", None),
        ];
        for (name, want) in table {
            assert_eq!(parent_and_ordinal(name), *want, "{name}");
        }
    }

    #[test]
    fn new_pods_carry_their_identity_and_claims() {
        let set = web(json!({}));
        let template = set.spec.as_ref().unwrap().template.clone();
        let pod = new_pod(&set, &template, 1, "web-abc");
        assert_eq!(pod.metadata.name.as_deref(), Some("web-1"));
        let labels = pod.metadata.labels.clone().unwrap();
        assert_eq!(labels[POD_NAME_LABEL], "web-1");
        assert_eq!(labels[POD_INDEX_LABEL], "1");
        assert_eq!(labels[HASH_LABEL], "web-abc");
        assert_eq!(labels["app"], "nginx");
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("web-1"));
        assert_eq!(spec.subdomain.as_deref(), Some("nginx"));
        let volumes = spec.volumes.clone().unwrap();
        assert_eq!(volumes.len(), 2);
        assert_eq!(volumes[0].name, "www");
        assert_eq!(
            volumes[0]
                .persistent_volume_claim
                .as_ref()
                .unwrap()
                .claim_name,
            "www-web-1"
        );
        assert_eq!(volumes[1].name, "cache");
        assert!(identity_matches(&set, &pod) && storage_matches(&set, &pod));
        let claim = &claims_for(&set, 1)["www"];
        assert_eq!(claim.metadata.name.as_deref(), Some("www-web-1"));
        assert_eq!(claim.metadata.labels.as_ref().unwrap()["app"], "nginx");
        // A pod whose labels were edited is repaired.
        let mut edited = pod.clone();
        edited
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .remove(POD_NAME_LABEL);
        assert!(!identity_matches(&set, &edited));
        assert!(identity_matches(
            &set,
            &with_identity(&set, &edited).unwrap()
        ));
        // Another set's pod is not ours.
        let mut other = pod.clone();
        other.metadata.name = Some("webx-1".into());
        assert!(!is_member_of(&set, &other) && !identity_matches(&set, &other));
    }

    #[test]
    fn claim_owners_follow_the_retention_policy() {
        let mut pod = Pod::default();
        pod.metadata.name = Some("web-1".into());
        pod.metadata.uid = Some("pod-uid".into());
        let mut scaled = pod.clone();
        scaled.metadata.name = Some("web-5".into());
        let uids = |refs: Option<Vec<OwnerReference>>| {
            refs.map(|r| r.into_iter().map(|r| r.uid).collect::<Vec<_>>())
        };
        let none = ObjectMeta::default();
        let by_set = ObjectMeta {
            owner_references: Some(vec![plain_ref::<StatefulSet>(&web(json!({})).metadata)]),
            ..Default::default()
        };
        let retain = json!({"whenDeleted": "Retain", "whenScaled": "Retain"});
        let on_delete = json!({"whenDeleted": "Delete", "whenScaled": "Retain"});
        let on_scale = json!({"whenDeleted": "Retain", "whenScaled": "Delete"});
        let both = json!({"whenDeleted": "Delete", "whenScaled": "Delete"});
        type Row<'a> = (
            serde_json::Value,
            &'a Pod,
            &'a ObjectMeta,
            Option<Vec<&'a str>>,
        );
        let table: Vec<Row> = vec![
            (retain.clone(), &pod, &none, None),
            (retain, &pod, &by_set, Some(vec![])),
            (on_delete.clone(), &pod, &none, Some(vec!["set-uid"])),
            (on_delete, &pod, &by_set, None),
            (on_scale.clone(), &pod, &none, None),
            (on_scale, &scaled, &none, Some(vec!["pod-uid"])),
            (both.clone(), &pod, &none, Some(vec!["set-uid"])),
            (both, &scaled, &by_set, Some(vec!["pod-uid"])),
        ];
        for (policy, pod, claim, want) in table {
            let got = uids(claim_owners(&web(policy.clone()), pod, claim));
            let want = want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
            assert_eq!(got, want, "{policy} {:?}", pod.metadata.name);
        }
    }
}

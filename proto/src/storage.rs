//! Binding rules for PersistentVolumes and PersistentVolumeClaims, as upstream's
//! `pkg/controller/volume/persistentvolume/util` and storage helpers: the class of a claim or a
//! volume, whether a volume fits a claim (class, access modes, volume mode, selector, capacity,
//! node affinity) and the best (smallest) fitting volume. Shared by the controller manager's
//! PV controller and the scheduler's VolumeBinding plugin.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};

use crate::labels::Selector;
use crate::node_affinity::term_matches;
use crate::quantity::Quantity;

/// The beta annotation that named the class before `storageClassName`.
pub const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// On a claim: binding finished (`"yes"`).
pub const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// On a claim or volume: the controller (not the user) bound it (`"yes"`).
pub const BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// On a volume: the provisioner that made it.
pub const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
/// On a claim: the node the scheduler chose, where a WaitForFirstConsumer volume is provisioned.
pub const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// On a claim: the provisioner expected to provision it (and its beta twin).
pub const STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
pub const BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
/// The finalizers that keep a claim or a volume while in use.
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
pub const PV_PROTECTION: &str = "kubernetes.io/pv-protection";
/// The StorageClass annotation of the default class.
pub const IS_DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";

fn annotation<'a>(annotations: &'a Option<BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
    annotations.as_ref()?.get(key).map(String::as_str)
}

/// A claim's class: the beta annotation, else `spec.storageClassName`, else `""`.
pub fn claim_class(claim: &PersistentVolumeClaim) -> &str {
    annotation(&claim.metadata.annotations, BETA_CLASS)
        .or_else(|| claim.spec.as_ref()?.storage_class_name.as_deref())
        .unwrap_or("")
}

/// A volume's class: the beta annotation, else `spec.storageClassName`, else `""`.
pub fn volume_class(volume: &PersistentVolume) -> &str {
    annotation(&volume.metadata.annotations, BETA_CLASS)
        .or_else(|| volume.spec.as_ref()?.storage_class_name.as_deref())
        .unwrap_or("")
}

/// A claim's requested storage.
pub fn claim_request(claim: &PersistentVolumeClaim) -> Option<Quantity> {
    let q = claim
        .spec
        .as_ref()?
        .resources
        .as_ref()?
        .requests
        .as_ref()?
        .get("storage")?;
    Quantity::parse(&q.0).ok()
}

/// A volume's storage capacity.
pub fn volume_capacity(volume: &PersistentVolume) -> Option<Quantity> {
    let q = volume.spec.as_ref()?.capacity.as_ref()?.get("storage")?;
    Quantity::parse(&q.0).ok()
}

/// Whether the volume's `claimRef` names this claim (and its uid, when the ref has one).
pub fn is_bound_to(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(r) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    r.name == claim.metadata.name
        && r.namespace == claim.metadata.namespace
        && r.uid
            .as_deref()
            .is_none_or(|u| u.is_empty() || Some(u) == claim.metadata.uid.as_deref())
}

/// Whether the volume's node affinity admits a node with these labels.
pub fn node_fits(
    volume: &PersistentVolume,
    labels: &BTreeMap<String, String>,
    node_name: &str,
) -> bool {
    let required = volume
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref());
    required.is_none_or(|r| {
        r.node_selector_terms
            .iter()
            .any(|t| term_matches(t, labels, node_name))
    })
}

/// Why a volume does not fit a claim, if it does not (capacity aside).
fn mismatch(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> Option<&'static str> {
    let (Some(vs), Some(cs)) = (volume.spec.as_ref(), claim.spec.as_ref()) else {
        return Some("no spec");
    };
    if volume_class(volume) != claim_class(claim) {
        return Some("storage class");
    }
    let mode = |m: &Option<String>| m.clone().unwrap_or_else(|| "Filesystem".into());
    if mode(&vs.volume_mode) != mode(&cs.volume_mode) {
        return Some("volume mode");
    }
    let have = vs.access_modes.as_deref().unwrap_or(&[]);
    let want = cs.access_modes.as_deref().unwrap_or(&[]);
    if !want.iter().all(|m| have.contains(m)) {
        return Some("access modes");
    }
    if let Some(sel) = &cs.selector {
        let labels = volume.metadata.labels.clone().unwrap_or_default();
        let matches = Selector::from_label_selector(sel).is_ok_and(|s| s.matches(&labels));
        if !matches {
            return Some("selector");
        }
    }
    None
}

/// Whether the volume could be bound to the claim (upstream's checkVolumeSatisfyClaim).
pub fn satisfies(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let enough = match (volume_capacity(volume), claim_request(claim)) {
        (Some(have), Some(want)) => have >= want,
        _ => false,
    };
    enough && mismatch(volume, claim).is_none()
}

/// Where binding must happen: on a node (`Some`, the scheduler's question), or anywhere.
pub struct NodeView<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
}

/// Upstream's findMatchingVolume: a volume pre-bound to the claim wins; else the smallest
/// available volume that satisfies it. A claim whose binding waits for its first consumer
/// (`delay_binding`) only takes a pre-bound volume unless a node is given; with a node, only
/// volumes whose node affinity admits it count.
pub fn find_best_match<'a>(
    claim: &PersistentVolumeClaim,
    volumes: impl IntoIterator<Item = &'a PersistentVolume>,
    delay_binding: bool,
    node: Option<&NodeView<'_>>,
) -> Option<&'a PersistentVolume> {
    let mut best: Option<(&PersistentVolume, Quantity)> = None;
    let claimed_name = claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .filter(|n| !n.is_empty());
    for v in volumes {
        if v.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if claimed_name.is_some_and(|n| v.metadata.name.as_deref() != Some(n)) {
            continue;
        }
        if let Some(n) = node {
            if !node_fits(v, n.labels, n.name) {
                continue;
            }
        }
        if is_bound_to(v, claim) {
            // Pre-bound by the user (or the scheduler): taken when it fits at all.
            if satisfies(v, claim) || mismatch(v, claim).is_none() {
                return Some(v);
            }
            continue;
        }
        let taken = v.spec.as_ref().and_then(|s| s.claim_ref.as_ref()).is_some();
        let phase = v.status.as_ref().and_then(|s| s.phase.as_deref());
        if taken || matches!(phase, Some("Released") | Some("Failed")) {
            continue;
        }
        if node.is_none() && delay_binding {
            continue;
        }
        if !satisfies(v, claim) {
            continue;
        }
        let size = volume_capacity(v).unwrap_or(Quantity::from_milli(0));
        if best.as_ref().is_none_or(|(_, s)| size < *s) {
            best = Some((v, size));
        }
    }
    best.map(|(v, _)| v)
}

/// Whether a claim is Bound to a volume.
pub fn is_bound(claim: &PersistentVolumeClaim) -> bool {
    let phase = claim.status.as_ref().and_then(|s| s.phase.as_deref());
    let volume = claim.spec.as_ref().and_then(|s| s.volume_name.as_deref());
    phase == Some("Bound") && volume.is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pv(name: &str, size: &str, modes: &[&str], extra: serde_json::Value) -> PersistentVolume {
        let mut v = json!({"metadata": {"name": name, "labels": {"tier": "fast"}},
            "spec": {"capacity": {"storage": size}, "accessModes": modes, "hostPath": {"path": "/x"}}});
        v = crate::patch::merge_patch(&v, &extra);
        serde_json::from_value(v).unwrap()
    }

    fn pvc(size: &str, extra: serde_json::Value) -> PersistentVolumeClaim {
        let mut c = json!({"metadata": {"name": "c", "namespace": "default", "uid": "u1"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}});
        c = crate::patch::merge_patch(&c, &extra);
        serde_json::from_value(c).unwrap()
    }

    #[test]
    fn the_smallest_fitting_volume_wins() {
        let vols = [
            pv("big", "10Gi", &["ReadWriteOnce"], json!({})),
            pv("small", "2Gi", &["ReadWriteOnce"], json!({})),
            pv("tiny", "500Mi", &["ReadWriteOnce"], json!({})),
            pv("rox", "1Gi", &["ReadOnlyMany"], json!({})),
            pv(
                "classy",
                "1Gi",
                &["ReadWriteOnce"],
                json!({"spec": {"storageClassName": "gold"}}),
            ),
            pv(
                "taken",
                "1Gi",
                &["ReadWriteOnce"],
                json!({"spec": {"claimRef": {"namespace": "default", "name": "other"}}}),
            ),
        ];
        type Row = (PersistentVolumeClaim, bool, Option<&'static str>);
        let table: Vec<Row> = vec![
            (pvc("1Gi", json!({})), false, Some("small")),
            (pvc("100Mi", json!({})), false, Some("tiny")),
            (pvc("20Gi", json!({})), false, None),
            (
                pvc("1Gi", json!({"spec": {"storageClassName": "gold"}})),
                false,
                Some("classy"),
            ),
            (
                pvc("1Gi", json!({"spec": {"accessModes": ["ReadOnlyMany"]}})),
                false,
                Some("rox"),
            ),
            (
                pvc(
                    "1Gi",
                    json!({"spec": {"selector": {"matchLabels": {"tier": "slow"}}}}),
                ),
                false,
                None,
            ),
            (
                pvc("1Gi", json!({"spec": {"volumeName": "big"}})),
                false,
                Some("big"),
            ),
            // Waiting for the first consumer: only with a node.
            (pvc("1Gi", json!({})), true, None),
        ];
        for (claim, delay, want) in table {
            let got = find_best_match(&claim, &vols, delay, None);
            assert_eq!(got.and_then(|v| v.metadata.name.as_deref()), want);
        }
    }

    #[test]
    fn pre_bound_volumes_and_node_affinity() {
        let claim = pvc("1Gi", json!({}));
        let pre = pv(
            "pre",
            "5Gi",
            &["ReadWriteOnce"],
            json!({"spec": {"claimRef": {"namespace": "default", "name": "c"}}}),
        );
        let small = pv("small", "1Gi", &["ReadWriteOnce"], json!({}));
        let vols = [small.clone(), pre];
        assert_eq!(
            find_best_match(&claim, &vols, false, None)
                .unwrap()
                .metadata
                .name
                .as_deref(),
            Some("pre")
        );
        let pinned = pv(
            "pinned",
            "1Gi",
            &["ReadWriteOnce"],
            json!({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}}}),
        );
        let labels =
            |n: &str| BTreeMap::from([("kubernetes.io/hostname".to_string(), n.to_string())]);
        let (l1, l2) = (labels("n1"), labels("n2"));
        let on = |name, labels| NodeView { name, labels };
        let vols = [pinned];
        assert!(find_best_match(&claim, &vols, true, Some(&on("n1", &l1))).is_some());
        assert!(find_best_match(&claim, &vols, true, Some(&on("n2", &l2))).is_none());
    }
}

//! A DaemonSet's template history in ControllerRevisions, as upstream: each revision is named
//! `DSNAME-<hash>`, labelled with the template's labels plus `controller-revision-hash`,
//! carries the DaemonSet's annotations (so `kubernetes.io/change-cause` shows in
//! `kubectl rollout history`) and holds the strategic-merge patch
//! `{"spec":{"template":{…,"$patch":"replace"}}}` that `kubectl rollout undo` applies.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use serde_json::{json, Value};
use tinykube_client::{Api, Patch};
use tinykube_proto::labels::Selector;

use super::sync::SyncError;
use super::Controller;
use crate::context::BY_NAMESPACE;
use crate::deployment::util::compute_hash;
use crate::util::{adopt_patch, controller_ref, new_controller_ref, release_patch};

/// The label that ties pods and revisions to a template (apps.DefaultDaemonSetUniqueLabelKey).
pub const HASH_LABEL: &str = "controller-revision-hash";

/// Keys sorted at every level, as Go's encoding/json writes maps.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The revision data of a DaemonSet (upstream's getPatch): its template, to be replaced whole.
pub fn patch_of(ds: &DaemonSet) -> Value {
    let mut template = serde_json::to_value(ds)
        .ok()
        .and_then(|v| v.pointer("/spec/template").cloned())
        .unwrap_or_else(|| json!({}));
    if let Some(m) = template.as_object_mut() {
        m.insert("$patch".into(), json!("replace"));
    }
    sorted(json!({"spec": {"template": template}}))
}

/// Whether a revision holds exactly the DaemonSet's current template (upstream's Match).
pub fn matches(ds: &DaemonSet, history: &ControllerRevision) -> bool {
    history
        .data
        .as_ref()
        .is_some_and(|d| sorted(d.0.clone()) == patch_of(ds))
}

/// The template hash of a DaemonSet (with its status' collision count).
pub fn hash_of(ds: &DaemonSet) -> String {
    let template = ds
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let collisions = ds.status.as_ref().and_then(|s| s.collision_count);
    compute_hash(&template, collisions)
}

/// `PREFIX-HASH`, the prefix cut so that the name stays a valid object name.
pub fn revision_name(ds_name: &str, hash: &str) -> String {
    let prefix: String = ds_name.chars().take(223).collect();
    format!("{prefix}-{hash}")
}

/// A new revision object for the DaemonSet's current template.
pub fn new_revision(ds: &DaemonSet, hash: &str, revision: i64) -> ControllerRevision {
    let mut labels = ds
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(HASH_LABEL.into(), hash.into());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision_name(
                ds.metadata.name.as_deref().unwrap_or_default(),
                hash,
            )),
            namespace: ds.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: ds.metadata.annotations.clone(),
            owner_references: Some(vec![new_controller_ref::<DaemonSet>(&ds.metadata)]),
            ..Default::default()
        },
        data: Some(RawExtension(patch_of(ds))),
        revision,
    }
}

/// Revisions that may be deleted to honour `limit`: the oldest first, never one whose hash a
/// live pod still carries (upstream's cleanupHistory).
pub fn to_clean_up<'a>(
    old: &'a [Arc<ControllerRevision>],
    limit: usize,
    live_hashes: &HashSet<String>,
) -> Vec<&'a ControllerRevision> {
    let mut to_kill = old.len().saturating_sub(limit);
    let mut sorted: Vec<&ControllerRevision> = old.iter().map(Arc::as_ref).collect();
    sorted.sort_by_key(|h| h.revision);
    let mut out = Vec::new();
    for h in sorted {
        if to_kill == 0 {
            break;
        }
        let hash = h.metadata.labels.as_ref().and_then(|l| l.get(HASH_LABEL));
        if hash.is_some_and(|x| live_hashes.contains(x)) {
            continue;
        }
        out.push(h);
        to_kill -= 1;
    }
    out
}

fn name_of(meta: &ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

impl Controller {
    /// The revisions this DaemonSet controls, adopting matching orphans and releasing owned
    /// revisions that no longer match.
    async fn controlled_histories(
        &self,
        ds: &DaemonSet,
        selector: &Selector,
    ) -> Result<Vec<Arc<ControllerRevision>>, SyncError> {
        let ns = ds.metadata.namespace.clone().unwrap_or_default();
        let uid = ds.metadata.uid.clone().unwrap_or_default();
        let api: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &ns);
        let mut owned = Vec::new();
        for h in self.revisions.by_index(BY_NAMESPACE, &ns) {
            let labels = h.metadata.labels.clone().unwrap_or_default();
            let matching = selector.matches(&labels);
            match controller_ref(&h.metadata) {
                Some(r) if r.uid != uid => {}
                Some(_) if matching => owned.push(h),
                Some(_) => {
                    let patch = release_patch(&h.metadata, &uid);
                    match api.patch(&name_of(&h.metadata), &Patch::Merge(patch)).await {
                        Ok(_) => {}
                        Err(e) if e.is_not_found() || e.code() == Some(422) => {}
                        Err(e) => return Err(SyncError::History(e)),
                    }
                }
                None if matching && h.metadata.deletion_timestamp.is_none() => {
                    let patch =
                        adopt_patch(&h.metadata, new_controller_ref::<DaemonSet>(&ds.metadata));
                    match api
                        .patch(&name_of(&h.metadata), &Patch::Strategic(patch))
                        .await
                    {
                        Ok(h) => owned.push(Arc::new(h)),
                        Err(e) if e.is_not_found() => {}
                        Err(e) => return Err(SyncError::History(e)),
                    }
                }
                None => {}
            }
        }
        Ok(owned)
    }

    /// The current revision (created, or renumbered to the newest, as needed) and the old
    /// ones (upstream's constructHistory).
    pub(super) async fn construct_history(
        &self,
        ds: &DaemonSet,
        selector: &Selector,
    ) -> Result<(ControllerRevision, Vec<Arc<ControllerRevision>>), SyncError> {
        let ns = ds.metadata.namespace.clone().unwrap_or_default();
        let api: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &ns);
        let mut current = Vec::new();
        let mut old = Vec::new();
        for h in self.controlled_histories(ds, selector).await? {
            let mut h = h;
            let has_hash = h
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(HASH_LABEL));
            if !has_hash {
                // Label it by its name, as upstream (no hash to recompute, no collision).
                let patch = json!({"metadata": {"labels": {HASH_LABEL: name_of(&h.metadata)}}});
                h = Arc::new(
                    api.patch(&name_of(&h.metadata), &Patch::Merge(patch))
                        .await
                        .map_err(SyncError::History)?,
                );
            }
            if matches(ds, &h) {
                current.push(h);
            } else {
                old.push(h);
            }
        }
        let next = old.iter().map(|h| h.revision).max().unwrap_or(0) + 1;
        let cur = if current.is_empty() {
            self.snapshot(ds, next).await?
        } else {
            let cur = self.dedup(ds, current).await?;
            if cur.revision < next {
                let patch = json!({"revision": next});
                api.patch(&name_of(&cur.metadata), &Patch::Merge(patch))
                    .await
                    .map_err(SyncError::History)?
            } else {
                cur
            }
        };
        Ok((cur, old))
    }

    /// Keep the newest of several revisions holding the current template; move pods of the
    /// others onto its hash and delete them.
    async fn dedup(
        &self,
        ds: &DaemonSet,
        mut current: Vec<Arc<ControllerRevision>>,
    ) -> Result<ControllerRevision, SyncError> {
        current.sort_by_key(|h| std::cmp::Reverse(h.revision));
        let keep = current.remove(0);
        if current.is_empty() {
            return Ok(keep.as_ref().clone());
        }
        let ns = ds.metadata.namespace.clone().unwrap_or_default();
        let keep_hash = keep
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HASH_LABEL))
            .cloned()
            .unwrap_or_default();
        let pods: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &ns);
        let revisions: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &ns);
        let uid = ds.metadata.uid.clone().unwrap_or_default();
        for dup in current {
            let dup_hash = dup.metadata.labels.as_ref().and_then(|l| l.get(HASH_LABEL));
            for pod in self.pods.by_index(crate::context::BY_OWNER, &uid) {
                let hash = pod.metadata.labels.as_ref().and_then(|l| l.get(HASH_LABEL));
                if hash.is_some() && hash == dup_hash {
                    let patch = json!({"metadata": {"labels": {HASH_LABEL: keep_hash}}});
                    match pods
                        .patch(&name_of(&pod.metadata), &Patch::Merge(patch))
                        .await
                    {
                        Ok(_) => {}
                        Err(e) if e.is_not_found() => {}
                        Err(e) => return Err(SyncError::History(e)),
                    }
                }
            }
            match revisions.delete(&name_of(&dup.metadata), None).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(SyncError::History(e)),
            }
        }
        Ok(keep.as_ref().clone())
    }

    /// Create the revision of the current template; on a name taken by another template, bump
    /// the DaemonSet's collisionCount and retry later (upstream's snapshot).
    async fn snapshot(
        &self,
        ds: &DaemonSet,
        revision: i64,
    ) -> Result<ControllerRevision, SyncError> {
        let ns = ds.metadata.namespace.clone().unwrap_or_default();
        let api: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &ns);
        let hash = hash_of(ds);
        let history = new_revision(ds, &hash, revision);
        let name = name_of(&history.metadata);
        let err = match api.create(&history).await {
            Ok(h) => return Ok(h),
            Err(e) if e.code() == Some(409) => e,
            Err(e) => return Err(SyncError::History(e)),
        };
        if let Some(existing) = api.get_opt(&name).await.map_err(SyncError::History)? {
            if matches(ds, &existing) {
                return Ok(existing);
            }
        }
        let ds_api: Api<DaemonSet> = Api::namespaced(self.ctx.client.clone(), &ns);
        let ds_name = name_of(&ds.metadata);
        let Some(mut fresh) = ds_api.get_opt(&ds_name).await.map_err(SyncError::History)? else {
            return Err(SyncError::History(err));
        };
        let ours = ds.status.as_ref().and_then(|s| s.collision_count);
        let theirs = fresh.status.as_ref().and_then(|s| s.collision_count);
        if ours != theirs {
            return Err(SyncError::StaleCollisionCount);
        }
        let status = fresh.status.get_or_insert_with(Default::default);
        status.collision_count = Some(theirs.unwrap_or(0) + 1);
        ds_api
            .replace_status(&ds_name, &fresh)
            .await
            .map_err(SyncError::Status)?;
        Err(SyncError::History(err))
    }

    /// Delete old revisions beyond `revisionHistoryLimit` that no pod still uses.
    pub(super) async fn cleanup_history(
        &self,
        ds: &DaemonSet,
        old: &[Arc<ControllerRevision>],
        pods: &[Arc<Pod>],
    ) -> Result<(), SyncError> {
        let limit = ds
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10)
            .max(0) as usize;
        if old.len() <= limit {
            return Ok(());
        }
        let live: HashSet<String> = pods
            .iter()
            .filter_map(|p| p.metadata.labels.as_ref()?.get(HASH_LABEL).cloned())
            .collect();
        let ns = ds.metadata.namespace.clone().unwrap_or_default();
        let api: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &ns);
        for h in to_clean_up(old, limit, &live) {
            match api.delete(&name_of(&h.metadata), None).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(SyncError::History(e)),
            }
        }
        Ok(())
    }
}

/// The hash label of a revision.
pub fn revision_hash(h: &ControllerRevision) -> String {
    h.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(HASH_LABEL))
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(image: &str, annotations: Value) -> DaemonSet {
        serde_json::from_value(json!({
            "metadata": {"name": "fluentd", "namespace": "kube-system", "uid": "u1", "annotations": annotations},
            "spec": {"selector": {"matchLabels": {"name": "fluentd"}},
                     "template": {"metadata": {"labels": {"name": "fluentd"}},
                                  "spec": {"containers": [{"name": "f", "image": image}]}}}
        }))
        .unwrap()
    }

    #[test]
    fn revisions_are_named_hashed_and_hold_the_template_patch() {
        let a = ds("fluentd:v1", json!({"kubernetes.io/change-cause": "first"}));
        let b = ds("fluentd:v2", Value::Null);
        let (ha, hb) = (hash_of(&a), hash_of(&b));
        assert_ne!(ha, hb, "different templates, different hashes");
        assert_eq!(ha, hash_of(&a.clone()), "stable");
        assert!(
            ha.len() <= 10
                && ha
                    .chars()
                    .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
        );
        let mut collided = a.clone();
        collided.status = Some(k8s_openapi::api::apps::v1::DaemonSetStatus {
            collision_count: Some(1),
            ..Default::default()
        });
        assert_ne!(
            hash_of(&collided),
            ha,
            "the collision count changes the hash"
        );

        let r = new_revision(&a, &ha, 3);
        assert_eq!(
            r.metadata.name.as_deref(),
            Some(format!("fluentd-{ha}").as_str())
        );
        assert_eq!(r.revision, 3);
        let labels = r.metadata.labels.clone().unwrap();
        assert_eq!(labels.get("name").map(String::as_str), Some("fluentd"));
        assert_eq!(labels.get(HASH_LABEL), Some(&ha));
        assert_eq!(
            r.metadata.annotations.as_ref().unwrap()["kubernetes.io/change-cause"],
            "first"
        );
        let owner = &r.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("DaemonSet", Some(true))
        );
        let data = serde_json::to_string(&r.data.as_ref().unwrap().0).unwrap();
        assert_eq!(
            data,
            r#"{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"name":"fluentd"}},"spec":{"containers":[{"image":"fluentd:v1","name":"f"}]}}}}"#
        );
        assert!(matches(&a, &r));
        assert!(!matches(&b, &r));
        assert_eq!(revision_name(&"x".repeat(300), "h").len(), 225);
    }

    #[test]
    fn cleanup_keeps_the_limit_and_live_hashes() {
        let rev = |n: i64, hash: &str| {
            Arc::new(ControllerRevision {
                metadata: ObjectMeta {
                    name: Some(format!("r{n}")),
                    labels: Some([(HASH_LABEL.to_string(), hash.to_string())].into()),
                    ..Default::default()
                },
                data: None,
                revision: n,
            })
        };
        let old = vec![rev(3, "c"), rev(1, "a"), rev(2, "b"), rev(4, "d")];
        let names = |limit, live: &[&str]| {
            let live: HashSet<String> = live.iter().map(|s| s.to_string()).collect();
            to_clean_up(&old, limit, &live)
                .iter()
                .map(|h| h.revision)
                .collect::<Vec<_>>()
        };
        assert_eq!(names(10, &[]), Vec::<i64>::new());
        assert_eq!(names(2, &[]), vec![1, 2]);
        assert_eq!(names(2, &["a"]), vec![2, 3]);
        assert_eq!(names(0, &["b", "d"]), vec![1, 3]);
    }
}

//! A DaemonSet's template history in ControllerRevisions `DSNAME-<hash>`, on the shared
//! [`crate::history`]: constructing the current revision (renumbered, deduplicated, or
//! created with collision handling through the DaemonSet's status) and pruning old ones.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{json, Value};
use tinykube_client::{Api, Patch};
use tinykube_proto::labels::Selector;

use super::sync::SyncError;
use super::Controller;
use crate::history;

pub use crate::history::{revision_name, to_clean_up, HASH_LABEL};

fn template(ds: &DaemonSet) -> PodTemplateSpec {
    ds.spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default()
}

/// The revision data of a DaemonSet (upstream's getPatch): its template, to be replaced whole.
pub fn patch_of(ds: &DaemonSet) -> Value {
    history::patch_of(&template(ds))
}

/// Whether a revision holds exactly the DaemonSet's current template (upstream's Match).
pub fn matches(ds: &DaemonSet, h: &ControllerRevision) -> bool {
    history::matches(&template(ds), h)
}

/// The template hash of a DaemonSet (with its status' collision count).
pub fn hash_of(ds: &DaemonSet) -> String {
    let collisions = ds.status.as_ref().and_then(|s| s.collision_count);
    history::hash_of(&template(ds), collisions)
}

/// A new revision object for the DaemonSet's current template.
pub fn new_revision(ds: &DaemonSet, hash: &str, revision: i64) -> ControllerRevision {
    history::new_revision(ds, &template(ds), hash, revision)
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
        history::claim(&self.ctx.client, &self.revisions, ds, selector)
            .await
            .map_err(SyncError::History)
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

pub use crate::history::revision_hash;

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
}

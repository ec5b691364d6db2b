//! A StatefulSet's current and update revisions, as upstream's getStatefulSetRevisions: the
//! update revision is the newest one if it holds the template, an older equal one renumbered
//! to the newest (a rollback, as `kubectl rollout undo` makes), or a new one `NAME-HASH`
//! (a name taken by another template bumps the collision count and tries again); the current
//! revision is the one `status.currentRevision` names. And truncateHistory.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use serde_json::json;
use tinykube_client::{Api, ClientError, Patch};

use super::Controller;
use crate::history::{self, HASH_LABEL};

/// How many names a collision may cost before the sync gives up (and retries later).
const MAX_COLLISIONS: i32 = 10;

/// The revisions a sync works with.
pub struct Revisions {
    pub current: ControllerRevision,
    pub update: ControllerRevision,
    pub collision_count: i32,
    /// Every revision the set controls, the two above included.
    pub all: Vec<Arc<ControllerRevision>>,
}

fn name_of(h: &ControllerRevision) -> &str {
    h.metadata.name.as_deref().unwrap_or_default()
}

pub fn template(set: &StatefulSet) -> PodTemplateSpec {
    set.spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default()
}

impl Controller {
    pub(super) async fn revisions(
        &self,
        set: &StatefulSet,
        mut all: Vec<Arc<ControllerRevision>>,
    ) -> Result<Revisions, ClientError> {
        all.sort_by(|a, b| (a.revision, name_of(a)).cmp(&(b.revision, name_of(b))));
        let ns = set.metadata.namespace.clone().unwrap_or_default();
        let api: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &ns);
        let mut collision_count = set
            .status
            .as_ref()
            .and_then(|s| s.collision_count)
            .unwrap_or(0);
        let template = template(set);
        let next = all.last().map_or(0, |h| h.revision) + 1;
        let equal: Vec<&Arc<ControllerRevision>> = all
            .iter()
            .filter(|h| history::matches(&template, h))
            .collect();
        let update = match (equal.last(), all.last()) {
            (Some(e), Some(last)) if name_of(e) == name_of(last) => last.as_ref().clone(),
            (Some(e), _) => {
                api.patch(name_of(e), &Patch::Merge(json!({"revision": next})))
                    .await?
            }
            (None, _) => loop {
                let hash = history::hash_of(&template, Some(collision_count));
                let fresh = history::new_revision(set, &template, &hash, next);
                let err = match api.create(&fresh).await {
                    Ok(h) => break h,
                    Err(e) if e.code() == Some(409) => e,
                    Err(e) => return Err(e),
                };
                match api.get_opt(name_of(&fresh)).await? {
                    Some(existing) if history::matches(&template, &existing) => break existing,
                    _ if collision_count >= MAX_COLLISIONS => return Err(err),
                    _ => collision_count += 1,
                }
            },
        };
        let wanted = set.status.as_ref().and_then(|s| s.current_revision.clone());
        let current = all
            .iter()
            .find(|h| h.metadata.name.is_some() && h.metadata.name == wanted)
            .map(|h| h.as_ref().clone())
            .unwrap_or_else(|| update.clone());
        if !all.iter().any(|h| name_of(h) == name_of(&update)) {
            all.push(Arc::new(update.clone()));
        }
        Ok(Revisions {
            current,
            update,
            collision_count,
            all,
        })
    }

    /// Delete the oldest revisions beyond `revisionHistoryLimit` that neither a pod, the
    /// current nor the update revision uses (upstream's truncateHistory).
    pub(super) async fn truncate_history(
        &self,
        set: &StatefulSet,
        pods: &[Arc<Pod>],
        r: &Revisions,
    ) -> Result<(), ClientError> {
        let mut live: HashSet<String> = pods
            .iter()
            .filter_map(|p| p.metadata.labels.as_ref()?.get(HASH_LABEL).cloned())
            .collect();
        live.insert(name_of(&r.current).to_string());
        live.insert(name_of(&r.update).to_string());
        let old: Vec<Arc<ControllerRevision>> = r
            .all
            .iter()
            .filter(|h| !live.contains(name_of(h)))
            .cloned()
            .collect();
        let limit = set
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10)
            .max(0) as usize;
        let ns = set.metadata.namespace.clone().unwrap_or_default();
        let api: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &ns);
        for h in history::to_clean_up(&old, limit, &live) {
            match api.delete(name_of(h), None).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

//! Reconcile one Deployment: claim its ReplicaSets, find or create the new one (syncing the
//! revision annotations), then scale (paused or a scaling event) or roll out, and write
//! `status` and conditions through the status subresource.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet, ReplicaSetSpec};
use serde_json::json;
use tinykube_client::events::EventType;
use tinykube_client::{Api, ClientError, Patch};
use tinykube_proto::labels::Selector;

use super::util::{self as du, rs_replicas};
use super::Controller;
use crate::context::BY_NAMESPACE;
use crate::owned::{self, Owner};
use crate::util::{controller_ref, new_controller_ref, object_ref};

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("adopting or releasing replica sets: {0}")]
    Claim(#[source] ClientError),
    #[error("creating replica set {name}: {source}")]
    Create {
        name: String,
        #[source]
        source: ClientError,
    },
    #[error(
        "replica set {0} exists with another template: hash collision, retrying with a new count"
    )]
    Collision(String),
    #[error("updating replica set {name}: {source}")]
    Scale {
        name: String,
        #[source]
        source: ClientError,
    },
    #[error("deleting old replica set {name}: {source}")]
    Cleanup {
        name: String,
        #[source]
        source: ClientError,
    },
    #[error("updating the deployment: {0}")]
    Update(#[source] ClientError),
}

/// The ReplicaSets of one Deployment; `new` indexes the one matching its template.
pub struct Sets {
    pub all: Vec<ReplicaSet>,
    pub new: Option<usize>,
}

impl Sets {
    pub fn new_rs(&self) -> Option<&ReplicaSet> {
        self.new.map(|i| &self.all[i])
    }

    pub fn old(&self) -> Vec<usize> {
        (0..self.all.len())
            .filter(|i| Some(*i) != self.new)
            .collect()
    }

    pub fn refs(&self) -> Vec<&ReplicaSet> {
        self.all.iter().collect()
    }

    pub fn active(&self) -> Vec<usize> {
        (0..self.all.len())
            .filter(|i| rs_replicas(&self.all[*i]) > 0)
            .collect()
    }
}

fn name_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

impl Controller {
    fn d_api(&self, d: &Deployment) -> Api<Deployment> {
        Api::namespaced(
            self.ctx.client.clone(),
            d.metadata.namespace.as_deref().unwrap_or_default(),
        )
    }

    pub(super) fn rs_api(&self, d: &Deployment) -> Api<ReplicaSet> {
        Api::namespaced(
            self.ctx.client.clone(),
            d.metadata.namespace.as_deref().unwrap_or_default(),
        )
    }

    pub(super) fn event(
        &self,
        d: &Deployment,
        kind: EventType,
        reason: &'static str,
        message: String,
    ) {
        self.recorder.record(
            &object_ref::<Deployment>(&d.metadata),
            kind,
            reason,
            message,
        );
    }

    /// Reconcile the Deployment at `key`.
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some(cached) = self.deployments.get(key) else {
            return Ok(());
        };
        let mut d = (*cached).clone();
        let Some(selector) = d.selector().filter(|s| !s.is_everything()) else {
            self.event(
                &d,
                EventType::Warning,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.".into(),
            );
            return Ok(());
        };
        let rss = self.claim(&d, &selector).await?;
        if d.metadata.deletion_timestamp.is_some() {
            let sets = self.get_all(&mut d, rss, false).await?;
            return self.sync_status(&mut d, &sets).await;
        }
        self.check_paused(&mut d).await?;
        let paused = d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false);
        let mut sets = self.get_all(&mut d, rss, false).await?;
        let scaling = sets.active().iter().any(|i| {
            sets.all[*i]
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(du::DESIRED_REPLICAS))
                .and_then(|v| v.parse::<i32>().ok())
                .is_some_and(|want| want != du::replicas(&d))
        });
        if paused || scaling {
            self.scale(&d, &mut sets).await?;
            if paused {
                self.cleanup(&d, &sets).await?;
            }
            return self.sync_status(&mut d, &sets).await;
        }
        if du::is_rolling(&d) {
            self.rollout_rolling(&mut d, sets.all).await
        } else {
            self.rollout_recreate(&mut d, sets.all).await
        }
    }

    /// Upstream's ClaimReplicaSets: adopt matching orphans, release those that stopped matching.
    async fn claim(
        &self,
        d: &Deployment,
        selector: &Selector,
    ) -> Result<Vec<ReplicaSet>, SyncError> {
        let ns = d.metadata.namespace.as_deref().unwrap_or_default();
        let candidates = self.replicasets.by_index(BY_NAMESPACE, ns);
        let owned = owned::claim(&self.ctx.client, d, selector, candidates)
            .await
            .map_err(SyncError::Claim)?;
        Ok(owned.into_iter().map(Arc::unwrap_or_clone).collect())
    }

    /// Upstream's getAllReplicaSetsAndSyncRevision: the new ReplicaSet (created when `create`)
    /// and the old ones, with the revision annotations brought up to date.
    pub(super) async fn get_all(
        &self,
        d: &mut Deployment,
        mut all: Vec<ReplicaSet>,
        create: bool,
    ) -> Result<Sets, SyncError> {
        all.sort_by(|a, b| {
            let t = |r: &ReplicaSet| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
            t(a).cmp(&t(b)).then(a.metadata.name.cmp(&b.metadata.name))
        });
        let template = d
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        let new = all.iter().position(|rs| {
            rs.spec
                .as_ref()
                .and_then(|s| s.template.as_ref())
                .is_some_and(|t| du::equal_ignore_hash(t, &template))
        });
        let max_old = all
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != new)
            .map(|(_, rs)| du::revision(rs))
            .max()
            .unwrap_or(0);
        let new_revision = max_old + 1;
        let min_ready = d.spec.as_ref().and_then(|s| s.min_ready_seconds);
        if let Some(i) = new {
            let mut rs = all[i].clone();
            let mut changed = du::copy_annotations(d, &mut rs);
            let old_revision = du::revision(&rs);
            if old_revision < new_revision {
                let a = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
                a.insert(du::REVISION.into(), new_revision.to_string());
                if old_revision > 0 {
                    let history = match a.get(du::REVISION_HISTORY) {
                        Some(h) if !h.is_empty() => format!("{h},{old_revision}"),
                        _ => old_revision.to_string(),
                    };
                    a.insert(du::REVISION_HISTORY.into(), history);
                }
                changed = true;
            }
            let spec = rs.spec.get_or_insert_with(Default::default);
            if spec.min_ready_seconds != min_ready {
                spec.min_ready_seconds = min_ready;
                changed = true;
            }
            if changed {
                let name = name_of(&rs.metadata);
                rs = self
                    .rs_api(d)
                    .replace(&name, &rs)
                    .await
                    .map_err(|source| SyncError::Scale { name, source })?;
            }
            let revision = du::revision(&rs);
            let name = name_of(&rs.metadata);
            all[i] = rs;
            self.set_revision(d, revision).await?;
            let mut status = d.status.clone().unwrap_or_default();
            if du::progress_deadline(d).is_some() && du::condition(&status, "Progressing").is_none()
            {
                du::set_condition(
                    &mut status,
                    du::new_condition(
                        "Progressing",
                        "True",
                        du::FOUND_NEW_RS,
                        format!("Found new replica set {name:?}"),
                        self.ctx.clock.timestamp(),
                    ),
                );
                self.write_status(d, status).await?;
            }
            return Ok(Sets { all, new: Some(i) });
        }
        if !create {
            return Ok(Sets { all, new: None });
        }
        let created = self.create_new(d, &all, template, new_revision).await?;
        all.push(created);
        let i = all.len() - 1;
        Ok(Sets { all, new: Some(i) })
    }

    /// Create `NAME-<hash>` for the current template, sized within maxSurge.
    async fn create_new(
        &self,
        d: &mut Deployment,
        all: &[ReplicaSet],
        template: k8s_openapi::api::core::v1::PodTemplateSpec,
        revision: i64,
    ) -> Result<ReplicaSet, SyncError> {
        let collisions = d.status.as_ref().and_then(|s| s.collision_count);
        let hash = du::compute_hash(&template, collisions);
        let mut template = template;
        template
            .metadata
            .get_or_insert_with(Default::default)
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(du::HASH_LABEL.into(), hash.clone());
        let mut selector = d
            .spec
            .as_ref()
            .map(|s| s.selector.clone())
            .unwrap_or_default();
        selector
            .match_labels
            .get_or_insert_with(BTreeMap::new)
            .insert(du::HASH_LABEL.into(), hash.clone());
        let name = format!("{}-{hash}", name_of(&d.metadata));
        let mut rs = ReplicaSet {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.clone()),
                namespace: d.metadata.namespace.clone(),
                labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
                owner_references: Some(vec![new_controller_ref::<Deployment>(&d.metadata)]),
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(0),
                min_ready_seconds: d.spec.as_ref().and_then(|s| s.min_ready_seconds),
                selector,
                template: Some(template.clone()),
            }),
            status: None,
        };
        let refs: Vec<&ReplicaSet> = all.iter().collect();
        let replicas = du::new_rs_new_replicas(d, &refs, 0);
        if let Some(s) = rs.spec.as_mut() {
            s.replicas = Some(replicas);
        }
        du::copy_annotations(d, &mut rs);
        rs.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(du::REVISION.into(), revision.to_string());
        du::set_replicas_annotations(&mut rs, du::replicas(d), du::replicas(d) + du::max_surge(d));
        let api = self.rs_api(d);
        let (created, existed) = match api.create(&rs).await {
            Ok(c) => (c, false),
            Err(e) if e.code() == Some(409) => {
                // Our cache may be behind: it is ours if it has our owner and template.
                let existing = api
                    .get_opt(&name)
                    .await
                    .map_err(|source| SyncError::Create {
                        name: name.clone(),
                        source,
                    })?;
                match existing {
                    Some(x)
                        if controller_ref(&x.metadata).map(|r| r.uid.as_str())
                            == d.metadata.uid.as_deref()
                            && x.spec
                                .as_ref()
                                .and_then(|s| s.template.as_ref())
                                .is_some_and(|t| du::equal_ignore_hash(t, &template)) =>
                    {
                        (x, true)
                    }
                    _ => {
                        let mut status = d.status.clone().unwrap_or_default();
                        status.collision_count = Some(collisions.unwrap_or(0) + 1);
                        self.write_status(d, status).await?;
                        return Err(SyncError::Collision(name));
                    }
                }
            }
            Err(source) => return Err(SyncError::Create { name, source }),
        };
        if !existed && replicas > 0 {
            self.event(
                d,
                EventType::Normal,
                "ScalingReplicaSet",
                format!("Scaled up replica set {name} from 0 to {replicas}"),
            );
        }
        self.set_revision(d, revision).await?;
        if !existed && du::progress_deadline(d).is_some() {
            let mut status = d.status.clone().unwrap_or_default();
            du::set_condition(
                &mut status,
                du::new_condition(
                    "Progressing",
                    "True",
                    du::NEW_RS_CREATED,
                    format!("Created new replica set {name:?}"),
                    self.ctx.clock.timestamp(),
                ),
            );
            self.write_status(d, status).await?;
        }
        Ok(created)
    }

    /// Keep the Deployment's revision annotation equal to its new ReplicaSet's.
    async fn set_revision(&self, d: &mut Deployment, revision: i64) -> Result<(), SyncError> {
        let current = d
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(du::REVISION))
            .and_then(|v| v.parse::<i64>().ok());
        if current == Some(revision) {
            return Ok(());
        }
        let patch = json!({"metadata": {"annotations": {du::REVISION: revision.to_string()}}});
        *d = self
            .d_api(d)
            .patch(&name_of(&d.metadata), &Patch::Merge(patch))
            .await
            .map_err(SyncError::Update)?;
        Ok(())
    }

    /// Write `status` through the status subresource and keep the answer.
    pub(super) async fn write_status(
        &self,
        d: &mut Deployment,
        status: DeploymentStatus,
    ) -> Result<(), SyncError> {
        let mut next = d.clone();
        next.status = Some(status);
        *d = self
            .d_api(d)
            .replace_status(&name_of(&d.metadata), &next)
            .await
            .map_err(SyncError::Update)?;
        Ok(())
    }

    /// Upstream's syncDeploymentStatus: counts and the Available condition.
    pub(super) async fn sync_status(
        &self,
        d: &mut Deployment,
        sets: &Sets,
    ) -> Result<(), SyncError> {
        let now = self.ctx.clock.timestamp();
        let status = du::calculate_status(d, &sets.refs(), sets.new_rs(), now);
        if d.status.as_ref() == Some(&status) {
            return Ok(());
        }
        self.write_status(d, status).await
    }

    /// Upstream's checkPausedConditions: Progressing Unknown while paused, and on resume.
    async fn check_paused(&self, d: &mut Deployment) -> Result<(), SyncError> {
        if du::progress_deadline(d).is_none() {
            return Ok(());
        }
        let now = self.ctx.clock.timestamp();
        let mut status = d.status.clone().unwrap_or_default();
        let reason = du::condition(&status, "Progressing").and_then(|c| c.reason.clone());
        if reason.as_deref() == Some(du::TIMED_OUT) {
            return Ok(());
        }
        let paused = d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false);
        let marked = reason.as_deref() == Some(du::PAUSED);
        let condition = if paused && !marked {
            du::new_condition(
                "Progressing",
                "Unknown",
                du::PAUSED,
                "Deployment is paused".into(),
                now,
            )
        } else if !paused && marked {
            du::new_condition(
                "Progressing",
                "Unknown",
                du::RESUMED,
                "Deployment is resumed".into(),
                now,
            )
        } else {
            return Ok(());
        };
        du::set_condition(&mut status, condition);
        self.write_status(d, status).await
    }

    /// Set one ReplicaSet's size (and the desired/max annotations); records ScalingReplicaSet.
    pub(super) async fn scale_rs(
        &self,
        d: &Deployment,
        rs: &mut ReplicaSet,
        size: i32,
        direction: Option<&str>,
    ) -> Result<bool, SyncError> {
        let old = rs_replicas(rs);
        let resized = old != size;
        let annotated =
            du::set_replicas_annotations(rs, du::replicas(d), du::replicas(d) + du::max_surge(d));
        if !resized && !annotated {
            return Ok(false);
        }
        rs.spec.get_or_insert_with(Default::default).replicas = Some(size);
        let name = name_of(&rs.metadata);
        *rs = self
            .rs_api(d)
            .replace(&name, rs)
            .await
            .map_err(|source| SyncError::Scale {
                name: name.clone(),
                source,
            })?;
        if resized {
            let direction = direction.unwrap_or(if old < size { "up" } else { "down" });
            self.event(
                d,
                EventType::Normal,
                "ScalingReplicaSet",
                format!("Scaled {direction} replica set {name} from {old} to {size}"),
            );
        }
        Ok(resized)
    }

    /// Delete old ReplicaSets beyond `revisionHistoryLimit` (oldest revisions first), only
    /// those already scaled to zero and settled.
    pub(super) async fn cleanup(&self, d: &Deployment, sets: &Sets) -> Result<(), SyncError> {
        let Some(limit) = d.spec.as_ref().and_then(|s| s.revision_history_limit) else {
            return Ok(());
        };
        let mut old: Vec<&ReplicaSet> = sets
            .old()
            .into_iter()
            .map(|i| &sets.all[i])
            .filter(|rs| rs.metadata.deletion_timestamp.is_none())
            .collect();
        let excess = old.len() as i64 - i64::from(limit.max(0));
        if excess <= 0 {
            return Ok(());
        }
        old.sort_by_key(|rs| du::revision(rs));
        for rs in old.into_iter().take(excess as usize) {
            let settled = du::rs_actual(rs) == 0
                && rs_replicas(rs) == 0
                && rs.metadata.generation <= rs.status.as_ref().and_then(|s| s.observed_generation);
            if !settled {
                continue;
            }
            let name = name_of(&rs.metadata);
            match self.rs_api(d).delete(&name, None).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(source) => return Err(SyncError::Cleanup { name, source }),
            }
        }
        Ok(())
    }
}

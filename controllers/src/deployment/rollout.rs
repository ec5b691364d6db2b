//! The two strategies and proportional scaling: RollingUpdate (grow the new ReplicaSet within
//! maxSurge, shrink old ones within maxUnavailable), Recreate (old ones to zero, wait for
//! their pods, then the new one), and the rollout status with the Progressing condition.

use std::collections::HashMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::sync::{Sets, SyncError};
use super::util::{self as du, rs_available, rs_replicas};
use super::Controller;
use crate::context::BY_OWNER;
use crate::util::{is_pod_active, secs};

fn created(rs: &ReplicaSet) -> Option<k8s_openapi::jiff::Timestamp> {
    rs.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

impl Controller {
    /// Upstream's scale: one active ReplicaSet takes the whole size; a saturated new one
    /// empties the old ones; otherwise extra replicas are shared in proportion.
    pub(super) async fn scale(&self, d: &Deployment, sets: &mut Sets) -> Result<(), SyncError> {
        let want = du::replicas(d);
        let active = sets.active();
        let only = match active.len() {
            1 => Some(active[0]),
            0 => sets
                .new
                .or_else(|| (0..sets.all.len()).max_by_key(|i| created(&sets.all[*i]))),
            _ => None,
        };
        if let Some(i) = only {
            if rs_replicas(&sets.all[i]) != want {
                self.scale_rs(d, &mut sets.all[i], want, None).await?;
            }
            return Ok(());
        }
        let saturated = sets.new_rs().is_some_and(|rs| {
            let desired = rs
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(du::DESIRED_REPLICAS))
                .and_then(|v| v.parse::<i32>().ok());
            rs_replicas(rs) == want && desired == Some(want) && rs_available(rs) == want
        });
        if saturated {
            for i in sets.old() {
                if rs_replicas(&sets.all[i]) > 0 {
                    self.scale_rs(d, &mut sets.all[i], 0, None).await?;
                }
            }
            return Ok(());
        }
        if !du::is_rolling(d) {
            return Ok(());
        }
        let mut order = active;
        let total: i32 = order.iter().map(|i| rs_replicas(&sets.all[*i])).sum();
        let allowed = if want > 0 { want + du::max_surge(d) } else { 0 };
        let to_add = allowed - total;
        order.sort_by(|a, b| {
            let (ra, rb) = (&sets.all[*a], &sets.all[*b]);
            let size = rs_replicas(rb).cmp(&rs_replicas(ra));
            if to_add >= 0 {
                size.then(created(rb).cmp(&created(ra)))
            } else {
                size.then(created(ra).cmp(&created(rb)))
            }
        });
        let mut sizes: HashMap<usize, i32> = HashMap::new();
        let mut added = 0;
        for i in &order {
            let rs = &sets.all[*i];
            let p = if to_add != 0 {
                du::proportion(rs, d, to_add, added)
            } else {
                0
            };
            sizes.insert(*i, rs_replicas(rs) + p);
            added += p;
        }
        if to_add != 0 {
            if let Some(first) = order.first() {
                let s = sizes.entry(*first).or_insert(0);
                *s = (*s + to_add - added).max(0);
            }
        }
        let direction = if to_add > 0 { "up" } else { "down" };
        for i in order {
            let size = sizes.get(&i).copied().unwrap_or(0);
            self.scale_rs(d, &mut sets.all[i], size, Some(direction))
                .await?;
        }
        Ok(())
    }

    pub(super) async fn rollout_rolling(
        &self,
        d: &mut Deployment,
        rss: Vec<ReplicaSet>,
    ) -> Result<(), SyncError> {
        let mut sets = self.get_all(d, rss, true).await?;
        if self.reconcile_new(d, &mut sets).await? || self.reconcile_old(d, &mut sets).await? {
            return self.sync_rollout_status(d, &sets).await;
        }
        let now = self.ctx.clock.timestamp();
        let status = du::calculate_status(d, &sets.refs(), sets.new_rs(), now);
        if du::is_complete(d, &status) {
            self.cleanup(d, &sets).await?;
        }
        self.sync_rollout_status(d, &sets).await
    }

    /// Grow (or trim) the new ReplicaSet within maxSurge.
    async fn reconcile_new(&self, d: &Deployment, sets: &mut Sets) -> Result<bool, SyncError> {
        let Some(i) = sets.new else {
            return Ok(false);
        };
        let want = du::replicas(d);
        let current = rs_replicas(&sets.all[i]);
        if current == want {
            return Ok(false);
        }
        if current > want {
            return self.scale_rs(d, &mut sets.all[i], want, Some("down")).await;
        }
        let size = du::new_rs_new_replicas(d, &sets.refs(), current);
        self.scale_rs(d, &mut sets.all[i], size, Some("up")).await
    }

    /// Shrink old ReplicaSets: unhealthy replicas first, then within maxUnavailable.
    async fn reconcile_old(&self, d: &Deployment, sets: &mut Sets) -> Result<bool, SyncError> {
        let mut old: Vec<usize> = sets
            .old()
            .into_iter()
            .filter(|i| rs_replicas(&sets.all[*i]) > 0)
            .collect();
        if old.is_empty() {
            return Ok(false);
        }
        old.sort_by(|a, b| created(&sets.all[*a]).cmp(&created(&sets.all[*b])));
        let all_pods: i32 = sets.all.iter().map(rs_replicas).sum();
        let min_available = du::replicas(d) - du::max_unavailable(d);
        let new_unavailable = sets
            .new_rs()
            .map(|rs| rs_replicas(rs) - rs_available(rs))
            .unwrap_or(0);
        let max_scaled_down = all_pods - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(false);
        }
        // Unhealthy old replicas can go at once, within maxScaledDown.
        let mut cleaned = 0;
        for i in &old {
            if cleaned >= max_scaled_down {
                break;
            }
            let rs = &sets.all[*i];
            let unhealthy = rs_replicas(rs) - rs_available(rs);
            if rs_replicas(rs) == 0 || unhealthy <= 0 {
                continue;
            }
            let n = (max_scaled_down - cleaned).min(unhealthy);
            let size = rs_replicas(rs) - n;
            self.scale_rs(d, &mut sets.all[*i], size, Some("down"))
                .await?;
            cleaned += n;
        }
        // Then available ones, keeping minAvailable.
        let available: i32 = sets.all.iter().map(rs_available).sum();
        let mut scaled = 0;
        if available > min_available {
            let total = available - min_available;
            for i in &old {
                if scaled >= total {
                    break;
                }
                let rs = &sets.all[*i];
                if rs_replicas(rs) == 0 {
                    continue;
                }
                let n = rs_replicas(rs).min(total - scaled);
                let size = rs_replicas(rs) - n;
                self.scale_rs(d, &mut sets.all[*i], size, Some("down"))
                    .await?;
                scaled += n;
            }
        }
        Ok(cleaned + scaled > 0)
    }

    pub(super) async fn rollout_recreate(
        &self,
        d: &mut Deployment,
        rss: Vec<ReplicaSet>,
    ) -> Result<(), SyncError> {
        let mut sets = self.get_all(d, rss, false).await?;
        let mut scaled_down = false;
        for i in sets.old() {
            if rs_replicas(&sets.all[i]) > 0 {
                scaled_down |= self.scale_rs(d, &mut sets.all[i], 0, Some("down")).await?;
            }
        }
        if scaled_down || self.old_pods_running(&sets) {
            return self.sync_rollout_status(d, &sets).await;
        }
        if sets.new.is_none() {
            sets = self.get_all(d, sets.all, true).await?;
        }
        if let Some(i) = sets.new {
            let want = du::replicas(d);
            if rs_replicas(&sets.all[i]) != want {
                self.scale_rs(d, &mut sets.all[i], want, Some("up")).await?;
            }
        }
        let now = self.ctx.clock.timestamp();
        let status = du::calculate_status(d, &sets.refs(), sets.new_rs(), now);
        if du::is_complete(d, &status) {
            self.cleanup(d, &sets).await?;
        }
        self.sync_rollout_status(d, &sets).await
    }

    /// Whether pods of old ReplicaSets still exist (Recreate waits for them).
    fn old_pods_running(&self, sets: &Sets) -> bool {
        sets.old().into_iter().any(|i| {
            let rs = &sets.all[i];
            du::rs_actual(rs) > 0
                || rs.metadata.uid.as_deref().is_some_and(|uid| {
                    self.pods
                        .by_index(BY_OWNER, uid)
                        .iter()
                        .any(|p| is_pod_active(p) || p.metadata.deletion_timestamp.is_some())
                })
        })
    }

    /// Upstream's syncRolloutStatus: counts, Available, Progressing (with the deadline) and
    /// ReplicaFailure copied from the ReplicaSets.
    pub(super) async fn sync_rollout_status(
        &self,
        d: &mut Deployment,
        sets: &Sets,
    ) -> Result<(), SyncError> {
        let now = self.ctx.clock.timestamp();
        let mut status = du::calculate_status(d, &sets.refs(), sets.new_rs(), now);
        let deadline = du::progress_deadline(d);
        if deadline.is_none() {
            du::remove_condition(&mut status, "Progressing");
        }
        let current = du::condition(&status, "Progressing").cloned();
        let complete_already = status.replicas == status.updated_replicas
            && current.as_ref().and_then(|c| c.reason.as_deref()) == Some(du::NEW_RS_AVAILABLE);
        let new_name = sets.new_rs().and_then(|rs| rs.metadata.name.clone());
        if deadline.is_some() && !complete_already {
            if du::is_complete(d, &status) {
                let message = match &new_name {
                    Some(n) => format!("ReplicaSet {n:?} has successfully progressed."),
                    None => "Deployment has successfully progressed.".into(),
                };
                du::set_condition(
                    &mut status,
                    du::new_condition("Progressing", "True", du::NEW_RS_AVAILABLE, message, now),
                );
            } else if du::is_progressing(d, &status) {
                let message = match &new_name {
                    Some(n) => format!("ReplicaSet {n:?} is progressing."),
                    None => "Deployment is progressing.".into(),
                };
                let mut c = du::new_condition("Progressing", "True", du::RS_UPDATED, message, now);
                if let Some(cur) = current.as_ref().filter(|c| c.status == "True") {
                    c.last_transition_time = cur.last_transition_time.clone();
                }
                du::remove_condition(&mut status, "Progressing");
                du::set_condition(&mut status, c);
            } else if du::is_timed_out(d, &status, now) {
                let message = match &new_name {
                    Some(n) => format!("ReplicaSet {n:?} has timed out progressing."),
                    None => format!(
                        "Deployment {:?} has timed out progressing.",
                        d.metadata.name.as_deref().unwrap_or_default()
                    ),
                };
                du::set_condition(
                    &mut status,
                    du::new_condition("Progressing", "False", du::TIMED_OUT, message, now),
                );
            }
        }
        let failure = sets.all.iter().find_map(|rs| {
            rs.status
                .as_ref()?
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == "ReplicaFailure" && c.status == "True")
                .cloned()
        });
        match failure {
            Some(f) => du::set_condition(
                &mut status,
                du::new_condition(
                    "ReplicaFailure",
                    &f.status,
                    f.reason.as_deref().unwrap_or_default(),
                    f.message.unwrap_or_default(),
                    now,
                ),
            ),
            None => du::remove_condition(&mut status, "ReplicaFailure"),
        }
        if d.status.as_ref() == Some(&status) {
            self.requeue_stuck(d, &status);
            return Ok(());
        }
        self.write_status(d, status.clone()).await?;
        self.requeue_stuck(d, &status);
        Ok(())
    }

    /// Check again when the progress deadline of a rollout still under way passes.
    fn requeue_stuck(&self, d: &Deployment, status: &k8s_openapi::api::apps::v1::DeploymentStatus) {
        let Some(deadline) = du::progress_deadline(d) else {
            return;
        };
        let Some(c) = du::condition(status, "Progressing") else {
            return;
        };
        if matches!(
            c.reason.as_deref(),
            Some(du::NEW_RS_AVAILABLE) | Some(du::TIMED_OUT)
        ) {
            return;
        }
        let Some(updated) = &c.last_update_time else {
            return;
        };
        let now = self.ctx.clock.timestamp();
        let left = updated.0.as_second() + i64::from(deadline) - now.as_second();
        let key = tinykube_client::reflector::key_of(d);
        // Upstream's requeueStuckDeployment: a second past the deadline.
        self.queue
            .add_after_clock(&key, secs(left.max(0)) + secs(1));
    }
}

//! Reconcile one Job, as upstream's syncJob with finalizer tracking: finished pods are first
//! recorded in `status.uncountedTerminatedPods` (an Indexed Job's successes in
//! `completedIndexes`), only then lose their finalizer, and are moved into the counters once
//! it is gone, so a restart neither loses nor repeats a count. Then the Job's fate (backoff
//! limit, deadline, failure policy, failed indexes, success policy, completions) gives the
//! FailureTarget or SuccessCriteriaMet condition, the remaining pods are deleted, and once none
//! is left the terminal Failed or Complete condition is written, with its event.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::batch::v1::{Job, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use tinykube_client::events::EventType;
use tinykube_client::reflector::key_of;
use tinykube_client::{Api, ClientError, Patch};

use super::fate::{condition, decide, is_true, recorded_fate, set_condition, Counts};
use super::indexes::{self, Indexes};
use super::manage::Release;
use super::pods::{self, has_finalizer};
use super::{Controller, ORPHAN};
use crate::context::BY_NAMESPACE;
use crate::owned::{self, Owner, PodError};
use crate::util::{controller_ref, object_ref, split_key};

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Pods(#[from] PodError),
    #[error("removing the tracking finalizer of pod {0}: {1}")]
    Finalizer(String, #[source] ClientError),
    #[error("updating status: {0}")]
    Status(#[source] ClientError),
    #[error("reading job: {0}")]
    Read(#[source] ClientError),
}

impl Controller {
    /// Reconcile the Job at `key` (or release the orphan pod of an [`ORPHAN`] key).
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        if let Some(pod_key) = key.strip_prefix(ORPHAN) {
            return self.release_orphan(pod_key).await;
        }
        let Some(job) = self.jobs.get(key) else {
            self.expectations.delete(key);
            return Ok(());
        };
        if self.cache_behind(key, &job) {
            // The informer's event for the last status write enqueues the Job again; acting on
            // the older copy could, say, replace a pod of an index that already failed.
            self.queue
                .add_after_real(key, std::time::Duration::from_secs(1));
            return Ok(());
        }
        let Some(selector) = job.selector() else {
            tracing::warn!(key, "invalid selector; ignoring");
            return Ok(());
        };
        let now = self.ctx.clock.timestamp();
        let ns = job.metadata.namespace.clone().unwrap_or_default();
        let candidates = self.pods.by_index(BY_NAMESPACE, &ns);
        let pods = owned::claim(&self.ctx.client, job.as_ref(), &selector, candidates)
            .await
            .map_err(PodError::Claim)?;
        let old = job.status.clone().unwrap_or_default();
        if is_true(&old, "Complete") || is_true(&old, "Failed") {
            // Finished: only the finalizers of pods that outlived it are left to remove.
            let rest: Vec<&Arc<Pod>> = pods.iter().filter(|p| has_finalizer(p)).collect();
            self.remove_finalizers(&rest).await?;
            return Ok(());
        }
        let satisfied = self.expectations.satisfied(key);
        self.track(key, &job, &pods, satisfied, now).await
    }

    /// The tracking, the decisions and the pod management of a Job that is not finished.
    async fn track(
        &self,
        key: &str,
        job: &Arc<Job>,
        pods: &[Arc<Pod>],
        satisfied: bool,
        now: Timestamp,
    ) -> Result<(), SyncError> {
        let spec = job.spec.clone().unwrap_or_default();
        let mut status = job.status.clone().unwrap_or_default();
        let indexed = spec.completion_mode.as_deref() == Some("Indexed");
        let n = i64::from(spec.completions.unwrap_or(0));
        let only_failed = spec.pod_replacement_policy.as_deref() == Some("Failed");
        let per_index = spec.backoff_limit_per_index.map(i64::from);
        let removing: HashSet<String> = self.removing.lock().map(|r| r.clone()).unwrap_or_default();
        let uncounted = status.uncounted_terminated_pods.clone().unwrap_or_default();
        let mut unc_s = uncounted.succeeded.unwrap_or_default();
        let mut unc_f = uncounted.failed.unwrap_or_default();
        let mut completed = indexes::parse(status.completed_indexes.as_deref().unwrap_or(""), n);
        let mut failed_idx = indexes::parse(status.failed_indexes.as_deref().unwrap_or(""), n);
        let mut changed = false;
        let mut release: Vec<&Arc<Pod>> = Vec::new();
        for pod in pods {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            if !has_finalizer(pod) || removing.contains(&uid) {
                continue;
            }
            let ok = pods::succeeded(pod);
            if !ok && !pods::failed(pod, only_failed) {
                continue;
            }
            release.push(pod);
            if unc_s.contains(&uid) || unc_f.contains(&uid) {
                continue;
            }
            let index = pods::completion_index(pod).filter(|&i| i < n);
            if ok {
                if indexed {
                    changed |= index.is_some_and(|i| completed.insert(i));
                } else {
                    unc_s.push(uid);
                    changed = true;
                }
                continue;
            }
            let phase_failed =
                pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed");
            let rule = spec
                .pod_failure_policy
                .as_ref()
                .filter(|_| phase_failed)
                .and_then(|p| pods::match_failure_policy(p, pod));
            match rule.as_ref().map(|(a, m)| (a.as_str(), m)) {
                Some(("Ignore", _)) => continue,
                Some(("FailIndex", _)) => {
                    if let Some(i) = index {
                        failed_idx.insert(i);
                    }
                }
                _ => {}
            }
            if let (Some(limit), Some(i)) = (per_index, index) {
                if pods::index_failures(pod) + 1 > limit {
                    failed_idx.insert(i);
                }
            }
            unc_f.push(uid);
            changed = true;
        }
        // Any failed pod matching a FailJob rule fails the Job, counted already or not, so a
        // sync cut short after recording the pod still ends with the Job failed (upstream's
        // getFailJobMessage).
        let fail_job = spec.pod_failure_policy.as_ref().and_then(|policy| {
            pods.iter()
                .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed"))
                .filter_map(|p| pods::match_failure_policy(policy, p))
                .find_map(|(action, message)| (action == "FailJob").then_some(message))
        });
        let mut job = job.as_ref().clone();
        let write_indexes = |s: &mut JobStatus, c: &Indexes, f: &Indexes| {
            if indexed {
                s.completed_indexes = Some(indexes::format(c));
            }
            if per_index.is_some() {
                s.failed_indexes = Some(indexes::format(f));
            }
        };
        if changed {
            // First record what was seen; only then may the finalizers go.
            status.uncounted_terminated_pods = Some(uncounted_of(&unc_s, &unc_f));
            write_indexes(&mut status, &completed, &failed_idx);
            job = self.write_status(&job, status.clone()).await?;
        }
        let released = self.remove_finalizers(&release).await?;
        let by_uid: HashMap<&str, &Arc<Pod>> = pods
            .iter()
            .filter_map(|p| Some((p.metadata.uid.as_deref()?, p)))
            .collect();
        let pending = |uid: &String| {
            !released.contains(uid)
                && !removing.contains(uid)
                && by_uid.get(uid.as_str()).is_some_and(|p| has_finalizer(p))
        };
        let before = (unc_s.len(), unc_f.len());
        unc_s.retain(pending);
        unc_f.retain(pending);
        let mut succeeded =
            i64::from(status.succeeded.unwrap_or(0)) + (before.0 - unc_s.len()) as i64;
        let failed = i64::from(status.failed.unwrap_or(0)) + (before.1 - unc_f.len()) as i64;
        if indexed {
            succeeded = completed.len() as i64;
        }
        let active: Vec<&Arc<Pod>> = pods.iter().filter(|p| pods::active(p)).collect();
        let terminating = pods.iter().filter(|p| pods::terminating(p)).count() as i64;
        let suspended = spec.suspend == Some(true);
        let mut events: Vec<(EventType, &str, String)> = Vec::new();
        // Suspension and start time.
        if suspended {
            let c = condition("Suspended", "True", "JobSuspended", "Job suspended", now);
            if set_condition(&mut status, c) {
                events.push((EventType::Normal, "Suspended", "Job suspended".into()));
            }
        } else {
            if is_true(&status, "Suspended") {
                set_condition(
                    &mut status,
                    condition("Suspended", "False", "JobResumed", "Job resumed", now),
                );
                events.push((EventType::Normal, "Resumed", "Job resumed".into()));
                // The deadline counts from the resumption.
                status.start_time = Some(Time(now));
            }
            if status.start_time.is_none() {
                status.start_time = Some(Time(now));
            }
        }
        status.succeeded = Some(succeeded as i32);
        status.failed = Some(failed as i32);
        let counts = Counts {
            active: active.len() as i64,
            succeeded: succeeded + unc_s.len() as i64,
            failed: failed + unc_f.len() as i64,
            completed: completed.clone(),
            failed_indexes: failed_idx.clone(),
            fail_job,
            now: Some(now),
        };
        let mut job_now = job.clone();
        job_now.status = Some(status.clone());
        let fate = recorded_fate(&status).or_else(|| decide(&job_now, &counts));
        let mut result = Ok(());
        let mut still_active = active.len() as i64;
        match &fate {
            Some(f) => {
                set_condition(
                    &mut status,
                    condition(f.target, "True", &f.reason, &f.message, now),
                );
                if !active.is_empty() && satisfied {
                    result = self.delete_pods(key, &job, &active, Release::Keep).await;
                    still_active = 0;
                }
            }
            None if suspended && !active.is_empty() && satisfied => {
                result = self
                    .delete_pods(key, &job, &active, Release::Finalizers)
                    .await;
                still_active = 0;
            }
            None if suspended => {}
            None if satisfied => {
                let plan = super::manage::Plan {
                    job: &job,
                    pods,
                    active: &active,
                    completed: &completed,
                    failed_indexes: &failed_idx,
                    succeeded: counts.succeeded,
                    terminating,
                    now,
                };
                result = self.manage(key, plan).await;
            }
            None => {}
        }
        // The terminal condition, once nothing is left running or uncounted.
        let mut finished = None;
        if let Some(f) = &fate {
            let quiet = unc_s.is_empty()
                && unc_f.is_empty()
                && terminating == 0
                && still_active == 0
                && active.is_empty();
            if quiet {
                set_condition(
                    &mut status,
                    condition(f.terminal(), "True", &f.reason, &f.message, now),
                );
                if f.terminal() == "Complete" {
                    status.completion_time = Some(Time(now));
                }
                finished = Some(f.clone());
            }
        }
        status.active = Some(if finished.is_some() {
            0
        } else {
            still_active as i32
        });
        status.ready = Some(active.iter().filter(|p| pods::ready(p)).count() as i32);
        if finished.is_some() {
            status.ready = Some(0);
        }
        status.terminating = Some(terminating as i32);
        status.uncounted_terminated_pods = Some(uncounted_of(&unc_s, &unc_f));
        write_indexes(&mut status, &completed, &failed_idx);
        if job.status.as_ref() != Some(&status) {
            self.write_status(&job, status).await?;
        }
        if let Some(f) = finished {
            match f.terminal() {
                "Complete" => events.push((EventType::Normal, "Completed", "Job completed".into())),
                _ => events.push((EventType::Warning, leak(&f.reason), f.message.clone())),
            }
        }
        let regarding = object_ref::<Job>(&job.metadata);
        for (kind, reason, message) in events {
            self.recorder.record(&regarding, kind, reason, message);
        }
        if fate.is_none() && !suspended {
            self.requeue_for_deadline(key, &job, now);
        }
        result
    }

    /// Requeue the Job when its activeDeadlineSeconds runs out (by the cluster's clock, as
    /// upstream: exactly then; a look a little early requeues for the rest).
    fn requeue_for_deadline(&self, key: &str, job: &Job, now: Timestamp) {
        if let Some(left) = deadline_left(job, now) {
            self.queue.add_after_clock(key, left);
        }
    }

    /// Write `status` through `/status` with the Job's resourceVersion: a conflict means the
    /// cache was stale, and the sync is retried on the fresh object.
    async fn write_status(&self, job: &Job, status: JobStatus) -> Result<Job, SyncError> {
        let api: Api<Job> = Api::namespaced(
            self.ctx.client.clone(),
            job.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let mut next = job.clone();
        next.status = Some(status);
        let written = api
            .replace_status(job.metadata.name.as_deref().unwrap_or_default(), &next)
            .await
            .map_err(SyncError::Status)?;
        self.wrote(&key_of(job), &written);
        Ok(written)
    }

    /// Remove the tracking finalizer of `pods`; the uids whose finalizer is gone now.
    pub(super) async fn remove_finalizers(
        &self,
        pods: &[&Arc<Pod>],
    ) -> Result<HashSet<String>, SyncError> {
        let results = futures::future::join_all(pods.iter().map(|p| {
            let api: Api<Pod> = Api::namespaced(
                self.ctx.client.clone(),
                p.metadata.namespace.as_deref().unwrap_or_default(),
            );
            let name = p.metadata.name.clone().unwrap_or_default();
            let uid = p.metadata.uid.clone().unwrap_or_default();
            // The pod's other finalizers stay; the resourceVersion guards against a writer
            // that changed them meanwhile (a conflict retries the sync).
            let rest: Vec<&String> = p
                .metadata
                .finalizers
                .iter()
                .flatten()
                .filter(|f| *f != pods::TRACKING_FINALIZER)
                .collect();
            let patch = Patch::Merge(serde_json::json!({"metadata": {
                "finalizers": if rest.is_empty() { serde_json::Value::Null } else { serde_json::json!(rest) },
                "resourceVersion": p.metadata.resource_version,
            }}));
            if let Ok(mut r) = self.removing.lock() {
                r.insert(uid.clone());
            }
            async move {
                let r = api.patch(&name, &patch).await;
                (uid, name, r)
            }
        }))
        .await;
        let mut done = HashSet::new();
        let mut failure = None;
        for (uid, name, r) in results {
            match r {
                Ok(_) => {
                    done.insert(uid);
                }
                Err(e) if e.is_not_found() => {
                    done.insert(uid);
                }
                Err(e) => {
                    if let Ok(mut r) = self.removing.lock() {
                        r.remove(&uid);
                    }
                    failure = Some(SyncError::Finalizer(name, e));
                }
            }
        }
        failure.map_or(Ok(done), Err)
    }

    /// A pod that keeps the tracking finalizer while its Job is gone (or another object now)
    /// loses it.
    async fn release_orphan(&self, pod_key: &str) -> Result<(), SyncError> {
        let Some(pod) = self.pods.get(pod_key) else {
            return Ok(());
        };
        let Some(owner) = controller_ref(&pod.metadata).filter(|r| r.kind == "Job") else {
            return Ok(());
        };
        if !has_finalizer(&pod) {
            return Ok(());
        }
        let (ns, _) = split_key(pod_key);
        let api: Api<Job> = Api::namespaced(self.ctx.client.clone(), ns);
        let live = api.get_opt(&owner.name).await.map_err(SyncError::Read)?;
        let alive = live.is_some_and(|j| j.metadata.uid.as_deref() == Some(owner.uid.as_str()));
        if !alive {
            self.remove_finalizers(&[&pod]).await?;
        }
        Ok(())
    }
}

fn uncounted_of(succeeded: &[String], failed: &[String]) -> UncountedTerminatedPods {
    UncountedTerminatedPods {
        succeeded: (!succeeded.is_empty()).then(|| succeeded.to_vec()),
        failed: (!failed.is_empty()).then(|| failed.to_vec()),
    }
}

/// How long until the Job's activeDeadlineSeconds runs out, counted from its startTime (from
/// `now` when it has none yet); `None` without a deadline.
fn deadline_left(job: &Job, now: Timestamp) -> Option<std::time::Duration> {
    let deadline = job.spec.as_ref()?.active_deadline_seconds?;
    let start = job
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map_or(now, |t| t.0);
    let left = (start + SignedDuration::from_secs(deadline)).duration_since(now);
    Some(std::time::Duration::try_from(left).unwrap_or_default())
}

/// Event reasons are static strings; a Job's failure reasons are a few known ones.
fn leak(reason: &str) -> &'static str {
    match reason {
        "BackoffLimitExceeded" => "BackoffLimitExceeded",
        "DeadlineExceeded" => "DeadlineExceeded",
        "PodFailurePolicy" => "PodFailurePolicy",
        "MaxFailedIndexesExceeded" => "MaxFailedIndexesExceeded",
        "FailedIndexes" => "FailedIndexes",
        _ => "Failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn the_deadline_is_counted_from_the_start_time() {
        let t0: Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
        let job = |deadline: Option<i64>, start: Option<&str>| -> Job {
            serde_json::from_value(json!({
                "spec": {"template": {}, "activeDeadlineSeconds": deadline},
                "status": {"startTime": start},
            }))
            .unwrap()
        };
        let cases = [
            (
                "no deadline",
                job(None, Some("2024-01-01T00:00:00Z")),
                0,
                None,
            ),
            (
                "just started",
                job(Some(60), Some("2024-01-01T00:00:00Z")),
                0,
                Some(60),
            ),
            (
                "some gone",
                job(Some(60), Some("2024-01-01T00:00:00Z")),
                45,
                Some(15),
            ),
            (
                "past it",
                job(Some(60), Some("2024-01-01T00:00:00Z")),
                90,
                Some(0),
            ),
            ("not started yet", job(Some(60), None), 30, Some(60)),
        ];
        for (what, j, since, want) in cases {
            let now = t0 + SignedDuration::from_secs(since);
            assert_eq!(
                deadline_left(&j, now),
                want.map(Duration::from_secs),
                "{what}"
            );
        }
    }
}

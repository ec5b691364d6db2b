//! The pods a running Job needs, as upstream's manageJob: as many active pods as parallelism
//! allows and completions still need (a work queue without completions stops creating once one
//! pod succeeded); an Indexed Job's pods for the lowest indexes neither completed, failed nor
//! running, duplicates and out-of-range indexes deleted; new pods wait out the failure backoff
//! (with backoffLimitPerIndex each index its own, from the failures of its last failed pod).

use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use tinykube_client::reflector::key_of;

use super::backoff;
use super::indexes::Indexes;
use super::pods;
use super::sync::SyncError;
use super::Controller;
use crate::owned::PodWriter;

/// Upstream's burst of creates per sync.
const BURST: usize = 500;

/// Whether pods about to be deleted first lose the tracking finalizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Unwanted pods: uncounted, as upstream's deleteJobPods.
    Finalizers,
    /// The pods of a finished Job: counted as failed, as upstream's deleteActivePods.
    Keep,
}

/// What `manage` works from.
pub struct Plan<'a> {
    pub job: &'a Job,
    pub pods: &'a [Arc<Pod>],
    pub active: &'a [&'a Arc<Pod>],
    pub completed: &'a Indexes,
    pub failed_indexes: &'a Indexes,
    pub succeeded: i64,
    pub terminating: i64,
    pub now: Timestamp,
}

/// How many pods should be active (upstream's wantActive).
pub fn want_active(completions: Option<i64>, parallelism: i64, succeeded: i64, active: i64) -> i64 {
    match completions {
        Some(n) => (n - succeeded).min(parallelism).max(0),
        None if succeeded > 0 => active,
        None => parallelism,
    }
}

/// Failures since the last success and when the last one happened, for the backoff.
fn failures_since_success(pods: &[Arc<Pod>], only_failed: bool) -> (usize, Option<Timestamp>) {
    let last_success = pods
        .iter()
        .filter(|p| pods::succeeded(p))
        .filter_map(|p| pods::finish_time(p))
        .max();
    let failures: Vec<Timestamp> = pods
        .iter()
        .filter(|p| pods::failed(p, only_failed))
        .filter_map(|p| pods::finish_time(p))
        .filter(|t| last_success.is_none_or(|s| *t > s))
        .collect();
    (failures.len(), failures.into_iter().max())
}

impl Controller {
    pub(super) async fn manage(&self, key: &str, plan: Plan<'_>) -> Result<(), SyncError> {
        let job = plan.job;
        let spec = job.spec.clone().unwrap_or_default();
        let only_failed = spec.pod_replacement_policy.as_deref() == Some("Failed");
        let indexed = spec.completion_mode.as_deref() == Some("Indexed");
        let parallelism = i64::from(spec.parallelism.unwrap_or(1).max(0));
        let completions = spec.completions.map(i64::from);
        let mut active = plan.active.len() as i64;
        let mut doomed: Vec<&Arc<Pod>> = Vec::new();
        let mut running: Indexes = Indexes::new();
        if indexed {
            let n = completions.unwrap_or(0);
            for p in plan.active {
                match pods::completion_index(p) {
                    Some(i)
                        if i < n
                            && !plan.completed.contains(&i)
                            && !plan.failed_indexes.contains(&i)
                            && running.insert(i) => {}
                    _ => doomed.push(p),
                }
            }
            active -= doomed.len() as i64;
        }
        if only_failed {
            active += plan.terminating;
            if indexed {
                for p in plan.pods.iter().filter(|p| pods::terminating(p)) {
                    running.extend(pods::completion_index(p));
                }
            }
        }
        let want = if indexed {
            let left = completions.unwrap_or(0)
                - (plan.completed.len() + plan.failed_indexes.len()) as i64;
            left.min(parallelism).max(0)
        } else {
            want_active(completions, parallelism, plan.succeeded, active)
        };
        if active > want {
            // Not ready before ready, newest first, as upstream's ActivePods ranking.
            let mut rest: Vec<&Arc<Pod>> = plan
                .active
                .iter()
                .copied()
                .filter(|p| !doomed.iter().any(|d| Arc::ptr_eq(d, p)))
                .collect();
            rest.sort_by_key(|p| {
                let created = p.metadata.creation_timestamp.as_ref().map(|t| t.0);
                (pods::ready(p), std::cmp::Reverse(created))
            });
            doomed.extend(rest.into_iter().take((active - want) as usize));
        }
        if !doomed.is_empty() {
            return self
                .delete_pods(key, job, &doomed, Release::Finalizers)
                .await;
        }
        if active >= want {
            return Ok(());
        }
        // One back-off for the Job, or with backoffLimitPerIndex one for each index.
        let per_index = spec.backoff_limit_per_index.is_some();
        if !per_index {
            let (failures, last) = failures_since_success(plan.pods, only_failed);
            if let Some(wait) = backoff::remaining(failures, last, plan.now, self.backoff) {
                self.queue.add_after_clock(key, wait);
                return Ok(());
            }
        }
        let count = ((want - active) as usize).min(BURST);
        let new_pods: Vec<Pod> = if indexed {
            let n = completions.unwrap_or(0);
            let last_failed = pods::last_failed_per_index(plan.pods, only_failed);
            let pending = (0..n)
                .filter(|i| {
                    !plan.completed.contains(i)
                        && !plan.failed_indexes.contains(i)
                        && !running.contains(i)
                })
                .take(count);
            let mut wait: Option<std::time::Duration> = None;
            let mut new_pods = Vec::new();
            for i in pending {
                let prev = last_failed.get(&i).map(|p| p.as_ref());
                let failures = pods::replacement_failures(job, prev);
                if let Some(p) = prev.filter(|_| per_index) {
                    let n = (failures.counted + failures.ignored) as usize;
                    let left = backoff::remaining(n, pods::finish_time(p), plan.now, self.backoff);
                    if let Some(left) = left {
                        wait = Some(wait.map_or(left, |w| w.min(left)));
                        continue;
                    }
                }
                new_pods.push(pods::new_pod(job, Some((i, failures))));
            }
            if let Some(wait) = wait {
                self.queue.add_after_clock(key, wait);
            }
            new_pods
        } else {
            vec![pods::new_pod(job, None); count]
        };
        if new_pods.is_empty() {
            return Ok(());
        }
        self.expectations.expect_creations(key, new_pods.len());
        let writer = PodWriter::new(&self.ctx.client, &self.recorder, job, key);
        let created = writer.create(&self.expectations, &new_pods).await;
        match created.failure {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Delete `victims` (their deletions awaited in the expectations). Pods the Job no longer
    /// wants (suspension, too many running) first lose the tracking finalizer, as upstream's
    /// deleteJobPods, so they are not counted as failures; the pods of a Job that reached its
    /// fate keep it (upstream's deleteActivePods) and are counted as failed once gone.
    pub(super) async fn delete_pods(
        &self,
        key: &str,
        job: &Job,
        victims: &[&Arc<Pod>],
        release: Release,
    ) -> Result<(), SyncError> {
        if release == Release::Finalizers {
            self.remove_finalizers(victims).await?;
        }
        self.expectations
            .expect_deletions(key, victims.iter().map(|p| key_of(p.as_ref())).collect());
        let names: Vec<String> = victims
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        let writer = PodWriter::new(&self.ctx.client, &self.recorder, job, key);
        writer.delete(&self.expectations, &names).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wanted_pods_as_upstream() {
        // (completions, parallelism, succeeded, active) → want
        let cases = [
            ((Some(1), 1, 0, 0), 1),
            ((Some(5), 2, 0, 1), 2),
            ((Some(5), 2, 4, 1), 1),
            ((Some(5), 2, 5, 0), 0),
            ((Some(3), 0, 0, 0), 0),
            ((None, 3, 0, 0), 3),
            ((None, 3, 1, 2), 2),
        ];
        for ((c, p, s, a), want) in cases {
            assert_eq!(want_active(c, p, s, a), want, "{c:?} {p} {s} {a}");
        }
    }
}

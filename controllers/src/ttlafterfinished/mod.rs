//! The TTL-after-finished controller (upstream's `ttl-after-finished`): a finished Job with
//! `spec.ttlSecondsAfterFinished` is deleted (foreground, so its pods go first) that many
//! seconds after its `Complete` or `Failed` condition turned true.
//!
//! Job notifications enqueue finished Jobs with a TTL; a pass either deletes the Job, after
//! reading it fresh from the API (the TTL may have been changed meanwhile), or comes back when
//! it expires (by the cluster's clock).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use tinykube_client::reflector::{Notification, Store};
use tinykube_client::{Api, ClientError};

use crate::context::{route, Context};
use crate::util::{key, run_workers, split_key};
use crate::workqueue::WorkQueue;

/// Upstream's ConcurrentTTLSyncs default.
const WORKERS: usize = 5;

pub struct Controller {
    pub ctx: Arc<Context>,
    pub jobs: Store<Job>,
    pub queue: WorkQueue,
}

/// Subscribe to Jobs and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let job_events = ctx.jobs.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        jobs: ctx.jobs.store(),
        queue: ctx.queue(),
    });
    Box::pin(async move {
        let Some(job_events) = job_events else {
            tracing::error!("ttl-after-finished controller started after the informers");
            return;
        };
        let on_jobs = route(job_events, &c, Controller::on_job, Controller::enqueue_all);
        let run = {
            let c = c.clone();
            async move {
                c.jobs.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers("ttl-after-finished", c.queue.clone(), WORKERS, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_jobs, run);
    })
}

/// When a finished Job with a TTL expires; `None` while it runs or has no TTL.
pub fn expires_at(job: &Job) -> Option<Timestamp> {
    let ttl = job.spec.as_ref()?.ttl_seconds_after_finished?;
    let finished = job
        .status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")?;
    let at = finished.last_transition_time.as_ref()?.0;
    at.checked_add(jiff_seconds(ttl)).ok()
}

/// Time left at `now` before `job` expires (zero once it has); `None` when it never does.
pub fn left(job: &Job, now: Timestamp) -> Option<Duration> {
    let at = expires_at(job)?;
    let left = at.duration_since(now);
    Some(Duration::try_from(left).unwrap_or(Duration::ZERO))
}

fn jiff_seconds(s: i32) -> k8s_openapi::jiff::SignedDuration {
    k8s_openapi::jiff::SignedDuration::from_secs(i64::from(s))
}

impl Controller {
    fn on_job(&self, n: Notification<Job>) {
        if let Notification::Add(job) | Notification::Update { new: job, .. } = n {
            self.enqueue(&job);
        }
    }

    fn enqueue(&self, job: &Job) {
        if job.metadata.deletion_timestamp.is_none() && expires_at(job).is_some() {
            self.queue.add(&key(
                job.metadata.namespace.as_deref().unwrap_or_default(),
                job.metadata.name.as_deref().unwrap_or_default(),
            ));
        }
    }

    fn enqueue_all(&self) {
        for job in self.jobs.list() {
            self.enqueue(&job);
        }
    }

    /// Time left before `job` expires (zero once it has).
    fn left(&self, job: &Job) -> Option<Duration> {
        left(job, self.ctx.clock.timestamp())
    }

    async fn sync(&self, key: &str) -> Result<(), ClientError> {
        let Some(cached) = self.jobs.get(key) else {
            return Ok(());
        };
        if cached.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        match self.left(&cached) {
            None => return Ok(()),
            Some(left) if !left.is_zero() => {
                self.queue.add_after_clock(key, left);
                return Ok(());
            }
            Some(_) => {}
        }
        // The cache may be stale: decide again on the Job as stored.
        let (ns, name) = split_key(key);
        let api: Api<Job> = Api::namespaced(self.ctx.client.clone(), ns);
        let Some(fresh) = api.get_opt(name).await? else {
            return Ok(());
        };
        match self.left(&fresh) {
            None => return Ok(()),
            Some(left) if !left.is_zero() => {
                self.queue.add_after_clock(key, left);
                return Ok(());
            }
            Some(_) => {}
        }
        let options = json!({
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "propagationPolicy": "Foreground",
            "preconditions": {"uid": fresh.metadata.uid},
        });
        tracing::info!(job = %key, "deleting a finished job whose TTL expired");
        match api.delete(name, Some(&options)).await {
            Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
            other => other.map(|_| ()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{JobCondition, JobSpec, JobStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn job(ttl: Option<i32>, condition: Option<(&str, &str)>) -> Job {
        Job {
            spec: Some(JobSpec {
                ttl_seconds_after_finished: ttl,
                ..JobSpec::default()
            }),
            status: Some(JobStatus {
                conditions: condition.map(|(t, s)| {
                    vec![JobCondition {
                        type_: t.into(),
                        status: s.into(),
                        last_transition_time: Some(Time(Timestamp::from_second(1000).unwrap())),
                        ..JobCondition::default()
                    }]
                }),
                ..JobStatus::default()
            }),
            ..Job::default()
        }
    }

    #[test]
    fn only_finished_jobs_with_a_ttl_expire() {
        let at = |s| Some(Timestamp::from_second(s).unwrap());
        for (ttl, condition, want) in [
            (Some(100), Some(("Complete", "True")), at(1100)),
            (Some(0), Some(("Failed", "True")), at(1000)),
            (None, Some(("Complete", "True")), None),
            (Some(100), Some(("Complete", "False")), None),
            (Some(100), Some(("Suspended", "True")), None),
            (Some(100), None, None),
        ] {
            assert_eq!(
                expires_at(&job(ttl, condition)),
                want,
                "{ttl:?} {condition:?}"
            );
        }
    }

    #[test]
    fn the_time_left_runs_down_with_the_clock() {
        let clock =
            tinykube_clock::Clock::manual(std::time::UNIX_EPOCH + Duration::from_secs(1000));
        let done = job(Some(100), Some(("Complete", "True")));
        let secs = Duration::from_secs;
        // (advance, left)
        for (advance, want) in [
            (0, Some(secs(100))),
            (60, Some(secs(40))),
            (40, Some(secs(0))),
            (500, Some(secs(0))),
        ] {
            clock.advance(secs(advance));
            assert_eq!(left(&done, clock.timestamp()), want, "+{advance}s");
        }
        assert_eq!(
            left(&job(None, Some(("Complete", "True"))), clock.timestamp()),
            None
        );
    }
}

//! One pass over a CronJob, as upstream's syncCronJob and cleanupFinishedJobs: account for its
//! Jobs (finished ones leave the active list, a vanished one is forgotten), start the Job that
//! is due unless suspended, too late or held back by the concurrency policy, delete Jobs beyond
//! the history limits, write the status, and say when to look again.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use serde_json::json;
use tinykube_client::events::EventType;
use tinykube_client::{Api, ClientError};
use tinykube_proto::cron::{self, Schedule};

use super::plan::{self, TOO_MANY_MISSED};
use super::Controller;
use crate::context::BY_OWNER;
use crate::util::{controller_ref, object_ref, split_key};

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("reading job {0}: {1}")]
    GetJob(String, #[source] ClientError),
    #[error("creating job {0}: {1}")]
    CreateJob(String, #[source] ClientError),
    #[error("could not replace job {0}")]
    Replace(String),
    #[error("updating the cronjob's status: {0}")]
    Status(#[source] ClientError),
}

/// The outcome of [`Controller::sync_cronjob`]: look again after this long, and whether the
/// status changed.
struct Pass {
    requeue: Option<std::time::Duration>,
    changed: bool,
}

impl Controller {
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some(cached) = self.cronjobs.get(key) else {
            return Ok(());
        };
        let uid = cached.metadata.uid.clone().unwrap_or_default();
        let jobs: Vec<Arc<Job>> = self
            .jobs
            .by_index(BY_OWNER, &uid)
            .into_iter()
            .filter(|j| controller_ref(&j.metadata).is_some_and(|r| r.uid == uid))
            .collect();
        let mut cj = (*cached).clone();
        let pass = self
            .sync_cronjob(&mut cj, &jobs, self.ctx.clock.utc())
            .await?;
        let cleaned = self.cleanup_finished(&mut cj, &jobs).await;
        if pass.changed || cleaned {
            let (ns, name) = split_key(key);
            let api: Api<CronJob> = Api::namespaced(self.ctx.client.clone(), ns);
            match api.replace_status(name, &cj).await {
                Err(e) if !e.is_not_found() => return Err(SyncError::Status(e)),
                _ => {}
            }
        }
        if let Some(after) = pass.requeue {
            self.queue.add_after_clock(key, after);
        }
        Ok(())
    }

    fn event(&self, cj: &CronJob, kind: EventType, reason: &'static str, message: String) {
        self.recorder
            .record(&object_ref::<CronJob>(&cj.metadata), kind, reason, message);
    }

    async fn sync_cronjob(
        &self,
        cj: &mut CronJob,
        jobs: &[Arc<Job>],
        now: DateTime<Utc>,
    ) -> Result<Pass, SyncError> {
        let mut changed = self.account_for_jobs(cj, jobs).await?;
        let spec = cj.spec.clone();
        let quiet = |changed| {
            Ok(Pass {
                requeue: None,
                changed,
            })
        };
        if cj.metadata.deletion_timestamp.is_some() {
            return quiet(changed);
        }
        let zone = match spec.time_zone.as_deref().map(cron::time_zone).transpose() {
            Ok(z) => z,
            Err(e) => {
                let tz = spec.time_zone.clone().unwrap_or_default();
                self.event(
                    cj,
                    EventType::Warning,
                    "UnknownTimeZone",
                    format!("invalid timeZone: {tz:?}: {e}"),
                );
                return quiet(changed);
            }
        };
        if spec.suspend == Some(true) {
            return quiet(changed);
        }
        if spec.schedule.contains("TZ") {
            self.event(cj, EventType::Warning, "UnsupportedSchedule", format!("CRON_TZ or TZ used in schedule {:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", spec.schedule));
        }
        let schedule = match Schedule::parse(&spec.schedule) {
            Ok(s) => s,
            Err(e) => {
                self.event(
                    cj,
                    EventType::Warning,
                    "UnparseableSchedule",
                    format!("unparseable schedule: {:?} : {e}", spec.schedule),
                );
                return quiet(changed);
            }
        };
        let recent = match plan::most_recent(cj, &schedule, zone, now, true) {
            Ok(r) => r,
            Err(e) => {
                self.event(
                    cj,
                    EventType::Warning,
                    "InvalidSchedule",
                    format!("invalid schedule: {} : {e}", spec.schedule),
                );
                return quiet(changed);
            }
        };
        let requeue = |cj: &CronJob| plan::requeue_after(cj, &schedule, zone, now);
        let Some(scheduled) = recent.most_recent else {
            return Ok(Pass {
                requeue: requeue(cj),
                changed,
            });
        };
        if recent.missed > TOO_MANY_MISSED {
            self.event(cj, EventType::Warning, "TooManyMissedTimes", format!("too many missed start times: {}. Set or decrease .spec.startingDeadlineSeconds or check clock skew", recent.missed));
        }
        if let Some(sds) = spec.starting_deadline_seconds {
            if scheduled + chrono::Duration::seconds(sds) < now {
                let when = scheduled.format("%a, %d %b %Y %H:%M:%S +0000");
                self.event(
                    cj,
                    EventType::Warning,
                    "MissSchedule",
                    format!("Missed scheduled time to start a job: {when}"),
                );
                return Ok(Pass {
                    requeue: requeue(cj),
                    changed,
                });
            }
        }
        let status = cj.status.get_or_insert_with(Default::default);
        let name = plan::job_name(cj.metadata.name.as_deref().unwrap_or_default(), scheduled);
        let already = status
            .active
            .iter()
            .flatten()
            .any(|r| r.name.as_deref() == Some(&name))
            || status
                .last_schedule_time
                .as_ref()
                .is_some_and(|t| plan::instant(t) == scheduled);
        if already {
            return Ok(Pass {
                requeue: requeue(cj),
                changed,
            });
        }
        let active = status.active.as_ref().map_or(0, Vec::len);
        match spec.concurrency_policy.as_deref() {
            Some("Forbid") if active > 0 => {
                self.event(cj, EventType::Normal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid".into());
                return Ok(Pass {
                    requeue: requeue(cj),
                    changed,
                });
            }
            Some("Replace") => {
                for r in status.active.clone().unwrap_or_default() {
                    let job_name = r.name.clone().unwrap_or_default();
                    let ns = r.namespace.clone().unwrap_or_default();
                    let api: Api<Job> = Api::namespaced(self.ctx.client.clone(), &ns);
                    match api.get_opt(&job_name).await {
                        Ok(Some(job)) => {
                            if !self.delete_job(cj, &job).await {
                                return Err(SyncError::Replace(format!("{ns}/{job_name}")));
                            }
                            changed = true;
                        }
                        Ok(None) => {}
                        Err(e) => {
                            self.event(
                                cj,
                                EventType::Warning,
                                "FailedGet",
                                format!("Get job: {e}"),
                            );
                            return Err(SyncError::GetJob(job_name, e));
                        }
                    }
                }
            }
            _ => {}
        }
        let want = plan::job_for(cj, scheduled, zone.unwrap_or(chrono_tz::Tz::UTC));
        let ns = cj.metadata.namespace.clone().unwrap_or_default();
        let api: Api<Job> = Api::namespaced(self.ctx.client.clone(), &ns);
        let created = match api.create(&want).await {
            Ok(job) => {
                self.event(
                    cj,
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!("Created job {name}"),
                );
                job
            }
            Err(ClientError::Api(s)) if s.reason == "AlreadyExists" => {
                // Made before a restart but not recorded: record it if it is ours.
                let job = api
                    .get(&name)
                    .await
                    .map_err(|e| SyncError::GetJob(name.clone(), e))?;
                let ours = controller_ref(&job.metadata)
                    .is_some_and(|r| Some(&r.uid) == cj.metadata.uid.as_ref());
                let status = cj.status.get_or_insert_with(Default::default);
                let listed = status
                    .active
                    .iter()
                    .flatten()
                    .any(|r| r.uid == job.metadata.uid);
                if !ours || listed {
                    return Ok(Pass {
                        requeue: None,
                        changed,
                    });
                }
                job
            }
            Err(e) => {
                if !is_namespace_terminating(&e) {
                    self.event(
                        cj,
                        EventType::Warning,
                        "FailedCreate",
                        format!("Error creating job: {e}"),
                    );
                }
                return Err(SyncError::CreateJob(name, e));
            }
        };
        let status = cj.status.get_or_insert_with(Default::default);
        status
            .active
            .get_or_insert_with(Vec::new)
            .push(object_ref::<Job>(&created.metadata));
        status.last_schedule_time = Some(plan::api_time(scheduled));
        Ok(Pass {
            requeue: requeue(cj),
            changed: true,
        })
    }

    /// Finished Jobs leave the active list (and move `lastSuccessfulTime`), unknown running
    /// ones are reported, listed ones that no longer exist are forgotten.
    async fn account_for_jobs(
        &self,
        cj: &mut CronJob,
        jobs: &[Arc<Job>],
    ) -> Result<bool, SyncError> {
        let mut changed = false;
        for job in jobs {
            let uid = job.metadata.uid.clone();
            let listed = in_active(cj, uid.as_deref());
            let finished = plan::finished(job);
            let name = job.metadata.name.clone().unwrap_or_default();
            if !listed && finished.is_none() {
                self.event(
                    cj,
                    EventType::Warning,
                    "UnexpectedJob",
                    format!("Saw a job that the controller did not create or forgot: {name}"),
                );
            } else if listed {
                if let Some(how) = finished {
                    remove_active(cj, uid.as_deref());
                    self.event(
                        cj,
                        EventType::Normal,
                        "SawCompletedJob",
                        format!("Saw completed job: {name}, status: {how}"),
                    );
                    changed = true;
                }
            }
            if finished == Some("Complete") {
                let done = job.status.as_ref().and_then(|s| s.completion_time.clone());
                let status = cj.status.get_or_insert_with(Default::default);
                if let Some(done) = done {
                    if status
                        .last_successful_time
                        .as_ref()
                        .is_none_or(|t| t.0 < done.0)
                    {
                        status.last_successful_time = Some(done);
                        changed = true;
                    }
                }
            }
        }
        let gone: Vec<ObjectReference> = cj
            .status
            .iter()
            .flat_map(|s| s.active.iter().flatten())
            .filter(|r| !jobs.iter().any(|j| j.metadata.uid == r.uid))
            .cloned()
            .collect();
        for r in gone {
            let name = r.name.clone().unwrap_or_default();
            let api: Api<Job> = Api::namespaced(
                self.ctx.client.clone(),
                r.namespace.as_deref().unwrap_or_default(),
            );
            match api.get_opt(&name).await {
                Ok(None) => {
                    self.event(
                        cj,
                        EventType::Normal,
                        "MissingJob",
                        format!("Active job went missing: {name}"),
                    );
                    remove_active(cj, r.uid.as_deref());
                    changed = true;
                }
                Ok(Some(_)) => {}
                Err(e) => return Err(SyncError::GetJob(name, e)),
            }
        }
        Ok(changed)
    }

    /// Delete finished Jobs beyond the history limits; whether the status changed.
    async fn cleanup_finished(&self, cj: &mut CronJob, jobs: &[Arc<Job>]) -> bool {
        let refs: Vec<&Job> = jobs.iter().map(|j| j.as_ref()).collect();
        let mut changed = false;
        for job in plan::beyond_history(cj, &refs) {
            changed |= self.delete_job(cj, job).await;
        }
        changed
    }

    /// Delete a Job (its pods go with it, in the background) and forget it.
    async fn delete_job(&self, cj: &mut CronJob, job: &Job) -> bool {
        let name = job.metadata.name.clone().unwrap_or_default();
        let api: Api<Job> = Api::namespaced(
            self.ctx.client.clone(),
            job.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let options =
            json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"});
        match api.delete(&name, Some(&options)).await {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                self.event(
                    cj,
                    EventType::Warning,
                    "FailedDelete",
                    format!("Deleted job: {e}"),
                );
                return false;
            }
        }
        remove_active(cj, job.metadata.uid.as_deref());
        self.event(
            cj,
            EventType::Normal,
            "SuccessfulDelete",
            format!("Deleted job {name}"),
        );
        true
    }
}

fn in_active(cj: &CronJob, uid: Option<&str>) -> bool {
    cj.status
        .iter()
        .flat_map(|s| s.active.iter().flatten())
        .any(|r| r.uid.as_deref() == uid)
}

fn remove_active(cj: &mut CronJob, uid: Option<&str>) {
    if let Some(status) = cj.status.as_mut() {
        if let Some(active) = status.active.as_mut() {
            active.retain(|r| r.uid.as_deref() != uid);
            if active.is_empty() {
                status.active = None;
            }
        }
    }
}

fn is_namespace_terminating(e: &ClientError) -> bool {
    matches!(e, ClientError::Api(s) if s.message.contains("because it is being terminated"))
}

//! The CronJob controller (upstream's `cronjob`, v2): starts a Job at each time of a CronJob's
//! schedule, in its time zone, under its concurrency policy and starting deadline, keeps the
//! active list and the last schedule and success times, and deletes finished Jobs beyond the
//! history limits.
//!
//! Wiring only: CronJob notifications and the notifications of Jobs a CronJob controls
//! enqueue the CronJob; a pass ([`sync`]) says when the next scheduled time is due and the key
//! comes back then. The decisions are in [`plan`], pure and tested.

pub mod plan;
pub mod sync;

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use tinykube_client::reflector::{Notification, Store};

use crate::context::{forward, route, Context};
use crate::events::EventRecorder;
use crate::util::{controller_ref, key, run_workers};
use crate::workqueue::WorkQueue;

/// Upstream's ConcurrentCronJobSyncs default.
const WORKERS: usize = 5;

pub struct Controller {
    pub ctx: Arc<Context>,
    pub cronjobs: Store<CronJob>,
    pub jobs: Store<Job>,
    pub queue: WorkQueue,
    pub recorder: Arc<EventRecorder>,
}

/// Subscribe to CronJobs and Jobs and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let cronjob_events = ctx.cronjobs.subscribe();
    let job_events = ctx.jobs.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        cronjobs: ctx.cronjobs.store(),
        jobs: ctx.jobs.store(),
        queue: ctx.queue(),
        recorder: ctx.recorder("cronjob-controller"),
    });
    Box::pin(async move {
        let (Some(cronjob_events), Some(job_events)) = (cronjob_events, job_events) else {
            tracing::error!("cronjob controller started after the informers");
            return;
        };
        let on_cronjobs = route(
            cronjob_events,
            &c,
            Controller::on_cronjob,
            Controller::enqueue_all,
        );
        let on_jobs = {
            let (c, r) = (c.clone(), c.clone());
            forward(job_events, move |n| c.on_job(n), move || r.enqueue_all())
        };
        let run = {
            let c = c.clone();
            async move {
                c.cronjobs.clone().wait_ready().await;
                c.jobs.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers("cronjob", c.queue.clone(), WORKERS, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_cronjobs, on_jobs, run);
    })
}

impl Controller {
    fn on_cronjob(&self, n: Notification<CronJob>) {
        if let Notification::Add(cj) | Notification::Update { new: cj, .. } = n {
            self.queue.add(&key(
                cj.metadata.namespace.as_deref().unwrap_or_default(),
                cj.metadata.name.as_deref().unwrap_or_default(),
            ));
        }
    }

    /// A Job's change concerns the CronJob that controls it.
    fn on_job(&self, n: Notification<Job>) {
        let job = match n {
            Notification::Add(j)
            | Notification::Delete(j)
            | Notification::Update { new: j, .. } => j,
        };
        if let Some(owner) = controller_ref(&job.metadata).filter(|r| r.kind == "CronJob") {
            let ns = job.metadata.namespace.as_deref().unwrap_or_default();
            let k = key(ns, &owner.name);
            if self
                .cronjobs
                .get(&k)
                .is_some_and(|cj| cj.metadata.uid.as_deref() == Some(owner.uid.as_str()))
            {
                self.queue.add(&k);
            }
        }
    }

    fn enqueue_all(&self) {
        for cj in self.cronjobs.list() {
            self.queue.add(&key(
                cj.metadata.namespace.as_deref().unwrap_or_default(),
                cj.metadata.name.as_deref().unwrap_or_default(),
            ));
        }
    }
}

//! The Job controller: runs a Job's pods to completion (completions and parallelism,
//! NonIndexed and Indexed modes), counts every finished pod exactly once through the
//! `batch.kubernetes.io/job-tracking` finalizer and `status.uncountedTerminatedPods`, backs off
//! after failures, and finishes the Job with upstream's conditions and events (backoff limit,
//! deadline, pod failure policy, per-index limits, success policy, suspension).
//!
//! Wiring only: informer handlers turn notifications into keys and settle expectations;
//! [`sync`] reconciles one Job, [`fate`] decides its conditions, [`manage`] creates and deletes its pods, [`pods`] makes and
//! reads pods, [`indexes`] and [`backoff`] are pure arithmetic.

pub mod backoff;
pub mod fate;
pub mod indexes;
pub mod manage;
pub mod pods;
pub mod sync;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use tinykube_client::reflector::{key_of, Notification, Store};

use crate::context::{route, Context};
use crate::expectations::Expectations;
use crate::owned::{self, Owner, PodHandlers, Updates};
use crate::util::{controller_ref, run_workers};
use crate::workqueue::WorkQueue;

/// The event source, as upstream.
pub const COMPONENT: &str = "job-controller";

/// Queue keys of pods that still carry the tracking finalizer while no Job of theirs is
/// cached: `orphan-pod:NAMESPACE/NAME`.
pub const ORPHAN: &str = "orphan-pod:";

impl Owner for Job {
    fn label_selector(&self) -> Option<&LabelSelector> {
        self.spec.as_ref()?.selector.as_ref()
    }

    fn min_ready_seconds(&self) -> i32 {
        0
    }
}

/// Shared state of the controller.
pub struct Controller {
    pub ctx: Arc<Context>,
    pub pods: Store<Pod>,
    pub jobs: Store<Job>,
    pub queue: WorkQueue,
    pub expectations: Expectations,
    /// Uids of pods whose finalizer this process removed and whose informer copy may still
    /// show it: they are counted already and must not be counted again.
    pub removing: Mutex<HashSet<String>>,
    pub recorder: Arc<crate::events::EventRecorder>,
    /// The first delay before failed pods are replaced.
    pub backoff: Duration,
    /// The resourceVersion of each Job's last status write by this process, until the
    /// informer brings it: until then the cached Job is older than what the controller knows
    /// (the pods' cache may already show the finalizers that write allowed to go).
    pub written: Mutex<HashMap<String, (u64, Instant)>>,
}

/// tinykube's resourceVersions are the store's revisions, so they order writes; one that
/// does not parse is not compared.
fn revision(rv: &str) -> Option<u64> {
    rv.parse().ok()
}

/// How long a status write may wait for its informer event before the cache is trusted again.
const WRITE_VISIBLE_WITHIN: Duration = Duration::from_secs(5);

/// Subscribe to pods and Jobs and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let job_events = ctx.jobs.subscribe();
    let pod_events = ctx.pods.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        pods: ctx.pods.store(),
        jobs: ctx.jobs.store(),
        queue: ctx.queue(),
        expectations: Expectations::new(),
        removing: Mutex::new(HashSet::new()),
        recorder: ctx.recorder(COMPONENT),
        backoff: ctx.options.job_pod_failure_backoff,
        written: Mutex::new(HashMap::new()),
    });
    let workers = ctx.options.concurrent_job_syncs;
    Box::pin(async move {
        let (Some(job_events), Some(pod_events)) = (job_events, pod_events) else {
            tracing::error!("job controller started after the informers");
            return;
        };
        let on_job = route(job_events, &c, Controller::on_job, Controller::lagged);
        let on_pod = route(pod_events, &c, Controller::on_pod, Controller::lagged);
        let run = {
            let c = c.clone();
            async move {
                c.pods.clone().wait_ready().await;
                c.jobs.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers("job", c.queue.clone(), workers, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_job, on_pod, run);
    })
}

impl Controller {
    fn handlers(&self) -> PodHandlers<'_, Job> {
        PodHandlers {
            owners: &self.jobs,
            queue: &self.queue,
            creates: &self.expectations,
            deletes: &self.expectations,
            updates: Updates::Every,
        }
    }

    /// Every Job, and every pod still carrying the finalizer without a cached Job.
    fn enqueue_all(&self) {
        owned::enqueue_all(&self.jobs, &self.queue);
        for pod in self.pods.list() {
            self.check_orphan(&pod);
        }
    }

    fn lagged(&self) {
        tracing::warn!("job controller fell behind its informers; resyncing");
        if let Ok(mut r) = self.removing.lock() {
            r.clear();
        }
        if let Ok(mut w) = self.written.lock() {
            w.clear();
        }
        self.handlers().lagged();
        self.enqueue_all();
    }

    fn on_job(&self, n: Notification<Job>) {
        self.handlers().on_owner(n);
    }

    /// Remember the resourceVersion a status write of `key` produced.
    fn wrote(&self, key: &str, job: &Job) {
        let rv = job.metadata.resource_version.as_deref().and_then(revision);
        if let (Ok(mut w), Some(rv)) = (self.written.lock(), rv) {
            w.insert(key.to_string(), (rv, Instant::now()));
        }
    }

    /// Whether the cached `job` predates this process's last status write of it (for a
    /// bounded time, in case that write's event never comes).
    fn cache_behind(&self, key: &str, job: &Job) -> bool {
        let Ok(mut w) = self.written.lock() else {
            return false;
        };
        let cached = job.metadata.resource_version.as_deref().and_then(revision);
        match (w.get(key), cached) {
            (Some(&(rv, at)), Some(c)) if c < rv && at.elapsed() < WRITE_VISIBLE_WITHIN => true,
            (Some(_), _) => {
                w.remove(key);
                false
            }
            (None, _) => false,
        }
    }

    fn on_pod(&self, n: Notification<Pod>) {
        let (pod, gone) = match &n {
            Notification::Add(p) => (p.clone(), false),
            Notification::Update { new, .. } => (new.clone(), false),
            Notification::Delete(p) => (p.clone(), true),
        };
        if gone || !pods::has_finalizer(&pod) {
            if let (Ok(mut r), Some(uid)) = (self.removing.lock(), pod.metadata.uid.as_ref()) {
                r.remove(uid);
            }
        }
        if !gone {
            self.check_orphan(&pod);
        }
        self.handlers().on_pod(n);
    }

    /// A pod with the tracking finalizer whose Job is not cached is looked at on its own.
    fn check_orphan(&self, pod: &Pod) {
        let job_ref = controller_ref(&pod.metadata).is_some_and(|r| r.kind == "Job");
        if job_ref
            && pods::has_finalizer(pod)
            && self.jobs.ready()
            && owned::resolve(&self.jobs, &pod.metadata).is_none()
        {
            self.queue.add(&format!("{ORPHAN}{}", key_of(pod)));
        }
    }
}

//! The resource quota controller (upstream's `resourcequota`): keeps every ResourceQuota's
//! `status.hard` (its `spec.hard`) and `status.used` (a recount of the namespace's objects by
//! `proto::quota`'s evaluators) true, so that admission charges against the right numbers and
//! `kubectl describe quota` shows them.
//!
//! Wiring only: a quota is queued when it is new or its `spec.hard` differs from its
//! `status.hard`; every quota of a namespace when an object it may count goes away there (a
//! deleted pod, configmap, …, a pod that finished, or a Service or claim whose usage an update
//! changed), as upstream's replenishment; and every
//! quota on a full resync every [`RESYNC`]. The objects of kinds other than pods are watched
//! from the first time a quota counts them. [`sync`] recounts one quota.

pub mod sync;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, ResourceQuota};
use serde_json::Value;
use tinykube_client::dynamic::{ApiResource, DynamicApi};
use tinykube_client::reflector::{Informer, Notification, Store};
use tinykube_client::watcher::Event;
use tinykube_client::{Api, ListParams};
use tinykube_proto::quota::{Evaluator, ResourceList};

use crate::context::{route, Context, BY_NAMESPACE};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// Upstream's `--resource-quota-sync-period` default: every quota is recounted this often.
pub const RESYNC: Duration = Duration::from_secs(300);
/// How often a resource missing from discovery (a CRD not installed yet) may refresh it.
pub const DISCOVERY_MISS_PERIOD: Duration = Duration::from_secs(5);

pub struct Controller {
    pub ctx: Arc<Context>,
    pub quotas: Store<ResourceQuota>,
    /// Quota keys (`namespace/name`) to recount.
    pub queue: WorkQueue,
    /// Resources (`group/plural`) whose deletions are being watched.
    watched: Mutex<HashSet<String>>,
    /// Discovery and when it was read, refreshed when a quota names a resource it does not
    /// know (at most every [`DISCOVERY_MISS_PERIOD`]).
    pub(crate) resources: Mutex<(Vec<ApiResource>, Option<std::time::Instant>)>,
}

/// Subscribe to pods, watch quotas, and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let pod_events = ctx.pods.subscribe();
    let informer = Informer::new(
        Api::<ResourceQuota>::all(ctx.client.clone()),
        ListParams::default(),
    )
    .with_index(BY_NAMESPACE, |q: &ResourceQuota| {
        q.metadata.namespace.clone().into_iter().collect()
    });
    let quota_events = informer.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        quotas: informer.store(),
        queue: ctx.queue(),
        watched: Mutex::new(HashSet::from(["/pods".to_string()])),
        resources: Mutex::new((Vec::new(), None)),
    });
    Box::pin(async move {
        let Some(pod_events) = pod_events else {
            tracing::error!("resourcequota controller started after the informers");
            return;
        };
        let on_pod = route(pod_events, &c, Controller::on_pod, Controller::enqueue_all);
        let on_quota = route(
            quota_events,
            &c,
            Controller::on_quota,
            Controller::enqueue_all,
        );
        let run = {
            let c = c.clone();
            async move {
                c.quotas.clone().wait_ready().await;
                let s = c.clone();
                let workers = run_workers("resourcequota", c.queue.clone(), 5, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                });
                let resync = async {
                    loop {
                        c.enqueue_all();
                        tokio::time::sleep(RESYNC).await;
                    }
                };
                tokio::join!(workers, resync);
            }
        };
        tokio::join!(informer.run(), on_pod, on_quota, run);
    })
}

impl Controller {
    fn enqueue_all(&self) {
        for q in self.quotas.list() {
            self.enqueue(&q);
        }
    }

    fn enqueue(&self, q: &ResourceQuota) {
        if let (Some(ns), Some(name)) = (&q.metadata.namespace, &q.metadata.name) {
            self.queue.add(&format!("{ns}/{name}"));
        }
    }

    fn enqueue_namespace(&self, ns: &str) {
        for q in self.quotas.by_index(BY_NAMESPACE, ns) {
            self.enqueue(&q);
        }
    }

    /// New quotas and changed limits are recounted; the controller's own status writes are not.
    fn on_quota(&self, n: Notification<ResourceQuota>) {
        match n {
            Notification::Add(q) => self.enqueue(&q),
            Notification::Update { new, .. } => {
                let hard = new.spec.as_ref().and_then(|s| s.hard.clone());
                let status = new.status.as_ref().and_then(|s| s.hard.clone());
                if hard != status {
                    self.enqueue(&new);
                }
            }
            Notification::Delete(_) => {}
        }
    }

    /// Replenishment: a pod that is gone or finished gives its usage back.
    fn on_pod(&self, n: Notification<Pod>) {
        let terminal = |p: &Pod| {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            matches!(phase, Some("Succeeded" | "Failed"))
        };
        let pod = match n {
            Notification::Delete(p) => p,
            Notification::Update { old, new } if terminal(&new) && !terminal(&old) => new,
            Notification::Update { old, new }
                if new.metadata.deletion_timestamp.is_some()
                    && old.metadata.deletion_timestamp.is_none() =>
            {
                new
            }
            _ => return,
        };
        if let Some(ns) = &pod.metadata.namespace {
            self.enqueue_namespace(ns);
        }
    }

    /// Watch deletions of `resource` from now on (once per resource).
    pub(crate) fn watch(self: &Arc<Self>, resource: &ApiResource) {
        let id = format!("{}/{}", resource.group, resource.plural);
        {
            let mut watched = self.watched.lock().unwrap_or_else(|e| e.into_inner());
            if !watched.insert(id) {
                return;
            }
        }
        let c = self.clone();
        let api = DynamicApi::new(self.ctx.client.clone(), resource.clone(), None);
        let mut usage = UsageSeen::of(&resource.group, &resource.plural);
        tokio::spawn(async move {
            let mut events = Box::pin(tinykube_client::dynamic::watcher(
                api,
                ListParams::default(),
            ));
            let mut listed = false;
            while let Some(event) = events.next().await {
                match event {
                    Ok(Event::Deleted(obj)) => {
                        usage.forget(&obj);
                        let ns = obj.pointer("/metadata/namespace").and_then(|v| v.as_str());
                        if let Some(ns) = ns {
                            c.enqueue_namespace(ns);
                        }
                    }
                    // A re-list may hide deletions: recount everything.
                    Ok(Event::Restarted(objs)) => {
                        usage.restart(&objs);
                        if listed {
                            c.enqueue_all();
                        }
                        listed = true;
                    }
                    Ok(Event::Applied(obj)) => {
                        if usage.changed(&obj) {
                            let ns = obj.pointer("/metadata/namespace").and_then(|v| v.as_str());
                            if let Some(ns) = ns {
                                c.enqueue_namespace(ns);
                            }
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "resourcequota watch failed; retrying"),
                }
            }
        });
    }
}

/// The usage of the watched objects whose usage an update may change (Services: their type
/// and ports; claims: their storage request), so that such a change is recounted at once, as
/// upstream's quota monitor replenishes on a Service's type change: admission charges what an
/// update adds, the recount gives back what it frees. Other kinds count the same all their life.
struct UsageSeen {
    evaluator: Option<Evaluator>,
    by_key: HashMap<String, ResourceList>,
}

impl UsageSeen {
    fn of(group: &str, plural: &str) -> UsageSeen {
        let evaluator = Evaluator::of(group, plural);
        let varies = matches!(
            evaluator,
            Evaluator::Services | Evaluator::PersistentVolumeClaims
        );
        UsageSeen {
            evaluator: varies.then_some(evaluator),
            by_key: HashMap::new(),
        }
    }

    fn key(obj: &Value) -> String {
        let text = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or_default();
        format!("{}/{}", text("/metadata/namespace"), text("/metadata/name"))
    }

    /// A Service's or a claim's usage does not depend on the time (a pod's does).
    fn usage(e: &Evaluator, obj: &Value) -> ResourceList {
        e.usage(obj, 0)
    }

    fn restart(&mut self, objs: &[Value]) {
        let Some(e) = &self.evaluator else { return };
        self.by_key = objs
            .iter()
            .map(|o| (Self::key(o), Self::usage(e, o)))
            .collect();
    }

    fn forget(&mut self, obj: &Value) {
        self.by_key.remove(&Self::key(obj));
    }

    /// Whether `obj` (added or updated) now counts differently than it did.
    fn changed(&mut self, obj: &Value) -> bool {
        let Some(e) = &self.evaluator else {
            return false;
        };
        let now = Self::usage(e, obj);
        self.by_key
            .insert(Self::key(obj), now.clone())
            .is_some_and(|before| before != now)
    }
}

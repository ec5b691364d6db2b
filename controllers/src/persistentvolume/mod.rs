//! The PersistentVolume controller (upstream's `persistentvolume-binder`, events from
//! `persistentvolume-controller`): binds claims to volumes (static binding, pre-bound volumes
//! and claims), provisions volumes for classes whose provisioner is the built-in one
//! (`rancher.io/local-path`, as kind ships), and reclaims volumes whose claim is gone
//! (Retain: Released; Delete: deleted).
//!
//! Wiring only: claim and volume notifications enqueue keys on two queues (a new volume also
//! brings every unbound claim back), and everything is re-synced every 15 s as upstream's
//! `--pvclaimbinder-sync-period`. [`claims`] syncs one claim, [`volumes`] one volume,
//! [`provision`] makes a claim's volume.

pub mod claims;
pub mod provision;
pub mod volumes;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use tinykube_client::reflector::{key_of, Notification, Store};

use crate::context::{forward, Context};
use crate::events::EventRecorder;
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// The event source of the binder, as upstream.
pub const COMPONENT: &str = "persistentvolume-controller";
/// How often every claim and volume is synced again (upstream's default).
const RESYNC: Duration = Duration::from_secs(15);
const WORKERS: usize = 2;

pub struct Controller {
    pub ctx: Arc<Context>,
    pub claims: Store<PersistentVolumeClaim>,
    pub volumes: Store<PersistentVolume>,
    pub classes: Store<StorageClass>,
    pub claim_queue: WorkQueue,
    pub volume_queue: WorkQueue,
    pub recorder: Arc<EventRecorder>,
    /// The events of the built-in provisioner (`rancher.io/local-path_<host>`).
    pub provisioner: Arc<EventRecorder>,
}

/// Subscribe to claims and volumes and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let claim_events = ctx.persistentvolumeclaims.subscribe();
    let volume_events = ctx.persistentvolumes.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        claims: ctx.persistentvolumeclaims.store(),
        volumes: ctx.persistentvolumes.store(),
        classes: ctx.storageclasses.store(),
        claim_queue: ctx.queue(),
        volume_queue: ctx.queue(),
        recorder: ctx.recorder(COMPONENT),
        provisioner: ctx.recorder(&format!("{}_{}", provision::PROVISIONER, ctx.host)),
    });
    Box::pin(async move {
        let (Some(claim_events), Some(volume_events)) = (claim_events, volume_events) else {
            tracing::error!("persistentvolume-binder started after the informers");
            return;
        };
        let on_claims = {
            let (c, r) = (c.clone(), c.clone());
            forward(
                claim_events,
                move |n| c.on_claim(n),
                move || r.enqueue_all(),
            )
        };
        let on_volumes = {
            let (c, r) = (c.clone(), c.clone());
            forward(
                volume_events,
                move |n| c.on_volume(n),
                move || r.enqueue_all(),
            )
        };
        let run = {
            let c = c.clone();
            async move {
                c.claims.clone().wait_ready().await;
                c.volumes.clone().wait_ready().await;
                c.classes.clone().wait_ready().await;
                let resync = {
                    let c = c.clone();
                    async move {
                        loop {
                            c.enqueue_all();
                            tokio::time::sleep(RESYNC).await;
                        }
                    }
                };
                let (s1, s2) = (c.clone(), c.clone());
                let claims = run_workers(
                    "persistentvolume-binder",
                    c.claim_queue.clone(),
                    WORKERS,
                    move |key| {
                        let s = s1.clone();
                        async move { s.sync_claim(&key).await }
                    },
                );
                let volumes = run_workers(
                    "persistentvolume-binder",
                    c.volume_queue.clone(),
                    WORKERS,
                    move |key| {
                        let s = s2.clone();
                        async move { s.sync_volume(&key).await }
                    },
                );
                tokio::join!(resync, claims, volumes);
            }
        };
        tokio::join!(on_claims, on_volumes, run);
    })
}

impl Controller {
    fn enqueue_all(&self) {
        for c in self.claims.list() {
            self.claim_queue.add(&key_of(&*c));
        }
        for v in self.volumes.list() {
            self.volume_queue.add(&key_of(&*v));
        }
    }

    fn on_claim(&self, n: Notification<PersistentVolumeClaim>) {
        let claim = match n {
            Notification::Add(c)
            | Notification::Update { new: c, .. }
            | Notification::Delete(c) => c,
        };
        self.claim_queue.add(&key_of(&*claim));
        // A volume bound to it follows its claim (a deleted claim releases it).
        for v in self.volumes.list() {
            if v.spec
                .as_ref()
                .and_then(|s| s.claim_ref.as_ref())
                .is_some_and(|r| {
                    r.name == claim.metadata.name && r.namespace == claim.metadata.namespace
                })
            {
                self.volume_queue.add(&key_of(&*v));
            }
        }
    }

    fn on_volume(&self, n: Notification<PersistentVolume>) {
        let (volume, added) = match n {
            Notification::Add(v) => (v, true),
            Notification::Update { new: v, .. } | Notification::Delete(v) => (v, false),
        };
        self.volume_queue.add(&key_of(&*volume));
        if let Some(r) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) {
            let (ns, name) = (
                r.namespace.clone().unwrap_or_default(),
                r.name.clone().unwrap_or_default(),
            );
            self.claim_queue.add(&format!("{ns}/{name}"));
        }
        if added {
            // A new volume may be what an unbound claim waits for.
            for c in self.claims.list() {
                if !tinykube_proto::storage::is_bound(&c) {
                    self.claim_queue.add(&key_of(&*c));
                }
            }
        }
    }
}

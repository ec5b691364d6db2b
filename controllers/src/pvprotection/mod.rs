//! The PV protection controller (upstream's `persistentvolume-protection`): a volume being
//! deleted keeps its `kubernetes.io/pv-protection` finalizer while it is Bound to a claim, and
//! loses it once it is not; a volume not being deleted gets the finalizer if it lacks it.

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::PersistentVolume;
use serde_json::json;
use tinykube_client::reflector::{key_of, Notification, Store};
use tinykube_client::{Api, ClientError, Patch};
use tinykube_proto::storage::PV_PROTECTION;

use crate::context::{forward, Context};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

pub struct Controller {
    pub ctx: Arc<Context>,
    pub volumes: Store<PersistentVolume>,
    pub queue: WorkQueue,
}

#[derive(Debug, thiserror::Error)]
#[error("updating the finalizers of volume {volume}: {source}")]
pub struct SyncError {
    volume: String,
    #[source]
    source: ClientError,
}

/// Whether a volume is in use: Bound, as upstream's isVolumeInUse.
pub fn in_use(volume: &PersistentVolume) -> bool {
    volume.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
}

pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let events = ctx.persistentvolumes.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        volumes: ctx.persistentvolumes.store(),
        queue: ctx.queue(),
    });
    Box::pin(async move {
        let Some(events) = events else {
            tracing::error!("persistentvolume-protection started after the informers");
            return;
        };
        let on_volumes = {
            let (c, r) = (c.clone(), c.clone());
            forward(
                events,
                move |n| {
                    if let Notification::Add(v) | Notification::Update { new: v, .. } = n {
                        c.queue.add(&key_of(&*v));
                    }
                },
                move || r.enqueue_all(),
            )
        };
        let run = {
            let c = c.clone();
            async move {
                c.volumes.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers(
                    "persistentvolume-protection",
                    c.queue.clone(),
                    1,
                    move |key| {
                        let s = s.clone();
                        async move { s.sync(&key).await }
                    },
                )
                .await;
            }
        };
        tokio::join!(on_volumes, run);
    })
}

impl Controller {
    fn enqueue_all(&self) {
        for v in self.volumes.list() {
            self.queue.add(&key_of(&*v));
        }
    }

    pub async fn sync(&self, name: &str) -> Result<(), SyncError> {
        let Some(volume) = self.volumes.get(name) else {
            return Ok(());
        };
        let finalizers = volume.metadata.finalizers.clone().unwrap_or_default();
        let has = finalizers.iter().any(|f| f == PV_PROTECTION);
        let want: Vec<String> = if volume.metadata.deletion_timestamp.is_some() {
            if !has || in_use(&volume) {
                return Ok(());
            }
            finalizers
                .into_iter()
                .filter(|f| f != PV_PROTECTION)
                .collect()
        } else {
            if has {
                return Ok(());
            }
            finalizers
                .into_iter()
                .chain([PV_PROTECTION.to_string()])
                .collect()
        };
        let api: Api<PersistentVolume> = Api::all(self.ctx.client.clone());
        let patch = json!({"metadata": {"finalizers": want, "resourceVersion": volume.metadata.resource_version}});
        match api.patch(name, &Patch::Merge(patch)).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(source) => Err(SyncError {
                volume: name.to_string(),
                source,
            }),
        }
    }
}

//! The horizontal pod autoscaler controller (upstream's `horizontalpodautoscaling`): every
//! sync period each HorizontalPodAutoscaler reads its target's scale subresource, gets the
//! pods' resource metrics through the metrics API, computes the replica count upstream's way
//! ([`calculator`]), stabilizes and limits it ([`behavior`]), rescales the target and writes
//! the status (current and desired replicas, current metrics, the AbleToScale, ScalingActive
//! and ScalingLimited conditions) with upstream's events.
//!
//! As upstream, every enqueue waits one sync period (so a new HPA is first looked at a period
//! after its creation) and a key already waiting is not queued twice.

pub mod behavior;
pub mod calculator;
pub mod compute;
pub mod metrics;
mod sync;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Pod;
use tinykube_client::reflector::{Notification, Store};

use crate::context::{route, Context};
use crate::util::{key, run_workers};
use crate::workqueue::WorkQueue;
use behavior::History;
use calculator::Calculator;
use metrics::{MetricsSource, ResourceMetricsApi};

/// Upstream's ConcurrentHorizontalPodAutoscalerSyncs default.
const WORKERS: usize = 5;
/// The component events are recorded as.
pub const COMPONENT: &str = "horizontal-pod-autoscaler";

/// The controller's flags.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// `--horizontal-pod-autoscaler-sync-period`.
    pub sync_period: Duration,
    /// `--horizontal-pod-autoscaler-downscale-stabilization`.
    pub downscale_stabilization: Duration,
    pub calculator: Calculator,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            sync_period: Duration::from_secs(15),
            downscale_stabilization: Duration::from_secs(300),
            calculator: Calculator::default(),
        }
    }
}

pub struct Controller {
    pub ctx: Arc<Context>,
    pub hpas: Store<HorizontalPodAutoscaler>,
    pub pods: Store<Pod>,
    pub queue: WorkQueue,
    pub metrics: Arc<dyn MetricsSource>,
    pub settings: Settings,
    /// Recommendations and rescales per HPA key.
    histories: Mutex<HashMap<String, History>>,
}

/// Subscribe to HPAs (and read pods) and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let settings = ctx.options.hpa;
    let metrics = Arc::new(ResourceMetricsApi {
        client: ctx.client.clone(),
    });
    start_with(ctx, settings, metrics)
}

/// [`start`] with a metrics source of the caller's.
pub fn start_with(
    ctx: &Arc<Context>,
    settings: Settings,
    metrics: Arc<dyn MetricsSource>,
) -> BoxFuture<'static, ()> {
    let events = ctx.horizontalpodautoscalers.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        hpas: ctx.horizontalpodautoscalers.store(),
        pods: ctx.pods.store(),
        queue: ctx.queue(),
        metrics,
        settings,
        histories: Mutex::new(HashMap::new()),
    });
    Box::pin(async move {
        let Some(events) = events else {
            tracing::error!("horizontalpodautoscaling controller started after the informers");
            return;
        };
        let on_hpas = route(events, &c, Controller::on_hpa, Controller::enqueue_all);
        let run = {
            let c = c.clone();
            async move {
                c.hpas.clone().wait_ready().await;
                c.pods.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers(
                    "horizontalpodautoscaling",
                    c.queue.clone(),
                    WORKERS,
                    move |key| {
                        let s = s.clone();
                        async move { s.sync(&key).await }
                    },
                )
                .await;
            }
        };
        tokio::join!(on_hpas, run);
    })
}

fn hpa_key(hpa: &HorizontalPodAutoscaler) -> String {
    key(
        hpa.metadata.namespace.as_deref().unwrap_or_default(),
        hpa.metadata.name.as_deref().unwrap_or_default(),
    )
}

impl Controller {
    fn on_hpa(&self, n: Notification<HorizontalPodAutoscaler>) {
        match n {
            Notification::Add(h) | Notification::Update { new: h, .. } => {
                self.enqueue(&hpa_key(&h))
            }
            Notification::Delete(h) => self.forget(&hpa_key(&h)),
        }
    }

    /// Every enqueue waits a sync period; one already waiting is kept.
    fn enqueue(&self, key: &str) {
        self.queue.add_after_clock(key, self.settings.sync_period);
    }

    fn enqueue_all(&self) {
        for h in self.hpas.list() {
            self.enqueue(&hpa_key(&h));
        }
    }

    fn forget(&self, key: &str) {
        if let Ok(mut h) = self.histories.lock() {
            h.remove(key);
        }
    }

    /// Run `f` on the history of `key`.
    fn with_history<T>(&self, key: &str, f: impl FnOnce(&mut History) -> T) -> T {
        let mut all = match self.histories.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(all.entry(key.to_string()).or_default())
    }
}

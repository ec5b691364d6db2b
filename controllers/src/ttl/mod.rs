//! The TTL controller: every node carries `node.alpha.kubernetes.io/ttl`, upstream's hint to
//! kubelets of how many seconds they may cache the objects their pods use, chosen from the
//! cluster's size: 0 up to 100 nodes, then 15, 30, 60 and 300 s. The size ranges overlap (a
//! step up at 101 nodes, back down only below 90) so that a cluster near a boundary does not
//! make every node flap.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Node;
use serde_json::json;
use tinykube_client::reflector::{Notification, Store};
use tinykube_client::{Api, ClientError, Patch};

use crate::context::{route, Context};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// The annotation, as `v1.ObjectTTLAnnotationKey`.
pub const ANNOTATION: &str = "node.alpha.kubernetes.io/ttl";

/// Node counts `min..=max` use `ttl` seconds.
struct Step {
    min: usize,
    max: usize,
    ttl: u32,
}

/// Upstream's table.
const STEPS: &[Step] = &[
    Step {
        min: 0,
        max: 100,
        ttl: 0,
    },
    Step {
        min: 90,
        max: 500,
        ttl: 15,
    },
    Step {
        min: 450,
        max: 1000,
        ttl: 30,
    },
    Step {
        min: 900,
        max: 2000,
        ttl: 60,
    },
    Step {
        min: 1800,
        max: usize::MAX,
        ttl: 300,
    },
];

/// The step a cluster at step `from` is at once it has `nodes` nodes.
pub fn step_for(from: usize, nodes: usize) -> usize {
    let mut step = from.min(STEPS.len() - 1);
    while step + 1 < STEPS.len() && nodes > STEPS[step].max {
        step += 1;
    }
    while step > 0 && nodes < STEPS[step].min {
        step -= 1;
    }
    step
}

pub struct Controller {
    pub ctx: Arc<Context>,
    pub nodes: Store<Node>,
    pub queue: WorkQueue,
    step: Mutex<usize>,
}

#[derive(Debug, thiserror::Error)]
#[error("annotating node {node}: {source}")]
pub struct TtlError {
    node: String,
    #[source]
    source: ClientError,
}

/// Subscribe to nodes and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let events = ctx.nodes.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        nodes: ctx.nodes.store(),
        queue: ctx.queue(),
        step: Mutex::new(0),
    });
    Box::pin(async move {
        let Some(events) = events else {
            tracing::error!("ttl controller started after the informers");
            return;
        };
        let handler = route(events, &c, Controller::on_node, Controller::enqueue_all);
        let run = {
            let c = c.clone();
            async move {
                c.nodes.clone().wait_ready().await;
                c.resize();
                c.enqueue_all();
                let s = c.clone();
                run_workers("ttl", c.queue.clone(), 1, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(handler, run);
    })
}

impl Controller {
    /// Follow the cluster's size; true when the TTL changed.
    fn resize(&self) -> bool {
        let mut step = self.step.lock().unwrap_or_else(|e| e.into_inner());
        let next = step_for(*step, self.nodes.len());
        let changed = next != *step;
        *step = next;
        changed
    }

    fn desired(&self) -> u32 {
        STEPS[*self.step.lock().unwrap_or_else(|e| e.into_inner())].ttl
    }

    fn on_node(&self, n: Notification<Node>) {
        let changed = self.resize();
        if changed {
            self.enqueue_all();
        } else if let Notification::Add(node) | Notification::Update { new: node, .. } = n {
            if let Some(name) = &node.metadata.name {
                self.queue.add(name);
            }
        }
    }

    fn enqueue_all(&self) {
        for node in self.nodes.list() {
            if let Some(name) = &node.metadata.name {
                self.queue.add(name);
            }
        }
    }

    async fn sync(&self, name: &str) -> Result<(), TtlError> {
        let Some(node) = self.nodes.get(name) else {
            return Ok(());
        };
        let want = self.desired();
        let current = node
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION))
            .and_then(|v| v.parse::<u32>().ok());
        if current == Some(want) {
            return Ok(());
        }
        let api: Api<Node> = Api::all(self.ctx.client.clone());
        let patch = json!({"metadata": {"annotations": {ANNOTATION: want.to_string()}}});
        match api.patch(name, &Patch::Strategic(patch)).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(source) => Err(TtlError {
                node: name.to_string(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_follow_the_size_with_upstreams_overlaps() {
        let cases = [
            (0, 3, 0),
            (0, 100, 0),
            (0, 101, 1),
            (1, 95, 1),
            (1, 89, 0),
            (0, 1000, 2),
            (0, 1001, 3),
            (3, 950, 3),
            (3, 899, 2),
            (0, 5000, 4),
            (4, 1799, 3),
            (4, 10, 0),
        ];
        for (from, nodes, want) in cases {
            assert_eq!(
                step_for(from, nodes),
                want,
                "from step {from} at {nodes} nodes"
            );
        }
        assert_eq!(STEPS[step_for(0, 3)].ttl, 0);
    }
}

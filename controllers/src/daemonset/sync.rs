//! Reconcile one DaemonSet, as upstream's syncDaemonSet: build its revision history, claim its
//! pods, create a pod for every node that should run one and delete pods from nodes that
//! should not (failed pods with backoff), take one RollingUpdate step, prune old revisions and
//! write `status` through the status subresource.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use tinykube_client::events::EventType;
use tinykube_client::reflector::key_of;
use tinykube_client::ClientError;
use tinykube_proto::labels::Selector;

use super::history::revision_hash;
use super::placement::{node_should_run, pin_to_node, template_spec};
use super::status::{calculate_status, name, node_pods, pod_template, template_generation};
use super::update;
use super::Controller;
use crate::context::BY_NAMESPACE;
use crate::owned::{self, Owner, PodError, PodWriter};
use crate::util::{new_controller_ref, object_ref, pod_from_template, secs};

/// Upstream's burstReplicas for DaemonSets: at most this many creates or deletes per sync.
pub const BURST_REPLICAS: usize = 250;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Pods(#[from] PodError),
    #[error("updating status: {0}")]
    Status(#[source] ClientError),
    #[error("maintaining controller revisions: {0}")]
    History(#[source] ClientError),
    #[error("found a stale collision count; will retry once it is updated")]
    StaleCollisionCount,
}

impl Controller {
    /// Reconcile the DaemonSet at `key`.
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some(ds) = self.daemonsets.get(key) else {
            self.creates.delete(key);
            self.deletes.delete(key);
            return Ok(());
        };
        let Some(selector) = ds.selector() else {
            tracing::warn!(key, "invalid selector; ignoring");
            return Ok(());
        };
        if selector.is_everything() {
            self.recorder.record(
                &object_ref::<DaemonSet>(&ds.metadata),
                EventType::Warning,
                "SelectingAll",
                "This daemon set is selecting all pods. A non-empty selector is required.".into(),
            );
            return Ok(());
        }
        if ds.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let nodes = self.nodes.list();
        let (cur, old) = self.construct_history(&ds, &selector).await?;
        let hash = revision_hash(&cur);
        let pods = self.claim(&ds, &selector).await?;
        if !self.satisfied(key) {
            return self.update_status(&ds, &nodes, &pods, &hash, false).await;
        }
        let mut result = self.manage(key, &ds, &nodes, &pods, &hash).await;
        if result.is_ok() && self.satisfied(key) && update::is_rolling_update(&ds) {
            result = self.rolling_update(key, &ds, &nodes, &pods, &hash).await;
        }
        if result.is_ok() {
            result = self.cleanup_history(&ds, &old, &pods).await;
        }
        self.update_status(&ds, &nodes, &pods, &hash, true).await?;
        result
    }

    fn satisfied(&self, key: &str) -> bool {
        self.creates.satisfied(key) && self.deletes.satisfied(key)
    }

    /// Upstream's ClaimPods: the pods this DaemonSet owns (terminating ones included) after
    /// adopting matching orphans and releasing owned pods that stopped matching.
    async fn claim(&self, ds: &DaemonSet, selector: &Selector) -> Result<Vec<Arc<Pod>>, SyncError> {
        let ns = ds.metadata.namespace.as_deref().unwrap_or_default();
        let pods = self.pods.by_index(BY_NAMESPACE, ns);
        let owned = owned::claim(&self.ctx.client, ds, selector, pods).await;
        Ok(owned.map_err(PodError::Claim)?)
    }

    /// Pods to create and delete so that every node that should run a daemon pod runs exactly
    /// one (upstream's manage and podsShouldBeOnNode).
    async fn manage(
        &self,
        key: &str,
        ds: &DaemonSet,
        nodes: &[Arc<Node>],
        pods: &[Arc<Pod>],
        hash: &str,
    ) -> Result<(), SyncError> {
        let map = node_pods(pods, false);
        let template = template_spec(ds);
        let min_ready = ds.min_ready_seconds();
        let surge = update::allows_surge(ds);
        let now = self.ctx.clock.timestamp();
        let mut create = Vec::new();
        let mut delete = Vec::new();
        let mut known = HashSet::new();
        for node in nodes {
            let node_name = node.metadata.name.clone().unwrap_or_default();
            known.insert(node_name.clone());
            let placement = node_should_run(&template, node);
            let here = map.get(&node_name);
            if placement.should_run && here.is_none() {
                create.push(node_name);
            } else if placement.should_continue_running {
                let mut running = Vec::new();
                for pod in here.into_iter().flatten() {
                    if pod.metadata.deletion_timestamp.is_some() {
                        continue;
                    }
                    match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
                        Some("Failed") => {
                            if let Some(delay) = self.backoff_failed(ds, &node_name) {
                                self.queue.add_after_clock(key, delay);
                                continue;
                            }
                            let msg = format!(
                                "Found failed daemon pod {}/{} on node {node_name}, will try to kill it",
                                pod.metadata.namespace.as_deref().unwrap_or_default(),
                                name(pod)
                            );
                            self.recorder.record(
                                &object_ref::<DaemonSet>(&ds.metadata),
                                EventType::Warning,
                                "FailedDaemonPod",
                                msg,
                            );
                            delete.push(name(pod));
                        }
                        Some("Succeeded") => delete.push(name(pod)),
                        _ => running.push(pod.clone()),
                    }
                }
                delete.extend(update::excess_on_node(
                    &running, surge, hash, min_ready, now,
                ));
            } else {
                for pod in here.into_iter().flatten() {
                    if pod.metadata.deletion_timestamp.is_none() {
                        delete.push(name(pod));
                    }
                }
            }
        }
        // Unscheduled pods meant for nodes that are gone (upstream's
        // getUnscheduledPodsWithoutNode); the pod garbage collector deletes bound ones.
        for (node, here) in &map {
            if !known.contains(node) {
                delete.extend(
                    here.iter()
                        .filter(|p| {
                            p.metadata.deletion_timestamp.is_none()
                                && p.spec.as_ref().is_none_or(|s| s.node_name.is_none())
                        })
                        .map(|p| name(p)),
                );
            }
        }
        self.sync_nodes(key, ds, delete, create, hash).await
    }

    /// Whether the failed pod on the node must wait (the remaining delay), else start or
    /// double the backoff (1s up to 15 minutes, as upstream).
    fn backoff_failed(&self, ds: &DaemonSet, node: &str) -> Option<std::time::Duration> {
        const INITIAL: std::time::Duration = std::time::Duration::from_secs(1);
        const MAX: std::time::Duration = std::time::Duration::from_secs(15 * 60);
        let key = format!(
            "{}/{}/{node}",
            ds.metadata.uid.as_deref().unwrap_or_default(),
            ds.status
                .as_ref()
                .and_then(|s| s.observed_generation)
                .unwrap_or(0)
        );
        let now = self.ctx.clock.instant();
        let mut map = match self.failed_backoff.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        match map.get(&key).copied() {
            Some((at, delay)) if now.duration_since(at) < delay => {
                Some(delay - now.duration_since(at))
            }
            Some((at, delay)) if now.duration_since(at) < 2 * MAX => {
                map.insert(key, (now, (delay * 2).min(MAX)));
                None
            }
            _ => {
                map.insert(key, (now, INITIAL));
                None
            }
        }
    }

    /// Create daemon pods for `create` nodes and delete the `delete` pods, with expectations
    /// set first (upstream's syncNodes).
    async fn sync_nodes(
        &self,
        key: &str,
        ds: &DaemonSet,
        mut delete: Vec<String>,
        mut create: Vec<String>,
        hash: &str,
    ) -> Result<(), SyncError> {
        create.truncate(BURST_REPLICAS);
        delete.truncate(BURST_REPLICAS);
        let ns = ds.metadata.namespace.clone().unwrap_or_default();
        self.creates.expect_creations(key, create.len());
        self.deletes
            .expect_deletions(key, delete.iter().map(|n| format!("{ns}/{n}")).collect());
        let template = pod_template(ds, hash);
        let ds_name = ds.metadata.name.clone().unwrap_or_default();
        let pods: Vec<Pod> = create
            .iter()
            .map(|node| {
                let mut t = template.clone();
                if let Some(spec) = t.spec.as_mut() {
                    spec.affinity = Some(pin_to_node(spec.affinity.take(), node));
                }
                pod_from_template(
                    &t,
                    &ns,
                    &ds_name,
                    new_controller_ref::<DaemonSet>(&ds.metadata),
                )
            })
            .collect();
        let writer = PodWriter::new(&self.ctx.client, &self.recorder, ds, key);
        let created = writer.create(&self.creates, &pods).await;
        // Unlike a ReplicaSet, a DaemonSet (as upstream) stops waiting for the creates the
        // namespace refused.
        for _ in 0..created.refused {
            self.creates.creation_observed(key);
        }
        let mut failure = created.failure.map(SyncError::from);
        if let Err(e) = writer.delete(&self.deletes, &delete).await {
            failure = Some(e.into());
        }
        failure.map_or(Ok(()), Err)
    }

    /// One RollingUpdate step (upstream's rollingUpdate).
    async fn rolling_update(
        &self,
        key: &str,
        ds: &DaemonSet,
        nodes: &[Arc<Node>],
        pods: &[Arc<Pod>],
        hash: &str,
    ) -> Result<(), SyncError> {
        let mut map = node_pods(pods, false);
        let template = template_spec(ds);
        let mut should_run = HashSet::new();
        for node in nodes {
            if node_should_run(&template, node).should_run {
                let n = node.metadata.name.clone().unwrap_or_default();
                map.entry(n.clone()).or_default();
                should_run.insert(n);
            }
        }
        let desired = should_run.len() as i32;
        let (max_surge, max_unavailable) = update::limits(ds, desired);
        let plan = update::plan(&update::Step {
            nodes: &map,
            should_run: &|n| should_run.contains(n),
            hash,
            generation: template_generation(ds),
            max_surge,
            max_unavailable,
            desired,
            min_ready_seconds: ds.min_ready_seconds(),
            now: self.ctx.clock.timestamp(),
        });
        if plan == update::Plan::default() {
            return Ok(());
        }
        self.sync_nodes(key, ds, plan.delete, plan.create, hash)
            .await
    }

    async fn update_status(
        &self,
        ds: &DaemonSet,
        nodes: &[Arc<Node>],
        pods: &[Arc<Pod>],
        hash: &str,
        observe_generation: bool,
    ) -> Result<(), SyncError> {
        let map = node_pods(pods, false);
        let status = calculate_status(
            ds,
            nodes,
            &map,
            hash,
            observe_generation,
            self.ctx.clock.timestamp(),
        );
        let min_ready = ds.min_ready_seconds();
        if min_ready > 0 && status.number_ready != status.number_available.unwrap_or(0) {
            self.queue
                .add_after_clock(&key_of(ds), secs(i64::from(min_ready)));
        }
        if ds.status.as_ref() == Some(&status) {
            return Ok(());
        }
        // The collision count is the history's to write: keep what the object holds.
        owned::replace_status(&self.ctx.client, ds, |next| {
            let mut status = status.clone();
            status.collision_count = next.status.as_ref().and_then(|s| s.collision_count);
            next.status = Some(status);
        })
        .await
        .map_err(SyncError::Status)
    }
}

//! Reconcile one Service's EndpointSlices: the plan's writes, each slice carrying the
//! service's labels, `kubernetes.io/service-name`, the managed-by label, the last-change
//! trigger time and the Service as controller owner. Writes the cache has not shown yet are
//! remembered per service (`Pending`), and the service waits for them before it is planned
//! again, so that a slow cache never makes a second slice for the same endpoints.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tinykube_client::{Api, ClientError};

use super::plan::{self, Action};
use super::{service_key, Controller, CONTROLLER_NAME, MANAGED_BY, SERVICE_NAME};
use crate::context::BY_NAMESPACE;
use crate::podaddress::{
    inherited_labels, pods_of, selector, time_text, trigger_time, TRIGGER_TIME,
};
use crate::util::{new_controller_ref, split_key};

/// Upstream's default `--max-endpoints-per-slice`.
pub const MAX_ENDPOINTS: usize = 100;
/// How long a write may stay unseen by the cache before it is forgotten.
const PENDING_TTL: Duration = Duration::from_secs(10);
/// How soon a service waiting for its writes to show is looked at again.
const RECHECK: Duration = Duration::from_millis(50);

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("creating an endpoint slice: {0}")]
    Create(#[source] ClientError),
    #[error("updating endpoint slice {0}: {1}")]
    Update(String, #[source] ClientError),
    #[error("deleting endpoint slice {0}: {1}")]
    Delete(String, #[source] ClientError),
}

/// Slice writes of one service the cache has yet to show: a name present at least at a
/// resourceVersion, or gone.
#[derive(Debug, Default)]
pub struct Pending {
    since: Option<Instant>,
    written: Vec<(String, Option<u64>)>,
}

fn revision(s: &EndpointSlice) -> u64 {
    s.metadata
        .resource_version
        .as_deref()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

impl Controller {
    /// Whether the cache shows every write made for `key` (forgetting stale expectations).
    fn caught_up(&self, key: &str, ns: &str) -> bool {
        let mut tracker = match self.tracker.lock() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        let Some(pending) = tracker.get(key) else {
            return true;
        };
        let seen = pending.written.iter().all(|(name, rv)| {
            let cached = self.slices.get(&format!("{ns}/{name}"));
            match rv {
                Some(rv) => cached.is_some_and(|s| revision(&s) >= *rv),
                None => cached.is_none(),
            }
        });
        let expired = pending.since.is_some_and(|t| t.elapsed() > PENDING_TTL);
        if seen || expired {
            tracker.remove(key);
            return true;
        }
        false
    }

    fn remember(&self, key: &str, name: String, rv: Option<u64>) {
        let mut tracker = match self.tracker.lock() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        let pending = tracker.entry(key.to_string()).or_default();
        pending.since = Some(Instant::now());
        pending.written.retain(|(n, _)| *n != name);
        pending.written.push((name, rv));
    }

    /// This controller's slices of the service, from the cache.
    fn slices_of(&self, key: &str, ns: &str) -> Vec<Arc<EndpointSlice>> {
        self.slices
            .by_index(BY_NAMESPACE, ns)
            .into_iter()
            .filter(|s| service_key(s).as_deref() == Some(key))
            .collect()
    }

    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let (ns, name) = split_key(key);
        let Some(svc) = self.services.get(key) else {
            // The garbage collector removes the slices of a deleted service (they are owned).
            return Ok(());
        };
        let external = svc.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("ExternalName");
        if selector(&svc).is_none() || external || svc.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        if !self.caught_up(key, ns) {
            self.queue.add_after_real(key, RECHECK);
            return Ok(());
        }
        let pods = pods_of(&self.pods, &svc);
        let zone_of = |node: &str| {
            self.nodes.get(node).and_then(|n| {
                n.metadata
                    .labels
                    .as_ref()?
                    .get("topology.kubernetes.io/zone")
                    .cloned()
            })
        };
        let wanted = plan::wanted(&svc, &pods, zone_of);
        let existing = self.slices_of(key, ns);
        let trigger = trigger_time(&svc, &pods).and_then(|t| time_text(&t));
        let api: Api<EndpointSlice> = Api::namespaced(self.ctx.client.clone(), ns);
        for action in plan::plan(&existing, wanted, MAX_ENDPOINTS) {
            match action {
                Action::Delete(slice) => match api.delete(&slice, None).await {
                    Ok(_) => self.remember(key, slice, None),
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(SyncError::Delete(slice, e)),
                },
                Action::Put {
                    name: slice,
                    ports,
                    endpoints,
                } => {
                    let current = slice.as_ref().and_then(|n| {
                        existing
                            .iter()
                            .find(|s| s.metadata.name.as_ref() == Some(n))
                    });
                    let labels = slice_labels(&svc, name);
                    if let Some(cur) = current {
                        let same = cur.endpoints.as_deref().unwrap_or_default()
                            == endpoints.as_slice()
                            && port_keys_equal(cur, ports.as_ref())
                            && cur.metadata.labels.as_ref() == Some(&labels);
                        if same {
                            continue;
                        }
                    }
                    let mut obj = EndpointSlice {
                        metadata: ObjectMeta {
                            name: slice.clone(),
                            generate_name: slice.is_none().then(|| format!("{name}-")),
                            namespace: Some(ns.to_string()),
                            labels: Some(labels),
                            annotations: trigger
                                .clone()
                                .map(|t| BTreeMap::from([(TRIGGER_TIME.to_string(), t)])),
                            owner_references: Some(vec![new_controller_ref::<Service>(
                                &svc.metadata,
                            )]),
                            ..Default::default()
                        },
                        address_type: "IPv4".into(),
                        endpoints: Some(endpoints),
                        ports,
                    };
                    let written = match current {
                        Some(cur) => {
                            obj.metadata.resource_version = cur.metadata.resource_version.clone();
                            let n = slice.clone().unwrap_or_default();
                            api.replace(&n, &obj)
                                .await
                                .map_err(|e| SyncError::Update(n, e))?
                        }
                        None => api.create(&obj).await.map_err(SyncError::Create)?,
                    };
                    if let Some(n) = written.metadata.name.clone() {
                        self.remember(key, n, Some(revision(&written)));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A slice's labels: the service's (headless marker included), its name and the manager.
fn slice_labels(svc: &Service, name: &str) -> BTreeMap<String, String> {
    let mut labels = inherited_labels(svc);
    labels.insert(SERVICE_NAME.into(), name.into());
    labels.insert(MANAGED_BY.into(), CONTROLLER_NAME.into());
    labels
}

fn port_keys_equal(
    cur: &EndpointSlice,
    ports: Option<&Vec<k8s_openapi::api::discovery::v1::EndpointPort>>,
) -> bool {
    plan::port_key(cur.ports.as_ref()) == plan::port_key(ports)
        && cur.ports.as_ref().is_none_or(Vec::is_empty) == ports.is_none_or(Vec::is_empty)
}

//! VolumeBinding: a pod's PersistentVolumeClaims must exist, and be bound or bindable on the
//! node. PreFilter sorts the pod's claims (a missing or deleted claim, or an unbound claim of
//! an Immediate class, rejects the pod everywhere); Filter checks a bound volume's node
//! affinity and whether a WaitForFirstConsumer claim can be met on the node (a matching
//! volume fits there, or its class provisions); PreBind binds: a matching volume is pre-bound
//! to the claim, otherwise the claim gets `volume.kubernetes.io/selected-node`, and the
//! binding waits for the PV controller to finish (at most `bind_timeout`). Reserve assumes
//! nothing: two pods that chose one volume race on its compare-and-swap in PreBind, and the
//! loser is scheduled again.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use serde_json::json;
use tinykube_client::{Api, Client, Patch};
use tinykube_proto::storage::{
    claim_class, find_best_match, is_bound, node_fits, NodeView, SELECTED_NODE,
};

use crate::framework::handle::Lister;
use crate::framework::{CycleState, NodeInfo, Pending, Plugin, Status};

pub const NAME: &str = "VolumeBinding";
pub const UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";
pub const NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
pub const BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// The provisioner that never provisions (local volumes made by hand).
const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// Upstream's default bindTimeoutSeconds.
pub const BIND_TIMEOUT: Duration = Duration::from_secs(600);

pub struct VolumeBinding {
    pub client: Client,
    pub claims: Arc<dyn Lister<PersistentVolumeClaim>>,
    pub volumes: Arc<dyn Lister<PersistentVolume>>,
    pub classes: Arc<dyn Lister<StorageClass>>,
    /// How long PreBind waits for the claims to bind (`bindTimeoutSeconds`), by `clock`.
    pub bind_timeout: Duration,
    pub clock: tinykube_clock::Clock,
}

/// The pod's claims as PreFilter sorted them.
#[derive(Default)]
struct PodClaims {
    /// Volumes of the bound claims.
    bound: Vec<Arc<PersistentVolume>>,
    /// Claims waiting for their first consumer, with their class.
    to_bind: Vec<(Arc<PersistentVolumeClaim>, Option<Arc<StorageClass>>)>,
}

/// The claim names of a pod's volumes.
pub fn pod_claims(pod: &Pod) -> Vec<&str> {
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| {
            v.persistent_volume_claim
                .as_ref()
                .map(|c| c.claim_name.as_str())
        })
        .collect()
}

impl VolumeBinding {
    fn sort(&self, pod: &Pod) -> Result<PodClaims, Status> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let mut out = PodClaims::default();
        for name in pod_claims(pod) {
            let Some(claim) = self.claims.get(&format!("{ns}/{name}")) else {
                return Err(Status::unresolvable(&format!(
                    "persistentvolumeclaim {name:?} not found"
                )));
            };
            if claim.metadata.deletion_timestamp.is_some() {
                return Err(Status::unresolvable(&format!(
                    "persistentvolumeclaim {name:?} is being deleted"
                )));
            }
            let volume_name = claim
                .spec
                .as_ref()
                .and_then(|s| s.volume_name.as_deref())
                .unwrap_or("");
            if !volume_name.is_empty() {
                match self.volumes.get(volume_name) {
                    Some(v) => out.bound.push(v),
                    None => {
                        return Err(Status::unresolvable(&format!(
                            "pvc {ns}/{name} bound to non-existent pv {volume_name}"
                        )))
                    }
                }
                continue;
            }
            let class = Some(claim_class(&claim))
                .filter(|c| !c.is_empty())
                .and_then(|c| self.classes.get(c));
            let delayed = class
                .as_ref()
                .is_some_and(|c| c.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer"));
            if !delayed {
                return Err(Status::unresolvable(UNBOUND_IMMEDIATE));
            }
            out.to_bind.push((claim, class));
        }
        Ok(out)
    }

    /// For each claim to bind on `node`: the volume to pre-bind, or None (provision there).
    fn plan(
        &self,
        claims: &PodClaims,
        node: &NodeView<'_>,
    ) -> Result<Vec<Option<Arc<PersistentVolume>>>, &'static str> {
        let volumes = self.volumes.list();
        let mut taken: Vec<String> = Vec::new();
        let mut out = Vec::new();
        for (claim, class) in &claims.to_bind {
            let free = volumes
                .iter()
                .filter(|v| !taken.contains(&v.metadata.name.clone().unwrap_or_default()));
            match find_best_match(claim, free.map(|v| &**v), true, Some(node)) {
                Some(v) => {
                    taken.push(v.metadata.name.clone().unwrap_or_default());
                    out.push(
                        volumes
                            .iter()
                            .find(|x| x.metadata.name == v.metadata.name)
                            .cloned(),
                    );
                }
                None => {
                    let provisions = class.as_ref().is_some_and(|c| {
                        c.provisioner != NO_PROVISIONER && allowed_topology(c, node)
                    });
                    if !provisions {
                        return Err(BIND_CONFLICT);
                    }
                    out.push(None);
                }
            }
        }
        Ok(out)
    }

    async fn bind_claims(
        &self,
        pod: &Pod,
        node: &str,
        claims: &PodClaims,
        labels: &std::collections::BTreeMap<String, String>,
    ) -> Status {
        let view = NodeView { name: node, labels };
        let plan = match self.plan(claims, &view) {
            Ok(p) => p,
            Err(reason) => return Status::unresolvable(reason),
        };
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let pvs: Api<PersistentVolume> = Api::all(self.client.clone());
        let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), ns);
        for ((claim, _), volume) in claims.to_bind.iter().zip(plan) {
            let cname = claim.metadata.name.clone().unwrap_or_default();
            let result = match volume {
                Some(v) => {
                    let mut v = (*v).clone();
                    let vname = v.metadata.name.clone().unwrap_or_default();
                    let spec = v.spec.get_or_insert_with(Default::default);
                    spec.claim_ref = Some(k8s_openapi::api::core::v1::ObjectReference {
                        api_version: Some("v1".into()),
                        kind: Some("PersistentVolumeClaim".into()),
                        name: Some(cname.clone()),
                        namespace: Some(ns.to_string()),
                        uid: claim.metadata.uid.clone(),
                        resource_version: claim.metadata.resource_version.clone(),
                        ..Default::default()
                    });
                    v.metadata
                        .annotations
                        .get_or_insert_with(Default::default)
                        .insert(
                            tinykube_proto::storage::BOUND_BY_CONTROLLER.into(),
                            "yes".into(),
                        );
                    pvs.replace(&vname, &v).await.map(drop)
                }
                None => {
                    let patch = json!({"metadata": {"annotations": {SELECTED_NODE: node}}});
                    pvcs.patch(&cname, &Patch::Merge(patch)).await.map(drop)
                }
            };
            if let Err(e) = result {
                return Status::Error(format!("binding volumes: {e}"));
            }
        }
        // Wait for the PV controller to bind every claim, as upstream's PreBind does.
        let names: Vec<String> = claims
            .to_bind
            .iter()
            .map(|(c, _)| format!("{ns}/{}", c.metadata.name.as_deref().unwrap_or("")))
            .collect();
        let waited = self
            .clock
            .timeout(self.bind_timeout, async {
                loop {
                    if names
                        .iter()
                        .all(|k| self.claims.get(k).is_some_and(|c| is_bound(&c)))
                    {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
            .await;
        match waited {
            Ok(()) => Status::Success,
            Err(_) => Status::Error("binding volumes: context deadline exceeded".into()),
        }
    }
}

/// Whether a class's allowedTopologies admit the node (no topologies: every node).
fn allowed_topology(class: &StorageClass, node: &NodeView<'_>) -> bool {
    let terms = class.allowed_topologies.as_deref().unwrap_or(&[]);
    terms.is_empty()
        || terms.iter().any(|t| {
            t.match_label_expressions.iter().flatten().all(|e| {
                node.labels
                    .get(&e.key)
                    .is_some_and(|v| e.values.contains(v))
            })
        })
}

impl Plugin for VolumeBinding {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, pod: &Pod, _nodes: &[Arc<NodeInfo>], state: &mut CycleState) -> Status {
        if pod_claims(pod).is_empty() {
            return Status::Skip;
        }
        match self.sort(pod) {
            Ok(claims) => {
                state.put(NAME, claims);
                Status::Success
            }
            Err(s) => s,
        }
    }

    fn filter(&self, _pod: &Pod, node: &NodeInfo, state: &CycleState) -> Status {
        let Some(claims) = state.get::<PodClaims>(NAME) else {
            return Status::Success;
        };
        if claims
            .bound
            .iter()
            .any(|v| !node_fits(v, node.labels(), node.name()))
        {
            return Status::unresolvable(NODE_CONFLICT);
        }
        let view = NodeView {
            name: node.name(),
            labels: node.labels(),
        };
        match self.plan(claims, &view) {
            Ok(_) => Status::Success,
            Err(reason) => Status::unresolvable(reason),
        }
    }

    fn pre_bind<'a>(&'a self, pod: &'a Pod, node: &'a str, state: &'a CycleState) -> Pending<'a> {
        Box::pin(async move {
            let Some(claims) = state.get::<PodClaims>(NAME) else {
                return Status::Success;
            };
            if claims.to_bind.is_empty() {
                return Status::Success;
            }
            let labels = node_labels(&self.client, node).await;
            self.bind_claims(pod, node, claims, &labels).await
        })
    }
}

/// A node's labels (empty if it cannot be read; the binding then re-checks nothing more).
async fn node_labels(client: &Client, node: &str) -> std::collections::BTreeMap<String, String> {
    let api: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    api.get(node)
        .await
        .ok()
        .and_then(|n| n.metadata.labels)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::handle::Fixed;
    use crate::plugins::testing::{node, pod};
    use serde_json::{json, Value};

    fn claim(name: &str, extra: Value) -> PersistentVolumeClaim {
        let c = json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
        serde_json::from_value(tinykube_proto::patch::merge_patch(&c, &extra)).unwrap()
    }

    fn volume(name: &str, extra: Value) -> PersistentVolume {
        let v = json!({"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/d"}}});
        serde_json::from_value(tinykube_proto::patch::merge_patch(&v, &extra)).unwrap()
    }

    fn class(name: &str, mode: &str, provisioner: &str) -> StorageClass {
        serde_json::from_value(
            json!({"metadata": {"name": name}, "provisioner": provisioner,
            "volumeBindingMode": mode}),
        )
        .unwrap()
    }

    fn plugin(claims: Vec<PersistentVolumeClaim>, volumes: Vec<PersistentVolume>) -> VolumeBinding {
        VolumeBinding {
            client: Client::new(tinykube_client::Config::new("http://127.0.0.1:9")).unwrap(),
            claims: Arc::new(Fixed::new(claims)),
            volumes: Arc::new(Fixed::new(volumes)),
            classes: Arc::new(Fixed::new([
                class("wait", "WaitForFirstConsumer", "rancher.io/local-path"),
                class("now", "Immediate", "rancher.io/local-path"),
                class("local", "WaitForFirstConsumer", NO_PROVISIONER),
            ])),
            bind_timeout: BIND_TIMEOUT,
            clock: tinykube_clock::Clock::real(),
        }
    }

    fn pinned(to: &str) -> Value {
        json!({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions":
            [{"key": "kubernetes.io/hostname", "operator": "In", "values": [to]}]}]}}}})
    }

    #[test]
    fn claims_decide_where_a_pod_fits() {
        let user = |claim: &str| {
            pod(
                json!({"containers": [], "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]}),
            )
        };
        let bound = |name: &str, volume: &str| {
            claim(
                name,
                json!({"spec": {"volumeName": volume}, "status": {"phase": "Bound"}}),
            )
        };
        let claims = vec![
            bound("bound-w0", "pv-w0"),
            claim("immediate", json!({"spec": {"storageClassName": "now"}})),
            claim("none", json!({})),
            claim("wait", json!({"spec": {"storageClassName": "wait"}})),
            claim("local", json!({"spec": {"storageClassName": "local"}})),
            claim(
                "gone",
                json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}}),
            ),
        ];
        let volumes = vec![
            volume("pv-w0", pinned("w0")),
            volume(
                "local-w1",
                tinykube_proto::patch::merge_patch(
                    &pinned("w1"),
                    &json!({"spec": {"storageClassName": "local"}}),
                ),
            ),
        ];
        let p = plugin(claims, volumes);
        let on = |name: &str| node(name, json!({"kubernetes.io/hostname": name}), json!({}));
        // (claim, node, Ok(fits) or the PreFilter rejection)
        let table: &[(&str, &str, Result<bool, &str>)] = &[
            ("bound-w0", "w0", Ok(true)),
            ("bound-w0", "w1", Ok(false)),
            (
                "missing",
                "w0",
                Err("persistentvolumeclaim \"missing\" not found"),
            ),
            (
                "gone",
                "w0",
                Err("persistentvolumeclaim \"gone\" is being deleted"),
            ),
            ("immediate", "w0", Err(UNBOUND_IMMEDIATE)),
            ("none", "w0", Err(UNBOUND_IMMEDIATE)),
            ("wait", "w0", Ok(true)),
            ("local", "w1", Ok(true)),
            ("local", "w0", Ok(false)),
        ];
        for (claim, at, want) in table {
            let mut state = CycleState::default();
            let pre = p.pre_filter(&user(claim), &[], &mut state);
            match want {
                Err(reason) => assert_eq!(pre, Status::unresolvable(reason), "{claim}"),
                Ok(fits) => {
                    assert_eq!(pre, Status::Success, "{claim}");
                    let got = p.filter(&user(claim), &on(at), &state);
                    assert_eq!(got.is_success(), *fits, "{claim} on {at}: {got:?}");
                }
            }
        }
        let mut state = CycleState::default();
        assert_eq!(
            p.pre_filter(&pod(json!({"containers": []})), &[], &mut state),
            Status::Skip
        );
        let conflict = p.filter(&user("bound-w0"), &on("w1"), &{
            let mut s = CycleState::default();
            p.pre_filter(&user("bound-w0"), &[], &mut s);
            s
        });
        assert_eq!(conflict, Status::unresolvable(NODE_CONFLICT));
    }
}

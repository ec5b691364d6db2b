//! The scheduler's view of the cluster for one cycle: informer caches of nodes and pods, plus
//! pods assumed on a node at Reserve, so the next pod sees their resources before the binding's
//! watch event comes back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Node, Pod};
use tinykube_client::reflector::Store;

use crate::framework::NodeInfo;

/// Index name of pods by node.
pub const BY_NODE: &str = "node";
/// Index of the pods waiting for the node a preemption nominated (one key, [`NOMINATED`]).
pub const BY_NOMINATED: &str = "nominated";
pub const NOMINATED: &str = "*";

/// The node a preemption nominated for a pod not yet bound.
pub fn nominated_node(pod: &Pod) -> Option<&str> {
    if node_of(pod).is_some() || pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    pod.status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .filter(|n| !n.is_empty())
}

pub fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

pub struct Cache {
    pub nodes: Store<Node>,
    pub pods: Store<Pod>,
    assumed: Mutex<HashMap<String, (String, Arc<Pod>)>>,
    /// Nominations made by this scheduler that the informer may not show yet.
    nominations: Mutex<HashMap<String, (String, Arc<Pod>)>>,
    /// Last snapshot's NodeInfos by node name, reused while the node and its pods are the
    /// same objects, so a cycle only re-adds up the nodes that changed.
    memo: Mutex<HashMap<String, Memo>>,
}

impl Cache {
    pub fn new(nodes: Store<Node>, pods: Store<Pod>) -> Self {
        Cache {
            nodes,
            pods,
            assumed: Mutex::new(HashMap::new()),
            nominations: Mutex::new(HashMap::new()),
            memo: Mutex::new(HashMap::new()),
        }
    }

    fn assumed(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Arc<Pod>)>> {
        self.assumed.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn assume(&self, key: &str, node: &str, pod: Arc<Pod>) {
        self.assumed()
            .insert(key.to_string(), (node.to_string(), pod));
    }

    /// Whether this very pod (same uid) is assumed on a node: its binding is in flight or
    /// its result not yet seen.
    pub fn is_assumed(&self, key: &str, pod: &Pod) -> bool {
        self.assumed()
            .get(key)
            .is_some_and(|(_, p)| p.metadata.uid == pod.metadata.uid)
    }

    pub fn forget(&self, key: &str) {
        self.assumed().remove(key);
    }

    /// Remember at once that `key` waits for `node`, before the informer shows it.
    pub fn nominate(&self, key: &str, node: &str, pod: Arc<Pod>) {
        let mut n = self.nominations.lock().unwrap_or_else(|e| e.into_inner());
        n.insert(key.to_string(), (node.to_string(), pod));
    }

    /// Pods waiting for a nominated node, with that node.
    pub fn nominated(&self) -> Vec<(String, Arc<Pod>)> {
        let mut out: HashMap<String, (String, Arc<Pod>)> = self
            .pods
            .by_index(BY_NOMINATED, NOMINATED)
            .into_iter()
            .filter_map(|p| {
                let node = nominated_node(&p)?.to_string();
                Some((crate::key_of(p.as_ref()), (node, p.clone())))
            })
            .collect();
        let mut mine = self.nominations.lock().unwrap_or_else(|e| e.into_inner());
        // Ours stand until the informer shows the pod with that nomination, bound, or gone.
        mine.retain(|key, (node, _)| {
            self.pods.get(key).is_some_and(|p| {
                node_of(&p).is_none()
                    && p.metadata.deletion_timestamp.is_none()
                    && nominated_node(&p) != Some(node.as_str())
            })
        });
        for (key, entry) in mine.iter() {
            out.insert(key.clone(), entry.clone());
        }
        out.into_values().collect()
    }

    /// Every node with the pods on it, bound or assumed.
    pub fn snapshot(&self) -> Vec<Arc<NodeInfo>> {
        let mut assumed_by_node: HashMap<String, Vec<Arc<Pod>>> = HashMap::new();
        {
            let mut assumed = self.assumed();
            // An assumption ends when the informer shows the pod bound (or gone).
            assumed.retain(|key, _| self.pods.get(key).is_some_and(|p| node_of(&p).is_none()));
            for (node, pod) in assumed.values() {
                assumed_by_node
                    .entry(node.clone())
                    .or_default()
                    .push(pod.clone());
            }
        }
        let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        let mut previous = std::mem::take(&mut *memo);
        self.nodes
            .list()
            .into_iter()
            .map(|node| {
                let name = node.metadata.name.clone().unwrap_or_default();
                let assumed = assumed_by_node.remove(&name).unwrap_or_default();
                let stamp = self.pods.index_stamp(BY_NODE, &name);
                let entry = match previous.remove(&name) {
                    Some(m) if m.unchanged(&node, stamp, &assumed) => m,
                    _ => {
                        let (bound, stamp) = self.pods.by_index_stamped(BY_NODE, &name);
                        let mut pods: Vec<Arc<Pod>> = bound
                            .into_iter()
                            .filter(|p| {
                                !matches!(
                                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                                    Some("Succeeded" | "Failed")
                                )
                            })
                            .collect();
                        pods.extend(assumed.iter().cloned());
                        Memo {
                            stamp,
                            assumed,
                            info: Arc::new(NodeInfo::new(node, pods)),
                        }
                    }
                };
                let info = entry.info.clone();
                memo.insert(name, entry);
                info
            })
            .collect()
    }
}

/// A NodeInfo of the last snapshot, with what it was built from.
struct Memo {
    /// The pod index's stamp for the node (its bound pods).
    stamp: u64,
    /// The pods assumed on the node.
    assumed: Vec<Arc<Pod>>,
    info: Arc<NodeInfo>,
}

impl Memo {
    /// Whether the NodeInfo still holds: the same node object, bound pods and assumed pods.
    fn unchanged(&self, node: &Arc<Node>, stamp: u64, assumed: &[Arc<Pod>]) -> bool {
        Arc::ptr_eq(&self.info.node, node)
            && self.stamp == stamp
            && self.assumed.len() == assumed.len()
            && self
                .assumed
                .iter()
                .zip(assumed)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

//! The scheduler's view of the cluster for one cycle: informer caches of nodes and pods, plus
//! pods assumed on a node at Reserve, so the next pod sees their resources before the binding's
//! watch event comes back.
//!
//! The snapshot is kept up to date incrementally, as upstream's generation-based
//! `UpdateSnapshot`: the informers' index functions mark the nodes whose node object or pods
//! changed ([`Changes`]) while they hold their store's write lock, and a cycle rebuilds only
//! those NodeInfos; the list of every node is rebuilt only when nodes come or go. A cycle's
//! cost is thus independent of the cluster's size.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Node, Pod};
use tinykube_client::reflector::Store;

use crate::framework::NodeInfo;

/// Index name of pods by node.
pub const BY_NODE: &str = "node";
/// Index of the pods waiting for the node a preemption nominated (one key, [`NOMINATED`]).
pub const BY_NOMINATED: &str = "nominated";
pub const NOMINATED: &str = "*";
/// Index of nodes that holds nothing: its function only marks the node in [`Changes`].
pub const CHANGES: &str = "changes";

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

/// The nodes whose NodeInfo must be rebuilt: every one at first, then those the informers
/// saw change (a node object, or a pod bound to it) and those whose assumed pods changed.
/// Cheap to clone; the informers' index functions mark it under their store's write lock, so
/// a change is marked before anyone can read it from the store.
#[derive(Clone)]
pub struct Changes(Arc<Mutex<Changed>>);

struct Changed {
    all: bool,
    nodes: HashSet<String>,
}

impl Default for Changes {
    /// Everything to build.
    fn default() -> Self {
        Changes(Arc::new(Mutex::new(Changed {
            all: true,
            nodes: HashSet::new(),
        })))
    }
}

impl Changes {
    fn lock(&self) -> std::sync::MutexGuard<'_, Changed> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The node `name`, or a pod on it, changed.
    pub fn node(&self, name: &str) {
        let mut c = self.lock();
        if !c.all && !c.nodes.contains(name) {
            c.nodes.insert(name.to_string());
        }
    }

    /// Rebuild every node.
    pub fn everything(&self) {
        let mut c = self.lock();
        c.all = true;
        c.nodes.clear();
    }

    /// What changed since the last call: everything, or these nodes.
    fn take(&self) -> (bool, HashSet<String>) {
        let mut c = self.lock();
        let all = std::mem::take(&mut c.all);
        (all, std::mem::take(&mut c.nodes))
    }
}

/// One cycle's view of every node, sorted by name.
#[derive(Clone, Default)]
pub struct Snapshot {
    pub nodes: Arc<Vec<Arc<NodeInfo>>>,
    /// Indices into `nodes` of the nodes holding a pod with pod affinity or anti-affinity
    /// terms (upstream's HavePodsWithAffinityNodeInfoList), ascending.
    pub with_affinity: Arc<Vec<usize>>,
}

impl std::ops::Deref for Snapshot {
    type Target = [Arc<NodeInfo>];

    fn deref(&self) -> &Self::Target {
        &self.nodes
    }
}

/// The snapshot kept between cycles.
#[derive(Default)]
struct Kept {
    by_name: BTreeMap<String, Arc<NodeInfo>>,
    position: HashMap<String, usize>,
    with_affinity: BTreeSet<usize>,
    snapshot: Snapshot,
}

pub struct Cache {
    pub nodes: Store<Node>,
    pub pods: Store<Pod>,
    assumed: Mutex<HashMap<String, (String, Arc<Pod>)>>,
    /// Nominations made by this scheduler that the informer may not show yet.
    nominations: Mutex<HashMap<String, (String, Arc<Pod>)>>,
    changes: Changes,
    kept: Mutex<Kept>,
}

impl Cache {
    /// A cache over the informers' stores, which mark what changed in `changes`.
    pub fn new(nodes: Store<Node>, pods: Store<Pod>, changes: Changes) -> Self {
        Cache {
            nodes,
            pods,
            assumed: Mutex::new(HashMap::new()),
            nominations: Mutex::new(HashMap::new()),
            changes,
            kept: Mutex::new(Kept::default()),
        }
    }

    fn assumed(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Arc<Pod>)>> {
        self.assumed.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn assume(&self, key: &str, node: &str, pod: Arc<Pod>) {
        let old = self
            .assumed()
            .insert(key.to_string(), (node.to_string(), pod));
        if let Some((old, _)) = old {
            self.changes.node(&old);
        }
        self.changes.node(node);
    }

    /// Whether this very pod (same uid) is assumed on a node: its binding is in flight or
    /// its result not yet seen.
    pub fn is_assumed(&self, key: &str, pod: &Pod) -> bool {
        self.assumed()
            .get(key)
            .is_some_and(|(_, p)| p.metadata.uid == pod.metadata.uid)
    }

    pub fn forget(&self, key: &str) {
        let gone = self.assumed().remove(key);
        if let Some((node, _)) = gone {
            self.changes.node(&node);
        }
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
    pub fn snapshot(&self) -> Snapshot {
        // An assumption ends when the informer shows the pod bound (or gone); its node then
        // has the pod among its bound ones.
        let ended: Vec<String> = {
            let mut ended = Vec::new();
            self.assumed().retain(|key, (node, _)| {
                let keep = self.pods.get(key).is_some_and(|p| node_of(&p).is_none());
                if !keep {
                    ended.push(node.clone());
                }
                keep
            });
            ended
        };
        for node in &ended {
            self.changes.node(node);
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let (all, changed) = self.changes.take();
        if all {
            self.rebuild_all(&mut kept);
        } else if !changed.is_empty() {
            self.rebuild(&mut kept, changed);
        }
        kept.snapshot.clone()
    }

    /// The pods assumed on each node.
    fn assumed_by_node(&self) -> HashMap<String, Vec<Arc<Pod>>> {
        let mut by_node: HashMap<String, Vec<Arc<Pod>>> = HashMap::new();
        for (node, pod) in self.assumed().values() {
            by_node.entry(node.clone()).or_default().push(pod.clone());
        }
        by_node
    }

    /// `node` with its bound pods that have not terminated, and `assumed`.
    fn node_info(&self, node: Arc<Node>, name: &str, assumed: Vec<Arc<Pod>>) -> Arc<NodeInfo> {
        let mut pods: Vec<Arc<Pod>> = self
            .pods
            .by_index(BY_NODE, name)
            .into_iter()
            .filter(|p| {
                !matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Succeeded" | "Failed")
                )
            })
            .collect();
        pods.extend(assumed);
        Arc::new(NodeInfo::new(node, pods))
    }

    fn rebuild_all(&self, kept: &mut Kept) {
        let mut assumed = self.assumed_by_node();
        kept.by_name = self
            .nodes
            .list()
            .into_iter()
            .map(|node| {
                let name = node.metadata.name.clone().unwrap_or_default();
                let on_it = assumed.remove(&name).unwrap_or_default();
                let info = self.node_info(node, &name, on_it);
                (name, info)
            })
            .collect();
        reindex(kept);
    }

    /// Rebuild the NodeInfos of the `changed` nodes.
    fn rebuild(&self, kept: &mut Kept, changed: HashSet<String>) {
        let mut assumed = self.assumed_by_node();
        let mut updated = Vec::new();
        let mut structural = false;
        for name in changed {
            match self.nodes.get(&name) {
                None => structural |= kept.by_name.remove(&name).is_some(),
                Some(node) => {
                    let on_it = assumed.remove(&name).unwrap_or_default();
                    let info = self.node_info(node, &name, on_it);
                    structural |= kept.by_name.insert(name.clone(), info.clone()).is_none();
                    updated.push((name, info));
                }
            }
        }
        if structural {
            reindex(kept);
            return;
        }
        let nodes = Arc::make_mut(&mut kept.snapshot.nodes);
        let mut affinity_moved = false;
        for (name, info) in updated {
            let Some(&i) = kept.position.get(&name) else {
                continue;
            };
            affinity_moved |= if info.affinity_pods.is_empty() {
                kept.with_affinity.remove(&i)
            } else {
                kept.with_affinity.insert(i)
            };
            nodes[i] = info;
        }
        if affinity_moved {
            kept.snapshot.with_affinity = Arc::new(kept.with_affinity.iter().copied().collect());
        }
    }
}

/// Rebuild the node list, positions and affinity list from `by_name`.
fn reindex(kept: &mut Kept) {
    let nodes: Vec<Arc<NodeInfo>> = kept.by_name.values().cloned().collect();
    kept.position = kept
        .by_name
        .keys()
        .enumerate()
        .map(|(i, n)| (n.clone(), i))
        .collect();
    kept.with_affinity = nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.affinity_pods.is_empty())
        .map(|(i, _)| i)
        .collect();
    kept.snapshot = Snapshot {
        nodes: Arc::new(nodes),
        with_affinity: Arc::new(kept.with_affinity.iter().copied().collect()),
    };
}

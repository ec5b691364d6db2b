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
        if all || !changed.is_empty() {
            let mut assumed: HashMap<String, Vec<Arc<Pod>>> = HashMap::new();
            for (node, pod) in self.assumed().values() {
                assumed.entry(node.clone()).or_default().push(pod.clone());
            }
            let informers = Informers {
                nodes: &self.nodes,
                pods: &self.pods,
            };
            kept.update(&informers, (!all).then_some(changed), assumed);
        }
        kept.snapshot.clone()
    }
}

/// What the snapshot is built from.
trait Source {
    fn nodes(&self) -> Vec<Arc<Node>>;
    fn node(&self, name: &str) -> Option<Arc<Node>>;
    /// The pods bound to node `name`.
    fn pods_on(&self, name: &str) -> Vec<Arc<Pod>>;
}

/// The informers' caches.
struct Informers<'a> {
    nodes: &'a Store<Node>,
    pods: &'a Store<Pod>,
}

impl Source for Informers<'_> {
    fn nodes(&self) -> Vec<Arc<Node>> {
        self.nodes.list()
    }

    fn node(&self, name: &str) -> Option<Arc<Node>> {
        self.nodes.get(name)
    }

    fn pods_on(&self, name: &str) -> Vec<Arc<Pod>> {
        self.pods.by_index(BY_NODE, name)
    }
}

/// `node` with its bound pods that have not terminated, and `assumed`.
fn node_info(
    src: &dyn Source,
    node: Arc<Node>,
    name: &str,
    assumed: Vec<Arc<Pod>>,
) -> Arc<NodeInfo> {
    let mut pods: Vec<Arc<Pod>> = src
        .pods_on(name)
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

impl Kept {
    /// Rebuild the NodeInfos of the `changed` nodes (`None`: of every node), with the pods
    /// `assumed` on each node.
    fn update(
        &mut self,
        src: &dyn Source,
        changed: Option<HashSet<String>>,
        mut assumed: HashMap<String, Vec<Arc<Pod>>>,
    ) {
        let Some(changed) = changed else {
            self.by_name = src
                .nodes()
                .into_iter()
                .map(|node| {
                    let name = node.metadata.name.clone().unwrap_or_default();
                    let on_it = assumed.remove(&name).unwrap_or_default();
                    let info = node_info(src, node, &name, on_it);
                    (name, info)
                })
                .collect();
            self.reindex();
            return;
        };
        let mut updated = Vec::new();
        let mut structural = false;
        for name in changed {
            match src.node(&name) {
                None => structural |= self.by_name.remove(&name).is_some(),
                Some(node) => {
                    let on_it = assumed.remove(&name).unwrap_or_default();
                    let info = node_info(src, node, &name, on_it);
                    structural |= self.by_name.insert(name.clone(), info.clone()).is_none();
                    updated.push((name, info));
                }
            }
        }
        if structural {
            self.reindex();
            return;
        }
        let nodes = Arc::make_mut(&mut self.snapshot.nodes);
        let mut affinity_moved = false;
        for (name, info) in updated {
            let Some(&i) = self.position.get(&name) else {
                continue;
            };
            affinity_moved |= if info.affinity_pods.is_empty() {
                self.with_affinity.remove(&i)
            } else {
                self.with_affinity.insert(i)
            };
            nodes[i] = info;
        }
        if affinity_moved {
            self.snapshot.with_affinity = Arc::new(self.with_affinity.iter().copied().collect());
        }
    }

    /// Rebuild the node list, positions and affinity list from `by_name`.
    fn reindex(&mut self) {
        let nodes: Vec<Arc<NodeInfo>> = self.by_name.values().cloned().collect();
        self.position = self
            .by_name
            .keys()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        self.with_affinity = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.affinity_pods.is_empty())
            .map(|(i, _)| i)
            .collect();
        self.snapshot = Snapshot {
            nodes: Arc::new(nodes),
            with_affinity: Arc::new(self.with_affinity.iter().copied().collect()),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Nodes and the pods bound to them, as the informers would show them.
    #[derive(Default)]
    struct Fake {
        nodes: BTreeMap<String, Arc<Node>>,
        pods: BTreeMap<String, Vec<Arc<Pod>>>,
    }

    impl Source for Fake {
        fn nodes(&self) -> Vec<Arc<Node>> {
            self.nodes.values().cloned().collect()
        }
        fn node(&self, name: &str) -> Option<Arc<Node>> {
            self.nodes.get(name).cloned()
        }
        fn pods_on(&self, name: &str) -> Vec<Arc<Pod>> {
            self.pods.get(name).cloned().unwrap_or_default()
        }
    }

    fn node(name: &str) -> Arc<Node> {
        Arc::new(serde_json::from_value(json!({"metadata": {"name": name}})).unwrap())
    }

    fn pod(name: &str, anti_affinity: bool) -> Arc<Pod> {
        let affinity = anti_affinity.then(|| {
            json!({"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": "x"}},
                "topologyKey": "kubernetes.io/hostname"}]}})
        });
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
                "spec": {"containers": [], "affinity": affinity}}))
            .unwrap(),
        )
    }

    /// Each node's name and its pods' names, in the snapshot's order.
    fn shape(s: &Snapshot) -> Vec<(String, Vec<String>)> {
        s.iter()
            .map(|n| {
                let pods = n
                    .pods
                    .iter()
                    .map(|p| p.metadata.name.clone().unwrap())
                    .collect();
                (n.name().to_string(), pods)
            })
            .collect()
    }

    fn names(list: &[&str]) -> HashSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    type Step = (
        &'static str,
        fn(&mut Fake),
        Option<&'static [&'static str]>,
        &'static [(&'static str, &'static [&'static str])],
        &'static [usize],
    );

    #[test]
    fn only_changed_nodes_are_rebuilt() {
        // (what happens, the change, the nodes marked (None: all), the snapshot, the
        // positions of the nodes with affinity pods)
        let steps: &[Step] = &[
            (
                "first build",
                |f| {
                    for n in ["b", "a", "c"] {
                        f.nodes.insert(n.into(), node(n));
                    }
                    f.pods.insert("a".into(), vec![pod("p1", false)]);
                },
                None,
                &[("a", &["p1"]), ("b", &[]), ("c", &[])],
                &[],
            ),
            (
                "a pod with anti-affinity bound to c",
                |f| {
                    f.pods
                        .insert("c".into(), vec![pod("p2", true)])
                        .map_or((), |_| ())
                },
                Some(&["c"]),
                &[("a", &["p1"]), ("b", &[]), ("c", &["p2"])],
                &[2],
            ),
            (
                "a change not marked is not seen",
                |f| {
                    f.pods
                        .insert("b".into(), vec![pod("p3", false)])
                        .map_or((), |_| ())
                },
                Some(&[]),
                &[("a", &["p1"]), ("b", &[]), ("c", &["p2"])],
                &[2],
            ),
            (
                "a node added before the others shifts them",
                |f| f.nodes.insert("0".into(), node("0")).map_or((), |_| ()),
                Some(&["0", "b"]),
                &[("0", &[]), ("a", &["p1"]), ("b", &["p3"]), ("c", &["p2"])],
                &[3],
            ),
            (
                "a node deleted, its pods with it",
                |f| {
                    f.nodes.remove("a");
                    f.pods.remove("a");
                },
                Some(&["a"]),
                &[("0", &[]), ("b", &["p3"]), ("c", &["p2"])],
                &[2],
            ),
            (
                "the affinity pod leaves",
                |f| f.pods.remove("c").map_or((), |_| ()),
                Some(&["c", "gone-node"]),
                &[("0", &[]), ("b", &["p3"]), ("c", &[])],
                &[],
            ),
        ];
        let mut fake = Fake::default();
        let mut kept = Kept::default();
        for (what, change, marked, want, affinity) in steps {
            change(&mut fake);
            let before: HashMap<String, Arc<NodeInfo>> = kept.by_name.clone().into_iter().collect();
            let marked_set = marked.map(names);
            kept.update(&fake, marked_set.clone(), HashMap::new());
            let s = kept.snapshot.clone();
            let want: Vec<(String, Vec<String>)> = want
                .iter()
                .map(|(n, pods)| (n.to_string(), pods.iter().map(|p| p.to_string()).collect()))
                .collect();
            assert_eq!(shape(&s), want, "{what}");
            assert_eq!(
                *s.with_affinity, *affinity,
                "{what}: nodes with affinity pods"
            );
            if let Some(marked) = marked_set {
                for info in s.iter().filter(|n| !marked.contains(n.name())) {
                    assert!(
                        before
                            .get(info.name())
                            .is_some_and(|b| Arc::ptr_eq(b, info)),
                        "{what}: {} was rebuilt though unchanged",
                        info.name()
                    );
                }
            }
        }
    }

    #[test]
    fn assumed_pods_count_on_their_node() {
        let mut fake = Fake::default();
        fake.nodes.insert("a".into(), node("a"));
        fake.nodes.insert("b".into(), node("b"));
        fake.pods.insert("a".into(), vec![pod("bound", false)]);
        let mut kept = Kept::default();
        let assumed = HashMap::from([("a".to_string(), vec![pod("assumed", true)])]);
        kept.update(&fake, None, assumed);
        let want = vec![
            (
                "a".to_string(),
                vec!["bound".to_string(), "assumed".to_string()],
            ),
            ("b".to_string(), vec![]),
        ];
        assert_eq!(shape(&kept.snapshot), want);
        assert_eq!(*kept.snapshot.with_affinity, [0]);
        // The assumption ended (the pod bound elsewhere): node a is marked and rebuilt.
        fake.pods.insert("b".into(), vec![pod("assumed", true)]);
        kept.update(&fake, Some(names(&["a", "b"])), HashMap::new());
        let want = vec![
            ("a".to_string(), vec!["bound".to_string()]),
            ("b".to_string(), vec!["assumed".to_string()]),
        ];
        assert_eq!(shape(&kept.snapshot), want);
        assert_eq!(*kept.snapshot.with_affinity, [1]);
    }

    #[test]
    fn changes_start_with_everything() {
        let changes = Changes::default();
        changes.node("a");
        assert_eq!(changes.take(), (true, HashSet::new()));
        changes.node("a");
        changes.node("b");
        assert_eq!(changes.take(), (false, names(&["a", "b"])));
        assert_eq!(changes.take(), (false, HashSet::new()));
        changes.node("c");
        changes.everything();
        assert_eq!(changes.take(), (true, HashSet::new()));
    }
}

//! What plugins may reach beyond the pod and the nodes, as upstream's framework Handle: listers
//! of the informer caches they need, the client (for binders only), and the waiting pods.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::Resource;
use tinykube_client::reflector::{key_of, Store};
use tinykube_client::{Client, Kind, Scope};

use super::waiting::WaitingPods;

/// Read access to one kind's cache: an informer's store, or a fixed set in tests.
pub trait Lister<K>: Send + Sync {
    /// The object at `namespace/name` (or `name`).
    fn get(&self, key: &str) -> Option<Arc<K>>;
    fn list(&self) -> Vec<Arc<K>>;
}

impl<K> Lister<K> for Store<K>
where
    K: Kind + Send + Sync,
    <K as Resource>::Scope: Scope,
{
    fn get(&self, key: &str) -> Option<Arc<K>> {
        Store::get(self, key)
    }

    fn list(&self) -> Vec<Arc<K>> {
        Store::list(self)
    }
}

/// A lister over objects given up front.
pub struct Fixed<K>(BTreeMap<String, Arc<K>>);

impl<K> Fixed<K>
where
    K: Kind,
    <K as Resource>::Scope: Scope,
{
    pub fn new(objects: impl IntoIterator<Item = K>) -> Self {
        Fixed(
            objects
                .into_iter()
                .map(|o| (key_of(&o), Arc::new(o)))
                .collect(),
        )
    }
}

impl<K: Send + Sync> Lister<K> for Fixed<K> {
    fn get(&self, key: &str) -> Option<Arc<K>> {
        self.0.get(key).cloned()
    }

    fn list(&self) -> Vec<Arc<K>> {
        self.0.values().cloned().collect()
    }
}

/// Cheap to clone; one per scheduler, shared by every profile's plugins.
#[derive(Clone)]
pub struct Handle {
    /// For binding plugins (DefaultBinder); filter and score plugins never do I/O.
    pub client: Client,
    /// Services, ReplicationControllers, ReplicaSets and StatefulSets, whose selectors are
    /// PodTopologySpread's default selectors.
    pub selectors: crate::plugins::pod_topology_spread::Selectors,
    /// PodDisruptionBudgets, which DefaultPreemption weighs.
    pub pdbs: Arc<dyn Lister<PodDisruptionBudget>>,
    /// Namespaces, whose labels pod (anti-)affinity's `namespaceSelector`s match.
    pub namespaces: Arc<dyn Lister<Namespace>>,
    /// PersistentVolumeClaims, PersistentVolumes and StorageClasses, which VolumeBinding and
    /// VolumeRestrictions read.
    pub claims: Arc<dyn Lister<PersistentVolumeClaim>>,
    pub volumes: Arc<dyn Lister<PersistentVolume>>,
    pub classes: Arc<dyn Lister<StorageClass>>,
    /// Pods held at Permit.
    pub waiting: WaitingPods,
    /// The scheduler's clock: the times it writes (conditions, events), the event series
    /// window, preemption's "not started yet" and VolumeBinding's bind timeout.
    pub clock: tinykube_clock::Clock,
}

impl Handle {
    /// A handle with no cluster behind it: empty listers and a client that reaches nothing.
    #[cfg(test)]
    pub fn detached() -> Handle {
        let client = Client::new(tinykube_client::Config::new("http://127.0.0.1:9"))
            .expect("a client needs no I/O to build");
        Handle {
            client,
            selectors: Default::default(),
            pdbs: Arc::new(Fixed::<PodDisruptionBudget>::new([])),
            namespaces: Arc::new(Fixed::<Namespace>::new([])),
            claims: Arc::new(Fixed::<PersistentVolumeClaim>::new([])),
            volumes: Arc::new(Fixed::<PersistentVolume>::new([])),
            classes: Arc::new(Fixed::<StorageClass>::new([])),
            waiting: WaitingPods::default(),
            clock: tinykube_clock::Clock::real(),
        }
    }
}

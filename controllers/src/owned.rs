//! Objects owned by a controller, the logic the ReplicaSet, DaemonSet and Deployment controllers
//! share: finding an object's owner (or the owners that may adopt an orphan) in the cache,
//! turning pod notifications into owner keys and observed expectations, claiming (adopt and
//! release, upstream's ClaimObjects), and creating and deleting pods with their events.
//!
//! What differs between the controllers stays in their folders: which pods to create or delete,
//! and the one rule in which their pod handlers differ ([`Updates`]).

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::{NamespaceResourceScope, Resource};
use tinykube_client::events::EventType;
use tinykube_client::reflector::{key_of, Notification, Store};
use tinykube_client::{Api, Client, ClientError, Kind, Patch};
use tinykube_proto::labels::Selector;

use crate::context::BY_NAMESPACE;
use crate::events::EventRecorder;
use crate::expectations::Expectations;
use crate::util::{
    adopt_patch, controller_ref, is_pod_ready, new_controller_ref, object_ref, release_patch, secs,
};
use crate::workqueue::WorkQueue;

/// How long expectations survive after notifications were lost.
pub const LAG_GRACE: Duration = Duration::from_secs(2);

/// A namespaced workload that owns objects through a label selector.
pub trait Owner: Kind + Resource<Scope = NamespaceResourceScope> {
    fn label_selector(&self) -> Option<&LabelSelector>;

    /// `spec.minReadySeconds`, 0 when unset.
    fn min_ready_seconds(&self) -> i32;

    /// The parsed selector, `None` when it is missing or invalid.
    fn selector(&self) -> Option<Selector> {
        Selector::from_label_selector(self.label_selector()?).ok()
    }
}

macro_rules! owner {
    ($($kind:ty),*) => {$(
        impl Owner for $kind {
            fn label_selector(&self) -> Option<&LabelSelector> {
                self.spec.as_ref().map(|s| &s.selector)
            }

            fn min_ready_seconds(&self) -> i32 {
                self.spec
                    .as_ref()
                    .and_then(|s| s.min_ready_seconds)
                    .unwrap_or(0)
            }
        }
    )*};
}

owner!(ReplicaSet, DaemonSet, Deployment, StatefulSet);

/// The owner of kind `O` that the controller reference in `meta` points to, if it is cached
/// with the same uid (a recreated owner of the same name is another object).
pub fn resolve<O: Owner>(owners: &Store<O>, meta: &ObjectMeta) -> Option<Arc<O>> {
    let r = controller_ref(meta)?;
    if r.kind != O::KIND {
        return None;
    }
    let ns = meta.namespace.as_deref().unwrap_or_default();
    let owner = owners.get(&format!("{ns}/{}", r.name))?;
    (owner.metadata().uid.as_deref() == Some(r.uid.as_str())).then_some(owner)
}

/// Owners in the namespace of `meta` whose selector matches its labels: who may adopt it. A
/// selector that selects everything adopts nothing.
pub fn matching<O: Owner>(owners: &Store<O>, meta: &ObjectMeta) -> Vec<Arc<O>> {
    let ns = meta.namespace.as_deref().unwrap_or_default();
    let labels = meta.labels.clone().unwrap_or_default();
    owners
        .by_index(BY_NAMESPACE, ns)
        .into_iter()
        .filter(|o| {
            o.selector()
                .is_some_and(|sel| !sel.is_everything() && sel.matches(&labels))
        })
        .collect()
}

/// Queue the owner of `meta`; for an orphan, every owner that may adopt it.
pub fn enqueue_owners<O: Owner>(owners: &Store<O>, queue: &WorkQueue, meta: &ObjectMeta) {
    if let Some(o) = resolve(owners, meta) {
        queue.add(&key_of(o.as_ref()));
    } else if controller_ref(meta).is_none() {
        for o in matching(owners, meta) {
            queue.add(&key_of(o.as_ref()));
        }
    }
}

/// Queue every cached owner.
pub fn enqueue_all<O: Owner>(owners: &Store<O>, queue: &WorkQueue) {
    for o in owners.list() {
        queue.add(&key_of(o.as_ref()));
    }
}

/// The one point where the pod handlers of the pod-owning controllers differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Updates {
    /// Upstream's ReplicaSet: a terminating pod whose labels changed also settles the owner of
    /// its old version, and an orphan is offered for adoption only when its labels or
    /// controller reference changed.
    LabelAware,
    /// A terminating pod settles only its current owner, and every update of an orphan is
    /// offered for adoption.
    Every,
}

/// The informer side of a controller that owns pods: its owners' cache, the queue of owner
/// keys, and the expectations creates and deletes are observed in (one set serves both for a
/// ReplicaSet, two for a DaemonSet).
pub struct PodHandlers<'a, O> {
    pub owners: &'a Store<O>,
    pub queue: &'a WorkQueue,
    pub creates: &'a Expectations,
    pub deletes: &'a Expectations,
    pub updates: Updates,
}

impl<O: Owner> PodHandlers<'_, O> {
    /// Notifications were dropped: observations may be lost, so expectations expire soon and
    /// every owner is looked at now and once they have.
    pub fn lagged(&self) {
        self.creates.expire_within(LAG_GRACE);
        self.deletes.expire_within(LAG_GRACE);
        enqueue_all(self.owners, self.queue);
        for o in self.owners.list() {
            self.queue
                .add_after_real(&key_of(o.as_ref()), LAG_GRACE + secs(1));
        }
    }

    /// An owner changed; a deleted one's expectations are forgotten.
    pub fn on_owner(&self, n: Notification<O>) {
        match n {
            Notification::Add(o) | Notification::Update { new: o, .. } => {
                self.queue.add(&key_of(o.as_ref()))
            }
            Notification::Delete(o) => {
                let key = key_of(o.as_ref());
                self.creates.delete(&key);
                self.deletes.delete(&key);
                self.queue.add(&key);
            }
        }
    }

    pub fn on_pod(&self, n: Notification<Pod>) {
        match n {
            Notification::Add(pod) => {
                if pod.metadata.deletion_timestamp.is_some() {
                    return self.pod_gone(&pod);
                }
                if let Some(o) = resolve(self.owners, &pod.metadata) {
                    let key = key_of(o.as_ref());
                    self.creates.creation_observed(&key);
                    self.queue.add(&key);
                } else if controller_ref(&pod.metadata).is_none() {
                    for o in matching(self.owners, &pod.metadata) {
                        self.queue.add(&key_of(o.as_ref()));
                    }
                }
            }
            Notification::Update { old, new } => self.pod_updated(&old, &new),
            Notification::Delete(pod) => self.pod_gone(&pod),
        }
    }

    fn pod_updated(&self, old: &Pod, new: &Pod) {
        if old.metadata.resource_version == new.metadata.resource_version {
            return;
        }
        let label_aware = self.updates == Updates::LabelAware;
        let labels_changed = old.metadata.labels != new.metadata.labels;
        if new.metadata.deletion_timestamp.is_some() {
            self.pod_gone(new);
            if label_aware && labels_changed {
                self.pod_gone(old);
            }
            return;
        }
        let new_ref = controller_ref(&new.metadata);
        let ref_changed = controller_ref(&old.metadata) != new_ref;
        if ref_changed {
            if let Some(o) = resolve(self.owners, &old.metadata) {
                self.queue.add(&key_of(o.as_ref()));
            }
        }
        if let Some(o) = resolve(self.owners, &new.metadata) {
            let key = key_of(o.as_ref());
            self.queue.add(&key);
            let min_ready = o.min_ready_seconds();
            if min_ready > 0 && !is_pod_ready(old) && is_pod_ready(new) {
                // Check availability again once minReadySeconds have passed.
                self.queue
                    .add_after_clock(&key, secs(i64::from(min_ready)) + secs(1));
            }
            return;
        }
        if new_ref.is_none() && (!label_aware || labels_changed || ref_changed) {
            for o in matching(self.owners, &new.metadata) {
                self.queue.add(&key_of(o.as_ref()));
            }
        }
    }

    /// A pod went away (or started terminating): settle its owner's expectations.
    fn pod_gone(&self, pod: &Pod) {
        if let Some(o) = resolve(self.owners, &pod.metadata) {
            let key = key_of(o.as_ref());
            self.deletes.deletion_observed(&key, &key_of(pod));
            self.queue.add(&key);
        }
    }
}

/// Write the owner's status through `/status` (`set` puts it on a copy of the object), with
/// one retry on a fresh copy after a conflict, as upstream; an owner that is gone needs none.
pub async fn replace_status<O: Owner>(
    client: &Client,
    owner: &O,
    set: impl Fn(&mut O),
) -> Result<(), ClientError> {
    let meta = owner.metadata();
    let api: Api<O> = Api::namespaced(
        client.clone(),
        meta.namespace.as_deref().unwrap_or_default(),
    );
    let name = meta.name.clone().unwrap_or_default();
    let mut next = owner.clone();
    set(&mut next);
    match api.replace_status(&name, &next).await {
        Err(e) if e.is_conflict() => {
            let Some(mut fresh) = api.get_opt(&name).await? else {
                return Ok(());
            };
            set(&mut fresh);
            match api.replace_status(&name, &fresh).await {
                Err(e) if !e.is_not_found() => Err(e),
                _ => Ok(()),
            }
        }
        Err(e) if !e.is_not_found() => Err(e),
        _ => Ok(()),
    }
}

/// What can fail while a controller manages its pods, one variant per stage; the controllers'
/// sync errors wrap it.
#[derive(Debug, thiserror::Error)]
pub enum PodError {
    #[error("creating pods: {0}")]
    Create(#[source] ClientError),
    #[error("deleting pods: {0}")]
    Delete(#[source] ClientError),
    #[error("adopting or releasing pods: {0}")]
    Claim(#[source] ClientError),
}

/// Upstream's ClaimObjects: of `candidates` (objects in the owner's namespace), the ones
/// `owner` controls after adopting orphans its selector matches and releasing owned ones it no
/// longer matches. A terminating owner neither adopts nor releases, a terminating orphan is not
/// adopted, and before the first adoption the owner is read fresh from the API, so a stale
/// cache cannot adopt for an owner that is gone or being deleted.
pub async fn claim<O, K>(
    client: &Client,
    owner: &O,
    selector: &Selector,
    candidates: Vec<Arc<K>>,
) -> Result<Vec<Arc<K>>, ClientError>
where
    O: Owner,
    K: Kind + Resource<Scope = NamespaceResourceScope>,
{
    let meta = owner.metadata();
    let uid = meta.uid.clone().unwrap_or_default();
    let api: Api<K> = Api::namespaced(
        client.clone(),
        meta.namespace.as_deref().unwrap_or_default(),
    );
    let deleting = meta.deletion_timestamp.is_some();
    let mut can_adopt: Option<bool> = None;
    let mut owned = Vec::new();
    for obj in candidates {
        let m = obj.metadata();
        let matches = selector.matches(&m.labels.clone().unwrap_or_default());
        let name = m.name.clone().unwrap_or_default();
        match controller_ref(m) {
            Some(r) if r.uid != uid => {}
            Some(_) if matches => owned.push(obj),
            Some(_) => {
                if deleting {
                    continue;
                }
                let patch = release_patch(m, &uid);
                match api.patch(&name, &Patch::Merge(patch)).await {
                    Ok(_) => {}
                    Err(e) if e.is_not_found() || e.code() == Some(422) => {}
                    Err(e) => return Err(e),
                }
            }
            None => {
                if deleting || !matches || m.deletion_timestamp.is_some() {
                    continue;
                }
                if can_adopt.is_none() {
                    can_adopt = Some(can_adopt_for(client, owner).await?);
                }
                if can_adopt != Some(true) {
                    continue;
                }
                let patch = adopt_patch(m, new_controller_ref::<O>(meta));
                match api.patch(&name, &Patch::Strategic(patch)).await {
                    Ok(adopted) => owned.push(Arc::new(adopted)),
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(owned)
}

/// Adopt only if the owner, read fresh from the API, is still the same one and alive.
async fn can_adopt_for<O: Owner>(client: &Client, owner: &O) -> Result<bool, ClientError> {
    let meta = owner.metadata();
    let api: Api<O> = Api::namespaced(
        client.clone(),
        meta.namespace.as_deref().unwrap_or_default(),
    );
    let fresh = api
        .get_opt(meta.name.as_deref().unwrap_or_default())
        .await?;
    Ok(fresh
        .is_some_and(|f| f.metadata().uid == meta.uid && f.metadata().deletion_timestamp.is_none()))
}

/// What became of a round of creates.
pub struct Created {
    /// Creates the server refused because the namespace is terminating: not a failure, and
    /// not worth retrying.
    pub refused: usize,
    /// The last failure, if any create failed.
    pub failure: Option<PodError>,
}

/// The pod creates and deletes of one controller key, each recorded as an event on the owner.
pub struct PodWriter<'a> {
    api: Api<Pod>,
    namespace: String,
    recorder: &'a Arc<EventRecorder>,
    regarding: ObjectReference,
    key: &'a str,
}

impl<'a> PodWriter<'a> {
    pub fn new<O: Owner>(
        client: &Client,
        recorder: &'a Arc<EventRecorder>,
        owner: &O,
        key: &'a str,
    ) -> Self {
        let namespace = owner.metadata().namespace.clone().unwrap_or_default();
        PodWriter {
            api: Api::namespaced(client.clone(), &namespace),
            namespace,
            recorder,
            regarding: object_ref::<O>(owner.metadata()),
            key,
        }
    }

    /// Create `pods` in slow-start batches (1, 2, 4, … at once, upstream's slowStartBatch),
    /// stopping after a batch in which a create failed, so a broken template costs one request
    /// rather than hundreds. Creates that failed or were skipped will never be observed:
    /// `creates` stops waiting for them.
    pub async fn create(&self, creates: &Expectations, pods: &[Pod]) -> Created {
        let mut created = Created {
            refused: 0,
            failure: None,
        };
        let (mut pos, mut batch) = (0usize, 1usize);
        while pos < pods.len() {
            let end = (pos + batch).min(pods.len());
            let results = join_all(pods[pos..end].iter().map(|p| self.api.create(p))).await;
            for r in results {
                match r {
                    Ok(p) => self.event(
                        EventType::Normal,
                        "SuccessfulCreate",
                        format!("Created pod: {}", p.metadata.name.unwrap_or_default()),
                    ),
                    Err(e) if namespace_terminating(&e) => created.refused += 1,
                    Err(e) => {
                        creates.creation_observed(self.key);
                        let message = format!("Error creating: {}", e_message(&e));
                        self.event(EventType::Warning, "FailedCreate", message);
                        created.failure = Some(PodError::Create(e));
                    }
                }
            }
            pos = end;
            batch *= 2;
            if created.failure.is_some() {
                for _ in pos..pods.len() {
                    creates.creation_observed(self.key);
                }
                break;
            }
        }
        created
    }

    /// Delete the pods `names` at once. A delete that failed will never be observed: `deletes`
    /// stops waiting for it; a pod already gone is no failure.
    pub async fn delete(&self, deletes: &Expectations, names: &[String]) -> Result<(), PodError> {
        let results = join_all(
            names
                .iter()
                .map(|n| async move { (n, self.api.delete(n, None).await) }),
        )
        .await;
        let mut failure = None;
        for (n, r) in results {
            match r {
                Ok(_) => self.event(
                    EventType::Normal,
                    "SuccessfulDelete",
                    format!("Deleted pod: {n}"),
                ),
                Err(e) => {
                    deletes.deletion_observed(self.key, &format!("{}/{n}", self.namespace));
                    if !e.is_not_found() {
                        let message = format!("Error deleting: {}", e_message(&e));
                        self.event(EventType::Warning, "FailedDelete", message);
                        failure = Some(PodError::Delete(e));
                    }
                }
            }
        }
        failure.map_or(Ok(()), Err)
    }

    fn event(&self, kind: EventType, reason: &'static str, message: String) {
        self.recorder.record(&self.regarding, kind, reason, message);
    }
}

/// The server refused because the namespace is terminating: not worth retrying.
fn namespace_terminating(e: &ClientError) -> bool {
    matches!(e, ClientError::Api(s) if s.code == 403 && s.message.contains("because it is being terminated"))
}

/// The server's message of an API error, or the error itself.
pub fn e_message(e: &ClientError) -> String {
    match e {
        ClientError::Api(s) if !s.message.is_empty() => s.message.clone(),
        other => other.to_string(),
    }
}

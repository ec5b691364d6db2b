//! Process one object: finish an owner's `orphan` or `foregroundDeletion` finalizer, or, for a
//! dependent, classify its owners (solid, dangling, waiting for dependents' deletion) and
//! delete it or drop the references to owners that are gone, as upstream's attemptToDelete.
//! An owner of a kind discovery does not list leaves its dependent alone, retried with backoff
//! (the kind may be a custom resource about to be served).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::{json, Value};
use tinykube_client::dynamic::DynamicApi;
use tinykube_client::{ClientError, Patch};

use super::mapper::{group_kind, group_of};
use super::{has_finalizer, is_deleting, Collector, FOREGROUND, ORPHAN};

#[derive(Debug, thiserror::Error)]
pub enum GcError {
    #[error("resolving owner kind {kind} of {api_version}: {source}")]
    Discovery {
        api_version: String,
        kind: String,
        #[source]
        source: ClientError,
    },
    #[error("owner kind {kind} of {api_version} is not served; {item} is left alone")]
    UnknownKind {
        api_version: String,
        kind: String,
        item: String,
    },
    #[error("looking up owner {kind} {name}: {source}")]
    Owner {
        kind: String,
        name: String,
        #[source]
        source: ClientError,
    },
    #[error("deleting {item}: {source}")]
    Delete {
        item: String,
        #[source]
        source: ClientError,
    },
    #[error("updating {item}: {source}")]
    Patch {
        item: String,
        #[source]
        source: ClientError,
    },
}

/// What an owner reference points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnerState {
    /// Exists and is not waiting for its dependents.
    Solid,
    /// Gone, or replaced by an object with another uid.
    Dangling,
    /// Being deleted in the foreground: its dependents go first.
    Waiting,
    /// A kind the API does not serve: the dependent is left alone.
    Unknown,
    /// A namespaced owner of a cluster-scoped dependent: an invalid reference, left alone
    /// for good.
    Invalid,
}

fn key_in(namespace: Option<&str>, name: &str, namespaced: bool) -> String {
    match namespace {
        Some(ns) if namespaced && !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

impl Collector {
    fn api(&self, gk: &str, namespace: Option<&str>) -> Option<DynamicApi> {
        let res = self.monitor(gk)?.resource.clone();
        Some(DynamicApi::new(self.ctx.client.clone(), res, namespace))
    }

    /// Process the object at `Kind.group|namespace/name`.
    pub async fn process(&self, item: &str) -> Result<(), GcError> {
        let Some((kind, key)) = item.split_once('|') else {
            return Ok(());
        };
        let Some(meta) = self.monitor(kind).and_then(|m| m.store.meta(key)) else {
            return Ok(());
        };
        if is_deleting(&meta) {
            if has_finalizer(&meta, ORPHAN) {
                return self.orphan_dependents(kind, &meta).await;
            }
            if has_finalizer(&meta, FOREGROUND) {
                return self.delete_dependents_first(kind, &meta).await;
            }
            return Ok(());
        }
        let refs: Vec<OwnerReference> = meta.owner_references.clone().unwrap_or_default();
        if refs.is_empty() {
            return Ok(());
        }
        let mut solid = Vec::new();
        let mut gone = Vec::new();
        let mut waiting = false;
        for r in &refs {
            match self.owner_state(&meta, r).await? {
                OwnerState::Solid => solid.push(r.uid.clone()),
                // As upstream: nothing is decided while an owner cannot be classified.
                OwnerState::Unknown => {
                    return Err(GcError::UnknownKind {
                        api_version: r.api_version.clone(),
                        kind: r.kind.clone(),
                        item: item.into(),
                    })
                }
                OwnerState::Invalid => return Ok(()),
                OwnerState::Dangling => gone.push(r.uid.clone()),
                OwnerState::Waiting => {
                    waiting = true;
                    gone.push(r.uid.clone());
                }
            }
        }
        if gone.is_empty() {
            return Ok(());
        }
        let namespace = meta.namespace.as_deref();
        let name = meta.name.clone().unwrap_or_default();
        let Some(api) = self.api(kind, namespace) else {
            return Ok(());
        };
        if !solid.is_empty() {
            // Other owners still hold it: only drop the references to the gone ones.
            let rest: Vec<&OwnerReference> =
                refs.iter().filter(|r| !gone.contains(&r.uid)).collect();
            let patch = json!({"metadata": {
                "ownerReferences": rest,
                "uid": meta.uid,
                "resourceVersion": meta.resource_version,
            }});
            return match api.patch(&name, &Patch::Merge(patch)).await {
                Ok(_) => Ok(()),
                Err(e) if e.is_not_found() => Ok(()),
                Err(source) => Err(GcError::Patch {
                    item: item.into(),
                    source,
                }),
            };
        }
        let has_dependents = meta
            .uid
            .as_deref()
            .is_some_and(|uid| !self.dependents(uid).is_empty());
        let policy = if waiting && has_dependents {
            "Foreground"
        } else if has_finalizer(&meta, ORPHAN) {
            "Orphan"
        } else if has_finalizer(&meta, FOREGROUND) {
            "Foreground"
        } else {
            "Background"
        };
        tracing::info!(item, policy, "deleting object whose owners are gone");
        let options = json!({
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "propagationPolicy": policy,
            "preconditions": {"uid": meta.uid},
        });
        match api.delete(&name, Some(&options)).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
            Err(source) => Err(GcError::Delete {
                item: item.into(),
                source,
            }),
        }
    }

    /// Where an owner reference of `dependent` points: the cache first, then the API by uid.
    async fn owner_state(
        &self,
        dependent: &ObjectMeta,
        r: &OwnerReference,
    ) -> Result<OwnerState, GcError> {
        let resolved = self
            .mapper
            .resolve(&r.api_version, &r.kind)
            .await
            .map_err(|source| GcError::Discovery {
                api_version: r.api_version.clone(),
                kind: r.kind.clone(),
                source,
            })?;
        let Some(res) = resolved else {
            return Ok(OwnerState::Unknown);
        };
        let ns = dependent.namespace.as_deref().filter(|ns| !ns.is_empty());
        if res.namespaced && ns.is_none() {
            return Ok(OwnerState::Invalid);
        }
        let gk = group_kind(group_of(&r.api_version), &r.kind);
        let key = key_in(ns, &r.name, res.namespaced);
        // The owner's coordinates, not only its uid, as upstream's absentOwnerCache: another
        // reference with the same uid but another kind or name is checked on its own.
        let absent_key = format!("{gk}|{key}|{}", r.uid);
        let absent = self
            .absent
            .lock()
            .map(|a| a.contains(&absent_key))
            .unwrap_or(false);
        if absent {
            return Ok(OwnerState::Dangling);
        }
        let state_of = |meta: &ObjectMeta| {
            if meta.uid.as_deref() != Some(r.uid.as_str()) {
                OwnerState::Dangling
            } else if is_deleting(meta) && has_finalizer(meta, FOREGROUND) {
                OwnerState::Waiting
            } else {
                OwnerState::Solid
            }
        };
        if let Some(m) = self.monitor(&gk) {
            if let Some(meta) = m.store.meta(&key) {
                if meta.uid.as_deref() == Some(r.uid.as_str()) {
                    return Ok(state_of(&meta));
                }
            }
        }
        // Not in the cache (or another uid there): ask the API server.
        let api = DynamicApi::new(self.ctx.client.clone(), res, ns);
        let fresh = api
            .get_opt(&r.name)
            .await
            .map_err(|source| GcError::Owner {
                kind: r.kind.clone(),
                name: r.name.clone(),
                source,
            })?;
        let state = match fresh {
            None => OwnerState::Dangling,
            Some(v) => {
                let meta: ObjectMeta = v
                    .get("metadata")
                    .cloned()
                    .and_then(|m| serde_json::from_value(m).ok())
                    .unwrap_or_default();
                state_of(&meta)
            }
        };
        if state == OwnerState::Dangling {
            if let Ok(mut a) = self.absent.lock() {
                if a.len() > 10_000 {
                    a.clear();
                }
                a.insert(absent_key);
            }
        }
        Ok(state)
    }

    /// Every cached dependent of `uid`, with its group-kind.
    fn dependents(&self, uid: &str) -> Vec<(String, ObjectMeta)> {
        self.monitors()
            .into_iter()
            .flat_map(|(gk, m)| {
                m.store
                    .dependents_of(uid)
                    .into_iter()
                    .map(move |d| (gk.clone(), d))
            })
            .collect()
    }

    /// `orphan`: drop the owner reference from every dependent, then the finalizer.
    async fn orphan_dependents(&self, kind: &str, owner: &ObjectMeta) -> Result<(), GcError> {
        let uid = owner.uid.clone().unwrap_or_default();
        for (dep_kind, dep) in self.dependents(&uid) {
            let Some(api) = self.api(&dep_kind, dep.namespace.as_deref()) else {
                continue;
            };
            let name = dep.name.clone().unwrap_or_default();
            let patch = crate::util::release_patch(&dep, &uid);
            match api.patch(&name, &Patch::Merge(patch)).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(source) => {
                    return Err(GcError::Patch {
                        item: super::item(&dep_kind, &dep),
                        source,
                    })
                }
            }
        }
        self.remove_finalizer(kind, owner, ORPHAN).await
    }

    /// `foregroundDeletion`: delete the dependents; once none that blocks is left, drop the
    /// finalizer so the owner goes.
    async fn delete_dependents_first(&self, kind: &str, owner: &ObjectMeta) -> Result<(), GcError> {
        let uid = owner.uid.clone().unwrap_or_default();
        let dependents = self.dependents(&uid);
        let blocking = dependents.iter().any(|(_, d)| {
            d.owner_references
                .iter()
                .flatten()
                .any(|r| r.uid == uid && r.block_owner_deletion == Some(true))
        });
        if !blocking {
            return self.remove_finalizer(kind, owner, FOREGROUND).await;
        }
        for (dep_kind, dep) in dependents {
            if !is_deleting(&dep) {
                // Its owner now reads as waiting: processing the dependent deletes it.
                self.queue.add(&super::item(&dep_kind, &dep));
            }
        }
        Ok(())
    }

    async fn remove_finalizer(
        &self,
        kind: &str,
        meta: &ObjectMeta,
        finalizer: &str,
    ) -> Result<(), GcError> {
        let Some(api) = self.api(kind, meta.namespace.as_deref()) else {
            return Ok(());
        };
        let rest: Vec<&String> = meta
            .finalizers
            .iter()
            .flatten()
            .filter(|f| *f != finalizer)
            .collect();
        let patch = json!({"metadata": {
            "finalizers": if rest.is_empty() { Value::Null } else { json!(rest) },
            "resourceVersion": meta.resource_version,
        }});
        let name = meta.name.clone().unwrap_or_default();
        match api.patch(&name, &Patch::Merge(patch)).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(source) => Err(GcError::Patch {
                item: super::item(kind, meta),
                source,
            }),
        }
    }
}

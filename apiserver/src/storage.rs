//! Objects over the store: keys per resource (upstream's etcd layout, under the etcd backend's
//! `--etcd-prefix`), JSON encoding with `metadata.resourceVersion` taken from the store's
//! revision, and the read-modify-write loop every update goes through.

use bytes::Bytes;
use serde_json::Value;
use tinykube_proto::registry::{storage_group, ResourceInfo};
use tinykube_store::{Revisioned, Store, StoreError};

use crate::error::{ApiError, ApiResult};
use crate::object::meta_mut;

/// What an update closure decided.
pub enum Change {
    /// Store this object.
    Write(Value),
    /// Remove the object (the last finalizer went away from a deleting object).
    Delete,
    /// Nothing changed: keep the stored object and its resourceVersion.
    Unchanged,
}

/// What an update did.
pub enum Outcome {
    Written(Value),
    Deleted(Value),
    Unchanged(Value),
}

impl Outcome {
    pub fn into_object(self) -> Value {
        match self {
            Outcome::Written(v) | Outcome::Deleted(v) | Outcome::Unchanged(v) => v,
        }
    }
}

/// The store, seen as Kubernetes objects.
#[derive(Clone)]
pub struct Objects {
    store: Store,
}

/// Key of one object: `/pods/default/nginx`, `/minions/worker0` (etcd's
/// `/registry/pods/default/nginx`).
pub fn key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if info.namespaced => format!("{}{ns}/{name}", kind_prefix(info)),
        _ => format!("{}{name}", kind_prefix(info)),
    }
}

/// Prefix of every object of a resource (all namespaces): upstream's etcd resource path.
pub fn kind_prefix(info: &ResourceInfo) -> String {
    format!("/{}/", resource_path(info))
}

/// Where upstream's API server keeps a resource under `/registry`: the resource's name, a
/// few historical names (nodes are `minions`, Services `services/specs`, their Endpoints
/// `services/endpoints`, ReplicationControllers `controllers`, Ingresses `ingress`), and
/// `GROUP/RESOURCE` for the aggregator's, the CRDs' and custom resources.
pub fn resource_path(info: &ResourceInfo) -> String {
    if info.custom.is_some() {
        return format!("{}/{}", info.group, info.plural);
    }
    let path = match (storage_group(info), info.plural) {
        ("core", "nodes") => "minions",
        ("core", "services") => "services/specs",
        ("core", "endpoints") => "services/endpoints",
        ("core", "replicationcontrollers") => "controllers",
        (_, "ingresses") => "ingress",
        (group @ ("apiregistration.k8s.io" | "apiextensions.k8s.io"), plural) => {
            return format!("{group}/{plural}");
        }
        (_, plural) => plural,
    };
    path.to_string()
}

/// Move what an older tinykube stored under its own layout (`/core/pods/…`, `/apps/…`,
/// `/allocations/…`) to upstream's: done once, when a sled store from before is opened.
/// Returns how many keys moved.
pub async fn migrate_layout(store: &Store) -> Result<usize, StoreError> {
    if store.list("/core/", None, Some(1))?.items.is_empty() {
        return Ok(0);
    }
    let mut moved = 0;
    for item in store.list("/", None, None)?.items {
        let Some(new_key) = relocated(&item.key) else {
            continue;
        };
        match store.create(&new_key, item.value.clone()).await {
            Ok(_) | Err(StoreError::AlreadyExists) => {}
            Err(e) => return Err(e),
        }
        store.delete(&item.key, Some(item.revision)).await?;
        moved += 1;
    }
    tracing::info!(moved, "moved the stored objects to upstream's key layout");
    Ok(moved)
}

/// The key under upstream's layout of a key under tinykube's former one.
fn relocated(key: &str) -> Option<String> {
    let mut parts = key.strip_prefix('/')?.splitn(3, '/');
    let (first, second, rest) = (parts.next()?, parts.next()?, parts.next()?);
    if first == "allocations" {
        let range = match second {
            "nodeports" => "servicenodeports",
            other => other,
        };
        return Some(format!("/ranges/{range}/{rest}"));
    }
    let group = if first == "core" { "" } else { first };
    let version = *tinykube_proto::registry::versions(group).first()?;
    let info = tinykube_proto::registry::builtin(group, version, second)?;
    let new_key = format!("{}{rest}", kind_prefix(info));
    (new_key != key).then_some(new_key)
}

/// Prefix of a resource's objects in one namespace, or in all.
pub fn prefix(info: &ResourceInfo, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) if info.namespaced => format!("{}{ns}/", kind_prefix(info)),
        _ => kind_prefix(info),
    }
}

/// Decode stored bytes and stamp the revision as `metadata.resourceVersion`.
pub fn decode(bytes: &[u8], revision: u64) -> ApiResult<Value> {
    let mut obj: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::Internal(format!("stored object is not JSON: {e}")))?;
    meta_mut(&mut obj).insert("resourceVersion".into(), revision.to_string().into());
    Ok(obj)
}

fn encode(obj: &Value) -> ApiResult<Bytes> {
    let mut copy = obj.clone();
    meta_mut(&mut copy).remove("resourceVersion");
    serde_json::to_vec(&copy)
        .map(Bytes::from)
        .map_err(|e| ApiError::Internal(format!("encoding object: {e}")))
}

fn decode_rev(r: &Revisioned) -> ApiResult<Value> {
    decode(&r.value, r.revision)
}

/// One page of a list.
pub struct Page {
    pub items: Vec<Value>,
    pub revision: u64,
    pub remaining: usize,
    /// Key of the last item, when more remain.
    pub last_key: Option<String>,
}

impl Objects {
    pub fn new(store: Store) -> Self {
        Objects { store }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn get(&self, info: &ResourceInfo, ns: Option<&str>, name: &str) -> ApiResult<Value> {
        match self.store.get(&key(info, ns, name))? {
            Some(r) => decode_rev(&r),
            None => Err(ApiError::not_found(info, name)),
        }
    }

    pub fn try_get(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
    ) -> ApiResult<Option<Value>> {
        match self.store.get(&key(info, ns, name))? {
            Some(r) => Ok(Some(decode_rev(&r)?)),
            None => Ok(None),
        }
    }

    pub fn list(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        start_after: Option<&str>,
        limit: Option<usize>,
    ) -> ApiResult<Page> {
        let res = self.store.list(&prefix(info, ns), start_after, limit)?;
        let last_key = if res.remaining > 0 {
            res.items.last().map(|r| r.key.clone())
        } else {
            None
        };
        let items = res
            .items
            .iter()
            .map(decode_rev)
            .collect::<ApiResult<Vec<_>>>()?;
        Ok(Page {
            items,
            revision: res.revision,
            remaining: res.remaining,
            last_key,
        })
    }

    /// Store a new object; `AlreadyExists` if the name is taken.
    pub async fn create(&self, info: &ResourceInfo, obj: &Value) -> ApiResult<Value> {
        let name = crate::object::name(obj).to_string();
        let k = key(info, crate::object::namespace(obj), &name);
        match self.store.create(&k, encode(obj)?).await {
            Ok(rev) => {
                let mut out = obj.clone();
                meta_mut(&mut out).insert("resourceVersion".into(), rev.to_string().into());
                Ok(out)
            }
            Err(StoreError::AlreadyExists) => Err(ApiError::AlreadyExists {
                resource: crate::error::Qualified::of(info),
                name,
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// The object and the store revision it was read at.
    pub fn get_at(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
    ) -> ApiResult<(Value, u64)> {
        match self.store.get(&key(info, ns, name))? {
            Some(r) => Ok((decode_rev(&r)?, r.revision)),
            None => Err(ApiError::not_found(info, name)),
        }
    }

    /// One compare-and-swap step of a caller's own read-modify-write loop: apply `change` if
    /// the object is still at `revision`; `None` when it moved meanwhile (read again).
    pub async fn change_at(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
        revision: u64,
        change: Change,
    ) -> ApiResult<Option<Outcome>> {
        let k = key(info, ns, name);
        let result = match change {
            Change::Unchanged => return Ok(None),
            Change::Write(new) => self
                .store
                .update(&k, revision, encode(&new)?)
                .await
                .map(|rev| {
                    let mut out = new;
                    meta_mut(&mut out).insert("resourceVersion".into(), rev.to_string().into());
                    Outcome::Written(out)
                }),
            Change::Delete => match self.store.delete(&k, Some(revision)).await {
                Ok((last, rev)) => {
                    let mut out = decode_rev(&last)?;
                    meta_mut(&mut out).insert("resourceVersion".into(), rev.to_string().into());
                    Ok(Outcome::Deleted(out))
                }
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(outcome) => Ok(Some(outcome)),
            Err(StoreError::Conflict { .. }) => Ok(None),
            Err(StoreError::NotFound) => Err(ApiError::not_found(info, name)),
            Err(e) => Err(e.into()),
        }
    }

    /// Read-modify-write until the store accepts it: `f` gets the current object (with its
    /// resourceVersion) and decides. A store conflict (someone wrote in between) runs `f` again
    /// on the fresh object; a precondition the client gave is `f`'s to check.
    pub async fn update<F>(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
        mut f: F,
    ) -> ApiResult<Outcome>
    where
        F: FnMut(Value) -> ApiResult<Change>,
    {
        let k = key(info, ns, name);
        loop {
            let current = self
                .store
                .get(&k)?
                .ok_or_else(|| ApiError::not_found(info, name))?;
            let obj = decode_rev(&current)?;
            match f(obj.clone())? {
                Change::Unchanged => return Ok(Outcome::Unchanged(obj)),
                Change::Write(new) => {
                    match self.store.update(&k, current.revision, encode(&new)?).await {
                        Ok(rev) => {
                            let mut out = new;
                            meta_mut(&mut out)
                                .insert("resourceVersion".into(), rev.to_string().into());
                            return Ok(Outcome::Written(out));
                        }
                        Err(StoreError::Conflict { .. }) => continue,
                        Err(StoreError::NotFound) => return Err(ApiError::not_found(info, name)),
                        Err(e) => return Err(e.into()),
                    }
                }
                Change::Delete => match self.store.delete(&k, Some(current.revision)).await {
                    Ok((last, rev)) => {
                        let mut out = decode_rev(&last)?;
                        meta_mut(&mut out).insert("resourceVersion".into(), rev.to_string().into());
                        return Ok(Outcome::Deleted(out));
                    }
                    Err(StoreError::Conflict { .. }) => continue,
                    Err(StoreError::NotFound) => return Err(ApiError::not_found(info, name)),
                    Err(e) => return Err(e.into()),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinykube_proto::registry::builtin;

    #[test]
    fn keys_follow_upstreams_etcd_layout() {
        let cases = [
            (
                "",
                "v1",
                "pods",
                Some("default"),
                "nginx",
                "/pods/default/nginx",
            ),
            ("", "v1", "nodes", None, "worker0", "/minions/worker0"),
            (
                "",
                "v1",
                "services",
                Some("ns"),
                "web",
                "/services/specs/ns/web",
            ),
            (
                "",
                "v1",
                "endpoints",
                Some("ns"),
                "web",
                "/services/endpoints/ns/web",
            ),
            (
                "apps",
                "v1",
                "deployments",
                Some("ns"),
                "d",
                "/deployments/ns/d",
            ),
            (
                "events.k8s.io",
                "v1",
                "events",
                Some("ns"),
                "e",
                "/events/ns/e",
            ),
            ("", "v1", "events", Some("ns"), "e", "/events/ns/e"),
            (
                "apiregistration.k8s.io",
                "v1",
                "apiservices",
                None,
                "v1.apps",
                "/apiregistration.k8s.io/apiservices/v1.apps",
            ),
        ];
        for (group, version, plural, ns, name, want) in cases {
            let info = builtin(group, version, plural).expect("served");
            assert_eq!(key(info, ns, name), want, "{group}/{plural}");
        }
    }

    #[test]
    fn former_keys_move_to_upstreams_layout() {
        let cases = [
            ("/core/pods/default/nginx", Some("/pods/default/nginx")),
            ("/core/nodes/worker0", Some("/minions/worker0")),
            ("/apps/deployments/ns/d", Some("/deployments/ns/d")),
            (
                "/allocations/serviceips/10.96.0.1",
                Some("/ranges/serviceips/10.96.0.1"),
            ),
            (
                "/allocations/nodeports/30001",
                Some("/ranges/servicenodeports/30001"),
            ),
            ("/pods/default/nginx", None),
            ("/apiregistration.k8s.io/apiservices/v1.apps", None),
            ("/example.com/widgets/ns/w", None),
        ];
        for (old, new) in cases {
            assert_eq!(relocated(old).as_deref(), new, "{old}");
        }
    }
}

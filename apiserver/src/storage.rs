//! Objects over the store: keys per resource, JSON encoding with `metadata.resourceVersion`
//! taken from the store's revision, and the read-modify-write loop every update goes through.

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

/// Key of one object: `/core/pods/default/nginx`, `/core/nodes/worker0`.
pub fn key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if info.namespaced => format!("{}{ns}/{name}", kind_prefix(info)),
        _ => format!("{}{name}", kind_prefix(info)),
    }
}

/// Prefix of every object of a resource (all namespaces).
pub fn kind_prefix(info: &ResourceInfo) -> String {
    format!("/{}/{}/", storage_group(info), info.plural)
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

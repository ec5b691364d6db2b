//! The allocation records in the store: one key per cluster IP (`/ranges/serviceips/IP`)
//! and per node port (`/ranges/servicenodeports/PORT`), whose value names the Service holding
//! it, as upstream's IPAddress objects do (upstream keeps one bitmap per range at
//! `/registry/ranges/serviceips`; one key per value lets a create-if-absent claim it). A record is created only if absent, so two
//! concurrent creates can never both get one value, and it outlives any process.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tinykube_store::{Store, StoreError};

use crate::error::{ApiError, ApiResult};

pub const IP_PREFIX: &str = "/ranges/serviceips/";
pub const PORT_PREFIX: &str = "/ranges/servicenodeports/";

/// One allocatable value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Slot {
    Ip(String),
    Port(i64),
}

impl Slot {
    pub fn key(&self) -> String {
        match self {
            Slot::Ip(ip) => format!("{IP_PREFIX}{ip}"),
            Slot::Port(p) => format!("{PORT_PREFIX}{p}"),
        }
    }

    /// The slot an allocation key names.
    pub fn from_key(key: &str) -> Option<Slot> {
        if let Some(ip) = key.strip_prefix(IP_PREFIX) {
            return Some(Slot::Ip(ip.to_string()));
        }
        key.strip_prefix(PORT_PREFIX)
            .and_then(|p| p.parse().ok())
            .map(Slot::Port)
    }
}

/// The Service an allocation belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl Owner {
    pub fn of(svc: &Value) -> Owner {
        let meta = |k: &str| {
            svc.pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        Owner {
            namespace: meta("namespace"),
            name: meta("name"),
            uid: meta("uid"),
        }
    }
}

fn internal(e: StoreError) -> ApiError {
    ApiError::from(e)
}

/// Record `slot` for `owner`; `false` when someone holds it already.
pub async fn reserve(store: &Store, slot: &Slot, owner: &Owner) -> ApiResult<bool> {
    let value = serde_json::to_vec(owner).map_err(|e| ApiError::Internal(e.to_string()))?;
    match store.create(&slot.key(), value.into()).await {
        Ok(_) => Ok(true),
        Err(StoreError::AlreadyExists) => Ok(false),
        Err(e) => Err(internal(e)),
    }
}

/// Who holds `slot`, if anyone.
pub fn holder(store: &Store, slot: &Slot) -> ApiResult<Option<Owner>> {
    Ok(store
        .get(&slot.key())
        .map_err(internal)?
        .and_then(|r| serde_json::from_slice(&r.value).ok()))
}

/// Free `slot` if `uid` still holds it (a record another service has since taken stays).
pub async fn release(store: &Store, slot: &Slot, uid: &str) -> ApiResult<()> {
    let key = slot.key();
    let Some(current) = store.get(&key).map_err(internal)? else {
        return Ok(());
    };
    let owner: Option<Owner> = serde_json::from_slice(&current.value).ok();
    if owner.is_some_and(|o| o.uid != uid) {
        return Ok(());
    }
    match store.delete(&key, Some(current.revision)).await {
        Ok(_) | Err(StoreError::NotFound) | Err(StoreError::Conflict { .. }) => Ok(()),
        Err(e) => Err(internal(e)),
    }
}

/// Every allocation record under `prefix` with its holder.
pub fn list(store: &Store, prefix: &str) -> ApiResult<Vec<(Slot, Option<Owner>)>> {
    let page = store.list(prefix, None, None).map_err(internal)?;
    Ok(page
        .items
        .iter()
        .filter_map(|r| {
            let slot = Slot::from_key(&r.key)?;
            Some((slot, serde_json::from_slice(&r.value).ok()))
        })
        .collect())
}

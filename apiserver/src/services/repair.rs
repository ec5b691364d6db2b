//! Start-up repair of the allocation records, as upstream's cluster IP and node port repair
//! controllers: before the server takes requests, every record whose Service is gone (or no
//! longer holds it: a crash between reservation and write, or between a write and the release)
//! is freed, and every value a stored Service holds without a record gets one back. A value two
//! Services claim is logged; the record's holder keeps it.

use std::collections::BTreeMap;

use super::alloc::{self, Owner, Slot, IP_PREFIX, PORT_PREFIX};
use super::held;
use crate::error::ApiResult;
use crate::state::AppState;

/// What the repair changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Repaired {
    pub released: usize,
    pub restored: usize,
    pub conflicts: usize,
}

/// Reconcile the allocation records with the stored Services.
pub async fn run(state: &AppState) -> ApiResult<Repaired> {
    let info = tinykube_proto::registry::builtin("", "v1", "services").expect("served");
    let services = state.objects.list(info, None, None, None)?.items;
    let mut claims: BTreeMap<Slot, Vec<Owner>> = BTreeMap::new();
    for svc in &services {
        for slot in held(svc) {
            claims.entry(slot).or_default().push(Owner::of(svc));
        }
    }
    let store = state.objects.store();
    let mut records = alloc::list(store, IP_PREFIX)?;
    records.extend(alloc::list(store, PORT_PREFIX)?);
    let mut out = Repaired::default();
    for (slot, holder) in &records {
        let claimed = claims.get(slot).is_some_and(|owners| {
            holder
                .as_ref()
                .is_some_and(|h| owners.iter().any(|o| o.uid == h.uid))
        });
        if !claimed {
            let uid = holder.as_ref().map(|h| h.uid.as_str()).unwrap_or("");
            tracing::info!(?slot, ?holder, "releasing a leaked service allocation");
            alloc::release(store, slot, uid).await?;
            out.released += 1;
        }
    }
    for (slot, owners) in &claims {
        if owners.len() > 1 {
            tracing::warn!(?slot, ?owners, "one value is held by several services");
            out.conflicts += 1;
        }
        let recorded = records.iter().any(|(s, h)| {
            s == slot
                && h.as_ref()
                    .is_some_and(|h| owners.iter().any(|o| o.uid == h.uid))
        });
        if !recorded && alloc::reserve(store, slot, &owners[0]).await? {
            out.restored += 1;
        }
    }
    Ok(out)
}

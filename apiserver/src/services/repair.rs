//! Start-up repair of the allocation records, as upstream's cluster IP and node port repair
//! controllers: before the server takes requests, every record whose Service is gone (or no
//! longer holds it: a crash between reservation and write, or between a write and the release)
//! is freed, and every value a stored Service holds without a record gets one back. A value two
//! Services claim is logged; the record's holder keeps it.

use std::collections::BTreeMap;
use std::time::Duration;

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

/// Reconcile the allocation records with the stored Services. With `confirm_after`, a record
/// is freed only if it is still unclaimed, held by the same owner, that long after it was first
/// seen so: on a store shared with other API servers, a reservation another server made for a
/// Service it is about to write is not a leak (upstream's repair controllers likewise wait for
/// several passes before freeing).
pub async fn run(state: &AppState, confirm_after: Option<Duration>) -> ApiResult<Repaired> {
    let mut out = Repaired::default();
    let (mut leaked, claims) = survey(state)?;
    if let Some(wait) = confirm_after {
        tokio::time::sleep(wait).await;
        let (still, _) = survey(state)?;
        leaked.retain(|record| still.contains(record));
    }
    let store = state.objects.store();
    for (slot, holder) in &leaked {
        let uid = holder.as_ref().map(|h| h.uid.as_str()).unwrap_or("");
        tracing::info!(?slot, ?holder, "releasing a leaked service allocation");
        alloc::release(store, slot, uid).await?;
        out.released += 1;
    }
    let records = allocation_records(state)?;
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

type Record = (Slot, Option<Owner>);
/// What the stored Services claim: each value with the Services holding it.
type Claims = BTreeMap<Slot, Vec<Owner>>;

fn allocation_records(state: &AppState) -> ApiResult<Vec<Record>> {
    let store = state.objects.store();
    let mut records = alloc::list(store, IP_PREFIX)?;
    records.extend(alloc::list(store, PORT_PREFIX)?);
    Ok(records)
}

/// The records no stored Service holds, and what every stored Service claims.
fn survey(state: &AppState) -> ApiResult<(Vec<Record>, Claims)> {
    let info = tinykube_proto::registry::builtin("", "v1", "services").expect("served");
    let services = state.objects.list(info, None, None, None)?.items;
    let mut claims = Claims::new();
    for svc in &services {
        for slot in held(svc) {
            claims.entry(slot).or_default().push(Owner::of(svc));
        }
    }
    let leaked = allocation_records(state)?
        .into_iter()
        .filter(|(slot, holder)| {
            !claims.get(slot).is_some_and(|owners| {
                holder
                    .as_ref()
                    .is_some_and(|h| owners.iter().any(|o| o.uid == h.uid))
            })
        })
        .collect();
    Ok((leaked, claims))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use tinykube_store::{Store, StoreConfig};

    use super::*;
    use crate::services::ServiceNet;
    use crate::state::{AppState, Shared};
    use crate::storage::Objects;

    fn state(dir: &std::path::Path) -> AppState {
        let store = Store::open(dir, StoreConfig::default()).unwrap();
        AppState(Arc::new(Shared {
            objects: Objects::new(store),
            kinds: Default::default(),
            tokens: None,
            authorization: Default::default(),
            keys: Arc::new(crate::identity::Keys::load_or_create(dir).unwrap()),
            shutdown: Default::default(),
            bookmark_interval: std::time::Duration::from_secs(60),
            services: ServiceNet::default(),
            client_certs: false,
            clock: Default::default(),
            aggregator: Default::default(),
        }))
    }

    #[tokio::test]
    async fn leaked_records_are_freed_and_missing_ones_restored() {
        let dir = tempfile::tempdir().unwrap();
        let state = state(dir.path());
        let store = state.objects.store();
        // A crash after the reservation, before the Service was written.
        let ghost = Owner {
            namespace: "default".into(),
            name: "ghost".into(),
            uid: "uid-ghost".into(),
        };
        assert!(alloc::reserve(store, &Slot::Ip("10.96.0.9".into()), &ghost)
            .await
            .unwrap());
        assert!(alloc::reserve(store, &Slot::Port(30009), &ghost)
            .await
            .unwrap());
        // A Service stored without its records (a store from before allocation records).
        let info = tinykube_proto::registry::builtin("", "v1", "services").unwrap();
        let svc = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default", "uid": "uid-web"},
            "spec": {"type": "NodePort", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                     "ports": [{"port": 80, "nodePort": 30010}]}});
        state.objects.create(info, &svc).await.unwrap();

        let repaired = run(&state, None).await.unwrap();
        assert_eq!(
            repaired,
            Repaired {
                released: 2,
                restored: 2,
                conflicts: 0
            }
        );
        assert!(alloc::holder(store, &Slot::Ip("10.96.0.9".into()))
            .unwrap()
            .is_none());
        let holder = alloc::holder(store, &Slot::Port(30010)).unwrap().unwrap();
        assert_eq!(holder.uid, "uid-web");
        // A second pass has nothing to do.
        assert_eq!(run(&state, None).await.unwrap(), Repaired::default());
    }

    #[tokio::test]
    async fn a_reservation_whose_service_lands_during_the_wait_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let state = state(dir.path());
        let store = state.objects.store();
        let owner = Owner {
            namespace: "default".into(),
            name: "late".into(),
            uid: "uid-late".into(),
        };
        let slot = Slot::Ip("10.96.0.20".into());
        assert!(alloc::reserve(store, &slot, &owner).await.unwrap());
        // Another API server reserved the IP and writes the Service while this one repairs.
        let repair = {
            let state = state.clone();
            tokio::spawn(async move { run(&state, Some(Duration::from_millis(300))).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let info = tinykube_proto::registry::builtin("", "v1", "services").unwrap();
        let svc = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "late", "namespace": "default", "uid": "uid-late"},
            "spec": {"clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.20"],
                     "ports": [{"port": 80}]}});
        state.objects.create(info, &svc).await.unwrap();
        let repaired = repair.await.unwrap().unwrap();
        assert_eq!(repaired.released, 0);
        assert_eq!(
            alloc::holder(store, &slot).unwrap().unwrap().uid,
            "uid-late"
        );
    }
}

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

        let repaired = run(&state).await.unwrap();
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
        assert_eq!(run(&state).await.unwrap(), Repaired::default());
    }
}

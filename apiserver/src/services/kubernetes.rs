//! The `kubernetes` Service in `default`, its Endpoints and its EndpointSlice, as upstream's
//! bootstrap controller keeps them: the range's first IP, port 443 (`https`) to the API server's
//! own address and port, labels `component=apiserver` and `provider=kubernetes`. Written at
//! every start (the port may differ from the last run), straight to storage: the API server's
//! loopback address is one no client could put into an Endpoints object.

use std::net::SocketAddr;

use serde_json::{json, Value};
use tinykube_proto::registry::{builtin, ResourceInfo};

use super::alloc::{self, Owner, Slot};
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::state::AppState;
use crate::storage::Change;

const NAME: &str = "kubernetes";
const NAMESPACE: &str = "default";

fn info(group: &str, plural: &str) -> &'static ResourceInfo {
    let version = "v1";
    builtin(group, version, plural).expect("served")
}

fn new_meta(labels: Value, state: &AppState) -> Value {
    json!({
        "name": NAME, "namespace": NAMESPACE,
        "uid": uuid::Uuid::new_v4().to_string(),
        "creationTimestamp": object::timestamp(state.clock.utc()),
        "labels": labels,
    })
}

/// Create the object, or make the stored one carry `wanted`'s fields other than metadata.
async fn ensure(state: &AppState, info: &ResourceInfo, wanted: Value) -> ApiResult<Value> {
    if let Some(current) = state.objects.try_get(info, Some(NAMESPACE), NAME)? {
        let outcome = state
            .objects
            .update(info, Some(NAMESPACE), NAME, |current| {
                let mut next = current.clone();
                for (k, v) in wanted.as_object().into_iter().flatten() {
                    if k != "metadata" {
                        next[k] = v.clone();
                    }
                }
                if let Some(labels) = wanted.pointer("/metadata/labels") {
                    next["metadata"]["labels"] = labels.clone();
                }
                Ok(if next == current {
                    Change::Unchanged
                } else {
                    Change::Write(next)
                })
            })
            .await;
        return match outcome {
            Ok(o) => Ok(o.into_object()),
            Err(ApiError::NotFound { .. }) => Ok(current),
            Err(e) => Err(e),
        };
    }
    match state.objects.create(info, &wanted).await {
        Ok(v) => Ok(v),
        Err(ApiError::AlreadyExists { .. }) => state.objects.get(info, Some(NAMESPACE), NAME),
        Err(e) => Err(e),
    }
}

/// Keep the `kubernetes` Service, Endpoints and EndpointSlice pointing at `addr`.
pub async fn ensure_all(state: &AppState, addr: SocketAddr) -> ApiResult<()> {
    let ip = match addr.ip() {
        a if a.is_unspecified() => "127.0.0.1".to_string(),
        a => a.to_string(),
    };
    let port = addr.port();
    let cluster_ip = state.services.ips.first().to_string();
    let svc = json!({
        "kind": "Service", "apiVersion": "v1",
        "metadata": new_meta(json!({"component": "apiserver", "provider": "kubernetes"}), state),
        "spec": {
            "ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": port}],
            "clusterIP": cluster_ip, "clusterIPs": [cluster_ip],
            "type": "ClusterIP", "sessionAffinity": "None",
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
        },
        "status": {"loadBalancer": {}},
    });
    let stored = ensure(state, info("", "services"), svc).await?;
    let slot = Slot::Ip(cluster_ip.clone());
    let owner = Owner::of(&stored);
    if !alloc::reserve(state.objects.store(), &slot, &owner).await? {
        let holder = alloc::holder(state.objects.store(), &slot)?;
        if holder.is_some_and(|h| h.uid != owner.uid) {
            tracing::warn!(%cluster_ip, "the kubernetes service's IP is held by another service");
        }
    }
    let endpoints = json!({
        "kind": "Endpoints", "apiVersion": "v1",
        "metadata": new_meta(json!({"endpointslice.kubernetes.io/skip-mirror": "true"}), state),
        "subsets": [{
            "addresses": [{"ip": ip}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }],
    });
    ensure(state, info("", "endpoints"), endpoints).await?;
    let mut slice_meta = new_meta(json!({"kubernetes.io/service-name": NAME}), state);
    slice_meta["generation"] = json!(1);
    let slice = json!({
        "kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
        "metadata": slice_meta,
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    });
    ensure(state, info("discovery.k8s.io", "endpointslices"), slice).await?;
    Ok(())
}

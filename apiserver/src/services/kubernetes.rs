//! The `kubernetes` Service in `default`, its Endpoints and its EndpointSlices, as upstream's
//! bootstrap controller and lease endpoint reconciler keep them: the range's first IP, port 443
//! (`https`) to the addresses of every live API server (`leases` says which are live), labels
//! `component=apiserver` and `provider=kubernetes`. Written straight to storage (an API server's
//! loopback address is one no client could put into an Endpoints object), through the CAS update
//! loop and only when something changed, so API servers racing on one store converge.
//!
//! tinykube's API servers all listen on 127.0.0.1, on different ports: the Endpoints get one
//! subset per port (as upstream's repacking groups addresses by their ports) and the
//! EndpointSlices one slice per port (`kubernetes` for the lowest, `kubernetes-PORT` for the
//! others; a slice has one port list). The Service's targetPort is the lowest live port. A single
//! API server looks as upstream's: one address, one subset, one slice.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};

use serde_json::{json, Value};
use tinykube_proto::registry::{builtin, ResourceInfo};

use super::alloc::{self, Owner, Slot};
use super::leases;
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::state::AppState;
use crate::storage::Change;

pub const NAME: &str = "kubernetes";
const NAMESPACE: &str = "default";
/// The label upstream's EndpointSlices carry to name their Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

fn info(group: &str, plural: &str) -> &'static ResourceInfo {
    let version = "v1";
    builtin(group, version, plural).expect("served")
}

fn new_meta(name: &str, labels: Value, state: &AppState) -> Value {
    json!({
        "name": name, "namespace": NAMESPACE,
        "uid": uuid::Uuid::new_v4().to_string(),
        "creationTimestamp": object::timestamp(state.clock.utc()),
        "labels": labels,
    })
}

/// Create the object, or make the stored one carry `wanted`'s fields other than metadata (and
/// its labels); an object with a generation moves to the next one when it is rewritten.
async fn ensure(state: &AppState, info: &ResourceInfo, wanted: Value) -> ApiResult<Value> {
    let name = object::name(&wanted).to_string();
    if let Some(current) = state.objects.try_get(info, Some(NAMESPACE), &name)? {
        let outcome = state
            .objects
            .update(info, Some(NAMESPACE), &name, |current| {
                let mut next = current.clone();
                for (k, v) in wanted.as_object().into_iter().flatten() {
                    if k != "metadata" {
                        next[k] = v.clone();
                    }
                }
                if let Some(labels) = wanted.pointer("/metadata/labels") {
                    next["metadata"]["labels"] = labels.clone();
                }
                if next == current {
                    return Ok(Change::Unchanged);
                }
                if let Some(g) = current
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                {
                    next["metadata"]["generation"] = json!(g + 1);
                }
                Ok(Change::Write(next))
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
        Err(ApiError::AlreadyExists { .. }) => state.objects.get(info, Some(NAMESPACE), &name),
        Err(e) => Err(e),
    }
}

/// The address an API server bound to `addr` is reached at (loopback for a wildcard bind).
pub fn advertised(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        a if a.is_unspecified() => SocketAddr::new(IpAddr::from([127, 0, 0, 1]), addr.port()),
        _ => addr,
    }
}

/// Start this API server's part: its identity lease, the `kubernetes` Service, Endpoints and
/// EndpointSlices listing every live API server; then keep them so until [`leases::Reconciler::stop`].
/// `shared_store`: other API servers may use the same store (etcd); when not (sled), identity
/// leases left in it are a previous run's and are removed at once.
pub async fn ensure_all(
    state: &AppState,
    addr: SocketAddr,
    shared_store: bool,
) -> ApiResult<leases::Reconciler> {
    let me = leases::Identity::new(advertised(addr));
    leases::start_up(state, &me, shared_store).await?;
    let live = leases::live(state)?;
    let port = live
        .iter()
        .map(SocketAddr::port)
        .min()
        .unwrap_or(me.address.port());
    let cluster_ip = state.services.ips.first().to_string();
    let svc = json!({
        "kind": "Service", "apiVersion": "v1",
        "metadata": new_meta(NAME, json!({"component": "apiserver", "provider": "kubernetes"}), state),
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
    sync_endpoints(state, &live).await?;
    Ok(leases::Reconciler::start(state.clone(), me))
}

/// The live API servers' addresses by port, each port's addresses sorted.
pub fn by_port(live: &[SocketAddr]) -> BTreeMap<u16, BTreeSet<IpAddr>> {
    let mut groups: BTreeMap<u16, BTreeSet<IpAddr>> = BTreeMap::new();
    for a in live {
        groups.entry(a.port()).or_default().insert(a.ip());
    }
    groups
}

fn port_list(port: u16) -> Value {
    json!([{"name": "https", "port": port, "protocol": "TCP"}])
}

/// The Endpoints' subsets: one per port, in port order.
pub fn subsets(groups: &BTreeMap<u16, BTreeSet<IpAddr>>) -> Value {
    groups
        .iter()
        .map(|(port, ips)| {
            let addresses: Vec<Value> =
                ips.iter().map(|ip| json!({"ip": ip.to_string()})).collect();
            json!({"addresses": addresses, "ports": port_list(*port)})
        })
        .collect()
}

/// The EndpointSlices' names and ports: `kubernetes` for the lowest port, then `kubernetes-PORT`.
pub fn slice_names(groups: &BTreeMap<u16, BTreeSet<IpAddr>>) -> Vec<(String, u16)> {
    groups
        .keys()
        .enumerate()
        .map(|(i, port)| match i {
            0 => (NAME.to_string(), *port),
            _ => (format!("{NAME}-{port}"), *port),
        })
        .collect()
}

/// Make the Service's targetPort, the Endpoints and the EndpointSlices list exactly `live`
/// (writing only what differs). An empty `live` is refused, as upstream refuses to erase every
/// endpoint of the `kubernetes` Service: the last API server to stop leaves its address.
pub async fn sync_endpoints(state: &AppState, live: &[SocketAddr]) -> ApiResult<()> {
    if live.is_empty() {
        return Err(ApiError::Internal(
            "no API server leases were listed in storage, refusing to erase all endpoints for the kubernetes service".into(),
        ));
    }
    let groups = by_port(live);
    let lowest = *groups.keys().next().unwrap_or(&0);
    set_target_port(state, lowest).await?;
    let endpoints = json!({
        "kind": "Endpoints", "apiVersion": "v1",
        "metadata": new_meta(NAME, json!({"endpointslice.kubernetes.io/skip-mirror": "true"}), state),
        "subsets": subsets(&groups),
    });
    ensure(state, info("", "endpoints"), endpoints).await?;
    let slices_info = info("discovery.k8s.io", "endpointslices");
    let wanted = slice_names(&groups);
    for (name, port) in &wanted {
        let ips = &groups[port];
        let mut meta = new_meta(name, json!({SERVICE_NAME_LABEL: NAME}), state);
        meta["generation"] = json!(1);
        let endpoints: Vec<Value> = ips
            .iter()
            .map(|ip| json!({"addresses": [ip.to_string()], "conditions": {"ready": true}}))
            .collect();
        let slice = json!({
            "kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
            "metadata": meta,
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": port_list(*port),
        });
        ensure(state, slices_info, slice).await?;
    }
    // Slices of ports no live API server serves on any more.
    let page = state
        .objects
        .list(slices_info, Some(NAMESPACE), None, None)?;
    for slice in &page.items {
        let name = object::name(slice);
        let ours = slice
            .pointer("/metadata/labels")
            .and_then(|l| l.get(SERVICE_NAME_LABEL))
            == Some(&json!(NAME));
        if ours && !wanted.iter().any(|(n, _)| n == name) {
            delete(state, slices_info, name).await?;
        }
    }
    Ok(())
}

/// The `kubernetes` Service's targetPort (only the number; nothing else of it changes).
async fn set_target_port(state: &AppState, port: u16) -> ApiResult<()> {
    let outcome = state
        .objects
        .update(
            info("", "services"),
            Some(NAMESPACE),
            NAME,
            |mut svc| match svc.pointer_mut("/spec/ports/0/targetPort") {
                Some(t) if *t != json!(port) => {
                    *t = json!(port);
                    Ok(Change::Write(svc))
                }
                _ => Ok(Change::Unchanged),
            },
        )
        .await;
    match outcome {
        Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

async fn delete(state: &AppState, info: &ResourceInfo, name: &str) -> ApiResult<()> {
    let outcome = state
        .objects
        .update(info, Some(NAMESPACE), name, |_| Ok(Change::Delete))
        .await;
    match outcome {
        Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    }

    /// Live API servers, the Endpoints' subsets, the slices' names and ports.
    type Case = (Vec<SocketAddr>, Value, Vec<(&'static str, u16)>);

    #[test]
    fn one_subset_and_one_slice_per_port() {
        let cases: Vec<Case> = vec![
            (
                addrs(&["127.0.0.1:6443"]),
                json!([{"addresses": [{"ip": "127.0.0.1"}],
                        "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]),
                vec![("kubernetes", 6443)],
            ),
            (
                addrs(&["127.0.0.1:40003", "127.0.0.1:40001", "127.0.0.1:40002"]),
                json!([
                    {"addresses": [{"ip": "127.0.0.1"}],
                     "ports": [{"name": "https", "port": 40001, "protocol": "TCP"}]},
                    {"addresses": [{"ip": "127.0.0.1"}],
                     "ports": [{"name": "https", "port": 40002, "protocol": "TCP"}]},
                    {"addresses": [{"ip": "127.0.0.1"}],
                     "ports": [{"name": "https", "port": 40003, "protocol": "TCP"}]},
                ]),
                vec![
                    ("kubernetes", 40001),
                    ("kubernetes-40002", 40002),
                    ("kubernetes-40003", 40003),
                ],
            ),
            (
                // Upstream's shape: several hosts on one port share one subset, IPs sorted.
                addrs(&["10.0.0.3:6443", "10.0.0.1:6443", "10.0.0.1:6443"]),
                json!([{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.3"}],
                        "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]),
                vec![("kubernetes", 6443)],
            ),
        ];
        for (live, want_subsets, want_slices) in cases {
            let groups = by_port(&live);
            assert_eq!(subsets(&groups), want_subsets, "{live:?}");
            let names = slice_names(&groups);
            let names: Vec<(&str, u16)> = names.iter().map(|(n, p)| (n.as_str(), *p)).collect();
            assert_eq!(names, want_slices, "{live:?}");
        }
    }

    #[test]
    fn a_wildcard_bind_is_advertised_on_loopback() {
        let cases = [
            ("0.0.0.0:6443", "127.0.0.1:6443"),
            ("127.0.0.1:7000", "127.0.0.1:7000"),
            ("10.1.2.3:443", "10.1.2.3:443"),
        ];
        for (bound, want) in cases {
            assert_eq!(advertised(bound.parse().unwrap()).to_string(), want);
        }
    }
}

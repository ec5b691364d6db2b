//! The Node a kubelet registers and keeps fresh: labels, taints, capacity and allocatable,
//! addresses, nodeInfo, the four conditions with upstream's reasons, and its Lease in
//! `kube-node-lease`. Also the parsers of the flags that describe a node.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeSpec, NodeStatus,
    NodeSystemInfo, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use tinykube_proto::quantity::Quantity;

use crate::admission::Allocatable;

/// The version this kubelet reports (the API server's version, as in a real cluster).
pub const KUBELET_VERSION: &str = "v1.36.2";
/// No container runtime runs: the simulated one says so.
pub const RUNTIME_VERSION: &str = concat!("tinykube://", env!("CARGO_PKG_VERSION"));
/// Default lease duration of node leases; the kubelet renews every quarter of it.
pub const LEASE_DURATION_SECONDS: i32 = 40;
pub const LEASE_NAMESPACE: &str = "kube-node-lease";
/// The Node annotation that tells the API server where this kubelet's endpoint is
/// (`127.0.0.1:PORT`). The simulated InternalIPs are not reachable and are never dialled.
pub const ADDRESS_ANNOTATION: &str = "kubelet.tinykube.io/address";
/// The port published when no endpoint is served (upstream's default).
pub const DEFAULT_KUBELET_PORT: u16 = 10250;

/// The address to publish for a bound listener: an unspecified address (`0.0.0.0`) is reached
/// on loopback.
pub fn reachable(bound: SocketAddr) -> SocketAddr {
    match bound.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), bound.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST), bound.port())
        }
        _ => bound,
    }
}

/// The annotations a kubelet sets on its Node.
pub fn annotations(endpoint: Option<SocketAddr>) -> BTreeMap<String, String> {
    let mut a: BTreeMap<String, String> = [(
        "volumes.kubernetes.io/controller-managed-attach-detach".to_string(),
        "true".to_string(),
    )]
    .into();
    if let Some(e) = endpoint {
        a.insert(ADDRESS_ANNOTATION.into(), e.to_string());
    }
    a
}

/// Everything about one (simulated) node that does not change while the kubelet runs.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub name: String,
    /// Extra labels (`--node-labels`), on top of the well-known ones.
    pub labels: BTreeMap<String, String>,
    /// `--register-with-taints`.
    pub taints: Vec<Taint>,
    pub node_ip: Ipv4Addr,
    pub pod_cidr: String,
    /// Static pod manifests (`--pod-manifest-path`).
    pub manifest_path: Option<std::path::PathBuf>,
}

/// `--capacity cpu=4,memory=8Gi,ephemeral-storage=20Gi,pods=110` (other names are passed
/// through as extended resources).
#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    pub list: BTreeMap<String, String>,
    pub allocatable: Allocatable,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    #[error("invalid label {0:?}: want key=value")]
    Label(String),
    #[error("invalid taint {0:?}: want key[=value]:NoSchedule|PreferNoSchedule|NoExecute")]
    Taint(String),
    #[error("invalid capacity {0:?}: want name=quantity, e.g. cpu=4,memory=8Gi,ephemeral-storage=20Gi,pods=110")]
    Capacity(String),
}

fn items(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|i| !i.is_empty())
}

/// `k=v,k2=v2` (a bare `k=` is an empty value, as `node-role.kubernetes.io/master=`).
pub fn parse_labels(s: &str) -> Result<BTreeMap<String, String>, FlagError> {
    items(s)
        .map(|i| match i.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(FlagError::Label(i.to_string())),
        })
        .collect()
}

/// `key=value:Effect,key:Effect`.
pub fn parse_taints(s: &str) -> Result<Vec<Taint>, FlagError> {
    items(s)
        .map(|i| {
            let bad = || FlagError::Taint(i.to_string());
            let (kv, effect) = i.rsplit_once(':').ok_or_else(bad)?;
            if !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) {
                return Err(bad());
            }
            let (key, value) = match kv.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string()).filter(|v| !v.is_empty())),
                None => (kv, None),
            };
            if key.is_empty() {
                return Err(bad());
            }
            Ok(Taint {
                key: key.into(),
                value,
                effect: effect.into(),
                time_added: None,
            })
        })
        .collect()
}

/// `cpu=4,memory=8Gi,ephemeral-storage=20Gi,pods=110`; missing cpu/memory/ephemeral-storage/pods
/// take those defaults (a real kubelet always reports its root filesystem as ephemeral-storage,
/// so manifests that request some fit).
pub fn parse_capacity(s: &str) -> Result<Capacity, FlagError> {
    let defaults = [
        ("cpu", "4"),
        ("memory", "8Gi"),
        ("ephemeral-storage", "20Gi"),
        ("pods", "110"),
    ];
    let mut list: BTreeMap<String, String> = defaults
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for i in items(s) {
        let bad = || FlagError::Capacity(i.to_string());
        let (k, v) = i.split_once('=').ok_or_else(bad)?;
        let q = Quantity::parse(v).map_err(|_| bad())?;
        if k.is_empty() || q.milli_value() < 0 {
            return Err(bad());
        }
        list.insert(k.to_string(), q.to_string());
    }
    let get = |k: &str| list.get(k).and_then(|v| Quantity::parse(v).ok());
    let allocatable = Allocatable {
        cpu_milli: get("cpu").map_or(0, |q| q.milli_value()),
        memory: get("memory").map_or(0, |q| q.value()),
        ephemeral_storage: get("ephemeral-storage").map_or(0, |q| q.value()),
        pods: get("pods").map_or(0, |q| q.value()),
    };
    Ok(Capacity { list, allocatable })
}

/// Facts about the machine shared by every simulated node.
#[derive(Debug, Clone)]
pub struct Machine {
    pub kernel_version: String,
    pub os_image: String,
    pub architecture: String,
    pub boot_id: String,
}

impl Machine {
    /// Read from the host (`/proc`, `/etc/os-release`), with sensible fallbacks.
    pub fn detect() -> Machine {
        let kernel_version = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "6.8.0-tinykube".into());
        let os_image = std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    l.strip_prefix("PRETTY_NAME=")
                        .map(|v| v.trim_matches('"').to_string())
                })
            })
            .unwrap_or_else(|| "Linux".into());
        let architecture = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => other,
        }
        .to_string();
        let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| uuid_like(&crate::hash::hex(&[b"boot"], 2)));
        Machine {
            kernel_version,
            os_image,
            architecture,
            boot_id,
        }
    }
}

pub(crate) fn uuid_like(h: &str) -> String {
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn condition(
    type_: &str,
    ok: bool,
    reason: &str,
    message: &str,
    since: Timestamp,
    now: Timestamp,
) -> NodeCondition {
    NodeCondition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_heartbeat_time: Some(Time(now)),
        last_transition_time: Some(Time(since)),
    }
}

/// The four conditions a healthy kubelet posts, with upstream's reasons and messages: true
/// (or false) `since`, heartbeat `now`.
pub fn conditions(since: Timestamp, now: Timestamp) -> Vec<NodeCondition> {
    vec![
        condition(
            "MemoryPressure",
            false,
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
            since,
            now,
        ),
        condition(
            "DiskPressure",
            false,
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
            since,
            now,
        ),
        condition(
            "PIDPressure",
            false,
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
            since,
            now,
        ),
        condition(
            "Ready",
            true,
            "KubeletReady",
            "kubelet is posting ready status",
            since,
            now,
        ),
    ]
}

fn quantities(list: &BTreeMap<String, String>) -> BTreeMap<String, ApiQuantity> {
    list.iter()
        .map(|(k, v)| (k.clone(), ApiQuantity(v.clone())))
        .collect()
}

/// The node's status: capacity, allocatable, conditions, addresses, endpoints (the port the
/// kubelet's `endpoint` listens on), nodeInfo.
pub fn status(
    node: &NodeConfig,
    cap: &Capacity,
    machine: &Machine,
    since: Timestamp,
    now: Timestamp,
    endpoint: Option<SocketAddr>,
) -> NodeStatus {
    let machine_id = crate::hash::hex(&[b"machine", node.name.as_bytes()], 2);
    NodeStatus {
        capacity: Some(quantities(&cap.list)),
        allocatable: Some(quantities(&cap.list)),
        conditions: Some(conditions(since, now)),
        addresses: Some(vec![
            NodeAddress {
                type_: "InternalIP".into(),
                address: node.node_ip.to_string(),
            },
            NodeAddress {
                type_: "Hostname".into(),
                address: node.name.clone(),
            },
        ]),
        daemon_endpoints: Some(NodeDaemonEndpoints {
            kubelet_endpoint: Some(DaemonEndpoint {
                port: endpoint.map_or(DEFAULT_KUBELET_PORT, |e| e.port()).into(),
            }),
        }),
        node_info: Some(NodeSystemInfo {
            machine_id: machine_id.clone(),
            system_uuid: uuid_like(&machine_id),
            boot_id: machine.boot_id.clone(),
            kernel_version: machine.kernel_version.clone(),
            os_image: machine.os_image.clone(),
            container_runtime_version: RUNTIME_VERSION.into(),
            kubelet_version: KUBELET_VERSION.into(),
            kube_proxy_version: String::new(),
            operating_system: "linux".into(),
            architecture: machine.architecture.clone(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The well-known labels every kubelet sets, then `--node-labels`.
pub fn labels(node: &NodeConfig, machine: &Machine) -> BTreeMap<String, String> {
    let mut l: BTreeMap<String, String> = [
        ("beta.kubernetes.io/arch", machine.architecture.as_str()),
        ("beta.kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", machine.architecture.as_str()),
        ("kubernetes.io/hostname", node.name.as_str()),
        ("kubernetes.io/os", "linux"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    l.extend(node.labels.clone());
    l
}

/// The Node object posted at registration.
pub fn initial(
    node: &NodeConfig,
    cap: &Capacity,
    machine: &Machine,
    since: Timestamp,
    now: Timestamp,
    endpoint: Option<SocketAddr>,
) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(node.name.clone()),
            labels: Some(labels(node, machine)),
            annotations: Some(annotations(endpoint)),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            pod_cidr: Some(node.pod_cidr.clone()),
            pod_cidrs: Some(vec![node.pod_cidr.clone()]),
            taints: (!node.taints.is_empty()).then(|| node.taints.clone()),
            ..Default::default()
        }),
        status: Some(status(node, cap, machine, since, now, endpoint)),
    }
}

/// The node's Lease, owned by its Node, renewed `now`.
pub fn lease(name: &str, node_uid: Option<&str>, duration_seconds: i32, now: Timestamp) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(LEASE_NAMESPACE.into()),
            owner_references: node_uid.map(|uid| {
                vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Node".into(),
                    name: name.into(),
                    uid: uid.into(),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(name.into()),
            lease_duration_seconds: Some(duration_seconds),
            renew_time: Some(MicroTime(now)),
            ..Default::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_parsers() {
        assert_eq!(
            parse_labels("disktype=ssd, node-role.kubernetes.io/master=").unwrap(),
            BTreeMap::from([
                ("disktype".to_string(), "ssd".to_string()),
                ("node-role.kubernetes.io/master".to_string(), String::new())
            ])
        );
        assert!(parse_labels("novalue").is_err());
        let t = parse_taints("node-role.kubernetes.io/master:NoSchedule,dedicated=gpu:NoExecute")
            .unwrap();
        assert_eq!(
            (
                t[0].key.as_str(),
                t[0].value.as_deref(),
                t[0].effect.as_str()
            ),
            ("node-role.kubernetes.io/master", None, "NoSchedule")
        );
        assert_eq!(t[1].value.as_deref(), Some("gpu"));
        for bad in ["k=v", "k:Sometimes", ":NoSchedule"] {
            assert!(parse_taints(bad).is_err(), "{bad}");
        }
        let c = parse_capacity("cpu=8,pods=20").unwrap();
        assert_eq!(
            c.allocatable,
            Allocatable {
                cpu_milli: 8000,
                memory: 8 << 30,
                ephemeral_storage: 20 << 30,
                pods: 20
            }
        );
        assert_eq!(c.list["memory"], "8Gi");
        assert_eq!(c.list["ephemeral-storage"], "20Gi");
        let c = parse_capacity("cpu=500m,nvidia.com/gpu=2").unwrap();
        assert_eq!(c.allocatable.cpu_milli, 500);
        assert_eq!(c.list["nvidia.com/gpu"], "2");
        for bad in ["cpu", "cpu=lots", "=4"] {
            assert!(parse_capacity(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn registered_node_looks_like_upstream() {
        let machine = Machine {
            kernel_version: "6.8.0-45-generic".into(),
            os_image: "Ubuntu 24.04.1 LTS".into(),
            architecture: "amd64".into(),
            boot_id: "b".into(),
        };
        let cfg = NodeConfig {
            name: "worker0".into(),
            labels: parse_labels("disktype=ssd").unwrap(),
            taints: vec![],
            node_ip: Ipv4Addr::new(192, 168, 10, 10),
            pod_cidr: "10.244.1.0/24".into(),
            manifest_path: None,
        };
        let endpoint = reachable("0.0.0.0:41234".parse().unwrap());
        let (since, now) = (
            Timestamp::from_second(1_800_000_000).unwrap(),
            Timestamp::from_second(1_800_000_300).unwrap(),
        );
        let n = initial(
            &cfg,
            &parse_capacity("").unwrap(),
            &machine,
            since,
            now,
            Some(endpoint),
        );
        let annotations = n.metadata.annotations.clone().unwrap();
        assert_eq!(annotations[ADDRESS_ANNOTATION], "127.0.0.1:41234");
        assert_eq!(
            n.status.as_ref().unwrap().daemon_endpoints,
            Some(NodeDaemonEndpoints {
                kubelet_endpoint: Some(DaemonEndpoint { port: 41234 })
            })
        );
        let labels = n.metadata.labels.unwrap();
        assert_eq!(labels["kubernetes.io/hostname"], "worker0");
        assert_eq!(labels["kubernetes.io/os"], "linux");
        assert_eq!(labels["disktype"], "ssd");
        let status = n.status.unwrap();
        let conditions = status.conditions.unwrap();
        assert!(conditions
            .iter()
            .all(|c| c.last_heartbeat_time == Some(Time(now))
                && c.last_transition_time == Some(Time(since))));
        let conds: Vec<(String, String, String)> = conditions
            .into_iter()
            .map(|c| (c.type_, c.status, c.reason.unwrap()))
            .collect();
        assert_eq!(
            conds[3],
            ("Ready".into(), "True".into(), "KubeletReady".into())
        );
        assert_eq!(conds.len(), 4);
        let addrs = status.addresses.unwrap();
        assert_eq!(addrs[0].address, "192.168.10.10");
        assert_eq!(addrs[1].type_, "Hostname");
        assert_eq!(status.node_info.unwrap().kubelet_version, "v1.36.2");
        assert_eq!(n.spec.unwrap().pod_cidr.as_deref(), Some("10.244.1.0/24"));
        let l = lease("worker0", Some("uid-1"), LEASE_DURATION_SECONDS, now);
        let spec = l.spec.unwrap();
        assert_eq!(spec.lease_duration_seconds, Some(40));
        assert_eq!(spec.renew_time, Some(MicroTime(now)));
        assert_eq!(l.metadata.owner_references.unwrap()[0].kind, "Node");
    }
}

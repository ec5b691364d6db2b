//! The cluster network as a pod sees it, from what the API holds: the cluster DNS answers
//! Service names (ClusterIP, or a headless Service's ready endpoints, and their pods'
//! `hostname.subdomain` names) through the pod's search domains, and addresses back to those
//! names (PTR records, as CoreDNS answers them); a connection to a ClusterIP
//! goes to one of the Service's ready endpoints in turn, as kube-proxy balances; a connection
//! to a pod IP reaches whatever listens there: in this process's [`Listeners`] at no cost, or,
//! for a pod IP of another kubelet process, through that kubelet ([`super::remote`]). An IP
//! that no node holds times out.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use tinykube_client::reflector::Store;
use tinykube_clock::Clock;
use tinykube_runtime::net::Resolved;
use tinykube_runtime::{HttpRequest, HttpResponse, NetError, Network, Server};

use super::host::Listeners;
use super::remote::{peer_of, Peers};

/// What every pod's network shares.
pub(crate) struct Cluster {
    pub services: Store<Service>,
    pub slices: Store<EndpointSlice>,
    /// Every Node (their podCIDRs, InternalIPs and kubelet addresses).
    pub nodes: Store<Node>,
    /// The names of the nodes this process plays.
    pub own: HashSet<String>,
    pub listeners: Arc<Listeners>,
    pub dns_ip: String,
    pub domain: String,
    /// Round-robin position of Service connections.
    turn: AtomicUsize,
    peers: Peers,
    /// The kubelet's clock (the time servers see a request at, for their logs and ages).
    pub clock: Clock,
}

impl Cluster {
    pub fn new(
        services: Store<Service>,
        slices: Store<EndpointSlice>,
        nodes: Store<Node>,
        own: HashSet<String>,
        dns_ip: String,
        domain: String,
        clock: Clock,
    ) -> Cluster {
        Cluster {
            services,
            slices,
            nodes,
            own,
            listeners: Arc::new(Listeners::default()),
            dns_ip,
            domain,
            turn: AtomicUsize::new(0),
            peers: Peers::new(),
            clock,
        }
    }

    /// What listens at `ip:port` in this process: refused when `ip` is one of ours (`ours`)
    /// with nothing there, timed out for an IP nobody here holds. What a peer kubelet answers
    /// with, never asking further.
    pub fn local(
        &self,
        ip: &str,
        port: u16,
        ours: impl Fn(&str) -> bool,
    ) -> Result<Arc<dyn Server>, NetError> {
        match self.listeners.get(ip, port) {
            Some(s) => Ok(s),
            None if ours(ip) => Err(NetError::Refused),
            None => Err(NetError::TimedOut),
        }
    }

    /// The kubelet of another process whose node holds `ip`.
    fn peer(&self, ip: &str) -> Option<SocketAddr> {
        let nodes = self.nodes.list();
        peer_of(
            nodes.iter().map(|n| n.as_ref()),
            |n| self.own.contains(n),
            ip,
        )
    }

    /// The resolver search list of a pod in `namespace` (what its resolv.conf says).
    pub fn search(&self, namespace: &str) -> Vec<String> {
        let d = &self.domain;
        vec![
            format!("{namespace}.svc.{d}"),
            format!("svc.{d}"),
            d.to_string(),
        ]
    }

    fn service(&self, namespace: &str, name: &str) -> Option<Arc<Service>> {
        self.services.get(&format!("{namespace}/{name}"))
    }

    /// Ready endpoint addresses of a Service, with the port named `port_name`:
    /// (ip, port, hostname).
    fn endpoints(
        &self,
        svc: &Service,
        port_name: Option<&str>,
    ) -> Vec<(String, u16, Option<String>)> {
        let ns = svc.metadata.namespace.clone().unwrap_or_default();
        let name = svc.metadata.name.clone().unwrap_or_default();
        let mut out = Vec::new();
        for slice in self.slices.list() {
            if slice.metadata.namespace.as_deref() != Some(ns.as_str())
                || slice
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("kubernetes.io/service-name"))
                    != Some(&name)
            {
                continue;
            }
            let port = slice
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref().unwrap_or("") == port_name.unwrap_or(""))
                .and_then(|p| p.port)
                .unwrap_or(0) as u16;
            for e in slice.endpoints.iter().flatten() {
                let ready = e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true);
                if !ready {
                    continue;
                }
                for ip in &e.addresses {
                    out.push((ip.clone(), port, e.hostname.clone()));
                }
            }
        }
        out.sort();
        out
    }

    /// The name the cluster DNS gives an address (its PTR record, as CoreDNS answers it): the
    /// DNS server's own address is `kube-dns.kube-system`'s, a ClusterIP its Service's, a ready
    /// endpoint's `HOSTNAME.SERVICE.NAMESPACE.svc` (or its dashed address when the pod has no
    /// hostname); anything else has none.
    fn reverse(&self, ip: &str) -> Option<String> {
        let d = &self.domain;
        if ip == self.dns_ip {
            return Some(format!("kube-dns.kube-system.svc.{d}"));
        }
        let mut services = self.services.list();
        services.sort_by_key(|s| (s.metadata.namespace.clone(), s.metadata.name.clone()));
        if let Some(svc) = services
            .iter()
            .find(|s| s.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some(ip))
        {
            let ns = svc.metadata.namespace.as_deref().unwrap_or_default();
            let name = svc.metadata.name.as_deref().unwrap_or_default();
            return Some(format!("{name}.{ns}.svc.{d}"));
        }
        let mut names: Vec<String> = self
            .slices
            .list()
            .iter()
            .filter_map(|slice| {
                let ns = slice.metadata.namespace.as_deref()?;
                let svc = slice
                    .metadata
                    .labels
                    .as_ref()?
                    .get("kubernetes.io/service-name")?;
                let e = slice.endpoints.iter().flatten().find(|e| {
                    e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true)
                        && e.addresses.iter().any(|a| a == ip)
                })?;
                let host = e.hostname.clone().unwrap_or_else(|| ip.replace('.', "-"));
                Some(format!("{host}.{svc}.{ns}.svc.{d}"))
            })
            .collect();
        names.sort();
        names.into_iter().next()
    }

    /// The answer to one fully qualified name.
    fn lookup(&self, fqdn: &str) -> Option<Vec<String>> {
        let rest = fqdn.strip_suffix(&format!(".{}", self.domain))?;
        let parts: Vec<&str> = rest.split('.').collect();
        match parts.as_slice() {
            [name, ns, "svc"] => {
                let svc = self.service(ns, name)?;
                let spec = svc.spec.as_ref()?;
                match spec.cluster_ip.as_deref() {
                    Some("None") | None => {
                        let ips: Vec<String> = self
                            .endpoints(&svc, None)
                            .into_iter()
                            .map(|e| e.0)
                            .collect();
                        (!ips.is_empty()).then_some(ips)
                    }
                    Some(ip) => Some(vec![ip.to_string()]),
                }
            }
            [host, sub, ns, "svc"] => {
                let svc = self.service(ns, sub)?;
                let ips: Vec<String> = self
                    .endpoints(&svc, None)
                    .into_iter()
                    .filter(|e| e.2.as_deref() == Some(host))
                    .map(|e| e.0)
                    .collect();
                (!ips.is_empty()).then_some(ips)
            }
            [dashed, _ns, "pod"] => Some(vec![dashed.replace('-', ".")]),
            _ => None,
        }
    }

    /// Where a connection to `ip:port` lands: a ClusterIP goes to a ready endpoint.
    fn route(&self, ip: &str, port: u16) -> Result<(String, u16), NetError> {
        let svc = self
            .services
            .list()
            .into_iter()
            .find(|s| s.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some(ip));
        let Some(svc) = svc else {
            return Ok((ip.to_string(), port));
        };
        let Some(sp) = svc
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_ref())
            .and_then(|ps| ps.iter().find(|p| p.port == i32::from(port)))
        else {
            return Err(NetError::TimedOut);
        };
        let eps = self.endpoints(&svc, sp.name.as_deref());
        if eps.is_empty() {
            return Err(NetError::Refused);
        }
        let i = self.turn.fetch_add(1, Ordering::Relaxed) % eps.len();
        Ok((eps[i].0.clone(), eps[i].1))
    }
}

/// The network seen from one pod.
pub(crate) struct PodNetwork {
    pub cluster: Arc<Cluster>,
    pub namespace: String,
    pub pod_ip: String,
    pub hostname: String,
    /// IPs of this kubelet's pods (a connection to one with nothing listening is refused).
    pub known_ip: Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

/// Where a connection lands.
enum Landing {
    /// A server of this process.
    Here(Arc<dyn Server>),
    /// `ip:port` on the node of the kubelet at `peer`.
    Peer {
        peer: SocketAddr,
        ip: String,
        port: u16,
    },
}

impl PodNetwork {
    fn land(&self, ip: &str, port: u16) -> Result<Landing, NetError> {
        let ip = if ip == "127.0.0.1" || ip == "localhost" {
            self.pod_ip.as_str()
        } else {
            ip
        };
        let (ip, port) = self.cluster.route(ip, port)?;
        let ours = |ip: &str| ip == self.pod_ip || (self.known_ip)(ip);
        match self.cluster.local(&ip, port, ours) {
            Err(NetError::TimedOut) => match self.cluster.peer(&ip) {
                Some(peer) => Ok(Landing::Peer { peer, ip, port }),
                None => Err(NetError::TimedOut),
            },
            other => other.map(Landing::Here),
        }
    }
}

impl Network for PodNetwork {
    fn dns_server(&self) -> String {
        self.cluster.dns_ip.clone()
    }

    fn resolve(&self, name: &str) -> Option<Resolved> {
        let name = name.trim_end_matches('.');
        if name == "localhost" {
            return Some(Resolved {
                name: name.into(),
                ips: vec!["127.0.0.1".into()],
            });
        }
        if name == self.hostname {
            return Some(Resolved {
                name: name.into(),
                ips: vec![self.pod_ip.clone()],
            });
        }
        if name.parse::<std::net::Ipv4Addr>().is_ok() {
            return Some(Resolved {
                name: name.into(),
                ips: vec![name.into()],
            });
        }
        let mut candidates: Vec<String> = self
            .cluster
            .search(&self.namespace)
            .into_iter()
            .map(|d| format!("{name}.{d}"))
            .collect();
        candidates.push(name.to_string());
        candidates.into_iter().find_map(|fqdn| {
            self.cluster
                .lookup(&fqdn)
                .map(|ips| Resolved { name: fqdn, ips })
        })
    }

    fn reverse(&self, ip: &str) -> Option<String> {
        self.cluster.reverse(ip)
    }

    fn connect(&self, ip: &str, port: u16) -> Result<(), NetError> {
        match self.land(ip, port)? {
            Landing::Here(_) => Ok(()),
            Landing::Peer { peer, ip, port } => self.cluster.peers.connect(peer, &ip, port),
        }
    }

    fn http(&self, ip: &str, port: u16, req: &HttpRequest) -> Result<HttpResponse, NetError> {
        let landing = self.land(ip, port)?;
        let mut req = req.clone();
        if req.remote_ip.is_empty() {
            req.remote_ip = self.pod_ip.clone();
        }
        match landing {
            Landing::Here(server) => Ok(server.http(&req, self.cluster.clock.now())),
            Landing::Peer { peer, ip, port } => self.cluster.peers.http(peer, &ip, port, &req),
        }
    }

    fn grpc_health(&self, ip: &str, port: u16, service: &str) -> Result<bool, NetError> {
        match self.land(ip, port)? {
            Landing::Here(server) => server.grpc_health(service).ok_or(NetError::Refused),
            Landing::Peer { peer, ip, port } => {
                self.cluster.peers.grpc_health(peer, &ip, port, service)
            }
        }
    }
}

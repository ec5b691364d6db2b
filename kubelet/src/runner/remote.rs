//! The wire of the simulated network between kubelet processes. A pod IP that none of this
//! process's pods hold belongs to the node whose podCIDR (or InternalIP, for hostNetwork pods)
//! contains it; that node's kubelet is asked at the address its Node publishes
//! (`kubelet.tinykube.io/address`, always loopback) with `POST /simnet/{http,connect,grpc}`, and
//! answers from its own listeners ([`crate::streaming::simnet`]). The JSON here mirrors the
//! runtime's [`HttpRequest`] and [`HttpResponse`], which stay free of serde.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1::Node;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tinykube_runtime::{HttpRequest, HttpResponse, NetError};
use tokio::runtime::{Handle, RuntimeFlavor};

use crate::ipam::cidr_contains;
use crate::node::ADDRESS_ANNOTATION;

/// How long a peer kubelet has to answer before the connection counts as timed out.
pub(crate) const PEER_TIMEOUT: Duration = Duration::from_secs(2);

/// `POST /simnet/connect`'s body (and the target of the other two).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub ip: String,
    pub port: u16,
}

/// `POST /simnet/http`'s body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpCall {
    pub ip: String,
    pub port: u16,
    pub request: WireRequest,
}

/// `POST /simnet/grpc`'s body: a health check of `service` (may be empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrpcCall {
    pub ip: String,
    pub port: u16,
    pub service: String,
}

/// [`HttpRequest`] as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireRequest {
    pub method: String,
    pub path: String,
    pub host: String,
    pub headers: Vec<(String, String)>,
    pub remote_ip: String,
    pub user_agent: String,
}

impl From<&HttpRequest> for WireRequest {
    fn from(r: &HttpRequest) -> Self {
        WireRequest {
            method: r.method.clone(),
            path: r.path.clone(),
            host: r.host.clone(),
            headers: r.headers.clone(),
            remote_ip: r.remote_ip.clone(),
            user_agent: r.user_agent.clone(),
        }
    }
}

impl From<WireRequest> for HttpRequest {
    fn from(r: WireRequest) -> Self {
        HttpRequest {
            method: r.method,
            path: r.path,
            host: r.host,
            headers: r.headers,
            remote_ip: r.remote_ip,
            user_agent: r.user_agent,
        }
    }
}

/// [`HttpResponse`] as JSON, the body in base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body_base64: String,
}

impl From<HttpResponse> for WireResponse {
    fn from(r: HttpResponse) -> Self {
        WireResponse {
            status: r.status,
            headers: r.headers,
            body_base64: base64::engine::general_purpose::STANDARD.encode(&r.body),
        }
    }
}

impl WireResponse {
    /// Back to a response; an undecodable body counts as a broken connection.
    fn into_response(self) -> Result<HttpResponse, NetError> {
        let body = base64::engine::general_purpose::STANDARD
            .decode(&self.body_base64)
            .map_err(|_| NetError::TimedOut)?;
        Ok(HttpResponse {
            status: self.status,
            headers: self.headers,
            body,
        })
    }
}

/// A peer's answer: `{"ok": …}`, `"refused"` or `"timedout"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answer<T> {
    Ok(T),
    Refused,
    TimedOut,
}

impl<T> From<Result<T, NetError>> for Answer<T> {
    fn from(r: Result<T, NetError>) -> Self {
        match r {
            Ok(v) => Answer::Ok(v),
            Err(NetError::Refused) => Answer::Refused,
            // A name never travels: only addresses are sent.
            Err(NetError::TimedOut | NetError::BadAddress(_)) => Answer::TimedOut,
        }
    }
}

impl<T> Answer<T> {
    fn into_result(self) -> Result<T, NetError> {
        match self {
            Answer::Ok(v) => Ok(v),
            Answer::Refused => Err(NetError::Refused),
            Answer::TimedOut => Err(NetError::TimedOut),
        }
    }
}

/// The kubelet endpoint of the node (not one of `own`) whose pods or host hold `ip`: its
/// podCIDRs, or its InternalIP (hostNetwork pods). Only a loopback address is ever returned.
pub(crate) fn peer_of<'a>(
    nodes: impl IntoIterator<Item = &'a Node>,
    own: impl Fn(&str) -> bool,
    ip: &str,
) -> Option<SocketAddr> {
    nodes.into_iter().find_map(|n| {
        let name = n.metadata.name.as_deref().unwrap_or("");
        if own(name) {
            return None;
        }
        let spec = n.spec.as_ref();
        let in_range = spec
            .and_then(|s| s.pod_cidrs.clone())
            .into_iter()
            .flatten()
            .chain(spec.and_then(|s| s.pod_cidr.clone()))
            .any(|c| cidr_contains(&c, ip));
        let is_host = n
            .status
            .as_ref()
            .and_then(|s| s.addresses.as_ref())
            .into_iter()
            .flatten()
            .any(|a| a.type_ == "InternalIP" && a.address == ip);
        if !in_range && !is_host {
            return None;
        }
        let addr: SocketAddr = n
            .metadata
            .annotations
            .as_ref()?
            .get(ADDRESS_ANNOTATION)?
            .parse()
            .ok()?;
        addr.ip().is_loopback().then_some(addr)
    })
}

/// The client side of the wire.
pub(crate) struct Peers {
    http: reqwest::Client,
}

impl Peers {
    pub fn new() -> Peers {
        let http = reqwest::Client::builder()
            // Loopback only, never through a proxy of the environment.
            .no_proxy()
            .timeout(PEER_TIMEOUT)
            .connect_timeout(PEER_TIMEOUT)
            .build()
            .unwrap_or_default();
        Peers { http }
    }

    /// Ask the kubelet at `peer`; an unreachable or silent peer is a timed-out connection.
    fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        peer: SocketAddr,
        path: &str,
        body: &B,
    ) -> Result<T, NetError> {
        let request = self.http.post(format!("http://{peer}{path}")).json(body);
        let answered = block_on(async move {
            let resp = request.send().await?.error_for_status()?;
            resp.json::<Answer<T>>().await
        });
        match answered {
            Some(Ok(a)) => a.into_result(),
            Some(Err(e)) => {
                tracing::debug!(%peer, path, error = %e, "peer kubelet did not answer");
                Err(NetError::TimedOut)
            }
            None => Err(NetError::TimedOut),
        }
    }

    pub fn connect(&self, peer: SocketAddr, ip: &str, port: u16) -> Result<(), NetError> {
        let body = Target {
            ip: ip.into(),
            port,
        };
        self.call(peer, "/simnet/connect", &body)
    }

    pub fn http(
        &self,
        peer: SocketAddr,
        ip: &str,
        port: u16,
        req: &HttpRequest,
    ) -> Result<HttpResponse, NetError> {
        let body = HttpCall {
            ip: ip.into(),
            port,
            request: req.into(),
        };
        self.call::<_, WireResponse>(peer, "/simnet/http", &body)?
            .into_response()
    }

    pub fn grpc_health(
        &self,
        peer: SocketAddr,
        ip: &str,
        port: u16,
        service: &str,
    ) -> Result<bool, NetError> {
        let body = GrpcCall {
            ip: ip.into(),
            port,
            service: service.into(),
        };
        self.call(peer, "/simnet/grpc", &body)
    }
}

/// Run `fut` to completion from synchronous code called inside a task (the [`Network`] trait
/// is synchronous): the worker thread hands its other tasks over while it waits. `None` outside
/// a multi-thread runtime, where waiting would stall every task.
///
/// [`Network`]: tinykube_runtime::Network
fn block_on<F: Future>(fut: F) -> Option<F::Output> {
    let handle = Handle::try_current().ok()?;
    if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
        tracing::debug!("no multi-thread runtime: a peer kubelet cannot be asked");
        return None;
    }
    Some(tokio::task::block_in_place(|| handle.block_on(fut)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeAddress, NodeSpec, NodeStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    fn node(name: &str, cidr: &str, ip: &str, address: Option<&str>) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                annotations: address
                    .map(|a| [(ADDRESS_ANNOTATION.to_string(), a.to_string())].into()),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                pod_cidr: Some(cidr.into()),
                pod_cidrs: Some(vec![cidr.into()]),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                addresses: Some(vec![NodeAddress {
                    type_: "InternalIP".into(),
                    address: ip.into(),
                }]),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn the_peer_is_the_node_holding_the_ip() {
        let nodes = [
            node(
                "worker0",
                "10.244.1.0/24",
                "192.168.10.10",
                Some("127.0.0.1:1000"),
            ),
            node(
                "worker1",
                "10.244.2.0/24",
                "192.168.10.11",
                Some("127.0.0.1:1001"),
            ),
            node(
                "far",
                "10.244.3.0/24",
                "192.168.10.12",
                Some("192.168.10.12:10250"),
            ),
            node("silent", "10.244.4.0/24", "192.168.10.13", None),
        ];
        let own = |n: &str| n == "worker0";
        let cases = [
            ("10.244.2.7", Some("127.0.0.1:1001")),
            ("192.168.10.11", Some("127.0.0.1:1001")),
            // Our own node: never asked.
            ("10.244.1.7", None),
            ("192.168.10.10", None),
            // A non-loopback endpoint is never dialled; no endpoint, nobody to ask.
            ("10.244.3.7", None),
            ("10.244.4.7", None),
            ("10.9.9.9", None),
        ];
        for (ip, want) in cases {
            let got = peer_of(&nodes, own, ip);
            assert_eq!(got, want.map(|a| a.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn the_json_mirrors_the_runtime_types() {
        let req = HttpRequest {
            method: "GET".into(),
            path: "/x?y=1".into(),
            host: "web".into(),
            headers: vec![("Accept".into(), "*/*".into())],
            remote_ip: "10.244.1.2".into(),
            user_agent: "Wget".into(),
        };
        let call = HttpCall {
            ip: "10.244.2.2".into(),
            port: 80,
            request: (&req).into(),
        };
        let v = serde_json::to_value(&call).unwrap();
        assert_eq!(v["request"]["remote_ip"], "10.244.1.2");
        assert_eq!(v["request"]["headers"], json!([["Accept", "*/*"]]));
        let back: HttpCall = serde_json::from_value(v).unwrap();
        assert_eq!(HttpRequest::from(back.request), req);

        let resp = HttpResponse::new(200, "text/html", "<h1>hi</h1>");
        let answer: Answer<WireResponse> = Ok(resp.clone().into()).into();
        let v = serde_json::to_value(&answer).unwrap();
        assert_eq!(v["ok"]["body_base64"], "PGgxPmhpPC9oMT4=");
        let back: Answer<WireResponse> = serde_json::from_value(v).unwrap();
        let Answer::Ok(w) = back else {
            panic!("an answer")
        };
        assert_eq!(w.into_response(), Ok(resp));

        let cases = [
            (Err(NetError::Refused), json!("refused")),
            (Err(NetError::TimedOut), json!("timedout")),
            (Ok(()), json!({"ok": null})),
        ];
        for (r, want) in cases {
            let a: Answer<()> = r.clone().into();
            assert_eq!(serde_json::to_value(&a).unwrap(), want);
            let back: Answer<()> = serde_json::from_value(want).unwrap();
            assert_eq!(back.into_result(), r);
        }
    }
}

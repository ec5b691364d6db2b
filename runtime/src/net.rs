//! The network as a container sees it, through the [`Network`] the kubelet implements from
//! what the API holds (Services, their ready endpoints, pod IPs), and the [`Server`]s that
//! containers start with [`crate::Host::listen`]. Requests are answered in memory: an HTTP GET
//! reaches the server listening on the target IP and port and gets that server's answer.

use std::time::SystemTime;

/// An HTTP request as the probes and `wget` make it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: String,
    /// Path with its query (`/healthz`, `/hostname?x=1`).
    pub path: String,
    /// Host header value.
    pub host: String,
    pub headers: Vec<(String, String)>,
    /// The client's IP (servers log it).
    pub remote_ip: String,
    /// The client's User-Agent (`kube-probe/1.32`, `Wget`).
    pub user_agent: String,
}

/// An HTTP answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The reason phrase of its status (`Not Found`), as servers write it on the status line.
    pub fn reason(&self) -> &'static str {
        match self.status {
            200 => "OK",
            201 => "Created",
            204 => "No Content",
            301 => "Moved Permanently",
            302 => "Found",
            304 => "Not Modified",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            500 => "Internal Server Error",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            504 => "Gateway Timeout",
            505 => "HTTP Version Not Supported",
            _ => "",
        }
    }

    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> HttpResponse {
        HttpResponse {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
        }
    }
}

/// Why a connection failed, worded as the C library says it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// Nothing listens there (or a Service without ready endpoints).
    #[error("Connection refused")]
    Refused,
    /// An address nothing answers for.
    #[error("Connection timed out")]
    TimedOut,
    /// A name that does not resolve.
    #[error("bad address '{0}'")]
    BadAddress(String),
}

/// One answer of the cluster DNS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The fully qualified name that answered (`myservice.default.svc.cluster.local`).
    pub name: String,
    pub ips: Vec<String>,
}

/// The cluster's network seen from one pod.
pub trait Network: Send + Sync {
    /// The cluster DNS server's address (`nslookup` prints it).
    fn dns_server(&self) -> String;
    /// Resolve `name` as the pod's resolver does (its search domains, then as given).
    fn resolve(&self, name: &str) -> Option<Resolved>;
    /// The name the cluster DNS gives `ip` (its PTR record), if any: busybox 1.28's `nslookup`
    /// prints it after each address.
    fn reverse(&self, _ip: &str) -> Option<String> {
        None
    }
    /// Open a TCP connection to `ip:port` (a tcpSocket probe, `nc -z`).
    fn connect(&self, ip: &str, port: u16) -> Result<(), NetError>;
    /// Send an HTTP request to `ip:port` (through a Service's ready endpoints when `ip` is a
    /// ClusterIP) and get the answer of the server there.
    fn http(&self, ip: &str, port: u16, req: &HttpRequest) -> Result<HttpResponse, NetError>;
    /// A gRPC health check of `ip:port` (`service` may be empty): `Some(serving)` when a server
    /// that speaks the health protocol is there.
    fn grpc_health(&self, ip: &str, port: u16, service: &str) -> Result<bool, NetError>;
}

/// Something listening on a container port.
pub trait Server: Send + Sync {
    /// Answer an HTTP request received at `now`.
    fn http(&self, req: &HttpRequest, now: SystemTime) -> HttpResponse;
    /// Whether it answers gRPC health checks, and with what (`None`: it does not speak gRPC).
    fn grpc_health(&self, _service: &str) -> Option<bool> {
        None
    }
}

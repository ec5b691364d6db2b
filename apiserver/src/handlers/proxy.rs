//! `pods/log`, `pods/exec`, `pods/attach` and `pods/portforward`: checked as upstream's pod
//! registry checks them (LogLocation, ExecLocation, AttachLocation, PortForwardLocation: the
//! container, the node, the options), then
//! proxied to the kubelet of the pod's node at the address its Node publishes in the
//! `kubelet.tinykube.io/address` annotation. Logs stream the kubelet's body through; exec and
//! attach forward the client's upgrade request, relay the kubelet's `101 Switching Protocols`
//! and then copy bytes both ways, as upstream's upgrade-aware proxy (so every channel protocol
//! the kubelet speaks works, untouched here). A node's simulated InternalIP is never dialled.

use std::net::SocketAddr;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tinykube_proto::registry;

use super::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::registry::field::FieldError;

/// The Node annotation a kubelet publishes its reachable endpoint in.
pub const ADDRESS_ANNOTATION: &str = "kubelet.tinykube.io/address";

/// Upstream's kubelet port, named in messages about a node that publishes no address.
const DEFAULT_KUBELET_PORT: i64 = 10250;

/// Which connect subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connect {
    Exec,
    Attach,
    /// `kubectl port-forward`: no container; the ports travel in the streams' headers.
    PortForward,
}

impl Connect {
    fn path(self) -> &'static str {
        match self {
            Connect::Exec => "exec",
            Connect::Attach => "attach",
            Connect::PortForward => "portForward",
        }
    }
}

/// A boolean query value as apimachinery converts it: `0` and `false` (any case) are false,
/// anything else present is true.
fn flag(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

fn pairs(raw: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(raw.unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn int(v: &str) -> ApiResult<i64> {
    v.parse().map_err(|_| {
        ApiError::BadRequest(format!("strconv.ParseInt: parsing {v:?}: invalid syntax"))
    })
}

/// A PodLogOptions read from a query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOptions {
    pub container: Option<String>,
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub tail_lines: Option<i64>,
    pub since_seconds: Option<i64>,
    pub since_time: Option<String>,
    pub limit_bytes: Option<i64>,
    pub stream: Option<String>,
}

impl LogOptions {
    pub fn parse(raw: Option<&str>) -> ApiResult<LogOptions> {
        let mut o = LogOptions::default();
        for (k, v) in pairs(raw) {
            match k.as_str() {
                "container" => o.container = Some(v).filter(|c| !c.is_empty()),
                "follow" => o.follow = flag(&v),
                "previous" => o.previous = flag(&v),
                "timestamps" => o.timestamps = flag(&v),
                "tailLines" => o.tail_lines = Some(int(&v)?),
                "sinceSeconds" => o.since_seconds = Some(int(&v)?),
                "limitBytes" => o.limit_bytes = Some(int(&v)?),
                "sinceTime" => {
                    if v.parse::<k8s_openapi::jiff::Timestamp>().is_err() {
                        return Err(ApiError::BadRequest(format!(
                            "parsing time {v:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {v:?} as RFC 3339"
                        )));
                    }
                    o.since_time = Some(v);
                }
                "stream" => o.stream = Some(v),
                _ => {}
            }
        }
        Ok(o)
    }

    /// Upstream's ValidatePodLogOptions.
    pub fn validate(&self) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Some(n) = self.tail_lines.filter(|n| *n < 0) {
            errs.push(FieldError::invalid(
                "tailLines",
                n,
                "must be greater than or equal to 0",
            ));
        }
        if let Some(n) = self.limit_bytes.filter(|n| *n < 1) {
            errs.push(FieldError::invalid(
                "limitBytes",
                n,
                "must be greater than 0",
            ));
        }
        match (self.since_seconds, &self.since_time) {
            (Some(_), Some(_)) => errs.push(FieldError::forbidden(
                "",
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            )),
            (Some(n), None) if n < 1 => errs.push(FieldError::invalid(
                "sinceSeconds",
                n,
                "must be greater than 0",
            )),
            _ => {}
        }
        if let Some(s) = self.stream.as_deref() {
            if !matches!(s, "All" | "Stdout" | "Stderr") {
                errs.push(FieldError::not_supported(
                    "stream",
                    s,
                    &["All", "Stderr", "Stdout"],
                ));
            }
        }
        errs
    }

    /// The kubelet's query, as upstream's LogLocation writes it.
    pub fn kubelet_query(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (on, name) in [
            (self.follow, "follow"),
            (self.previous, "previous"),
            (self.timestamps, "timestamps"),
        ] {
            if on {
                q.append_pair(name, "true");
            }
        }
        for (value, name) in [
            (self.since_seconds, "sinceSeconds"),
            (self.tail_lines, "tailLines"),
            (self.limit_bytes, "limitBytes"),
        ] {
            if let Some(v) = value {
                q.append_pair(name, &v.to_string());
            }
        }
        if let Some(t) = &self.since_time {
            q.append_pair("sinceTime", t);
        }
        if let Some(s) = &self.stream {
            q.append_pair("stream", s);
        }
        q.finish()
    }
}

/// A PodExecOptions or PodAttachOptions read from a query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamOptions {
    pub container: Option<String>,
    pub command: Vec<String>,
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
}

impl StreamOptions {
    pub fn parse(raw: Option<&str>) -> StreamOptions {
        let mut o = StreamOptions::default();
        for (k, v) in pairs(raw) {
            match k.as_str() {
                "container" => o.container = Some(v).filter(|c| !c.is_empty()),
                "command" => o.command.push(v),
                "stdin" => o.stdin = flag(&v),
                "stdout" => o.stdout = flag(&v),
                "stderr" => o.stderr = flag(&v),
                "tty" => o.tty = flag(&v),
                _ => {}
            }
        }
        o
    }

    /// The kubelet's query (upstream's streamParams: `1` for each stream asked).
    pub fn kubelet_query(&self, kind: Connect) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (on, name) in [
            (self.stdin, "stdin"),
            (self.stdout, "stdout"),
            (self.stderr, "stderr"),
            (self.tty, "tty"),
        ] {
            if on {
                q.append_pair(name, "1");
            }
        }
        if kind == Connect::Exec {
            for c in &self.command {
                q.append_pair("command", c);
            }
        }
        q.finish()
    }
}

/// Every container of a pod, as upstream visits them: init, regular, ephemeral.
fn container_names(pod: &Value) -> Vec<String> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| pod["spec"][k].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect()
}

/// Upstream's validateContainer: the container named, or the only one.
pub fn choose_container(pod: &Value, name: &str, asked: Option<&str>) -> ApiResult<String> {
    match asked {
        Some(c) => {
            if container_names(pod).iter().any(|n| n == c) {
                Ok(c.to_string())
            } else {
                Err(ApiError::BadRequest(format!(
                    "container {c} is not valid for pod {name}"
                )))
            }
        }
        None => {
            let regular = pod["spec"]["containers"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            match regular.as_slice() {
                [one] => Ok(one["name"].as_str().unwrap_or("").to_string()),
                [] => Err(ApiError::BadRequest(format!(
                    "a container name must be specified for pod {name}"
                ))),
                _ => Err(ApiError::BadRequest(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    container_names(pod).join(" ")
                ))),
            }
        }
    }
}

/// Where a node's kubelet is reached, or the error upstream gives when it cannot be:
/// `Err(message)` names the address upstream would have dialled.
pub(super) fn kubelet_of(node: &Value) -> Result<SocketAddr, String> {
    let published = node["metadata"]["annotations"][ADDRESS_ANNOTATION]
        .as_str()
        .and_then(|a| a.parse::<SocketAddr>().ok());
    if let Some(addr) = published {
        return Ok(addr);
    }
    let ip = node["status"]["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["type"] == "InternalIP")
        .and_then(|a| a["address"].as_str())
        .unwrap_or("");
    let port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
        .as_i64()
        .unwrap_or(DEFAULT_KUBELET_PORT);
    Err(format!(
        "dial tcp {ip}:{port}: connect: no route to host (node {:?} publishes no {ADDRESS_ANNOTATION} annotation)",
        node["metadata"]["name"].as_str().unwrap_or("")
    ))
}

/// An I/O error worded as Go's net package words it.
pub(super) fn go_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        std::io::ErrorKind::ConnectionReset => "connection reset by peer".into(),
        std::io::ErrorKind::TimedOut => "i/o timeout".into(),
        _ => e.to_string(),
    }
}

/// The pod, its container, and its node's object (`None`: the pod is not bound).
fn locate(ctx: &Ctx, container: Option<&str>) -> ApiResult<(String, Option<Value>)> {
    let name = ctx.target.name.as_deref().unwrap_or("");
    let pod = the_pod(ctx)?;
    let container = choose_container(&pod, name, container)?;
    Ok((container, node_of(ctx, &pod)?))
}

fn the_pod(ctx: &Ctx) -> ApiResult<Value> {
    let pods = registry::builtin("", "v1", "pods").expect("pods are served");
    let name = ctx.target.name.as_deref().unwrap_or("");
    ctx.state
        .objects
        .get(pods, ctx.target.namespace.as_deref(), name)
}

/// The object of the node `pod` is bound to (`None`: not bound yet).
fn node_of(ctx: &Ctx, pod: &Value) -> ApiResult<Option<Value>> {
    let nodes = registry::builtin("", "v1", "nodes").expect("nodes are served");
    let node_name = pod["spec"]["nodeName"].as_str().unwrap_or("");
    if node_name.is_empty() {
        return Ok(None);
    }
    Ok(Some(ctx.state.objects.get(nodes, None, node_name)?))
}

/// Send one request to a kubelet over a fresh connection (upgrades allowed).
pub(super) async fn send(
    addr: SocketAddr,
    req: Request<Body>,
) -> Result<hyper::Response<hyper::body::Incoming>, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("dial tcp {addr}: connect: {}", go_error(&e)))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = conn.with_upgrades().await {
            tracing::debug!(error = %e, "kubelet connection ended");
        }
    });
    sender.send_request(req).await.map_err(|e| e.to_string())
}

/// A `Status` answer with a reason the shared error type does not have.
fn status(code: StatusCode, reason: &str, message: &str, details: Option<Value>) -> Response {
    let mut s = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "code": code.as_u16()});
    if !reason.is_empty() {
        s["reason"] = json!(reason);
    }
    if let Some(d) = details {
        s["details"] = d;
    }
    super::json_response(code, &s, false)
}

/// A kubelet's error answer to a log request, as upstream's generic response checker turns it
/// into a Status.
async fn log_failure(resp: hyper::Response<hyper::body::Incoming>, name: &str) -> Response {
    use http_body_util_lite::collect;
    let code = resp.status();
    let text = collect(resp.into_body(), 64 * 1024).await;
    let text = text.trim_end_matches('\n');
    match code {
        StatusCode::INTERNAL_SERVER_ERROR => ApiError::Internal(text.to_string()).into_response(),
        StatusCode::BAD_REQUEST => ApiError::BadRequest(text.to_string()).into_response(),
        StatusCode::NOT_FOUND => status(
            code,
            "NotFound",
            &format!("the server could not find the requested resource ( pods/log {name})"),
            Some(json!({"name": name, "kind": "pods/log",
                "causes": [{"reason": "UnexpectedServerResponse", "message": text}]})),
        ),
        _ => status(
            code,
            "",
            &format!(
                "the server responded with the status code {} but did not return more information ( pods/log {name})",
                code.as_u16()
            ),
            Some(json!({"name": name, "kind": "pods/log",
                "causes": [{"reason": "UnexpectedServerResponse", "message": text}]})),
        ),
    }
}

/// Read a body up to `limit` bytes, lossily as text.
mod http_body_util_lite {
    use hyper::body::{Body as _, Incoming};

    pub async fn collect(mut body: Incoming, limit: usize) -> String {
        let mut buf = Vec::new();
        while let Some(frame) =
            std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
        {
            let Ok(frame) = frame else { break };
            if let Ok(data) = frame.into_data() {
                buf.extend_from_slice(&data);
                if buf.len() >= limit {
                    buf.truncate(limit);
                    break;
                }
            }
        }
        String::from_utf8_lossy(&buf).into_owned()
    }
}

/// `GET …/pods/NAME/log`.
pub async fn log(ctx: Ctx) -> ApiResult<Response> {
    let name = ctx.target.name.clone().unwrap_or_default();
    let opts = LogOptions::parse(ctx.raw_query.as_deref())?;
    let errs = opts.validate();
    if !errs.is_empty() {
        return Err(ApiError::Invalid {
            kind: "PodLogOptions".into(),
            group: String::new(),
            name,
            errors: errs,
        });
    }
    let (container, node) = locate(&ctx, opts.container.as_deref())?;
    let Some(node) = node else {
        // Upstream streams nothing for a pod not yet on a node.
        return Ok((StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], "").into_response());
    };
    let namespace = ctx.target.namespace.clone().unwrap_or_default();
    let path = format!("/containerLogs/{namespace}/{name}/{container}");
    let query = opts.kubelet_query();
    let uri = if query.is_empty() {
        path.clone()
    } else {
        format!("{path}?{query}")
    };
    let addr = kubelet_of(&node).map_err(|e| unreachable(&node, &path, &e))?;
    let req = Request::builder()
        .method(Method::GET)
        .uri(&uri)
        .header(header::HOST, addr.to_string())
        .body(Body::empty())
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let resp = send(addr, req).await.map_err(|e| ApiError::Failure {
        code: StatusCode::INTERNAL_SERVER_ERROR,
        message: format!("Get \"http://{addr}{uri}\": {e}"),
    })?;
    if !resp.status().is_success() {
        return Ok(log_failure(resp, &name).await);
    }
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or(HeaderValue::from_static("text/plain"));
    let mut out = Response::new(Body::new(resp.into_body()));
    out.headers_mut().insert(header::CONTENT_TYPE, content_type);
    Ok(out)
}

/// The answer about a node whose kubelet cannot be reached: as upstream's, a 500 naming the
/// kubelet URL it would have dialled.
fn unreachable(node: &Value, path: &str, why: &str) -> ApiError {
    let ip = why
        .strip_prefix("dial tcp ")
        .and_then(|r| r.split(':').next())
        .unwrap_or("");
    let port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
        .as_i64()
        .unwrap_or(DEFAULT_KUBELET_PORT);
    ApiError::Failure {
        code: StatusCode::INTERNAL_SERVER_ERROR,
        message: format!("Get \"https://{ip}:{port}{path}\": {why}"),
    }
}

/// Hop-by-hop and upgrade headers forwarded to the kubelet with an upgrade request: WebSocket's
/// handshake, and the stream protocol versions a SPDY client offers.
const FORWARDED: &[&str] = &[
    "connection",
    "upgrade",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "x-stream-protocol-version",
];

fn is_upgrade(headers: &HeaderMap) -> bool {
    let has = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .unwrap_or("")
                .split(',')
                .any(|t| t.trim().eq_ignore_ascii_case(token))
        })
    };
    has(header::CONNECTION, "upgrade") && headers.contains_key(header::UPGRADE)
}

/// `GET|POST …/pods/NAME/exec`, `…/attach` and `…/portforward`.
pub async fn connect(mut ctx: Ctx, method: Method, kind: Connect) -> ApiResult<Response> {
    let upgrade: Option<OnUpgrade> = ctx.upgrade.take();
    let opts = StreamOptions::parse(ctx.raw_query.as_deref());
    let name = ctx.target.name.clone().unwrap_or_default();
    let (container, node) = match kind {
        Connect::PortForward => (String::new(), node_of(&ctx, &the_pod(&ctx)?)?),
        _ => locate(&ctx, opts.container.as_deref())?,
    };
    let Some(node) = node else {
        return Err(ApiError::BadRequest(format!(
            "pod {name} does not have a host assigned"
        )));
    };
    if !is_upgrade(&ctx.headers) {
        return Err(ApiError::BadRequest("Upgrade request required".into()));
    }
    let namespace = ctx.target.namespace.clone().unwrap_or_default();
    let uri = match kind {
        // The ports are the client's (`ports=8080`), passed on as upstream's location does.
        Connect::PortForward => format!(
            "/{}/{namespace}/{name}?{}",
            kind.path(),
            ctx.raw_query.as_deref().unwrap_or("")
        ),
        _ => format!(
            "/{}/{namespace}/{name}/{container}?{}",
            kind.path(),
            opts.kubelet_query(kind)
        ),
    };
    let addr = kubelet_of(&node).map_err(|e| ApiError::Failure {
        code: StatusCode::INTERNAL_SERVER_ERROR,
        message: format!("error dialing backend: {e}"),
    })?;
    let mut req = Request::builder()
        .method(method)
        .uri(&uri)
        .header(header::HOST, addr.to_string());
    for h in FORWARDED {
        for v in ctx.headers.get_all(*h) {
            req = req.header(*h, v);
        }
    }
    let req = req
        .body(Body::empty())
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut backend = send(addr, req).await.map_err(|e| ApiError::Failure {
        code: StatusCode::INTERNAL_SERVER_ERROR,
        message: format!("error dialing backend: {e}"),
    })?;
    if backend.status() != StatusCode::SWITCHING_PROTOCOLS {
        // The kubelet refused: its answer goes to the client as it is.
        return Ok(backend.map(Body::new));
    }
    let Some(client_side) = upgrade else {
        return Err(ApiError::Internal(
            "the connection cannot be upgraded".into(),
        ));
    };
    let mut out = Response::builder().status(StatusCode::SWITCHING_PROTOCOLS);
    for (k, v) in backend.headers() {
        out = out.header(k, v);
    }
    let kubelet_side = hyper::upgrade::on(&mut backend);
    tokio::spawn(async move {
        let (Ok(client), Ok(kubelet)) = (client_side.await, kubelet_side.await) else {
            return;
        };
        let mut client = TokioIo::new(client);
        let mut kubelet = TokioIo::new(kubelet);
        if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut kubelet).await {
            tracing::debug!(error = %e, "exec/attach stream ended");
        }
    });
    out.body(Body::empty())
        .map_err(|e| ApiError::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(init: &[&str], containers: &[&str]) -> Value {
        let list =
            |names: &[&str]| -> Vec<Value> { names.iter().map(|n| json!({"name": n})).collect() };
        json!({"spec": {"initContainers": list(init), "containers": list(containers)}})
    }

    #[test]
    fn chooses_containers() {
        let cases: &[(Value, Option<&str>, Result<&str, &str>)] = &[
            (pod(&[], &["app"]), None, Ok("app")),
            (pod(&["init"], &["app"]), None, Ok("app")),
            (pod(&["init"], &["app"]), Some("init"), Ok("init")),
            (
                pod(&[], &["a", "b"]),
                None,
                Err("a container name must be specified for pod p, choose one of: [a b]"),
            ),
            (
                pod(&["i"], &["a", "b"]),
                None,
                Err("a container name must be specified for pod p, choose one of: [i a b]"),
            ),
            (
                pod(&[], &["a"]),
                Some("nope"),
                Err("container nope is not valid for pod p"),
            ),
            (
                pod(&[], &[]),
                None,
                Err("a container name must be specified for pod p"),
            ),
        ];
        for (pod, asked, want) in cases {
            let got = choose_container(pod, "p", *asked).map_err(|e| e.to_string());
            assert_eq!(
                got,
                want.map(String::from).map_err(String::from),
                "{asked:?}"
            );
        }
    }

    #[test]
    fn log_options() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("", "", &[]),
            (
                "container=c&follow=true&tailLines=5",
                "follow=true&tailLines=5",
                &[],
            ),
            (
                "previous=1&timestamps=&limitBytes=10&sinceSeconds=3",
                "previous=true&timestamps=true&sinceSeconds=3&limitBytes=10",
                &[],
            ),
            ("follow=false&previous=0", "", &[]),
            (
                "tailLines=-1",
                "tailLines=-1",
                &["tailLines: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (
                "limitBytes=0&sinceSeconds=0",
                "sinceSeconds=0&limitBytes=0",
                &[
                    "limitBytes: Invalid value: 0: must be greater than 0",
                    "sinceSeconds: Invalid value: 0: must be greater than 0",
                ],
            ),
            (
                "sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z",
                "sinceSeconds=5&sinceTime=2026-01-01T00%3A00%3A00Z",
                &[": Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"],
            ),
        ];
        for (raw, kubelet, errs) in cases {
            let o = LogOptions::parse(Some(raw)).unwrap();
            assert_eq!(o.kubelet_query(), *kubelet, "{raw}");
            let got: Vec<String> = o.validate().iter().map(|e| e.to_string()).collect();
            assert_eq!(got, *errs, "{raw}");
        }
        assert_eq!(
            LogOptions::parse(Some("tailLines=x"))
                .unwrap_err()
                .to_string(),
            "strconv.ParseInt: parsing \"x\": invalid syntax"
        );
        assert!(LogOptions::parse(Some("sinceTime=yesterday")).is_err());
    }

    #[test]
    fn stream_options() {
        let o = StreamOptions::parse(Some(
            "command=sh&command=-c&command=exit%203&container=c&stdin=true&stdout=true&stderr=true&tty=false",
        ));
        assert_eq!(o.container.as_deref(), Some("c"));
        assert_eq!(
            o.kubelet_query(Connect::Exec),
            "stdin=1&stdout=1&stderr=1&command=sh&command=-c&command=exit+3"
        );
        assert_eq!(
            o.kubelet_query(Connect::Attach),
            "stdin=1&stdout=1&stderr=1"
        );
    }

    #[test]
    fn kubelet_addresses() {
        let published = json!({"metadata": {"name": "w", "annotations": {ADDRESS_ANNOTATION: "127.0.0.1:4000"}}});
        assert_eq!(
            kubelet_of(&published),
            Ok("127.0.0.1:4000".parse().unwrap())
        );
        let silent = json!({"metadata": {"name": "w"}, "status": {
            "addresses": [{"type": "InternalIP", "address": "192.168.10.10"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}});
        let e = kubelet_of(&silent).unwrap_err();
        assert!(
            e.starts_with("dial tcp 192.168.10.10:10250: connect: no route to host"),
            "{e}"
        );
    }
}

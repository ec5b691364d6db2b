//! `/portForward/{namespace}/{pod}`: `kubectl port-forward`. The client speaks SPDY/3.1 with
//! the `portforward.k8s.io` protocol, either as an upgrade of its own or tunnelled in WebSocket
//! binary messages (subprotocol `SPDY/3.1+portforward.k8s.io`, kubectl's default since 1.31):
//! for each local connection it opens an `error` and a `data` stream with the same `requestid`
//! and the pod's `port`. The other end is the simulated container listening on that port in
//! the pod: its servers answer HTTP, so the data stream is read as HTTP/1.1 requests (one after
//! another on a kept-alive connection) and each gets that server's answer; nothing listening
//! is upstream's error on the error stream. The WebSocket channel protocols of the Python
//! client and kube-rs (one connection per port) are in [`channels`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tinykube_runtime::{HttpRequest, HttpResponse, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;

use super::channel;
use super::spdy::{self, header, Conn, Event, Writer};
use crate::Kubelet;

mod channels;

/// The port-forward protocol, over a SPDY upgrade.
const PROTOCOL: &str = "portforward.k8s.io";
/// The WebSocket subprotocol that tunnels it.
const TUNNEL: &str = "SPDY/3.1+portforward.k8s.io";

pub(crate) async fn port_forward(
    State(k): State<Arc<Kubelet>>,
    Path((namespace, pod)): Path<(String, String)>,
    req: Request,
) -> Response {
    if !k.has_pod(&namespace, &pod) {
        return (StatusCode::NOT_FOUND, "pod does not exist").into_response();
    }
    let (mut parts, _) = req.into_parts();
    if spdy::requested(&parts.headers) {
        let chosen = match spdy::negotiate(&parts.headers, &[PROTOCOL]) {
            Ok(c) => c,
            Err(refused) => return *refused,
        };
        let Some(on) = parts.extensions.remove::<hyper::upgrade::OnUpgrade>() else {
            return (StatusCode::BAD_REQUEST, "Upgrade request required").into_response();
        };
        tokio::spawn(async move {
            if let Ok(io) = on.await {
                let conn = Conn::start(hyper_util::rt::TokioIo::new(io));
                serve(k, namespace, pod, conn).await;
            }
        });
        return spdy::switching(chosen);
    }
    let ports = match query_ports(parts.uri.query()) {
        Ok(p) => p,
        Err(e) => return (StatusCode::BAD_REQUEST, e).into_response(),
    };
    let Ok(ws) = WebSocketUpgrade::from_request_parts(&mut parts, &()).await else {
        return (StatusCode::BAD_REQUEST, "Upgrade request required").into_response();
    };
    let ws = ws.protocols(WEBSOCKET_PROTOCOLS.iter().copied());
    let chosen = ws.selected_protocol().and_then(|p| p.to_str().ok());
    if chosen == Some(TUNNEL) {
        return ws.on_upgrade(move |socket| async move {
            let (ours, theirs) = tokio::io::duplex(64 * 1024);
            tokio::spawn(tunnel(socket, ours));
            serve(k, namespace, pod, Conn::start(theirs)).await;
        });
    }
    // The channel protocol of the Python client and kube-rs: one connection per port.
    let proto = channel::Protocol::parse(chosen).unwrap_or(channel::Protocol {
        version: 1,
        base64: false,
    });
    if ports.is_empty() {
        return (
            StatusCode::BAD_REQUEST,
            "query parameter \"port\" is required",
        )
            .into_response();
    }
    ws.on_upgrade(move |socket| channels::serve(k, namespace, pod, socket, proto, ports))
}

/// The WebSocket subprotocols served: the SPDY tunnel, then the channel protocols upstream's
/// kubelet forwards ports over (v4 and the unversioned ones; v5 is exec's).
const WEBSOCKET_PROTOCOLS: &[&str] = &[
    TUNNEL,
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "channel.k8s.io",
    "base64.channel.k8s.io",
];

/// The `ports` of the query (repeated or comma-separated), as upstream reads them.
fn query_ports(raw: Option<&str>) -> Result<Vec<u16>, String> {
    let mut ports = Vec::new();
    for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        if k != "ports" && k != "port" {
            continue;
        }
        for p in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match p.parse::<u16>() {
                Ok(n) if n > 0 => ports.push(n),
                _ => {
                    return Err(format!(
                        "unable to parse {p:?} as a port: it must be 1 to 65535"
                    ))
                }
            }
        }
    }
    Ok(ports)
}

/// Carry the SPDY bytes between WebSocket binary messages and `pipe`.
async fn tunnel(mut socket: WebSocket, mut pipe: DuplexStream) {
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        tokio::select! {
            msg = socket.recv() => match msg {
                Some(Ok(Message::Binary(b))) => {
                    if pipe.write_all(&b).await.is_err() {
                        return;
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                    let _ = pipe.shutdown().await;
                    return;
                }
                Some(Ok(_)) => {}
            },
            n = pipe.read(&mut buf) => match n {
                Ok(0) | Err(_) => {
                    let _ = socket.send(Message::Close(None)).await;
                    return;
                }
                Ok(n) => {
                    if socket.send(Message::Binary(buf[..n].to_vec().into())).await.is_err() {
                        return;
                    }
                }
            },
        }
    }
}

/// A request's two streams, as they arrive.
#[derive(Default)]
struct Pair {
    error: Option<u32>,
    data: Option<u32>,
    port: Option<String>,
}

/// Pair the streams by request and forward each pair until the client hangs up.
async fn serve(k: Arc<Kubelet>, namespace: String, pod: String, mut conn: Conn) {
    let writer = conn.writer();
    let mut pending: HashMap<String, Pair> = HashMap::new();
    let mut active: HashMap<u32, mpsc::UnboundedSender<Option<Vec<u8>>>> = HashMap::new();
    loop {
        match conn.event().await {
            Event::Opened { id, headers } => {
                let kind = header(&headers, "streamtype").unwrap_or("");
                // Clients before requestid paired the data stream with the error stream
                // opened just before it, as upstream's kubelet still accepts.
                let request = match header(&headers, "requestid") {
                    Some(r) => r.to_string(),
                    None if kind == "data" => id.saturating_sub(2).to_string(),
                    None => id.to_string(),
                };
                let pair = pending.entry(request.clone()).or_default();
                match kind {
                    "error" => pair.error = Some(id),
                    "data" => pair.data = Some(id),
                    _ => {
                        writer.end(id);
                        continue;
                    }
                }
                if let Some(p) = header(&headers, "port") {
                    pair.port = Some(p.to_string());
                }
                if let (Some(error), Some(data)) = (pair.error, pair.data) {
                    let port = pair.port.take();
                    pending.remove(&request);
                    let (tx, rx) = mpsc::unbounded_channel();
                    active.insert(data, tx);
                    let target = Target {
                        namespace: namespace.clone(),
                        pod: pod.clone(),
                        error,
                        data,
                    };
                    tokio::spawn(forward(k.clone(), target, port, writer.clone(), rx));
                }
            }
            Event::Data { id, data } => {
                if let Some(tx) = active.get(&id) {
                    let _ = tx.send(Some(data));
                }
            }
            Event::Ended(id) => {
                if let Some(tx) = active.remove(&id) {
                    let _ = tx.send(None);
                }
            }
            Event::Closed => return,
        }
    }
}

/// One forwarded connection: the pod and the pair of streams.
struct Target {
    namespace: String,
    pod: String,
    error: u32,
    data: u32,
}

/// Answer the HTTP requests read on the data stream from the server listening on `port`.
async fn forward(
    k: Arc<Kubelet>,
    t: Target,
    port: Option<String>,
    writer: Writer,
    mut rx: mpsc::UnboundedReceiver<Option<Vec<u8>>>,
) {
    let end = |message: Option<String>| {
        if let Some(m) = message {
            writer.data(t.error, m.as_bytes());
        }
        writer.end(t.data);
        writer.end(t.error);
    };
    let port = match port.as_deref().map(str::parse::<u16>) {
        Some(Ok(p)) if p > 0 => p,
        Some(_) => {
            return end(Some(format!(
                "invalid port header {:?}: it must be an integer from 1 to 65535",
                port.unwrap_or_default()
            )))
        }
        None => return end(Some("missing port header".into())),
    };
    let server = match k.pod_listener(&t.namespace, &t.pod, port) {
        Ok(s) => s,
        Err(why) => return end(Some(why)),
    };
    let mut http = Http1::default();
    while let Some(Some(bytes)) = rx.recv().await {
        http.feed(&bytes);
        loop {
            match http.next_request() {
                Parsed::More => break,
                Parsed::NotHttp => {
                    return end(Some(format!(
                        "the simulated container listening on port {port} speaks HTTP only"
                    )))
                }
                Parsed::Request { req, close, head } => {
                    let now = k.clock.now();
                    let answer = server.http(&req, now);
                    if !writer.data(t.data, &render(&answer, head, close, now)) || close {
                        return end(None);
                    }
                }
            }
        }
    }
    end(None)
}

/// What the bytes read so far hold.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Parsed {
    /// A whole request: `close` when the client asked to close after it, `head` for HEAD.
    Request {
        req: HttpRequest,
        close: bool,
        head: bool,
    },
    More,
    NotHttp,
}

/// HTTP/1.x requests read off a byte stream.
#[derive(Default)]
pub(super) struct Http1 {
    buf: Vec<u8>,
}

/// The largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;

impl Http1 {
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    pub(super) fn next_request(&mut self) -> Parsed {
        let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            let line_done = self.buf.contains(&b'\n');
            return if self.buf.len() > MAX_HEAD || (line_done && !self.first_line_ok()) {
                Parsed::NotHttp
            } else {
                Parsed::More
            };
        };
        let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let first = lines.next().unwrap_or("");
        let mut words = first.split(' ');
        let (Some(method), Some(path), Some(version)) = (words.next(), words.next(), words.next())
        else {
            return Parsed::NotHttp;
        };
        if !version.starts_with("HTTP/1.") || method.is_empty() {
            return Parsed::NotHttp;
        }
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let get = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let body = get("content-length")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0);
        if self.buf.len() < end + 4 + body {
            return Parsed::More;
        }
        let connection = get("connection").unwrap_or("").to_ascii_lowercase();
        let close = connection == "close" || (version == "HTTP/1.0" && connection != "keep-alive");
        let req = HttpRequest {
            method: method.to_string(),
            path: path.to_string(),
            host: get("host").unwrap_or("").to_string(),
            user_agent: get("user-agent").unwrap_or("").to_string(),
            // The kubelet dials the port inside the pod's network namespace: the server sees
            // the connection come from localhost.
            remote_ip: "127.0.0.1".into(),
            headers: headers.clone(),
        };
        self.buf.drain(..end + 4 + body);
        Parsed::Request {
            close,
            head: method == "HEAD",
            req,
        }
    }

    /// Whether the first line looks like a request line.
    fn first_line_ok(&self) -> bool {
        let line = self.buf.split(|b| *b == b'\n').next().unwrap_or(&[]);
        let line = String::from_utf8_lossy(line);
        line.trim_end()
            .rsplit(' ')
            .next()
            .is_some_and(|v| v.starts_with("HTTP/1."))
    }
}

/// An answer on the wire, with the headers a server adds.
pub(super) fn render(r: &HttpResponse, head: bool, close: bool, now: SystemTime) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {} {}\r\n", r.status, r.reason());
    let has = |name: &str| r.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    if !has("date") {
        let date = chrono::DateTime::<chrono::Utc>::from(now);
        out.push_str(&format!(
            "Date: {}\r\n",
            date.format("%a, %d %b %Y %H:%M:%S GMT")
        ));
    }
    for (k, v) in &r.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    if !has("content-length") {
        out.push_str(&format!("Content-Length: {}\r\n", r.body.len()));
    }
    out.push_str(if close {
        "Connection: close\r\n\r\n"
    } else {
        "Connection: keep-alive\r\n\r\n"
    });
    let mut bytes = out.into_bytes();
    if !head {
        bytes.extend_from_slice(&r.body);
    }
    bytes
}

impl Kubelet {
    /// Whether a pod `namespace/name` runs here.
    fn has_pod(&self, namespace: &str, pod: &str) -> bool {
        self.pod_address(namespace, pod).is_some()
    }

    /// What listens on `port` in pod `namespace/name`, or upstream's error when nothing does.
    fn pod_listener(
        &self,
        namespace: &str,
        pod: &str,
        port: u16,
    ) -> Result<Arc<dyn Server>, String> {
        let (ip, uid) = self
            .pod_address(namespace, pod)
            .ok_or_else(|| format!("pod {namespace}/{pod} is gone"))?;
        self.network
            .local(&ip, port, |ip| self.holds_ip(ip))
            .map_err(|_| {
                format!(
                    "error forwarding port {port} to pod {uid}, uid : failed to execute portforward in network namespace \"/var/run/netns/cni-{uid}\": failed to connect to localhost:{port} inside namespace \"{uid}\", IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused IPv6 dial tcp6 [::1]:{port}: connect: connection refused "
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, path: &str) -> HttpRequest {
        HttpRequest {
            method: method.into(),
            path: path.into(),
            host: "localhost:8080".into(),
            user_agent: "curl/8.5.0".into(),
            remote_ip: "127.0.0.1".into(),
            headers: vec![
                ("Host".into(), "localhost:8080".into()),
                ("User-Agent".into(), "curl/8.5.0".into()),
            ],
        }
    }

    #[test]
    fn requests_off_a_byte_stream() {
        let mut h = Http1::default();
        h.feed(b"GET / HTTP/1.1\r\nHost: localhost:8080\r\n");
        assert_eq!(h.next_request(), Parsed::More);
        h.feed(b"User-Agent: curl/8.5.0\r\n\r\nHEAD /x HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: curl/8.5.0\r\nConnection: close\r\n\r\n");
        assert_eq!(
            h.next_request(),
            Parsed::Request {
                req: request("GET", "/"),
                close: false,
                head: false
            }
        );
        let Parsed::Request { req, close, head } = h.next_request() else {
            panic!("a second request");
        };
        assert_eq!((req.path.as_str(), close, head), ("/x", true, true));
        assert_eq!(h.next_request(), Parsed::More);

        // A body is read past, whole.
        let mut h = Http1::default();
        h.feed(b"POST /echo HTTP/1.0\r\nContent-Length: 5\r\n\r\nhel");
        assert_eq!(h.next_request(), Parsed::More);
        h.feed(b"lo");
        assert!(matches!(
            h.next_request(),
            Parsed::Request { close: true, .. }
        ));

        for junk in [
            &b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n"[..],
            b"PING\r\n",
        ] {
            let mut h = Http1::default();
            h.feed(junk);
            assert_eq!(h.next_request(), Parsed::NotHttp, "{junk:?}");
        }
    }

    #[test]
    fn answers_on_the_wire() {
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_796_670_000);
        let r = HttpResponse::new(200, "text/html", "<h1>hi</h1>");
        let text = String::from_utf8(render(&r, false, false, at)).unwrap();
        assert_eq!(
            text,
            "HTTP/1.1 200 OK\r\nDate: Mon, 07 Dec 2026 19:00:00 GMT\r\nContent-Type: text/html\r\nContent-Length: 11\r\nConnection: keep-alive\r\n\r\n<h1>hi</h1>"
        );
        let head = String::from_utf8(render(&r, true, true, at)).unwrap();
        assert!(
            head.ends_with("Content-Length: 11\r\nConnection: close\r\n\r\n"),
            "{head}"
        );
    }
}

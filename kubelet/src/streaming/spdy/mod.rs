//! The SPDY/3.1 upgrade of exec and attach, which client-go's `NewSPDYExecutor` speaks (and
//! kubectl when `KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`): the protocol version is agreed in the
//! `X-Stream-Protocol-Version` headers of the upgrade, then the client opens one SPDY stream per
//! channel, named by its `streamtype` header (`error`, `stdin`, `stdout`, `stderr`, `resize`),
//! and the kubelet answers each and waits for all it expects before the command starts, as
//! upstream's kubelet. [`Conn`] is the connection: a reader task (frames in, stream replies and
//! pings out) and a writer task, with the session's channels mapped to stream ids.

pub mod frame;

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use self::frame::{Codec, Frame};
use super::channel::{self, Incoming, Protocol};

/// The header a client lists its protocol versions in, and the server names its choice.
pub const PROTOCOL_HEADER: &str = "x-stream-protocol-version";
/// Sent with a refusal: what the server would have accepted.
const ACCEPTED_HEADER: &str = "x-accepted-stream-protocol-versions";
/// The `Upgrade` token of the protocol.
pub const UPGRADE: &str = "SPDY/3.1";

/// The remote command protocols upstream's kubelet serves over SPDY (v5 is WebSocket-only).
pub const REMOTE_COMMAND: &[&str] = &[
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
];

/// How long the client has to open the streams it announced (upstream's default).
const STREAM_CREATION_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether the request asks for a SPDY upgrade.
pub fn requested(headers: &HeaderMap) -> bool {
    headers
        .get_all(axum::http::header::UPGRADE)
        .iter()
        .any(|v| {
            v.to_str()
                .is_ok_and(|v| v.trim().eq_ignore_ascii_case(UPGRADE))
        })
}

/// The version agreed from the client's list, in the client's order of preference, as
/// upstream's `httpstream.Handshake`: `Ok(None)` when the client names none (the unversioned
/// protocol); a refusal (403 with the versions the server accepts) when none is shared.
pub fn negotiate(
    headers: &HeaderMap,
    supported: &[&'static str],
) -> Result<Option<&'static str>, Box<Response>> {
    let offered: Vec<String> = headers
        .get_all(PROTOCOL_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if offered.is_empty() {
        return Ok(None);
    }
    if let Some(chosen) = offered
        .iter()
        .find_map(|o| supported.iter().find(|s| **s == o.as_str()))
    {
        return Ok(Some(chosen));
    }
    let message = format!(
        "unable to upgrade: unable to negotiate protocol: client supports {offered:?}, server accepts {supported:?}"
    );
    let mut refused = (StatusCode::FORBIDDEN, message).into_response();
    for s in supported {
        refused
            .headers_mut()
            .append(ACCEPTED_HEADER, HeaderValue::from_static(s));
    }
    Err(Box::new(refused))
}

/// The `101 Switching Protocols` answer naming the agreed version.
pub fn switching(chosen: Option<&'static str>) -> Response {
    let mut r = StatusCode::SWITCHING_PROTOCOLS.into_response();
    let h = r.headers_mut();
    h.insert(
        axum::http::header::CONNECTION,
        HeaderValue::from_static("Upgrade"),
    );
    h.insert(
        axum::http::header::UPGRADE,
        HeaderValue::from_static(UPGRADE),
    );
    if let Some(p) = chosen {
        h.insert(PROTOCOL_HEADER, HeaderValue::from_static(p));
    }
    r
}

/// The channel protocol a remote command version speaks on its streams (what channel 3
/// carries differs by version; the framing is SPDY's).
pub fn channel_protocol(chosen: Option<&str>) -> Protocol {
    Protocol::parse(chosen).unwrap_or(Protocol {
        version: 1,
        base64: false,
    })
}

/// What the reader task reports.
#[derive(Debug)]
pub enum Event {
    /// The client opened a stream (answered already), with its headers.
    Opened {
        id: u32,
        headers: Vec<(String, String)>,
    },
    Data {
        id: u32,
        data: Vec<u8>,
    },
    /// The client will send no more on this stream.
    Ended(u32),
    /// The connection is over (closed, reset, garbled or gone away).
    Closed,
}

/// The value of header `name` of a stream.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Writes frames on the connection; cheap to clone, for tasks serving streams side by side.
#[derive(Clone)]
pub struct Writer {
    out: mpsc::UnboundedSender<Vec<u8>>,
}

impl Writer {
    /// `data` on stream `id`; false once the connection is gone.
    pub fn data(&self, id: u32, data: &[u8]) -> bool {
        data.chunks(32 * 1024)
            .all(|chunk| self.out.send(frame::data(id, false, chunk)).is_ok())
    }

    /// End stream `id` from this side.
    pub fn end(&self, id: u32) -> bool {
        self.out.send(frame::data(id, true, &[])).is_ok()
    }
}

/// One upgraded SPDY connection.
pub struct Conn {
    events: mpsc::UnboundedReceiver<Event>,
    writer: Writer,
    /// Stream ids by `streamtype` (the remote command protocols open one of each).
    streams: HashMap<String, u32>,
    /// Events read while waiting for the streams, handed out afterwards.
    early: VecDeque<Event>,
    closed: bool,
}

impl Conn {
    /// Start the reader and writer tasks on `io`.
    pub fn start<T>(io: T) -> Conn
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (rd, wr) = tokio::io::split(io);
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let (ev_tx, ev_rx) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(wr, out_rx));
        tokio::spawn(read_loop(rd, ev_tx, out_tx.clone()));
        Conn {
            events: ev_rx,
            writer: Writer { out: out_tx },
            streams: HashMap::new(),
            early: VecDeque::new(),
            closed: false,
        }
    }

    pub fn writer(&self) -> Writer {
        self.writer.clone()
    }

    /// The next event, in the order read.
    pub async fn event(&mut self) -> Event {
        match self.early.pop_front() {
            Some(e) => e,
            None => self.events.recv().await.unwrap_or(Event::Closed),
        }
    }

    /// Wait until the client has opened a stream of every kind in `expected`; false when it went
    /// away or did not within the stream creation timeout.
    pub async fn accept(&mut self, expected: &[&str]) -> bool {
        let waited = tokio::time::timeout(STREAM_CREATION_TIMEOUT, async {
            while !expected.iter().all(|k| self.streams.contains_key(*k)) {
                match self.events.recv().await {
                    Some(Event::Opened { id, headers }) => {
                        let kind = header(&headers, "streamtype").unwrap_or_default();
                        self.streams.insert(kind.to_string(), id);
                    }
                    Some(Event::Closed) | None => return false,
                    Some(other) => self.early.push_back(other),
                }
            }
            true
        })
        .await;
        if !matches!(waited, Ok(true)) {
            tracing::debug!(?expected, "SPDY client did not open its streams");
            return false;
        }
        true
    }

    /// Send `data` on the stream of `kind`; a stream the client did not open swallows it.
    /// False once the connection is gone.
    pub fn send(&self, kind: &str, data: &[u8]) -> bool {
        match self.streams.get(kind) {
            Some(&stream) => self.writer.data(stream, data),
            None => !self.closed,
        }
    }

    /// The next thing the client says on a stream the remote command protocols read: stdin's
    /// bytes and end, and terminal sizes. `None` once the connection is over.
    pub async fn recv(&mut self) -> Option<Incoming> {
        loop {
            let event = self.event().await;
            let kind_of = |id: u32| {
                self.streams
                    .iter()
                    .find(|(_, s)| **s == id)
                    .map(|(k, _)| k.as_str())
            };
            match event {
                Event::Opened { id, headers } => {
                    let kind = header(&headers, "streamtype").unwrap_or_default();
                    self.streams.insert(kind.to_string(), id);
                }
                Event::Data { id, data } => match kind_of(id) {
                    Some("stdin") => return Some(Incoming::Stdin(data)),
                    Some("resize") => {
                        // A stream of JSON sizes; only the last in this frame matters.
                        let size = serde_json::Deserializer::from_slice(&data)
                            .into_iter::<serde_json::Value>()
                            .filter_map(Result::ok)
                            .last();
                        if let Some(size) = size {
                            let dim = |k: &str| size[k].as_u64().unwrap_or(0) as u16;
                            return Some(Incoming::Resize {
                                width: dim("Width"),
                                height: dim("Height"),
                            });
                        }
                    }
                    _ => {}
                },
                Event::Ended(id) => {
                    if kind_of(id) == Some("stdin") {
                        return Some(Incoming::Close(channel::STDIN));
                    }
                }
                Event::Closed => {
                    self.closed = true;
                    return None;
                }
            }
        }
    }

    /// End every stream from this side (after `last` on the stream of its kind, if any), then
    /// wait a while for the client to hang up, so nothing sent is lost to a reset.
    pub async fn finish(self, last: Option<(&str, Vec<u8>)>) {
        if let Some((kind, bytes)) = last {
            self.send(kind, &bytes);
        }
        let mut ids: Vec<u32> = self.streams.values().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.writer.end(id);
        }
        self.hang_up().await;
    }

    /// Wait (bounded) for the client to close the connection.
    pub async fn hang_up(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while !matches!(self.event().await, Event::Closed) {}
        })
        .await;
    }
}

async fn write_loop<T: AsyncWrite>(
    mut wr: tokio::io::WriteHalf<T>,
    mut out: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(bytes) = out.recv().await {
        if wr.write_all(&bytes).await.is_err() {
            return;
        }
        // Write what is queued behind it before flushing once.
        while let Ok(more) = out.try_recv() {
            if wr.write_all(&more).await.is_err() {
                return;
            }
        }
        if wr.flush().await.is_err() {
            return;
        }
    }
    let _ = wr.shutdown().await;
}

async fn read_loop<T: AsyncRead>(
    mut rd: tokio::io::ReadHalf<T>,
    events: mpsc::UnboundedSender<Event>,
    out: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut codec = Codec::new();
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        loop {
            let (frame, used) = match codec.parse(&buf) {
                Ok(Some(parsed)) => parsed,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "SPDY connection ended on a bad frame");
                    let _ = out.send(codec.encode(&Frame::GoAway {
                        last_stream: 0,
                        status: 1,
                    }));
                    let _ = events.send(Event::Closed);
                    return;
                }
            };
            buf.drain(..used);
            let event = match frame {
                Frame::SynStream {
                    stream,
                    fin,
                    headers,
                } => {
                    let _ = out.send(codec.encode(&Frame::SynReply {
                        stream,
                        fin: false,
                        headers: Vec::new(),
                    }));
                    let _ = events.send(Event::Opened {
                        id: stream,
                        headers,
                    });
                    fin.then_some(Event::Ended(stream))
                }
                Frame::Data { stream, fin, data } => {
                    if !data.is_empty() {
                        let _ = events.send(Event::Data { id: stream, data });
                    }
                    fin.then_some(Event::Ended(stream))
                }
                Frame::RstStream { stream, .. } => Some(Event::Ended(stream)),
                // The client's pings come back as they are; ours it never needs.
                Frame::Ping(id) if id % 2 == 1 => {
                    let _ = out.send(codec.encode(&Frame::Ping(id)));
                    None
                }
                Frame::GoAway { .. } => {
                    let _ = events.send(Event::Closed);
                    return;
                }
                Frame::Ping(_) | Frame::SynReply { .. } | Frame::Other(_) => None,
            };
            if let Some(e) = event {
                let _ = events.send(e);
            }
        }
        match rd.read(&mut chunk).await {
            Ok(0) | Err(_) => {
                let _ = events.send(Event::Closed);
                return;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(list: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in list {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn versions_are_agreed_in_the_clients_order() {
        type Headers<'a> = &'a [(&'a str, &'a str)];
        let cases: &[(Headers, Result<Option<&str>, ()>)] = &[
            (&[], Ok(None)),
            (
                &[
                    ("X-Stream-Protocol-Version", "v5.channel.k8s.io"),
                    ("X-Stream-Protocol-Version", "v4.channel.k8s.io"),
                    ("X-Stream-Protocol-Version", "v3.channel.k8s.io"),
                ],
                Ok(Some("v4.channel.k8s.io")),
            ),
            (
                &[(
                    "X-Stream-Protocol-Version",
                    "v2.channel.k8s.io, channel.k8s.io",
                )],
                Ok(Some("v2.channel.k8s.io")),
            ),
            (
                &[("X-Stream-Protocol-Version", "v9.channel.k8s.io")],
                Err(()),
            ),
        ];
        for (h, want) in cases {
            let got = negotiate(&headers(h), REMOTE_COMMAND).map_err(|r| {
                assert_eq!(r.status(), StatusCode::FORBIDDEN);
                assert_eq!(
                    r.headers().get_all(ACCEPTED_HEADER).iter().count(),
                    REMOTE_COMMAND.len()
                );
            });
            assert_eq!(&got, want, "{h:?}");
        }
    }

    #[test]
    fn spdy_upgrades_are_recognised() {
        assert!(requested(&headers(&[("Upgrade", "SPDY/3.1")])));
        assert!(requested(&headers(&[("upgrade", "spdy/3.1")])));
        assert!(!requested(&headers(&[("Upgrade", "websocket")])));
        assert!(!requested(&headers(&[])));
    }
}

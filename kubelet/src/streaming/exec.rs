//! `/exec/{namespace}/{pod}/{container}?command=…&stdin=1&stdout=1&stderr=1&tty=1` and
//! `/attach/…`: a session over WebSocket speaking one of the channel protocols
//! ([`super::channel`]), or over SPDY/3.1 with one stream per channel ([`super::spdy`]), as the
//! client asks in its upgrade. Exec runs the command through [`Kubelet::exec`] and ends with its
//! status on the error channel; attach streams what the container writes from now on until its
//! run ends and, for a container with `stdin: true`, hands what is typed to its main process.

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tinykube_runtime::{BoxFuture, Stream};
use tokio::sync::{broadcast, mpsc};

use super::channel::{self, Frame, Incoming, Outcome, Protocol};
use super::spdy::{self, Conn};
use crate::logs::LogHandle;
use crate::runner::{ExecIo, StreamError};
use crate::Kubelet;

/// The options of an exec or attach request (`1` turns a stream on, as upstream's kubelet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecQuery {
    pub command: Vec<String>,
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
}

impl ExecQuery {
    pub fn parse(raw: Option<&str>) -> Result<ExecQuery, String> {
        let mut q = ExecQuery::default();
        for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            let on = v == "1" || v.eq_ignore_ascii_case("true");
            match k.as_ref() {
                "command" => q.command.push(v.into_owned()),
                "input" | "stdin" => q.stdin = on,
                "output" | "stdout" => q.stdout = on,
                "error" | "stderr" => q.stderr = on,
                "tty" => q.tty = on,
                _ => {}
            }
        }
        // With a terminal, stderr is written to stdout (upstream drops the flag).
        if q.tty {
            q.stderr = false;
        }
        if !q.stdin && !q.stdout && !q.stderr {
            return Err("you must specify at least 1 of stdin, stdout, stderr".into());
        }
        Ok(q)
    }
}

fn bad_request(message: String) -> Response {
    (StatusCode::BAD_REQUEST, message).into_response()
}

/// Not an upgrade: upstream's answer to a failed handshake.
fn not_upgraded() -> Response {
    bad_request("Upgrade request required".into())
}

/// The upgrade a client asked for, accepted: the answer to send, and the connection to come.
enum Upgrade {
    WebSocket(WebSocketUpgrade, Protocol),
    Spdy {
        answer: Response,
        on: hyper::upgrade::OnUpgrade,
        proto: Protocol,
    },
}

impl Upgrade {
    /// Read the query and the upgrade of an exec or attach request; `Err` is the answer refusing
    /// it.
    async fn of(req: Request, state: &Arc<Kubelet>) -> Result<(ExecQuery, Upgrade), Response> {
        let (mut parts, _) = req.into_parts();
        let q = ExecQuery::parse(parts.uri.query()).map_err(bad_request)?;
        if spdy::requested(&parts.headers) {
            let chosen = spdy::negotiate(&parts.headers, spdy::REMOTE_COMMAND).map_err(|r| *r)?;
            let on = parts
                .extensions
                .remove::<hyper::upgrade::OnUpgrade>()
                .ok_or_else(not_upgraded)?;
            let proto = spdy::channel_protocol(chosen);
            let answer = spdy::switching(chosen);
            return Ok((q, Upgrade::Spdy { answer, on, proto }));
        }
        let ws = WebSocketUpgrade::from_request_parts(&mut parts, state)
            .await
            .map_err(|_| not_upgraded())?;
        let ws = ws.protocols(channel::PROTOCOLS.iter().copied());
        let proto = Protocol::parse(ws.selected_protocol().and_then(|v| v.to_str().ok()))
            .unwrap_or(Protocol {
                version: 1,
                base64: false,
            });
        Ok((q, Upgrade::WebSocket(ws, proto)))
    }

    /// Answer the client and run `session` on the connection once it is upgraded.
    fn serve<F, Fut>(self, query: ExecQuery, session: F) -> Response
    where
        F: FnOnce(Session) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        match self {
            Upgrade::WebSocket(ws, proto) => ws.on_upgrade(move |socket| async move {
                session(Session::new(
                    Transport::WebSocket(Box::new(socket)),
                    proto,
                    query,
                ))
                .await
            }),
            Upgrade::Spdy { answer, on, proto } => {
                tokio::spawn(async move {
                    let Ok(io) = on.await else { return };
                    let mut conn = Conn::start(hyper_util::rt::TokioIo::new(io));
                    if conn.accept(&spdy_streams(&query, proto)).await {
                        session(Session::new(Transport::Spdy(conn), proto, query)).await
                    }
                });
                answer
            }
        }
    }
}

/// The streams a SPDY client opens for `q`, as client-go's remote command protocols do.
fn spdy_streams(q: &ExecQuery, proto: Protocol) -> Vec<&'static str> {
    let mut kinds = vec!["error"];
    for (on, kind) in [
        (q.stdin, "stdin"),
        (q.stdout, "stdout"),
        (q.stderr, "stderr"),
    ] {
        if on {
            kinds.push(kind);
        }
    }
    if q.tty && proto.version >= 3 {
        kinds.push("resize");
    }
    kinds
}

pub(crate) async fn exec(
    State(k): State<Arc<Kubelet>>,
    Path((namespace, pod, container)): Path<(String, String, String)>,
    req: Request,
) -> Response {
    let (q, upgrade) = match Upgrade::of(req, &k).await {
        Ok(u) => u,
        Err(refused) => return refused,
    };
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let (stdin_tx, stdin_rx) = match q.stdin {
        true => {
            let (t, r) = mpsc::channel(16);
            (Some(t), Some(r))
        }
        false => (None, None),
    };
    let io = ExecIo {
        stdin: stdin_rx,
        output: out_tx,
        tty: q.tty,
    };
    let started = match k.exec(&namespace, &pod, &container, q.command.clone(), io) {
        Err(e @ StreamError::PodNotFound { .. }) => {
            return (super::status_of(&e), e.to_string()).into_response()
        }
        Err(e) => Err(format!("error executing command in container: {e}")),
        Ok(run) => Ok(run),
    };
    upgrade.serve(q, move |session| session.exec(started, stdin_tx, out_rx))
}

pub(crate) async fn attach(
    State(k): State<Arc<Kubelet>>,
    Path((namespace, pod, container)): Path<(String, String, String)>,
    req: Request,
) -> Response {
    let (q, upgrade) = match Upgrade::of(req, &k).await {
        Ok(u) => u,
        Err(refused) => return refused,
    };
    let logs = match k.container_logs(&namespace, &pod, &container) {
        Err(e @ StreamError::PodNotFound { .. }) => {
            return (super::status_of(&e), e.to_string()).into_response()
        }
        Err(e) => Err(format!("error attaching to container: {e}")),
        Ok(h) => Ok(h),
    };
    let stdin = q
        .stdin
        .then(|| k.attach_stdin(&namespace, &pod, &container))
        .flatten();
    upgrade.serve(q, move |session| async move {
        let once = stdin.as_ref().is_some_and(|(_, once)| *once);
        session.attach(logs, stdin.map(|(tx, _)| tx)).await;
        if once {
            k.close_stdin(&namespace, &pod, &container);
        }
    })
}

/// The connection a session speaks over.
enum Transport {
    WebSocket(Box<WebSocket>),
    Spdy(Conn),
}

impl Transport {
    /// Send `data` on channel `ch`; false once the client is gone.
    async fn send(&mut self, proto: Protocol, ch: u8, data: &[u8]) -> bool {
        match self {
            Transport::WebSocket(socket) => ws_send(socket, proto, ch, data).await,
            Transport::Spdy(conn) => conn.send(spdy_kind(ch), data),
        }
    }

    /// What the client says next; `None` once it has gone.
    async fn recv(&mut self, proto: Protocol) -> Option<Incoming> {
        match self {
            Transport::WebSocket(socket) => match socket.recv().await {
                Some(Ok(Message::Binary(b))) => Some(channel::decode(proto, false, &b)),
                Some(Ok(Message::Text(t))) => Some(channel::decode(proto, true, t.as_bytes())),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => None,
                Some(Ok(_)) => Some(Incoming::Ignored),
            },
            Transport::Spdy(conn) => conn.recv().await,
        }
    }

    /// The error channel's last word, if any, then a normal close that waits (bounded) for the
    /// client's: closing with frames still unread would reset the connection, and the client
    /// could lose the status.
    async fn finish(self, proto: Protocol, status: Option<Vec<u8>>) {
        match self {
            Transport::WebSocket(mut socket) => {
                if let Some(bytes) = status {
                    ws_send(&mut socket, proto, channel::ERROR, &bytes).await;
                }
                let _ = socket
                    .send(Message::Close(Some(CloseFrame {
                        code: 1000,
                        reason: "".into(),
                    })))
                    .await;
                let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
                    while let Some(Ok(msg)) = socket.recv().await {
                        if matches!(msg, Message::Close(_)) {
                            break;
                        }
                    }
                })
                .await;
            }
            Transport::Spdy(conn) => conn.finish(status.map(|b| ("error", b))).await,
        }
    }
}

async fn ws_send(socket: &mut WebSocket, proto: Protocol, ch: u8, data: &[u8]) -> bool {
    let msg = match channel::encode(proto, ch, data) {
        Frame::Binary(b) => Message::Binary(b.into()),
        Frame::Text(t) => Message::Text(t.into()),
    };
    socket.send(msg).await.is_ok()
}

/// The SPDY stream of a channel.
fn spdy_kind(ch: u8) -> &'static str {
    match ch {
        channel::STDIN => "stdin",
        channel::STDOUT => "stdout",
        channel::STDERR => "stderr",
        channel::RESIZE => "resize",
        _ => "error",
    }
}

/// One upgraded connection.
struct Session {
    transport: Transport,
    proto: Protocol,
    query: ExecQuery,
    /// With a TTY: the echo and line editing a pty does.
    line: super::tty::LineDiscipline,
}

impl Session {
    fn new(transport: Transport, proto: Protocol, query: ExecQuery) -> Session {
        Session {
            transport,
            proto,
            query,
            line: Default::default(),
        }
    }

    async fn send(&mut self, ch: u8, data: &[u8]) -> bool {
        self.transport.send(self.proto, ch, data).await
    }

    /// Output of `stream` on its channel, if the client asked for it.
    async fn output(&mut self, stream: Stream, text: &str) -> bool {
        let ch = match (stream, self.query.tty) {
            (Stream::Stdout, _) | (Stream::Stderr, true) => channel::STDOUT,
            (Stream::Stderr, false) => channel::STDERR,
        };
        let wanted = match ch {
            channel::STDOUT => self.query.stdout,
            _ => self.query.stderr,
        };
        !wanted || self.send(ch, text.as_bytes()).await
    }

    /// The outcome on the error channel, then a normal close.
    async fn finish(self, outcome: Outcome) {
        let status = channel::status(self.proto, &self.query.command, &outcome);
        self.transport.finish(self.proto, status).await
    }

    async fn exec(
        mut self,
        started: Result<BoxFuture<'static, i32>, String>,
        mut stdin: Option<mpsc::Sender<String>>,
        mut output: mpsc::UnboundedReceiver<(Stream, String)>,
    ) {
        let mut command = match started {
            Ok(c) => c,
            Err(why) => return self.finish(Outcome::Failed(why)).await,
        };
        let code = loop {
            tokio::select! {
                code = &mut command => break code,
                Some((stream, text)) = output.recv() => {
                    if !self.output(stream, &text).await {
                        return; // the client went away; dropping the command ends it
                    }
                }
                said = self.transport.recv(self.proto) => match said {
                    Some(incoming) => self.input(incoming, &mut stdin).await,
                    None => return,
                },
            }
        };
        while let Ok((stream, text)) = output.try_recv() {
            if !self.output(stream, &text).await {
                return;
            }
        }
        self.finish(Outcome::Exited(code)).await
    }

    async fn input(&mut self, incoming: Incoming, stdin: &mut Option<mpsc::Sender<String>>) {
        match incoming {
            Incoming::Stdin(bytes) => {
                let typed = String::from_utf8_lossy(&bytes).into_owned();
                let (chunks, eof) = if self.query.tty {
                    let cooked = self.line.feed(&typed);
                    if !cooked.echo.is_empty() {
                        self.output(Stream::Stdout, &cooked.echo).await;
                    }
                    (cooked.lines, cooked.eof)
                } else {
                    (vec![typed], false)
                };
                for chunk in chunks {
                    if let Some(tx) = stdin.as_ref() {
                        if tx.send(chunk).await.is_err() {
                            *stdin = None;
                        }
                    }
                }
                if eof {
                    *stdin = None;
                }
            }
            Incoming::Close(channel::STDIN) => *stdin = None,
            Incoming::Resize { .. } | Incoming::Close(_) | Incoming::Ignored => {}
        }
    }

    /// Relay what the container writes from now on and, when it has a stdin, what is typed,
    /// until its run ends.
    async fn attach(
        mut self,
        logs: Result<LogHandle, String>,
        mut stdin: Option<mpsc::Sender<String>>,
    ) {
        let handle = match logs {
            Ok(h) => h,
            Err(why) => return self.finish(Outcome::Failed(why)).await,
        };
        let tap = handle.lock().current.tap();
        let Some(mut written) = tap else {
            return self.finish(Outcome::Exited(0)).await;
        };
        loop {
            tokio::select! {
                out = written.recv() => match out {
                    Ok((stream, text)) => {
                        let text = if self.query.tty { text.replace('\n', "\r\n") } else { text };
                        let stream = if self.query.tty { Stream::Stdout } else { stream };
                        if !self.output(stream, &text).await {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                said = self.transport.recv(self.proto) => match said {
                    Some(incoming) => self.input(incoming, &mut stdin).await,
                    None => return,
                },
            }
        }
        self.finish(Outcome::Exited(0)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_queries() {
        let cases: &[(&str, Result<ExecQuery, &str>)] = &[
            (
                "command=ls&command=%2F&stdout=1&stderr=1",
                Ok(ExecQuery {
                    command: vec!["ls".into(), "/".into()],
                    stdout: true,
                    stderr: true,
                    ..Default::default()
                }),
            ),
            (
                "command=sh&stdin=1&stdout=1&stderr=1&tty=1",
                Ok(ExecQuery {
                    command: vec!["sh".into()],
                    stdin: true,
                    stdout: true,
                    tty: true,
                    ..Default::default()
                }),
            ),
            (
                "command=date&output=1",
                Ok(ExecQuery {
                    command: vec!["date".into()],
                    stdout: true,
                    ..Default::default()
                }),
            ),
            (
                "command=ls&stdout=0",
                Err("you must specify at least 1 of stdin, stdout, stderr"),
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(
                ExecQuery::parse(Some(raw)),
                want.clone().map_err(String::from),
                "{raw}"
            );
        }
    }
}

//! `/exec/{namespace}/{pod}/{container}?command=…&stdin=1&stdout=1&stderr=1&tty=1` and
//! `/attach/…`: a WebSocket session speaking one of the channel protocols ([`super::channel`]).
//! Exec runs the command through [`Kubelet::exec`] and ends with its status on channel 3;
//! attach streams what the container writes from now on until its run ends and, for a
//! container with `stdin: true`, hands what is typed to its main process.

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tinykube_runtime::{BoxFuture, Stream};
use tokio::sync::{broadcast, mpsc};

use super::channel::{self, Frame, Incoming, Outcome, Protocol};
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

/// Not an upgrade (SPDY, or a plain request): upstream's answer to a failed handshake.
fn not_upgraded() -> Response {
    bad_request("Upgrade request required: this kubelet serves exec and attach over WebSocket (v5.channel.k8s.io … channel.k8s.io)".into())
}

/// The protocol agreed with the client.
fn negotiated(ws: &WebSocketUpgrade) -> Protocol {
    Protocol::parse(ws.selected_protocol().and_then(|v| v.to_str().ok())).unwrap_or(Protocol {
        version: 1,
        base64: false,
    })
}

/// The WebSocket upgrade of an exec or attach request, with its protocol; `Err` is the answer
/// refusing it.
type WsRejection = axum::extract::ws::rejection::WebSocketUpgradeRejection;

fn upgrade(
    raw: Option<String>,
    ws: Result<WebSocketUpgrade, WsRejection>,
) -> Result<(ExecQuery, WebSocketUpgrade, Protocol), Box<Response>> {
    let q = ExecQuery::parse(raw.as_deref()).map_err(|e| Box::new(bad_request(e)))?;
    let Ok(ws) = ws else {
        return Err(Box::new(not_upgraded()));
    };
    let ws = ws.protocols(channel::PROTOCOLS.iter().copied());
    let proto = negotiated(&ws);
    Ok((q, ws, proto))
}

pub(crate) async fn exec(
    State(k): State<Arc<Kubelet>>,
    Path((namespace, pod, container)): Path<(String, String, String)>,
    RawQuery(raw): RawQuery,
    ws: Result<WebSocketUpgrade, WsRejection>,
) -> Response {
    let (q, ws, proto) = match upgrade(raw, ws) {
        Ok(u) => u,
        Err(refused) => return *refused,
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
    ws.on_upgrade(move |socket| async move {
        Session::new(socket, proto, q)
            .exec(started, stdin_tx, out_rx)
            .await
    })
}

pub(crate) async fn attach(
    State(k): State<Arc<Kubelet>>,
    Path((namespace, pod, container)): Path<(String, String, String)>,
    RawQuery(raw): RawQuery,
    ws: Result<WebSocketUpgrade, WsRejection>,
) -> Response {
    let (q, ws, proto) = match upgrade(raw, ws) {
        Ok(u) => u,
        Err(refused) => return *refused,
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
    ws.on_upgrade(move |socket| async move {
        let once = stdin.as_ref().is_some_and(|(_, once)| *once);
        Session::new(socket, proto, q)
            .attach(logs, stdin.map(|(tx, _)| tx))
            .await;
        if once {
            k.close_stdin(&namespace, &pod, &container);
        }
    })
}

/// One upgraded connection.
struct Session {
    socket: WebSocket,
    proto: Protocol,
    query: ExecQuery,
    /// With a TTY: the echo and line editing a pty does.
    line: super::tty::LineDiscipline,
}

impl Session {
    fn new(socket: WebSocket, proto: Protocol, query: ExecQuery) -> Session {
        Session {
            socket,
            proto,
            query,
            line: Default::default(),
        }
    }

    async fn send(&mut self, ch: u8, data: &[u8]) -> bool {
        let msg = match channel::encode(self.proto, ch, data) {
            Frame::Binary(b) => Message::Binary(b.into()),
            Frame::Text(t) => Message::Text(t.into()),
        };
        self.socket.send(msg).await.is_ok()
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

    /// Channel 3, then a normal close.
    async fn finish(mut self, outcome: Outcome) {
        if let Some(bytes) = channel::status(self.proto, &self.query.command, &outcome) {
            self.send(channel::ERROR, &bytes).await;
        }
        let _ = self
            .socket
            .send(Message::Close(Some(CloseFrame {
                code: 1000,
                reason: "".into(),
            })))
            .await;
        // Wait for the client's close (bounded): closing the TCP connection with its frames
        // still unread would reset it, and the client could lose the status sent above.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while let Some(Ok(msg)) = self.socket.recv().await {
                if matches!(msg, Message::Close(_)) {
                    break;
                }
            }
        })
        .await;
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
                msg = self.socket.recv() => match msg {
                    Some(Ok(Message::Binary(b))) => self.input(false, &b, &mut stdin).await,
                    Some(Ok(Message::Text(t))) => self.input(true, t.as_bytes(), &mut stdin).await,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                    Some(Ok(_)) => {}
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

    async fn input(&mut self, text: bool, data: &[u8], stdin: &mut Option<mpsc::Sender<String>>) {
        match channel::decode(self.proto, text, data) {
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
                msg = self.socket.recv() => match msg {
                    Some(Ok(Message::Binary(b))) => self.input(false, &b, &mut stdin).await,
                    Some(Ok(Message::Text(t))) => self.input(true, t.as_bytes(), &mut stdin).await,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                    Some(Ok(_)) => {}
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

//! Port-forward over the WebSocket channel protocols (`v4.channel.k8s.io` and the unversioned
//! ones), which the Python `kubernetes` client and kube-rs speak: one connection per requested
//! port for the whole WebSocket; port `i` (in the query's order) has data channel `2i` and error
//! channel `2i+1`, each opened by a message holding the port number (two bytes, little-endian),
//! as upstream's kubelet sends them.

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use base64::Engine;
use tinykube_runtime::Server;

use super::{render, Http1, Parsed};
use crate::streaming::channel::{self, Frame, Protocol};
use crate::Kubelet;

/// One forwarded port.
struct Port {
    number: u16,
    http: Http1,
    /// The server there, found at the first bytes; `None` once the connection is over.
    server: Option<Result<Arc<dyn Server>, String>>,
    open: bool,
}

pub(super) async fn serve(
    k: Arc<Kubelet>,
    namespace: String,
    pod: String,
    mut socket: WebSocket,
    proto: Protocol,
    ports: Vec<u16>,
) {
    let mut state: Vec<Port> = ports
        .iter()
        .map(|&number| Port {
            number,
            http: Http1::default(),
            server: None,
            open: true,
        })
        .collect();
    for (i, p) in state.iter().enumerate() {
        let number = p.number.to_le_bytes();
        for ch in [2 * i as u8, 2 * i as u8 + 1] {
            if !send(&mut socket, proto, ch, &number).await {
                return;
            }
        }
    }
    while state.iter().any(|p| p.open) {
        let (ch, data) = match socket.recv().await {
            Some(Ok(Message::Binary(b))) if !proto.base64 => match b.split_first() {
                Some((&ch, rest)) => (ch, rest.to_vec()),
                None => continue,
            },
            Some(Ok(Message::Text(t))) if proto.base64 => {
                let t = t.as_bytes();
                let Some((&c, rest)) = t.split_first().filter(|(c, _)| c.is_ascii_digit()) else {
                    continue;
                };
                let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(rest) else {
                    continue;
                };
                (c - b'0', bytes)
            }
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
            Some(Ok(_)) => continue,
        };
        let index = usize::from(ch / 2);
        let Some(port) = state.get_mut(index).filter(|p| p.open && ch % 2 == 0) else {
            continue;
        };
        let number = port.number;
        let server = port
            .server
            .get_or_insert_with(|| k.pod_listener(&namespace, &pod, number))
            .clone();
        let server = match server {
            Ok(s) => s,
            Err(why) => {
                port.open = false;
                send(&mut socket, proto, ch + 1, why.as_bytes()).await;
                continue;
            }
        };
        port.http.feed(&data);
        loop {
            match port.http.next_request() {
                Parsed::More => break,
                Parsed::NotHttp => {
                    port.open = false;
                    let why = format!(
                        "the simulated container listening on port {number} speaks HTTP only"
                    );
                    send(&mut socket, proto, ch + 1, why.as_bytes()).await;
                    break;
                }
                Parsed::Request { req, close, head } => {
                    let now = k.clock.now();
                    let answer = server.http(&req, now);
                    if !send(&mut socket, proto, ch, &render(&answer, head, close, now)).await {
                        return;
                    }
                    if close {
                        port.open = false;
                        break;
                    }
                }
            }
        }
    }
    // Every port's connection is over: so is the WebSocket, as when the pod's server hangs up.
    let _ = socket.send(Message::Close(None)).await;
}

async fn send(socket: &mut WebSocket, proto: Protocol, ch: u8, data: &[u8]) -> bool {
    let msg = match channel::encode(proto, ch, data) {
        Frame::Binary(b) => Message::Binary(b.into()),
        Frame::Text(t) => Message::Text(t.into()),
    };
    socket.send(msg).await.is_ok()
}

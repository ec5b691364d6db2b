//! The TCP balancer in front of several API servers (`tinykube up --apiservers N`): it listens
//! on the cluster's port (the kubeconfig's server), hands each new connection to the next API
//! server in turn and, when that one does not accept (killed, restarting), to the one after; bytes
//! pass through untouched, so HTTPS and client certificates work end to end with the API server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How long one backend may take to accept before the next is tried.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The backends in turn from `start`: the order one connection tries them in.
pub fn order(start: usize, backends: usize) -> impl Iterator<Item = usize> {
    (0..backends).map(move |i| (start + i) % backends.max(1))
}

/// Connect to the first backend that accepts, trying them in turn from `start`.
async fn connect(backends: &[SocketAddr], start: usize) -> Option<(SocketAddr, TcpStream)> {
    for i in order(start, backends.len()) {
        let addr = backends[i];
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(conn)) => return Some((addr, conn)),
            Ok(Err(e)) => tracing::debug!(%addr, error = %e, "API server refused; trying the next"),
            Err(_) => tracing::debug!(%addr, "API server did not accept in time; trying the next"),
        }
    }
    None
}

/// Serve `listener` until the task is aborted: each connection is piped to a backend.
pub fn spawn(listener: TcpListener, backends: Vec<SocketAddr>) -> JoinHandle<()> {
    let backends: Arc<[SocketAddr]> = backends.into();
    let next = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        loop {
            let (mut client, peer) = match listener.accept().await {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors, say: back off rather than spin.
                    tracing::warn!(error = %e, "balancer: accepting a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let backends = backends.clone();
            let start = next.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let Some((addr, mut server)) = connect(&backends, start).await else {
                    // Each API server's death is reported already (and while the cluster
                    // stops, components still reconnect): nothing new for the terminal.
                    tracing::debug!(%peer, "balancer: no API server accepts connections");
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut server).await {
                    tracing::debug!(%peer, %addr, error = %e, "balancer: connection ended");
                }
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn each_connection_starts_at_the_next_backend() {
        let cases: [(usize, usize, &[usize]); 4] = [
            (0, 3, &[0, 1, 2]),
            (1, 3, &[1, 2, 0]),
            (5, 3, &[2, 0, 1]),
            (0, 0, &[]),
        ];
        for (start, n, want) in cases {
            assert_eq!(order(start, n).collect::<Vec<_>>(), want, "{start} of {n}");
        }
    }

    /// A backend that answers each connection with its name and echoes what it gets.
    async fn backend(name: &'static str) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                tokio::spawn(async move {
                    conn.write_all(name.as_bytes()).await.unwrap();
                    let mut buf = [0u8; 64];
                    while let Ok(n) = conn.read(&mut buf).await {
                        if n == 0 || conn.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    /// Connect through the balancer: the backend's name, and the echo of `ping`.
    async fn through(addr: SocketAddr) -> (String, String) {
        let mut conn = TcpStream::connect(addr).await.unwrap();
        let mut name = [0u8; 1];
        conn.read_exact(&mut name).await.unwrap();
        conn.write_all(b"ping").await.unwrap();
        let mut echo = [0u8; 4];
        conn.read_exact(&mut echo).await.unwrap();
        (
            String::from_utf8_lossy(&name).into(),
            String::from_utf8_lossy(&echo).into(),
        )
    }

    #[tokio::test]
    async fn round_robin_over_the_backends_that_accept() {
        let a = backend("a").await;
        let b = backend("b").await;
        // A port nobody listens on: an API server that was killed.
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = spawn(listener, vec![a, dead, b]);
        let mut seen = Vec::new();
        for _ in 0..6 {
            let (name, echo) = through(addr).await;
            assert_eq!(echo, "ping");
            seen.push(name);
        }
        // Turns a, dead→b, b, a, dead→b, b.
        assert_eq!(seen, ["a", "b", "b", "a", "b", "b"]);
        task.abort();
    }

    #[tokio::test]
    async fn no_backend_closes_the_connection() {
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = spawn(listener, vec![dead]);
        let mut conn = TcpStream::connect(addr).await.unwrap();
        let mut buf = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut buf)).await;
        assert!(matches!(read, Ok(Ok(0))), "{read:?}");
        task.abort();
    }
}

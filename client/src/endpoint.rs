//! A minimal HTTP/1.1 responder for a component's own small endpoints (`/healthz`, the
//! scheduler's `/metrics`, the kubelet's read-only `/pods`): one GET per connection, answered
//! from a routing function and closed. Only the API server needs a web framework.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How long a client may take to send its request line.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// One answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: &'static str,
    pub content_type: &'static str,
    pub body: String,
}

impl Reply {
    /// 200 with `body` of `content_type`.
    pub fn ok(content_type: &'static str, body: String) -> Reply {
        Reply {
            status: "200 OK",
            content_type,
            body,
        }
    }

    /// 200 `ok`, as upstream's health checks answer.
    pub fn healthy() -> Reply {
        Reply::ok("text/plain; charset=utf-8", "ok".into())
    }

    /// 404 with Go's net/http wording.
    pub fn not_found() -> Reply {
        Reply {
            status: "404 Not Found",
            content_type: "text/plain; charset=utf-8",
            body: "404 page not found\n".into(),
        }
    }

    fn to_http(&self) -> String {
        format!(
            "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
            self.status,
            self.content_type,
            self.body.len(),
            self.body
        )
    }
}

/// The value of query parameter `name` in `path` (`/pods?node=worker0` → `worker0`).
pub fn query_param<'a>(path: &'a str, name: &str) -> Option<&'a str> {
    path.split_once('?')?
        .1
        .split('&')
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
}

/// Answer every connection on `listener` with `route(path)` (the request target, query
/// included) until `shutdown`.
pub async fn serve<F>(listener: TcpListener, route: F, shutdown: CancellationToken)
where
    F: Fn(&str) -> Reply + Send + Sync + 'static,
{
    let route = Arc::new(route);
    loop {
        let conn = tokio::select! {
            _ = shutdown.cancelled() => return,
            c = listener.accept() => c,
        };
        let Ok((mut stream, _)) = conn else { continue };
        let route = route.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            let n = match tokio::time::timeout(READ_TIMEOUT, stream.read(&mut buf)).await {
                Ok(Ok(n)) => n,
                _ => return,
            };
            let head = String::from_utf8_lossy(&buf[..n]);
            let path = head.split_whitespace().nth(1).unwrap_or("/");
            let reply = route(path);
            let _ = stream.write_all(reply.to_http().as_bytes()).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters() {
        let cases = [
            ("/pods?node=worker0", Some("worker0")),
            ("/pods?x=1&node=n-3", Some("n-3")),
            ("/pods", None),
            ("/pods?nodes=x", None),
        ];
        for (path, want) in cases {
            assert_eq!(query_param(path, "node"), want, "{path}");
        }
    }

    #[tokio::test]
    async fn answers_and_closes() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let server = tokio::spawn(serve(
            listener,
            |path| match path {
                "/healthz" => Reply::healthy(),
                _ => Reply::not_found(),
            },
            stop.clone(),
        ));
        for (path, want) in [("/healthz", "200 OK"), ("/nope", "404 Not Found")] {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            assert!(out.starts_with(&format!("HTTP/1.1 {want}\r\n")), "{out}");
        }
        stop.cancel();
        server.await.unwrap();
    }
}

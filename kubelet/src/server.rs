//! `/healthz` and the read-only `/pods` (the pods of this kubelet's nodes as it sees them: API
//! pods, and static pods in place of their mirrors), served by a minimal HTTP/1.1 responder
//! (only the API server uses a web framework). `/pods?node=NAME` narrows to one node.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::pods::is_mirror;
use crate::{Kubelet, BY_NODE};

/// The `/pods` answer: a PodList.
fn pod_list(k: &Kubelet, only: Option<&str>) -> Value {
    let mut items: Vec<Value> = Vec::new();
    for n in &k.nodes {
        if only.is_some_and(|o| o != n.config.name) {
            continue;
        }
        for p in k.pods.by_index(BY_NODE, &n.config.name) {
            if !is_mirror(&p) {
                items.push(serde_json::to_value(p.as_ref()).unwrap_or_default());
            }
        }
        let local = n.local();
        for s in local.statics.values() {
            let mut pod: Pod = (*s.pod).clone();
            if let Some(rec) = local.pods.get(&s.hash) {
                pod.status = rec.stage.status(&s.pod, &rec.facts);
            }
            let mut v = serde_json::to_value(pod).unwrap_or_default();
            v["apiVersion"] = json!("v1");
            v["kind"] = json!("Pod");
            items.push(v);
        }
    }
    json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
}

fn query_param<'a>(path: &'a str, name: &str) -> Option<&'a str> {
    path.split_once('?')?
        .1
        .split('&')
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
}

/// Serve until `shutdown`.
pub(crate) async fn serve(listener: TcpListener, k: Arc<Kubelet>, shutdown: CancellationToken) {
    loop {
        let conn = tokio::select! {
            _ = shutdown.cancelled() => return,
            c = listener.accept() => c,
        };
        let Ok((mut stream, _)) = conn else { continue };
        let k = k.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            let n = match tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await
            {
                Ok(Ok(n)) => n,
                _ => return,
            };
            let head = String::from_utf8_lossy(&buf[..n]);
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            let (status, body, ctype) = match path.split('?').next().unwrap_or("") {
                "/healthz" => ("200 OK", "ok".to_string(), "text/plain; charset=utf-8"),
                "/pods" | "/pods/" => (
                    "200 OK",
                    pod_list(&k, query_param(&path, "node")).to_string(),
                    "application/json",
                ),
                _ => (
                    "404 Not Found",
                    "404 page not found\n".to_string(),
                    "text/plain; charset=utf-8",
                ),
            };
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(resp.as_bytes()).await;
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
}

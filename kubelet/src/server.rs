//! The kubelet's HTTP endpoint: `/healthz`, the read-only `/pods` (the pods of this kubelet's
//! nodes as it sees them: API pods, and static pods in place of their mirrors; `/pods?node=NAME`
//! narrows to one node), the streaming endpoints of [`crate::streaming`] and the resource
//! usage endpoints of [`crate::stats`], on one axum router.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};
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

#[derive(serde::Deserialize)]
struct PodsQuery {
    node: Option<String>,
}

async fn pods(State(k): State<Arc<Kubelet>>, Query(q): Query<PodsQuery>) -> Response {
    let body = pod_list(&k, q.node.as_deref()).to_string();
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn healthz() -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "ok").into_response()
}

/// Go's net/http 404.
async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "404 page not found\n",
    )
        .into_response()
}

/// Serve until `shutdown`.
pub(crate) async fn serve(listener: TcpListener, k: Arc<Kubelet>, shutdown: CancellationToken) {
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/pods", get(pods))
        .route("/pods/", get(pods))
        .merge(crate::streaming::routes())
        .merge(crate::stats::routes())
        .fallback(not_found)
        .with_state(k);
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await;
    if let Err(e) = served {
        tracing::warn!(error = %e, "kubelet endpoint stopped");
    }
}

//! `/healthz` and the read-only `/pods` (the pods of this kubelet's nodes as it sees them: API
//! pods, and static pods in place of their mirrors), served by the client crate's minimal HTTP/1.1
//! responder. `/pods?node=NAME` narrows to one node.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};
use tinykube_client::endpoint::{self, query_param, Reply};
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

/// Serve until `shutdown`.
pub(crate) async fn serve(listener: TcpListener, k: Arc<Kubelet>, shutdown: CancellationToken) {
    let route = move |path: &str| match path.split('?').next().unwrap_or("") {
        "/healthz" => Reply::healthy(),
        "/pods" | "/pods/" => Reply::ok(
            "application/json",
            pod_list(&k, query_param(path, "node")).to_string(),
        ),
        _ => Reply::not_found(),
    };
    endpoint::serve(listener, route, shutdown).await
}

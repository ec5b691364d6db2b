//! What the crate's tests share: waiting for a condition, and pods by phase and node.

#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

/// Real time a test waits for the cluster to do something before failing.
pub const WAIT: Duration = Duration::from_secs(30);

/// Poll `f` until it returns `Some`, or panic naming `what` after [`WAIT`].
pub async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(t) = f().await {
            return t;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The pods matching `labels` and not being deleted, as (name, phase, node).
pub async fn pods(api: &Api<Pod>, labels: &str) -> Vec<(String, String, String)> {
    let list = api
        .list(&ListParams::default().labels(labels))
        .await
        .expect("pods list");
    list.items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| {
            (
                p.metadata.name.unwrap_or_default(),
                p.status.and_then(|s| s.phase).unwrap_or_default(),
                p.spec.and_then(|s| s.node_name).unwrap_or_default(),
            )
        })
        .collect()
}

/// A Deployment of `replicas` nginx pods labelled `app=NAME`.
pub fn deployment(name: &str, replicas: i32) -> k8s_openapi::api::apps::v1::Deployment {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
        },
    }))
    .expect("a valid Deployment")
}

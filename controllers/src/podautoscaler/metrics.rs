//! Where resource metrics come from: the [`MetricsSource`] trait (so the controller can be
//! driven by a table in tests), and [`ResourceMetricsApi`], which lists PodMetrics of
//! `metrics.k8s.io/v1beta1` through the API server, as upstream's resource metrics client.

use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use tinykube_client::dynamic::{ApiResource, DynamicApi};
use tinykube_client::{Client, ListParams};
use tinykube_proto::quantity::Quantity;

use super::calculator::{PodMetric, PodMetrics};

/// Why no samples came back; the texts are upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricsError {
    #[error("unable to fetch metrics from resource metrics API: {0}")]
    Fetch(String),
    #[error("no metrics returned from resource metrics API")]
    Empty,
}

/// Per-pod usage of one resource for the pods a selector picks.
pub trait MetricsSource: Send + Sync {
    /// Samples (milli-units, summed over the pod's containers, or of `container` alone) of
    /// pods matching `selector` in `namespace`, and the first sample's time.
    fn resource_metrics<'a>(
        &'a self,
        resource: &'a str,
        namespace: &'a str,
        selector: &'a str,
        container: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(PodMetrics, Timestamp), MetricsError>>;
}

/// The metrics API as served (or aggregated) by the API server.
pub struct ResourceMetricsApi {
    pub client: Client,
}

fn pods_resource() -> ApiResource {
    ApiResource {
        group: "metrics.k8s.io".into(),
        version: "v1beta1".into(),
        kind: "PodMetrics".into(),
        plural: "pods".into(),
        namespaced: true,
        verbs: vec!["get".into(), "list".into()],
    }
}

impl MetricsSource for ResourceMetricsApi {
    fn resource_metrics<'a>(
        &'a self,
        resource: &'a str,
        namespace: &'a str,
        selector: &'a str,
        container: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(PodMetrics, Timestamp), MetricsError>> {
        Box::pin(async move {
            let api = DynamicApi::new(self.client.clone(), pods_resource(), Some(namespace));
            let items = api
                .list(&ListParams::default().labels(selector))
                .await
                .map_err(|e| {
                    MetricsError::Fetch(if e.is_not_found() {
                        // client-go's words for a 404 from an unserved group.
                        "the server could not find the requested resource (get pods.metrics.k8s.io)"
                            .to_string()
                    } else {
                        e.to_string()
                    })
                })?;
            parse_pod_metrics(&items, resource, container)
        })
    }
}

fn time(v: Option<&Value>) -> Option<Timestamp> {
    v.and_then(Value::as_str).and_then(|s| s.parse().ok())
}

/// PodMetrics items as the calculator's samples. A pod with no containers, or one missing
/// the resource, has no sample (upstream skips it too).
pub fn parse_pod_metrics(
    items: &[Value],
    resource: &str,
    container: Option<&str>,
) -> Result<(PodMetrics, Timestamp), MetricsError> {
    let first = items.first().ok_or(MetricsError::Empty)?;
    let at = time(first.get("timestamp")).unwrap_or(Timestamp::UNIX_EPOCH);
    let mut out = PodMetrics::new();
    for item in items {
        let Some(name) = item.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        let containers = item
            .get("containers")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let usage = |c: &Value| {
            c.pointer(&format!("/usage/{resource}"))
                .and_then(Value::as_str)
                .and_then(|q| Quantity::parse(q).ok())
                .map(|q| q.milli_value())
        };
        let value = match container {
            Some(want) => containers
                .iter()
                .find(|c| c.get("name").and_then(Value::as_str) == Some(want))
                .and_then(usage),
            None if containers.is_empty() => None,
            None => containers.iter().map(usage).sum::<Option<i64>>(),
        };
        let Some(value) = value else {
            continue;
        };
        let window = item
            .get("window")
            .and_then(Value::as_str)
            .and_then(|w| tinykube_proto::duration::parse(w).ok())
            .unwrap_or(Duration::ZERO);
        out.insert(
            name.to_string(),
            PodMetric {
                value,
                timestamp: time(item.get("timestamp")).unwrap_or(at),
                window,
            },
        );
    }
    Ok((out, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pod_metrics_sum_their_containers() {
        let items = vec![
            json!({"metadata": {"name": "web-1"}, "timestamp": "2026-01-01T00:00:00Z", "window": "15s",
                   "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "10Mi"}},
                                  {"name": "sidecar", "usage": {"cpu": "1m", "memory": "1Mi"}}]}),
            json!({"metadata": {"name": "web-2"}, "timestamp": "2026-01-01T00:00:00Z", "window": "15s",
                   "containers": []}),
            json!({"metadata": {"name": "web-3"}, "timestamp": "2026-01-01T00:00:00Z", "window": "15s",
                   "containers": [{"name": "app", "usage": {"memory": "10Mi"}}]}),
        ];
        let (all, _) = parse_pod_metrics(&items, "cpu", None).unwrap();
        assert_eq!(all.keys().collect::<Vec<_>>(), ["web-1"]);
        assert_eq!(all["web-1"].value, 251);
        assert_eq!(all["web-1"].window, Duration::from_secs(15));
        let (app, _) = parse_pod_metrics(&items, "memory", Some("app")).unwrap();
        assert_eq!(app["web-3"].value, 10 * 1024 * 1024 * 1000);
        assert_eq!(
            parse_pod_metrics(&[], "cpu", None).unwrap_err().to_string(),
            "no metrics returned from resource metrics API"
        );
    }
}

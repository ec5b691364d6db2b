//! Self-registration with the aggregator, as metrics-server's manifest declares it: the
//! `kube-system/metrics-server` Service (no selector: this server is no pod) with its
//! Endpoints, the `v1beta1.metrics.k8s.io` APIService pointing at that Service, and the
//! `system:aggregated-metrics-reader` ClusterRole (aggregated into view, edit and admin).
//! Endpoints may not hold a loopback address, so the Endpoints carry a placeholder address
//! (192.0.2.1, TEST-NET-1: routed nowhere) and the host address the aggregator dials in their
//! `aggregator.tinykube.io/address` annotation, as a kubelet publishes its own on its Node.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};
use tinykube_client::dynamic::{ApiResource, DynamicApi};
use tinykube_client::{Client, ClientError, Patch};

/// The Endpoints annotation naming the host address an aggregated backend listens on.
pub const ADDRESS_ANNOTATION: &str = "aggregator.tinykube.io/address";
/// The address the Endpoints list (a documentation address: nothing routes it).
pub const PLACEHOLDER_IP: &str = "192.0.2.1";
pub const NAMESPACE: &str = "kube-system";
pub const SERVICE: &str = "metrics-server";
pub const APISERVICE: &str = "v1beta1.metrics.k8s.io";

/// A client of the resource `group/version/plural` (in kube-system when namespaced).
fn api(client: &Client, group: &str, kind: &str, plural: &str, namespaced: bool) -> DynamicApi {
    let r = ApiResource {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced,
        verbs: Vec::new(),
    };
    DynamicApi::new(client.clone(), r, namespaced.then_some(NAMESPACE))
}

fn services(client: &Client) -> DynamicApi {
    api(client, "", "Service", "services", true)
}

fn endpoints(client: &Client) -> DynamicApi {
    api(client, "", "Endpoints", "endpoints", true)
}

fn cluster_roles(client: &Client) -> DynamicApi {
    api(
        client,
        "rbac.authorization.k8s.io",
        "ClusterRole",
        "clusterroles",
        false,
    )
}

fn apiservices(client: &Client) -> DynamicApi {
    api(
        client,
        "apiregistration.k8s.io",
        "APIService",
        "apiservices",
        false,
    )
}

fn labels() -> Value {
    json!({"k8s-app": "metrics-server"})
}

/// The Service as metrics-server's manifest has it, without a selector.
pub fn service(addr: SocketAddr) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": NAMESPACE, "labels": labels()},
        "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": addr.port()}]},
    })
}

/// The Endpoints of that Service: where the aggregator finds this server.
pub fn endpoints_of(addr: SocketAddr) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": SERVICE, "namespace": NAMESPACE, "labels": labels(),
            "annotations": {ADDRESS_ANNOTATION: addr.to_string()}},
        "subsets": [{
            "addresses": [{"ip": PLACEHOLDER_IP}],
            "ports": [{"name": "https", "port": addr.port(), "protocol": "TCP"}],
        }],
    })
}

/// Read access to the metrics API for view, edit and admin, as metrics-server's manifest.
pub fn reader_role() -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "system:aggregated-metrics-reader", "labels": {
            "k8s-app": "metrics-server",
            "rbac.authorization.k8s.io/aggregate-to-admin": "true",
            "rbac.authorization.k8s.io/aggregate-to-edit": "true",
            "rbac.authorization.k8s.io/aggregate-to-view": "true",
        }},
        "rules": [{"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"],
            "verbs": ["get", "list", "watch"]}],
    })
}

/// The APIService as metrics-server's manifest has it.
pub fn apiservice() -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": APISERVICE, "labels": labels()},
        "spec": {
            "group": "metrics.k8s.io", "version": "v1beta1",
            "service": {"namespace": NAMESPACE, "name": SERVICE, "port": 443},
            "groupPriorityMinimum": 100, "versionPriority": 100,
            "insecureSkipTLSVerify": true,
        },
    })
}

/// Create `wanted`, or bring the stored object's labels, annotations and spec to it.
async fn ensure(api: &DynamicApi, wanted: &Value) -> Result<(), ClientError> {
    let name = wanted["metadata"]["name"].as_str().unwrap_or_default();
    let Some(mut current) = api.get_opt(name).await? else {
        return api.create(wanted).await.map(drop);
    };
    let before = current.clone();
    for field in ["labels", "annotations"] {
        if let Some(Value::Object(want)) = wanted["metadata"].get(field) {
            let meta = &mut current["metadata"];
            if !meta.get(field).is_some_and(Value::is_object) {
                meta[field] = json!({});
            }
            for (k, v) in want {
                meta[field][k] = v.clone();
            }
        }
    }
    // Keep what the server defaulted (a Service's clusterIP) and set ours.
    if let (Some(Value::Object(spec)), Some(Value::Object(want))) =
        (current.get_mut("spec"), wanted.get("spec"))
    {
        for (k, v) in want {
            spec.insert(k.clone(), v.clone());
        }
    }
    for field in ["subsets", "rules"] {
        if let Some(v) = wanted.get(field) {
            current[field] = v.clone();
        }
    }
    if current == before {
        return Ok(());
    }
    api.replace(name, &current).await.map(drop)
}

/// Register until it succeeds (the API server may be starting, or restarting).
pub async fn register(client: &Client, addr: SocketAddr) {
    let mut delay = Duration::from_millis(200);
    loop {
        let done = async {
            ensure(&services(client), &service(addr)).await?;
            ensure(&endpoints(client), &endpoints_of(addr)).await?;
            ensure(&cluster_roles(client), &reader_role()).await?;
            ensure(&apiservices(client), &apiservice()).await
        };
        match done.await {
            Ok(()) => {
                tracing::info!(%addr, apiservice = APISERVICE, "registered with the aggregator");
                return;
            }
            Err(e) => tracing::warn!(error = %e, "registering the metrics API failed; retrying"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

/// Withdraw the address, so the APIService turns unavailable when this server stops (as the
/// endpoints controller empties a Service's Endpoints when its pod goes).
pub async fn withdraw(client: &Client) {
    let patch = Patch::Merge(json!({
        "metadata": {"annotations": {ADDRESS_ANNOTATION: null}},
        "subsets": null,
    }));
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        endpoints(client).patch(SERVICE, &patch),
    )
    .await;
}

//! The aggregation layer and the node proxy against a fake backend (an axum server on a
//! loopback port in the test): an APIService registered through the API with its Service and
//! Endpoints becomes Available, discovery lists its group and the resources the backend
//! reports, requests are proxied with the caller's identity and without its credentials, and
//! once the backend stops the APIService turns False, requests get upstream's 503 and
//! discovery says Stale. Nodes' `proxy` subresource reaches the address a node publishes.

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode, Uri};
use axum::routing::get;
use axum::{Json, Router};
use reqwest::Client;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "alice-token";

/// What the fake backend answers: who asked and how.
fn echo(headers: &HeaderMap, uri: &Uri) -> Value {
    let all = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect()
    };
    json!({"kind": "NodeMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {},
           "items": [], "user": all("x-remote-user"), "groups": all("x-remote-group"),
           "authorization": all("authorization"), "node": all("tinykube-node"),
           "extra": all("x-remote-extra-scopes"), "impersonate": all("impersonate-user"),
           "query": uri.query().unwrap_or("")})
}

/// A metrics backend on a loopback port until `stop` is cancelled.
async fn backend(stop: CancellationToken) -> SocketAddr {
    let resources = json!({"kind": "APIResourceList", "apiVersion": "v1",
        "groupVersion": "metrics.k8s.io/v1beta1", "resources": [
        {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]},
        {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]}]});
    let app = Router::new()
        .route(
            "/apis/metrics.k8s.io/v1beta1",
            get(move || async move { Json(resources.clone()) }),
        )
        .route(
            "/apis/metrics.k8s.io/v1beta1/nodes",
            get(|headers: HeaderMap, uri: Uri| async move { Json(echo(&headers, &uri)) }),
        )
        .route(
            "/stats/summary",
            get(|headers: HeaderMap, uri: Uri| async move { Json(echo(&headers, &uri)) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await
            .unwrap();
    });
    addr
}

/// The API server with one token user, alice in group `dev`.
async fn apiserver(dir: &std::path::Path) -> String {
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, format!("{TOKEN},alice,1,\"dev\"\n")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = tinykube_apiserver::Config::new(addr, dir.join("data"));
    config.token_auth_file = Some(tokens);
    tokio::spawn(tinykube_apiserver::serve(
        listener,
        config,
        CancellationToken::new(),
    ));
    let url = format!("http://{addr}");
    for _ in 0..500 {
        let client = Client::builder().no_proxy().build().unwrap();
        if client.get(format!("{url}/readyz")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    url
}

struct Api {
    url: String,
    client: Client,
}

impl Api {
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, String) {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(TOKEN);
        if let Some(b) = body {
            req = req
                .header("Content-Type", "application/json")
                .body(b.to_string());
        }
        let resp = req.send().await.unwrap();
        let code = StatusCode::from_u16(resp.status().as_u16()).unwrap();
        (code, resp.text().await.unwrap())
    }

    async fn get(&self, path: &str) -> Value {
        let (code, text) = self.send(reqwest::Method::GET, path, None).await;
        assert!(code.is_success(), "GET {path}: {code} {text}");
        serde_json::from_str(&text).unwrap()
    }

    async fn create(&self, path: &str, body: Value) {
        let (code, text) = self.send(reqwest::Method::POST, path, Some(body)).await;
        assert_eq!(code, StatusCode::CREATED, "POST {path}: {text}");
    }

    async fn aggregated_discovery(&self) -> Value {
        let resp = self
            .client
            .get(format!("{}/apis", self.url))
            .bearer_auth(TOKEN)
            .header(
                "Accept",
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            )
            .send()
            .await
            .unwrap();
        resp.json().await.unwrap()
    }

    /// The Available condition of an APIService as (status, reason).
    async fn available(&self, name: &str) -> (String, String) {
        let obj = self
            .get(&format!(
                "/apis/apiregistration.k8s.io/v1/apiservices/{name}"
            ))
            .await;
        let c = obj["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Available")
            .cloned()
            .unwrap_or(json!({}));
        let text = |k: &str| c[k].as_str().unwrap_or("").to_string();
        (text("status"), text("reason"))
    }

    async fn wait_available(&self, name: &str, want: (&str, &str)) {
        let mut got = (String::new(), String::new());
        for _ in 0..300 {
            got = self.available(name).await;
            if (got.0.as_str(), got.1.as_str()) == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{name}: {got:?}, want {want:?}");
    }
}

const METRICS: &str = "v1beta1.metrics.k8s.io";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aggregated_api_is_served_through_the_api_server() {
    let dir = tempfile::tempdir().unwrap();
    let api = Api {
        url: apiserver(dir.path()).await,
        client: Client::builder().no_proxy().build().unwrap(),
    };
    let stop = CancellationToken::new();
    let addr = backend(stop.clone()).await;

    // Local APIServices for the group versions the server serves itself.
    api.wait_available("v1.apps", ("True", "Local")).await;
    api.wait_available("v1.", ("True", "Local")).await;

    // Registered as metrics-server registers itself; without Endpoints it is not available.
    let core = "/api/v1/namespaces/kube-system";
    api.create(
        &format!("{core}/services"),
        json!({"metadata": {"name": "metrics-server"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": addr.port()}]}}),
    )
    .await;
    api.create(
        "/apis/apiregistration.k8s.io/v1/apiservices",
        json!({
        "metadata": {"name": METRICS},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                 "versionPriority": 100, "insecureSkipTLSVerify": true,
                 "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443}}}),
    )
    .await;
    api.wait_available(METRICS, ("False", "EndpointsNotFound"))
        .await;
    let (code, text) = api
        .send(
            reqwest::Method::GET,
            "/apis/metrics.k8s.io/v1beta1/nodes",
            None,
        )
        .await;
    assert_eq!(
        (code, text.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "service unavailable\n")
    );

    api.create(
        &format!("{core}/endpoints"),
        // Endpoints may not hold loopback addresses: the dial target is published beside them.
        json!({"metadata": {"name": "metrics-server",
            "annotations": {"aggregator.tinykube.io/address": addr.to_string()}},
        "subsets": [{"addresses": [{"ip": "10.244.0.5"}],
                     "ports": [{"name": "https", "port": addr.port()}]}]}),
    )
    .await;
    api.wait_available(METRICS, ("True", "Passed")).await;

    // Discovery: legacy and aggregated.
    let apis = api.get("/apis").await;
    let groups: Vec<&str> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert_eq!(groups.first(), Some(&"apiregistration.k8s.io"));
    assert_eq!(groups.last(), Some(&"metrics.k8s.io"));
    let group = api.get("/apis/metrics.k8s.io").await;
    assert_eq!(group["kind"], "APIGroup");
    assert_eq!(
        group["preferredVersion"]["groupVersion"],
        "metrics.k8s.io/v1beta1"
    );
    let list = api.get("/apis/metrics.k8s.io/v1beta1").await;
    assert_eq!(list["resources"][0]["kind"], "NodeMetrics");
    let v2 = api.aggregated_discovery().await;
    let metrics = v2["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "metrics.k8s.io")
        .cloned()
        .expect("metrics.k8s.io in aggregated discovery");
    let version = &metrics["versions"][0];
    assert_eq!(version["freshness"], "Current");
    let kinds: Vec<(&str, &str)> = version["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["responseKind"]["kind"].as_str().unwrap(),
                r["scope"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [("NodeMetrics", "Cluster"), ("PodMetrics", "Namespaced")]
    );

    // The proxied request carries the caller, not its token.
    let nodes = api.get("/apis/metrics.k8s.io/v1beta1/nodes?limit=1").await;
    assert_eq!(nodes["kind"], "NodeMetricsList");
    assert_eq!(nodes["user"], json!(["alice"]));
    assert_eq!(nodes["groups"], json!(["dev", "system:authenticated"]));
    assert_eq!(nodes["authorization"], json!([]));
    assert_eq!(nodes["query"], "limit=1");
    // An impersonating caller: the backend hears the impersonated user, not the headers.
    let impersonated: Value = api
        .client
        .get(format!("{}/apis/metrics.k8s.io/v1beta1/nodes", api.url))
        .bearer_auth(TOKEN)
        .header("Impersonate-User", "jane")
        .header("Impersonate-Group", "devs")
        .header("Impersonate-Extra-Scopes", "view")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(impersonated["user"], json!(["jane"]));
    assert_eq!(
        impersonated["groups"],
        json!(["devs", "system:authenticated"])
    );
    assert_eq!(impersonated["extra"], json!(["view"]));
    assert_eq!(impersonated["impersonate"], json!([]));

    // The table kubectl prints.
    let table: Value = api
        .client
        .get(format!(
            "{}/apis/apiregistration.k8s.io/v1/apiservices/{METRICS}",
            api.url
        ))
        .bearer_auth(TOKEN)
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[1], "kube-system/metrics-server");
    assert_eq!(cells[2], "True");

    // The backend goes away.
    stop.cancel();
    api.wait_available(METRICS, ("False", "FailedDiscoveryCheck"))
        .await;
    let (code, text) = api
        .send(
            reqwest::Method::GET,
            "/apis/metrics.k8s.io/v1beta1/nodes",
            None,
        )
        .await;
    assert_eq!(
        (code, text.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "service unavailable\n")
    );
    let v2 = api.aggregated_discovery().await;
    let stale = v2["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "metrics.k8s.io")
        .cloned()
        .unwrap();
    assert_eq!(stale["versions"][0]["freshness"], "Stale");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_proxy_reaches_the_published_kubelet() {
    let dir = tempfile::tempdir().unwrap();
    let api = Api {
        url: apiserver(dir.path()).await,
        client: Client::builder().no_proxy().build().unwrap(),
    };
    let stop = CancellationToken::new();
    let addr = backend(stop.clone()).await;
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    for (name, at) in [("worker0", addr), ("worker1", dead)] {
        api.create(
            "/api/v1/nodes",
            json!({"metadata": {"name": name,
            "annotations": {"kubelet.tinykube.io/address": at.to_string()}}}),
        )
        .await;
    }
    let summary = api
        .get("/api/v1/nodes/worker0/proxy/stats/summary?only_cpu_and_memory=true")
        .await;
    assert_eq!(summary["node"], json!(["worker0"]));
    assert_eq!(summary["query"], "only_cpu_and_memory=true");
    assert_eq!(summary["authorization"], json!([]));

    let (code, text) = api
        .send(
            reqwest::Method::GET,
            "/api/v1/nodes/worker1/proxy/stats/summary",
            None,
        )
        .await;
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(status["reason"], "ServiceUnavailable");
    assert_eq!(
        status["message"],
        format!("error trying to reach service: dial tcp {dead}: connect: connection refused")
    );

    let (code, text) = api
        .send(
            reqwest::Method::GET,
            "/api/v1/nodes/nope/proxy/healthz",
            None,
        )
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND, "{text}");
    assert!(text.contains("nodes \\\"nope\\\" not found"), "{text}");
}

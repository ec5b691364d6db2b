//! The API server on a manual clock, as the in-process test cluster runs it: the timestamps it
//! writes and the ages its tables show are the clock's, and move only when the test advances it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::Client;
use serde_json::{json, Value};
use tinykube_clock::Clock;

/// 2030-01-01T00:00:00Z.
fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_893_456_000)
}

/// Serve on a loopback port with `clock`; the base URL and a client once it is ready.
async fn serve(clock: Clock, dir: &std::path::Path) -> (String, Client) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = tinykube_apiserver::Config::new(addr, dir.join("data"));
    config.clock = clock;
    let shutdown = tokio_util::sync::CancellationToken::new();
    tokio::spawn(tinykube_apiserver::serve(listener, config, shutdown));
    let url = format!("http://{addr}");
    let client = Client::builder().no_proxy().build().unwrap();
    for _ in 0..500 {
        let ready = client.get(format!("{url}/readyz")).send().await;
        if ready.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (url, client)
}

async fn call(client: &Client, method: reqwest::Method, url: String, body: Option<Value>) -> Value {
    let mut req = client
        .request(method, url)
        .header("Accept", "application/json");
    if let Some(b) = body {
        req = req
            .header("Content-Type", "application/json")
            .body(b.to_string());
    }
    let resp = req.send().await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    serde_json::from_str(&resp.text().await.unwrap()).unwrap()
}

#[tokio::test]
async fn timestamps_and_ages_follow_the_manual_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(start());
    let (url, client) = serve(clock.clone(), dir.path()).await;
    let api = format!("{url}/api/v1/namespaces/default");
    let post = reqwest::Method::POST;

    let ns = call(&client, reqwest::Method::GET, api.clone(), None).await;
    assert_eq!(ns["metadata"]["creationTimestamp"], "2030-01-01T00:00:00Z");
    let map = json!({"metadata": {"name": "c"}, "data": {"k": "v"}});
    let map = call(
        &client,
        post.clone(),
        format!("{api}/configmaps"),
        Some(map),
    )
    .await;
    assert_eq!(map["metadata"]["creationTimestamp"], "2030-01-01T00:00:00Z");
    assert_eq!(
        map["metadata"]["managedFields"][0]["time"],
        "2030-01-01T00:00:00Z"
    );

    clock.advance(Duration::from_secs(300));
    let table = client
        .get(format!("{api}/configmaps/c"))
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .send()
        .await
        .unwrap();
    let table: Value = serde_json::from_str(&table.text().await.unwrap()).unwrap();
    let cells = table["rows"][0]["cells"].as_array().unwrap();
    assert_eq!(cells.last(), Some(&json!("5m")), "{table}");

    let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1",
        "terminationGracePeriodSeconds": 30, "containers": [{"name": "c", "image": "i"}]}});
    call(&client, post, format!("{api}/pods"), Some(pod)).await;
    let deleting = call(
        &client,
        reqwest::Method::DELETE,
        format!("{api}/pods/p"),
        None,
    )
    .await;
    assert_eq!(
        deleting["metadata"]["deletionTimestamp"],
        "2030-01-01T00:05:30Z"
    );
}

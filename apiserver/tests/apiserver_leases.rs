//! The API server's identity lease and the `kubernetes` endpoints it derives from the live
//! leases, on a manual clock: another API server's lease (written here as that server would)
//! joins the Endpoints and EndpointSlices, leaves them once it goes 15 s unrenewed, and is
//! deleted after its hour; on shutdown the server removes its own lease. Two API servers on one
//! etcd list each other, and the one that stops leaves at once.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::Client;
use serde_json::{json, Value};
use tinykube_clock::Clock;
use tokio_util::sync::CancellationToken;

/// 2030-01-01T00:00:00Z.
fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_893_456_000)
}

struct Server {
    url: String,
    port: u16,
    client: Client,
    shutdown: CancellationToken,
    done: tokio::task::JoinHandle<()>,
}

async fn serve(clock: Clock, dir: &std::path::Path) -> Server {
    serve_on(clock, dir, tinykube_apiserver::Storage::Sled).await
}

async fn serve_on(
    clock: Clock,
    dir: &std::path::Path,
    storage: tinykube_apiserver::Storage,
) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = tinykube_apiserver::Config::new(addr, dir.join("data"));
    config.clock = clock;
    config.storage = storage;
    let shutdown = CancellationToken::new();
    let done = tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            tinykube_apiserver::serve(listener, config, shutdown)
                .await
                .unwrap();
        }
    });
    let url = format!("http://{addr}");
    let client = Client::builder().no_proxy().build().unwrap();
    for _ in 0..500 {
        let ready = client.get(format!("{url}/readyz")).send().await;
        if ready.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Server {
        url,
        port: addr.port(),
        client,
        shutdown,
        done,
    }
}

impl Server {
    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.url))
            .header("Accept", "application/json");
        if let Some(b) = body {
            req = req
                .header("Content-Type", "application/json")
                .body(b.to_string());
        }
        let resp = req.send().await.unwrap();
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
        serde_json::from_str(&resp.text().await.unwrap()).unwrap()
    }

    async fn get(&self, path: &str) -> Value {
        self.send(reqwest::Method::GET, path, None).await
    }

    async fn identity_leases(&self) -> Vec<Value> {
        let list = self
            .get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?labelSelector=apiserver.kubernetes.io%2Fidentity%3Dkube-apiserver")
            .await;
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// The Endpoints' subsets' ports and the slices' (name, port), sorted.
    async fn endpoints(&self) -> (Vec<u64>, Vec<(String, u64)>) {
        let ep = self
            .get("/api/v1/namespaces/default/endpoints/kubernetes")
            .await;
        let mut ports = Vec::new();
        for subset in ep["subsets"].as_array().into_iter().flatten() {
            assert_eq!(subset["addresses"], json!([{"ip": "127.0.0.1"}]), "{ep}");
            ports.push(subset["ports"][0]["port"].as_u64().unwrap());
        }
        let slices = self
            .get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes")
            .await;
        let mut names: Vec<(String, u64)> = slices["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let name = s["metadata"]["name"].as_str().unwrap().to_string();
                (name, s["ports"][0]["port"].as_u64().unwrap())
            })
            .collect();
        names.sort();
        (ports, names)
    }

    /// Poll (real time) until the endpoints are `want`.
    async fn wait_endpoints(&self, want: (Vec<u64>, Vec<(String, u64)>)) {
        let mut got = self.endpoints().await;
        for _ in 0..250 {
            if got == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            got = self.endpoints().await;
        }
        assert_eq!(got, want);
    }
}

/// Another API server's identity lease, renewed at `renew`.
fn peer_lease(name: &str, port: u16, renew: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {
            "name": name,
            "labels": {"apiserver.kubernetes.io/identity": "kube-apiserver",
                       "kubernetes.io/hostname": "peer"},
            "annotations": {"apiserver.tinykube.io/address": format!("127.0.0.1:{port}")},
        },
        "spec": {"holderIdentity": format!("{name}_1"), "leaseDurationSeconds": 3600,
                 "renewTime": renew},
    })
}

#[tokio::test]
async fn the_kubernetes_endpoints_follow_the_live_identity_leases() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(start());
    let server = serve(clock.clone(), dir.path()).await;
    let own = server.port as u64;

    // Its own lease, as upstream's identity lease controller writes it.
    let leases = server.identity_leases().await;
    assert_eq!(leases.len(), 1, "{leases:?}");
    let lease = &leases[0];
    let name = lease["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("apiserver-") && name.len() == 36, "{name}");
    assert!(lease["spec"]["holderIdentity"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{name}_")));
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 3600);
    assert_eq!(lease["spec"]["renewTime"], "2030-01-01T00:00:00.000000Z");
    assert!(lease["metadata"]["labels"]["kubernetes.io/hostname"].is_string());
    assert_eq!(
        lease["metadata"]["annotations"]["apiserver.tinykube.io/address"],
        format!("127.0.0.1:{own}")
    );
    // One API server: one address, one subset, one slice.
    server
        .wait_endpoints((vec![own], vec![("kubernetes".into(), own)]))
        .await;
    let svc = server
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], own);

    // A peer on a lower port joins: two subsets, two slices, the Service targets the lowest.
    let peer = 1u16;
    server
        .send(
            reqwest::Method::POST,
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
            Some(peer_lease(
                "apiserver-peer",
                peer,
                "2030-01-01T00:00:00.000000Z",
            )),
        )
        .await;
    clock.advance(Duration::from_secs(10));
    server
        .wait_endpoints((
            vec![1, own],
            vec![("kubernetes".into(), 1), (format!("kubernetes-{own}"), own)],
        ))
        .await;
    let svc = server
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 1);
    let renewed = &server.identity_leases().await;
    let own_lease = renewed.iter().find(|l| l["metadata"]["name"] == name);
    assert_eq!(
        own_lease.unwrap()["spec"]["renewTime"],
        "2030-01-01T00:00:10.000000Z"
    );

    // The peer stops renewing: 20 s after its last renewal it is no longer listed.
    clock.advance(Duration::from_secs(10));
    server
        .wait_endpoints((vec![own], vec![("kubernetes".into(), own)]))
        .await;
    let svc = server
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], own);
    assert_eq!(server.identity_leases().await.len(), 2);

    // An hour on, the garbage collector deletes the peer's lease; ours is renewed.
    clock.advance(Duration::from_secs(3600));
    let mut names: Vec<Value> = Vec::new();
    for _ in 0..250 {
        names = server
            .identity_leases()
            .await
            .iter()
            .map(|l| l["metadata"]["name"].clone())
            .collect();
        if names.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(names, [json!(name)]);

    // A fresh peer, then shutdown: this server's lease goes and the peer alone is listed.
    let now = "2030-01-01T01:00:20.000000Z";
    server
        .send(
            reqwest::Method::POST,
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
            Some(peer_lease("apiserver-peer2", 2, now)),
        )
        .await;
    clock.advance(Duration::from_secs(10));
    server
        .wait_endpoints((
            vec![2, own],
            vec![("kubernetes".into(), 2), (format!("kubernetes-{own}"), own)],
        ))
        .await;
    server.shutdown.cancel();
    server.done.await.unwrap();

    // Restarted on the same data dir (sled: the store is its alone), the peer's lease is a
    // stale one from before and goes; the endpoints are this server's again.
    let again = serve(clock.clone(), dir.path()).await;
    let leases = again.identity_leases().await;
    assert_eq!(leases.len(), 1, "{leases:?}");
    let port = again.port as u64;
    again
        .wait_endpoints((vec![port], vec![("kubernetes".into(), port)]))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_servers_on_one_etcd_list_each_other_and_one_that_stops_leaves_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = tinykube_store::LocalEtcd::start(&dir.path().join("etcd"))
        .await
        .unwrap();
    let storage = || {
        tinykube_apiserver::Storage::Etcd(tinykube_store::EtcdConfig::new(vec![etcd.client_url()]))
    };
    let clock = Clock::manual(start());
    // One after the other: the first creates the CA the second loads from the shared data dir.
    let a = serve_on(clock.clone(), dir.path(), storage()).await;
    let b = serve_on(clock.clone(), dir.path(), storage()).await;
    let (pa, pb) = (a.port as u64, b.port as u64);
    // The second found the first's lease live: both are listed, whoever is asked.
    let mut ports = vec![pa, pb];
    ports.sort();
    let slices = vec![
        ("kubernetes".to_string(), ports[0]),
        (format!("kubernetes-{}", ports[1]), ports[1]),
    ];
    a.wait_endpoints((ports.clone(), slices.clone())).await;
    b.wait_endpoints((ports.clone(), slices)).await;
    assert_eq!(b.identity_leases().await.len(), 2);
    let svc = b
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], ports[0]);

    // A stops: its lease goes and B lists itself alone, without waiting for a lease to expire.
    a.shutdown.cancel();
    a.done.await.unwrap();
    b.wait_endpoints((vec![pb], vec![("kubernetes".into(), pb)]))
        .await;
    let leases = b.identity_leases().await;
    assert_eq!(leases.len(), 1, "{leases:?}");
    assert_eq!(
        leases[0]["metadata"]["annotations"]["apiserver.tinykube.io/address"],
        format!("127.0.0.1:{pb}")
    );
    let svc = b
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], pb);
    b.shutdown.cancel();
    b.done.await.unwrap();
}

#[tokio::test]
async fn shutdown_removes_the_lease_but_the_last_server_keeps_its_address() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(start());
    let server = serve(clock.clone(), dir.path()).await;
    let own = server.port as u64;
    server.shutdown.cancel();
    server.done.await.unwrap();

    // What shutdown left in the store (found by content: the key layout is the store's):
    // no identity lease, and the Endpoints still this server's, the last one to go.
    let store = tinykube_store::Store::open(
        &dir.path().join("data"),
        tinykube_store::StoreConfig::default(),
    )
    .unwrap();
    let all: Vec<Value> = store
        .list("", None, None)
        .unwrap()
        .items
        .iter()
        .filter_map(|r| serde_json::from_slice(&r.value).ok())
        .collect();
    store.close().await;
    let leases: Vec<&Value> = all
        .iter()
        .filter(|o| o["kind"] == "Lease")
        .filter(|o| !o["metadata"]["labels"]["apiserver.kubernetes.io/identity"].is_null())
        .collect();
    assert!(leases.is_empty(), "identity lease left behind: {leases:?}");
    let ep = all
        .iter()
        .find(|o| o["kind"] == "Endpoints" && o["metadata"]["name"] == "kubernetes")
        .expect("the endpoints stay");
    assert_eq!(ep["subsets"][0]["ports"][0]["port"], own);
    assert!(
        all.iter().any(|o| o["kind"] == "Namespace"),
        "the store holds the cluster's objects"
    );
}

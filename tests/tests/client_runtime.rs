//! The client runtime against a real API server: typed CRUD with upstream's errors, and an
//! informer whose cache and indexes follow the cluster, across an API server restart.

use std::time::Duration;

use serde_json::json;
use tinykube_client::k8s_openapi::api::core::v1::{Node, Pod};
use tinykube_client::reflector::{Informer, Notification};
use tinykube_client::{Api, Client, Config, ListParams, Patch};
use tinykube_tests::ApiServer;

fn client(server: &ApiServer) -> Client {
    Client::new(Config::load(Some(&server.kubeconfig()), None).unwrap()).unwrap()
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn typed_crud_and_errors() {
    let server = ApiServer::start().unwrap();
    runtime().block_on(crud(&server));
}

async fn crud(server: &ApiServer) {
    let pods: Api<Pod> = Api::namespaced(client(server), "default");
    let created = pods.create(&pod("a")).await.unwrap();
    assert_eq!(
        created.spec.as_ref().unwrap().scheduler_name.as_deref(),
        Some("default-scheduler")
    );
    assert_eq!(
        pods.get("a").await.unwrap().metadata.uid,
        created.metadata.uid
    );
    assert!(pods.get("missing").await.unwrap_err().is_not_found());
    assert!(pods.get_opt("missing").await.unwrap().is_none());
    assert_eq!(pods.create(&pod("a")).await.unwrap_err().code(), Some(409));

    let patched = pods
        .patch(
            "a",
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.labels.as_ref().unwrap()["tier"], "front");
    let mut stale = created.clone();
    stale.metadata.labels = None;
    assert!(pods.replace("a", &stale).await.unwrap_err().is_conflict());

    let mut status = patched.clone();
    status.status.as_mut().unwrap().phase = Some("Running".into());
    let running = pods.replace_status("a", &status).await.unwrap();
    assert_eq!(running.status.unwrap().phase.as_deref(), Some("Running"));

    pods.create(&pod("b")).await.unwrap();
    let fronts = pods
        .list(&ListParams::default().labels("tier=front"))
        .await
        .unwrap();
    assert_eq!(fronts.items.len(), 1);
    let bind = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "b"}, "target": {"kind": "Node", "name": "n1"}});
    pods.create_subresource("b", "binding", &bind)
        .await
        .unwrap();
    let on_n1 = pods
        .list(&ListParams::default().fields("spec.nodeName=n1"))
        .await
        .unwrap();
    assert_eq!(on_n1.items[0].metadata.name.as_deref(), Some("b"));
    pods.delete("a", Some(&json!({"gracePeriodSeconds": 0})))
        .await
        .unwrap();
    assert!(pods.get_opt("a").await.unwrap().is_none());

    let nodes: Api<Node> = Api::all(client(server));
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap();
    nodes.create(&node).await.unwrap();
    assert_eq!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}

async fn eventually(mut f: impl FnMut() -> bool) {
    for _ in 0..400 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("condition not reached in 10 s");
}

#[test]
fn informer_cache_follows_the_cluster_across_a_restart() {
    let mut server = ApiServer::start().unwrap();
    let rt = runtime();
    let c = client(&server);
    let (store, mut notes, task) = rt.block_on(async {
        let ns_pods: Api<Pod> = Api::namespaced(c.clone(), "default");
        ns_pods.create(&pod("before")).await.unwrap();
        let informer = Informer::new(Api::<Pod>::all(c.clone()), ListParams::default()).with_index("node", |p: &Pod| {
            p.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
        });
        let mut store = informer.store();
        let notes = informer.subscribe();
        let task = tokio::spawn(informer.run());
        store.wait_ready().await;
        assert!(store.get("default/before").is_some());

        ns_pods.create(&pod("later")).await.unwrap();
        let bind = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "later"}, "target": {"kind": "Node", "name": "w1"}});
        ns_pods.create_subresource("later", "binding", &bind).await.unwrap();
        eventually(|| store.by_index("node", "w1").len() == 1).await;
        (store, notes, task)
    });

    // The API server restarts (same port): its watch history is gone; the informer re-lists.
    server.restart().unwrap();
    rt.block_on(async {
        let ns_pods: Api<Pod> = Api::namespaced(c.clone(), "default");
        ns_pods.create(&pod("after")).await.unwrap();
        ns_pods
            .delete("before", Some(&json!({"gracePeriodSeconds": 0})))
            .await
            .unwrap();
        eventually(|| {
            store.get("default/after").is_some() && store.get("default/before").is_none()
        })
        .await;
        assert_eq!(store.list().len(), 2);
        assert_eq!(store.by_index("node", "w1").len(), 1);
        let mut saw_delete = false;
        while let Ok(n) = notes.try_recv() {
            if let Notification::Delete(p) = n {
                saw_delete |= p.metadata.name.as_deref() == Some("before");
            }
        }
        assert!(saw_delete, "subscribers are told of the deletion");
        task.abort();
    });
}

#[test]
fn repeated_events_are_aggregated_into_one_with_a_count() {
    use tinykube_client::events::{EventType, Recorder};
    use tinykube_client::k8s_openapi::api::core::v1::{Event, ObjectReference};
    let server = ApiServer::start().unwrap();
    let c = client(&server);
    runtime().block_on(async {
        let created = Api::<Pod>::namespaced(c.clone(), "default")
            .create(&pod("web"))
            .await
            .unwrap();
        let regarding = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: created.metadata.uid.clone(),
            ..Default::default()
        };
        let recorder = Recorder::new(c.clone(), "test-controller", None);
        for _ in 0..2 {
            recorder
                .record(
                    &regarding,
                    EventType::Warning,
                    "BackOff",
                    "Back-off restarting",
                )
                .await
                .unwrap();
        }
        recorder
            .record(&regarding, EventType::Normal, "Pulled", "Pulled image")
            .await
            .unwrap();
        let events = Api::<Event>::namespaced(c.clone(), "default")
            .list(&ListParams::default())
            .await
            .unwrap();
        assert_eq!(events.items.len(), 2);
        let backoff = events
            .items
            .iter()
            .find(|e| e.reason.as_deref() == Some("BackOff"))
            .unwrap();
        assert_eq!(backoff.count, Some(2));
        assert_eq!(
            backoff.source.as_ref().unwrap().component.as_deref(),
            Some("test-controller")
        );
    });
    let describe = server.kubectl(&["describe", "pod", "web"]);
    let text = describe.ok();
    assert!(text.contains("(x2 over"), "{text}");
    assert!(text.contains("test-controller"), "{text}");
}

#[test]
fn a_second_candidate_takes_over_when_the_leader_goes() {
    use tinykube_client::leader::{LeaderElector, LeaseConfig};
    let server = ApiServer::start().unwrap();
    let c = client(&server);
    let cfg = |id: &str| LeaseConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1500),
        retry_period: Duration::from_millis(100),
        ..LeaseConfig::new("kube-system", "demo-scheduler", id)
    };
    let rt = runtime();
    rt.block_on(async {
        let a = std::sync::Arc::new(LeaderElector::new(c.clone(), cfg("a")));
        let b = std::sync::Arc::new(LeaderElector::new(c.clone(), cfg("b")));
        let (mut a_leads, mut b_leads) = (a.leading(), b.leading());
        // a campaigns first and wins; it then "crashes" (its task is aborted: no release).
        let a_task = tokio::spawn({
            let a = a.clone();
            async move { a.run(std::future::pending()).await }
        });
        a_leads.wait_for(|l| *l).await.unwrap();
        let (stop_b, stopped_b) = tokio::sync::oneshot::channel::<()>();
        let b_task = tokio::spawn({
            let b = b.clone();
            async move {
                b.run(async {
                    let _ = stopped_b.await;
                })
                .await
            }
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!*b_leads.borrow(), "only one leader at a time");
        a_task.abort();
        let started = std::time::Instant::now();
        tokio::time::timeout(Duration::from_secs(6), b_leads.wait_for(|l| *l))
            .await
            .unwrap()
            .unwrap();
        assert!(
            started.elapsed() >= Duration::from_millis(1000),
            "b waited for a's lease to expire"
        );
        let lease = Api::<tinykube_client::k8s_openapi::api::coordination::v1::Lease>::namespaced(
            c.clone(),
            "kube-system",
        )
        .get("demo-scheduler")
        .await
        .unwrap();
        let spec = lease.spec.unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("b"));
        assert_eq!(spec.lease_transitions, Some(1));

        // A graceful stop releases the lease (as upstream writes it: no holder, 1 s, acquired
        // and renewed now, transitions kept), and the next candidate takes over at once.
        stop_b.send(()).unwrap();
        b_task.await.unwrap();
        let released =
            Api::<tinykube_client::k8s_openapi::api::coordination::v1::Lease>::namespaced(
                c.clone(),
                "kube-system",
            )
            .get("demo-scheduler")
            .await
            .unwrap()
            .spec
            .unwrap();
        assert_eq!(released.holder_identity.as_deref(), Some(""));
        assert_eq!(released.lease_duration_seconds, Some(1));
        assert_eq!(released.lease_transitions, Some(1));
        assert_eq!(released.acquire_time, released.renew_time);
        let c2 = std::sync::Arc::new(LeaderElector::new(c.clone(), cfg("c")));
        let mut c_leads = c2.leading();
        let c_task = tokio::spawn({
            let c2 = c2.clone();
            async move { c2.run(std::future::pending()).await }
        });
        let started = std::time::Instant::now();
        tokio::time::timeout(Duration::from_secs(3), c_leads.wait_for(|l| *l))
            .await
            .unwrap()
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_millis(1500),
            "released, not expired"
        );
        c_task.abort();
    });
}

#[test]
fn an_informer_lists_in_pages_and_caches_what_its_transform_keeps() {
    use tinykube_client::k8s_openapi::api::core::v1::ConfigMap;
    let server = ApiServer::start().unwrap();
    let rt = runtime();
    let c = client(&server);
    rt.block_on(async {
        let maps: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
        // More than two pages of the informer's list (500 a page).
        let total = 1_100;
        for i in 0..total {
            let cm: ConfigMap = serde_json::from_value(json!({
                "metadata": {"name": format!("cm-{i:04}"), "labels": {"n": i.to_string()}},
                "data": {"big": "x".repeat(100)},
            }))
            .unwrap();
            maps.create(&cm).await.unwrap();
        }
        let informer = Informer::new(Api::<ConfigMap>::all(c.clone()), ListParams::default())
            .with_transform(|mut cm: ConfigMap| {
                cm.data = None;
                cm
            });
        let mut store = informer.store();
        let task = tokio::spawn(informer.run());
        store.wait_ready().await;
        let cached = store.list();
        let ours = cached
            .iter()
            .filter(|cm| cm.metadata.namespace.as_deref() == Some("default"))
            .filter(|cm| {
                cm.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("cm-"))
            })
            .count();
        assert_eq!(ours, total, "every page landed in the cache");
        let one = store.get("default/cm-0777").expect("cached");
        assert_eq!(one.data, None, "the transform dropped the data");
        assert_eq!(one.metadata.labels.as_ref().unwrap()["n"], "777");
        // The watch goes on from the list: a change after it arrives, transformed too.
        maps.delete("cm-0001", None).await.unwrap();
        eventually(|| store.get("default/cm-0001").is_none()).await;
        task.abort();
    });
}

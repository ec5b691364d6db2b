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

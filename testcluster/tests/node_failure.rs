//! A node fails, driven by the manual clock: nothing happens until the test moves time; past
//! the node monitor's grace period the node is NotReady and tainted unreachable; past the
//! pods' default 300 s tolerations they are evicted and replaced on the healthy node; the
//! node comes back when its kubelet starts again.

mod common;

use std::time::Duration;

use common::{deployment, eventually, pods};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, PostParams};
use tinykube_testcluster::TestCluster;

fn ready(node: &Node) -> String {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .map(|c| c.status.clone())
        .unwrap_or_default()
}

fn taints(node: &Node) -> Vec<String> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|t| {
            t.iter()
                .map(|t| format!("{}:{}", t.key, t.effect))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_failed_node_goes_not_ready_and_loses_its_pods_when_the_clock_says() {
    let cluster = TestCluster::builder()
        .nodes(2)
        .manual_clock()
        .seed(7)
        .start()
        .await
        .unwrap();
    let client = cluster.client();
    let nodes: Api<Node> = Api::all(client.clone());
    let pods_api: Api<Pod> = Api::default_namespaced(client.clone());
    Api::<Deployment>::default_namespaced(client.clone())
        .create(&PostParams::default(), &deployment("web", 4))
        .await
        .unwrap();
    // With a frozen clock the cluster still does what needs no time.
    let placed = eventually("4 web pods Running", || async {
        let p = pods(&pods_api, "app=web").await;
        (p.len() == 4 && p.iter().all(|(_, phase, _)| phase == "Running")).then_some(p)
    })
    .await;
    let on_worker1 = placed.iter().filter(|(_, _, n)| n == "worker1").count();
    assert!(
        on_worker1 > 0,
        "the spread puts pods on both nodes: {placed:?}"
    );

    assert!(cluster.stop_node("worker1").await);
    // Real time passes, the cluster's does not: the node stays Ready.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(ready(&nodes.get("worker1").await.unwrap()), "True");

    cluster.advance(Duration::from_secs(30)).await;
    assert_eq!(
        ready(&nodes.get("worker1").await.unwrap()),
        "True",
        "30 s is within the 40 s grace period"
    );
    // The node monitor counts from when it last saw the lease change, which is at the latest
    // its first pass after the node registered (the first 10 s step): 60 s is past 40 s for
    // any order in which the components started.
    cluster.advance(Duration::from_secs(30)).await;
    let node = eventually(
        "worker1 NotReady (Unknown) and tainted unreachable",
        || async {
            let n = nodes.get("worker1").await.ok()?;
            (ready(&n) == "Unknown"
                && taints(&n).contains(&"node.kubernetes.io/unreachable:NoExecute".into()))
            .then_some(n)
        },
    )
    .await;
    assert!(taints(&node).contains(&"node.kubernetes.io/unreachable:NoSchedule".to_string()));
    assert_eq!(
        ready(&nodes.get("worker0").await.unwrap()),
        "True",
        "the healthy node stays Ready"
    );

    // The pods tolerate unreachable for 300 s from the taint (added at 50 s or 60 s): not yet
    // evicted 250 s later.
    cluster.advance(Duration::from_secs(250)).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let still = pods(&pods_api, "app=web").await;
    assert_eq!(
        still.iter().filter(|(_, _, n)| n == "worker1").count(),
        on_worker1,
        "evicted before the toleration ran out: {still:?}"
    );
    cluster.advance(Duration::from_secs(60)).await;
    eventually("the web pods replaced on worker0", || async {
        let p = pods(&pods_api, "app=web").await;
        let running: Vec<_> = p
            .iter()
            .filter(|(_, phase, _)| phase == "Running")
            .collect();
        (running.len() == 4 && running.iter().all(|(_, _, n)| n == "worker0")).then_some(())
    })
    .await;

    assert!(cluster.start_node("worker1").await);
    eventually("worker1 Ready again", || async {
        (ready(&nodes.get("worker1").await.ok()?) == "True").then_some(())
    })
    .await;
}

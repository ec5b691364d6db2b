//! Draining a node as `kubectl drain` does, through kube-rs: cordon it, evict its pods through
//! the Eviction API, and see the Deployment's pods come back on the other node. With a manual
//! clock the PodDisruptionBudget's effect is deterministic: a replacement is not Ready until
//! its readiness probe's initial delay has passed on the clock, so the budget refuses the
//! second eviction (429) until the test moves time.

mod common;

use std::time::Duration;

use common::{eventually, pods};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, EvictParams, Patch, PatchParams, PostParams};
use tinykube_testcluster::TestCluster;

fn probed_deployment() -> Deployment {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "api"},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": "api"}},
            "template": {
                "metadata": {"labels": {"app": "api"}},
                "spec": {"containers": [{
                    "name": "nginx", "image": "nginx",
                    "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "initialDelaySeconds": 5},
                }]},
            },
        },
    }))
    .unwrap()
}

async fn budget(api: &Api<PodDisruptionBudget>) -> Option<(i32, i32)> {
    let s = api.get("api").await.ok()?.status?;
    Some((s.current_healthy?, s.disruptions_allowed?))
}

#[tokio::test]
async fn draining_a_node_moves_its_pods_within_the_disruption_budget() {
    let cluster = TestCluster::builder()
        .nodes(2)
        .seed(3)
        .manual_clock()
        .start()
        .await
        .unwrap();
    let client = cluster.client();
    let pods_api: Api<Pod> = Api::default_namespaced(client.clone());
    // kube-rs retries a 429 up to 15 times with back-off by default; kubectl drain sees each
    // refusal and retries itself, and so does this test.
    let mut once = kube::Config::new(cluster.server_url().parse().unwrap());
    once.default_retry = false;
    let evictions: Api<Pod> = Api::default_namespaced(kube::Client::try_from(once).unwrap());
    let budgets: Api<PodDisruptionBudget> = Api::default_namespaced(client.clone());
    Api::<Deployment>::default_namespaced(client.clone())
        .create(&PostParams::default(), &probed_deployment())
        .await
        .unwrap();
    let pdb: PodDisruptionBudget = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "api"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "api"}}},
    }))
    .unwrap();
    budgets.create(&PostParams::default(), &pdb).await.unwrap();
    eventually("4 api pods Running", || async {
        let p = pods(&pods_api, "app=api").await;
        (p.len() == 4 && p.iter().all(|(_, phase, _)| phase == "Running")).then_some(())
    })
    .await;
    cluster.advance(Duration::from_secs(5)).await;
    eventually("4 healthy pods, one disruption allowed", || async {
        (budget(&budgets).await? == (4, 1)).then_some(())
    })
    .await;

    let cordon = serde_json::json!({"spec": {"unschedulable": true}});
    Api::<Node>::all(client.clone())
        .patch("worker0", &PatchParams::default(), &Patch::Merge(cordon))
        .await
        .unwrap();
    let on_worker0: Vec<String> = pods(&pods_api, "app=api")
        .await
        .into_iter()
        .filter(|(_, _, n)| n == "worker0")
        .map(|(name, _, _)| name)
        .collect();
    assert_eq!(on_worker0.len(), 2, "the spread put two pods on each node");

    evictions
        .evict(&on_worker0[0], &EvictParams::default())
        .await
        .expect("the first eviction spends the one allowed disruption");
    match evictions
        .evict(&on_worker0[1], &EvictParams::default())
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 429);
            assert_eq!(
                s.message,
                "Cannot evict pod as it would violate the pod's disruption budget."
            );
        }
        other => panic!("the budget did not hold the second eviction: {other:?}"),
    }
    // The replacement runs on worker1 but is not Ready until the clock passes its delay.
    eventually("a replacement Running on worker1", || async {
        let p = pods(&pods_api, "app=api").await;
        (p.iter()
            .filter(|(_, phase, n)| phase == "Running" && n == "worker1")
            .count()
            == 3)
            .then_some(())
    })
    .await;
    eventually("3 healthy pods, no disruption allowed", || async {
        (budget(&budgets).await? == (3, 0)).then_some(())
    })
    .await;

    cluster.advance(Duration::from_secs(5)).await;
    eventually(
        "the second eviction allowed once the replacement is Ready",
        || async {
            pods_api
                .evict(&on_worker0[1], &EvictParams::default())
                .await
                .ok()
                .map(|_| ())
        },
    )
    .await;
    eventually("4 api pods Running on worker1", || async {
        let p = pods(&pods_api, "app=api").await;
        (p.len() == 4
            && p.iter()
                .all(|(_, phase, n)| phase == "Running" && n == "worker1"))
        .then_some(())
    })
    .await;
}

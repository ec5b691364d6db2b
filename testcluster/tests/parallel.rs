//! Eight clusters in eight tests of one `cargo test` run, side by side: each its own port,
//! store, nodes and objects, none seeing another's.

mod common;

use common::{deployment, eventually, pods};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, PostParams};
use tinykube_testcluster::TestCluster;

async fn own_cluster(i: usize) {
    let cluster = TestCluster::builder().nodes(2).start().await.unwrap();
    let client = cluster.client();
    let name = format!("app{i}");
    Api::<Deployment>::default_namespaced(client.clone())
        .create(&PostParams::default(), &deployment(&name, 2))
        .await
        .unwrap();
    let pods_api: Api<Pod> = Api::default_namespaced(client.clone());
    eventually("2 pods Running", || async {
        let p = pods(&pods_api, &format!("app={name}")).await;
        (p.len() == 2 && p.iter().all(|(_, phase, _)| phase == "Running")).then_some(())
    })
    .await;
    let all = pods_api.list(&ListParams::default()).await.unwrap();
    assert_eq!(all.items.len(), 2, "only this cluster's pods");
    let nodes = Api::<Node>::all(client)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(nodes.items.len(), 2);
}

#[tokio::test]
async fn cluster_0() {
    own_cluster(0).await
}
#[tokio::test]
async fn cluster_1() {
    own_cluster(1).await
}
#[tokio::test]
async fn cluster_2() {
    own_cluster(2).await
}
#[tokio::test]
async fn cluster_3() {
    own_cluster(3).await
}
#[tokio::test]
async fn cluster_4() {
    own_cluster(4).await
}
#[tokio::test]
async fn cluster_5() {
    own_cluster(5).await
}
#[tokio::test]
async fn cluster_6() {
    own_cluster(6).await
}
#[tokio::test]
async fn cluster_7() {
    own_cluster(7).await
}

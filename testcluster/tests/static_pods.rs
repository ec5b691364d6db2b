//! A node given a static pod manifest runs it before anything is scheduled, and the API shows
//! its mirror pod `NAME-NODE`, as on a kubeadm control-plane node; a custom node's labels,
//! taints and capacity are what the Node reports.

mod common;

use common::eventually;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use tinykube_testcluster::{NodeSpec, TestCluster};

const ETCD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - name: etcd
    image: registry.k8s.io/etcd:3.5.16-0
";

#[tokio::test]
async fn a_node_with_a_static_pod_and_its_own_shape() {
    let cluster = TestCluster::builder()
        .nodes(0)
        .node(
            NodeSpec::new("master0")
                .label("node-role.kubernetes.io/control-plane", "")
                .taint("node-role.kubernetes.io/control-plane:NoSchedule")
                .capacity("cpu=2,memory=4Gi,pods=20")
                .static_pod("etcd.yaml", ETCD),
        )
        .start()
        .await
        .unwrap();
    let client = cluster.client();
    let mirror = eventually("the mirror pod etcd-master0 Running", || async {
        let pod = Api::<Pod>::namespaced(client.clone(), "kube-system")
            .get_opt("etcd-master0")
            .await
            .ok()??;
        (pod.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(pod)
    })
    .await;
    let annotations = mirror.metadata.annotations.unwrap_or_default();
    assert_eq!(annotations["kubernetes.io/config.source"], "file");
    assert!(annotations.contains_key("kubernetes.io/config.mirror"));
    assert_eq!(mirror.spec.unwrap().node_name.as_deref(), Some("master0"));

    let node = Api::<Node>::all(client).get("master0").await.unwrap();
    assert_eq!(
        node.metadata.labels.unwrap()["node-role.kubernetes.io/control-plane"],
        ""
    );
    let taints: Vec<String> = node
        .spec
        .unwrap()
        .taints
        .unwrap()
        .iter()
        .map(|t| t.key.clone())
        .collect();
    assert_eq!(taints, ["node-role.kubernetes.io/control-plane"]);
    let capacity = node.status.unwrap().capacity.unwrap();
    assert_eq!(
        (capacity["cpu"].0.as_str(), capacity["pods"].0.as_str()),
        ("2", "20")
    );
    assert!(cluster.manifests_dir("master0").join("etcd.yaml").exists());
}

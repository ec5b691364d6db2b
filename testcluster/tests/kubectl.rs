//! The real kubectl against an in-process cluster, through `kubeconfig_path()`: it sees the
//! nodes, and on a manual clock the ages it prints are the cluster's time, not the machine's.

use std::process::Command;
use std::time::Duration;

use tinykube_testcluster::TestCluster;

fn kubectl(cluster: &TestCluster, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", cluster.kubeconfig_path())
        .output()
        .expect("kubectl runs (it is on PATH in CI)");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn kubectl_shows_the_cluster_and_its_clock() {
    let cluster = TestCluster::builder()
        .nodes(2)
        .manual_clock()
        .start()
        .await
        .unwrap();
    let nodes = kubectl(&cluster, &["get", "nodes", "--no-headers"]);
    let names: Vec<&str> = nodes
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["worker0", "worker1"], "{nodes}");
    assert!(nodes.lines().all(|l| l.contains(" Ready ")), "{nodes}");

    cluster.advance(Duration::from_secs(300)).await;
    let shown = kubectl(&cluster, &["get", "namespace", "default", "--no-headers"]);
    assert!(
        shown.trim().ends_with("5m"),
        "five minutes on the cluster's clock: {shown}"
    );
    assert_eq!(
        kubectl(&cluster, &["get", "nodes", "--no-headers"])
            .lines()
            .filter(|l| l.contains(" Ready "))
            .count(),
        2,
        "the live nodes renewed their leases through the advance"
    );
}

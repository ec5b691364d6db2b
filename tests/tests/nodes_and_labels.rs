//! Nodes and labels with real kubectl against a bare API server: create, get, label,
//! --show-labels, label removal.

use tinykube_tests::{table_rows, ApiServer};

fn fixture(name: &str) -> String {
    format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn create_get_label_and_unlabel_nodes() {
    let server = ApiServer::start().unwrap();
    let out = server.kubectl(&["create", "-f", &fixture("nodes.yaml")]);
    assert_eq!(
        out.ok(),
        "node/worker0 created\nnode/worker1 created\nnode/worker2 created\n"
    );

    let rows = table_rows(server.kubectl(&["get", "nodes"]).ok());
    assert_eq!(rows[0], ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]);
    let names: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["worker0", "worker1", "worker2"]);
    // No kubelet reports status yet: upstream shows Unknown and no roles.
    assert_eq!(rows[1][1], "Unknown");
    assert_eq!(rows[1][2], "<none>");

    let out = server.kubectl(&["label", "nodes", "worker0", "disktype=ssd"]);
    assert_eq!(out.ok(), "node/worker0 labeled\n");
    let shown = server.kubectl(&["get", "nodes", "--show-labels"]);
    let rows = table_rows(shown.ok());
    assert_eq!(rows[0].last().unwrap(), "LABELS");
    let worker0 = rows.iter().find(|r| r[0] == "worker0").unwrap();
    assert!(
        worker0.last().unwrap().contains("disktype=ssd"),
        "{shown:?}"
    );
    let worker1 = rows.iter().find(|r| r[0] == "worker1").unwrap();
    assert!(!worker1.last().unwrap().contains("disktype"));

    let selected = server.kubectl(&["get", "nodes", "-l", "disktype=ssd", "-o", "name"]);
    assert_eq!(selected.ok(), "node/worker0\n");

    assert_eq!(
        server
            .kubectl(&["label", "nodes", "worker0", "disktype-"])
            .ok(),
        "node/worker0 unlabeled\n"
    );
    let labels = server.kubectl(&[
        "get",
        "node",
        "worker0",
        "-o",
        "jsonpath={.metadata.labels}",
    ]);
    assert!(!labels.ok().contains("disktype"), "{labels:?}");
}

#[test]
fn short_names_and_categories_resolve() {
    let server = ApiServer::start().unwrap();
    let out = server.kubectl(&["get", "po,no,ds,deploy,rs,ev,ns", "-A"]);
    let text = out.ok();
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(text.contains(&format!("namespace/{ns}")), "{text}");
    }
    // As in every cluster, `all` in `default` holds the API server's own Service.
    let all = server.kubectl(&["get", "all"]);
    assert!(all.success, "{all:?}");
    assert!(all.stdout.contains("service/kubernetes"), "{all:?}");
    let none = server.kubectl(&["get", "all", "-n", "kube-public"]);
    assert!(
        none.stderr
            .contains("No resources found in kube-public namespace."),
        "{none:?}"
    );
}

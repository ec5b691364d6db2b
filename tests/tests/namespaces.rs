//! Namespaces: the four initial ones, the `kubernetes` finalizer, Terminating on delete, and
//! creates refused in a terminating namespace, as upstream.

use tinykube_tests::{table_rows, ApiServer};

#[test]
fn deleting_a_namespace_makes_it_terminating_and_closed_to_new_objects() {
    let server = ApiServer::start().unwrap();
    let rows = table_rows(server.kubectl(&["get", "ns"]).ok());
    let names: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        names,
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );

    server.kubectl(&["create", "ns", "lab"]).ok();
    let finalizers = server.kubectl(&["get", "ns", "lab", "-o", "jsonpath={.spec.finalizers}"]);
    assert_eq!(finalizers.ok(), "[\"kubernetes\"]");
    server
        .kubectl(&["run", "before", "--image=nginx", "-n", "lab"])
        .ok();

    let out = server.kubectl(&["delete", "ns", "lab", "--wait=false"]);
    assert_eq!(out.ok(), "namespace \"lab\" deleted\n");
    let status = table_rows(server.kubectl(&["get", "ns", "lab"]).ok());
    assert_eq!(status[1][1], "Terminating");

    let refused = server.kubectl(&["run", "after", "--image=nginx", "-n", "lab"]);
    let err = refused.fails();
    assert!(
        err.contains("pods \"after\" is forbidden: unable to create new content in namespace lab because it is being terminated"),
        "{err}"
    );
    // Objects already there stay until the namespace controller removes them.
    server.kubectl(&["get", "pod", "before", "-n", "lab"]).ok();
}

//! PriorityClasses as upstream serves them: the two system classes exist from the start (and
//! come back after a restart if deleted), a new class gets `generation: 1`, and a pod's
//! priority comes from its class.

use tinykube_tests::{table_rows, ApiServer};

#[test]
fn system_priority_classes_exist_from_the_start() {
    let mut server = ApiServer::start().unwrap();
    let rows = table_rows(server.kubectl(&["get", "priorityclass"]).ok());
    let cells: Vec<(&str, &str, &str, &str)> = rows
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str(), r[2].as_str(), r[4].as_str()))
        .collect();
    assert_eq!(
        cells,
        [
            ("NAME", "VALUE", "GLOBAL-DEFAULT", "PREEMPTIONPOLICY"),
            (
                "system-cluster-critical",
                "2000000000",
                "false",
                "PreemptLowerPriority"
            ),
            (
                "system-node-critical",
                "2000001000",
                "false",
                "PreemptLowerPriority"
            ),
        ]
    );
    let node_critical = server.kubectl(&[
        "get",
        "pc",
        "system-node-critical",
        "-o",
        "jsonpath={.metadata.generation} {.description}",
    ]);
    assert_eq!(
        node_critical.ok(),
        "1 Used for system critical pods that must not be moved from their current node."
    );

    // A pod of a system class gets its priority.
    let pod = server.kubectl(&[
        "run",
        "critical",
        "--image=nginx",
        "--overrides",
        r#"{"spec":{"priorityClassName":"system-cluster-critical"}}"#,
    ]);
    assert_eq!(pod.ok(), "pod/critical created\n");
    let priority = server.kubectl(&[
        "get",
        "pod",
        "critical",
        "-o",
        "jsonpath={.spec.priority} {.spec.preemptionPolicy}",
    ]);
    assert_eq!(priority.ok(), "2000000000 PreemptLowerPriority");

    // A user's class starts at generation 1, which an update of its description keeps.
    let created = server.kubectl(&["create", "priorityclass", "high", "--value=1000"]);
    assert_eq!(
        created.ok(),
        "priorityclass.scheduling.k8s.io/high created\n"
    );
    server
        .kubectl(&[
            "patch",
            "pc",
            "high",
            "-p",
            r#"{"description":"for the important pods"}"#,
        ])
        .ok();
    let high = server.kubectl(&[
        "get",
        "pc",
        "high",
        "-o",
        "jsonpath={.metadata.generation} {.value} {.description}",
    ]);
    assert_eq!(high.ok(), "1 1000 for the important pods");

    // Deleted, a system class is created again when the API server starts.
    server
        .kubectl(&["delete", "pc", "system-node-critical"])
        .ok();
    server.restart().unwrap();
    let back = server.kubectl(&[
        "get",
        "pc",
        "system-node-critical",
        "-o",
        "jsonpath={.value}",
    ]);
    assert_eq!(back.ok(), "2000001000");
}

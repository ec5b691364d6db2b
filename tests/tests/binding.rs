//! pods/binding spends a pod's nomination: the API server clears `status.nominatedNodeName`
//! when it binds the pod (upstream's ClearingNominatedNodeNameAfterBinding, on since 1.35), so
//! `kubectl get pods -o wide` shows NOMINATED NODE `<none>` once a preemptor runs.

use tinykube_tests::{manifest, ApiServer};

#[test]
fn binding_clears_the_nominated_node() {
    let server = ApiServer::start().unwrap();
    // No scheduler serves `nobody`: the pod stays unbound until bound by hand.
    let pod = server.kubectl(&[
        "run",
        "waiting",
        "--image=nginx",
        "--overrides",
        r#"{"spec":{"schedulerName":"nobody"}}"#,
    ]);
    assert_eq!(pod.ok(), "pod/waiting created\n");
    server
        .kubectl(&[
            "patch",
            "pod",
            "waiting",
            "--subresource=status",
            "-p",
            r#"{"status":{"nominatedNodeName":"worker0"}}"#,
        ])
        .ok();
    let nominated = server.kubectl(&[
        "get",
        "pod",
        "waiting",
        "-o",
        "jsonpath={.status.nominatedNodeName}",
    ]);
    assert_eq!(nominated.ok(), "worker0");

    let binding = manifest(
        &server.scratch(),
        "binding.json",
        r#"{"apiVersion":"v1","kind":"Binding","metadata":{"name":"waiting"},"target":{"kind":"Node","name":"worker0"}}"#,
    );
    let bound = server.kubectl(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/pods/waiting/binding",
        "-f",
        binding.to_str().unwrap(),
    ]);
    assert!(bound.success, "{bound:?}");
    let after = server.kubectl(&[
        "get",
        "pod",
        "waiting",
        "-o",
        r#"jsonpath={.spec.nodeName} [{.status.nominatedNodeName}] {.status.conditions[?(@.type=="PodScheduled")].status}"#,
    ]);
    assert_eq!(after.ok(), "worker0 [] True");
}

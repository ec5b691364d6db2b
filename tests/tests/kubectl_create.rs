//! `kubectl create <kind>` sends Kubernetes protobuf bodies: the objects must come out as if
//! they had been sent as JSON.

use tinykube_tests::ApiServer;

#[test]
fn kubectl_create_generators_work() {
    let server = ApiServer::start().unwrap();
    assert_eq!(
        server.kubectl(&["create", "ns", "lab"]).ok(),
        "namespace/lab created\n"
    );
    let phase = server.kubectl(&[
        "get",
        "ns",
        "lab",
        "-o",
        "jsonpath={.status.phase} {.metadata.labels}",
    ]);
    assert_eq!(
        phase.ok(),
        "Active {\"kubernetes.io/metadata.name\":\"lab\"}"
    );

    let out = server.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.14.2",
        "--replicas=3",
        "--port=80",
        "-n",
        "lab",
    ]);
    assert_eq!(out.ok(), "deployment.apps/web created\n");
    let spec = server.kubectl(&[
        "get", "deploy", "web", "-n", "lab", "-o",
        "jsonpath={.spec.replicas} {.spec.selector.matchLabels.app} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort} {.spec.strategy.type}",
    ]);
    assert_eq!(spec.ok(), "3 web nginx:1.14.2 80 RollingUpdate");

    let out = server.kubectl(&[
        "create",
        "configmap",
        "settings",
        "--from-literal=mode=fast",
        "--from-literal=level=3",
    ]);
    assert_eq!(out.ok(), "configmap/settings created\n");
    let data = server.kubectl(&[
        "get",
        "cm",
        "settings",
        "-o",
        "jsonpath={.data.mode} {.data.level}",
    ]);
    assert_eq!(data.ok(), "fast 3");

    let out = server.kubectl(&[
        "create",
        "priorityclass",
        "high",
        "--value=1000",
        "--description=urgent work",
    ]);
    assert_eq!(out.ok(), "priorityclass.scheduling.k8s.io/high created\n");
    let pc = server.kubectl(&[
        "get",
        "pc",
        "high",
        "-o",
        "jsonpath={.value} {.description} {.preemptionPolicy}",
    ]);
    assert_eq!(pc.ok(), "1000 urgent work PreemptLowerPriority");

    let out = server.kubectl(&[
        "create",
        "pdb",
        "keep",
        "--selector=app=web",
        "--min-available=2",
        "-n",
        "lab",
    ]);
    assert_eq!(out.ok(), "poddisruptionbudget.policy/keep created\n");
    let pdb = server.kubectl(&[
        "get",
        "pdb",
        "keep",
        "-n",
        "lab",
        "-o",
        "jsonpath={.spec.minAvailable} {.spec.selector.matchLabels.app}",
    ]);
    assert_eq!(pdb.ok(), "2 web");
    // A budget of 0 is a value, not an absent field (protobuf carries IntOrString 0 as a message).
    server
        .kubectl(&[
            "create",
            "pdb",
            "none",
            "--selector=app=web",
            "--max-unavailable=0",
            "-n",
            "lab",
        ])
        .ok();
    let zero = server.kubectl(&[
        "get",
        "pdb",
        "none",
        "-n",
        "lab",
        "-o",
        "jsonpath={.spec.maxUnavailable}",
    ]);
    assert_eq!(zero.ok(), "0");

    // Errors still read as upstream's.
    let dup = server.kubectl(&["create", "ns", "lab"]);
    assert!(
        dup.fails().contains("namespaces \"lab\" already exists"),
        "{dup:?}"
    );
    let bad = server.kubectl(&["create", "deployment", "Bad_Name", "--image=nginx"]);
    assert!(bad.fails().contains("is invalid"), "{bad:?}");
}

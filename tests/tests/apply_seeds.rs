//! `kubectl apply` of every manifest of the course, re-apply after an edit (a patch, not an
//! error), and what `get` shows afterwards.

use tinykube_tests::{table_rows, ApiServer};

fn seed(name: &str) -> String {
    format!("{}/fixtures/seeds/{name}", env!("CARGO_MANIFEST_DIR"))
}

const DEPLOYMENTS: &[(&str, &str)] = &[
    ("pod-with-nodename.yaml", "pod-with-nodename"),
    ("pod-with-nodeselector.yaml", "pod-with-nodeselector"),
    ("pod-with-nodeaffinity.yaml", "pod-with-nodeaffinity"),
    (
        "pod-with-nodeaffinity-preferred.yaml",
        "pod-with-nodeaffinity-preferred",
    ),
    ("pod-nodeaffinity-demo.yaml", "pod-nodeaffinity-demo"),
    ("mysql-deploy.yaml", "mysql-deploy"),
    ("tomcat-deploy.yaml", "tomcat-deploy"),
    ("tomcat-myapp-deploy.yaml", "tomcat-myapp-deploy"),
    ("fluentd-required.yaml", "fluentd"),
];

#[test]
fn every_seed_manifest_applies() {
    let server = ApiServer::start().unwrap();
    let out = server.kubectl(&["apply", "-f", &seed("nginx-pod.yaml")]);
    assert_eq!(out.ok(), "pod/nginx created\n");
    let out = server.kubectl(&["apply", "-f", &seed("daemonset.yaml")]);
    assert_eq!(out.ok(), "daemonset.apps/fluentd-elasticsearch created\n");
    for (file, name) in DEPLOYMENTS {
        let out = server.kubectl(&["apply", "-f", &seed(file)]);
        assert_eq!(
            out.ok(),
            format!("deployment.apps/{name} created\n"),
            "{file}"
        );
    }

    // Applying the same files again changes nothing.
    let out = server.kubectl(&["apply", "-f", &seed("nginx-pod.yaml")]);
    assert_eq!(out.ok(), "pod/nginx unchanged\n");
    let out = server.kubectl(&["apply", "-f", &seed("mysql-deploy.yaml")]);
    assert_eq!(out.ok(), "deployment.apps/mysql-deploy unchanged\n");

    // The seed's second fluentd manifest edits the first: a patch, not an error.
    let out = server.kubectl(&["apply", "-f", &seed("fluentd-preferred.yaml")]);
    assert_eq!(out.ok(), "deployment.apps/fluentd configured\n");
    let affinity = server.kubectl(&[
        "get", "deploy", "fluentd", "-o",
        "jsonpath={.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight}",
    ]);
    assert_eq!(affinity.ok(), "60");
    let required = server.kubectl(&[
        "get", "deploy", "fluentd", "-o",
        "jsonpath={.spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution}",
    ]);
    assert_eq!(required.ok(), "", "the edit removed the required term");
    let generation = server.kubectl(&[
        "get",
        "deploy",
        "fluentd",
        "-o",
        "jsonpath={.metadata.generation}",
    ]);
    assert_eq!(generation.ok(), "2");

    let pods = table_rows(server.kubectl(&["get", "pods", "-o", "wide"]).ok());
    assert_eq!(
        pods[0],
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED",
            "NODE",
            "READINESS",
            "GATES"
        ]
    );
    assert_eq!(pods[1][..3], ["nginx", "0/1", "Pending"]);

    let ds = table_rows(server.kubectl(&["get", "ds", "-n", "kube-system"]).ok());
    assert_eq!(
        ds[0][..6],
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE"
        ]
    );
    assert_eq!(ds[1][0], "fluentd-elasticsearch");

    let deploys = table_rows(server.kubectl(&["get", "deploy"]).ok());
    assert_eq!(
        deploys[0],
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    );
    assert_eq!(deploys.len(), 1 + DEPLOYMENTS.len());

    // Everything that was applied is stored and shown.
    let yaml = server.kubectl(&["get", "deploy", "tomcat-myapp-deploy", "-o", "yaml"]);
    let text = yaml.ok();
    for needle in [
        "podAffinity:",
        "weight: 80",
        "topologyKey: kubernetes.io/hostname",
        "cpu: 500m",
        "memory: 512Mi",
        "kubectl.kubernetes.io/last-applied-configuration",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
    let ds_yaml = server.kubectl(&[
        "get",
        "ds",
        "-n",
        "kube-system",
        "fluentd-elasticsearch",
        "-o",
        "yaml",
    ]);
    let text = ds_yaml.ok();
    for needle in [
        "key: node-role.kubernetes.io/master",
        "mountPath: /var/lib/docker/containers",
        "readOnly: true",
        "path: /var/log",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

#[test]
fn pod_defaults_are_upstream_ones() {
    let server = ApiServer::start().unwrap();
    server
        .kubectl(&["apply", "-f", &seed("nginx-pod.yaml")])
        .ok();
    let get = |path: &str| {
        server
            .kubectl(&["get", "pod", "nginx", "-o", &format!("jsonpath={{{path}}}")])
            .ok()
            .to_string()
    };
    assert_eq!(get(".spec.schedulerName"), "default-scheduler");
    assert_eq!(get(".spec.restartPolicy"), "Always");
    assert_eq!(get(".spec.terminationGracePeriodSeconds"), "30");
    assert_eq!(get(".spec.dnsPolicy"), "ClusterFirst");
    assert_eq!(get(".spec.priority"), "0");
    assert_eq!(get(".spec.preemptionPolicy"), "PreemptLowerPriority");
    assert_eq!(get(".status.phase"), "Pending");
    assert_eq!(get(".status.qosClass"), "BestEffort");
    let tolerations = get(".spec.tolerations[*].key");
    assert_eq!(
        tolerations,
        "node.kubernetes.io/not-ready node.kubernetes.io/unreachable"
    );
    assert_eq!(get(".spec.tolerations[0].tolerationSeconds"), "300");
    // Priority admission computes preemptionPolicy; a pod may not ask for another one.
    let never = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: never\nspec:\n  preemptionPolicy: Never\n  containers:\n  - name: c\n    image: nginx\n";
    let out = server.kubectl_stdin(&["create", "-f", "-"], Some(never));
    assert_eq!(
        out.fails(),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"never\" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name\n"
    );
}

#[test]
fn the_global_default_priority_class_is_named_in_new_pods() {
    let server = ApiServer::start().unwrap();
    let out = server.kubectl(&[
        "create",
        "priorityclass",
        "normal",
        "--value=1000",
        "--global-default=true",
    ]);
    assert_eq!(out.ok(), "priorityclass.scheduling.k8s.io/normal created\n");
    server
        .kubectl(&["apply", "-f", &seed("nginx-pod.yaml")])
        .ok();
    let spec = server.kubectl(&[
        "get",
        "pod",
        "nginx",
        "-o",
        "jsonpath={.spec.priorityClassName} {.spec.priority} {.spec.preemptionPolicy}",
    ]);
    assert_eq!(spec.ok(), "normal 1000 PreemptLowerPriority");
    let given = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: given\nspec:\n  priority: 5\n  containers:\n  - name: c\n    image: nginx\n";
    let out = server.kubectl_stdin(&["create", "-f", "-"], Some(given));
    assert_eq!(
        out.fails(),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"given\" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name\n"
    );
}

//! The fake kubelet as a user meets it: its node registers and is Ready in `kubectl get nodes
//! -o wide`, a pod bound to it runs with an IP, readiness waits for the probe's initial delay,
//! admission rejects what does not fit, deletions finish, a killed kubelet stops renewing its
//! lease, and one process can simulate fifty nodes.

use std::time::Duration;

use serde_json::Value;
use tinykube_tests::{eventually, lift_not_ready_taint, table_rows, ApiServer, Kubelet};

const WAIT: Duration = Duration::from_secs(20);

fn json(server: &ApiServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(server.kubectl(&all).ok()).expect("kubectl printed JSON")
}

fn worker0(server: &ApiServer, extra: &[&str]) -> Kubelet {
    let mut args = vec![
        "--hostname-override",
        "worker0",
        "--node-ip",
        "192.168.10.10",
        "--pod-cidr",
        "10.244.1.0/24",
    ];
    args.extend(extra);
    Kubelet::start(server, &args).expect("kubelet starts")
}

fn ready(server: &ApiServer, node: &str) -> bool {
    let out = server.kubectl(&["get", "node", node, "--no-headers"]);
    out.success
        && table_rows(&out.stdout)
            .first()
            .is_some_and(|r| r[1] == "Ready")
}

#[test]
fn node_registers_and_is_ready_as_in_a_real_cluster() {
    let server = ApiServer::start().unwrap();
    let _kubelet = worker0(&server, &["--node-labels", "disktype=ssd"]);
    assert!(eventually(WAIT, || ready(&server, "worker0")));

    let wide = server
        .kubectl(&["get", "nodes", "-o", "wide"])
        .ok()
        .to_string();
    let rows = table_rows(&wide);
    assert_eq!(
        rows[0][..9],
        [
            "NAME",
            "STATUS",
            "ROLES",
            "AGE",
            "VERSION",
            "INTERNAL-IP",
            "EXTERNAL-IP",
            "OS-IMAGE",
            "KERNEL-VERSION"
        ]
    );
    assert_eq!(rows[1][0], "worker0");
    assert_eq!(rows[1][1], "Ready");
    assert_eq!(rows[1][2], "<none>");
    assert_eq!(rows[1][4], "v1.36.2");
    assert_eq!(rows[1][5], "192.168.10.10");
    assert!(wide.contains("tinykube://"), "{wide}");

    let node = json(&server, &["get", "node", "worker0"]);
    let labels = &node["metadata"]["labels"];
    assert_eq!(labels["kubernetes.io/hostname"], "worker0");
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(labels["disktype"], "ssd");
    assert!(labels["kubernetes.io/arch"].is_string());
    assert_eq!(node["spec"]["podCIDR"], "10.244.1.0/24");
    assert_eq!(node["status"]["capacity"]["cpu"], "4");
    assert_eq!(node["status"]["allocatable"]["memory"], "8Gi");
    let conditions: Vec<(String, String, String)> = node["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
                c["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for want in [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"),
        ("Ready", "True", "KubeletReady"),
    ] {
        assert!(
            conditions.contains(&(want.0.into(), want.1.into(), want.2.into())),
            "{conditions:?}"
        );
    }
    // The kubelet leaves the not-ready taint to the node lifecycle controller.
    assert!(node["spec"]["taints"]
        .to_string()
        .contains("node.kubernetes.io/not-ready"));

    let events = || {
        server
            .kubectl(&[
                "get",
                "events",
                "--field-selector",
                "involvedObject.name=worker0",
            ])
            .stdout
    };
    assert!(
        eventually(WAIT, || events().contains("NodeReady")),
        "{}",
        events()
    );
    for reason in [
        "Starting",
        "NodeHasSufficientMemory",
        "NodeHasNoDiskPressure",
        "NodeHasSufficientPID",
    ] {
        assert!(events().contains(reason), "{reason}: {}", events());
    }
    // As upstream's kubelet, the events refer to the node without a namespace and with its
    // name as UID, so `kubectl describe node` lists them.
    let event = json(
        &server,
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=worker0,reason=Starting",
        ],
    );
    let involved = &event["items"][0]["involvedObject"];
    assert_eq!(involved["kind"], "Node");
    assert_eq!(involved["uid"], "worker0");
    assert!(involved.get("namespace").is_none(), "{involved}");
    assert_eq!(event["items"][0]["metadata"]["namespace"], "default");
    let describe = server
        .kubectl(&["describe", "node", "worker0"])
        .ok()
        .to_string();
    assert!(
        describe.contains("Starting kubelet.")
            && describe.contains("Node worker0 status is now: NodeReady"),
        "{describe}"
    );

    let lease = json(
        &server,
        &["get", "lease", "-n", "kube-node-lease", "worker0"],
    );
    assert_eq!(lease["spec"]["holderIdentity"], "worker0");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 40);
    assert_eq!(lease["metadata"]["ownerReferences"][0]["kind"], "Node");
}

#[test]
fn bound_pods_run_get_ready_are_rejected_when_too_big_and_finish_deleting() {
    let server = ApiServer::start().unwrap();
    let mut kubelet = worker0(&server, &[]);
    assert!(eventually(WAIT, || ready(&server, "worker0")));
    // No node lifecycle controller here: lift the not-ready taint by hand, as it would.
    lift_not_ready_taint(&server, "worker0");

    let pods = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: nginx\nspec:\n  nodeName: worker0\n  containers:\n  - name: nginx\n    image: nginx:1.14.2\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: slow\nspec:\n  nodeName: worker0\n  containers:\n  - name: app\n    image: nginx\n    readinessProbe:\n      httpGet: {port: 80}\n      initialDelaySeconds: 3\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: huge\nspec:\n  nodeName: worker0\n  containers:\n  - name: app\n    image: nginx\n    resources:\n      requests: {cpu: \"5\"}\n";
    // Watch nginx from the start: Pending, ContainerCreating, then Running, as on a real node.
    let watch = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
        .get(format!(
            "{}/api/v1/namespaces/default/pods?watch=true&fieldSelector=metadata.name%3Dnginx&timeoutSeconds=15",
            server.url
        ))
        .send()
        .unwrap();
    let seen = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut states = Vec::new();
        for line in std::io::BufReader::new(watch).lines() {
            let Ok(ev) = serde_json::from_str::<Value>(&line.unwrap_or_default()) else {
                break;
            };
            let status = &ev["object"]["status"];
            let waiting = &status["containerStatuses"][0]["state"]["waiting"]["reason"];
            let state = waiting
                .as_str()
                .or(status["phase"].as_str())
                .unwrap_or("")
                .to_string();
            let done = state == "Running";
            states.push(state);
            if done {
                break;
            }
        }
        states
    });
    server.kubectl_stdin(&["apply", "-f", "-"], Some(pods)).ok();

    let row = |name: &str| -> Vec<String> {
        let out = server.kubectl(&["get", "pod", name, "-o", "wide", "--no-headers"]);
        table_rows(&out.stdout)
            .into_iter()
            .next()
            .unwrap_or_default()
    };
    assert!(eventually(WAIT, || row("nginx")
        .get(2)
        .is_some_and(|s| s == "Running")));
    let nginx = row("nginx");
    assert_eq!(nginx[1], "1/1");
    assert!(nginx[5].starts_with("10.244.1."), "{nginx:?}");
    assert_eq!(nginx[6], "worker0");
    let states = seen.join().unwrap();
    let creating = states.iter().position(|s| s == "ContainerCreating");
    let running = states.iter().position(|s| s == "Running");
    assert!(creating.is_some() && creating < running, "{states:?}");
    let pod = json(&server, &["get", "pod", "nginx"]);
    let status = &pod["status"];
    assert_eq!(status["hostIP"], "192.168.10.10");
    assert!(status["startTime"].is_string());
    let c = &status["containerStatuses"][0];
    assert_eq!(c["ready"], true);
    assert_eq!(c["restartCount"], 0);
    assert_eq!(c["image"], "docker.io/library/nginx:1.14.2");
    assert!(c["state"]["running"]["startedAt"].is_string());
    assert!(c["containerID"]
        .as_str()
        .unwrap()
        .starts_with("containerd://"));
    let types: Vec<&str> = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    for t in [
        "PodReadyToStartContainers",
        "Initialized",
        "ContainersReady",
        "Ready",
        "PodScheduled",
    ] {
        assert!(types.contains(&t), "{types:?}");
    }

    // Readiness waits for the probe's initial delay: the first sight of it Running is not ready.
    let mut first_running = Vec::new();
    assert!(eventually(WAIT, || {
        first_running = row("slow");
        first_running.get(2).is_some_and(|s| s == "Running")
    }));
    assert_eq!(first_running[1], "0/1");
    assert!(eventually(WAIT, || row("slow")
        .get(1)
        .is_some_and(|s| s == "1/1")));
    assert_ne!(row("slow")[5], nginx[5], "each pod has its own IP");

    // Admission: it does not fit in 4 cpus.
    assert!(eventually(WAIT, || row("huge")
        .get(2)
        .is_some_and(|s| s == "OutOfcpu")));
    let huge = json(&server, &["get", "pod", "huge"]);
    assert_eq!(huge["status"]["phase"], "Failed");
    assert_eq!(
        huge["status"]["message"],
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000"
    );
    let events = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=huge",
    ]);
    assert!(events.ok().contains("OutOfcpu"), "{}", events.stdout);

    // A restarted kubelet takes its running pods over as they are: no status is written
    // again (same resourceVersion), and a new pod does not get an IP already in use.
    let rv =
        |name: &str| json(&server, &["get", "pod", name])["metadata"]["resourceVersion"].clone();
    let nginx_rv = rv("nginx");
    kubelet.restart().unwrap();
    let after = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: after\nspec:\n  nodeName: worker0\n  containers:\n  - name: app\n    image: nginx\n";
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(after))
        .ok();
    assert!(eventually(WAIT, || row("after")
        .get(2)
        .is_some_and(|s| s == "Running")));
    assert_eq!(rv("nginx"), nginx_rv);
    let ips: std::collections::HashSet<String> = ["nginx", "slow", "after"]
        .iter()
        .map(|p| row(p)[5].clone())
        .collect();
    assert_eq!(ips.len(), 3, "{ips:?}");

    // Graceful deletion is finished by the kubelet: kubectl delete returns promptly.
    let started = std::time::Instant::now();
    server
        .kubectl(&["delete", "pod", "nginx", "slow", "after"])
        .ok();
    assert!(started.elapsed() < Duration::from_secs(15));
    server.kubectl(&["get", "pod", "nginx"]).fails();
}

#[test]
fn a_killed_kubelet_stops_renewing_its_lease() {
    let server = ApiServer::start().unwrap();
    let mut kubelet = worker0(&server, &["--node-lease-duration-seconds", "4"]);
    let renew = || -> Option<String> {
        let out = server.kubectl(&[
            "get",
            "lease",
            "-n",
            "kube-node-lease",
            "worker0",
            "-o",
            "jsonpath={.spec.renewTime}",
        ]);
        (out.success && !out.stdout.is_empty()).then(|| out.stdout.clone())
    };
    assert!(eventually(WAIT, || renew().is_some()));
    let first = renew().unwrap();
    // Renewed every second (a quarter of 4 s).
    assert!(eventually(WAIT, || renew().is_some_and(|r| r != first)));
    kubelet.kill9();
    // A renewal sent just before the kill may still land.
    std::thread::sleep(Duration::from_millis(300));
    let last = renew().unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        renew().unwrap(),
        last,
        "nobody renews the lease of a dead kubelet"
    );
    assert!(
        ready(&server, "worker0"),
        "NotReady is the node lifecycle controller's call"
    );
}

#[test]
fn one_process_simulates_fifty_ready_nodes() {
    let server = ApiServer::start().unwrap();
    let kubelet = Kubelet::start(
        &server,
        &["--hostname-override", "sim", "--simulate-nodes", "50"],
    )
    .unwrap();
    let ready_count = || {
        let out = server.kubectl(&["get", "nodes", "--no-headers"]);
        table_rows(&out.stdout)
            .iter()
            .filter(|r| r[1] == "Ready")
            .count()
    };
    assert!(eventually(WAIT, || ready_count() == 50));
    let names = server.kubectl(&["get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"]);
    let names: Vec<&str> = names.ok().split_whitespace().collect();
    assert!(names.contains(&"sim-0") && names.contains(&"sim-49"));
    let leases = server.kubectl(&["get", "lease", "-n", "kube-node-lease", "--no-headers"]);
    assert!(
        eventually(WAIT, || table_rows(
            &server
                .kubectl(&["get", "lease", "-n", "kube-node-lease", "--no-headers"])
                .stdout
        )
        .len()
            == 50),
        "{}",
        leases.stdout
    );
    // Pods bound to any of them start, each from its own node's podCIDR.
    for node in ["sim-3", "sim-42"] {
        let pod = format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: on-{node}\nspec:\n  nodeName: {node}\n  containers:\n  - name: c\n    image: nginx\n");
        server
            .kubectl_stdin(&["create", "-f", "-"], Some(&pod))
            .ok();
    }
    let ip = |name: &str| {
        server
            .kubectl(&["get", "pod", name, "-o", "jsonpath={.status.podIP}"])
            .stdout
    };
    assert!(eventually(WAIT, || !ip("on-sim-3").is_empty()
        && !ip("on-sim-42").is_empty()));
    let cidr = |node: &str| {
        server
            .kubectl(&["get", "node", node, "-o", "jsonpath={.spec.podCIDR}"])
            .stdout
    };
    for (pod, node) in [("on-sim-3", "sim-3"), ("on-sim-42", "sim-42")] {
        let net = cidr(node).trim_end_matches("0/24").to_string();
        assert!(
            ip(pod).starts_with(&net),
            "{} not in {}",
            ip(pod),
            cidr(node)
        );
    }
    let listed = kubelet.pods().unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 2);
}

#[test]
fn without_register_node_it_waits_for_the_node_to_be_created() {
    let server = ApiServer::start().unwrap();
    let _kubelet = worker0(&server, &["--register-node=false"]);
    std::thread::sleep(Duration::from_millis(700));
    server.kubectl(&["get", "node", "worker0"]).fails();
    server
        .kubectl_stdin(
            &["create", "-f", "-"],
            Some("apiVersion: v1\nkind: Node\nmetadata:\n  name: worker0\n"),
        )
        .ok();
    assert!(eventually(WAIT, || ready(&server, "worker0")));
    let node = json(&server, &["get", "node", "worker0"]);
    assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "v1.36.2");
}

#[test]
fn bad_flags_are_one_line_errors_and_sigterm_stops_it() {
    let kubelet = tinykube_tests::binary("tinykube-kubelet");
    for bad in [
        &["--capacity", "cpu=lots"][..],
        &["--register-with-taints", "dedicated=gpu"],
        &["--node-labels", "novalue"],
        &["--file-check-frequency", "soon"],
        &["--simulate-nodes", "0"],
    ] {
        let out = std::process::Command::new(&kubelet)
            .args(["--master", "http://127.0.0.1:1"])
            .args(bad)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad:?}");
        assert_eq!(err.lines().count(), 1, "{bad:?}: {err}");
        assert!(err.starts_with("tinykube-kubelet: "), "{err}");
    }
    let server = ApiServer::start().unwrap();
    let mut child = std::process::Command::new(&kubelet)
        .args(["--kubeconfig"])
        .arg(server.kubeconfig())
        .args(["--hostname-override", "worker0", "--read-only-port", "0"])
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(eventually(WAIT, || ready(&server, "worker0")));
    let _ = std::process::Command::new("kill")
        .arg(child.id().to_string())
        .status();
    let mut status = None;
    assert!(eventually(Duration::from_secs(5), || {
        status = child.try_wait().unwrap();
        status.is_some()
    }));
    assert!(status.unwrap().success());
}

#[test]
fn conditions_changed_by_someone_else_are_posted_again() {
    let server = ApiServer::start().unwrap();
    let _kubelet = worker0(
        &server,
        &[
            "--node-status-update-frequency",
            "500ms",
            "--node-status-report-frequency",
            "1h",
        ],
    );
    assert!(eventually(WAIT, || ready(&server, "worker0")));
    // What the node lifecycle controller writes when heartbeats stop.
    let unknown = r#"{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown","message":"Kubelet stopped posting node status."}]}}"#;
    let patched = server.kubectl(&[
        "patch",
        "node",
        "worker0",
        "--subresource=status",
        "--type=strategic",
        "-p",
        unknown,
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
    ]);
    assert_eq!(patched.ok(), "Unknown");
    assert!(eventually(WAIT, || ready(&server, "worker0")));
}

/// Before its grace-0 delete the kubelet writes the stopped pod's last status, as upstream's
/// status manager does: containers terminated, not ready, the sandbox gone and the phase
/// terminal (a watch shows `0/1 Terminating`). A finalizer holds the pod to look at it.
#[test]
fn a_deleted_pods_last_status_is_terminal() {
    let server = ApiServer::start().unwrap();
    let _kubelet = worker0(&server, &[]);
    assert!(eventually(WAIT, || ready(&server, "worker0")));
    lift_not_ready_taint(&server, "worker0");
    let pods = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  finalizers: [example.com/hold]\nspec:\n  nodeName: worker0\n  containers:\n  - name: nginx\n    image: nginx\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: sh\n  finalizers: [example.com/hold]\nspec:\n  nodeName: worker0\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: sh\n    image: busybox\n    command: [sh, -c, 'sleep 3600']\n";
    server.kubectl_stdin(&["apply", "-f", "-"], Some(pods)).ok();
    let running = |name: &str| {
        json(&server, &["get", "pod", name])["status"]["containerStatuses"][0]["ready"] == true
    };
    assert!(eventually(WAIT, || running("web") && running("sh")));
    server
        .kubectl(&["delete", "pod", "web", "sh", "--wait=false"])
        .ok();
    // (pod, phase, Ready's reason, exit code): nginx exits 0 on SIGTERM; the shell ignores it
    // and is killed after its grace period.
    for (name, phase, reason, code) in [
        ("web", "Succeeded", "PodCompleted", 0),
        ("sh", "Failed", "ContainersNotReady", 137),
    ] {
        assert!(
            eventually(WAIT, || json(&server, &["get", "pod", name])["status"]
                ["phase"]
                == phase),
            "{name} reaches {phase}"
        );
        let pod = json(&server, &["get", "pod", name]);
        let status = &pod["status"];
        let condition = |type_: &str| {
            status["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == type_)
                .cloned()
                .unwrap()
        };
        assert_eq!(condition("Ready")["status"], "False", "{name}");
        assert_eq!(condition("Ready")["reason"], reason, "{name}");
        assert_eq!(condition("PodReadyToStartContainers")["status"], "False");
        let c = &status["containerStatuses"][0];
        assert_eq!(c["ready"], false);
        assert_eq!(c["state"]["terminated"]["exitCode"], code, "{name}");
        let row = server.kubectl(&["get", "pod", name, "--no-headers"]);
        let rows = table_rows(row.ok());
        assert_eq!(rows[0][1..3], ["0/1", "Terminating"]);
        server
            .kubectl(&[
                "patch",
                "pod",
                name,
                "--type=json",
                "-p",
                r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
            ])
            .ok();
    }
}

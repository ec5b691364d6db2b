//! DaemonSets as the course uses them (daemonset.txt, the CKA scheduling syllabus): the fluentd
//! DaemonSet runs one pod per node including the tainted master, its pods carry the injected
//! node affinity and tolerations, a nodeSelector follows node labels, cordoned nodes keep
//! their pods, `kubectl get ds` shows upstream's columns, set image + rollout status/history/
//! undo, and `delete --cascade=orphan` leaves pods a new DaemonSet adopts.

use std::time::Duration;

use tinykube_tests::{
    eventually, mark_all_ready, ready_nodes, table_rows, ApiServer, ControllerManager, Scheduler,
};

const FLUENTD: &str = r#"apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: fluentd-elasticsearch
  namespace: kube-system
  labels:
    k8s-app: fluentd-logging
spec:
  selector:
    matchLabels:
      name: fluentd-elasticsearch
  template:
    metadata:
      labels:
        name: fluentd-elasticsearch
    spec:
      tolerations:
      # this toleration is to have the daemonset runnable on master nodes
      # remove it if your masters can't run pods
      - key: node-role.kubernetes.io/master
        effect: NoSchedule
      containers:
      - name: fluentd-elasticsearch
        image: quay.io/fluentd_elasticsearch/fluentd:v2.5.2
        resources:
          limits:
            memory: 200Mi
          requests:
            cpu: 100m
            memory: 200Mi
        volumeMounts:
        - name: varlog
          mountPath: /var/log
        - name: varlibdockercontainers
          mountPath: /var/lib/docker/containers
          readOnly: true
      terminationGracePeriodSeconds: 30
      volumes:
      - name: varlog
        hostPath:
          path: /var/log
      - name: varlibdockercontainers
        hostPath:
          path: /var/lib/docker/containers
"#;

const T: Duration = Duration::from_secs(15);

/// `kubectl get pods -o wide` rows: (name, node) for pods matching `selector`.
fn pods_by_node(server: &ApiServer, ns: &str, selector: &str) -> Vec<(String, String)> {
    let out = server.kubectl(&[
        "get", "pods", "-n", ns, "-l", selector, "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values[0]} {.metadata.deletionTimestamp}{\"\\n\"}{end}",
    ]);
    let mut v: Vec<(String, String)> = out
        .stdout
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        // Terminating pods (bound pods wait for a kubelet) are not counted.
        .filter(|c| c.len() == 3 && c[2].is_empty())
        .map(|c| (c[0].to_string(), c[1].to_string()))
        .collect();
    v.sort_by(|a, b| a.1.cmp(&b.1));
    v
}

fn nodes_of(server: &ApiServer, ns: &str, selector: &str) -> Vec<String> {
    pods_by_node(server, ns, selector)
        .into_iter()
        .map(|(_, n)| n)
        .collect()
}

/// The `kubectl get ds` row of `name` (without NAME and AGE).
fn ds_row(server: &ApiServer, ns: &str, name: &str) -> Vec<String> {
    let out = server.kubectl(&["get", "ds", "-n", ns, name]);
    let rows = table_rows(out.ok());
    rows.get(1)
        .map(|r| r[1..r.len() - 1].to_vec())
        .unwrap_or_default()
}

#[test]
fn fluentd_runs_one_pod_per_node_including_the_tainted_master() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 3, true);
    let _sched = Scheduler::start(&server, &[]).unwrap();
    // The pod garbage collector deletes the pod of a deleted node (at the end).
    let _cm = ControllerManager::start(
        &server,
        &[
            "--controllers=daemonset,podgc",
            "--pod-gc-check-period=500ms",
        ],
    )
    .unwrap();
    let file = tinykube_tests::manifest(&server.scratch(), "daemonset.yaml", FLUENTD);
    let out = server.kubectl(&["apply", "-f", file.to_str().unwrap()]);
    assert_eq!(
        out.ok().trim(),
        "daemonset.apps/fluentd-elasticsearch created"
    );
    let sel = "name=fluentd-elasticsearch";
    assert!(
        eventually(T, || nodes_of(&server, "kube-system", sel)
            == ["master0", "worker0", "worker1", "worker2"]),
        "{:?}",
        pods_by_node(&server, "kube-system", sel)
    );
    // The scheduler places each pod on the node its affinity names.
    assert!(eventually(T, || {
        let out = server.kubectl(&["get", "pods", "-n", "kube-system", "-o", "wide"]);
        let rows = table_rows(out.ok());
        rows.len() == 5
            && rows[1..].iter().all(|r| {
                let (name, node) = (&r[0], &r[6]);
                pods_by_node(&server, "kube-system", sel)
                    .iter()
                    .any(|(n, target)| n == name && target == node)
            })
    }));
    let header = table_rows(server.kubectl(&["get", "ds", "-n", "kube-system"]).ok())[0].clone();
    assert_eq!(
        header,
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "NODE",
            "SELECTOR",
            "AGE"
        ]
    );
    assert!(eventually(T, || ds_row(
        &server,
        "kube-system",
        "fluentd-elasticsearch"
    ) == ["4", "4", "0", "4", "0", "<none>"]));
    assert!(eventually(T, || {
        mark_all_ready(&server, "kube-system", sel);
        ds_row(&server, "kube-system", "fluentd-elasticsearch")
            == ["4", "4", "4", "4", "4", "<none>"]
    }));

    // What `kubectl edit pod` shows in the course: the pinned affinity and the tolerations.
    let (pod, node) = pods_by_node(&server, "kube-system", sel).remove(0);
    let yaml = server.kubectl(&["get", "pod", &pod, "-n", "kube-system", "-o", "yaml"]);
    let yaml = yaml.ok();
    let affinity = format!(
        "    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchFields:\n          - key: metadata.name\n            operator: In\n            values:\n            - {node}\n"
    );
    assert!(yaml.contains(&affinity), "{yaml}");
    let tolerations = "  tolerations:\n  - effect: NoSchedule\n    key: node-role.kubernetes.io/master\n  - effect: NoExecute\n    key: node.kubernetes.io/not-ready\n    operator: Exists\n  - effect: NoExecute\n    key: node.kubernetes.io/unreachable\n    operator: Exists\n  - effect: NoSchedule\n    key: node.kubernetes.io/disk-pressure\n    operator: Exists\n  - effect: NoSchedule\n    key: node.kubernetes.io/memory-pressure\n    operator: Exists\n  - effect: NoSchedule\n    key: node.kubernetes.io/pid-pressure\n    operator: Exists\n  - effect: NoSchedule\n    key: node.kubernetes.io/unschedulable\n    operator: Exists\n";
    assert!(yaml.contains(tolerations), "{yaml}");
    for want in [
        "generateName: fluentd-elasticsearch-",
        "controller-revision-hash: ",
        "pod-template-generation: \"1\"",
        "    blockOwnerDeletion: true\n    controller: true\n    kind: DaemonSet\n    name: fluentd-elasticsearch\n",
    ] {
        assert!(yaml.contains(want), "{want} in {yaml}");
    }
    let events = server.kubectl(&["get", "events", "-n", "kube-system"]);
    assert!(
        events.ok().contains(&format!("Created pod: {pod}")),
        "{}",
        events.stdout
    );

    // A new node gets a pod; a deleted node loses it (to the pod garbage collector).
    ready_nodes_named(&server, "worker3");
    assert!(eventually(T, || nodes_of(&server, "kube-system", sel)
        .contains(&"worker3".to_string())));
    server.kubectl(&["delete", "node", "worker3"]).ok();
    assert!(eventually(T, || nodes_of(&server, "kube-system", sel)
        == ["master0", "worker0", "worker1", "worker2"]));
}

/// One more Ready node, created the way `ready_nodes` does.
fn ready_nodes_named(server: &ApiServer, name: &str) {
    let yaml = format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n    kubernetes.io/hostname: {name}\n");
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(&yaml))
        .ok();
    server
        .kubectl(&[
            "taint",
            "nodes",
            name,
            "node.kubernetes.io/not-ready:NoSchedule-",
        ])
        .ok();
}

fn agent(image: &str, extra_spec: &str, strategy: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n  selector:\n    matchLabels:\n      app: agent\n{strategy}  template:\n    metadata:\n      labels:\n        app: agent\n    spec:\n{extra_spec}      containers:\n      - name: agent\n        image: {image}\n"
    )
}

fn agent_pods(server: &ApiServer) -> Vec<(String, String)> {
    pods_by_node(server, "default", "app=agent")
}

#[test]
fn node_selector_follows_labels_and_cordoned_nodes_keep_their_pods() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 3, false);
    let _cm = ControllerManager::start(&server, &["--controllers=daemonset"]).unwrap();
    let yaml = agent("nginx", "      nodeSelector:\n        disktype: ssd\n", "");
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&yaml))
        .ok();
    assert!(eventually(T, || ds_row(&server, "default", "agent")
        == ["0", "0", "0", "0", "0", "disktype=ssd"]));
    assert!(agent_pods(&server).is_empty());

    // The syllabus: `kubectl label nodes <your-node-name> disktype=ssd`.
    server
        .kubectl(&["label", "nodes", "worker0", "disktype=ssd"])
        .ok();
    server
        .kubectl(&["label", "nodes", "worker2", "disktype=ssd"])
        .ok();
    let nodes = |s: &ApiServer| nodes_of(s, "default", "app=agent");
    assert!(
        eventually(T, || nodes(&server) == ["worker0", "worker2"]),
        "{:?}",
        nodes(&server)
    );
    assert!(eventually(T, || ds_row(&server, "default", "agent")
        == ["2", "2", "0", "2", "0", "disktype=ssd"]));

    // A cordoned node keeps its daemon pod (the unschedulable toleration).
    server.kubectl(&["cordon", "worker0"]).ok();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(nodes(&server), ["worker0", "worker2"]);
    assert_eq!(ds_row(&server, "default", "agent")[0], "2");

    // A label removed: the pod goes. An untolerated NoExecute taint: the pod goes.
    server
        .kubectl(&["label", "nodes", "worker2", "disktype-"])
        .ok();
    assert!(
        eventually(T, || nodes(&server) == ["worker0"]),
        "{:?}",
        nodes(&server)
    );
    // Only a NoSchedule taint: the running pod stays.
    server
        .kubectl(&["taint", "nodes", "worker0", "dedicated=db:NoSchedule"])
        .ok();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(nodes(&server), ["worker0"]);
    // Not desired there any more, but kept: counted as misscheduled.
    assert!(eventually(T, || {
        let out = server.kubectl(&[
            "get",
            "ds",
            "agent",
            "-o",
            "jsonpath={.status.desiredNumberScheduled} {.status.numberMisscheduled}",
        ]);
        out.stdout == "0 1"
    }));
    server
        .kubectl(&["taint", "nodes", "worker0", "dedicated=db:NoExecute"])
        .ok();
    assert!(
        eventually(T, || nodes(&server).is_empty()),
        "{:?}",
        nodes(&server)
    );
}

#[test]
fn set_image_rollout_status_history_and_undo() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 3, false);
    let _cm = ControllerManager::start(&server, &["--controllers=daemonset"]).unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&agent("nginx:1.24", "", "")))
        .ok();
    assert!(eventually(T, || {
        mark_all_ready(&server, "default", "app=agent");
        ds_row(&server, "default", "agent") == ["3", "3", "3", "3", "3", "<none>"]
    }));
    let status = server.kubectl(&["rollout", "status", "ds/agent", "--timeout=10s"]);
    assert_eq!(
        status.ok(),
        "daemon set \"agent\" successfully rolled out\n"
    );
    let revisions = server.kubectl(&["get", "controllerrevisions", "-o", "name"]);
    assert_eq!(revisions.ok().lines().count(), 1, "{}", revisions.stdout);

    server
        .kubectl(&["set", "image", "ds/agent", "agent=nginx:1.25"])
        .ok();
    // A kubelet stand-in marks pods ready while `kubectl rollout status` waits.
    let done = std::sync::atomic::AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                mark_all_ready(&server, "default", "app=agent");
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let out = server.kubectl(&["rollout", "status", "ds/agent", "--timeout=30s"]);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        out
    });
    let text = out.ok();
    assert!(
        text.ends_with("daemon set \"agent\" successfully rolled out\n"),
        "{text}"
    );
    assert!(
        text.contains("Waiting for daemon set \"agent\" rollout to finish: "),
        "{text}"
    );
    let images = server.kubectl(&[
        "get",
        "pods",
        "-l",
        "app=agent",
        "-o",
        "jsonpath={.items[*].spec.containers[0].image}",
    ]);
    assert_eq!(images.ok(), "nginx:1.25 nginx:1.25 nginx:1.25");

    let history = server.kubectl(&["rollout", "history", "ds/agent"]);
    let rows = table_rows(history.ok());
    assert_eq!(rows[0], ["daemonset.apps/agent"]);
    assert_eq!(
        rows[1..],
        [
            vec!["REVISION", "CHANGE-CAUSE"],
            vec!["1", "<none>"],
            vec!["2", "<none>"]
        ]
    );
    let one = server.kubectl(&["rollout", "history", "ds/agent", "--revision=1"]);
    assert!(
        one.ok().contains("Image:\tnginx:1.24") || one.stdout.contains("Image:      nginx:1.24"),
        "{}",
        one.stdout
    );

    let undo = server.kubectl(&["rollout", "undo", "ds/agent"]);
    assert_eq!(undo.ok(), "daemonset.apps/agent rolled back\n");
    assert!(eventually(Duration::from_secs(30), || {
        mark_all_ready(&server, "default", "app=agent");
        let images = server.kubectl(&[
            "get",
            "pods",
            "-l",
            "app=agent",
            "-o",
            "jsonpath={.items[*].spec.containers[0].image}",
        ]);
        images.stdout == "nginx:1.24 nginx:1.24 nginx:1.24"
            && ds_row(&server, "default", "agent") == ["3", "3", "3", "3", "3", "<none>"]
    }));
    // The old revision became the newest: revisions 2 and 3.
    let history = server.kubectl(&["rollout", "history", "ds/agent"]);
    let rows = table_rows(history.ok());
    assert_eq!(
        rows[2..],
        [vec!["2", "<none>"], vec!["3", "<none>"]],
        "{}",
        history.stdout
    );
}

#[test]
fn orphaned_pods_are_adopted_by_a_new_daemonset() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 2, false);
    let _cm =
        ControllerManager::start(&server, &["--controllers=daemonset,garbagecollector"]).unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&agent("nginx:1.24", "", "")))
        .ok();
    assert!(eventually(T, || agent_pods(&server).len() == 2));
    let before = agent_pods(&server);
    server
        .kubectl(&["delete", "ds", "agent", "--cascade=orphan"])
        .ok();
    assert!(eventually(T, || {
        let owners = server.kubectl(&[
            "get",
            "pods",
            "-l",
            "app=agent",
            "-o",
            "jsonpath={.items[*].metadata.ownerReferences}",
        ]);
        owners.stdout.is_empty()
    }));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(agent_pods(&server), before, "orphaned pods stay");

    // A new DaemonSet (another image, OnDelete) adopts them and leaves them alone.
    let on_delete = "  updateStrategy:\n    type: OnDelete\n";
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&agent("nginx:1.25", "", on_delete)),
        )
        .ok();
    assert!(eventually(T, || ds_row(&server, "default", "agent")
        == ["2", "2", "0", "0", "0", "<none>"]));
    assert_eq!(agent_pods(&server), before);
    let owner = server.kubectl(&[
        "get",
        "pod",
        &before[0].0,
        "-o",
        "jsonpath={.metadata.ownerReferences[0].name}",
    ]);
    assert_eq!(owner.ok(), "agent");
    // OnDelete: a deleted pod comes back with the new template.
    server.kubectl(&["delete", "pod", &before[0].0]).ok();
    assert!(eventually(T, || ds_row(&server, "default", "agent")
        == ["2", "2", "0", "1", "0", "<none>"]));
    let pods = agent_pods(&server);
    assert_eq!(pods.len(), 2);
    assert!(!pods.iter().any(|(n, _)| n == &before[0].0));
    assert!(pods.contains(&before[1]));
}

#[test]
fn failed_pods_are_replaced_and_a_restarted_manager_makes_no_duplicates() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 4, false);
    let mut cm = ControllerManager::start(&server, &["--controllers=daemonset"]).unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&agent("nginx", "", "")))
        .ok();
    assert!(eventually(T, || agent_pods(&server).len() == 4));
    let (victim, node) = agent_pods(&server).remove(0);
    server.patch_status("pod", &victim, r#"{"status":{"phase":"Failed"}}"#);
    let want =
        format!("Found failed daemon pod default/{victim} on node {node}, will try to kill it");
    assert!(eventually(T, || {
        let events = server.kubectl(&[
            "get",
            "events",
            "--field-selector",
            "reason=FailedDaemonPod",
        ]);
        events.stdout.contains(&want)
    }));
    assert!(eventually(T, || {
        let pods = agent_pods(&server);
        pods.len() == 4 && !pods.iter().any(|(n, _)| n == &victim)
    }));

    // Restarted at once, many times over: never two pods for a node.
    for _ in 0..3 {
        cm.restart().unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }
    ready_nodes_named(&server, "worker9");
    assert!(eventually(T, || agent_pods(&server).len() == 5));
    std::thread::sleep(Duration::from_millis(500));
    let nodes = nodes_of(&server, "default", "app=agent");
    assert_eq!(
        nodes,
        ["worker0", "worker1", "worker2", "worker3", "worker9"]
    );
}

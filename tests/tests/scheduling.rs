//! Placement as the course describes it, with real kubectl and the real scheduler: nodeSelector,
//! nodeName, required and preferred node affinity, taints, insufficient cpu, host ports, and a
//! second scheduler that only takes its own pods. Messages and events as upstream's.

use std::time::Duration;

use tinykube_tests::{eventually, ready_nodes, ApiServer, Scheduler};

fn pod(name: &str, spec_extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: c\n    image: nginx\n{spec_extra}"
    )
}

fn node_of(server: &ApiServer, name: &str) -> String {
    server
        .kubectl(&["get", "pod", name, "-o", "jsonpath={.spec.nodeName}"])
        .ok()
        .to_string()
}

fn scheduled(server: &ApiServer, name: &str) -> String {
    let ok = eventually(Duration::from_secs(10), || {
        !node_of(server, name).is_empty()
    });
    if !ok {
        let why = server.kubectl(&["get", "pod", name, "-o", "jsonpath={.status.conditions}"]);
        panic!("{name} was not scheduled: {}", why.stdout);
    }
    node_of(server, name)
}

#[test]
fn placements_follow_the_course() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 3, true);
    server
        .kubectl(&["label", "nodes", "worker0", "disktype=ssd"])
        .ok();
    server
        .kubectl(&["label", "nodes", "worker1", "project=project2", "ssd=true"])
        .ok();
    server
        .kubectl(&["label", "nodes", "worker2", "project=project2"])
        .ok();
    let _scheduler = Scheduler::start(&server, &["--seed", "1"]).unwrap();

    // nodeSelector.
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&pod("nginx", "  nodeSelector:\n    disktype: ssd\n")),
        )
        .ok();
    assert_eq!(scheduled(&server, "nginx"), "worker0");
    let events = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=nginx",
    ]);
    assert!(
        events
            .ok()
            .contains("Successfully assigned default/nginx to worker0"),
        "{events:?}"
    );

    // Preferred affinity 60 (project2) + 30 (ssd): the 90-point node wins.
    let preferred = "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 60\n        preference:\n          matchExpressions:\n          - {key: project, operator: In, values: [project2]}\n      - weight: 30\n        preference:\n          matchExpressions:\n          - {key: ssd, operator: In, values: [\"true\"]}\n";
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&pod("preferred", preferred)))
        .ok();
    assert_eq!(scheduled(&server, "preferred"), "worker1");

    // Required affinity with both expressions: only worker1 has project2 and ssd.
    let required = "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - {key: project, operator: In, values: [project2]}\n          - {key: ssd, operator: In, values: [\"true\"]}\n";
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&pod("required", required)))
        .ok();
    assert_eq!(scheduled(&server, "required"), "worker1");

    // A toleration for the master taint plus a selector for it.
    let on_master = "  nodeSelector:\n    node-role.kubernetes.io/master: \"\"\n  tolerations:\n  - {key: node-role.kubernetes.io/master, effect: NoSchedule}\n";
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&pod("on-master", on_master)))
        .ok();
    assert_eq!(scheduled(&server, "on-master"), "master0");

    // Too much cpu: Pending, with upstream's message on the event and the condition.
    let big = "    resources:\n      requests:\n        cpu: \"5\"\n        memory: 256Mi\n";
    let text = pod("fs-cpu", "").replace("    image: nginx\n", &format!("    image: nginx\n{big}"));
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&text))
        .ok();
    let expected = "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu. no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.";
    assert!(
        eventually(Duration::from_secs(10), || server
            .kubectl(&[
                "get",
                "pod",
                "fs-cpu",
                "-o",
                "jsonpath={.status.conditions[0].message}"
            ])
            .ok()
            == expected),
        "condition message"
    );
    let describe = server.kubectl(&["describe", "pod", "fs-cpu"]);
    let text = describe.ok();
    assert!(text.contains("FailedScheduling"), "{text}");
    assert!(text.contains(expected), "{text}");

    // A missing label in a required term leaves the pod Pending.
    let missing = "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - {key: accelerator, operator: In, values: [nvidia-tesla-p100]}\n";
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&pod("fs-node-affinity", missing)),
        )
        .ok();
    let expected = "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.";
    assert!(eventually(Duration::from_secs(10), || server
        .kubectl(&[
            "get",
            "pod",
            "fs-node-affinity",
            "-o",
            "jsonpath={.status.conditions[0].message}"
        ])
        .ok()
        == expected));
    // Labelling a node that fits brings the pending pod onto it.
    server
        .kubectl(&["label", "nodes", "worker2", "accelerator=nvidia-tesla-p100"])
        .ok();
    assert_eq!(scheduled(&server, "fs-node-affinity"), "worker2");
}

#[test]
fn a_second_scheduler_takes_only_its_own_pods() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 2, false);
    let _default = Scheduler::start(&server, &[]).unwrap();
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&pod("mine", "  schedulerName: my-scheduler\n")),
        )
        .ok();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&pod("theirs", "")))
        .ok();
    scheduled(&server, "theirs");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        node_of(&server, "mine"),
        "",
        "the default scheduler never touches it"
    );
    let none = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=mine",
    ]);
    assert!(none.stderr.contains("No resources found"), "{none:?}");

    let _mine = Scheduler::start(&server, &["--scheduler-name", "my-scheduler"]).unwrap();
    scheduled(&server, "mine");
    let events = server.kubectl(&[
        "get",
        "events",
        "-o",
        "custom-columns=POD:.involvedObject.name,BY:.reportingComponent",
        "--no-headers",
    ]);
    let text = events.ok();
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["mine", "my-scheduler"]),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["theirs", "default-scheduler"]),
        "{text}"
    );
}

#[test]
fn pod_affinity_and_anti_affinity_by_topology() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 3, true);
    server
        .kubectl(&["label", "nodes", "worker0", "worker1", "project=project1"])
        .ok();
    server
        .kubectl(&["label", "nodes", "worker2", "project=project2"])
        .ok();
    let _scheduler = Scheduler::start(&server, &[]).unwrap();

    // tomcat follows mysql into its project (topologyKey: project).
    let mysql = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: mysql\n  labels: {app: mysql}\nspec:\n  nodeName: worker2\n  containers:\n  - {name: mysql, image: mysql}\n";
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(mysql))
        .ok();
    let tomcat = "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchExpressions:\n          - {key: app, operator: In, values: [mysql]}\n        namespaces: [default]\n        topologyKey: project\n";
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&pod("tomcat", tomcat)))
        .ok();
    assert_eq!(scheduled(&server, "tomcat"), "worker2");

    // Four fluentd pods that repel each other per hostname: three nodes, one stays Pending.
    let anti = "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchExpressions:\n          - {key: app, operator: In, values: [fluentd]}\n        namespaces: [default]\n        topologyKey: kubernetes.io/hostname\n";
    for i in 0..4 {
        let text = pod(&format!("fluentd-{i}"), anti)
            .replace("metadata:\n", "metadata:\n  labels: {app: fluentd}\n");
        server
            .kubectl_stdin(&["apply", "-f", "-"], Some(&text))
            .ok();
    }
    let expected = "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) didn't match pod anti-affinity rules. no new claims to deallocate, preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.";
    let settled = eventually(Duration::from_secs(10), || {
        let placed: Vec<String> = (0..4)
            .map(|i| node_of(&server, &format!("fluentd-{i}")))
            .collect();
        placed.iter().filter(|n| !n.is_empty()).count() == 3
            && server
                .kubectl(&["get", "pods", "-o", "jsonpath={.items[*].status.conditions[?(@.reason==\"Unschedulable\")].message}"])
                .ok()
                .contains(expected)
    });
    assert!(
        settled,
        "three placed on distinct workers, the fourth Pending with upstream's message"
    );
    let mut nodes: Vec<String> = (0..4)
        .map(|i| node_of(&server, &format!("fluentd-{i}")))
        .filter(|n| !n.is_empty())
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["worker0", "worker1", "worker2"]);

    // A pod whose affinity nothing satisfies waits, and is placed as soon as the pod it needs is
    // bound somewhere (upstream retries on AssignedPodAdd), not minutes later.
    let cache = tomcat.replace("values: [mysql]", "values: [redis]");
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&pod("tomcat-cache", &cache)))
        .ok();
    assert!(eventually(Duration::from_secs(10), || server
        .kubectl(&[
            "get",
            "pod",
            "tomcat-cache",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].reason}",
        ])
        .ok()
        == "Unschedulable"));
    let redis = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: redis\n  labels: {app: redis}\nspec:\n  nodeSelector: {project: project1}\n  containers:\n  - {name: redis, image: redis}\n";
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(redis))
        .ok();
    scheduled(&server, "redis");
    // topologyKey: project, so any node of project1.
    let placed = scheduled(&server, "tomcat-cache");
    assert!(placed == "worker0" || placed == "worker1", "{placed}");
}

#[test]
fn leader_election_hands_over_when_the_leader_dies() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 2, false);
    let flags = [
        "--leader-elect",
        "--lock-object-name",
        "my-lock",
        "--lock-object-namespace",
        "kube-system",
        "--leader-elect-lease-duration",
        "2s",
        "--leader-elect-renew-deadline",
        "1500ms",
        "--leader-elect-retry-period",
        "200ms",
    ];
    let holder = || {
        server
            .kubectl(&[
                "get",
                "lease",
                "my-lock",
                "-n",
                "kube-system",
                "-o",
                "jsonpath={.spec.holderIdentity}",
            ])
            .stdout
            .clone()
    };
    let first = Scheduler::start(&server, &flags).unwrap();
    assert!(
        eventually(Duration::from_secs(10), || !holder().is_empty()),
        "the first scheduler leads"
    );
    let leader = holder();
    let _second = Scheduler::start(&server, &flags).unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&pod("a", "")))
        .ok();
    scheduled(&server, "a");
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(holder(), leader, "the second scheduler waits");

    drop(first); // SIGKILL: no release, the lease must expire.
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&pod("b", "")))
        .ok();
    scheduled(&server, "b");
    let next = holder();
    assert!(
        !next.is_empty() && next != leader,
        "{next} took over from {leader}"
    );
    let transitions = server.kubectl(&[
        "get",
        "lease",
        "my-lock",
        "-n",
        "kube-system",
        "-o",
        "jsonpath={.spec.leaseTransitions}",
    ]);
    assert_eq!(transitions.ok(), "1");
    // Each leader announced itself on the Lease, as upstream's LeaderElection events.
    let events = server
        .kubectl(&[
            "get",
            "events",
            "-n",
            "kube-system",
            "--field-selector",
            "reason=LeaderElection,involvedObject.name=my-lock",
            "-o",
            "jsonpath={range .items[*]}{.source.component} {.message}{\"\\n\"}{end}",
        ])
        .ok()
        .to_string();
    for id in [&leader, &next] {
        assert!(
            events.contains(&format!("default-scheduler {id} became leader")),
            "{events}"
        );
    }
}

#[test]
fn health_and_metrics_are_served() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 1, false);
    let port = tinykube_tests::free_port().to_string();
    let _scheduler = Scheduler::start(&server, &["--secure-port", &port]).unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&pod("ok", "")))
        .ok();
    scheduled(&server, "ok");
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&pod("stuck", "  nodeSelector:\n    disktype: none\n")),
        )
        .ok();
    let http = server.http();
    let base = format!("http://127.0.0.1:{port}");
    assert!(eventually(Duration::from_secs(10), || {
        http
        .get(format!("{base}/metrics"))
        .send()
        .ok()
        .and_then(|r| r.text().ok())
        .is_some_and(|t| t.contains("scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"unschedulable\"} 1")
            && t.contains("scheduler_pending_pods{queue=\"unschedulable\"} 1"))
    }));
    let text = http
        .get(format!("{base}/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(text.contains("scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 1"), "{text}");
    assert!(text.contains("scheduler_scheduling_attempt_duration_seconds_count{profile=\"default-scheduler\",result=\"scheduled\"} 1"), "{text}");
    assert_eq!(
        http.get(format!("{base}/healthz"))
            .send()
            .unwrap()
            .text()
            .unwrap(),
        "ok"
    );
}

#[test]
fn topology_spread_keeps_zones_balanced() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 3, false);
    server
        .kubectl(&["label", "nodes", "worker0", "worker1", "zone=a"])
        .ok();
    server
        .kubectl(&["label", "nodes", "worker2", "zone=b"])
        .ok();
    let _scheduler = Scheduler::start(&server, &["--seed", "7"]).unwrap();
    let spread = "  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: zone\n    whenUnsatisfiable: DoNotSchedule\n    labelSelector:\n      matchLabels: {app: web}\n";
    for i in 0..4 {
        let text = pod(&format!("web-{i}"), spread)
            .replace("metadata:\n", "metadata:\n  labels: {app: web}\n");
        server
            .kubectl_stdin(&["apply", "-f", "-"], Some(&text))
            .ok();
        scheduled(&server, &format!("web-{i}"));
    }
    let zone_b = (0..4)
        .filter(|i| node_of(&server, &format!("web-{i}")) == "worker2")
        .count();
    assert_eq!(zone_b, 2, "two pods in each zone");
}

#[test]
fn a_higher_priority_pod_preempts_lower_priority_ones() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 2, false);
    let classes = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: low\nvalue: 100\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\ndescription: for the preemptor\n";
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(classes))
        .ok();
    let _scheduler = Scheduler::start(&server, &["--seed", "3"]).unwrap();
    // Each node (4 cpu) is filled by one low-priority pod of 3 cpu; the first keeps running
    // longer, so the second is the cheaper victim.
    let with_cpu = |name: &str, class: &str, cpu: &str| {
        pod(
            name,
            &format!("  priorityClassName: {class}\n  terminationGracePeriodSeconds: 0\n"),
        )
        .replace(
            "    image: nginx\n",
            &format!("    image: nginx\n    resources:\n      requests:\n        cpu: \"{cpu}\"\n"),
        )
    };
    for name in ["low-a", "low-b"] {
        server
            .kubectl_stdin(&["apply", "-f", "-"], Some(&with_cpu(name, "low", "3")))
            .ok();
        scheduled(&server, name);
    }
    assert_eq!(
        server
            .kubectl(&["get", "pod", "low-a", "-o", "jsonpath={.spec.priority}"])
            .ok(),
        "100"
    );

    // A pod of the same low priority that fits nowhere cannot preempt.
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&with_cpu("low-c", "low", "2")))
        .ok();
    let low_message = "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.";
    assert!(
        eventually(Duration::from_secs(10), || server
            .kubectl(&[
                "get",
                "pod",
                "low-c",
                "-o",
                "jsonpath={.status.conditions[0].message}"
            ])
            .ok()
            == low_message),
        "{:?}",
        server.kubectl(&["get", "pod", "low-c", "-o", "yaml"])
    );

    // The high-priority pod evicts exactly one low pod and takes its node.
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&with_cpu("high", "high", "3")))
        .ok();
    let node = scheduled(&server, "high");
    let left = server
        .kubectl(&["get", "pods", "-o", "jsonpath={.items[*].metadata.name}"])
        .ok()
        .to_string();
    let lows: Vec<&str> = left.split(' ').filter(|n| n.starts_with("low-")).collect();
    assert_eq!(lows.len(), 2, "one of low-a/low-b was preempted: {left}");
    assert!(lows.contains(&"low-c"), "{left}");
    let uid = server
        .kubectl(&["get", "pod", "high", "-o", "jsonpath={.metadata.uid}"])
        .ok()
        .to_string();
    let events = server.kubectl(&["get", "events", "--field-selector", "reason=Preempted"]);
    assert!(
        events
            .ok()
            .contains(&format!("Preempted by pod {uid} on node {node}")),
        "{events:?}"
    );
    // The freed room went to the preemptor, not to the pending low pod.
    assert!(node_of(&server, "low-c").is_empty());
}

#[test]
fn one_process_serves_every_profile_of_its_config() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 2, false);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("scheduler.yaml");
    std::fs::write(
        &config,
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
",
    )
    .unwrap();
    let config = config.to_string_lossy().to_string();

    // A broken file stops the scheduler with the mistake named.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: x\n  plugins:\n    filter:\n      enabled:\n      - name: NoSuchPlugin\n",
    )
    .unwrap();
    let out = std::process::Command::new(tinykube_tests::binary("tinykube-scheduler"))
        .args(["--kubeconfig", &server.kubeconfig().to_string_lossy()])
        .args(["--config", &bad.to_string_lossy()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "profiles[0].plugins.filter.enabled[0]: plugin \"NoSuchPlugin\" does not exist"
        ),
        "{stderr}"
    );

    let _scheduler = Scheduler::start(&server, &["--config", &config, "--seed", "5"]).unwrap();
    let requesting = |name: &str, scheduler: &str| {
        pod(name, &format!("  schedulerName: {scheduler}\n")).replace(
            "    image: nginx\n",
            "    image: nginx\n    resources:\n      requests:\n        cpu: 500m\n        memory: 512Mi\n",
        )
    };
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&requesting("first", "default-scheduler")),
        )
        .ok();
    let busy = scheduled(&server, "first");
    // MostAllocated packs every pod of the packer profile onto the busier node.
    for name in ["pack-1", "pack-2", "pack-3"] {
        server
            .kubectl_stdin(&["apply", "-f", "-"], Some(&requesting(name, "packer")))
            .ok();
        assert_eq!(scheduled(&server, name), busy, "{name}");
    }
    // The default profile spreads instead (LeastAllocated): the next pod goes to the idle node.
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&requesting("spread", "default-scheduler")),
        )
        .ok();
    assert_ne!(scheduled(&server, "spread"), busy);
    // Each profile reports under its own name.
    let events = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=pack-1",
        "-o",
        "jsonpath={.items[*].reportingComponent}",
    ]);
    assert_eq!(events.ok(), "packer");
}

#[test]
fn host_ports_conflict_unless_a_profile_disables_node_ports() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 2, false);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("scheduler.yaml");
    std::fs::write(
        &config,
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
- schedulerName: no-port-check
  plugins:
    multiPoint:
      disabled:
      - name: NodePorts
",
    )
    .unwrap();
    let config = config.to_string_lossy().to_string();
    let _scheduler = Scheduler::start(&server, &["--config", &config]).unwrap();
    let with_port = |name: &str, scheduler: &str| {
        pod(name, &format!("  schedulerName: {scheduler}\n")).replace(
            "    image: nginx\n",
            "    image: nginx\n    ports:\n    - containerPort: 80\n      hostPort: 8080\n",
        )
    };
    // One pod per node can hold host port 8080.
    for name in ["web-0", "web-1"] {
        server
            .kubectl_stdin(
                &["apply", "-f", "-"],
                Some(&with_port(name, "default-scheduler")),
            )
            .ok();
    }
    let mut nodes = [scheduled(&server, "web-0"), scheduled(&server, "web-1")];
    nodes.sort();
    assert_eq!(nodes, ["worker0", "worker1"]);

    // A third stays Pending with upstream's reason; preemption cannot help an equal priority.
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&with_port("web-2", "default-scheduler")),
        )
        .ok();
    let expected = "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports. no new claims to deallocate, preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.";
    assert!(
        eventually(Duration::from_secs(10), || server
            .kubectl(&[
                "get",
                "pod",
                "web-2",
                "-o",
                "jsonpath={.status.conditions[0].message}"
            ])
            .ok()
            == expected),
        "{:?}",
        server.kubectl(&["get", "pod", "web-2", "-o", "yaml"])
    );
    let events = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=web-2,reason=FailedScheduling",
        "-o",
        "jsonpath={.items[0].message}",
    ]);
    assert_eq!(events.ok(), expected);

    // A profile without NodePorts does not look at host ports.
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&with_port("unchecked", "no-port-check")),
        )
        .ok();
    let shared = scheduled(&server, "unchecked");

    // Freeing the port on the other node lets the pending pod in there.
    let other = ["web-0", "web-1"]
        .into_iter()
        .find(|p| node_of(&server, p) != shared)
        .unwrap();
    let freed = node_of(&server, other);
    server
        .kubectl(&["delete", "pod", other, "--grace-period=0", "--force"])
        .ok();
    assert_eq!(scheduled(&server, "web-2"), freed);
}

#[test]
fn preemption_spares_pods_a_disruption_budget_protects() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 2, false);
    let classes = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: low\nvalue: 100\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\n";
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(classes))
        .ok();
    let _scheduler = Scheduler::start(&server, &["--seed", "3"]).unwrap();
    let with_cpu = |name: &str, app: &str, class: &str| {
        pod(
            name,
            &format!("  priorityClassName: {class}\n  terminationGracePeriodSeconds: 0\n"),
        )
        .replace(
            "metadata:\n",
            &format!("metadata:\n  labels: {{app: {app}}}\n"),
        )
        .replace(
            "    image: nginx\n",
            "    image: nginx\n    resources:\n      requests:\n        cpu: \"3\"\n",
        )
    };
    // The budget over web allows no disruption (its status set here, as the disruption
    // controller would).
    let budget = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels: {app: web}\n";
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(budget))
        .ok();
    let status = r#"{"status":{"disruptionsAllowed":0,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1,"observedGeneration":1}}"#;
    server.patch_status("pdb", "web", status);

    // Each node is filled by one low-priority pod; db-0 started first, so without a budget
    // the more recent web-0 would be the cheaper victim.
    let mut placed = Vec::new();
    for (name, app, started) in [
        ("db-0", "db", "2026-01-01T00:00:00Z"),
        ("web-0", "web", "2026-01-02T00:00:00Z"),
    ] {
        server
            .kubectl_stdin(&["apply", "-f", "-"], Some(&with_cpu(name, app, "low")))
            .ok();
        placed.push(scheduled(&server, name));
        let status = format!(r#"{{"status":{{"startTime":"{started}"}}}}"#);
        server.patch_status("pod", name, &status);
    }
    let [db_node, web_node] = [placed[0].clone(), placed[1].clone()];

    // The preemptor takes db-0's node: web-0 is protected.
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&with_cpu("urgent", "urgent", "high")),
        )
        .ok();
    assert_eq!(scheduled(&server, "urgent"), db_node);
    assert_eq!(node_of(&server, "web-0"), web_node, "web-0 is spared");
    let events = server.kubectl(&["get", "events", "--field-selector", "reason=Preempted"]);
    assert!(events.ok().contains("db-0"), "{events:?}");
}

#[test]
fn default_spreading_counts_the_pods_a_replica_set_selects() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 2, false);
    // Only PodTopologySpread scores here, with upstream's System default constraints.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("scheduler.yaml");
    std::fs::write(
        &config,
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled:
      - name: '*'
      enabled:
      - name: PodTopologySpread
",
    )
    .unwrap();
    let config = config.to_string_lossy().to_string();
    let rs = "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web\nspec:\n  replicas: 0\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web, pod-template-hash: abc}\n    spec:\n      containers:\n      - {name: c, image: nginx}\n";
    server.kubectl_stdin(&["apply", "-f", "-"], Some(rs)).ok();
    let uid = server
        .kubectl(&["get", "rs", "web", "-o", "jsonpath={.metadata.uid}"])
        .ok()
        .to_string();
    let web = |name: &str, labels: &str, extra: &str| {
        pod(name, extra).replace("metadata:\n", &format!("metadata:\n  labels: {labels}\n"))
    };
    // worker0 runs two pods the ReplicaSet's selector (app=web) picks; worker1 one that also
    // carries the template hash.
    for (name, labels, node) in [
        ("old-0", "{app: web}", "worker0"),
        ("old-1", "{app: web}", "worker0"),
        ("hashed", "{app: web, pod-template-hash: abc}", "worker1"),
    ] {
        let text = web(name, labels, &format!("  nodeName: {node}\n"));
        server
            .kubectl_stdin(&["apply", "-f", "-"], Some(&text))
            .ok();
    }
    let _scheduler = Scheduler::start(&server, &["--config", &config, "--seed", "2"]).unwrap();
    // A pod the ReplicaSet controls is spread by the ReplicaSet's selector, not by its own
    // labels (which only `hashed` matches): worker1 holds fewer of them. (Seed 2 would break
    // a tie towards worker0, so a pod without default constraints would land there.)
    let owned = web("web-new", "{app: web, pod-template-hash: abc}", "").replace(
        "metadata:\n",
        &format!("metadata:\n  ownerReferences:\n  - {{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: {uid}, controller: true}}\n"),
    );
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&owned))
        .ok();
    assert_eq!(scheduled(&server, "web-new"), "worker1");
}

/// A pod that fails again for the same reason counts on its first FailedScheduling event (a
/// series, "(x2 over …)" in kubectl) instead of adding another event each time.
#[test]
fn repeated_failures_make_one_event_series() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 1, false);
    let _scheduler = Scheduler::start(&server, &[]).unwrap();
    let big =
        "  containers:\n  - name: c\n    image: nginx\n    resources: {requests: {cpu: \"100\"}}\n";
    let text = format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\nspec:\n{big}");
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&text))
        .ok();
    let counts = || {
        server
            .kubectl(&[
                "get",
                "events",
                "--field-selector",
                "involvedObject.name=big,reason=FailedScheduling",
                "-o",
                "jsonpath={range .items[*]}[{.series.count}]{end}",
            ])
            .ok()
            .to_string()
    };
    assert!(
        eventually(Duration::from_secs(10), || counts() == "[]"),
        "{}",
        counts()
    );
    // A node change sends the pod round again; it still fits nowhere.
    server
        .kubectl(&["label", "nodes", "worker0", "retry=1"])
        .ok();
    assert!(
        eventually(Duration::from_secs(10), || counts() == "[2]"),
        "{}",
        counts()
    );
    let describe = server.kubectl(&["describe", "pod", "big"]);
    assert!(describe.ok().contains("(x2 over"), "{}", describe.stdout);
}

//! Containers that behave, as `kubectl get pods` and `kubectl describe pod` show them on a real
//! node: a command's exit code ends the container (`Completed`, `Error`) and the pod
//! (`Succeeded`, `Failed`) by its restart policy; a bare busybox crash-loops with the back-off;
//! a failing liveness probe kills and restarts the container with upstream's events; readiness
//! follows its probe; init containers hold the pod in `Init:0/2` until the Services their
//! `nslookup` waits for exist; a container over its memory limit is `OOMKilled`; a shell that
//! traps SIGTERM stops at once, one that does not is killed after the grace period.

use std::time::{Duration, Instant};

use serde_json::Value;
use tinykube_tests::{eventually, table_rows, ApiServer, Kubelet};

const WAIT: Duration = Duration::from_secs(40);

/// An API server and one kubelet (`worker0`); pods name their node.
fn cluster() -> (ApiServer, Kubelet) {
    let server = ApiServer::start().expect("api server starts");
    let kubelet = Kubelet::start(
        &server,
        &[
            "--hostname-override",
            "worker0",
            "--node-ip",
            "192.168.10.10",
            "--pod-cidr",
            "10.244.1.0/24",
        ],
    )
    .expect("kubelet starts");
    (server, kubelet)
}

fn apply(server: &ApiServer, yaml: &str) {
    server.kubectl_stdin(&["apply", "-f", "-"], Some(yaml)).ok();
}

fn pod_json(server: &ApiServer, name: &str) -> Value {
    let out = server.kubectl(&["get", "pod", name, "-o", "json"]);
    serde_json::from_str(&out.stdout).unwrap_or(Value::Null)
}

/// `kubectl get pod NAME`'s READY, STATUS and RESTARTS columns.
fn columns(server: &ApiServer, name: &str) -> (String, String, String) {
    let out = server.kubectl(&["get", "pod", name, "--no-headers"]);
    let row = table_rows(&out.stdout)
        .into_iter()
        .next()
        .unwrap_or_default();
    let col = |i: usize| row.get(i).cloned().unwrap_or_default();
    (col(1), col(2), col(3))
}

fn status_is(server: &ApiServer, name: &str, want: &str) -> bool {
    columns(server, name).1 == want
}

fn events(server: &ApiServer, name: &str) -> String {
    server
        .kubectl(&[
            "get",
            "events",
            "--field-selector",
            &format!("involvedObject.name={name}"),
            "-o",
            "custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message",
        ])
        .stdout
}

fn pod(name: &str, restart: &str, container: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  nodeName: worker0\n  restartPolicy: {restart}\n  terminationGracePeriodSeconds: 2\n  containers:\n{container}"
    )
}

#[test]
fn exit_codes_end_containers_and_pods_by_the_restart_policy() {
    let (server, _kubelet) = cluster();
    let sh = |script: &str| {
        format!("  - name: main\n    image: busybox:1.36\n    command: [\"sh\", \"-c\", \"{script}\"]\n")
    };
    apply(&server, &pod("done", "Never", &sh("echo done")));
    apply(
        &server,
        &pod("broken", "Never", &sh("echo failing >&2; exit 3")),
    );
    apply(&server, &pod("retried", "OnFailure", &sh("exit 0")));
    assert!(eventually(WAIT, || status_is(&server, "done", "Completed")));
    assert!(eventually(WAIT, || status_is(&server, "broken", "Error")));
    assert!(eventually(WAIT, || status_is(
        &server,
        "retried",
        "Completed"
    )));
    let done = pod_json(&server, "done");
    assert_eq!(done["status"]["phase"], "Succeeded");
    let t = &done["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(t["exitCode"], 0);
    assert_eq!(t["reason"], "Completed");
    let ready = done["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready["reason"], "PodCompleted");
    let broken = pod_json(&server, "broken");
    assert_eq!(broken["status"]["phase"], "Failed");
    let t = &broken["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(t["exitCode"], 3);
    assert_eq!(t["reason"], "Error");
    assert_eq!(pod_json(&server, "retried")["status"]["phase"], "Succeeded");
}

#[test]
fn a_bare_busybox_crash_loops_with_the_back_off() {
    let (server, _kubelet) = cluster();
    apply(
        &server,
        &pod("bare", "Always", "  - name: bare\n    image: busybox\n"),
    );
    assert!(
        eventually(WAIT, || {
            let (_, status, restarts) = columns(&server, "bare");
            status == "CrashLoopBackOff" && restarts.starts_with('1')
        }),
        "{:?}",
        columns(&server, "bare")
    );
    let p = pod_json(&server, "bare");
    let c = &p["status"]["containerStatuses"][0];
    assert_eq!(c["lastState"]["terminated"]["reason"], "Completed");
    let waiting = c["state"]["waiting"]["message"].as_str().unwrap_or("");
    assert!(
        waiting.starts_with("back-off 10s restarting failed container=bare pod=bare_default("),
        "{waiting}"
    );
    assert_eq!(p["status"]["phase"], "Running");
    assert!(eventually(WAIT, || events(&server, "bare").contains(
        "Back-off restarting failed container bare in pod bare_default("
    )));
    // After the back-off it runs (and exits) again.
    assert!(eventually(WAIT, || columns(&server, "bare")
        .2
        .starts_with('2')));
}

#[test]
fn a_failing_liveness_probe_restarts_the_container() {
    let (server, _kubelet) = cluster();
    let container = "  - name: liveness\n    image: registry.k8s.io/busybox\n    args: [/bin/sh, -c, \"touch /tmp/healthy; sleep 2; rm -f /tmp/healthy; sleep 600\"]\n    livenessProbe:\n      exec:\n        command: [cat, /tmp/healthy]\n      initialDelaySeconds: 1\n      periodSeconds: 1\n      failureThreshold: 2\n      terminationGracePeriodSeconds: 1\n";
    apply(&server, &pod("liveness-exec", "Always", container));
    assert!(eventually(WAIT, || columns(&server, "liveness-exec")
        .2
        .starts_with('1')));
    let ev = events(&server, "liveness-exec");
    assert!(
        ev.contains(
            "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory"
        ),
        "{ev}"
    );
    assert!(
        ev.contains("Container liveness failed liveness probe, will be restarted"),
        "{ev}"
    );
    let p = pod_json(&server, "liveness-exec");
    let last = &p["status"]["containerStatuses"][0]["lastState"]["terminated"];
    // sh, PID 1 without a trap, ignores SIGTERM: killed after the probe's grace period.
    assert_eq!(last["exitCode"], 137, "{last}");
    assert_eq!(last["reason"], "Error");
}

#[test]
fn readiness_follows_its_probe_and_init_containers_wait_for_services() {
    let (server, _kubelet) = cluster();
    let ready = "  - name: app\n    image: busybox\n    command: [sh, -c, \"sleep 3; touch /tmp/ready; sleep 3600\"]\n    readinessProbe:\n      exec:\n        command: [cat, /tmp/ready]\n      periodSeconds: 1\n";
    apply(&server, &pod("slow-ready", "Always", ready));
    assert!(eventually(WAIT, || columns(&server, "slow-ready").0
        == "0/1"
        && status_is(&server, "slow-ready", "Running")));
    assert!(eventually(WAIT, || columns(&server, "slow-ready").0 == "1/1"));

    // The docs' init containers: the pod waits for two Services.
    let myapp = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: myapp-pod\n  labels:\n    app.kubernetes.io/name: MyApp\nspec:\n  nodeName: worker0\n  containers:\n  - name: myapp-container\n    image: busybox:1.28\n    command: ['sh', '-c', 'echo The app is running! && sleep 3600']\n  initContainers:\n  - name: init-myservice\n    image: busybox:1.28\n    command: ['sh', '-c', \"until nslookup myservice.$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace).svc.cluster.local; do echo waiting for myservice; sleep 2; done\"]\n  - name: init-mydb\n    image: busybox:1.28\n    command: ['sh', '-c', \"until nslookup mydb.$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace).svc.cluster.local; do echo waiting for mydb; sleep 2; done\"]\n";
    apply(&server, myapp);
    assert!(eventually(WAIT, || status_is(
        &server,
        "myapp-pod",
        "Init:0/2"
    )));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(columns(&server, "myapp-pod").1, "Init:0/2");
    let services = "apiVersion: v1\nkind: Service\nmetadata:\n  name: myservice\nspec:\n  ports:\n  - protocol: TCP\n    port: 80\n    targetPort: 9376\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: mydb\nspec:\n  ports:\n  - protocol: TCP\n    port: 80\n    targetPort: 9377\n";
    apply(&server, services);
    assert!(
        eventually(WAIT, || status_is(&server, "myapp-pod", "Running")),
        "{:?} {}",
        columns(&server, "myapp-pod"),
        server
            .kubectl(&["logs", "myapp-pod", "-c", "init-myservice", "--previous"])
            .stdout
    );
    let p = pod_json(&server, "myapp-pod");
    for c in p["status"]["initContainerStatuses"].as_array().unwrap() {
        assert_eq!(c["state"]["terminated"]["reason"], "Completed", "{c}");
    }
}

#[test]
fn over_its_memory_limit_a_container_is_oom_killed() {
    let (server, _kubelet) = cluster();
    // "Assign Memory Resources": memory-demo-2 asks for 250M with a 100Mi limit.
    let c = "  - name: memory-demo-2-ctr\n    image: polinux/stress\n    resources:\n      requests:\n        memory: \"50Mi\"\n      limits:\n        memory: \"100Mi\"\n    command: [\"stress\"]\n    args: [\"--vm\", \"1\", \"--vm-bytes\", \"250M\", \"--vm-hang\", \"1\"]\n";
    apply(&server, &pod("memory-demo-2", "Always", c));
    assert!(eventually(WAIT, || {
        let p = pod_json(&server, "memory-demo-2");
        p["status"]["containerStatuses"][0]["lastState"]["terminated"]["reason"] == "OOMKilled"
    }));
    let p = pod_json(&server, "memory-demo-2");
    assert_eq!(
        p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"],
        137
    );
    assert!(eventually(WAIT, || status_is(
        &server,
        "memory-demo-2",
        "CrashLoopBackOff"
    ) || status_is(
        &server,
        "memory-demo-2",
        "OOMKilled"
    )));
}

#[test]
fn sigterm_stops_a_trapping_shell_at_once_and_an_ignoring_one_after_the_grace_period() {
    let (server, _kubelet) = cluster();
    let trapping = "  - name: main\n    image: busybox\n    command: [sh, -c, \"trap 'exit 0' TERM; sleep 3600 & wait\"]\n";
    let ignoring = "  - name: main\n    image: busybox\n    command: [sh, -c, \"sleep 3600\"]\n";
    let spec = |name: &str, c: &str| {
        pod(name, "Always", c).replace(
            "terminationGracePeriodSeconds: 2",
            "terminationGracePeriodSeconds: 10",
        )
    };
    apply(&server, &spec("trapping", trapping));
    apply(&server, &spec("ignoring", ignoring));
    assert!(eventually(WAIT, || status_is(
        &server, "trapping", "Running"
    ) && status_is(
        &server, "ignoring", "Running"
    )));
    let timed = |name: &str| {
        let start = Instant::now();
        server.kubectl(&["delete", "pod", name]).ok();
        start.elapsed()
    };
    let fast = timed("trapping");
    assert!(fast < Duration::from_secs(7), "{fast:?}");
    let slow = timed("ignoring");
    assert!(slow >= Duration::from_secs(10), "{slow:?}");
}

#[test]
fn mounted_config_and_broken_scripts_behave_as_on_a_node() {
    let (server, _kubelet) = cluster();
    let config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: game-config\ndata:\n  game.properties: |\n    enemies=aliens\n    lives=3\n  ui.properties: \"color.good=purple\\n\"\n";
    apply(&server, config);
    let reader = "  - name: app\n    image: busybox\n    command: [sleep, \"3600\"]\n    env:\n    - name: LIVES\n      valueFrom:\n        configMapKeyRef: {name: game-config, key: ui.properties}\n    volumeMounts:\n    - name: config\n      mountPath: /etc/config\n  volumes:\n  - name: config\n    configMap:\n      name: game-config\n";
    apply(&server, &pod("reader", "Always", reader));
    // A script busybox cannot parse is the container's failure: exit 2, the message logged.
    let broken =
        "  - name: bad\n    image: busybox\n    command: [sh, -c, \"if true; then echo x\"]\n";
    apply(&server, &pod("broken", "Never", broken));
    assert!(eventually(WAIT, || status_is(&server, "reader", "Running")));
    let out = server.kubectl(&["exec", "reader", "--", "cat", "/etc/config/game.properties"]);
    assert_eq!(out.ok(), "enemies=aliens\nlives=3\n");
    let out = server.kubectl(&["exec", "reader", "--", "ls", "/etc/config"]);
    assert_eq!(out.ok(), "game.properties\nui.properties\n");
    let out = server.kubectl(&["exec", "reader", "--", "sh", "-c", "echo $LIVES"]);
    assert_eq!(out.ok(), "color.good=purple\n");
    let out = server.kubectl(&["exec", "reader", "--", "touch", "/etc/config/x"]);
    assert!(
        out.stdout.contains("Read-only file system")
            || out.stderr.contains("Read-only file system"),
        "{out:?}"
    );
    assert!(eventually(WAIT, || status_is(&server, "broken", "Error")));
    let p = pod_json(&server, "broken");
    assert_eq!(
        p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        2
    );
    let logs = server.kubectl(&["logs", "broken"]);
    assert_eq!(
        logs.ok(),
        "sh: syntax error: unexpected end of file (expecting \"fi\")\n"
    );
}

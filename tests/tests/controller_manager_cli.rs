//! The controller manager's command-line contract: one-line errors on bad flags, a clean stop
//! on SIGTERM, and leader election on the `kube-controller-manager` Lease with takeover when
//! the leader dies.

use std::process::Command;
use std::time::Duration;

use tinykube_tests::{binary, eventually, pod_names, ApiServer, ControllerManager};

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(binary("tinykube-controller-manager"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_flags_fail_with_one_line() {
    let table: &[(&[&str], &str)] = &[
        (&["--node-monitor-period=soon"], "invalid duration \"soon\""),
        (
            &["--controllers=replicaset,nosuch"],
            "\"nosuch\" is not in the list of known controllers",
        ),
        (&["--no-such-flag"], "unexpected argument '--no-such-flag'"),
        (&["--concurrent-gc-syncs=many"], "invalid value 'many'"),
    ];
    for (args, want) in table {
        let (code, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("tinykube-controller-manager: ") && stderr.contains(want),
            "{args:?}: {stderr}"
        );
    }
    let (code, stdout_help) = {
        let out = Command::new(binary("tinykube-controller-manager"))
            .arg("--help")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert_eq!(code, Some(0));
    assert!(stdout_help.contains("--concurrent-deployment-syncs"));
}

#[test]
fn sigterm_stops_cleanly() {
    let server = ApiServer::start().unwrap();
    let mut cm = ControllerManager::start(&server, &[]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let status = cm.terminate().expect("exits after SIGTERM");
    assert!(status.success(), "{status:?}");
}

const RS: &str = "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: frontend\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      tier: frontend\n  template:\n    metadata:\n      labels:\n        tier: frontend\n    spec:\n      containers:\n      - name: c\n        image: nginx\n";

#[test]
fn a_standby_manager_takes_over_the_lease_when_the_leader_dies() {
    let server = ApiServer::start().unwrap();
    let fast = [
        "--leader-elect=true",
        "--leader-elect-lease-duration=2s",
        "--leader-elect-renew-deadline=1s",
        "--leader-elect-retry-period=200ms",
    ];
    let holder = || {
        server
            .kubectl(&[
                "get",
                "lease",
                "kube-controller-manager",
                "-n",
                "kube-system",
                "-o",
                "jsonpath={.spec.holderIdentity}",
            ])
            .stdout
    };
    let mut leader = ControllerManager::start(&server, &fast).unwrap();
    assert!(eventually(Duration::from_secs(10), || !holder().is_empty()));
    let first = holder();
    let _standby = ControllerManager::start(&server, &fast).unwrap();
    server.kubectl_stdin(&["apply", "-f", "-"], Some(RS)).ok();
    assert!(eventually(Duration::from_secs(10), || pod_names(
        &server,
        "default",
        "tier=frontend"
    )
    .len()
        == 2));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        holder(),
        first,
        "the standby does not steal a renewed lease"
    );
    assert_eq!(pod_names(&server, "default", "tier=frontend").len(), 2);

    leader.kill9();
    assert!(eventually(Duration::from_secs(10), || {
        let h = holder();
        !h.is_empty() && h != first
    }));
    server
        .kubectl(&["scale", "rs", "frontend", "--replicas=4"])
        .ok();
    assert!(eventually(Duration::from_secs(10), || pod_names(
        &server,
        "default",
        "tier=frontend"
    )
    .len()
        == 4));
}

#[test]
fn json_logs_are_one_object_per_line() {
    let server = ApiServer::start().unwrap();
    let child = Command::new(binary("tinykube-controller-manager"))
        .arg("--kubeconfig")
        .arg(server.kubeconfig())
        .args(["--log-format=json", "--leader-elect=false"])
        .env("RUST_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let text = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.iter().any(|l| l.contains("starting controller")),
        "{text}"
    );
    for line in lines {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v["level"].is_string(), "{line}");
    }
}

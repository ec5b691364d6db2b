//! What a student types at a terminal: the logging page's counter pod followed with
//! `kubectl logs -f counter` (a new line each second), and `kubectl exec -it counter -- sh`
//! driven through a pseudo-terminal (`script`): the prompt, the echo of what is typed, line
//! editing, a command's output, and `exit 4` ending the session with kubectl's
//! `command terminated with exit code 4`; and `kubectl run -it … -- sh`, attached to the
//! container's own shell.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tinykube_tests::terminal::{type_into, COUNTER};
use tinykube_tests::{eventually, table_rows, ApiServer, Kubelet};

fn running(server: &ApiServer) -> bool {
    let out = server.kubectl(&["get", "pod", "counter", "--no-headers"]);
    table_rows(&out.stdout)
        .first()
        .is_some_and(|r| r.get(2).is_some_and(|s| s == "Running"))
}

#[test]
fn follow_the_counter_and_type_in_a_shell() {
    let server = ApiServer::start().expect("api server starts");
    let _kubelet = Kubelet::start(&server, &["--hostname-override", "worker0"]).unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(COUNTER))
        .ok();
    assert!(eventually(Duration::from_secs(30), || running(&server)));

    // kubectl logs -f: lines keep coming, one a second, numbered from 0.
    let mut follow = Command::new("kubectl")
        .args(["logs", "-f", "counter"])
        .env("KUBECONFIG", server.kubeconfig())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl runs");
    let stdout = follow.stdout.take().unwrap();
    let started = Instant::now();
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap_or_default();
        lines.push(line);
        if lines.len() == 4 || started.elapsed() > Duration::from_secs(20) {
            break;
        }
    }
    let _ = follow.kill();
    let _ = follow.wait();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines[0].starts_with("0: "), "{lines:?}");
    assert!(lines[3].starts_with("3: "), "{lines:?}");
    assert!(
        lines[0].ends_with(" UTC 2026") || lines[0].contains(" UTC "),
        "{lines:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "the lines came one a second"
    );

    // kubectl exec -it through a pseudo-terminal (typing once kubectl has the terminal raw).
    let (screen, status) = type_into(
        &server,
        "kubectl exec -it counter -- sh",
        &[
            "echo hello from $(hostname)\r",
            "lx\x7fs /tmp\r",
            "exit 4\r",
        ],
        2,
        &[],
    );
    assert!(screen.contains("/ # "), "the prompt: {screen:?}");
    assert!(screen.contains("hello from counter\n"), "{screen:?}");
    // What was typed is echoed, with the backspace's erase.
    assert!(screen.contains("lx\x08 \x08s /tmp\n"), "{screen:?}");
    assert!(
        screen.contains("command terminated with exit code 4"),
        "{screen:?}"
    );
    assert_eq!(status.code(), Some(4), "{screen:?}");

    // kubectl run -it: a container with a TTY and stdin, attached to as it starts.
    let (screen, _) = type_into(
        &server,
        "kubectl run -it box --image=busybox --restart=Never --overrides='{\"spec\":{\"nodeName\":\"worker0\"}}' -- sh",
        &["echo hi from $(hostname)\r", "exit 5\r"],
        6,
        &[],
    );
    assert!(
        screen.contains("If you don't see a command prompt, try pressing enter."),
        "{screen:?}"
    );
    assert!(screen.contains("hi from box\n"), "{screen:?}");
    assert!(
        screen.contains("pod default/box terminated (Error)"),
        "{screen:?}"
    );
}

//! `kubectl exec` and `kubectl attach` over SPDY/3.1, the protocol client-go's
//! `NewSPDYExecutor` speaks and kubectl falls back to (forced here with
//! `KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`): the same commands as over WebSocket give the same
//! output, stderr apart, the exit code (`command terminated with exit code 3`), stdin to its end,
//! a terminal session through a pseudo-terminal, and an attach to the logging page's counter.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use tinykube_tests::terminal::{type_into, COUNTER};
use tinykube_tests::{eventually, table_rows, ApiServer, Kubelet};

const BOX: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: box
spec:
  nodeName: worker0
  containers:
  - name: box
    image: busybox:1.36
    command: [sh, -c, 'echo started; sleep 3600']
"#;

/// kubectl with the WebSocket protocols turned off, so it speaks SPDY.
fn spdy_kubectl(server: &ApiServer, args: &[&str], input: Option<&str>) -> Output {
    let mut child = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", server.kubeconfig())
        .env("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false")
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl must be installed (see README)");
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(text.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn exec_and_attach_over_spdy() {
    let server = ApiServer::start().expect("api server starts");
    let _kubelet = Kubelet::start(&server, &["--hostname-override", "worker0"]).unwrap();
    server.kubectl_stdin(&["apply", "-f", "-"], Some(BOX)).ok();
    assert!(eventually(Duration::from_secs(30), || {
        let out = server.kubectl(&["get", "pod", "box", "--no-headers"]);
        table_rows(&out.stdout)
            .first()
            .is_some_and(|r| r.get(2).is_some_and(|s| s == "Running"))
    }));

    // The upgrade is SPDY's, with the version agreed from kubectl's list (v4: v5 is WebSocket's).
    let out = spdy_kubectl(&server, &["exec", "box", "-v=8", "--", "true"], None);
    let log = text(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("X-Stream-Protocol-Version: v4.channel.k8s.io")
            && log.contains("Upgrade: SPDY/3.1"),
        "{log}"
    );

    // Output on its two streams, and the exit code on the error stream.
    let out = spdy_kubectl(
        &server,
        &[
            "exec",
            "box",
            "--",
            "sh",
            "-c",
            "ls /; echo oops >&2; exit 3",
        ],
        None,
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        stdout.contains("bin\n") && stdout.contains("tmp\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("oops"), "{stdout}");
    assert!(stderr.contains("oops\n"), "{stderr}");
    assert!(
        stderr.contains("command terminated with exit code 3"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(3));

    // stdin to its end: every line arrives, and `wc` sees the end of input.
    let lines: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
    let out = spdy_kubectl(
        &server,
        &["exec", "-i", "box", "--", "wc", "-l"],
        Some(&lines),
    );
    assert_eq!(text(&out.stdout).trim(), "5000", "{}", text(&out.stderr));
    assert!(out.status.success());

    // A refused command is the container's failure, told on the error stream.
    let out = spdy_kubectl(&server, &["exec", "box", "--", "nosuch"], None);
    assert_eq!(out.status.code(), Some(127), "{}", text(&out.stderr));

    // A terminal: the prompt, the echo, a command's output, and `exit 4`.
    let (screen, _) = type_into(
        &server,
        "kubectl exec -it box -- sh",
        &["echo hello from $(hostname)\r", "exit 4\r"],
        2,
        &[("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false")],
    );
    assert!(screen.contains("/ # "), "{screen:?}");
    assert!(screen.contains("hello from box\n"), "{screen:?}");
    assert!(
        screen.contains("command terminated with exit code 4"),
        "{screen:?}"
    );

    // Attach: what the container writes from now on, a line a second.
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(COUNTER))
        .ok();
    assert!(eventually(Duration::from_secs(30), || {
        server.kubectl(&["logs", "counter"]).stdout.contains("2: ")
    }));
    let mut attach = Command::new("kubectl")
        .args(["attach", "counter"])
        .env("KUBECONFIG", server.kubeconfig())
        .env("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert!(attach.try_wait().unwrap().is_none(), "attach stays open");
    let _ = attach.kill();
    let out = text(&attach.wait_with_output().unwrap().stdout);
    let numbers: Vec<u64> = out
        .lines()
        .filter_map(|l| l.split(':').next()?.parse().ok())
        .collect();
    assert!(numbers.len() >= 2, "{out:?}");
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{out:?}");
    // Only what came after the attach: the first lines stay in the log.
    assert!(numbers[0] >= 2, "{out:?}");
}

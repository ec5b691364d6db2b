//! `tinykube up` driven by a test fixture, as one in Go, Python or JavaScript would: start it with
//! `--output json --exit-on-stdin-close`, read the one JSON line, use the cluster, close stdin to
//! stop it; without `--exit-on-stdin-close` a closed stdin changes nothing.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use tinykube_tests::{binary, eventually, table_rows};

const WAIT: Duration = Duration::from_secs(20);

/// A `tinykube up --output json` process: the child, its parsed first stdout line, and threads
/// that read the rest of stdout and all of stderr until it exits.
struct Fixture {
    child: Child,
    info: serde_json::Value,
    rest: Option<JoinHandle<String>>,
}

impl Fixture {
    /// Everything tinykube printed on stdout after the JSON line; call once it has exited.
    fn rest_of_stdout(&mut self) -> String {
        self.rest.take().unwrap().join().unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = Command::new("kill")
                .arg(self.child.id().to_string())
                .status();
            if exits_within(&mut self.child, WAIT).is_none() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
    }
}

/// Start `tinykube up --port 0 --nodes 2 --output json` with piped stdin and stdout, as a fixture
/// would, and read its first stdout line.
fn start(data: &Path, extra: &[&str]) -> Fixture {
    let mut child = Command::new(binary("tinykube"))
        .args(["up", "--port", "0", "--nodes", "2", "--output", "json"])
        .arg("--data-dir")
        .arg(data)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tinykube starts");
    let err = read_all(child.stderr.take().unwrap());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).expect("a stdout line");
    let info: serde_json::Value = match serde_json::from_str(&line) {
        Ok(v) => v,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the first stdout line is not JSON ({e}): {line:?}; stderr: {}",
                err.join().unwrap()
            )
        }
    };
    Fixture {
        child,
        info,
        rest: Some(read_all(stdout)),
    }
}

fn read_all(mut from: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = from.read_to_string(&mut text);
        text
    })
}

fn alive(pid: u64) -> bool {
    // A zombie is gone for our purpose: it runs nothing and holds no port.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|t| !t.trim_start().starts_with('Z'))
    })
}

fn pids(info: &serde_json::Value) -> Vec<(String, u64)> {
    info["pids"]
        .as_object()
        .expect("pids is an object")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().expect("a pid is a number")))
        .collect()
}

fn exits_within(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let mut status = None;
    eventually(timeout, || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    status
}

fn healthz(server: &str) -> bool {
    let http = reqwest::blocking::Client::builder()
        .no_proxy()
        .build()
        .unwrap();
    http.get(format!("{server}/healthz"))
        .send()
        .is_ok_and(|r| r.status().is_success() && r.text().is_ok_and(|t| t == "ok"))
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", kubeconfig.with_file_name("kube-cache"))
        .output()
        .expect("kubectl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn json_line_then_closing_stdin_stops_the_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut up = start(&data, &["--exit-on-stdin-close"]);
    let info = up.info.clone();
    let root = std::fs::canonicalize(&data).unwrap();

    let server = info["server"].as_str().expect("server");
    assert!(server.starts_with("http://127.0.0.1:"), "{info}");
    assert!(healthz(server), "{server}/healthz answers ok");
    assert_eq!(info["dataDir"].as_str(), Some(root.to_str().unwrap()));
    let kubeconfig = PathBuf::from(info["kubeconfig"].as_str().expect("kubeconfig"));
    assert!(kubeconfig.is_absolute() && kubeconfig.exists(), "{info}");
    assert_eq!(kubeconfig, root.join("kubeconfig"));
    assert_eq!(info["nodes"], serde_json::json!(["worker0", "worker1"]));

    let (ok, out) = kubectl(&kubeconfig, &["get", "nodes", "--no-headers"]);
    assert!(ok, "{out}");
    let nodes: Vec<(String, String)> = table_rows(&out)
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    assert_eq!(
        nodes,
        [
            ("worker0".to_string(), "Ready".to_string()),
            ("worker1".to_string(), "Ready".to_string())
        ]
    );

    let pids = pids(&info);
    let names: Vec<&str> = pids.iter().map(|(n, _)| n.as_str()).collect();
    for want in ["apiserver", "kubelet-worker0", "kubelet-worker1"] {
        assert!(names.contains(&want), "{names:?}");
    }
    for (name, pid) in &pids {
        assert!(alive(*pid), "{name} (pid {pid}) runs");
        let recorded = std::fs::read_to_string(root.join(format!("run/{name}.pid"))).unwrap();
        assert_eq!(recorded.trim(), pid.to_string(), "{name}");
    }

    // The fixture's teardown: close stdin, as a parent that exits would.
    drop(up.child.stdin.take());
    let status = exits_within(&mut up.child, WAIT).expect("tinykube exits once stdin is closed");
    assert!(status.success(), "{status}");
    for (name, pid) in &pids {
        assert!(!alive(*pid), "{name} (pid {pid}) still runs");
    }
    assert!(!healthz(server));
    // A fixture reading lines sees the JSON line and nothing else.
    assert_eq!(up.rest_of_stdout(), "");
}

#[test]
fn without_the_flag_a_closed_stdin_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut up = start(&data, &[]);
    let info = up.info.clone();
    let server = info["server"].as_str().expect("server").to_string();
    let kubeconfig = PathBuf::from(info["kubeconfig"].as_str().expect("kubeconfig"));

    drop(up.child.stdin.take());
    // Work the cluster for a while after the close: it keeps answering, and tinykube keeps running.
    for _ in 0..3 {
        assert!(healthz(&server));
        let (ok, out) = kubectl(&kubeconfig, &["get", "nodes", "--no-headers"]);
        assert!(ok, "{out}");
        assert_eq!(table_rows(&out).len(), 2, "{out}");
    }
    assert!(
        up.child.try_wait().unwrap().is_none(),
        "tinykube still runs"
    );
    for (name, pid) in pids(&info) {
        assert!(alive(pid), "{name} (pid {pid}) runs");
    }

    let _ = Command::new("kill").arg(up.child.id().to_string()).status();
    let status = exits_within(&mut up.child, WAIT).expect("SIGTERM stops it");
    assert!(status.success(), "{status}");
    for (name, pid) in pids(&info) {
        assert!(!alive(pid), "{name} (pid {pid}) still runs");
    }
    assert_eq!(up.rest_of_stdout(), "");
}

//! `tinykube up` as a student uses it: one command, the export line, Ready nodes in
//! `kubectl get nodes -o wide`, the static pod exercise in a node's directory, a killed kubelet
//! reported on the terminal, Ctrl-C (SIGTERM) stops everything, and a second `up` resumes.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tinykube_tests::{binary, eventually, manifest, table_rows};

const WAIT: Duration = Duration::from_secs(20);

/// A `tinykube up` process; SIGTERMed on drop.
struct Up {
    child: Child,
    stdout: Vec<String>,
    stderr: Arc<Mutex<String>>,
    kubeconfig: PathBuf,
}

impl Up {
    fn start(data: &Path, extra: &[&str]) -> Up {
        Up::start_with_env(data, extra, &[])
    }

    /// `start`, from a shell whose environment holds `env`.
    fn start_with_env(data: &Path, extra: &[&str], env: &[(&str, &str)]) -> Up {
        let mut child = Command::new(binary("tinykube"))
            .args(["up", "--port", "0", "--data-dir"])
            .arg(data)
            .args(extra)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tinykube starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().unwrap();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut stdout = Vec::new();
        let mut kubeconfig = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(p) = line.strip_prefix("export KUBECONFIG=") {
                kubeconfig = Some(PathBuf::from(p));
            }
            let done = line.starts_with("Ctrl-C");
            stdout.push(line);
            if done {
                break;
            }
        }
        std::thread::spawn(move || for _ in lines {});
        let kubeconfig = kubeconfig.unwrap_or_else(|| {
            panic!(
                "no export line; stdout: {stdout:?}; stderr: {}",
                stderr.lock().unwrap()
            )
        });
        Up {
            child,
            stdout,
            stderr,
            kubeconfig,
        }
    }

    fn kubectl(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.kubeconfig.with_file_name("kube-cache"))
            .output()
            .expect("kubectl runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    /// SIGTERM, as Ctrl-C would; true if it exited cleanly.
    fn stop(&mut self) -> bool {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let mut clean = false;
        eventually(WAIT, || match self.child.try_wait() {
            Ok(Some(s)) => {
                clean = s.success();
                true
            }
            _ => false,
        });
        clean
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.stop();
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Process IDs of the children of `parent` whose command line contains `needle`.
fn children(parent: u32, needle: &str) -> Vec<u32> {
    let out = Command::new("pgrep")
        .args(["-P", &parent.to_string(), "-f", needle])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn up_prints_the_export_line_and_every_node_is_ready() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut up = Up::start(&data, &["--nodes", "2", "--masters", "1"]);
    assert!(
        up.stdout[0].starts_with("tinykube: cluster up in "),
        "{:?}",
        up.stdout
    );
    assert!(up.kubeconfig.starts_with(&data) || up.kubeconfig.ends_with("data/kubeconfig"));
    assert!(up.kubeconfig.exists());

    let (ok, wide) = up.kubectl(&["get", "nodes", "-o", "wide"]);
    assert!(ok);
    let rows = table_rows(&wide);
    let nodes: Vec<(&str, &str, &str)> = rows[1..]
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(
        nodes,
        [
            ("master0", "Ready", "master"),
            ("worker0", "Ready", "<none>"),
            ("worker1", "Ready", "<none>")
        ]
    );
    let (_, taints) = up.kubectl(&[
        "get",
        "node",
        "master0",
        "-o",
        "jsonpath={.spec.taints[*].key}",
    ]);
    assert!(
        taints.contains("node-role.kubernetes.io/master"),
        "{taints}"
    );

    // The static pod exercise, in worker0's directory.
    let manifests = data.join("nodes/worker0/manifests");
    manifest(
        &manifests,
        "static-web.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: static-web\nspec:\n  containers:\n  - name: web\n    image: nginx\n",
    );
    let phase = |up: &Up| {
        up.kubectl(&[
            "get",
            "pod",
            "static-web-worker0",
            "-o",
            "jsonpath={.status.phase}",
        ])
        .1
    };
    assert!(eventually(WAIT, || phase(&up) == "Running"));

    // The whole stack: a Deployment's pods are scheduled to the workers and run there.
    assert!(
        up.kubectl(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2"
        ])
        .0
    );
    let running = |up: &Up| {
        let (_, out) = up.kubectl(&["get", "pods", "-l", "app=web", "-o", "wide", "--no-headers"]);
        table_rows(&out)
            .iter()
            .filter(|r| {
                r[2] == "Running" && r[6].starts_with("worker") && r[5].starts_with("10.244.")
            })
            .count()
    };
    assert!(eventually(WAIT, || running(&up) == 2));

    // A killed kubelet is reported, with the script that starts it again; its pid file names it.
    let pid = up.child.id();
    let victims = children(pid, "hostname-override worker1");
    assert_eq!(victims.len(), 1);
    let pid_file = std::fs::read_to_string(data.join("run/kubelet-worker1.pid")).unwrap();
    assert_eq!(pid_file.trim(), victims[0].to_string());
    let _ = Command::new("kill").args(["-9", pid_file.trim()]).status();
    assert!(eventually(WAIT, || up
        .stderr
        .lock()
        .unwrap()
        .contains("kubelet-worker1")));
    let err = up.stderr.lock().unwrap().clone();
    assert!(
        err.contains("killed by signal 9") && err.contains("not restarted"),
        "{err}"
    );
    let script = data.join("run/kubelet-worker1.sh");
    assert!(
        err.contains(&format!("restart it by hand: {} &", script.display())),
        "{err}"
    );
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.contains("--hostname-override worker1"), "{text}");
    // The script starts it again: the node renews its lease under a new pid.
    let restarted = Command::new("sh")
        .arg(&script)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(eventually(WAIT, || std::fs::read_to_string(
        data.join("run/kubelet-worker1.pid")
    )
    .is_ok_and(|p| p.trim() == restarted.id().to_string())));
    let cmdline = format!("/proc/{}/cmdline", restarted.id());
    assert!(eventually(WAIT, || std::fs::read(&cmdline).is_ok_and(
        |c| String::from_utf8_lossy(&c).contains("tinykube-kubelet")
    )));
    let mut restarted = restarted;
    let _ = restarted.kill();
    let _ = restarted.wait();

    // Ctrl-C stops everything.
    let children_before = children(pid, "tinykube-");
    assert!(children_before.len() >= 4, "{children_before:?}");
    assert!(up.stop(), "tinykube exits cleanly");
    for c in children_before {
        assert!(
            !Path::new(&format!("/proc/{c}")).exists(),
            "child {c} still runs"
        );
    }

    // A second `up` resumes the same cluster: same nodes, the pod still there.
    let again = Up::start(&data, &[]);
    assert!(
        again.stdout[0].starts_with("tinykube: cluster resumed in "),
        "{:?}",
        again.stdout
    );
    let (_, names) = again.kubectl(&["get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"]);
    assert_eq!(names, "master0 worker0 worker1");
    assert!(eventually(WAIT, || phase(&again) == "Running"));
}

/// The README's tour in one shell: `export KUBECONFIG=…` as the summary says, Ctrl-C,
/// `rm -rf tinykube-data`, `tinykube up` again. The components must use the cluster being
/// started, not the removed kubeconfig the shell still exports, nor a proxy set for the
/// outside world (Go clients never proxy loopback addresses; kubectl here is one).
#[test]
fn up_again_after_a_reset_ignores_the_shells_kubeconfig_and_proxies() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("tinykube-data");
    let stale = data.join("kubeconfig").display().to_string();
    // Nothing listens on port 9 of loopback: a proxied request fails at once.
    let env = [
        ("KUBECONFIG", stale.as_str()),
        ("HTTP_PROXY", "http://127.0.0.1:9"),
        ("http_proxy", "http://127.0.0.1:9"),
        ("HTTPS_PROXY", "http://127.0.0.1:9"),
        ("ALL_PROXY", "http://127.0.0.1:9"),
    ];
    let mut first = Up::start_with_env(&data, &["--nodes", "1"], &env);
    assert!(first.stop(), "the first cluster stops cleanly");
    std::fs::remove_dir_all(&data).unwrap();

    let mut again = Up::start_with_env(&data, &["--nodes", "1"], &env);
    let (ok, nodes) = again.kubectl(&["get", "nodes"]);
    assert!(ok, "{nodes}");
    assert_eq!(table_rows(&nodes)[1][..2], ["worker0", "Ready"], "{nodes}");
    // The scheduler and controller manager run, so a Deployment gets its pod placed.
    let (ok, out) = again.kubectl(&["create", "deployment", "web", "--image=nginx"]);
    assert!(ok, "{out}");
    assert!(
        eventually(WAIT, || {
            let (_, pods) = again.kubectl(&["get", "pods", "-o", "wide"]);
            table_rows(&pods)
                .iter()
                .any(|r| r[2] == "Running" && r[6] == "worker0")
        }),
        "the pod runs; scheduler log: {}",
        std::fs::read_to_string(data.join("logs/scheduler.log")).unwrap_or_default()
    );
    assert!(again.stop(), "the second cluster stops cleanly");
}

#[test]
fn bad_flags_and_a_busy_port_are_one_line_errors() {
    let out = Command::new(binary("tinykube"))
        .args(["up", "--nodes", "many"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");

    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(binary("tinykube"))
        .args(["up", "--port", &port, "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the API server did not start"), "{err}");
    assert!(!dir.path().join("kubeconfig").exists());
}

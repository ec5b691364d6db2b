//! `tinykube up` on etcd: `--etcd` starts a local etcd from PATH whose keys read as a real
//! cluster's (`etcdctl get /registry/minions/worker0`), remembered by the data dir and stopped
//! with the cluster; `--apiservers 3` puts three API servers behind the kubeconfig's server, and
//! one killed with SIGKILL leaves the others serving and the `kubernetes` Endpoints listing only
//! the live ones. Flags that cannot work say why.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use tinykube_tests::{binary, eventually, table_rows};

const WAIT: Duration = Duration::from_secs(20);
/// An API server's identity lease stops counting 15 s after its last renewal, and the
/// survivors reconcile every 10 s.
const LEASE_WAIT: Duration = Duration::from_secs(45);

/// A `tinykube up --output json --exit-on-stdin-close` process and its JSON line; dropping it
/// closes stdin (the cluster stops) and waits for the exit.
struct Up {
    child: Child,
    info: serde_json::Value,
    stderr: Option<JoinHandle<String>>,
}

impl Up {
    fn start(data: &Path, extra: &[&str]) -> Up {
        let mut child = Command::new(binary("tinykube"))
            .args(["up", "--port", "0", "--nodes", "1", "--output", "json"])
            .arg("--exit-on-stdin-close")
            .arg("--data-dir")
            .arg(data)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tinykube starts");
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            text
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        std::thread::spawn(move || for _ in stdout.lines() {});
        let info = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                drop(child.stdin.take());
                let _ = child.wait();
                panic!(
                    "no JSON line ({e}): {line:?}; stderr: {}",
                    stderr.join().unwrap()
                );
            }
        };
        Up {
            child,
            info,
            stderr: Some(stderr),
        }
    }

    fn kubeconfig(&self) -> PathBuf {
        PathBuf::from(self.info["kubeconfig"].as_str().expect("kubeconfig"))
    }

    fn kubectl(&self, args: &[&str]) -> (bool, String) {
        let kubeconfig = self.kubeconfig();
        let out = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", &kubeconfig)
            .env("KUBECACHEDIR", kubeconfig.with_file_name("kube-cache"))
            .output()
            .expect("kubectl runs");
        let text = if out.status.success() {
            out.stdout
        } else {
            out.stderr
        };
        (
            out.status.success(),
            String::from_utf8_lossy(&text).into_owned(),
        )
    }

    fn pid(&self, component: &str) -> u64 {
        self.info["pids"][component]
            .as_u64()
            .unwrap_or_else(|| panic!("no pid of {component}: {}", self.info))
    }

    fn etcd(&self) -> String {
        self.info["etcdServers"][0]
            .as_str()
            .unwrap_or_else(|| panic!("no etcd server: {}", self.info))
            .to_string()
    }

    /// Close stdin and wait for tinykube to exit; its stderr.
    fn stop(&mut self) -> String {
        drop(self.child.stdin.take());
        let mut exited = false;
        eventually(WAIT, || {
            exited = self.child.try_wait().ok().flatten().is_some();
            exited
        });
        assert!(exited, "tinykube stops once stdin is closed");
        self.stderr
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default()
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        if !eventually(WAIT, || self.child.try_wait().ok().flatten().is_some()) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|t| !t.trim_start().starts_with('Z'))
    })
}

fn etcdctl(endpoint: &str, args: &[&str]) -> String {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .arg("--endpoints")
        .arg(endpoint)
        .args(args)
        .output()
        .expect("etcdctl runs");
    assert!(
        out.status.success(),
        "etcdctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The ports the `kubernetes` Endpoints list, sorted.
fn endpoint_ports(up: &Up) -> Vec<u64> {
    let (ok, out) = up.kubectl(&["get", "endpoints", "kubernetes", "-o", "json"]);
    assert!(ok, "{out}");
    let ep: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut ports: Vec<u64> = ep["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["ports"][0]["port"].as_u64())
        .collect();
    ports.sort();
    ports
}

fn port_of(url: &str) -> u64 {
    url.rsplit(':').next().unwrap().parse().unwrap()
}

#[test]
fn up_on_a_local_etcd_keeps_the_cluster_in_it_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut up = Up::start(&data, &["--etcd"]);
    let etcd = up.etcd();
    let etcd_pid = up.pid("etcd");
    assert!(alive(etcd_pid));
    assert_eq!(up.info["apiservers"].as_array().map(Vec::len), Some(1));

    let (ok, out) = up.kubectl(&["get", "nodes", "--no-headers"]);
    assert!(ok, "{out}");
    let rows = table_rows(&out);
    assert_eq!(
        (rows[0][0].as_str(), rows[0][1].as_str()),
        ("worker0", "Ready")
    );
    // The node as etcdctl reads it, under upstream's key.
    let value = etcdctl(
        &etcd,
        &["get", "/registry/minions/worker0", "--print-value-only"],
    );
    let node: serde_json::Value = serde_json::from_str(value.trim())
        .unwrap_or_else(|e| panic!("the node is not JSON ({e}): {value}"));
    assert_eq!(node["metadata"]["name"], "worker0");
    let (ok, out) = up.kubectl(&["create", "configmap", "kept", "--from-literal=k=v"]);
    assert!(ok, "{out}");
    // The API server's identity lease is there too.
    let leases = etcdctl(
        &etcd,
        &[
            "get",
            "/registry/leases/kube-system/",
            "--prefix",
            "--keys-only",
        ],
    );
    assert!(
        leases.contains("/registry/leases/kube-system/apiserver-"),
        "{leases}"
    );

    up.stop();
    assert!(!alive(etcd_pid), "etcd stops with the cluster");

    // The data dir remembers --etcd: the next up starts etcd again on the same data.
    let again = Up::start(&data, &[]);
    assert_ne!(again.pid("etcd"), etcd_pid);
    let (ok, out) = again.kubectl(&["get", "configmap", "kept", "-o", "jsonpath={.data.k}"]);
    assert_eq!((ok, out.as_str()), (true, "v"));
}

#[test]
fn three_api_servers_keep_serving_when_one_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let up = Up::start(&data, &["--etcd", "--apiservers", "3"]);
    let urls: Vec<String> = up.info["apiservers"]
        .as_array()
        .expect("apiservers")
        .iter()
        .map(|u| u.as_str().unwrap().to_string())
        .collect();
    assert_eq!(urls.len(), 3, "{}", up.info);
    let server = up.info["server"].as_str().unwrap();
    assert!(
        !urls.iter().any(|u| u == server),
        "the server is the balancer"
    );
    let mut ports: Vec<u64> = urls.iter().map(|u| port_of(u)).collect();
    ports.sort();
    assert!(eventually(LEASE_WAIT, || endpoint_ports(&up) == ports));

    for i in 0..3 {
        let (ok, out) = up.kubectl(&["create", "configmap", &format!("before-{i}")]);
        assert!(ok, "{out}");
    }
    // SIGKILL: no lease removed, no goodbye.
    let killed = up.pid("apiserver-1");
    let _ = Command::new("kill")
        .args(["-9", &killed.to_string()])
        .status();
    assert!(eventually(WAIT, || !alive(killed)));
    // Every kubectl is new connections, handed round the three: all work.
    for i in 0..6 {
        let (ok, out) = up.kubectl(&["create", "configmap", &format!("after-{i}")]);
        assert!(ok, "create after-{i} through the balancer: {out}");
    }
    let (ok, out) = up.kubectl(&["get", "configmaps", "--no-headers"]);
    assert!(ok, "{out}");
    assert_eq!(
        table_rows(&out)
            .iter()
            .filter(|r| r[0].starts_with("before-") || r[0].starts_with("after-"))
            .count(),
        9,
        "{out}"
    );
    // Once the killed server's lease is stale, the survivors drop it from the Endpoints.
    let live: Vec<u64> = urls
        .iter()
        .filter(|u| !u.ends_with(&format!(":{}", port_of(&urls[1]))))
        .map(|u| port_of(u))
        .collect();
    let mut live = live;
    live.sort();
    let mut last = Vec::new();
    let dropped = eventually(LEASE_WAIT, || {
        last = endpoint_ports(&up);
        last == live
    });
    assert!(dropped, "endpoints {last:?}, live {live:?}");
    let (ok, out) = up.kubectl(&["get", "nodes", "--no-headers"]);
    assert!(ok && out.contains(" Ready "), "{out}");
}

#[test]
fn flags_that_cannot_work_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], path: Option<&str>| {
        let mut cmd = Command::new(binary("tinykube"));
        cmd.args(["up", "--port", "0", "--data-dir"])
            .arg(dir.path().join("data"))
            .args(args)
            .env_remove("TINYKUBE_ETCD");
        if let Some(p) = path {
            cmd.env("PATH", p);
        }
        let out = cmd.output().expect("tinykube runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let cases: [(&[&str], Option<&str>, &str); 3] = [
        (
            &["--apiservers", "2"],
            None,
            "tinykube: --apiservers 2 needs a store the API servers share: add --etcd (a local etcd) or --etcd-servers URL,URL (sled is one API server's own)\n",
        ),
        (
            &["--etcd"],
            Some(dir.path().to_str().unwrap()),
            "tinykube: etcd not found on PATH: install Debian's etcd-server or pass --etcd-servers\n",
        ),
        (
            &["--etcd-servers", "127.0.0.1:2379"],
            None,
            "tinykube: --etcd-servers: \"127.0.0.1:2379\" is not a URL (http://HOST:PORT)\n",
        ),
    ];
    for (args, path, want) in cases {
        assert_eq!(run(args, path), (Some(1), want.to_string()), "{args:?}");
    }
}

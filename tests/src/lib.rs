//! Helpers shared by the end-to-end tests: start the real binaries on port 0 with temporary
//! data dirs, write a kubeconfig, and run the real kubectl against them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

pub mod jobs;
pub mod lab;
pub mod terminal;

/// Folder of the workspace's built binaries (`target/debug`), found from the test executable.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/debug/deps/<test> -> target/debug
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .expect("test executable lives in target/<profile>/deps")
}

/// Path of a workspace binary; it must have been built (`cargo build --workspace --bins`).
pub fn binary(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build --workspace --bins` before the tests (the README's test command does)",
        path.display()
    );
    path
}

/// A local etcd member (from PATH) for an API server on `--storage-backend etcd`; killed when
/// dropped.
pub struct Etcd {
    child: Option<Child>,
    member: tinykube_store::Member,
}

impl Etcd {
    /// Start one member with its data in `dir` on free ports and wait until it is healthy.
    pub fn start(dir: &Path) -> Result<Etcd> {
        let member = tinykube_store::Member {
            name: "etcd0".into(),
            dir: dir.to_path_buf(),
            client_port: tinykube_store::free_port()?,
            peer_port: tinykube_store::free_port()?,
        };
        let mut etcd = Etcd {
            child: None,
            member,
        };
        etcd.spawn(true)?;
        Ok(etcd)
    }

    fn spawn(&mut self, new_cluster: bool) -> Result<()> {
        let binary = tinykube_store::LocalEtcd::binary()?;
        std::fs::create_dir_all(&self.member.dir)?;
        let log = std::fs::File::create(self.member.dir.join("etcd.log"))?;
        let child = Command::new(binary)
            .args(
                self.member
                    .args(std::slice::from_ref(&self.member), new_cluster),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting etcd")?;
        self.child = Some(child);
        let health = format!("{}/health", self.url());
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(r) = reqwest::blocking::get(&health) {
                if r.text().is_ok_and(|t| t.contains("\"true\"")) {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("etcd at {} did not become healthy", self.url())
    }

    pub fn url(&self) -> String {
        self.member.client_url()
    }

    /// SIGKILL etcd.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Start again on the same data and ports.
    pub fn restart(&mut self) -> Result<()> {
        self.kill9();
        self.spawn(false)
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Whether the environment asks every test's API server to store in etcd.
pub fn etcd_requested() -> bool {
    std::env::var("TINYKUBE_TEST_STORAGE").is_ok_and(|v| v == "etcd")
}

/// The API server's flags to store in `etcd`, if any.
fn etcd_flags(etcd: Option<&Etcd>) -> Vec<String> {
    match etcd {
        Some(etcd) => vec![
            "--storage-backend".into(),
            "etcd".into(),
            "--etcd-servers".into(),
            etcd.url(),
        ],
        None => Vec::new(),
    }
}

/// A running tinykube-apiserver with its own data dir and kubeconfig (and its own etcd, when
/// it stores there).
pub struct ApiServer {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub url: String,
    pub port: u16,
    /// The extra flags it was started with, kept by `restart`.
    extra: Vec<String>,
    /// Declared last: dropped after the server.
    pub etcd: Option<Etcd>,
}

fn spawn_apiserver(data: &Path, port: u16, extra: &[&str]) -> Result<(Child, String)> {
    let mut cmd = Command::new(binary("tinykube-apiserver"));
    cmd.arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(data)
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd.spawn().context("starting tinykube-apiserver")?;
    let stdout = child.stdout.take().context("apiserver stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let line = lines
        .next()
        .context("apiserver exited before printing its address")??;
    let url = line
        .rsplit(' ')
        .next()
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
        .with_context(|| format!("unexpected first line from apiserver: {line}"))?
        .to_string();
    // Keep draining stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Ok((child, url))
}

impl ApiServer {
    /// Start on a free port with a fresh data dir.
    pub fn start() -> Result<ApiServer> {
        Self::start_with(&[])
    }

    /// Start with extra flags (on etcd when `TINYKUBE_TEST_STORAGE=etcd`).
    pub fn start_with(extra: &[&str]) -> Result<ApiServer> {
        Self::start_on(extra, etcd_requested())
    }

    /// Start on a fresh local etcd.
    pub fn start_on_etcd(extra: &[&str]) -> Result<ApiServer> {
        Self::start_on(extra, true)
    }

    fn start_on(extra: &[&str], on_etcd: bool) -> Result<ApiServer> {
        let dir = tempfile::tempdir()?;
        let etcd = match on_etcd {
            true => Some(Etcd::start(&dir.path().join("etcd"))?),
            false => None,
        };
        let mut flags = etcd_flags(etcd.as_ref());
        flags.extend(extra.iter().map(|s| s.to_string()));
        let extra: Vec<&str> = flags.iter().map(String::as_str).collect();
        let (child, url) = spawn_apiserver(&dir.path().join("data"), 0, &extra)?;
        let port = url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .context("port in url")?;
        let server = ApiServer {
            child: Some(child),
            dir,
            url,
            port,
            extra: flags.clone(),
            etcd,
        };
        server.write_kubeconfig()?;
        server.wait_healthy()?;
        Ok(server)
    }

    fn write_kubeconfig(&self) -> Result<()> {
        // Over HTTPS, the server's certificate is checked against the CA it generated.
        let ca = match self.url.starts_with("https://") {
            true => format!("    certificate-authority: {}\n", self.ca_file().display()),
            false => String::new(),
        };
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n{ca}    server: {}\n  name: tinykube\ncontexts:\n- context:\n    cluster: tinykube\n    user: admin\n  name: tinykube\ncurrent-context: tinykube\nusers:\n- name: admin\n  user: {{}}\n",
            self.url
        );
        std::fs::write(self.kubeconfig(), text)?;
        Ok(())
    }

    fn wait_healthy(&self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(r) = self.http().get(format!("{}/healthz", self.url)).send() {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        bail!("apiserver at {} did not become healthy", self.url)
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The cluster CA the server generated into its data dir (`ca.key` beside it).
    pub fn ca_file(&self) -> PathBuf {
        self.data_dir().join("ca.crt")
    }

    /// A scratch directory for manifests of this test.
    pub fn scratch(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// SIGKILL the server (no chance to flush anything).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Start again on the same data dir, port and flags.
    pub fn restart(&mut self) -> Result<()> {
        self.kill9();
        let extra: Vec<&str> = self.extra.iter().map(String::as_str).collect();
        let (child, url) = spawn_apiserver(&self.data_dir(), self.port, &extra)?;
        self.child = Some(child);
        self.url = url;
        self.write_kubeconfig()?;
        self.wait_healthy()
    }

    /// Start again on the same data dir (and etcd) and port with other flags (e.g.
    /// authentication on).
    pub fn restart_with(&mut self, extra: &[&str]) -> Result<()> {
        self.kill9();
        let mut flags = etcd_flags(self.etcd.as_ref());
        flags.extend(extra.iter().map(|s| s.to_string()));
        let extra: Vec<&str> = flags.iter().map(String::as_str).collect();
        let (child, url) = spawn_apiserver(&self.data_dir(), self.port, &extra)?;
        self.child = Some(child);
        self.url = url;
        self.write_kubeconfig()?;
        self.wait_healthy()
    }

    /// Run the real kubectl against this server.
    pub fn kubectl(&self, args: &[&str]) -> Kubectl {
        self.kubectl_stdin(args, None)
    }

    /// Run kubectl with `input` on its standard input (for `-f -`).
    pub fn kubectl_stdin(&self, args: &[&str], input: Option<&str>) -> Kubectl {
        let mut cmd = Command::new("kubectl");
        cmd.args(args)
            .env("KUBECONFIG", self.kubeconfig())
            .env("KUBECACHEDIR", self.dir.path().join("kube-cache"))
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl must be installed (see README)");
        if let Some(text) = input {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(text.as_bytes());
            }
        }
        let out = child.wait_with_output().expect("kubectl ran");
        Kubectl::from(out, args)
    }

    /// An HTTP client for this server (trusting its CA when it serves HTTPS).
    pub fn http(&self) -> reqwest::blocking::Client {
        let mut builder = reqwest::blocking::Client::builder();
        if self.url.starts_with("https://") {
            let pem = std::fs::read(self.ca_file()).expect("the server's CA");
            let ca = reqwest::Certificate::from_pem(&pem).expect("a PEM CA");
            builder = builder.add_root_certificate(ca);
        }
        builder.build().expect("an HTTP client")
    }

    /// The events a watch request answers (`PATH?watch=1&…&timeoutSeconds=N`: it must end),
    /// each parsed; the answer must be a 200.
    #[track_caller]
    pub fn watch_events(&self, path: &str) -> Vec<serde_json::Value> {
        let resp = self
            .http()
            .get(format!("{}{path}", self.url))
            .send()
            .expect("the watch request is answered");
        assert_eq!(resp.status().as_u16(), 200, "watch {path}");
        BufReader::new(resp)
            .lines()
            .map_while(Result::ok)
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str(&l).expect("a JSON watch event"))
            .collect()
    }

    /// `kubectl patch RESOURCE NAME --subresource=status --type=merge -p PATCH`, which must work.
    #[track_caller]
    pub fn patch_status(&self, resource: &str, name: &str, patch: &str) {
        self.kubectl(&[
            "patch",
            resource,
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            patch,
        ])
        .ok();
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// What one kubectl run printed.
#[derive(Debug)]
pub struct Kubectl {
    pub args: String,
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Kubectl {
    fn from(out: Output, args: &[&str]) -> Self {
        Kubectl {
            args: args.join(" "),
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Assert success and return stdout.
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert!(
            self.success,
            "kubectl {} failed:\nstdout:\n{}\nstderr:\n{}",
            self.args, self.stdout, self.stderr
        );
        &self.stdout
    }

    /// Assert failure and return stderr.
    #[track_caller]
    pub fn fails(&self) -> &str {
        assert!(
            !self.success,
            "kubectl {} should have failed but printed:\n{}",
            self.args, self.stdout
        );
        &self.stderr
    }
}

/// Write a manifest into `dir` and return its path.
pub fn manifest(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write manifest");
    path
}

/// Rows of a kubectl table as whitespace-split columns, header first.
pub fn table_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// Poll `f` until it returns true or `timeout` passes.
pub fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// A running tinykube-scheduler for an API server; killed on drop.
pub struct Scheduler {
    child: Child,
}

impl Scheduler {
    pub fn start(server: &ApiServer, extra: &[&str]) -> Result<Scheduler> {
        let mut cmd = Command::new(binary("tinykube-scheduler"));
        cmd.arg("--kubeconfig").arg(server.kubeconfig());
        if !extra.contains(&"--secure-port") {
            // Several schedulers may run at once: no fixed metrics port.
            cmd.args(["--secure-port", "0"]);
        }
        let child = cmd
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting tinykube-scheduler")?;
        Ok(Scheduler { child })
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running tinykube-kubelet for an API server; killed on drop, restartable. Its read-only
/// endpoint (`/healthz`, `/pods`) is on a free port: `url`.
pub struct Kubelet {
    child: Option<Child>,
    kubeconfig: PathBuf,
    args: Vec<String>,
    pub url: String,
}

impl Kubelet {
    /// Start with `extra` flags (e.g. `--hostname-override worker0`).
    pub fn start(server: &ApiServer, extra: &[&str]) -> Result<Kubelet> {
        let mut k = Kubelet {
            child: None,
            kubeconfig: server.kubeconfig(),
            args: extra.iter().map(|s| s.to_string()).collect(),
            url: String::new(),
        };
        k.spawn()?;
        Ok(k)
    }

    fn spawn(&mut self) -> Result<()> {
        let mut child = Command::new(binary("tinykube-kubelet"))
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["--read-only-port", "0"])
            .args(&self.args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting tinykube-kubelet")?;
        let stdout = child.stdout.take().context("kubelet stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = lines
            .next()
            .context("kubelet exited before printing its address")??;
        self.url = line
            .rsplit(' ')
            .next()
            .filter(|u| u.starts_with("http://"))
            .with_context(|| format!("unexpected first line from kubelet: {line}"))?
            .to_string();
        std::thread::spawn(move || for _ in lines {});
        self.child = Some(child);
        Ok(())
    }

    /// SIGKILL the process.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Kill and start again with the same flags.
    pub fn restart(&mut self) -> Result<()> {
        self.kill9();
        self.spawn()
    }

    /// The pods this kubelet reports on `/pods`, as JSON.
    pub fn pods(&self) -> Result<serde_json::Value> {
        Ok(reqwest::blocking::get(format!("{}/pods", self.url))?.json()?)
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Lift the `node.kubernetes.io/not-ready:NoSchedule` taint the API server puts on every new
/// node, as upstream's node-lifecycle controller does once the node is Ready. Tests that
/// schedule without tinykube's controller manager do it by hand.
pub fn lift_not_ready_taint(server: &ApiServer, node: &str) {
    server
        .kubectl(&[
            "taint",
            "nodes",
            node,
            "node.kubernetes.io/not-ready:NoSchedule-",
        ])
        .ok();
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Create Ready nodes `worker0..` (and `master0` with its NoSchedule taint when `master`),
/// each cpu=4 memory=8Gi pods=110, the way the course sets them up without kubelets:
/// `kubectl create -f` then `kubectl patch node --subresource=status`.
pub fn ready_nodes(server: &ApiServer, workers: usize, master: bool) {
    let mut names: Vec<String> = (0..workers).map(|i| format!("worker{i}")).collect();
    if master {
        names.push("master0".into());
    }
    for name in &names {
        let role = if name.starts_with("master") {
            "    node-role.kubernetes.io/master: \"\"\nspec:\n  taints:\n  - key: node-role.kubernetes.io/master\n    effect: NoSchedule\n"
        } else {
            ""
        };
        let yaml = format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n    kubernetes.io/hostname: {name}\n{role}"
        );
        server
            .kubectl_stdin(&["create", "-f", "-"], Some(&yaml))
            .ok();
        let status = r#"{"status":{"capacity":{"cpu":"4","memory":"8Gi","pods":"110"},"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"},"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status"}]}}"#;
        server.patch_status("node", name, status);
        // The API server taints every new node not-ready (TaintNodesByCondition); upstream's
        // node-lifecycle controller lifts it once the node reports Ready. Until tinykube's
        // controller manager runs in these tests, the helper lifts it the same way.
        server
            .kubectl(&[
                "taint",
                "nodes",
                name,
                "node.kubernetes.io/not-ready:NoSchedule-",
            ])
            .ok();
    }
}

/// A running tinykube-controller-manager for an API server; killed on drop, restartable.
pub struct ControllerManager {
    child: Option<Child>,
    kubeconfig: PathBuf,
    args: Vec<String>,
}

impl ControllerManager {
    /// Start with `extra` flags (e.g. `--controllers=replicaset`). Without an explicit
    /// `--leader-elect`, leader election is off so a restarted manager acts at once; as
    /// `tinykube up` does, `--root-ca-file` is the CA in the API server's data dir and
    /// `--service-account-private-key-file` its key.
    pub fn start(server: &ApiServer, extra: &[&str]) -> Result<ControllerManager> {
        Self::start_as(server, server.kubeconfig(), extra)
    }

    /// [`ControllerManager::start`] with its own kubeconfig (credentials of its own).
    pub fn start_as(
        server: &ApiServer,
        kubeconfig: PathBuf,
        extra: &[&str],
    ) -> Result<ControllerManager> {
        let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        if !extra.iter().any(|a| a.starts_with("--leader-elect")) {
            args.push("--leader-elect=false".into());
        }
        if !extra.iter().any(|a| a.starts_with("--root-ca-file")) {
            args.push("--root-ca-file".into());
            args.push(server.data_dir().join("ca.crt").display().to_string());
        }
        if !extra
            .iter()
            .any(|a| a.starts_with("--service-account-private-key-file"))
        {
            args.push("--service-account-private-key-file".into());
            args.push(server.data_dir().join("ca.key").display().to_string());
        }
        let mut cm = ControllerManager {
            child: None,
            kubeconfig,
            args,
        };
        cm.spawn()?;
        Ok(cm)
    }

    fn spawn(&mut self) -> Result<()> {
        let child = Command::new(binary("tinykube-controller-manager"))
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(&self.args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting tinykube-controller-manager")?;
        self.child = Some(child);
        Ok(())
    }

    /// SIGKILL the process (no chance to finish anything in flight).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM the process and wait (up to 10 s) for it to exit; its exit status.
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }

    /// Kill and start again with the same flags.
    pub fn restart(&mut self) -> Result<()> {
        self.kill9();
        self.spawn()
    }
}

impl Drop for ControllerManager {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A running tinykube-metrics-server for an API server (it registers itself with the
/// aggregator); killed on drop.
pub struct MetricsServer {
    child: Child,
}

impl MetricsServer {
    /// Start with `extra` flags (e.g. `--metric-resolution 1s`).
    pub fn start(server: &ApiServer, extra: &[&str]) -> Result<MetricsServer> {
        let child = Command::new(binary("tinykube-metrics-server"))
            .arg("--kubeconfig")
            .arg(server.kubeconfig())
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting tinykube-metrics-server")?;
        Ok(MetricsServer { child })
    }

    /// SIGTERM the process (it withdraws its address) and wait for it.
    pub fn terminate(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Mark a pod Running and Ready through the status subresource, as a kubelet would (no
/// kubelet in these tests). Plain HTTP, so that hundreds of pods are quick.
pub fn mark_ready(server: &ApiServer, namespace: &str, pod: &str) -> bool {
    let body = serde_json::json!({"status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True",
                        "lastTransitionTime": "2020-01-01T00:00:00Z"}],
    }});
    server
        .http()
        .patch(format!(
            "{}/api/v1/namespaces/{namespace}/pods/{pod}/status",
            server.url
        ))
        .header("Content-Type", "application/merge-patch+json")
        .body(body.to_string())
        .send()
        .is_ok_and(|r| r.status().is_success())
}

/// Mark every not-yet-ready pod matching `selector` in `namespace` Running and Ready; returns
/// how many pods match.
pub fn mark_all_ready(server: &ApiServer, namespace: &str, selector: &str) -> usize {
    let list: serde_json::Value = match server
        .http()
        .get(format!("{}/api/v1/namespaces/{namespace}/pods", server.url))
        .query(&[("labelSelector", selector)])
        .send()
        .and_then(|r| r.json())
    {
        Ok(v) => v,
        Err(_) => return 0,
    };
    let items = list["items"].as_array().cloned().unwrap_or_default();
    for pod in &items {
        let ready = pod["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        if !ready && pod["metadata"]["deletionTimestamp"].is_null() {
            if let Some(name) = pod["metadata"]["name"].as_str() {
                mark_ready(server, namespace, name);
            }
        }
    }
    items.len()
}

/// Names of the pods in `namespace` matching the label selector `selector`.
pub fn pod_names(server: &ApiServer, namespace: &str, selector: &str) -> Vec<String> {
    let out = server.kubectl(&[
        "get",
        "pods",
        "-n",
        namespace,
        "-l",
        selector,
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    out.stdout.split_whitespace().map(str::to_string).collect()
}

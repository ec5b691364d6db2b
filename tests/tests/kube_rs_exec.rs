//! kube-rs, unmodified, streaming into containers (its `ws` feature: WebSocket with the
//! `v5.channel.k8s.io` / `v4.channel.k8s.io` subprotocols): `Api::<Pod>::exec` of `ls /` and of
//! `cat` on a mounted ConfigMap key with stdout captured, a command exiting 3 whose status
//! kube-rs reports through `take_status`, stdin written to `cat` and echoed back, and
//! `Api::<Pod>::attach` to a running container's output. What a Rust operator that runs
//! commands in pods does.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, AttachedProcess};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tinykube_tests::{eventually, ApiServer, Kubelet};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WAIT: Duration = Duration::from_secs(30);

const POD: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: greeting
data:
  message: hello from a ConfigMap
---
apiVersion: v1
kind: Pod
metadata:
  name: shell
spec:
  nodeName: worker0
  containers:
  - name: app
    image: busybox
    command: [sh, -c, 'i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 1; done']
    volumeMounts:
    - name: config
      mountPath: /etc/config
  volumes:
  - name: config
    configMap:
      name: greeting
"#;

async fn client(server: &ApiServer) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Everything a process writes to stdout until it ends, and how it ended.
async fn run(
    mut process: AttachedProcess,
) -> (
    String,
    Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>,
) {
    let mut stdout = process.stdout().expect("stdout was asked for");
    let status = process.take_status().expect("the status channel");
    let mut out = String::new();
    stdout.read_to_string(&mut out).await.unwrap();
    let status = status.await;
    process.join().await.unwrap();
    (out, status)
}

#[test]
fn exec_and_attach_through_kube_rs() {
    // The harness is blocking: the cluster first, then kube-rs in a runtime of its own.
    let server = ApiServer::start().unwrap();
    let _kubelet = Kubelet::start(&server, &["--hostname-override", "worker0"]).unwrap();
    server.kubectl_stdin(&["apply", "-f", "-"], Some(POD)).ok();
    let running = || {
        let out = server.kubectl(&["get", "pod", "shell", "-o", "jsonpath={.status.phase}"]);
        out.stdout == "Running"
    };
    assert!(eventually(WAIT, running));
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(exec_and_attach(&server));
}

async fn exec_and_attach(server: &ApiServer) {
    let pods: Api<Pod> = Api::default_namespaced(client(server).await);
    let output = || AttachParams::default().stdout(true).stderr(false);

    // `ls /`: the image's root, stdout captured; a zero exit is a Success status.
    let ls = pods.exec("shell", ["ls", "/"], &output()).await.unwrap();
    let (listing, status) = run(ls).await;
    let entries: Vec<&str> = listing.split_whitespace().collect();
    for dir in ["bin", "dev", "etc", "proc", "usr"] {
        assert!(entries.contains(&dir), "{listing}");
    }
    assert_eq!(status.and_then(|s| s.status).as_deref(), Some("Success"));

    // The ConfigMap's key is a file under the mount.
    let cat = pods
        .exec("shell", ["cat", "/etc/config/message"], &output())
        .await
        .unwrap();
    assert_eq!(run(cat).await.0, "hello from a ConfigMap");

    // A failing command: kube-rs reports the Failure with upstream's reason and exit code.
    let exit3 = pods
        .exec("shell", ["sh", "-c", "exit 3"], &output())
        .await
        .unwrap();
    let (_, status) = run(exit3).await;
    let status = status.expect("a status for a failed command");
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    let causes = status.details.and_then(|d| d.causes).unwrap_or_default();
    let exit_code = causes
        .iter()
        .find(|c| c.reason.as_deref() == Some("ExitCode"))
        .and_then(|c| c.message.clone());
    assert_eq!(exit_code.as_deref(), Some("3"), "{causes:?}");
    assert_eq!(
        status.message.as_deref(),
        Some("command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3")
    );

    // stdin written to `cat` comes back on stdout; closing it ends `cat`.
    let mut echo = pods
        .exec("shell", ["cat"], &output().stdin(true))
        .await
        .unwrap();
    let mut stdin = echo.stdin().expect("stdin was asked for");
    stdin.write_all(b"hello\nworld\n").await.unwrap();
    stdin.shutdown().await.unwrap();
    drop(stdin);
    assert_eq!(run(echo).await.0, "hello\nworld\n");

    // attach: the container's own output as it comes, until we leave.
    let mut attached = pods.attach("shell", &output()).await.unwrap();
    let mut stdout = attached.stdout().expect("stdout was asked for");
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    let read = tokio::time::timeout(WAIT, async {
        while !String::from_utf8_lossy(&seen).contains("tick") {
            let n = stdout.read(&mut buf).await.unwrap();
            assert!(n > 0, "the attach stream ended early");
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    assert!(read.is_ok(), "{}", String::from_utf8_lossy(&seen));
    attached.abort();
}

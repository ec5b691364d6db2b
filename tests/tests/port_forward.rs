//! `kubectl port-forward`, as the docs' "Use Port Forwarding to Access Applications in a
//! Cluster" task uses it: a local port answers with what the pod's container serves (nginx's
//! welcome page, its 404, its access log naming 127.0.0.1), kept-alive connections carry
//! several requests, over kubectl's default WebSocket tunnel and over plain SPDY
//! (`KUBECTL_PORT_FORWARD_WEBSOCKETS=false`), through a pod and through a Service; a port
//! nothing listens on is upstream's `connection refused` error.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tinykube_tests::{eventually, ApiServer, Kubelet};

const WEB: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  nodeName: worker0
  containers:
  - name: nginx
    image: nginx:1.27
    ports:
    - containerPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 8080
    targetPort: 80
"#;

/// `kubectl port-forward TARGET :REMOTE` on a port of kubectl's choosing: the process and the
/// local port it printed.
fn forward(server: &ApiServer, target: &str, remote: u16, websockets: bool) -> (Child, u16) {
    let mut child = Command::new("kubectl")
        .args(["port-forward", target, &format!(":{remote}")])
        .env("KUBECONFIG", server.kubeconfig())
        .env(
            "KUBECTL_PORT_FORWARD_WEBSOCKETS",
            if websockets { "true" } else { "false" },
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl must be installed (see README)");
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    // "Forwarding from 127.0.0.1:41234 -> 80"
    let port = first
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| {
            let _ = child.kill();
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("kubectl printed {first:?}, {err}")
        });
    (child, port)
}

/// GET `paths` one after another on one connection (the last asks to close): the answers.
fn get(port: u16, paths: &[&str]) -> String {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    for (i, path) in paths.iter().enumerate() {
        let close = if i + 1 == paths.len() {
            "close"
        } else {
            "keep-alive"
        };
        write!(
            conn,
            "GET {path} HTTP/1.1\r\nHost: localhost:{port}\r\nUser-Agent: port-forward-test\r\nConnection: {close}\r\n\r\n"
        )
        .unwrap();
    }
    let mut out = String::new();
    conn.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn port_forward_to_nginx() {
    let server = ApiServer::start().expect("api server starts");
    let _kubelet = Kubelet::start(&server, &["--hostname-override", "worker0"]).unwrap();
    server.kubectl_stdin(&["apply", "-f", "-"], Some(WEB)).ok();
    // kubectl forwards only to a Running pod.
    assert!(eventually(Duration::from_secs(30), || {
        server
            .kubectl(&["get", "pod", "web", "-o", "jsonpath={.status.phase}"])
            .stdout
            == "Running"
    }));

    // Discovery names the subresource as upstream.
    let v1 = server
        .kubectl(&["get", "--raw", "/api/v1"])
        .ok()
        .to_string();
    assert!(
        v1.contains(r#""name":"pods/portforward","singularName":"","namespaced":true,"kind":"PodPortForwardOptions","verbs":["create","get"]"#),
        "{v1}"
    );

    // A Service's port is its targetPort in the pod, as kubectl maps it.
    let cases = [
        ("pod/web", 80, true),
        ("pod/web", 80, false),
        ("svc/web", 8080, true),
    ];
    for (target, remote, websockets) in cases {
        let (mut kubectl, port) = forward(&server, target, remote, websockets);
        let answers = get(port, &["/", "/nope"]);
        let _ = kubectl.kill();
        let _ = kubectl.wait();
        assert!(answers.starts_with("HTTP/1.1 200 OK\r\n"), "{answers}");
        assert!(
            answers.contains("<title>Welcome to nginx!</title>"),
            "{answers}"
        );
        assert!(answers.contains("HTTP/1.1 404 Not Found\r\n"), "{answers}");
        assert!(answers.contains("Connection: close\r\n"), "{answers}");
    }
    // nginx saw the requests come from inside the pod, as through a real kubelet.
    let log = server.kubectl(&["logs", "web"]).ok().to_string();
    assert!(
        log.contains(r#"127.0.0.1 - - ["#) && log.contains(r#""GET /nope HTTP/1.1" 404"#),
        "{log}"
    );

    // Nothing listens on 81: upstream's error, and kubectl gives up on the pod.
    let (mut kubectl, port) = forward(&server, "pod/web", 81, true);
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let _ = conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let exited = eventually(Duration::from_secs(10), || {
        kubectl.try_wait().unwrap().is_some()
    });
    if !exited {
        let _ = kubectl.kill();
    }
    let mut stderr = String::new();
    kubectl
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(exited, "kubectl port-forward ends: {stderr}");
    assert!(
        stderr.contains("an error occurred forwarding")
            && stderr.contains("failed to connect to localhost:81 inside namespace")
            && stderr.contains("connect: connection refused"),
        "{stderr}"
    );
}

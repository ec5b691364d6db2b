//! Every pod IP is reachable from every pod, whichever kubelet process runs it: with two
//! kubelets (worker0 and worker1, one process each), a busybox pod on worker0 reaches nginx on
//! worker1 through its Service and at its pod IP, in its own logs and through `kubectl exec`;
//! nginx's readiness probe (on its own node) still passes; a port nothing listens on is
//! refused across nodes; a hostNetwork pod is reached at its node's InternalIP; an IP in no
//! node's range times out as busybox says it.

use std::time::Duration;

use serde_json::Value;
use tinykube_tests::{eventually, ApiServer, ControllerManager, Kubelet};

const WAIT: Duration = Duration::from_secs(40);
const WELCOME: &str = "<h1>Welcome to nginx!</h1>";

fn kubelet(server: &ApiServer, name: &str, ip: &str, cidr: &str) -> Kubelet {
    Kubelet::start(
        server,
        &[
            "--hostname-override",
            name,
            "--node-ip",
            ip,
            "--pod-cidr",
            cidr,
        ],
    )
    .expect("kubelet starts")
}

fn apply(server: &ApiServer, yaml: &str) {
    server.kubectl_stdin(&["apply", "-f", "-"], Some(yaml)).ok();
}

fn pod_json(server: &ApiServer, name: &str) -> Value {
    let out = server.kubectl(&["get", "pod", name, "-o", "json"]);
    serde_json::from_str(&out.stdout).unwrap_or(Value::Null)
}

fn ready(server: &ApiServer, name: &str) -> bool {
    pod_json(server, name)["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

const WEB: &str = "apiVersion: v1
kind: Pod
metadata:
  name: web-0
  labels: {app: web}
spec:
  nodeName: worker1
  containers:
  - name: nginx
    image: nginx
    ports: [{containerPort: 80}]
    readinessProbe:
      httpGet: {path: /, port: 80}
      periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: v1
kind: Pod
metadata:
  name: hostweb
spec:
  nodeName: worker1
  hostNetwork: true
  containers:
  - name: nginx
    image: nginx
    ports: [{containerPort: 80}]
";

#[test]
fn pods_reach_pods_of_another_kubelet() {
    let server = ApiServer::start().expect("api server starts");
    let _cm = ControllerManager::start(&server, &[]).expect("controller manager starts");
    let _worker0 = kubelet(&server, "worker0", "192.168.10.10", "10.244.1.0/24");
    let _worker1 = kubelet(&server, "worker1", "192.168.10.11", "10.244.2.0/24");
    apply(&server, WEB);

    // The readiness probe reaches nginx on its own node (no peer involved).
    assert!(
        eventually(WAIT, || ready(&server, "web-0")),
        "web-0 never Ready: {}",
        pod_json(&server, "web-0")["status"]
    );
    let web_ip = pod_json(&server, "web-0")["status"]["podIP"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(web_ip.starts_with("10.244.2."), "web-0's IP: {web_ip}");

    // A pod on worker0: the Service name (once its endpoints arrive), the pod IP, and an IP no
    // node holds.
    let script = format!(
        "until wget -qO- http://web >/tmp/svc 2>/dev/null; do sleep 1; done; cat /tmp/svc; \
         echo ---; wget -qO- http://{web_ip}; echo ---; wget -qO- http://10.9.9.9; \
         echo done; sleep 3600"
    );
    apply(
        &server,
        &format!(
            "apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  nodeName: worker0
  containers:
  - name: busybox
    image: busybox
    command: [sh, -c, '{script}']
"
        ),
    );
    let logs = || server.kubectl(&["logs", "client"]).stdout;
    assert!(
        eventually(WAIT, || logs().contains("done")),
        "client's logs: {}",
        logs()
    );
    let out = logs();
    let parts: Vec<&str> = out.split("---\n").collect();
    assert_eq!(parts.len(), 3, "{out}");
    assert!(parts[0].contains(WELCOME), "through the Service: {out}");
    assert!(parts[1].contains(WELCOME), "at the pod IP: {out}");
    assert!(
        parts[2].contains("wget: can't connect to remote host (10.9.9.9): Connection timed out\n"),
        "{out}"
    );
    let client_ip = pod_json(&server, "client")["status"]["podIP"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        client_ip.starts_with("10.244.1."),
        "client's IP: {client_ip}"
    );

    // nginx logged the request with the client's pod IP.
    let web_logs = server.kubectl(&["logs", "web-0"]).stdout;
    assert!(web_logs.contains(&client_ip), "web-0's logs: {web_logs}");

    // kubectl exec in the client pod.
    let exec = |cmd: &str| server.kubectl(&["exec", "client", "--", "sh", "-c", cmd]);
    let page = exec(&format!("wget -qO- http://{web_ip}"));
    assert!(page.stdout.contains(WELCOME), "{:?}", page.stderr);
    let refused = exec(&format!("wget -qO- http://{web_ip}:8080"));
    assert!(
        refused.stderr.contains(&format!(
            "wget: can't connect to remote host ({web_ip}): Connection refused"
        )),
        "{:?}",
        refused.stderr
    );
    let open = exec(&format!("nc -zv {web_ip} 80"));
    assert!(
        open.stderr
            .contains(&format!("{web_ip} ({web_ip}:80) open")),
        "{:?}",
        open.stderr
    );
    let timed_out = exec("wget -qO- http://10.9.9.9");
    assert!(
        timed_out
            .stderr
            .contains("wget: can't connect to remote host (10.9.9.9): Connection timed out"),
        "{:?}",
        timed_out.stderr
    );

    // A hostNetwork pod of worker1 answers at worker1's InternalIP.
    assert!(eventually(WAIT, || {
        exec("wget -qO- http://192.168.10.11")
            .stdout
            .contains(WELCOME)
    }));
}

//! Resource usage as a real cluster shows it: the kubelet's Summary API through the node proxy,
//! the metrics server behind the `v1beta1.metrics.k8s.io` APIService, and `kubectl top` on the
//! upstream docs' "Assign Memory Resources" and "Assign CPU Resources" pods: a container holding
//! 150 MiB shows about that much, one burning two cores under a one-core limit shows one core.

use std::time::Duration;

use serde_json::Value;
use tinykube_tests::{eventually, table_rows, ApiServer, Kubelet, MetricsServer};

const WAIT: Duration = Duration::from_secs(40);

/// An API server, one kubelet (`worker0`) and a metrics server scraping every second.
fn cluster() -> (ApiServer, Kubelet, MetricsServer) {
    let server = ApiServer::start().expect("api server starts");
    let kubelet = Kubelet::start(
        &server,
        &[
            "--hostname-override",
            "worker0",
            "--node-ip",
            "192.168.10.10",
            "--pod-cidr",
            "10.244.1.0/24",
        ],
    )
    .expect("kubelet starts");
    let metrics = MetricsServer::start(&server, &["--metric-resolution", "1s"])
        .expect("metrics server starts");
    (server, kubelet, metrics)
}

const MEMORY_DEMO: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: memory-demo
spec:
  nodeName: worker0
  containers:
  - name: memory-demo-ctr
    image: polinux/stress
    resources:
      requests:
        memory: "100Mi"
      limits:
        memory: "200Mi"
    command: ["stress"]
    args: ["--vm", "1", "--vm-bytes", "150M", "--vm-hang", "1"]
"#;

const CPU_DEMO: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: cpu-demo
spec:
  nodeName: worker0
  containers:
  - name: cpu-demo-ctr
    image: vish/stress
    resources:
      limits:
        cpu: "1"
      requests:
        cpu: "0.5"
    args:
    - -cpus
    - "2"
"#;

/// `kubectl top pod NAME`'s CPU in millicores and memory in MiB, once it answers.
fn top_pod(server: &ApiServer, name: &str) -> Option<(u64, u64)> {
    let out = server.kubectl(&["top", "pod", name, "--no-headers"]);
    let row = table_rows(&out.stdout).into_iter().next()?;
    let cpu = row.get(1)?.strip_suffix('m')?.parse().ok()?;
    let memory = row.get(2)?.strip_suffix("Mi")?.parse().ok()?;
    Some((cpu, memory))
}

#[test]
fn kubectl_top_shows_what_the_containers_use() {
    let (server, _kubelet, _metrics) = cluster();
    assert!(
        eventually(WAIT, || {
            let out = server.kubectl(&[
                "get",
                "apiservices",
                "v1beta1.metrics.k8s.io",
                "--no-headers",
            ]);
            let row = table_rows(&out.stdout)
                .into_iter()
                .next()
                .unwrap_or_default();
            row.get(1).map(String::as_str) == Some("kube-system/metrics-server")
                && row.get(2).map(String::as_str) == Some("True")
        }),
        "the APIService is available: {}",
        server.kubectl(&["get", "apiservices"]).stdout
    );

    // The node's figures: some CPU and memory, as percentages of its allocatable.
    let mut last = String::new();
    let node_ok = eventually(WAIT, || {
        last = server.kubectl(&["top", "nodes", "--no-headers"]).stdout;
        let rows = table_rows(&last);
        rows.len() == 1
            && rows[0][0] == "worker0"
            && rows[0][1].ends_with('m')
            && rows[0][2].ends_with('%')
            && rows[0][3].ends_with("Mi")
    });
    assert!(node_ok, "kubectl top nodes: {last}");

    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(MEMORY_DEMO))
        .ok();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(CPU_DEMO))
        .ok();
    let mut seen = None;
    let memory_ok = eventually(WAIT, || {
        seen = top_pod(&server, "memory-demo");
        // 150 MiB held by stress, plus the process's own few MiB; within the 200 MiB limit.
        seen.is_some_and(|(_, mib)| (150..170).contains(&mib))
    });
    assert!(memory_ok, "memory-demo: {seen:?}");
    let cpu_ok = eventually(WAIT, || {
        seen = top_pod(&server, "cpu-demo");
        // Two cores asked, one allowed: throttled to about the limit.
        seen.is_some_and(|(m, _)| (900..=1000).contains(&m))
    });
    assert!(cpu_ok, "cpu-demo: {seen:?}");

    // Every pod, with its containers, sorted by CPU: cpu-demo first.
    let out = server.kubectl(&[
        "top",
        "pods",
        "--containers",
        "--sort-by=cpu",
        "--no-headers",
    ]);
    let rows = table_rows(&out.stdout);
    assert_eq!(rows.len(), 2, "{}", out.stdout);
    assert_eq!(rows[0][..2], ["cpu-demo", "cpu-demo-ctr"], "{}", out.stdout);
    assert_eq!(
        rows[1][..2],
        ["memory-demo", "memory-demo-ctr"],
        "{}",
        out.stdout
    );

    // The metrics API as clients read it, and a pod without metrics.
    let raw = server
        .kubectl(&[
            "get",
            "--raw",
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/memory-demo",
        ])
        .stdout;
    let pm: Value = serde_json::from_str(&raw).expect("PodMetrics JSON");
    assert_eq!(pm["kind"], "PodMetrics");
    assert_eq!(pm["containers"][0]["name"], "memory-demo-ctr");
    assert!(
        pm["window"].as_str().is_some_and(|w| w.ends_with('s')),
        "{pm}"
    );
    let missing = server.kubectl(&["top", "pod", "no-such-pod"]);
    assert!(
        missing.stderr.contains("pods \"no-such-pod\" not found")
            || missing.stderr.contains("not found"),
        "{}",
        missing.stderr
    );
}

#[test]
fn the_kubelet_answers_through_the_node_proxy() {
    let (server, _kubelet, _metrics) = cluster();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(MEMORY_DEMO))
        .ok();
    let mut summary = Value::Null;
    let ok = eventually(WAIT, || {
        let out = server.kubectl(&["get", "--raw", "/api/v1/nodes/worker0/proxy/stats/summary"]);
        summary = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
        summary["pods"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["podRef"]["name"] == "memory-demo"))
    });
    assert!(ok, "summary: {summary}");
    assert_eq!(summary["node"]["nodeName"], "worker0");
    assert!(summary["node"]["cpu"]["usageCoreNanoSeconds"]
        .as_u64()
        .is_some());
    let resource = server
        .kubectl(&[
            "get",
            "--raw",
            "/api/v1/nodes/worker0/proxy/metrics/resource",
        ])
        .stdout;
    assert!(
        resource.contains("container_memory_working_set_bytes{container=\"memory-demo-ctr\",namespace=\"default\",pod=\"memory-demo\"}"),
        "{resource}"
    );
    let cadvisor = server
        .kubectl(&[
            "get",
            "--raw",
            "/api/v1/nodes/worker0/proxy/metrics/cadvisor",
        ])
        .stdout;
    assert!(
        cadvisor.contains("container_cpu_usage_seconds_total{"),
        "{cadvisor}"
    );
    let missing = server.kubectl(&["get", "--raw", "/api/v1/nodes/nope/proxy/stats/summary"]);
    assert!(
        missing.stderr.contains("NotFound") || missing.stderr.contains("not found"),
        "{}",
        missing.stderr
    );
}

#[test]
fn the_apiservice_turns_unavailable_when_the_metrics_server_stops() {
    let (server, _kubelet, metrics) = cluster();
    let available = |want: &str| {
        eventually(WAIT, || {
            let out = server.kubectl(&[
                "get",
                "apiservices",
                "v1beta1.metrics.k8s.io",
                "--no-headers",
            ]);
            table_rows(&out.stdout)
                .first()
                .and_then(|r| r.get(2))
                .is_some_and(|a| a.starts_with(want))
        })
    };
    assert!(available("True"));
    metrics.terminate();
    assert!(
        available("False"),
        "{}",
        server
            .kubectl(&["get", "apiservices", "v1beta1.metrics.k8s.io"])
            .stdout
    );
    let top = server.kubectl(&["top", "nodes"]);
    assert!(
        !top.stderr.is_empty(),
        "kubectl top fails without the backend"
    );
}

//! The endpoints over a kubelet of simulated nodes on a manual clock, with real containers
//! (stress, nginx) running: node selection by header, names and labels, counters that only
//! go up, and a memory hog past its limit OOM-killed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use tinykube_clock::Clock;

use crate::runner::clock_tests::{app, idle, kubelet_of, pod, terminated, until};
use crate::runner::PodHandle;
use crate::Kubelet;

fn clock() -> Clock {
    Clock::manual(std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000))
}

fn headers(node: Option<&str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    if let Some(n) = node {
        h.insert(super::NODE_HEADER, HeaderValue::from_str(n).unwrap());
    }
    h
}

async fn body(r: Response) -> (StatusCode, String) {
    let status = r.status();
    let bytes = axum::body::to_bytes(r.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn get(k: &Arc<Kubelet>, path: &str, node: Option<&str>) -> (StatusCode, String) {
    let h = headers(node);
    let r = match path {
        "/metrics/resource" => super::metrics_resource(State(k.clone()), h).await,
        "/metrics/cadvisor" => super::metrics_cadvisor(State(k.clone()), h).await,
        "/metrics" => super::metrics(State(k.clone()), h).await,
        _ => {
            let (_, query) = path.split_once('?').unwrap_or((path, ""));
            let q: HashMap<String, String> = form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect();
            super::stats_summary(State(k.clone()), h, Query(q)).await
        }
    };
    body(r).await
}

/// Run `spec` as pod `p` on the kubelet's first node until its container runs.
async fn run(k: &Arc<Kubelet>, spec: serde_json::Value) -> Arc<PodHandle> {
    let n = k.nodes[0].clone();
    let h = crate::runner::start(k, &n, pod(spec), "10.244.0.5", "192.168.0.10");
    until(&h, |r| app(r).is_running()).await;
    idle().await;
    h
}

/// The value of the sample of `name` whose labels contain `labels`, and its timestamp.
fn sample(text: &str, name: &str, labels: &str) -> Option<(f64, Option<u128>)> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?;
        let (lbl, values) = match rest.strip_prefix('{') {
            Some(r) => r.split_once("} ")?,
            None => ("", rest.strip_prefix(' ')?),
        };
        if !lbl.contains(labels) {
            return None;
        }
        let mut it = values.split(' ');
        let v = it.next()?.parse().ok()?;
        Some((v, it.next().and_then(|t| t.parse().ok())))
    })
}

fn stress(limit_cpu: &str) -> serde_json::Value {
    serde_json::json!({
        "containers": [{
            "name": "app", "image": "polinux/stress",
            "command": ["stress"], "args": ["--vm", "1", "--vm-bytes", "150M", "--vm-hang", "1", "--cpu", "2"],
            "resources": {"limits": {"cpu": limit_cpu, "memory": "200Mi"}, "requests": {"cpu": "500m"}},
        }],
    })
}

#[tokio::test(start_paused = true)]
async fn the_node_is_named_by_header_or_is_the_only_one() {
    let clock = clock();
    let one = kubelet_of(&clock, &["worker0"]);
    let many = kubelet_of(&clock, &["n-0", "n-1"]);
    let rows: &[(&Arc<Kubelet>, Option<&str>, StatusCode, &str)] = &[
        (&one, None, StatusCode::OK, "\"nodeName\": \"worker0\""),
        (
            &one,
            Some("worker0"),
            StatusCode::OK,
            "\"nodeName\": \"worker0\"",
        ),
        (
            &one,
            Some("worker9"),
            StatusCode::NOT_FOUND,
            "node \"worker9\" is not run by this kubelet",
        ),
        (
            &many,
            None,
            StatusCode::BAD_REQUEST,
            "name the node in the Tinykube-Node header",
        ),
        (&many, Some("n-1"), StatusCode::OK, "\"nodeName\": \"n-1\""),
    ];
    for (k, node, status, text) in rows {
        for path in [
            "/stats/summary",
            "/metrics/resource",
            "/metrics/cadvisor",
            "/metrics",
        ] {
            let (got, body) = get(k, path, *node).await;
            assert_eq!(got, *status, "{path} {node:?}: {body}");
            if path == "/stats/summary" || *status != StatusCode::OK {
                assert!(body.contains(text), "{path} {node:?}: {body}");
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_throttled_stress_pod_in_every_format() {
    let clock = clock();
    let k = kubelet_of(&clock, &["n-0", "n-1"]);
    let _h = run(&k, stress("1")).await;
    clock.advance(Duration::from_secs(30));
    let (status, text) = get(&k, "/metrics/resource", Some("n-0")).await;
    assert_eq!(status, StatusCode::OK);
    let ms = super::prometheus::millis(clock.now());
    let who = "container=\"app\",namespace=\"default\",pod=\"p\"";
    let (cpu, ts) = sample(&text, "container_cpu_usage_seconds_total", who).expect(&text);
    assert_eq!(ts, Some(ms));
    // Two cores asked, one allowed: throttled at 0.975 core for 30 s.
    assert!((cpu - 30.0 * super::meter::THROTTLED).abs() < 0.01, "{cpu}");
    let (mem, _) = sample(&text, "container_memory_working_set_bytes", who).unwrap();
    assert!((mem - 162_856_960.0).abs() < 200_000.0, "{mem}");
    for family in [
        "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds",
        "# TYPE node_cpu_usage_seconds_total counter",
        "pod_cpu_usage_seconds_total{namespace=\"default\",pod=\"p\"}",
        "pod_memory_working_set_bytes{namespace=\"default\",pod=\"p\"}",
        "container_start_time_seconds{container=\"app\",namespace=\"default\",pod=\"p\"} 1.8e+09\n",
        "resource_scrape_error 0\n",
    ] {
        assert!(text.contains(family), "{family}\n{text}");
    }
    let (node_cpu, _) = sample(&text, "node_cpu_usage_seconds_total", "").unwrap();
    assert!(node_cpu > cpu && node_cpu < 30.0 * 4.0, "{node_cpu}");

    // Counters only go up; the summary agrees with the text.
    clock.advance(Duration::from_secs(15));
    let (_, later) = get(&k, "/metrics/resource", Some("n-0")).await;
    let (cpu2, _) = sample(&later, "container_cpu_usage_seconds_total", who).unwrap();
    let (node2, _) = sample(&later, "node_cpu_usage_seconds_total", "").unwrap();
    assert!(cpu2 > cpu && node2 > node_cpu);
    let (_, summary) = get(&k, "/stats/summary", Some("n-0")).await;
    let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
    let c = &v["pods"][0]["containers"][0];
    assert_eq!(c["name"], "app");
    assert_eq!(v["pods"][0]["podRef"]["uid"], "uid-p");
    assert_eq!(c["cpu"]["usageNanoCores"].as_u64(), Some(975_000_000));
    assert_eq!(
        c["memory"]["availableBytes"].as_u64(),
        Some((200 << 20) - c["memory"]["workingSetBytes"].as_u64().unwrap())
    );
    assert_eq!(v["node"]["systemContainers"][1]["name"], "pods");
    assert_eq!(v["pods"][0]["process_stats"]["process_count"], 1);
    let (_, small) = get(&k, "/stats/summary?only_cpu_and_memory=true", Some("n-0")).await;
    assert!(!small.contains("process_stats"));

    let (_, cadvisor) = get(&k, "/metrics/cadvisor", Some("n-0")).await;
    for line in [
        "# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.",
        "container_spec_cpu_quota{container=\"app\",id=\"/kubepods/burstable/poduid-p/",
        "container_spec_cpu_period{container=\"app\"",
        ",image=\"docker.io/polinux/stress:latest\",name=\"",
        "container_spec_memory_limit_bytes{container=\"app\"",
        "container_cpu_usage_seconds_total{container=\"\",cpu=\"total\",id=\"/\",image=\"\",name=\"\",namespace=\"\",pod=\"\"}",
        "container_memory_working_set_bytes{container=\"\",id=\"/kubepods/burstable/poduid-p\",image=\"\",name=\"\",namespace=\"default\",pod=\"p\"}",
        "machine_cpu_cores{boot_id=",
    ] {
        assert!(cadvisor.contains(line), "{line}\n{cadvisor}");
    }
    let (throttled, _) = sample(
        &cadvisor,
        "container_cpu_cfs_throttled_periods_total",
        "container=\"app\"",
    )
    .unwrap();
    assert_eq!(throttled, 450.0);

    let (_, own) = get(&k, "/metrics", Some("n-0")).await;
    for line in [
        "kubelet_node_name{node=\"n-0\"} 1\n",
        "kubelet_running_containers{container_state=\"running\"} 1\n",
        "kubelet_running_pods 1\n",
        "kubelet_started_containers_total{container_type=\"container\"} 1\n",
        "kubelet_started_pods_total 1\n",
    ] {
        assert!(own.contains(line), "{line}\n{own}");
    }
    // The other node has none of it.
    let (_, other) = get(&k, "/metrics/resource", Some("n-1")).await;
    assert!(!other.contains("pod=\"p\""));
}

#[tokio::test(start_paused = true)]
async fn a_memory_hog_past_its_limit_is_oom_killed_and_its_counters_go() {
    let clock = clock();
    let k = kubelet_of(&clock, &["n-0", "n-1"]);
    let h = crate::runner::start(
        &k,
        &k.nodes[0].clone(),
        pod(serde_json::json!({
            "restartPolicy": "Never",
            "containers": [{
                "name": "app", "image": "polinux/stress", "command": ["stress"],
                "args": ["--vm", "1", "--vm-bytes", "250M", "--vm-hang", "1"],
                "resources": {"limits": {"memory": "100Mi"}},
            }],
        })),
        "10.244.0.5",
        "192.168.0.10",
    );
    until(&h, |r| terminated(r).is_some()).await;
    let exit = terminated(&h.run()).unwrap();
    assert_eq!((exit.exit_code, exit.reason.as_str()), (137, "OOMKilled"));
    idle().await;
    let (_, text) = get(&k, "/metrics/resource", Some("n-0")).await;
    assert!(!text.contains("container=\"app\""), "{text}");
}

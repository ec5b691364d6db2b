//! The static pod exercise of the course, verbatim: a manifest in the node's directory runs as
//! `NAME-NODE`, `kubectl delete pod` of its mirror brings it back, editing the manifest replaces
//! it, removing the file removes it. A broken manifest is reported and harms nobody; static pods
//! outlive an API server outage; `--manifest-url` works too.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tinykube_tests::{eventually, manifest, table_rows, ApiServer, Kubelet};

const WAIT: Duration = Duration::from_secs(20);

const STATIC_WEB: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: static-web\n  labels:\n    role: myrole\nspec:\n  containers:\n    - name: web\n      image: nginx\n      ports:\n        - name: web\n          containerPort: 80\n          protocol: TCP\n";

fn kubelet(server: &ApiServer, dir: &Path) -> Kubelet {
    let dir = dir.to_str().unwrap();
    Kubelet::start(
        server,
        &[
            "--hostname-override",
            "worker0",
            "--pod-manifest-path",
            dir,
            "--pod-cidr",
            "10.244.1.0/24",
        ],
    )
    .unwrap()
}

/// (STATUS, UID) of a pod, if it exists.
fn status_uid(server: &ApiServer, name: &str) -> Option<(String, String)> {
    let out = server.kubectl(&[
        "get",
        "pod",
        name,
        "-o",
        "jsonpath={.status.phase} {.metadata.uid}",
    ]);
    let mut parts = out.stdout.split_whitespace();
    match (out.success, parts.next(), parts.next()) {
        (true, Some(p), Some(u)) => Some((p.to_string(), u.to_string())),
        _ => None,
    }
}

fn pod_json(server: &ApiServer, name: &str) -> Value {
    serde_json::from_str(server.kubectl(&["get", "pod", name, "-o", "json"]).ok()).unwrap()
}

/// The pod as JSON, or Null while it does not exist (a mirror between two incarnations).
fn pod_json_opt(server: &ApiServer, name: &str) -> Value {
    let out = server.kubectl(&["get", "pod", name, "-o", "json"]);
    serde_json::from_str(&out.stdout).unwrap_or(Value::Null)
}

#[test]
fn static_pod_exercise_from_the_course() {
    let server = ApiServer::start().unwrap();
    let dir = server.scratch().join("manifests");
    std::fs::create_dir_all(&dir).unwrap();
    let _kubelet = kubelet(&server, &dir);
    manifest(&dir, "static-web.yaml", STATIC_WEB);

    assert!(eventually(WAIT, || status_uid(
        &server,
        "static-web-worker0"
    )
    .is_some_and(|(phase, _)| phase == "Running")));
    let wide = server
        .kubectl(&["get", "pods", "-o", "wide"])
        .ok()
        .to_string();
    let row = table_rows(&wide)
        .into_iter()
        .find(|r| r[0] == "static-web-worker0")
        .unwrap();
    assert_eq!(
        (row[1].as_str(), row[2].as_str(), row[6].as_str()),
        ("1/1", "Running", "worker0")
    );
    assert!(row[5].starts_with("10.244.1."), "{row:?}");

    let mirror = pod_json(&server, "static-web-worker0");
    let a = &mirror["metadata"]["annotations"];
    assert_eq!(a["kubernetes.io/config.source"], "file");
    assert_eq!(
        a["kubernetes.io/config.mirror"],
        a["kubernetes.io/config.hash"]
    );
    assert!(a["kubernetes.io/config.seen"].is_string());
    let owner = &mirror["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["name"].as_str()),
        (Some("Node"), Some("worker0"))
    );
    assert_eq!(owner["controller"], true);
    assert_eq!(mirror["metadata"]["labels"]["role"], "myrole");

    // kubectl delete pod: the kubelet brings it back.
    let (_, first_uid) = status_uid(&server, "static-web-worker0").unwrap();
    server
        .kubectl(&["delete", "pod", "static-web-worker0"])
        .ok();
    assert!(eventually(WAIT, || status_uid(
        &server,
        "static-web-worker0"
    )
    .is_some_and(|(phase, uid)| phase == "Running" && uid != first_uid)));

    // Editing the manifest replaces the pod.
    let hash = |s: &ApiServer| {
        pod_json(s, "static-web-worker0")["metadata"]["annotations"]["kubernetes.io/config.hash"]
            .clone()
    };
    let before = hash(&server);
    manifest(
        &dir,
        "static-web.yaml",
        &STATIC_WEB.replace("image: nginx", "image: nginx:1.25"),
    );
    assert!(eventually(WAIT, || {
        let p = pod_json_opt(&server, "static-web-worker0");
        p["metadata"]["annotations"]["kubernetes.io/config.hash"] != before
            && p["spec"]["containers"][0]["image"] == "nginx:1.25"
            && p["status"]["phase"] == "Running"
    }));

    // Removing the file removes the pod.
    std::fs::remove_file(dir.join("static-web.yaml")).unwrap();
    assert!(eventually(WAIT, || status_uid(
        &server,
        "static-web-worker0"
    )
    .is_none()));
}

#[test]
fn a_broken_manifest_is_reported_and_harms_nobody() {
    let server = ApiServer::start().unwrap();
    let dir = server.scratch().join("manifests");
    std::fs::create_dir_all(&dir).unwrap();
    manifest(
        &dir,
        "broken.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: [oops\n",
    );
    manifest(
        &dir,
        "nameless.json",
        r#"{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","image":"i"}]}}"#,
    );
    manifest(
        &dir,
        ".hidden.yaml",
        &STATIC_WEB.replace("static-web", "hidden"),
    );
    manifest(
        &dir,
        "good.json",
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"good","namespace":"kube-system"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}"#,
    );
    let kubelet = kubelet(&server, &dir);

    assert!(eventually(WAIT, || server
        .kubectl(&[
            "get",
            "pod",
            "-n",
            "kube-system",
            "good-worker0",
            "-o",
            "jsonpath={.status.phase}"
        ])
        .stdout
        == "Running"));
    let events = || {
        server
            .kubectl(&[
                "get",
                "events",
                "--field-selector",
                "involvedObject.kind=Node",
            ])
            .stdout
    };
    assert!(
        eventually(WAIT, || events().contains("broken.yaml")
            && events().contains("nameless.json")),
        "{}",
        events()
    );
    assert!(events().contains("FailedToLoadStaticPod"));
    let all = server.kubectl(&["get", "pods", "-A"]).ok().to_string();
    assert!(!all.contains("hidden"), "dot-files are ignored: {all}");
    assert!(reqwest::blocking::get(format!("{}/healthz", kubelet.url))
        .unwrap()
        .status()
        .is_success());

    // Fixing the file brings its pod up.
    manifest(&dir, "broken.yaml", STATIC_WEB);
    assert!(eventually(WAIT, || status_uid(
        &server,
        "static-web-worker0"
    )
    .is_some_and(|(p, _)| p == "Running")));
}

#[test]
fn static_pods_outlive_an_api_server_outage() {
    let mut server = ApiServer::start().unwrap();
    let dir = server.scratch().join("manifests");
    std::fs::create_dir_all(&dir).unwrap();
    manifest(&dir, "static-web.yaml", STATIC_WEB);
    let kubelet = kubelet(&server, &dir);
    assert!(eventually(WAIT, || status_uid(
        &server,
        "static-web-worker0"
    )
    .is_some()));

    server.kill9();
    // The kubelet still runs it, and still reads its directory.
    manifest(
        &dir,
        "second.yaml",
        &STATIC_WEB.replace("static-web", "second"),
    );
    let names = || -> Vec<String> {
        kubelet
            .pods()
            .map(|l| {
                l["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p["metadata"]["name"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(eventually(WAIT, || names().len() == 2), "{:?}", names());
    let listed = kubelet.pods().unwrap();
    assert!(listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["status"]["phase"] == "Running"));

    server.restart().unwrap();
    // The mirror of the pod started during the outage appears once the server is back.
    assert!(eventually(WAIT, || status_uid(&server, "second-worker0")
        .is_some_and(|(p, _)| p == "Running")));
    let (_, uid) = status_uid(&server, "static-web-worker0").unwrap();
    server
        .kubectl(&["delete", "pod", "static-web-worker0"])
        .ok();
    assert!(eventually(WAIT, || status_uid(
        &server,
        "static-web-worker0"
    )
    .is_some_and(|(_, u)| u != uid)));
}

/// Serve `body` over HTTP on a free port, forever (the thread ends with the test process).
fn serve(body: String) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/static.yaml", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 2048];
            let _ = conn.read(&mut buf);
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(resp.as_bytes());
        }
    });
    url
}

#[test]
fn manifest_url_pods_run_with_source_http() {
    let server = ApiServer::start().unwrap();
    let url = serve(STATIC_WEB.replace("static-web", "from-url"));
    let _kubelet = Kubelet::start(
        &server,
        &[
            "--hostname-override",
            "worker0",
            "--manifest-url",
            &url,
            "--http-check-frequency",
            "1s",
        ],
    )
    .unwrap();
    assert!(eventually(WAIT, || status_uid(&server, "from-url-worker0")
        .is_some_and(|(p, _)| p == "Running")));
    let p = pod_json(&server, "from-url-worker0");
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/config.source"],
        "http"
    );
}

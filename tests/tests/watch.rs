//! Watches: `kubectl get pods -w` streams changes made from another shell, and a watch resumed
//! from an old resourceVersion sees every later event exactly once and in order.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use tinykube_tests::ApiServer;

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "w"}},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

#[test]
fn kubectl_get_pods_watch_streams_changes() {
    let server = ApiServer::start().unwrap();
    let first = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: first\nspec:\n  containers:\n  - name: c\n    image: nginx\n";
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(first))
        .ok();
    let mut child = Command::new("kubectl")
        .args(["get", "pods", "-w"])
        .env("KUBECONFIG", server.kubeconfig())
        .env("KUBECACHEDIR", server.scratch().join("watch-cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl");
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Once kubectl has printed the listed pod, it watches from the list's resourceVersion:
    // nothing changed after this point can be missed.
    let header = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("kubectl printed the table");
    assert!(header.starts_with("NAME"), "{header}");
    let row = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("kubectl listed the first pod");
    assert!(row.starts_with("first"), "{row}");
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: watched\nspec:\n  containers:\n  - name: c\n    image: nginx\n";
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(yaml))
        .ok();
    server
        .kubectl(&["label", "pod", "watched", "stage=labelled"])
        .ok();
    server.kubectl(&["delete", "pod", "watched"]).ok();

    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline
        && seen
            .iter()
            .filter(|l: &&String| l.starts_with("watched"))
            .count()
            < 3
    {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            seen.push(line);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let rows: Vec<&String> = seen.iter().filter(|l| l.starts_with("watched")).collect();
    assert!(rows.len() >= 3, "kubectl -w printed {seen:?}");
    assert!(rows[0].contains("Pending"), "{seen:?}");
}

#[test]
fn resumed_watch_sees_every_event_once_in_order() {
    let server = ApiServer::start().unwrap();
    let http = server.http();
    let pods = format!("{}/api/v1/namespaces/default/pods", server.url);
    let first: Value = http
        .post(&pods)
        .json(&pod("p0"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let start_rv = first["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    // Changes after start_rv: creates, a label change, deletes.
    let mut expected = Vec::new();
    for i in 1..=5 {
        let created: Value = http
            .post(&pods)
            .json(&pod(&format!("p{i}")))
            .send()
            .unwrap()
            .json()
            .unwrap();
        expected.push((
            "ADDED".to_string(),
            created["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_string(),
        ));
    }
    let patched: Value = http
        .patch(format!("{pods}/p1"))
        .header("Content-Type", "application/merge-patch+json")
        .body(r#"{"metadata":{"labels":{"x":"y"}}}"#)
        .send()
        .unwrap()
        .json()
        .unwrap();
    expected.push((
        "MODIFIED".into(),
        patched["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string(),
    ));
    let deleted: Value = http
        .delete(format!("{pods}/p2"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert!(deleted["metadata"]["name"] == "p2");

    let events = server.watch_events(&format!(
        "/api/v1/namespaces/default/pods?watch=true&resourceVersion={start_rv}&timeoutSeconds=2"
    ));
    let got: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["object"]["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(got.len(), 7, "{got:?}");
    assert_eq!(got[..6], expected[..]);
    assert_eq!(got[6].0, "DELETED");
    let revisions: Vec<u64> = got.iter().map(|(_, rv)| rv.parse().unwrap()).collect();
    assert!(
        revisions.windows(2).all(|w| w[0] < w[1]),
        "in order: {revisions:?}"
    );
}

#[test]
fn label_selected_watch_sees_objects_enter_and_leave() {
    let server = ApiServer::start().unwrap();
    let http = server.http();
    let pods = format!("{}/api/v1/namespaces/default/pods", server.url);
    let first: Value = http
        .post(&pods)
        .json(&pod("a"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let rv = first["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let label = |value: &str| {
        http.patch(format!("{pods}/a"))
            .header("Content-Type", "application/merge-patch+json")
            .body(format!(
                r#"{{"metadata":{{"labels":{{"tier":"{value}"}}}}}}"#
            ))
            .send()
            .unwrap();
    };
    label("front");
    label("back");
    let types: Vec<String> = server
        .watch_events(&format!(
            "/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}&labelSelector=tier%3Dfront&timeoutSeconds=1"
        ))
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(types, ["ADDED", "DELETED"]);
}

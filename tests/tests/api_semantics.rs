//! API semantics a controller author relies on: paging, field selectors, generateName, the
//! spec/status split and generation, binding, eviction against a PodDisruptionBudget, scale,
//! and 410 for a watch from a revision the server no longer has.

use serde_json::{json, Value};
use tinykube_tests::ApiServer;

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "demo"}},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

struct Api<'a> {
    server: &'a ApiServer,
    http: reqwest::blocking::Client,
}

impl Api<'_> {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url)
    }
    fn get(&self, path: &str) -> (u16, Value) {
        let r = self.http.get(self.url(path)).send().unwrap();
        (r.status().as_u16(), r.json().unwrap_or(Value::Null))
    }
    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self.http.post(self.url(path)).json(body).send().unwrap();
        (r.status().as_u16(), r.json().unwrap_or(Value::Null))
    }
    fn put(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self.http.put(self.url(path)).json(body).send().unwrap();
        (r.status().as_u16(), r.json().unwrap_or(Value::Null))
    }
    fn merge(&self, path: &str, patch: &str) -> (u16, Value) {
        let r = self
            .http
            .patch(self.url(path))
            .header("Content-Type", "application/merge-patch+json")
            .body(patch.to_string())
            .send()
            .unwrap();
        (r.status().as_u16(), r.json().unwrap_or(Value::Null))
    }
}

const PODS: &str = "/api/v1/namespaces/default/pods";

#[test]
fn paging_field_selectors_and_generate_name() {
    let server = ApiServer::start().unwrap();
    let api = Api {
        server: &server,
        http: server.http(),
    };
    for i in 0..5 {
        assert_eq!(api.post(PODS, &pod(&format!("p{i}"))).0, 201);
    }
    let mut generated = pod("");
    generated["metadata"] = json!({"generateName": "web-"});
    let (code, made) = api.post(PODS, &generated);
    assert_eq!(code, 201);
    let name = made["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");

    let (_, page) = api.get(&format!("{PODS}?limit=2"));
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert_eq!(page["metadata"]["remainingItemCount"], 4);
    let token = page["metadata"]["continue"].as_str().unwrap();
    let (_, next) = api.get(&format!("{PODS}?limit=10&continue={token}"));
    assert_eq!(next["items"].as_array().unwrap().len(), 4);
    assert!(next["metadata"].get("continue").is_none());
    // kubectl pages with --chunk-size and sees everything.
    let out = server.kubectl(&["get", "pods", "--chunk-size=2", "-o", "name"]);
    assert_eq!(out.ok().lines().count(), 6);

    let bind = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p1"}, "target": {"kind": "Node", "name": "worker1"}});
    assert_eq!(api.post(&format!("{PODS}/p1/binding"), &bind).0, 201);
    let (code, again) = api.post(&format!("{PODS}/p1/binding"), &bind);
    assert_eq!(code, 409, "{again}");
    let (_, bound) = api.get(&format!("{PODS}?fieldSelector=spec.nodeName%3Dworker1"));
    let names: Vec<&str> = bound["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["p1"]);
    let (_, p1) = api.get(&format!("{PODS}/p1"));
    assert_eq!(p1["status"]["conditions"][0]["type"], "PodScheduled");
    let (_, unbound) = api.get(&format!(
        "{PODS}?fieldSelector=spec.nodeName%3D,status.phase%3DPending"
    ));
    assert_eq!(unbound["items"].as_array().unwrap().len(), 5);
    let wide = server.kubectl(&[
        "get",
        "pods",
        "--field-selector",
        "spec.nodeName=worker1",
        "-o",
        "wide",
    ]);
    assert!(wide.ok().contains("worker1"), "{wide:?}");
}

#[test]
fn status_is_written_only_through_its_subresource_and_generation_tracks_spec() {
    let server = ApiServer::start().unwrap();
    let api = Api {
        server: &server,
        http: server.http(),
    };
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        "status": {"replicas": 99}});
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let (code, created) = api.post(path, &deploy);
    assert_eq!(code, 201);
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(
        created["status"].get("replicas").is_none(),
        "status is not set on create"
    );

    let (_, labelled) = api.merge(
        &format!("{path}/web"),
        r#"{"metadata":{"labels":{"x":"y"}},"status":{"replicas":5}}"#,
    );
    assert_eq!(
        labelled["metadata"]["generation"], 1,
        "metadata changes keep the generation"
    );
    assert!(
        labelled["status"].get("replicas").is_none(),
        "the main resource ignores status"
    );

    let (_, scaled) = api.merge(
        &format!("{path}/web/status"),
        r#"{"spec":{"replicas":7},"status":{"replicas":3}}"#,
    );
    assert_eq!(scaled["status"]["replicas"], 3);
    assert_eq!(
        scaled["spec"]["replicas"], 1,
        "the status subresource ignores spec"
    );

    let (_, bumped) = api.merge(&format!("{path}/web"), r#"{"spec":{"replicas":2}}"#);
    assert_eq!(bumped["metadata"]["generation"], 2);

    assert_eq!(
        server
            .kubectl(&["scale", "deploy", "web", "--replicas=4"])
            .ok(),
        "deployment.apps/web scaled\n"
    );
    let (_, scale) = api.get(&format!("{path}/web/scale"));
    assert_eq!(scale["spec"]["replicas"], 4);
    assert_eq!(scale["status"]["selector"], "app=web");

    // An unchanged update is a no-op: same resourceVersion.
    let (_, current) = api.get(&format!("{path}/web"));
    let (code, same) = api.put(&format!("{path}/web"), &current);
    assert_eq!(code, 200);
    assert_eq!(
        same["metadata"]["resourceVersion"],
        current["metadata"]["resourceVersion"]
    );
}

#[test]
fn eviction_honours_pod_disruption_budgets() {
    let server = ApiServer::start().unwrap();
    let api = Api {
        server: &server,
        http: server.http(),
    };
    let mut running = pod("guarded");
    running["spec"]["nodeName"] = "worker0".into();
    api.post(PODS, &running);
    // Budgets guard running pods (a pending one is evicted at once, as upstream).
    api.merge(
        &format!("{PODS}/guarded/status"),
        r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#,
    );
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "keep"},
                     "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "demo"}}}});
    let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    assert_eq!(api.post(pdbs, &pdb).0, 201);
    // The disruption controller has not computed the budget: nothing may be disrupted.
    api.merge(&format!("{pdbs}/keep/status"), r#"{"status":{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}}"#);
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "guarded", "namespace": "default"}});
    let (code, refused) = api.post(&format!("{PODS}/guarded/eviction"), &eviction);
    assert_eq!(code, 429, "{refused}");
    assert_eq!(
        refused["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        refused["details"]["causes"][0]["message"],
        "The disruption budget keep needs 1 healthy pods and has 1 currently"
    );

    api.merge(
        &format!("{pdbs}/keep/status"),
        r#"{"status":{"disruptionsAllowed":1,"currentHealthy":2}}"#,
    );
    let (code, ok) = api.post(&format!("{PODS}/guarded/eviction"), &eviction);
    assert_eq!(code, 201, "{ok}");
    let (_, evicted) = api.get(&format!("{PODS}/guarded"));
    assert!(
        evicted["metadata"]["deletionTimestamp"].is_string(),
        "a bound pod is deleted gracefully"
    );
    let (_, budget) = api.get(&format!("{pdbs}/keep"));
    assert_eq!(budget["status"]["disruptionsAllowed"], 0);
    assert!(budget["status"]["disruptedPods"]["guarded"].is_string());
}

#[test]
fn watches_from_forgotten_revisions_get_410_and_initial_events_end_with_a_bookmark() {
    let mut server = ApiServer::start().unwrap();
    let api = Api {
        server: &server,
        http: server.http(),
    };
    api.post(PODS, &pod("a"));
    let (_, second) = api.post(PODS, &pod("b"));
    // A revision before the last write: after a restart the server no longer has the history
    // from there (a client at the latest revision would simply go on watching).
    let old = (second["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse::<u64>()
        .unwrap()
        - 1)
    .to_string();
    server.restart().unwrap();
    let events = server.watch_events(&format!(
        "{PODS}?watch=1&resourceVersion={old}&timeoutSeconds=1"
    ));
    if server.etcd.is_some() {
        // On etcd the history is etcd's: a restarted API server serves it until etcd compacts
        // it (`store/tests/etcd.rs` checks the 410 after compaction).
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["ADDED"]);
        assert_eq!(events[0]["object"]["metadata"]["name"], "b");
    } else {
        assert_eq!(events.len(), 1);
        assert_eq!(events[0]["type"], "ERROR");
        assert_eq!(events[0]["object"]["code"], 410);
        assert_eq!(events[0]["object"]["reason"], "Expired");
        assert!(events[0]["object"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("too old resource version: {old} (")));
    }

    let events = server.watch_events(&format!(
        "{PODS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
    ));
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "ADDED", "BOOKMARK"]);
    assert_eq!(events[0]["object"]["metadata"]["name"], "a");
    assert_eq!(
        events[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
}

#[test]
fn on_etcd_a_watch_from_a_compacted_revision_gets_410() {
    let server = ApiServer::start_on_etcd(&["--etcd-compaction-interval", "1s"]).unwrap();
    let api = Api {
        server: &server,
        http: server.http(),
    };
    let (_, first) = api.post(PODS, &pod("a"));
    let rv = first["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    // Served from history while etcd has it ...
    let events = server.watch_events(&format!(
        "{PODS}?watch=1&resourceVersion={rv}&timeoutSeconds=1"
    ));
    assert!(events.is_empty(), "nothing after {rv} yet: {events:?}");
    // ... until the compactor (every second, to the revision of one interval before) passes it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut n = 0;
    loop {
        n += 1;
        api.post(PODS, &pod(&format!("p{n}")));
        let events = server.watch_events(&format!(
            "{PODS}?watch=1&resourceVersion={rv}&timeoutSeconds=1"
        ));
        if events.first().is_some_and(|e| e["type"] == "ERROR") {
            assert_eq!(events[0]["object"]["code"], 410);
            assert_eq!(events[0]["object"]["reason"], "Expired");
            assert!(events[0]["object"]["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("too old resource version: {rv} (")));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still served after 20 s ({} events)",
            events.len()
        );
    }
}

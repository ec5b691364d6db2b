//! Requests a real cluster refuses are refused here too, with upstream's status code and words,
//! and nothing is stored: bodies that do not decode, patches that rename or move an object,
//! overlong field managers, invalid workloads and statuses, scales, budgets, leases and events.

use serde_json::{json, Value};
use tinykube_tests::ApiServer;

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

struct Http<'a> {
    server: &'a ApiServer,
    client: reqwest::blocking::Client,
}

impl<'a> Http<'a> {
    fn new(server: &'a ApiServer) -> Self {
        Http {
            server,
            client: server.http(),
        }
    }

    /// Send `body` with `content_type` and return the status code and the answer.
    fn send(&self, method: &str, path: &str, content_type: &str, body: String) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let resp = self
            .client
            .request(method, format!("{}{path}", self.server.url))
            .header("Content-Type", content_type)
            .body(body)
            .send()
            .unwrap();
        (resp.status().as_u16(), resp.json().unwrap_or(Value::Null))
    }

    fn json(&self, method: &str, path: &str, body: &Value) -> (u16, Value) {
        self.send(method, path, "application/json", body.to_string())
    }

    fn merge(&self, path: &str, patch: &Value) -> (u16, Value) {
        self.send(
            "PATCH",
            path,
            "application/merge-patch+json",
            patch.to_string(),
        )
    }

    fn get(&self, path: &str) -> Value {
        self.send("GET", path, "application/json", String::new()).1
    }

    fn count(&self, path: &str) -> usize {
        self.get(path)["items"].as_array().map_or(0, Vec::len)
    }
}

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
           "spec": {"selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

/// `code` and `message`, or the whole answer when they differ.
#[track_caller]
fn refused(answer: (u16, Value), code: u16, message: &str) {
    assert_eq!(
        (answer.0, answer.1["message"].as_str()),
        (code, Some(message)),
        "{}",
        answer.1
    );
}

#[test]
fn bodies_that_do_not_decode_are_400s_in_gos_words() {
    let server = ApiServer::start().unwrap();
    let http = Http::new(&server);
    let body = r#"{"apiVersion":"apps/v1","kind":5,"metadata":{"name":"web"}}"#;
    refused(
        http.send("POST", DEPLOYMENTS, "application/json", body.into()),
        400,
        r#"the object provided is unrecognized (must be of type Deployment): couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string ({"apiVersion":"apps/v1","kind" ...)"#,
    );
    let body = r#"{"apiVersion":true,"kind":"Deployment"}"#;
    refused(
        http.send("POST", DEPLOYMENTS, "application/json", body.into()),
        400,
        r#"the object provided is unrecognized (must be of type Deployment): couldn't get version/kind; json parse error: json: cannot unmarshal bool into Go struct field .apiVersion of type string ({"apiVersion":true,"kind":"Dep ...)"#,
    );
    assert_eq!(http.count(DEPLOYMENTS), 0);

    // A Scale whose replicas are no int32.
    assert_eq!(http.json("POST", DEPLOYMENTS, &deployment("web")).0, 201);
    let scale = format!("{DEPLOYMENTS}/web/scale");
    let body = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                      "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 1.5}});
    refused(
        http.json("PUT", &scale, &body),
        400,
        "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal number 1.5 into Go struct field ScaleSpec.spec.replicas of type int32",
    );
    let (code, answer) = http.merge(&scale, &json!({"spec": {"replicas": 1.5}}));
    assert_eq!(code, 422, "{answer}");
    assert_eq!(answer["details"]["causes"][0]["field"], "patch");
    refused(
        http.merge(&scale, &json!({"spec": {"replicas": -1}})),
        422,
        "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
    );
    let mut renamed = body.clone();
    renamed["metadata"]["name"] = "other".into();
    renamed["spec"]["replicas"] = 2.into();
    refused(
        http.json("PUT", &scale, &renamed),
        400,
        "the name of the object (other) does not match the name on the URL (web)",
    );
    assert_eq!(http.get(&scale)["spec"]["replicas"], 1, "nothing changed");
}

#[test]
fn patches_may_not_rename_move_or_unname_an_object() {
    let server = ApiServer::start().unwrap();
    let http = Http::new(&server);
    let web = format!("{DEPLOYMENTS}/web");
    assert_eq!(http.json("POST", DEPLOYMENTS, &deployment("web")).0, 201);
    let before = http.get(&web);

    let out = server.kubectl(&[
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        r#"{"metadata":{"name":"other"}}"#,
    ]);
    assert_eq!(
        out.fails(),
        "Error from server (BadRequest): the name of the object (other) does not match the name on the URL (web)\n"
    );
    refused(
        http.merge(&web, &json!({"metadata": {"namespace": "kube-system"}})),
        400,
        "the namespace of the provided object does not match the namespace sent on the request",
    );
    let unnamed =
        "the name of the object (web based on URL) was undeterminable: name must be provided";
    refused(http.merge(&web, &json!({"metadata": null})), 400, unnamed);
    refused(
        http.send(
            "PATCH",
            &web,
            "application/json-patch+json",
            r#"[{"op":"remove","path":"/metadata/name"}]"#.into(),
        ),
        400,
        unnamed,
    );
    refused(
        http.merge(
            &format!("{web}/status"),
            &json!({"metadata": {"name": "other"}}),
        ),
        400,
        "the name of the object (other) does not match the name on the URL (web)",
    );
    let mut nameless = before.clone();
    nameless["metadata"].as_object_mut().unwrap().remove("name");
    refused(http.json("PUT", &web, &nameless), 400, unnamed);

    let after = http.get(&web);
    assert_eq!(
        after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
        "nothing was written"
    );
    assert_eq!(http.count(DEPLOYMENTS), 1);
}

#[test]
fn field_managers_are_at_most_128_bytes() {
    let server = ApiServer::start().unwrap();
    let http = Http::new(&server);
    let long = "m".repeat(129);
    let out = server.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        &format!("--field-manager={long}"),
    ]);
    assert_eq!(
        out.fails(),
        "error: failed to create deployment: CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes\n"
    );
    assert_eq!(http.count(DEPLOYMENTS), 0);

    let ok = "m".repeat(128);
    let (code, created) = http.json(
        "POST",
        &format!("{DEPLOYMENTS}?fieldManager={ok}"),
        &deployment("web"),
    );
    assert_eq!(code, 201, "{created}");
    let web = format!("{DEPLOYMENTS}/web");
    let too_long = |kind: &str| {
        format!("{kind}.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes")
    };
    refused(
        http.json("PUT", &format!("{web}?fieldManager={long}"), &created),
        422,
        &too_long("UpdateOptions"),
    );
    refused(
        http.merge(
            &format!("{web}?fieldManager={long}"),
            &json!({"metadata": {"labels": {"x": "y"}}}),
        ),
        422,
        &too_long("PatchOptions"),
    );
    let (code, answer) = http.send(
        "PATCH",
        &format!("{web}?fieldManager={long}"),
        "application/apply-patch+yaml",
        deployment("web").to_string(),
    );
    assert_eq!(
        (code, answer["details"]["kind"].as_str()),
        (422, Some("PatchOptions"))
    );
    assert_eq!(answer["message"], too_long("PatchOptions"));
    let after = http.get(&web);
    assert_eq!(
        after["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
}

#[test]
fn invalid_workloads_and_statuses_are_refused() {
    let server = ApiServer::start().unwrap();
    let http = Http::new(&server);
    let manifest = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n        resources:\n          limits:\n            memory: \"-5Gi\"\n";
    let out = server.kubectl_stdin(&["create", "-f", "-"], Some(manifest));
    assert_eq!(
        out.fails(),
        "The Deployment \"web\" is invalid: spec.template.spec.containers[0].resources.limits[memory]: Invalid value: \"-5Gi\": must be greater than or equal to 0\n"
    );
    let mut negative = deployment("web");
    negative["spec"]["template"]["spec"]["containers"][0]["resources"] =
        json!({"limits": {"memory": "-5Gi"}});
    refused(
        http.json("POST", DEPLOYMENTS, &negative),
        422,
        "Deployment.apps \"web\" is invalid: spec.template.spec.containers[0].resources.limits[memory]: Invalid value: \"-5Gi\": must be greater than or equal to 0",
    );
    let mut stuck = deployment("web");
    stuck["spec"]["strategy"] = json!({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}});
    let (code, answer) = http.json("POST", DEPLOYMENTS, &stuck);
    assert_eq!(code, 422);
    assert_eq!(
        answer["details"]["causes"][0]["message"],
        "Invalid value: 0: may not be 0 when `maxSurge` is 0"
    );
    let mut astray = deployment("web");
    astray["spec"]["template"]["metadata"]["labels"] = json!({"app": "api"});
    let (code, answer) = http.json("POST", DEPLOYMENTS, &astray);
    assert_eq!(
        (code, answer["details"]["causes"][0]["field"].as_str()),
        (422, Some("spec.template.metadata.labels"))
    );
    assert_eq!(http.count(DEPLOYMENTS), 0, "nothing was stored");

    // A status no controller could have observed.
    assert_eq!(http.json("POST", DEPLOYMENTS, &deployment("web")).0, 201);
    let out = server.kubectl(&[
        "patch",
        "deployment",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":-1}}"#,
    ]);
    assert_eq!(
        out.fails(),
        "The Deployment \"web\" is invalid: \n\
         * status.replicas: Invalid value: -1: must be greater than or equal to 0\n\
         * status.updatedReplicas: Invalid value: 0: cannot be greater than status.replicas\n\
         * status.readyReplicas: Invalid value: 0: cannot be greater than status.replicas\n\
         * status.availableReplicas: Invalid value: 0: cannot be greater than status.replicas\n"
    );
    let status = format!("{DEPLOYMENTS}/web/status");
    refused(
        http.merge(&status, &json!({"status": {"replicas": 2, "readyReplicas": 1, "availableReplicas": 2}})),
        422,
        "Deployment.apps \"web\" is invalid: status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas",
    );
    assert_eq!(
        http.get(&status)["status"],
        json!({}),
        "nothing was written"
    );
    let (code, _) = http.merge(
        &status,
        &json!({"status": {"replicas": 2, "readyReplicas": 1}}),
    );
    assert_eq!(code, 200, "a possible status is taken");

    // The selector never changes.
    let mut moved = deployment("web");
    moved["spec"]["selector"]["matchLabels"] = json!({"app": "web", "tier": "x"});
    moved["spec"]["template"]["metadata"]["labels"] = json!({"app": "web", "tier": "x"});
    let (code, answer) = http.send(
        "PATCH",
        &format!("{DEPLOYMENTS}/web?fieldManager=test&force=true"),
        "application/apply-patch+yaml",
        moved.to_string(),
    );
    assert_eq!(
        (code, answer["details"]["causes"][0]["message"].as_str()),
        (422, Some("Invalid value: {\"matchLabels\":{\"app\":\"web\",\"tier\":\"x\"}}: field is immutable")),
        "{answer}"
    );
}

#[test]
fn budgets_leases_and_events_are_checked() {
    let server = ApiServer::start().unwrap();
    let http = Http::new(&server);
    let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let budget = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web\nspec:\n  maxUnavailable: \"200%\"\n  selector:\n    matchLabels: {app: web}\n";
    let out = server.kubectl_stdin(&["create", "-f", "-"], Some(budget));
    // Upstream passes the IntOrString itself, which prints through its String(): bare.
    assert_eq!(
        out.fails(),
        "The PodDisruptionBudget \"web\" is invalid: spec.maxUnavailable: Invalid value: 200%: must not be greater than 100%\n"
    );
    let both = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                      "spec": {"minAvailable": 1, "maxUnavailable": 1}});
    let (code, answer) = http.json("POST", pdbs, &both);
    assert_eq!(code, 422, "{answer}");
    assert_eq!(answer["details"]["causes"][0]["field"], "spec");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .ends_with(": minAvailable and maxUnavailable cannot be both set"),
        "{answer}"
    );
    assert_eq!(http.count(pdbs), 0);

    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
                       "spec": {"holderIdentity": "me", "leaseDurationSeconds": 0}});
    refused(
        http.json("POST", leases, &lease),
        422,
        "Lease.coordination.k8s.io \"l\" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
    );
    assert_eq!(http.count(leases), 0);

    // Events: the legacy rules for every API, the strict ones for events.k8s.io.
    let core = "/api/v1/namespaces/default/events";
    let astray = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "kube-system"},
        "reason": "Started", "message": "m", "type": "Normal"});
    refused(
        http.json("POST", core, &astray),
        422,
        "Event \"e\" is invalid: involvedObject.namespace: Invalid value: \"kube-system\": does not match event.namespace",
    );
    let new_api = "/apis/events.k8s.io/v1/namespaces/default/events";
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "p.17a3f"},
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Started", "note": "started", "type": "Info", "action": "Starting",
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "example.com/ctl", "reportingInstance": "ctl-1"});
    refused(
        http.json("POST", new_api, &event),
        422,
        "Event \"p.17a3f\" is invalid: type: Invalid value: \"\": has invalid value: Info",
    );
    assert_eq!(http.count(core), 0, "nothing was stored");
    let mut normal = event.clone();
    normal["type"] = "Normal".into();
    assert_eq!(http.json("POST", new_api, &normal).0, 201);
    let one = format!("{new_api}/p.17a3f");
    let series = json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}});
    assert_eq!(http.merge(&one, &series).0, 200, "a repeat is counted");
    refused(
        http.merge(&one, &json!({"note": "changed"})),
        422,
        "Event \"p.17a3f\" is invalid: message: Invalid value: \"changed\": field is immutable",
    );
}

//! `kubectl drain` as a demo runs it on a three-node cluster: without flags it refuses and names
//! the DaemonSet pods, a bare pod needs `--force`, a pod with an emptyDir needs
//! `--delete-emptydir-data`; with them the node is cordoned, its pods evicted (a
//! PodDisruptionBudget answering 429 until the replacements are Ready), the Deployment's pods
//! come back elsewhere, DaemonSet and mirror pods stay, and `kubectl uncordon` undoes it. Also the
//! eviction API drain relies on (one budget spent once, however many evictions race for it) and
//! the budget status the disruption controller keeps.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use tinykube_tests::{
    eventually, manifest, mark_all_ready, mark_ready, table_rows, ApiServer, ControllerManager,
    Kubelet, Scheduler,
};

const WAIT: Duration = Duration::from_secs(30);

const FLUENTD: &str = r#"apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: fluentd-elasticsearch
  namespace: kube-system
spec:
  selector:
    matchLabels:
      name: fluentd-elasticsearch
  template:
    metadata:
      labels:
        name: fluentd-elasticsearch
    spec:
      containers:
      - name: fluentd-elasticsearch
        image: quay.io/fluentd_elasticsearch/fluentd:v2.5.2
"#;

/// Four replicas kept at three available by a budget: one disruption at a time.
const WEB: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 4
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        resources:
          requests:
            cpu: 100m
            memory: 64Mi
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 3
  selector:
    matchLabels:
      app: web
"#;

const STATIC: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: static-web\nspec:\n  containers:\n  - name: web\n    image: nginx\n";

fn bare(name: &str, node: &str, empty_dir: bool) -> String {
    let volume = if empty_dir {
        "    volumeMounts:\n    - name: scratch\n      mountPath: /scratch\n  volumes:\n  - name: scratch\n    emptyDir: {}\n"
    } else {
        ""
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  nodeName: {node}\n  containers:\n  - name: busybox\n    image: busybox:1.36\n    command: [\"sleep\", \"3600\"]\n{volume}"
    )
}

/// `NAME NODE READY` of the pods in `ns` matching `selector` that are not terminating.
fn pods(server: &ApiServer, ns: &str, selector: &str) -> Vec<(String, String, bool)> {
    let path = "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.conditions[?(@.type==\"Ready\")].status} {.metadata.deletionTimestamp}{\"\\n\"}{end}";
    let out = server.kubectl(&["get", "pods", "-n", ns, "-l", selector, "-o", path]);
    out.stdout
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .filter(|c| c.len() == 4 && c[3].is_empty())
        .map(|c| (c[0].to_string(), c[1].to_string(), c[2] == "True"))
        .collect()
}

fn json_of(server: &ApiServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(server.kubectl(&all).ok()).unwrap_or(Value::Null)
}

/// The STATUS column of `kubectl get nodes` for `node`.
fn node_status(server: &ApiServer, node: &str) -> String {
    table_rows(server.kubectl(&["get", "nodes"]).ok())
        .into_iter()
        .find(|r| r[0] == node)
        .map(|r| r[1].clone())
        .unwrap_or_default()
}

/// A cluster as `tinykube up --nodes 3` starts it: worker0..2, each with a static pod.
/// Fields drop in order: the API server goes last, so no component sees it vanish.
struct Cluster {
    _manager: ControllerManager,
    _scheduler: Scheduler,
    _kubelets: Vec<Kubelet>,
    server: ApiServer,
}

fn cluster() -> Cluster {
    let server = ApiServer::start().unwrap();
    let kubelets = (0..3)
        .map(|i| {
            let node = format!("worker{i}");
            let dir: PathBuf = server.scratch().join("nodes").join(&node).join("manifests");
            std::fs::create_dir_all(&dir).unwrap();
            manifest(&dir, "static-web.yaml", STATIC);
            Kubelet::start(
                &server,
                &[
                    "--hostname-override",
                    &node,
                    "--pod-manifest-path",
                    dir.to_str().unwrap(),
                ],
            )
            .unwrap()
        })
        .collect();
    let scheduler = Scheduler::start(&server, &[]).unwrap();
    let manager = ControllerManager::start(&server, &[]).unwrap();
    assert!(
        eventually(WAIT, || (0..3).all(|i| {
            let node = format!("worker{i}");
            node_status(&server, &node) == "Ready"
                && server
                    .kubectl(&["get", "node", &node, "-o", "jsonpath={.spec.taints}"])
                    .stdout
                    .is_empty()
        })),
        "nodes never became Ready and untainted:\n{}",
        server.kubectl(&["get", "nodes"]).stdout
    );
    Cluster {
        _manager: manager,
        _scheduler: scheduler,
        _kubelets: kubelets,
        server,
    }
}

/// Assert that `text` contains every one of `wants`.
#[track_caller]
fn has_all(text: &str, wants: &[&str]) {
    for want in wants {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
}

/// The listed fields of a JSON object, as an array (to compare several at once).
fn fields(v: &Value, keys: &[&str]) -> Value {
    keys.iter().map(|k| v[*k].clone()).collect()
}

/// Apply a manifest file written into the test's scratch directory.
fn apply(server: &ApiServer, name: &str, text: &str) -> String {
    let file = manifest(&server.scratch(), name, text);
    server
        .kubectl(&["apply", "-f", file.to_str().unwrap()])
        .ok()
        .to_string()
}

#[test]
fn drain_evicts_within_the_budget_and_uncordon_undoes_it() {
    let c = cluster();
    let server = &c.server;
    let ds_sel = "name=fluentd-elasticsearch";
    apply(server, "fluentd.yaml", FLUENTD);
    assert!(eventually(WAIT, || {
        let p = pods(server, "kube-system", ds_sel);
        p.len() == 3 && p.iter().all(|(_, _, ready)| *ready)
    }));
    assert_eq!(
        apply(server, "web.yaml", WEB),
        "deployment.apps/web created\npoddisruptionbudget.policy/web created\n"
    );
    let rollout = server.kubectl(&["rollout", "status", "deploy/web", "--timeout=30s"]);
    has_all(rollout.ok(), &["successfully rolled out"]);

    // The disruption controller: 4 healthy, 3 desired, so one disruption allowed.
    let pdb_row = || table_rows(server.kubectl(&["get", "pdb", "web"]).ok()).remove(1);
    assert!(
        eventually(WAIT, || pdb_row()[1..4] == ["3", "N/A", "1"]),
        "{:?}",
        pdb_row()
    );
    let status = &json_of(server, &["get", "pdb", "web"])["status"];
    let counts = [
        "expectedPods",
        "currentHealthy",
        "desiredHealthy",
        "observedGeneration",
    ];
    assert_eq!(fields(status, &counts), json!([4, 4, 3, 1]));
    assert_eq!(
        fields(&status["conditions"][0], &["type", "status", "reason"]),
        json!(["DisruptionAllowed", "True", "SufficientPods"])
    );

    // Drain the node with the most web pods: four pods on three nodes put two on one.
    let before = pods(server, "default", "app=web");
    let on = |pods: &[(String, String, bool)], node: &str| -> Vec<String> {
        pods.iter()
            .filter(|p| p.1 == node)
            .map(|p| p.0.clone())
            .collect()
    };
    let node = (0..3)
        .map(|i| format!("worker{i}"))
        .max_by_key(|n| on(&before, n).len())
        .unwrap();
    let evicted = on(&before, &node);
    assert!(evicted.len() >= 2, "{before:?}");
    let daemon = on(&pods(server, "kube-system", ds_sel), &node).remove(0);
    let mirror = format!("static-web-{node}");
    // The kubelet publishes the mirror of its static pod on its own schedule: on a fast run
    // the workloads above are up before it.
    assert!(
        eventually(WAIT, || server.kubectl(&["get", "pod", &mirror]).success),
        "no mirror pod {mirror}"
    );
    for (name, empty_dir) in [("bare", false), ("scratch", true)] {
        let pod = bare(name, &node, empty_dir);
        server
            .kubectl_stdin(&["create", "-f", "-"], Some(&pod))
            .ok();
    }

    // No flags: cordoned, then refused, naming every pod in the way (mirror pods are skipped).
    let out = server.kubectl(&["drain", &node]);
    assert_eq!(out.stdout, format!("node/{node} cordoned\n"));
    let err = out.fails();
    has_all(
        err,
        &[
            &format!("error: unable to drain node \"{node}\" due to error: ["),
            &format!("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): kube-system/{daemon}"),
            "cannot delete Pods with local storage (use --delete-emptydir-data to override): default/scratch",
            "cannot delete cannot delete Pods that declare no controller (use --force to override): default/bare",
            &format!("There are pending nodes to be drained:\n {node}\n"),
        ],
    );
    assert!(!err.contains(&mirror), "{err}");
    assert_eq!(node_status(server, &node), "Ready,SchedulingDisabled");

    let out = server.kubectl(&["drain", &node, "--ignore-daemonsets"]);
    assert_eq!(out.stdout, format!("node/{node} already cordoned\n"));
    let err = out.fails();
    has_all(err, &["default/bare", "default/scratch"]);
    assert!(!err.contains("DaemonSet"), "{err}");

    let out = server.kubectl(&["drain", &node, "--ignore-daemonsets", "--force"]);
    let err = out.fails();
    has_all(err, &["cannot delete Pods with local storage (use --delete-emptydir-data to override): default/scratch"]);
    assert!(!err.contains("default/bare"), "{err}");
    assert_eq!(
        pods(server, "default", "app=web"),
        before,
        "nothing evicted yet"
    );

    // Every flag: the budget lets one web pod go at a time.
    let out = server.kubectl(&[
        "drain",
        &node,
        "--ignore-daemonsets",
        "--force",
        "--delete-emptydir-data",
        "--timeout=90s",
    ]);
    let stdout = out.ok();
    assert!(
        stdout.starts_with(&format!("node/{node} already cordoned\n")),
        "{stdout}"
    );
    assert!(
        stdout.ends_with(&format!("node/{node} drained\n")),
        "{stdout}"
    );
    for pod in evicted
        .iter()
        .map(String::as_str)
        .chain(["bare", "scratch"])
    {
        let lines = [
            format!("evicting pod default/{pod}\n"),
            format!("pod/{pod} evicted\n"),
        ];
        has_all(stdout, &[&lines[0], &lines[1]]);
    }
    assert!(
        !stdout.contains(&daemon) && !stdout.contains(&mirror),
        "{stdout}"
    );
    has_all(
        &out.stderr,
        &[
            &format!("ignoring DaemonSet-managed Pods: kube-system/{daemon}"),
            "deleting Pods that declare no controller: default/bare",
            "error when evicting pods/\"web-",
            "(will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.",
        ],
    );

    // The Deployment's pods are back, elsewhere; the DaemonSet and mirror pods stayed.
    let back = || pods(server, "default", "app=web");
    assert!(
        eventually(WAIT, || {
            let now = back();
            now.len() == 4 && now.iter().all(|(_, n, ready)| *n != node && *ready)
        }),
        "{:?}",
        back()
    );
    assert_eq!(on(&pods(server, "kube-system", ds_sel), &node), [daemon]);
    server.kubectl(&["get", "pod", &mirror]).ok();
    assert!(!server.kubectl(&["get", "pod", "bare"]).success);
    assert_eq!(node_status(server, &node), "Ready,SchedulingDisabled");
    assert!(eventually(WAIT, || pdb_row()[3] == "1"), "{:?}", pdb_row());

    // Uncordon: the node takes pods again.
    let out = server.kubectl(&["uncordon", &node]);
    assert_eq!(out.ok(), format!("node/{node} uncordoned\n"));
    assert_eq!(node_status(server, &node), "Ready");
    let pinned = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pinned\nspec:\n  nodeSelector:\n    kubernetes.io/hostname: {node}\n  containers:\n  - name: c\n    image: nginx\n"
    );
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(&pinned))
        .ok();
    let path = "jsonpath={.spec.nodeName} {.status.phase}";
    assert!(eventually(WAIT, || server
        .kubectl(&["get", "pod", "pinned", "-o", path])
        .stdout
        == format!("{node} Running")));
}

/// Plain HTTP against one server: (status, Retry-After header, body).
struct Http<'a>(&'a ApiServer);

impl Http<'_> {
    fn send(&self, method: &str, path: &str, body: &Value) -> (u16, Option<String>, Value) {
        let client = self.0.http();
        let url = format!("{}{path}", self.0.url);
        let req = match method {
            "POST" => client.post(url).json(body),
            _ => client
                .patch(url)
                .header("Content-Type", "application/merge-patch+json")
                .body(body.to_string()),
        };
        let r = req.send().unwrap();
        let retry = r
            .headers()
            .get("Retry-After")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        (r.status().as_u16(), retry, r.json().unwrap_or(Value::Null))
    }

    fn evict(&self, pod: &str, query: &str) -> (u16, Option<String>, Value) {
        let body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
                          "metadata": {"name": pod, "namespace": "default"}});
        self.send("POST", &format!("{PODS}/{pod}/eviction{query}"), &body)
    }

    fn get(&self, path: &str) -> Value {
        let url = format!("{}{path}", self.0.url);
        self.0
            .http()
            .get(url)
            .send()
            .unwrap()
            .json()
            .unwrap_or(Value::Null)
    }
}

const PODS: &str = "/api/v1/namespaces/default/pods";
const PDBS: &str = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";

fn demo_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": "demo"}},
           "spec": {"nodeName": "worker0", "containers": [{"name": "c", "image": "nginx"}]}})
}

fn pdb(name: &str, min_available: i64) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
           "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "demo"}}}})
}

#[test]
fn racing_evictions_spend_a_budget_once_and_refusals_are_upstreams() {
    let server = ApiServer::start().unwrap();
    let http = Http(&server);
    let names: Vec<String> = (0..6).map(|i| format!("demo-{i}")).collect();
    for name in &names {
        assert_eq!(http.send("POST", PODS, &demo_pod(name)).0, 201);
        assert!(mark_ready(&server, "default", name));
    }
    assert_eq!(http.send("POST", PDBS, &pdb("demo", 3)).0, 201);
    // No disruption controller here: the budget's status is set by hand.
    let set_status = |allowed: i64, healthy: i64, generation: i64| {
        let status = json!({"status": {"observedGeneration": generation,
            "disruptionsAllowed": allowed, "currentHealthy": healthy, "desiredHealthy": 3,
            "expectedPods": 6}});
        http.send("PATCH", &format!("{PDBS}/demo/status"), &status);
    };
    let budget = || http.get(&format!("{PDBS}/demo"))["status"].clone();
    set_status(2, 5, 1);

    // Six evictions at once against two allowed disruptions: exactly two pass.
    let codes: Vec<u16> = std::thread::scope(|s| {
        let racing: Vec<_> = names
            .iter()
            .map(|n| s.spawn(|| http.evict(n, "").0))
            .collect();
        racing.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let answered = |code: u16| -> Vec<&String> {
        let all = names.iter().zip(&codes);
        all.filter(|(_, c)| **c == code).map(|(n, _)| n).collect()
    };
    let (passed, guarded) = (answered(201), answered(429));
    assert_eq!((passed.len(), guarded.len()), (2, 4), "{codes:?}");
    let status = budget();
    assert_eq!(status["disruptionsAllowed"], 0);
    let mut recorded: Vec<&String> = status["disruptedPods"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    recorded.sort();
    assert_eq!(recorded, passed, "the evicted pods are recorded");
    assert_eq!(
        fields(&status["conditions"][0], &["status", "reason"]),
        json!(["False", "InsufficientPods"])
    );
    let target = |name: &str| {
        let pod = http.get(&format!("{PODS}/{name}"));
        let conditions = pod["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let target = conditions
            .into_iter()
            .find(|c| c["type"] == "DisruptionTarget");
        (pod["metadata"]["deletionTimestamp"].is_string(), target)
    };
    for name in &passed {
        let (deleting, condition) = target(name);
        assert!(deleting, "{name} is terminating");
        assert_eq!(
            fields(
                &condition.unwrap_or_default(),
                &["status", "reason", "message"]
            ),
            json!(["True", "EvictionByEvictionAPI", "Eviction API: evicting"])
        );
    }
    for name in &guarded {
        assert_eq!(target(name), (false, None));
    }

    // A spec change the controller has not observed yet: retry in 10 s.
    let spec = json!({"spec": {"minAvailable": 2}});
    let patched = http.send("PATCH", &format!("{PDBS}/demo"), &spec).2;
    assert_eq!(patched["metadata"]["generation"], 2);
    set_status(1, 4, 1);
    let (code, retry, body) = http.evict(guarded[0], "");
    assert_eq!((code, retry.as_deref()), (429, Some("10")), "{body}");
    assert_eq!(
        body["details"],
        json!({"causes": [{"reason": "DisruptionBudget",
            "message": "The disruption budget demo is still being processed by the server."}],
            "retryAfterSeconds": 10})
    );

    // Nothing allowed: upstream's 429, without Retry-After.
    set_status(0, 3, 2);
    let (code, retry, body) = http.evict(guarded[0], "");
    assert_eq!((code, retry), (429, None), "{body}");
    assert_eq!(
        fields(&body, &["message", "reason"]),
        json!([
            "Cannot evict pod as it would violate the pod's disruption budget.",
            "TooManyRequests"
        ])
    );
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "The disruption budget demo needs 3 healthy pods and has 3 currently"
    );

    // An unready pod goes without spending anything while the budget is met; a pending one
    // is not guarded at all.
    set_status(0, 4, 2);
    let unready = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}});
    http.send("PATCH", &format!("{PODS}/{}/status", guarded[1]), &unready);
    assert_eq!(http.evict(guarded[1], "").0, 201);
    assert_eq!(http.send("POST", PODS, &demo_pod("waiting")).0, 201);
    assert_eq!(http.evict("waiting", "").0, 201);
    assert_eq!(budget()["disruptionsAllowed"], 0);
    assert_eq!(
        budget()["disruptedPods"].as_object().map(|m| m.len()),
        Some(2)
    );

    // A dry run checks and changes nothing.
    set_status(1, 4, 2);
    assert_eq!(http.evict(guarded[2], "?dryRun=All").0, 201);
    assert_eq!(target(guarded[2]), (false, None));
    assert_eq!(budget()["disruptionsAllowed"], 1);

    // Client mistakes, and what eviction does not support.
    let other =
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}});
    let wrong = http.send("POST", &format!("{PODS}/{}/eviction", guarded[2]), &other);
    assert_eq!(
        (wrong.0, wrong.2["message"].clone()),
        (
            400,
            json!("name in URL does not match name in Eviction object")
        )
    );
    let missing = http.evict("nosuch", "");
    assert_eq!(
        (missing.0, missing.2["message"].clone()),
        (404, json!("pods \"nosuch\" not found"))
    );
    assert_eq!(http.send("POST", PDBS, &pdb("second", 1)).0, 201);
    let (code, _, body) = http.evict(guarded[2], "");
    assert_eq!(
        (code, body),
        (
            500,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                   "code": 500})
        )
    );
}

#[test]
fn the_disruption_controller_counts_controllers_scale_and_fails_safe() {
    let server = ApiServer::start().unwrap();
    let controllers = "--controllers=disruption,replicaset,deployment";
    let _manager = ControllerManager::start(&server, &[controllers]).unwrap();
    let http = Http(&server);
    for args in [
        &[
            "create",
            "deployment",
            "api",
            "--image=nginx",
            "--replicas=4",
        ][..],
        &[
            "create",
            "pdb",
            "half",
            "--selector=app=api",
            "--max-unavailable=50%",
        ],
    ] {
        server.kubectl(args).ok();
    }
    let counts = |name: &str| {
        let status = &http.get(&format!("{PDBS}/{name}"))["status"];
        fields(
            status,
            &[
                "expectedPods",
                "desiredHealthy",
                "currentHealthy",
                "disruptionsAllowed",
            ],
        )
    };
    // Pods not ready yet: none healthy. Then ready, then scaled: the Deployment's scale counts.
    assert!(
        eventually(WAIT, || counts("half") == json!([4, 2, 0, 0])),
        "{}",
        counts("half")
    );
    let all_ready = |n: usize, want: Value| {
        eventually(WAIT, || {
            mark_all_ready(&server, "default", "app=api") == n && counts("half") == want
        })
    };
    assert!(all_ready(4, json!([4, 2, 4, 2])), "{}", counts("half"));
    server
        .kubectl(&["scale", "deploy/api", "--replicas=6"])
        .ok();
    assert!(all_ready(6, json!([6, 3, 6, 3])), "{}", counts("half"));

    // A pod whose controller has no scale: disruptions forbidden, and the condition says why.
    let odd = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "odd", "labels": {"app": "odd"}, "ownerReferences": [{"apiVersion":
            "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "1234", "controller": true}]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    assert_eq!(http.send("POST", PODS, &odd).0, 201);
    server
        .kubectl(&[
            "create",
            "pdb",
            "odd",
            "--selector=app=odd",
            "--min-available=50%",
        ])
        .ok();
    let why = "daemonsets.apps does not implement the scale subresource";
    let condition = || http.get(&format!("{PDBS}/odd"))["status"]["conditions"][0].clone();
    let failed = json!(["False", "SyncFailed", why]);
    assert!(
        eventually(WAIT, || fields(
            &condition(),
            &["status", "reason", "message"]
        ) == failed),
        "{}",
        condition()
    );
    assert_eq!(counts("odd")[3], 0);
    let events = [
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=odd",
    ];
    let failure = format!("Failed to calculate the number of expected pods: {why}");
    assert!(eventually(WAIT, || server
        .kubectl(&events)
        .stdout
        .contains(&failure)));

    // An integer minAvailable counts matching pods, managed or not.
    server
        .kubectl(&[
            "create",
            "pdb",
            "whole",
            "--selector=app=odd",
            "--min-available=1",
        ])
        .ok();
    assert!(
        eventually(WAIT, || counts("whole") == json!([1, 1, 0, 0])),
        "{}",
        counts("whole")
    );
}

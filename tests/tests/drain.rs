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
        resources:
          requests:
            cpu: 100m
            memory: 200Mi
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

#[test]
fn drain_evicts_within_the_budget_and_uncordon_undoes_it() {
    let c = cluster();
    let server = &c.server;
    let dir = server.scratch();
    let ds = manifest(&dir, "fluentd.yaml", FLUENTD);
    server.kubectl(&["apply", "-f", ds.to_str().unwrap()]).ok();
    let ds_sel = "name=fluentd-elasticsearch";
    assert!(eventually(WAIT, || {
        let p = pods(server, "kube-system", ds_sel);
        p.len() == 3 && p.iter().all(|(_, _, ready)| *ready)
    }));
    let web = manifest(&dir, "web.yaml", WEB);
    let applied = server.kubectl(&["apply", "-f", web.to_str().unwrap()]);
    assert_eq!(
        applied.ok(),
        "deployment.apps/web created\npoddisruptionbudget.policy/web created\n"
    );
    let rollout = server.kubectl(&["rollout", "status", "deploy/web", "--timeout=30s"]);
    assert!(
        rollout.ok().contains("successfully rolled out"),
        "{}",
        rollout.stdout
    );

    // The disruption controller: 4 healthy, 3 desired, so one disruption allowed.
    assert!(
        eventually(WAIT, || {
            let rows = table_rows(server.kubectl(&["get", "pdb", "web"]).ok());
            rows.get(1).is_some_and(|r| r[1..4] == ["3", "N/A", "1"])
        }),
        "{}",
        server.kubectl(&["get", "pdb", "web", "-o", "yaml"]).stdout
    );
    let status = &json_of(server, &["get", "pdb", "web"])["status"];
    assert_eq!(
        (
            &status["expectedPods"],
            &status["currentHealthy"],
            &status["desiredHealthy"],
            &status["observedGeneration"]
        ),
        (&json!(4), &json!(4), &json!(3), &json!(1))
    );
    let cond = &status["conditions"][0];
    assert_eq!(
        (&cond["type"], &cond["status"], &cond["reason"]),
        (
            &json!("DisruptionAllowed"),
            &json!("True"),
            &json!("SufficientPods")
        )
    );

    // Drain the node with the most web pods: four pods on three nodes put two on one.
    let before = pods(server, "default", "app=web");
    let node = (0..3)
        .map(|i| format!("worker{i}"))
        .max_by_key(|n| before.iter().filter(|(_, on, _)| on == n).count())
        .unwrap();
    let on_node: Vec<String> = before
        .iter()
        .filter(|(_, on, _)| *on == node)
        .map(|(name, _, _)| name.clone())
        .collect();
    assert!(on_node.len() >= 2, "{before:?}");
    let daemon = pods(server, "kube-system", ds_sel)
        .into_iter()
        .find(|(_, on, _)| *on == node)
        .map(|(name, _, _)| name)
        .unwrap();
    let mirror = format!("static-web-{node}");
    server.kubectl(&["get", "pod", &mirror]).ok();
    for (name, empty_dir) in [("bare", false), ("scratch", true)] {
        server
            .kubectl_stdin(&["create", "-f", "-"], Some(&bare(name, &node, empty_dir)))
            .ok();
    }

    // No flags: cordoned, then refused, naming every pod in the way.
    let out = server.kubectl(&["drain", &node]);
    assert_eq!(out.stdout, format!("node/{node} cordoned\n"));
    let err = out.fails();
    for want in [
        format!("error: unable to drain node \"{node}\" due to error: ["),
        format!("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): kube-system/{daemon}"),
        "cannot delete Pods with local storage (use --delete-emptydir-data to override): default/scratch".into(),
        "cannot delete cannot delete Pods that declare no controller (use --force to override): default/bare".into(),
        format!("There are pending nodes to be drained:\n {node}\n"),
    ] {
        assert!(err.contains(&want), "missing {want:?} in:\n{err}");
    }
    assert_eq!(node_status(server, &node), "Ready,SchedulingDisabled");
    assert!(!err.contains(&mirror), "mirror pods are skipped: {err}");

    let out = server.kubectl(&["drain", &node, "--ignore-daemonsets"]);
    assert_eq!(out.stdout, format!("node/{node} already cordoned\n"));
    let err = out.fails();
    assert!(!err.contains("DaemonSet"), "{err}");
    assert!(
        err.contains("default/bare") && err.contains("default/scratch"),
        "{err}"
    );

    let out = server.kubectl(&["drain", &node, "--ignore-daemonsets", "--force"]);
    let err = out.fails();
    assert!(
        err.contains("error: unable to drain node")
            && err.contains("cannot delete Pods with local storage (use --delete-emptydir-data to override): default/scratch")
            && !err.contains("default/bare"),
        "{err}"
    );
    assert_eq!(
        pods(server, "default", "app=web"),
        before,
        "nothing was evicted yet"
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
    for pod in on_node
        .iter()
        .map(String::as_str)
        .chain(["bare", "scratch"])
    {
        assert!(
            stdout.contains(&format!("evicting pod default/{pod}\n")),
            "{stdout}"
        );
        assert!(stdout.contains(&format!("pod/{pod} evicted\n")), "{stdout}");
    }
    assert!(
        stdout.ends_with(&format!("node/{node} drained\n")),
        "{stdout}"
    );
    assert!(
        !stdout.contains(&daemon) && !stdout.contains(&mirror),
        "{stdout}"
    );
    let stderr = &out.stderr;
    assert!(
        stderr.contains(&format!(
            "ignoring DaemonSet-managed Pods: kube-system/{daemon}"
        )) && stderr.contains("deleting Pods that declare no controller: default/bare"),
        "{stderr}"
    );
    assert!(
        stderr.contains("(will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget."),
        "the budget never pushed back:\n{stderr}"
    );
    assert!(
        stderr.contains("error when evicting pods/\"web-"),
        "{stderr}"
    );

    // The Deployment's pods are back, elsewhere; the DaemonSet and mirror pods stayed.
    assert!(
        eventually(WAIT, || {
            let now = pods(server, "default", "app=web");
            now.len() == 4 && now.iter().all(|(_, on, ready)| *on != node && *ready)
        }),
        "{:?}",
        pods(server, "default", "app=web")
    );
    let daemons = pods(server, "kube-system", ds_sel);
    assert!(
        daemons
            .iter()
            .any(|(name, on, _)| *name == daemon && *on == node),
        "{daemons:?}"
    );
    server.kubectl(&["get", "pod", &mirror]).ok();
    assert!(!server.kubectl(&["get", "pod", "bare"]).success);
    assert_eq!(node_status(server, &node), "Ready,SchedulingDisabled");
    assert!(eventually(WAIT, || json_of(server, &["get", "pdb", "web"])
        ["status"]["disruptionsAllowed"]
        == 1));

    // Uncordon: the node takes pods again.
    assert_eq!(
        server.kubectl(&["uncordon", &node]).ok(),
        format!("node/{node} uncordoned\n")
    );
    assert_eq!(node_status(server, &node), "Ready");
    let pinned = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pinned\nspec:\n  nodeSelector:\n    kubernetes.io/hostname: {node}\n  containers:\n  - name: c\n    image: nginx\n"
    );
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(&pinned))
        .ok();
    assert!(eventually(WAIT, || {
        server
            .kubectl(&[
                "get",
                "pod",
                "pinned",
                "-o",
                "jsonpath={.spec.nodeName} {.status.phase}",
            ])
            .stdout
            == format!("{node} Running")
    }));
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
    let status = |allowed: i64, healthy: i64, generation: i64| {
        json!({"status": {"observedGeneration": generation, "disruptionsAllowed": allowed,
                          "currentHealthy": healthy, "desiredHealthy": 3, "expectedPods": 6}})
    };
    let status_path = format!("{PDBS}/demo/status");
    http.send("PATCH", &status_path, &status(2, 5, 1));

    // Six evictions at once against two allowed disruptions: exactly two pass.
    let codes: Vec<u16> = std::thread::scope(|s| {
        let running: Vec<_> = names
            .iter()
            .map(|n| s.spawn(|| http.evict(n, "").0))
            .collect();
        running.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 2, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 429).count(), 4, "{codes:?}");
    let budget = http.get(&format!("{PDBS}/demo"));
    assert_eq!(budget["status"]["disruptionsAllowed"], 0);
    let disrupted = budget["status"]["disruptedPods"].as_object().unwrap();
    assert_eq!(disrupted.len(), 2, "{budget}");
    let cond = &budget["status"]["conditions"][0];
    assert_eq!(
        (&cond["status"], &cond["reason"]),
        (&json!("False"), &json!("InsufficientPods"))
    );
    for (name, code) in names.iter().zip(&codes) {
        let pod = http.get(&format!("{PODS}/{name}"));
        let target = pod["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "DisruptionTarget")
            .cloned();
        if *code == 201 {
            assert!(disrupted.contains_key(name.as_str()), "{name} not recorded");
            assert!(pod["metadata"]["deletionTimestamp"].is_string(), "{pod}");
            let t = target.expect("evicted pods are marked");
            assert_eq!(
                (&t["status"], &t["reason"], &t["message"]),
                (
                    &json!("True"),
                    &json!("EvictionByEvictionAPI"),
                    &json!("Eviction API: evicting")
                )
            );
        } else {
            assert!(
                pod["metadata"]["deletionTimestamp"].is_null() && target.is_none(),
                "{pod}"
            );
        }
    }
    let guarded: Vec<&String> = names
        .iter()
        .zip(&codes)
        .filter(|(_, c)| **c == 429)
        .map(|(n, _)| n)
        .collect();

    // A spec change the controller has not observed yet: retry in 10 s.
    let patched = http.send(
        "PATCH",
        &format!("{PDBS}/demo"),
        &json!({"spec": {"minAvailable": 2}}),
    );
    assert_eq!(patched.2["metadata"]["generation"], 2);
    http.send("PATCH", &status_path, &status(1, 4, 1));
    let (code, retry, body) = http.evict(guarded[0], "");
    assert_eq!((code, retry.as_deref()), (429, Some("10")), "{body}");
    assert_eq!(body["details"]["retryAfterSeconds"], 10);
    assert_eq!(
        body["details"]["causes"][0],
        json!({"reason": "DisruptionBudget",
               "message": "The disruption budget demo is still being processed by the server."})
    );

    // Nothing allowed: upstream's 429 without Retry-After.
    http.send("PATCH", &status_path, &status(0, 3, 2));
    let (code, retry, body) = http.evict(guarded[0], "");
    assert_eq!((code, retry), (429, None), "{body}");
    assert_eq!(
        body["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "The disruption budget demo needs 3 healthy pods and has 3 currently"
    );

    // An unready pod goes without spending anything while the budget is met; a pending one
    // is not guarded at all.
    http.send("PATCH", &status_path, &status(0, 4, 2));
    let unready = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}});
    http.send("PATCH", &format!("{PODS}/{}/status", guarded[1]), &unready);
    assert_eq!(http.evict(guarded[1], "").0, 201);
    assert_eq!(http.send("POST", PODS, &demo_pod("waiting")).0, 201);
    assert_eq!(http.evict("waiting", "").0, 201);
    let budget = http.get(&format!("{PDBS}/demo"));
    assert_eq!(budget["status"]["disruptionsAllowed"], 0);
    assert_eq!(
        budget["status"]["disruptedPods"]
            .as_object()
            .map(|m| m.len()),
        Some(2)
    );

    // A dry run checks and changes nothing.
    http.send("PATCH", &status_path, &status(1, 4, 2));
    assert_eq!(http.evict(guarded[2], "?dryRun=All").0, 201);
    assert!(http.get(&format!("{PODS}/{}", guarded[2]))["metadata"]["deletionTimestamp"].is_null());
    assert_eq!(
        http.get(&format!("{PDBS}/demo"))["status"]["disruptionsAllowed"],
        1
    );

    // Client mistakes and what eviction does not support.
    let mismatch =
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}});
    let (code, _, body) = http.send(
        "POST",
        &format!("{PODS}/{}/eviction", guarded[2]),
        &mismatch,
    );
    assert_eq!(
        (code, &body["message"]),
        (
            400,
            &json!("name in URL does not match name in Eviction object")
        )
    );
    let (code, _, body) = http.evict("nosuch", "");
    assert_eq!(
        (code, &body["message"]),
        (404, &json!("pods \"nosuch\" not found"))
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
    let _manager =
        ControllerManager::start(&server, &["--controllers=disruption,replicaset,deployment"])
            .unwrap();
    let http = Http(&server);
    let api = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 4
  selector:
    matchLabels:
      app: api
  template:
    metadata:
      labels:
        app: api
    spec:
      containers:
      - name: c
        image: nginx
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: half
spec:
  maxUnavailable: 50%
  selector:
    matchLabels:
      app: api
"#;
    server.kubectl_stdin(&["apply", "-f", "-"], Some(api)).ok();
    let counts = |name: &str| {
        let s = &http.get(&format!("{PDBS}/{name}"))["status"];
        [
            &s["expectedPods"],
            &s["desiredHealthy"],
            &s["currentHealthy"],
            &s["disruptionsAllowed"],
        ]
        .map(|v| v.as_i64().unwrap_or(-1))
    };
    // Pods not ready yet: none healthy.
    assert!(
        eventually(WAIT, || counts("half") == [4, 2, 0, 0]),
        "{:?}",
        counts("half")
    );
    assert!(
        eventually(WAIT, || mark_all_ready(&server, "default", "app=api") == 4
            && counts("half") == [4, 2, 4, 2]),
        "{:?}",
        counts("half")
    );
    server
        .kubectl(&["scale", "deploy/api", "--replicas=6"])
        .ok();
    assert!(
        eventually(WAIT, || {
            mark_all_ready(&server, "default", "app=api");
            counts("half") == [6, 3, 6, 3]
        }),
        "{:?}",
        counts("half")
    );

    // A pod whose controller has no scale: disruptions forbidden, and the condition says why.
    let odd = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "odd", "labels": {"app": "odd"}, "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "1234", "controller": true}]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    assert_eq!(http.send("POST", PODS, &odd).0, 201);
    let failing = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "odd"},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "odd"}}}});
    assert_eq!(http.send("POST", PDBS, &failing).0, 201);
    assert!(
        eventually(WAIT, || {
            let c = &http.get(&format!("{PDBS}/odd"))["status"]["conditions"][0];
            c["reason"] == "SyncFailed"
                && c["status"] == "False"
                && c["message"] == "daemonsets.apps does not implement the scale subresource"
        }),
        "{}",
        http.get(&format!("{PDBS}/odd"))
    );
    assert!(eventually(WAIT, || {
        server
        .kubectl(&["get", "events", "--field-selector", "involvedObject.name=odd"])
        .stdout
        .contains("Failed to calculate the number of expected pods: daemonsets.apps does not implement the scale subresource")
    }));

    // An integer minAvailable counts matching pods, managed or not.
    let int = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "whole"},
        "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "odd"}}}});
    assert_eq!(http.send("POST", PDBS, &int).0, 201);
    assert!(
        eventually(WAIT, || counts("whole") == [1, 0, 0, 0]),
        "{:?}",
        counts("whole")
    );
}

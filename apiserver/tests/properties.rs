//! Property tests of the API server's request path, as a careless user or a buggy controller
//! would drive it: valid objects of the served kinds, mutated at random (any field set to odd
//! JSON or removed, kinds and versions swapped) and sent with every write verb, plus random
//! selectors and query strings. The invariants, whatever the input:
//! - never a 5xx, never a dropped connection (a panic);
//! - a refused request changes nothing (the store's revision does not move);
//! - what was accepted passes validation again when read back (a dry-run update of it is
//!   accepted);
//! - each of upstream's rules in `RULES`, broken on purpose, is refused with 422, so removing a
//!   validation rule fails this test.
//!
//! The server runs in-process on a loopback port with a temporary store; the number of cases
//! is bounded (`PROPTEST_CASES` raises it for a longer run).

use proptest::prelude::*;
use reqwest::blocking::Client;
use reqwest::Method;
use serde_json::{json, Value};

/// The API server of this test thread (each test has its own, so that the store's revision
/// moves only with that test's requests), started on first use.
fn server() -> (String, Client) {
    thread_local! {
        static SERVER: (String, Client) = start();
    }
    SERVER.with(Clone::clone)
}

fn start() -> (String, Client) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let dir = tempfile::tempdir().unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let config = tinykube_apiserver::Config::new(addr, dir.path().join("data"));
            tx.send(format!("http://{addr}")).unwrap();
            let shutdown = tokio_util::sync::CancellationToken::new();
            tinykube_apiserver::serve(listener, config, shutdown)
                .await
                .unwrap();
        });
    });
    let url = rx.recv().unwrap();
    let client = Client::builder().no_proxy().build().unwrap();
    for _ in 0..500 {
        if client
            .get(format!("{url}/readyz"))
            .send()
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    (url, client)
}

/// The status code and JSON body of one request; a dropped connection fails the property.
fn send(
    method: Method,
    path: &str,
    content_type: &str,
    body: Option<String>,
) -> Result<(u16, Value), TestCaseError> {
    let (url, client) = server();
    let mut req = client
        .request(method.clone(), format!("{url}{path}"))
        .header("Content-Type", content_type)
        .header("Accept", "application/json");
    if let Some(b) = body.clone() {
        req = req.body(b);
    }
    let resp = req.send().map_err(|e| {
        TestCaseError::fail(format!("{method} {path}: no answer ({e}); body {body:?}"))
    })?;
    let code = resp.status().as_u16();
    let text = resp.text().unwrap_or_default();
    prop_assert!(
        code < 500,
        "{method} {path} answered {code}: {text}\nbody: {body:?}"
    );
    Ok((code, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// The store's current revision: a list's resourceVersion.
fn revision() -> String {
    let (url, client) = server();
    let list: Value = client
        .get(format!("{url}/api/v1/namespaces?limit=1"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A valid object of each kind, with the collection path it is created in.
fn seeds() -> Vec<(&'static str, Value)> {
    vec![
        (
            "/api/v1/namespaces/default/pods",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "web"}},
                   "spec": {"containers": [{"name": "c", "image": "nginx",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "128Mi"}},
                            "ports": [{"containerPort": 80}]}]}}),
        ),
        (
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
                   "data": {"key": "value", "other.key": "x"}}),
        ),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}},
                            "template": {"metadata": {"labels": {"app": "d"}},
                                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        ),
        (
            "/api/v1/nodes",
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {"disk": "ssd"}},
                   "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}}),
        ),
        (
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb"},
                   "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
                   "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}),
        ),
    ]
}

/// Odd JSON values, weighted toward what breaks validators: negatives, huge numbers, strings
/// that are almost names, quantities, IPs or percentages.
fn odd_value() -> impl Strategy<Value = Value> {
    let strings = prop::sample::select(vec![
        "",
        "-1",
        "2",
        "-5Gi",
        "1.5",
        "..",
        ".",
        "Bad_Name",
        "a/b/c",
        "999.1.1.1",
        "200%",
        "x%",
        "In",
        "Exists",
        "NoSchedule",
        "Always",
        "\u{0}",
        "é",
        "-",
        "a-",
        "1e400",
        "9223372036854775808",
    ])
    .prop_map(|s| Value::String(s.to_string()));
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![
            Just(-1i64),
            Just(0),
            Just(i64::MIN),
            Just(i64::MAX),
            any::<i64>()
        ]
        .prop_map(|n| json!(n)),
        prop_oneof![Just(1.5f64), Just(-0.5), Just(1e300)].prop_map(|f| json!(f)),
        strings,
        "[a-zA-Z0-9./_%-]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-z.]{1,6}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Every path (as pointer tokens) of a JSON value.
fn paths(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                prefix.push(k.clone());
                out.push(prefix.clone());
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                prefix.push(i.to_string());
                out.push(prefix.clone());
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn pointer(tokens: &[String]) -> String {
    tokens
        .iter()
        .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
        .collect()
}

#[derive(Debug, Clone)]
enum Mutation {
    Set(usize, Value),
    Remove(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), odd_value()).prop_map(|(i, v)| Mutation::Set(i, v)),
        1 => any::<usize>().prop_map(Mutation::Remove),
    ]
}

fn mutate(seed: &Value, mutations: &[Mutation]) -> Value {
    let mut v = seed.clone();
    for m in mutations {
        let mut all = Vec::new();
        paths(&v, &mut Vec::new(), &mut all);
        if all.is_empty() {
            break;
        }
        let (i, set) = match m {
            Mutation::Set(i, value) => (*i, Some(value.clone())),
            Mutation::Remove(i) => (*i, None),
        };
        let at = pointer(&all[i % all.len()]);
        let (parent, last) = at.rsplit_once('/').unwrap_or(("", ""));
        let last = last.replace("~1", "/").replace("~0", "~");
        match (v.pointer_mut(parent), set) {
            (Some(Value::Object(o)), Some(value)) => {
                o.insert(last, value);
            }
            (Some(Value::Object(o)), None) => {
                o.remove(&last);
            }
            (Some(Value::Array(a)), set) => {
                if let Ok(idx) = last.parse::<usize>() {
                    match set {
                        Some(value) if idx < a.len() => a[idx] = value,
                        None if idx < a.len() => {
                            a.remove(idx);
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    v
}

/// How a mutated object is sent.
#[derive(Debug, Clone, Copy)]
enum Verb {
    Create,
    Update,
    MergePatch,
    StrategicPatch,
    Apply,
    StatusMerge,
}

fn verb() -> impl Strategy<Value = Verb> {
    prop::sample::select(vec![
        Verb::Create,
        Verb::Update,
        Verb::MergePatch,
        Verb::StrategicPatch,
        Verb::Apply,
        Verb::StatusMerge,
    ])
}

/// Create `obj` at `collection` under a fresh name; the object's own path.
fn create_fresh(collection: &str, obj: &Value, name: &str) -> Result<String, TestCaseError> {
    let mut obj = obj.clone();
    obj["metadata"]["name"] = json!(name);
    let _ = send(
        Method::DELETE,
        &format!("{collection}/{name}?gracePeriodSeconds=0"),
        "application/json",
        None,
    )?;
    let (code, body) = send(
        Method::POST,
        collection,
        "application/json",
        Some(obj.to_string()),
    )?;
    prop_assert!(code == 201, "the seed was refused: {body}");
    Ok(format!("{collection}/{name}"))
}

/// Send `obj` with `verb` against a fresh copy of its seed: the status code, the answer and
/// the store's revision just before the request.
fn write(
    collection: &str,
    seed: &Value,
    obj: &Value,
    verb: Verb,
) -> Result<(u16, Value, String), TestCaseError> {
    let path = create_fresh(collection, seed, "target")?;
    if let Verb::Create = verb {
        let _ = send(
            Method::DELETE,
            &format!("{path}?gracePeriodSeconds=0"),
            "application/json",
            None,
        )?;
    }
    let before = revision();
    let body = obj.to_string();
    let (code, answer) = match verb {
        Verb::Create => send(Method::POST, collection, "application/json", Some(body))?,
        Verb::Update => send(Method::PUT, &path, "application/json", Some(body))?,
        Verb::MergePatch => send(
            Method::PATCH,
            &path,
            "application/merge-patch+json",
            Some(body),
        )?,
        Verb::StrategicPatch => send(
            Method::PATCH,
            &path,
            "application/strategic-merge-patch+json",
            Some(body),
        )?,
        Verb::Apply => send(
            Method::PATCH,
            &format!("{path}?fieldManager=prop&force=true"),
            "application/apply-patch+yaml",
            Some(body),
        )?,
        Verb::StatusMerge => send(
            Method::PATCH,
            &format!("{path}/status"),
            "application/merge-patch+json",
            Some(body),
        )?,
    };
    Ok((code, answer, before))
}

/// What was accepted is valid when read back: a dry-run update of it is accepted too.
fn still_valid(answer: &Value, collection: &str) -> Result<(), TestCaseError> {
    let Some(name) = answer.pointer("/metadata/name").and_then(Value::as_str) else {
        return Ok(());
    };
    let path = format!("{collection}/{name}");
    let (code, stored) = send(Method::GET, &path, "application/json", None)?;
    if code != 200 {
        return Ok(());
    }
    let (code, again) = send(
        Method::PUT,
        &format!("{path}?dryRun=All"),
        "application/json",
        Some(stored.to_string()),
    )?;
    prop_assert!(
        code == 200,
        "stored but invalid when re-read ({code}): {again}\nstored: {stored}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, max_shrink_iters: 200, ..ProptestConfig::default() })]

    #[test]
    fn mutated_writes_never_fail_the_server(
        which in 0usize..6,
        mutations in prop::collection::vec(mutation(), 1..4),
        verb in verb(),
    ) {
        let (collection, seed) = seeds().swap_remove(which);
        let obj = mutate(&seed, &mutations);
        let (code, answer, before) = write(collection, &seed, &obj, verb)?;
        if code >= 400 {
            prop_assert_eq!(revision(), before, "refused with {} but stored: {}", code, answer);
        } else {
            still_valid(&answer, collection)?;
        }
    }

    #[test]
    fn refused_requests_change_nothing(
        which in 0usize..6,
        mutations in prop::collection::vec(mutation(), 1..4),
        verb in verb(),
    ) {
        let (collection, seed) = seeds().swap_remove(which);
        let path = create_fresh(collection, &seed, "steady")?;
        let (_, stored) = send(Method::GET, &path, "application/json", None)?;
        let before = revision();
        let obj = mutate(&seed, &mutations);
        let mut named = obj.clone();
        if named.get("metadata").is_some_and(Value::is_object) {
            named["metadata"]["name"] = json!("steady");
        }
        let (code, _) = match verb {
            Verb::Create | Verb::Update | Verb::Apply => {
                send(Method::PUT, &path, "application/json", Some(named.to_string()))?
            }
            _ => send(Method::PATCH, &path, "application/merge-patch+json", Some(obj.to_string()))?,
        };
        if code >= 400 {
            prop_assert_eq!(revision(), before);
            let (_, now) = send(Method::GET, &path, "application/json", None)?;
            prop_assert_eq!(now, stored);
        }
    }

    #[test]
    fn odd_queries_never_fail_the_server(
        query in prop::collection::vec(
            (prop::sample::select(vec!["labelSelector", "fieldSelector", "limit", "continue",
                                       "resourceVersion", "resourceVersionMatch", "timeoutSeconds",
                                       "fieldManager", "dryRun", "watch", "allowWatchBookmarks",
                                       "propagationPolicy", "gracePeriodSeconds"]),
             "[a-z0-9=!,()%. /_-]{0,16}"),
            0..4),
        collection in 0usize..6,
    ) {
        let (path, _) = seeds().swap_remove(collection);
        let q: String = query
            .iter()
            .map(|(k, v)| format!("{k}={}", v.replace(' ', "+")))
            .collect::<Vec<_>>()
            .join("&");
        // A watch would stream; bound it.
        let q = format!("{q}&timeoutSeconds=1");
        send(Method::GET, &format!("{path}?{q}"), "application/json", None)?;
        send(Method::DELETE, &format!("{path}?{q}&dryRun=All"), "application/json", None)?;
    }
}

/// Upstream rules, each broken on purpose on a valid seed: the API server must refuse with 422
/// and change nothing. Removing one of these validation rules fails this test.
#[test]
fn every_broken_rule_is_refused() {
    type Break = fn(&mut Value);
    let rules: Vec<(&str, usize, Break)> = vec![
        ("a name that is not a DNS subdomain", 0, |p| {
            p["metadata"]["name"] = json!("Bad_Name")
        }),
        ("a label key with a space", 1, |c| {
            c["metadata"]["labels"] = json!({"a b": "x"})
        }),
        ("a container without an image", 0, |p| {
            p["spec"]["containers"][0]["image"] = json!("")
        }),
        ("a pod without containers", 0, |p| {
            p["spec"]["containers"] = json!([])
        }),
        ("a container port out of range", 0, |p| {
            p["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(70000)
        }),
        ("a malformed quantity", 0, |p| {
            p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("lots")
        }),
        ("a taint with an unknown effect", 3, |n| {
            n["spec"]["taints"][0]["effect"] = json!("Sometimes")
        }),
        ("a PDB with both minAvailable and maxUnavailable", 4, |b| {
            b["spec"]["minAvailable"] = json!(1)
        }),
        ("a Deployment with negative replicas", 2, |d| {
            d["spec"]["replicas"] = json!(-1)
        }),
        ("a negative cpu request", 0, |p| {
            p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("-1")
        }),
        ("a request over its limit", 0, |p| {
            p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("2")
        }),
        ("a ConfigMap key naming a directory", 1, |c| {
            c["data"] = json!({"..": "x"})
        }),
        ("a finalizer that is not a qualified name", 1, |c| {
            c["metadata"]["finalizers"] = json!(["not a name"])
        }),
        ("an owner reference without a uid", 1, |c| {
            c["metadata"]["ownerReferences"] =
                json!([{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": ""}])
        }),
    ];
    for (what, which, break_it) in rules {
        let (collection, seed) = seeds().swap_remove(which);
        let mut obj = seed.clone();
        obj["metadata"]["name"] = json!("broken");
        break_it(&mut obj);
        let before = revision();
        let (code, body) = send(
            Method::POST,
            collection,
            "application/json",
            Some(obj.to_string()),
        )
        .unwrap();
        assert_eq!(code, 422, "{what}: {body}");
        assert_eq!(revision(), before, "{what}: something was stored");
    }
}

/// Status writes are validated too: a pod IP that is no IP is refused and changes nothing.
#[test]
fn broken_status_writes_are_refused() {
    let (collection, seed) = seeds().swap_remove(0);
    let path = create_fresh(collection, &seed, "status").unwrap();
    let before = revision();
    let (code, body) = send(
        Method::PATCH,
        &format!("{path}/status"),
        "application/merge-patch+json",
        Some(json!({"status": {"podIP": "999.1.1.1"}}).to_string()),
    )
    .unwrap();
    assert_eq!(code, 422, "{body}");
    assert_eq!(revision(), before);
}

/// An update may not set what only the server sets: a deletion timestamp on a live object
/// (upstream's ValidateObjectMetaUpdate), nor a finalizer that is no name through
/// `namespaces/finalize`.
#[test]
fn updates_may_not_set_what_the_server_sets() {
    let (collection, seed) = seeds().swap_remove(1);
    let path = create_fresh(collection, &seed, "live").unwrap();
    let (_, mut stored) = send(Method::GET, &path, "application/json", None).unwrap();
    stored["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let before = revision();
    let (code, body) = send(
        Method::PUT,
        &path,
        "application/json",
        Some(stored.to_string()),
    )
    .unwrap();
    assert_eq!(code, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("metadata.deletionTimestamp: Invalid value: \"2026-01-01T00:00:00Z\": field is immutable"),
        "{body}"
    );
    assert_eq!(revision(), before);

    let (code, body) = send(
        Method::POST,
        "/api/v1/namespaces",
        "application/json",
        Some(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fin"}})
                .to_string(),
        ),
    )
    .unwrap();
    assert_eq!(code, 201, "{body}");
    let mut ns = body;
    ns["spec"]["finalizers"] = json!(["kubernetes", "not a name"]);
    let before = revision();
    let (code, body) = send(
        Method::PUT,
        "/api/v1/namespaces/fin/finalize",
        "application/json",
        Some(ns.to_string()),
    )
    .unwrap();
    assert_eq!(code, 422, "{body}");
    assert_eq!(revision(), before);
}

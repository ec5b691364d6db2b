//! The module's tests, through its public API, with their shared fixtures.

use serde_json::{json, Value};

use super::*;

const KUBECTL: Writer = Writer {
    manager: "kubectl",
    api_version: "apps/v1",
    subresource: None,
    time: "2026-11-23T16:00:00Z",
};

/// Pods and Deployments: built-in, with a status subresource.
const POD: TypeInfo = TypeInfo::built_in(true);

fn writer(manager: &'static str, time: &'static str) -> Writer<'static> {
    Writer {
        manager,
        time,
        ..KUBECTL
    }
}

fn deployment(replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": image}]}
            }
        },
        "status": {"replicas": 0}
    })
}

fn entry_fields(entry: &Value) -> Vec<String> {
    FieldSet::from_fields_v1(&entry["fieldsV1"])
        .unwrap()
        .paths()
}

fn managed_of(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn fields_v1_round_trip() {
    let v1 = json!({"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{}}}}}}});
    let set = FieldSet::from_fields_v1(&v1).unwrap();
    assert_eq!(set.to_fields_v1(), v1);
    assert_eq!(set, fields_of(&deployment(3, "nginx:1"), Scope::Main, POD));
    assert_eq!(
        set.paths(),
        [
            ".metadata.labels",
            ".metadata.labels.app",
            ".spec.replicas",
            ".spec.selector",
            ".spec.template.metadata.labels",
            ".spec.template.metadata.labels.app",
            ".spec.template.spec.containers[name=\"nginx\"]",
            ".spec.template.spec.containers[name=\"nginx\"].image",
            ".spec.template.spec.containers[name=\"nginx\"].name",
        ]
    );
}

#[test]
fn fields_v1_parsing() {
    let ok = json!({".": {}, "f:a": {".": {}}, "i:3": {"f:b": {}}, "v:\"x\"": {}});
    let set = FieldSet::from_fields_v1(&ok).unwrap();
    assert_eq!(set.paths(), [".a", "[=\"x\"]", "[3].b"]);
    let key = json!({"k:{\"protocol\":\"TCP\",\"containerPort\":80}": {}});
    assert_eq!(
        FieldSet::from_fields_v1(&key).unwrap().paths(),
        ["[containerPort=80,protocol=\"TCP\"]"]
    );
    for bad in [
        json!([]),
        json!({"x:a": {}}),
        json!({"f:a": 1}),
        json!({"k:[1]": {}}),
        json!({"i:-1": {}}),
    ] {
        assert!(FieldSet::from_fields_v1(&bad).is_err(), "{bad}");
    }
}

#[test]
fn set_operations() {
    let a = FieldSet::from_fields_v1(&json!({"f:a": {}, "f:b": {"f:c": {}, "f:d": {}}})).unwrap();
    let b = FieldSet::from_fields_v1(&json!({"f:b": {"f:c": {}}, "f:e": {}})).unwrap();
    assert_eq!(a.union(&b).paths(), [".a", ".b.c", ".b.d", ".e"]);
    assert_eq!(a.difference(&b).paths(), [".a", ".b.d"]);
    assert_eq!(a.intersection(&b).paths(), [".b.c"]);
    assert!(a.difference(&a).is_empty());
    assert_eq!(a.difference(&a), FieldSet::default());
}

fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "uid": "u1", "resourceVersion": "7", "finalizers": ["x"]},
        "spec": {
            "containers": [{
                "name": "app",
                "image": "busybox",
                "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]
            }],
            "tolerations": [{"key": "k", "operator": "Exists"}]
        },
        "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}
    })
}

#[test]
fn fields_of_a_pod() {
    let main = fields_of(&pod(), Scope::Main, POD).paths();
    assert_eq!(
        main,
        [
            ".metadata.finalizers[=\"x\"]",
            ".spec.containers[name=\"app\"]",
            ".spec.containers[name=\"app\"].image",
            ".spec.containers[name=\"app\"].name",
            ".spec.containers[name=\"app\"].ports[containerPort=53,protocol=\"UDP\"]",
            ".spec.containers[name=\"app\"].ports[containerPort=53,protocol=\"UDP\"].containerPort",
            ".spec.containers[name=\"app\"].ports[containerPort=53,protocol=\"UDP\"].protocol",
            ".spec.containers[name=\"app\"].ports[containerPort=80,protocol=\"TCP\"]",
            ".spec.containers[name=\"app\"].ports[containerPort=80,protocol=\"TCP\"].containerPort",
            ".spec.tolerations",
        ]
    );
    let status = fields_of(&pod(), Scope::Status, POD).paths();
    assert_eq!(
        status,
        [
            ".status.conditions[type=\"Ready\"]",
            ".status.conditions[type=\"Ready\"].status",
            ".status.conditions[type=\"Ready\"].type",
            ".status.phase",
        ]
    );
    // Without a status subresource, status belongs to the main resource.
    assert!(fields_of(&pod(), Scope::Main, TypeInfo::built_in(false))
        .paths()
        .contains(&".status.phase".to_string()));
}

#[test]
fn keyless_elements_make_the_list_atomic() {
    let obj = json!({"spec": {"containers": [{"image": "a"}, {"image": "b"}], "volumes": [{"name": "v"}, {"name": "v"}]}});
    assert_eq!(
        fields_of(&obj, Scope::Main, POD).paths(),
        [".spec.containers", ".spec.volumes"]
    );
}

#[test]
fn compare_reports_added_modified_removed() {
    let old = deployment(3, "nginx:1");
    let mut new = deployment(5, "nginx:1");
    new["metadata"]["labels"] = json!({"tier": "front"});
    new["spec"]["paused"] = json!(true);
    let diff = compare(&old, &new, Scope::Main, POD);
    assert_eq!(
        diff.added.paths(),
        [".metadata.labels.tier", ".spec.paused"]
    );
    assert_eq!(diff.modified.paths(), [".spec.replicas"]);
    assert_eq!(diff.removed.paths(), [".metadata.labels.app"]);
    assert!(compare(&old, &old, Scope::Main, POD).changed().is_empty());
}

#[test]
fn merge_by_kind_of_list() {
    let live = json!({"spec": {
        "containers": [{"name": "a", "image": "a:1", "args": ["x"]}, {"name": "sidecar", "image": "s:1"}],
        "tolerations": [{"key": "k1"}, {"key": "k2"}],
        "nodeName": "n1"
    }, "metadata": {"finalizers": ["f1"]}});
    let config = json!({"spec": {
        "containers": [{"name": "new", "image": "n:1"}, {"name": "a", "image": "a:2"}],
        "tolerations": [{"key": "k3"}],
        "nodeName": null
    }, "metadata": {"finalizers": ["f2", "f1"]}});
    let want = json!({"spec": {
        "containers": [
            {"name": "a", "image": "a:2", "args": ["x"]},
            {"name": "sidecar", "image": "s:1"},
            {"name": "new", "image": "n:1"}
        ],
        "tolerations": [{"key": "k3"}]
    }, "metadata": {"finalizers": ["f1", "f2"]}});
    assert_eq!(merge(&live, &config, POD), want);
}

#[test]
fn remove_elements_and_leaves() {
    let obj = pod();
    let fields = FieldSet::from_fields_v1(&json!({
        "f:metadata": {"f:finalizers": {"v:\"x\"": {}}},
        "f:spec": {
            "f:containers": {"k:{\"name\":\"app\"}": {"f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {}}}},
            "f:tolerations": {}
        }
    }))
    .unwrap();
    let out = remove(&obj, &fields, POD);
    assert_eq!(out["metadata"]["finalizers"], json!([]));
    assert_eq!(
        out["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 53, "protocol": "UDP"}])
    );
    assert!(out["spec"].get("tolerations").is_none());
    let whole = FieldSet::from_fields_v1(
        &json!({"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {}}}}),
    )
    .unwrap();
    assert_eq!(remove(&obj, &whole, POD)["spec"]["containers"], json!([]));
}

#[test]
fn update_tracks_owners() {
    let created = deployment(3, "nginx:1");
    let managed = update(&[], None, &created, &writer("kubectl-create", "t1"), POD);
    assert_eq!(managed.len(), 1);
    assert_eq!(managed[0]["manager"], "kubectl-create");
    assert_eq!(managed[0]["operation"], "Update");
    assert_eq!(managed[0]["apiVersion"], "apps/v1");
    assert_eq!(managed[0]["time"], "t1");
    assert_eq!(managed[0]["fieldsType"], "FieldsV1");
    assert!(managed[0].get("subresource").is_none());
    assert_eq!(
        FieldSet::from_fields_v1(&managed[0]["fieldsV1"]).unwrap(),
        fields_of(&created, Scope::Main, POD)
    );

    // Another manager scales: it takes .spec.replicas.
    let scaled = deployment(5, "nginx:1");
    let managed = update(
        &managed,
        Some(&created),
        &scaled,
        &writer("scaler", "t2"),
        POD,
    );
    assert_eq!(managed.len(), 2);
    assert!(!entry_fields(&managed[0]).contains(&".spec.replicas".to_string()));
    assert_eq!(managed[0]["time"], "t1");
    assert_eq!(entry_fields(&managed[1]), [".spec.replicas"]);

    // A no-op write by the first manager changes nothing, not even its time.
    let again = update(
        &managed,
        Some(&scaled),
        &scaled,
        &writer("kubectl-create", "t3"),
        POD,
    );
    assert_eq!(again, managed);

    // A status write gets its own entry and leaves the main entries alone.
    let mut with_status = scaled.clone();
    with_status["status"] = json!({"replicas": 5});
    let status_writer = Writer {
        manager: "controller",
        subresource: Some("status"),
        ..writer("", "t4")
    };
    let after = update(&managed, Some(&scaled), &with_status, &status_writer, POD);
    assert_eq!(&after[..2], &managed[..]);
    assert_eq!(after[2]["subresource"], "status");
    assert_eq!(entry_fields(&after[2]), [".status.replicas"]);
}

#[test]
fn update_with_unreadable_list_starts_over() {
    let created = deployment(3, "nginx:1");
    let broken = [json!({"manager": "x", "fieldsV1": {"bogus": {}}})];
    let managed = update(&broken, None, &created, &KUBECTL, POD);
    assert_eq!(managed.len(), 1);
    assert_eq!(managed[0]["manager"], "kubectl");
}

fn applied(replicas: Option<i64>) -> Value {
    let mut config = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1"}]}}}
    });
    if let Some(r) = replicas {
        config["spec"]["replicas"] = json!(r);
    }
    config
}

#[test]
fn first_apply_owns_the_config_fields() {
    let config = applied(Some(3));
    let obj = apply(None, &config, &[], &KUBECTL, false, POD).unwrap();
    let managed = managed_of(&obj);
    assert_eq!(managed.len(), 1);
    assert_eq!(managed[0]["operation"], "Apply");
    assert_eq!(
        FieldSet::from_fields_v1(&managed[0]["fieldsV1"]).unwrap(),
        fields_of(&config, Scope::Main, POD)
    );
    let mut without = obj.clone();
    without["metadata"]
        .as_object_mut()
        .unwrap()
        .shift_remove("managedFields");
    assert_eq!(without, config);
}

#[test]
fn reapply_without_a_field_removes_it() {
    let first = apply(None, &applied(Some(3)), &[], &KUBECTL, false, POD).unwrap();
    let second = apply(
        Some(&first),
        &applied(None),
        &managed_of(&first),
        &KUBECTL,
        false,
        POD,
    )
    .unwrap();
    assert!(second["spec"].get("replicas").is_none());
    assert_eq!(
        second["spec"]["template"]["spec"]["containers"][0]["name"],
        "nginx"
    );
    let fields = entry_fields(&managed_of(&second)[0]);
    assert!(!fields.contains(&".spec.replicas".to_string()));
}

#[test]
fn a_field_another_manager_owns_is_kept() {
    let first = apply(None, &applied(Some(3)), &[], &KUBECTL, false, POD).unwrap();
    // Another manager also sets replicas to the same value: shared ownership.
    let shared = apply(
        Some(&first),
        &applied(Some(3)),
        &managed_of(&first),
        &writer("other", "t2"),
        false,
        POD,
    )
    .unwrap();
    assert_eq!(managed_of(&shared).len(), 2);
    let dropped = apply(
        Some(&shared),
        &applied(None),
        &managed_of(&shared),
        &KUBECTL,
        false,
        POD,
    )
    .unwrap();
    assert_eq!(dropped["spec"]["replicas"], 3);
    let managed = managed_of(&dropped);
    assert_eq!(
        entry_fields(&managed[1]),
        entry_fields(&managed_of(&shared)[1])
    );
}

#[test]
fn apply_conflicts_with_an_updater() {
    let live = deployment(3, "nginx:1");
    let managed = update(
        &[],
        None,
        &live,
        &writer("kubectl-client-side-apply", "t1"),
        POD,
    );
    let mut live = live;
    live["metadata"]["managedFields"] = Value::Array(managed.clone());

    let err = apply(
        Some(&live),
        &applied(Some(5)),
        &managed,
        &KUBECTL,
        false,
        POD,
    )
    .unwrap_err();
    assert_eq!(
        err,
        [Conflict {
            manager: "kubectl-client-side-apply".into(),
            api_version: "apps/v1".into(),
            path: ".spec.replicas".into(),
            subresource: None,
        }]
    );
    assert_eq!(
        conflict_message(&err),
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas"
    );

    let mut config = applied(Some(5));
    config["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    let err = apply(Some(&live), &config, &managed, &KUBECTL, false, POD).unwrap_err();
    assert_eq!(
        conflict_message(&err),
        "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name=\"nginx\"].image"
    );

    // Forced, the applier takes the fields over.
    let forced = apply(Some(&live), &config, &managed, &KUBECTL, true, POD).unwrap();
    assert_eq!(forced["spec"]["replicas"], 5);
    let managed = managed_of(&forced);
    let old_owner = entry_fields(&managed[0]);
    assert!(!old_owner.contains(&".spec.replicas".to_string()));
    assert!(old_owner.contains(&".spec.selector".to_string()));
    assert!(entry_fields(&managed[1]).contains(&".spec.replicas".to_string()));

    // The same value is no conflict: both own it.
    let same = apply(
        Some(&live),
        &applied(Some(3)),
        &live["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .clone(),
        &KUBECTL,
        false,
        POD,
    )
    .unwrap();
    let managed = managed_of(&same);
    assert!(entry_fields(&managed[0]).contains(&".spec.replicas".to_string()));
    assert!(entry_fields(&managed[1]).contains(&".spec.replicas".to_string()));
}

#[test]
fn applier_conflicts_name_no_version() {
    let first = apply(
        None,
        &applied(Some(3)),
        &[],
        &writer("ci", "t1"),
        false,
        POD,
    )
    .unwrap();
    let err = apply(
        Some(&first),
        &applied(Some(4)),
        &managed_of(&first),
        &KUBECTL,
        false,
        POD,
    )
    .unwrap_err();
    assert_eq!(
        conflict_message(&err),
        "Apply failed with 1 conflict: conflict with \"ci\": .spec.replicas"
    );
}

#[test]
fn an_element_another_manager_shares_keeps_its_key() {
    let mut config = applied(None);
    config["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "nginx", "image": "nginx:1"}, {"name": "log", "image": "log:1"}]);
    let first = apply(None, &config, &[], &KUBECTL, false, POD).unwrap();
    // Someone else sets the sidecar's args with an update.
    let mut edited = first.clone();
    edited["spec"]["template"]["spec"]["containers"][1]["args"] = json!(["-v"]);
    let managed = update(
        &managed_of(&first),
        Some(&first),
        &edited,
        &writer("editor", "t2"),
        POD,
    );
    edited["metadata"]["managedFields"] = Value::Array(managed.clone());
    // The applier stops applying the sidecar: its image goes, the element and its name stay.
    let out = apply(
        Some(&edited),
        &applied(None),
        &managed,
        &KUBECTL,
        false,
        POD,
    )
    .unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "nginx", "image": "nginx:1"}, {"name": "log", "args": ["-v"]}])
    );
    // Without the other owner the whole element goes.
    let out = apply(
        Some(&first),
        &applied(None),
        &managed_of(&first),
        &KUBECTL,
        false,
        POD,
    )
    .unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "nginx", "image": "nginx:1"}])
    );
}

#[test]
fn status_apply_touches_only_status() {
    let live = deployment(3, "nginx:1");
    let managed = update(&[], None, &live, &writer("creator", "t1"), POD);
    let status_writer = Writer {
        subresource: Some("status"),
        ..writer("controller", "t2")
    };
    let mut config = applied(Some(9));
    config["status"] = json!({"replicas": 3});
    let out = apply(Some(&live), &config, &managed, &status_writer, false, POD).unwrap();
    assert_eq!(out["spec"]["replicas"], 3);
    assert_eq!(out["status"]["replicas"], 3);
    let managed = managed_of(&out);
    assert_eq!(managed.len(), 2);
    assert_eq!(managed[1]["subresource"], "status");
    assert_eq!(managed[1]["operation"], "Apply");
    assert_eq!(entry_fields(&managed[1]), [".status.replicas"]);
}

#[test]
fn conflict_message_groups_by_manager() {
    let c = |manager: &str, api: &str, path: &str| Conflict {
        manager: manager.into(),
        api_version: api.into(),
        path: path.into(),
        subresource: None,
    };
    let msg = conflict_message(&[c("b", "", ".x"), c("a", "v1", ".y"), c("b", "", ".z")]);
    assert_eq!(
        msg,
        "Apply failed with 3 conflicts: conflicts with \"a\" using v1:\n- .y\nconflicts with \"b\":\n- .x\n- .z"
    );
}

#[test]
fn nothing_panics_on_odd_input() {
    for odd in [
        json!(null),
        json!(1),
        json!([1, {}]),
        json!({"spec": [null]}),
    ] {
        let _ = fields_of(&odd, Scope::Main, POD);
        let _ = merge(&odd, &odd, POD);
        let _ = remove(&odd, &fields_of(&pod(), Scope::Main, POD), POD);
        let _ = update(std::slice::from_ref(&odd), None, &odd, &KUBECTL, POD);
        let _ = apply(Some(&odd), &odd, &[], &KUBECTL, false, POD);
    }
}

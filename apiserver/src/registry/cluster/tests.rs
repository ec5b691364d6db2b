//! Table tests of ConfigMaps and Namespaces (after upstream's validation_test.go cases).

use serde_json::{json, Value};

use super::super::field::FieldError;
use super::{ConfigMapStrategy, NamespaceStrategy};
use crate::registry::Strategy;

fn shown(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn config_maps_as_upstream() {
    let key_msg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
    let cases = [
        (
            json!({"data": {"key.name": "v", "KEY_NAME": "v", ".hidden": "v"}, "binaryData": {"bin": "AAEC"}}),
            vec![],
        ),
        (
            json!({"data": {"..": "v"}}),
            vec!["data[..]: Invalid value: \"..\": must not be '..'".to_string()],
        ),
        (
            json!({"data": {".": "v"}}),
            vec!["data[.]: Invalid value: \".\": must not be '.'".to_string()],
        ),
        (
            json!({"data": {"..data": "v"}}),
            vec!["data[..data]: Invalid value: \"..data\": must not start with '..'".to_string()],
        ),
        (
            json!({"data": {"a/b": "v"}}),
            vec![format!("data[a/b]: Invalid value: \"a/b\": {key_msg}")],
        ),
        (
            json!({"binaryData": {"a b": "AA=="}}),
            vec![format!(
                "binaryData[a b]: Invalid value: \"a b\": {key_msg}"
            )],
        ),
        (
            json!({"data": {"k": "v"}, "binaryData": {"k": "AA=="}}),
            vec![
                "data[k]: Invalid value: \"k\": duplicate of key present in binaryData".to_string(),
            ],
        ),
        (
            json!({"data": {"k": "x".repeat(1024 * 1024 + 1)}}),
            vec!["[]: Too long: may not be more than 1048576 bytes".to_string()],
        ),
    ];
    for (body, want) in cases {
        let mut cm = body.clone();
        cm["metadata"] = json!({"name": "cm", "namespace": "default"});
        let got = shown(&ConfigMapStrategy.validate_create(&cm));
        assert_eq!(
            got,
            want,
            "{}",
            &body.to_string()[..body.to_string().len().min(80)]
        );
    }
}

#[test]
fn immutable_config_maps_stay() {
    let old = json!({"metadata": {"name": "cm"}, "immutable": true, "data": {"k": "v"}});
    assert!(ConfigMapStrategy.validate_update(&old, &old).is_empty());
    let mut changed = old.clone();
    changed["data"]["k"] = "w".into();
    changed["immutable"] = false.into();
    assert_eq!(
        shown(&ConfigMapStrategy.validate_update(&changed, &old)),
        [
            "immutable: Forbidden: field is immutable when `immutable` is set",
            "data: Forbidden: field is immutable when `immutable` is set"
        ]
    );
}

fn namespace(finalizers: Value) -> Value {
    let mut ns = json!({"metadata": {"name": "team-a"}, "spec": {"finalizers": finalizers}});
    NamespaceStrategy.default(&mut ns);
    NamespaceStrategy.prepare_for_create(&mut ns);
    ns
}

#[test]
fn namespaces_as_upstream() {
    let ns = namespace(json!(["example.com/cleanup"]));
    assert_eq!(
        ns["spec"]["finalizers"],
        json!(["example.com/cleanup", "kubernetes"])
    );
    assert!(NamespaceStrategy.validate_create(&ns).is_empty());
    assert_eq!(
        shown(&NamespaceStrategy.validate_create(&namespace(json!(["cleanup"])))),
        ["spec.finalizers: Invalid value: \"cleanup\": name is neither a standard finalizer name nor is it fully qualified"]
    );
    let dotted = json!({"metadata": {"name": "team.a"}});
    assert_eq!(
        shown(&NamespaceStrategy.validate_create(&dotted)),
        ["metadata.name: Invalid value: \"team.a\": must not contain dots"]
    );
    let mut terminating = ns.clone();
    terminating["status"]["phase"] = "Terminating".into();
    assert_eq!(
        shown(&NamespaceStrategy.validate_status_update(&terminating, &ns)),
        ["status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"]
    );
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z".into();
    assert!(NamespaceStrategy
        .validate_status_update(&terminating, &ns)
        .is_empty());
    let mut unset = ns.clone();
    unset["status"] = json!({});
    NamespaceStrategy.prepare_for_status_update(&mut unset, &ns, chrono::Utc::now());
    assert_eq!(unset["status"]["phase"], "Active");
}

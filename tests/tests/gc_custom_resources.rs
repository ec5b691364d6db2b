//! Garbage collection and namespace deletion with custom resources (#15): custom objects own
//! built-in ones and are owned by them, with background and foreground deletion, as upstream's
//! collector does once a CRD is Established; a namespace's custom objects go with it.

use std::time::Duration;

use tinykube_tests::{eventually, ApiServer, ControllerManager};

/// The upstream docs' CronTab, namespaced.
const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                cronSpec:
                  type: string
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames:
    - ct
";

/// A cluster with the collector (monitors resynced every second), the namespace controller
/// and the CronTab CRD established.
fn start() -> (ApiServer, ControllerManager) {
    let server = ApiServer::start().unwrap();
    let cm = ControllerManager::start(
        &server,
        &[
            "--controllers=garbagecollector,namespace",
            "--gc-resync-period=1s",
        ],
    )
    .unwrap();
    server.kubectl_stdin(&["apply", "-f", "-"], Some(CRD)).ok();
    server
        .kubectl(&[
            "wait",
            "--for",
            "condition=established",
            "crd/crontabs.stable.example.com",
        ])
        .ok();
    (server, cm)
}

fn create(server: &ApiServer, text: &str) {
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(text))
        .ok();
}

fn exists(server: &ApiServer, what: &[&str]) -> bool {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    server.kubectl(&args).success
}

fn uid(server: &ApiServer, what: &[&str]) -> String {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend_from_slice(&["-o", "jsonpath={.metadata.uid}"]);
    server.kubectl(&args).ok().to_string()
}

/// `ownerReferences` naming one owner, for a manifest's metadata.
fn owned_by(api_version: &str, kind: &str, name: &str, uid: &str, block: bool) -> String {
    format!("  ownerReferences:\n  - apiVersion: {api_version}\n    kind: {kind}\n    name: {name}\n    uid: {uid}\n    blockOwnerDeletion: {block}\n")
}

fn crontab(name: &str, metadata: &str) -> String {
    format!("apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: {name}\n{metadata}spec:\n  cronSpec: \"* * * * */5\"\n")
}

fn configmap(name: &str, metadata: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{metadata}data:\n  k: v\n")
}

#[test]
fn a_custom_owner_takes_its_dependents_along() {
    let (server, _cm) = start();
    create(&server, &crontab("nightly", ""));
    let owner = uid(&server, &["crontab", "nightly"]);
    let by_nightly = owned_by("stable.example.com/v1", "CronTab", "nightly", &owner, false);
    create(&server, &configmap("nightly-config", &by_nightly));
    create(&server, &crontab("nightly-child", &by_nightly));

    server.kubectl(&["delete", "crontab", "nightly"]).ok();
    assert!(eventually(Duration::from_secs(20), || !exists(
        &server,
        &["configmap", "nightly-config"]
    )));
    assert!(eventually(Duration::from_secs(20), || !exists(
        &server,
        &["crontab", "nightly-child"]
    )));
}

#[test]
fn a_custom_object_goes_with_its_built_in_owner() {
    let (server, _cm) = start();
    server
        .kubectl(&["create", "configmap", "settings", "--from-literal=k=v"])
        .ok();
    let owner = uid(&server, &["configmap", "settings"]);
    create(
        &server,
        &crontab(
            "from-settings",
            &owned_by("v1", "ConfigMap", "settings", &owner, false),
        ),
    );
    // Whether or not a resync has started the monitor of crontabs yet: once it has listed
    // them, the collector looks at their owners again.
    server.kubectl(&["delete", "configmap", "settings"]).ok();
    assert!(eventually(Duration::from_secs(20), || !exists(
        &server,
        &["crontab", "from-settings"]
    )));
}

#[test]
fn foreground_deletion_of_a_custom_owner_waits_for_its_dependents() {
    let (server, _cm) = start();
    create(&server, &crontab("hourly", ""));
    let owner = uid(&server, &["crontab", "hourly"]);
    let blocking = owned_by("stable.example.com/v1", "CronTab", "hourly", &owner, true);
    create(
        &server,
        &configmap(
            "held",
            &format!("  finalizers: [example.com/hold]\n{blocking}"),
        ),
    );
    create(&server, &configmap("free", &blocking));
    server
        .kubectl(&[
            "delete",
            "crontab",
            "hourly",
            "--cascade=foreground",
            "--wait=false",
        ])
        .ok();
    assert!(eventually(Duration::from_secs(20), || !exists(
        &server,
        &["configmap", "free"]
    )));
    let finalizers = server.kubectl(&[
        "get",
        "crontab",
        "hourly",
        "-o",
        "jsonpath={.metadata.finalizers}",
    ]);
    assert_eq!(finalizers.ok(), "[\"foregroundDeletion\"]");
    server
        .kubectl(&[
            "patch",
            "configmap",
            "held",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ])
        .ok();
    assert!(eventually(Duration::from_secs(20), || !exists(
        &server,
        &["crontab", "hourly"]
    )));
}

#[test]
fn orphan_deletion_of_a_custom_owner_keeps_its_dependents() {
    let (server, _cm) = start();
    create(&server, &crontab("weekly", ""));
    let owner = uid(&server, &["crontab", "weekly"]);
    create(
        &server,
        &configmap(
            "weekly-config",
            &owned_by("stable.example.com/v1", "CronTab", "weekly", &owner, true),
        ),
    );
    server
        .kubectl(&["delete", "crontab", "weekly", "--cascade=orphan"])
        .ok();
    assert!(eventually(Duration::from_secs(20), || !exists(
        &server,
        &["crontab", "weekly"]
    )));
    let refs = server.kubectl(&[
        "get",
        "configmap",
        "weekly-config",
        "-o",
        "jsonpath={.metadata.ownerReferences}",
    ]);
    assert_eq!(refs.ok(), "");
}

#[test]
fn deleting_a_namespace_deletes_its_custom_objects() {
    let (server, _cm) = start();
    server.kubectl(&["create", "namespace", "team"]).ok();
    server
        .kubectl_stdin(
            &["create", "-n", "team", "-f", "-"],
            Some(&crontab("in-team", "")),
        )
        .ok();
    server.kubectl(&["delete", "namespace", "team"]).ok();
    assert!(!exists(&server, &["namespace", "team"]));
    let left = server.kubectl(&["get", "crontabs", "-A", "-o", "name"]);
    assert_eq!(left.ok(), "");
}

//! Storage as a user meets it: static PersistentVolumes bound to claims (both Bound, as
//! `kubectl get pv/pvc` shows them), the default `standard` class provisioning a volume once a
//! pod uses its claim (WaitForFirstConsumer), Immediate binding, Retain and Delete reclaim,
//! the protection finalizers, a pod that waits in ContainerCreating for its claim, files that
//! outlive the pod that wrote them, validation messages, and a controller manager killed in
//! the middle of provisioning that makes no volume twice.

use std::time::Duration;

use serde_json::Value;
use tinykube_tests::{
    eventually, lift_not_ready_taint, table_rows, ApiServer, ControllerManager, Kubelet, Scheduler,
};

const WAIT: Duration = Duration::from_secs(30);
const STORAGE_CONTROLLERS: &str =
    "--controllers=persistentvolume-binder,persistentvolume-protection,persistentvolumeclaim-protection";

fn json(server: &ApiServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = server.kubectl(&all);
    serde_json::from_str(&out.stdout).unwrap_or(Value::Null)
}

fn apply(server: &ApiServer, yaml: &str) {
    server.kubectl_stdin(&["apply", "-f", "-"], Some(yaml)).ok();
}

fn phase(server: &ApiServer, kind: &str, name: &str) -> String {
    json(server, &["get", kind, name])["status"]["phase"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn host_path_pv(name: &str, size: &str, class: &str, policy: &str) -> String {
    format!(
        "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: {name}\nspec:\n  storageClassName: {class}\n  capacity:\n    storage: {size}\n  accessModes: [ReadWriteOnce]\n  persistentVolumeReclaimPolicy: {policy}\n  hostPath:\n    path: /mnt/{name}\n"
    )
}

fn claim(name: &str, size: &str, class: Option<&str>) -> String {
    let class = class.map_or(String::new(), |c| format!("  storageClassName: \"{c}\"\n"));
    format!(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {name}\nspec:\n{class}  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: {size}\n"
    )
}

fn pod_with_claim(name: &str, claim: &str, node: Option<&str>) -> String {
    let node = node.map_or(String::new(), |n| format!("  nodeName: {n}\n"));
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n{node}  terminationGracePeriodSeconds: 1\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: [sh, -c, \"sleep 3600\"]\n    volumeMounts:\n    - name: data\n      mountPath: /data\n  volumes:\n  - name: data\n    persistentVolumeClaim:\n      claimName: {claim}\n"
    )
}

/// The messages of the events about `name` with `reason`.
fn events(server: &ApiServer, name: &str, reason: &str) -> Vec<String> {
    let list = json(
        server,
        &[
            "get",
            "events",
            "--field-selector",
            &format!("involvedObject.name={name},reason={reason}"),
        ],
    );
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["message"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn static_volumes_bind_and_are_reclaimed_by_policy() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &[STORAGE_CONTROLLERS]).unwrap();

    // The default class of a new cluster, as kind's.
    let sc = table_rows(server.kubectl(&["get", "sc"]).ok());
    assert_eq!(
        sc[0],
        [
            "NAME",
            "PROVISIONER",
            "RECLAIMPOLICY",
            "VOLUMEBINDINGMODE",
            "ALLOWVOLUMEEXPANSION",
            "AGE"
        ]
    );
    assert_eq!(
        sc[1][..5],
        [
            "standard",
            "(default)",
            "rancher.io/local-path",
            "Delete",
            "WaitForFirstConsumer"
        ]
    );

    // Validation, with upstream's messages.
    let no_source = "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: bad\nspec:\n  capacity:\n    storage: 1Gi\n  accessModes: [ReadWriteOnce]\n";
    let refused = server.kubectl_stdin(&["create", "-f", "-"], Some(no_source));
    assert!(
        refused.fails().contains(
            "PersistentVolume \"bad\" is invalid: spec: Required value: must specify a volume type"
        ),
        "{}",
        refused.stderr
    );
    let no_size = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: bad\nspec:\n  accessModes: [ReadWriteOnce]\n";
    let refused = server.kubectl_stdin(&["create", "-f", "-"], Some(no_size));
    assert!(
        refused
            .fails()
            .contains("spec.resources[storage]: Required value"),
        "{}",
        refused.stderr
    );

    // Static binding: the smallest volume that fits, both sides Bound.
    apply(
        &server,
        &host_path_pv("pv-small", "1Gi", "manual", "Retain"),
    );
    apply(&server, &host_path_pv("pv-big", "5Gi", "manual", "Retain"));
    apply(&server, &claim("claim1", "500Mi", Some("manual")));
    assert!(eventually(WAIT, || phase(&server, "pvc", "claim1") == "Bound"));
    assert!(eventually(WAIT, || phase(&server, "pv", "pv-small") == "Bound"));
    assert_eq!(phase(&server, "pv", "pv-big"), "Available");
    let pvc = json(&server, &["get", "pvc", "claim1"]);
    assert_eq!(pvc["spec"]["volumeName"], "pv-small");
    assert_eq!(
        pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"],
        "yes"
    );
    assert_eq!(
        pvc["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"],
        "yes"
    );
    assert_eq!(
        pvc["metadata"]["finalizers"],
        serde_json::json!(["kubernetes.io/pvc-protection"])
    );
    let pvs = table_rows(server.kubectl(&["get", "pv"]).ok());
    assert_eq!(
        pvs[0],
        [
            "NAME",
            "CAPACITY",
            "ACCESS",
            "MODES",
            "RECLAIM",
            "POLICY",
            "STATUS",
            "CLAIM",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "REASON",
            "AGE"
        ]
    );
    let small = pvs.iter().find(|r| r[0] == "pv-small").unwrap();
    // (REASON is empty, so the row has one cell fewer than the header.)
    assert_eq!(
        small[1..8],
        [
            "1Gi",
            "RWO",
            "Retain",
            "Bound",
            "default/claim1",
            "manual",
            "<unset>"
        ][..]
    );
    let pvcs = table_rows(server.kubectl(&["get", "pvc", "-o", "wide"]).ok());
    assert_eq!(
        pvcs[0],
        [
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS",
            "MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE",
            "VOLUMEMODE"
        ]
    );
    assert_eq!(
        pvcs[1][..7],
        ["claim1", "Bound", "pv-small", "1Gi", "RWO", "manual", "<unset>"]
    );
    assert_eq!(pvcs[1][8], "Filesystem");

    // A bound claim's spec is immutable but for its request.
    let changed = server.kubectl(&[
        "patch",
        "pvc",
        "claim1",
        "-p",
        r#"{"spec":{"accessModes":["ReadWriteMany"]}}"#,
    ]);
    assert!(
        changed.fails().contains("spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"),
        "{}",
        changed.stderr
    );

    // No class, no volume: FailedBinding.
    apply(&server, &claim("orphan", "1Gi", Some("")));
    assert!(eventually(WAIT, || events(
        &server,
        "orphan",
        "FailedBinding"
    )
    .contains(
        &"no persistent volumes available for this claim and no storage class is set".to_string()
    )));
    assert_eq!(phase(&server, "pvc", "orphan"), "Pending");

    // Retain: the claim goes (no pod uses it), the volume is Released and kept.
    server
        .kubectl(&["delete", "pvc", "claim1", "--wait=false"])
        .ok();
    assert!(eventually(WAIT, || !server
        .kubectl(&["get", "pvc", "claim1"])
        .success));
    assert!(eventually(WAIT, || phase(&server, "pv", "pv-small") == "Released"));

    // Delete on a volume no provisioner here made: Failed, with upstream's warning.
    apply(&server, &host_path_pv("pv-del", "1Gi", "other", "Delete"));
    apply(&server, &claim("claim2", "1Gi", Some("other")));
    assert!(eventually(WAIT, || phase(&server, "pv", "pv-del") == "Bound"));
    server.kubectl(&["delete", "pvc", "claim2"]).ok();
    assert!(eventually(WAIT, || phase(&server, "pv", "pv-del") == "Failed"));
    assert!(eventually(WAIT, || {
        events(&server, "pv-del", "VolumeFailedDelete").contains(
        &"error getting deleter volume plugin for volume \"pv-del\": no deletable volume plugin matched".to_string()
    )
    }));

    // A volume that is not bound loses its protection and goes.
    server.kubectl(&["delete", "pv", "pv-big"]).ok();
    assert!(!server.kubectl(&["get", "pv", "pv-big"]).success);
}

#[test]
fn the_default_class_provisions_for_the_first_consumer_and_data_outlives_pods() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &[STORAGE_CONTROLLERS]).unwrap();
    let _kubelet = Kubelet::start(
        &server,
        &[
            "--hostname-override",
            "worker0",
            "--pod-cidr",
            "10.244.1.0/24",
        ],
    )
    .unwrap();
    assert!(eventually(WAIT, || server
        .kubectl(&["get", "node", "worker0"])
        .success));
    lift_not_ready_taint(&server, "worker0");
    let _scheduler = Scheduler::start(&server, &[]).unwrap();

    // No class named: the default one, which waits for a pod.
    apply(&server, &claim("data", "1Gi", None));
    let pvc = json(&server, &["get", "pvc", "data"]);
    assert_eq!(pvc["spec"]["storageClassName"], "standard");
    assert!(eventually(WAIT, || events(
        &server,
        "data",
        "WaitForFirstConsumer"
    )
    .contains(
        &"waiting for first consumer to be created before binding".to_string()
    )));
    assert_eq!(phase(&server, "pvc", "data"), "Pending");

    // Scheduling problems are named as upstream names them.
    apply(&server, &pod_with_claim("lost", "nope", None));
    assert!(eventually(WAIT, || json(&server, &["get", "pod", "lost"])
        ["status"]["conditions"][0]["message"]
        .as_str()
        .is_some_and(
            |m| m.contains("persistentvolumeclaim \"nope\" not found")
        )));

    // A pod: the scheduler selects its node, the volume is provisioned there and bound.
    apply(&server, &pod_with_claim("writer", "data", None));
    assert!(eventually(WAIT, || phase(&server, "pod", "writer") == "Running"));
    let pvc = json(&server, &["get", "pvc", "data"]);
    let uid = pvc["metadata"]["uid"].as_str().unwrap();
    let volume = format!("pvc-{uid}");
    assert_eq!(pvc["status"]["phase"], "Bound");
    assert_eq!(pvc["spec"]["volumeName"], volume.as_str());
    assert_eq!(
        pvc["metadata"]["annotations"]["volume.kubernetes.io/selected-node"],
        "worker0"
    );
    assert_eq!(
        pvc["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"],
        "rancher.io/local-path"
    );
    let pv = json(&server, &["get", "pv", &volume]);
    assert_eq!(
        pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"],
        "rancher.io/local-path"
    );
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete");
    assert_eq!(
        pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
            ["values"],
        serde_json::json!(["worker0"])
    );
    assert_eq!(
        events(&server, "data", "ProvisioningSucceeded"),
        [format!("Successfully provisioned volume {volume}")]
    );
    assert!(!events(&server, "data", "ExternalProvisioning").is_empty());

    // A file written through kubectl exec outlives the pod.
    server
        .kubectl(&["exec", "writer", "--", "sh", "-c", "echo kept > /data/file"])
        .ok();
    server.kubectl(&["delete", "pod", "writer"]).ok();
    apply(&server, &pod_with_claim("reader", "data", None));
    assert!(eventually(WAIT, || phase(&server, "pod", "reader") == "Running"));
    assert_eq!(
        server
            .kubectl(&["exec", "reader", "--", "cat", "/data/file"])
            .ok()
            .trim(),
        "kept"
    );

    // A claim in use stays Terminating until its pod goes; then the volume goes too (Delete).
    server
        .kubectl(&["delete", "pvc", "data", "--wait=false"])
        .ok();
    let rows = table_rows(server.kubectl(&["get", "pvc", "data"]).ok());
    assert_eq!(rows[1][1], "Terminating");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        server.kubectl(&["get", "pvc", "data"]).success,
        "held by its pod"
    );
    server.kubectl(&["delete", "pod", "reader"]).ok();
    assert!(eventually(WAIT, || !server
        .kubectl(&["get", "pvc", "data"])
        .success));
    assert!(eventually(WAIT, || !server
        .kubectl(&["get", "pv", &volume])
        .success));
}

#[test]
fn a_pod_waits_in_container_creating_for_its_claim() {
    let server = ApiServer::start().unwrap();
    let _kubelet = Kubelet::start(
        &server,
        &[
            "--hostname-override",
            "worker0",
            "--pod-cidr",
            "10.244.1.0/24",
        ],
    )
    .unwrap();
    apply(&server, &pod_with_claim("patient", "late", Some("worker0")));
    assert!(eventually(WAIT, || {
        events(&server, "patient", "FailedMount").iter().any(|m| m.contains(
        "failed to process volumes=[data]: error processing PVC default/late: failed to fetch PVC from API server: persistentvolumeclaims \"late\" not found"
    ))
    }));
    let rows = table_rows(server.kubectl(&["get", "pod", "patient"]).ok());
    assert_eq!(rows[1][2], "ContainerCreating");

    // The claim appears, unbound: still waiting. Immediate binding to a static volume: it runs.
    apply(&server, &claim("late", "1Gi", Some("")));
    assert!(eventually(WAIT, || events(
        &server,
        "patient",
        "FailedMount"
    )
    .iter()
    .any(|m| m.ends_with("PVC is not bound"))));
    assert_eq!(phase(&server, "pod", "patient"), "Pending");
    let _cm = ControllerManager::start(&server, &[STORAGE_CONTROLLERS]).unwrap();
    apply(&server, &host_path_pv("pv-late", "1Gi", "\"\"", "Retain"));
    assert!(eventually(WAIT, || phase(&server, "pvc", "late") == "Bound"));
    assert!(eventually(WAIT, || phase(&server, "pod", "patient") == "Running"));
}

#[test]
fn a_controller_manager_killed_while_provisioning_makes_each_volume_once() {
    let server = ApiServer::start().unwrap();
    let class = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: fast\nprovisioner: rancher.io/local-path\nvolumeBindingMode: Immediate\n";
    apply(&server, class);
    const CLAIMS: usize = 20;
    let all: String = (0..CLAIMS)
        .map(|i| format!("---\n{}", claim(&format!("c{i}"), "1Gi", Some("fast"))))
        .collect();
    apply(&server, &all);
    let mut cm = ControllerManager::start(&server, &[STORAGE_CONTROLLERS]).unwrap();
    let volumes = |server: &ApiServer| {
        json(server, &["get", "pv"])["items"]
            .as_array()
            .map_or(0, Vec::len)
    };
    assert!(eventually(WAIT, || volumes(&server) > 0));
    cm.kill9();
    cm.restart().unwrap();
    let bound = |server: &ApiServer| {
        json(server, &["get", "pvc"])["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["status"]["phase"] == "Bound")
            .count()
    };
    assert!(eventually(WAIT, || bound(&server) == CLAIMS));
    let pvs = json(&server, &["get", "pv"]);
    let items = pvs["items"].as_array().unwrap();
    assert_eq!(items.len(), CLAIMS, "one volume per claim");
    for pv in items {
        let uid = pv["spec"]["claimRef"]["uid"].as_str().unwrap();
        assert_eq!(pv["metadata"]["name"], format!("pvc-{uid}").as_str());
        assert_eq!(pv["status"]["phase"], "Bound");
    }
}

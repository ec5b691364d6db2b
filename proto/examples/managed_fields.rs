//! What keeping `metadata.managedFields` costs per write: the entry of a pod create, of a label
//! change on it, and the field-set steps behind them. Prints microseconds per operation.
//!
//! `cargo run --release -p tinykube-proto --example managed_fields`

use std::time::Instant;

use serde_json::{json, Value};
use tinykube_proto::managed::{self, FieldSet, Scope, TypeInfo, Writer};

const ROUNDS: u32 = 20_000;
const POD: TypeInfo = TypeInfo::built_in(true);

/// Microseconds per call of `f`.
fn time(what: &str, mut f: impl FnMut()) {
    let start = Instant::now();
    for _ in 0..ROUNDS {
        f();
    }
    let micros = start.elapsed().as_secs_f64() * 1e6 / f64::from(ROUNDS);
    println!("{what:<28} {micros:>7.1} us");
}

/// A defaulted pod as the API server stores it.
fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u",
            "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"app": "x", "tier": "y"}},
        "spec": {
            "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "securityContext": {},
            "schedulerName": "default-scheduler", "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300}]},
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    })
}

fn main() {
    let pod = pod();
    let writer = Writer {
        manager: "bench",
        api_version: "v1",
        subresource: None,
        time: "2026-01-01T00:00:00Z",
    };
    let created = managed::update(&[], None, &pod, &writer, POD);
    let mut labeled = pod.clone();
    labeled["metadata"]["labels"]["new"] = json!("z");
    let other = Writer {
        manager: "other",
        ..writer
    };
    println!(
        "pod of {} bytes, its managedFields {} bytes",
        pod.to_string().len(),
        Value::from(created.clone()).to_string().len()
    );
    time("update entry: create", || {
        managed::update(&[], None, &pod, &writer, POD);
    });
    time("update entry: label change", || {
        managed::update(&created, Some(&pod), &labeled, &other, POD);
    });
    time("update entry: no change", || {
        managed::update(&created, Some(&pod), &pod, &other, POD);
    });
    let fields = managed::fields_of(&pod, Scope::Main, POD);
    let encoded = fields.to_fields_v1();
    time("fields_of", || {
        managed::fields_of(&pod, Scope::Main, POD);
    });
    time("FieldsV1 encode", || {
        fields.to_fields_v1();
    });
    time("FieldsV1 parse", || {
        let _ = FieldSet::from_fields_v1(&encoded);
    });
    time("union", || {
        fields.union(&fields);
    });
}

//! What the Job tests share: a cluster that runs Job pods (API server, the job controller with a
//! short failure back-off, a scheduler and one kubelet), manifests created through kubectl, and
//! the Job read back as JSON.

use std::time::Duration;

use serde_json::Value;

use crate::{eventually, lift_not_ready_taint, ApiServer, ControllerManager, Kubelet, Scheduler};

/// How long a Job test waits for a state.
pub const WAIT: Duration = Duration::from_secs(30);

/// An API server, the job controller (first failure back-off `backoff`), a scheduler and a
/// kubelet `worker0` ready for pods.
pub fn cluster(backoff: &str) -> (ApiServer, ControllerManager, Scheduler, Kubelet) {
    let server = ApiServer::start().unwrap();
    let flag = format!("--job-pod-failure-backoff={backoff}");
    let cm = ControllerManager::start(&server, &["--controllers=job", &flag]).unwrap();
    let scheduler = Scheduler::start(&server, &[]).unwrap();
    let kubelet = Kubelet::start(&server, &["--hostname-override", "worker0"]).unwrap();
    assert!(eventually(WAIT, || server
        .kubectl(&["get", "node", "worker0"])
        .success));
    lift_not_ready_taint(&server, "worker0");
    (server, cm, scheduler, kubelet)
}

/// `kubectl ARGS -o json`, which must succeed.
#[track_caller]
pub fn json(server: &ApiServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(server.kubectl(&all).ok()).expect("kubectl printed JSON")
}

/// `kubectl create -f -` of `manifest`, which must succeed.
#[track_caller]
pub fn create(server: &ApiServer, manifest: &str) {
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(manifest))
        .ok();
}

/// The Job's condition of type `ty`, whatever its status.
pub fn condition(job: &Value, ty: &str) -> Option<Value> {
    job["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
        .cloned()
}

/// Whether the Job's condition `ty` is True.
pub fn is_true(job: &Value, ty: &str) -> bool {
    condition(job, ty).is_some_and(|c| c["status"] == "True")
}

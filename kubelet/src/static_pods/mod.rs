//! Static pods and their mirror pods. One loop serves every node: each second it stats the
//! manifest directories (re-reading on a change, and in full every `--file-check-frequency`),
//! polls `--manifest-url` every `--http-check-frequency`, starts and stops static pods to match,
//! and makes each node's mirror pods agree: a missing mirror is created (ownerReference to the
//! Node, `kubernetes.io/config.mirror`), a stale one (other hash) deleted, one without a static
//! pod deleted, and each shows its static pod's status. Static pods keep running while the API
//! server is away; their mirrors come back when it does. The polls of files and the URL are on
//! tokio's clock, not the cluster's: they watch the world outside the cluster (a file written
//! by a test shows up without an advance of a manual clock); the pods' times go by the clock.

pub mod source;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::json;
use tinykube_client::events::EventType;
use tinykube_client::{Api, Patch};
use tokio_util::sync::CancellationToken;

use crate::lifecycle::{Facts, Input, Stage};
use crate::pods::{is_mirror, MIRROR_ANNOTATION};
use crate::{Kubelet, NodeState, PodRecord, BY_NODE};
use source::{Origin, StaticPod, SEEN_ANNOTATION};

/// How often directories are stat'ed for changes.
const POLL: Duration = Duration::from_secs(1);
/// A deleted mirror comes back after this long. At once would race `kubectl delete`: it reads
/// the pod (still the old one), then lists to wait for its deletion, and a new mirror of the
/// same name found by that list makes it wait forever.
const MIRROR_RECREATE_AFTER: Duration = Duration::from_secs(1);

/// A static pod running on a node.
#[derive(Debug, Clone)]
pub struct Running {
    /// The defaulted pod, with `config.seen` (its UID is the hash).
    pub pod: Arc<Pod>,
    pub hash: String,
    /// The mirror (UID) and the status (stage, containers' version) last written to it.
    pub mirror_written: Option<(String, Mark)>,
    /// When its last mirror went away.
    pub mirror_gone_at: Option<Instant>,
}

/// Which status of a static pod was written: its stage and its containers' version.
pub type Mark = (Stage, u64);

fn mark(rec: &PodRecord) -> Mark {
    let version = rec.facts.run.as_ref().map(|h| h.run().version).unwrap_or(0);
    (rec.stage.clone(), version)
}

/// Per-node state of the file source.
#[derive(Default)]
struct FileSource {
    snapshot: Option<source::Snapshot>,
    last_read: Option<Instant>,
    pods: Vec<StaticPod>,
}

/// Broken files already reported (path, mtime, size): once per version of a file, even when
/// simulated nodes share the directory.
type Reported = HashSet<(PathBuf, SystemTime, u64)>;

/// The last good answer of `--manifest-url`.
type HttpPods = Arc<std::sync::Mutex<Option<Vec<(serde_json::Value, Pod)>>>>;

/// Fetch the manifest URL every `--http-check-frequency` in the background (a slow server
/// never delays the file source), keeping the last good answer.
async fn poll_url(k: Arc<Kubelet>, url: String, out: HttpPods, shutdown: CancellationToken) {
    let Ok(client) = tinykube_client::http_builder(&url)
        .timeout(Duration::from_secs(10))
        .build()
    else {
        return;
    };
    let mut ticker = tokio::time::interval(k.config.http_check_frequency);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {}
        }
        match source::fetch(&client, &url).await {
            Ok(pods) => {
                *out.lock().unwrap_or_else(|e| e.into_inner()) = Some(pods);
                k.wake_static.notify_one();
            }
            Err(e) => tracing::warn!(url, error = %e, "could not process manifest URL"),
        }
    }
}

/// Run until `shutdown`.
pub(crate) async fn run(k: Arc<Kubelet>, shutdown: CancellationToken) {
    let mut files: HashMap<usize, FileSource> = HashMap::new();
    let mut reported = Reported::new();
    let http_pods = HttpPods::default();
    if let Some(url) = k.config.manifest_url.clone() {
        tokio::spawn(poll_url(
            k.clone(),
            url,
            http_pods.clone(),
            shutdown.clone(),
        ));
    }
    let mut ticker = tokio::time::interval(POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {}
            _ = k.wake_static.notified() => {}
        }
        let now = Instant::now();
        let http_pods = http_pods.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut scans: HashMap<PathBuf, Option<source::Snapshot>> = HashMap::new();
        let mut broken = Vec::new();
        for (i, n) in k.nodes.iter().enumerate() {
            let mut desired = Vec::new();
            if let Some(path) = n.config.manifest_path.as_ref() {
                let scan = scans
                    .entry(path.clone())
                    .or_insert_with(|| source::scan(path).ok())
                    .clone();
                let fs = files.entry(i).or_default();
                let failed =
                    poll_files(fs, scan, &n.config.name, k.config.file_check_frequency, now);
                for (path, mtime, len, err) in failed {
                    if reported.insert((path.clone(), mtime, len)) {
                        broken.push((i, path, err));
                    }
                }
                desired.extend(fs.pods.iter().cloned());
            }
            if let (Some(pods), Some(url)) = (&http_pods, k.config.manifest_url.as_deref()) {
                for (raw, pod) in pods {
                    match source::prepare(raw, pod.clone(), &n.config.name, Origin::Url(url)) {
                        Ok(s) => desired.push(s),
                        Err(e) => tracing::warn!(url, error = %e, "could not process manifest URL"),
                    }
                }
            }
            apply(&k, n, desired);
        }
        reported.retain(|(p, m, l)| {
            scans
                .values()
                .flatten()
                .any(|snap| snap.get(p) == Some(&(*m, *l)))
        });
        for (i, path, err) in broken {
            let msg = format!(
                "Could not process manifest file {:?}: {err}",
                path.display().to_string()
            );
            tracing::error!(node = %k.nodes[i].config.name, path = %path.display(), error = %err, "could not process manifest file");
            k.node_event(
                &k.nodes[i],
                EventType::Warning,
                "FailedToLoadStaticPod",
                &msg,
            )
            .await;
        }
        if k.pods.ready() {
            sync_all_mirrors(&k).await;
        }
    }
}

/// Update one node's file pods if the directory changed or a full re-read is due; returns the
/// files that could not be read into pods.
fn poll_files(
    fs: &mut FileSource,
    scan: Option<source::Snapshot>,
    node: &str,
    every: Duration,
    now: Instant,
) -> Vec<(PathBuf, SystemTime, u64, source::ManifestError)> {
    // An unreadable path changes nothing (the pods keep running), as upstream.
    let Some(scan) = scan else {
        return Vec::new();
    };
    let due = fs.last_read.is_none_or(|t| now.duration_since(t) >= every);
    if !due && fs.snapshot.as_ref() == Some(&scan) {
        return Vec::new();
    }
    let mut pods = Vec::new();
    let mut failed = Vec::new();
    for (path, (mtime, len)) in &scan {
        match source::read_file(path, node) {
            Ok(p) => pods.extend(p),
            Err(e) => failed.push((path.clone(), *mtime, *len, e)),
        }
    }
    fs.snapshot = Some(scan);
    fs.last_read = Some(now);
    fs.pods = pods;
    failed
}

/// Start, replace and stop a node's static pods to match `desired`.
fn apply(k: &Arc<Kubelet>, n: &Arc<NodeState>, desired: Vec<StaticPod>) {
    let mut local = n.local();
    let wanted: BTreeMap<String, StaticPod> = desired
        .into_iter()
        .map(|s| (crate::reflector_key(&s.pod), s))
        .collect();
    let stale: Vec<String> = local
        .statics
        .iter()
        .filter(|(key, r)| wanted.get(*key).is_none_or(|s| s.hash != r.hash))
        .map(|(key, _)| key.clone())
        .collect();
    for key in stale {
        if let Some(r) = local.statics.remove(&key) {
            tracing::info!(pod = %key, "static pod stopped");
            local.forget(&r.hash);
        }
    }
    let now = k.clock.timestamp();
    for (key, s) in wanted {
        if local.statics.contains_key(&key) {
            continue;
        }
        let mut pod = s.pod;
        pod.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(SEEN_ANNOTATION.into(), now.to_string());
        let host_network = pod
            .spec
            .as_ref()
            .and_then(|s| s.host_network)
            .unwrap_or(false);
        let node_ip = n.config.node_ip.to_string();
        let pod_ip = if host_network {
            None
        } else {
            local.ips.allocate()
        };
        let stage = Stage::Pending
            .next(&Input::Admit)
            .and_then(|s| s.next(&Input::Started))
            .unwrap_or(Stage::Running);
        let pod = Arc::new(pod);
        let ip = pod_ip.clone().unwrap_or_else(|| node_ip.clone());
        let handle = crate::runner::start(k, n, pod.clone(), &ip, &node_ip);
        local.pods.insert(
            s.hash.clone(),
            PodRecord {
                stage,
                requests: crate::admission::pod_requests(&pod),
                owns_ip: pod_ip.is_some(),
                facts: Facts {
                    host_ip: node_ip.clone(),
                    pod_ip: ip,
                    started_at: now,
                    run: Some(handle),
                },
                is_static: true,
                writing: 0,
            },
        );
        tracing::info!(pod = %key, "static pod started");
        local.statics.insert(
            key,
            Running {
                pod,
                hash: s.hash,
                mirror_written: None,
                mirror_gone_at: None,
            },
        );
    }
}

/// One change to the API to bring a mirror in line.
enum Action {
    Create(Box<Pod>, String),
    Delete {
        name: String,
        namespace: String,
        uid: String,
    },
    Status {
        key: String,
        mirror: Arc<Pod>,
        status: serde_json::Value,
        stage: Mark,
    },
}

/// What a node's mirrors need.
fn plan(k: &Kubelet, n: &NodeState) -> Vec<Action> {
    let api_pods = k.pods.by_index(BY_NODE, &n.config.name);
    let local = n.local();
    let mut out = Vec::new();
    let mut by_key: HashMap<String, Arc<Pod>> = HashMap::new();
    for p in api_pods {
        let key = crate::reflector_key(p.as_ref());
        if is_mirror(&p)
            && !local.statics.contains_key(&key)
            && p.metadata.deletion_timestamp.is_none()
        {
            out.push(delete_action(&p));
        }
        by_key.insert(key, p);
    }
    let node_uid = n.uid();
    for (key, s) in &local.statics {
        let Some(rec) = local.pods.get(&s.hash) else {
            continue;
        };
        match by_key.get(key) {
            None => {
                let recent = s
                    .mirror_gone_at
                    .is_some_and(|t| t.elapsed() < MIRROR_RECREATE_AFTER);
                if let (Some(uid), false) = (node_uid.as_deref(), recent) {
                    out.push(Action::Create(
                        Box::new(mirror_of(s, &n.config.name, uid)),
                        key.clone(),
                    ));
                }
            }
            Some(p) if !is_mirror(p) => {
                tracing::debug!(pod = %key, "an API pod holds the static pod's name; no mirror");
            }
            Some(p) if p.metadata.deletion_timestamp.is_some() => {}
            Some(p) => {
                let mirror_hash = p
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(MIRROR_ANNOTATION));
                if mirror_hash != Some(&s.hash) {
                    out.push(delete_action(p));
                    continue;
                }
                let uid = p.metadata.uid.clone().unwrap_or_default();
                let written = s.mirror_written.as_ref() == Some(&(uid, mark(rec)));
                if let Some(status) = rec.stage.status(&s.pod, &rec.facts) {
                    // Written again when the API's copy drifted (a lost node's pods are
                    // marked not ready), as for any pod of ours.
                    if !written || crate::lifecycle::drifted(p.status.as_ref(), &status) {
                        out.push(Action::Status {
                            key: key.clone(),
                            mirror: p.clone(),
                            status: serde_json::to_value(status).unwrap_or_default(),
                            stage: mark(rec),
                        });
                    }
                }
            }
        }
    }
    out
}

fn delete_action(p: &Pod) -> Action {
    Action::Delete {
        name: p.metadata.name.clone().unwrap_or_default(),
        namespace: p.metadata.namespace.clone().unwrap_or_default(),
        uid: p.metadata.uid.clone().unwrap_or_default(),
    }
}

/// The mirror pod of a static pod: its metadata and spec, `config.mirror`, owned by the Node.
fn mirror_of(s: &Running, node: &str, node_uid: &str) -> Pod {
    let mut m = (*s.pod).clone();
    m.metadata.uid = None;
    m.metadata.resource_version = None;
    m.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(MIRROR_ANNOTATION.into(), s.hash.clone());
    m.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: node.into(),
        uid: node_uid.into(),
        controller: Some(true),
        ..Default::default()
    }]);
    m.status = None;
    m
}

async fn sync_all_mirrors(k: &Arc<Kubelet>) {
    let work: Vec<(usize, Action)> = k
        .nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| plan(k, n).into_iter().map(move |a| (i, a)))
        .collect();
    futures::stream::iter(work)
        .for_each_concurrent(32, |(i, action)| {
            let k = k.clone();
            async move { execute(&k, &k.nodes[i], action).await }
        })
        .await;
}

async fn execute(k: &Kubelet, n: &NodeState, action: Action) {
    let _permit = k.writes.acquire().await;
    match action {
        Action::Create(pod, key) => {
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            let api: Api<Pod> = Api::namespaced(k.client.clone(), &ns);
            match api.create(&pod).await {
                Ok(created) => {
                    tracing::info!(pod = %key, "mirror pod created");
                    // Show the static pod's status on the new mirror at once.
                    let status = {
                        let local = n.local();
                        local.statics.get(&key).and_then(|s| {
                            let rec = local.pods.get(&s.hash)?;
                            Some((rec.stage.status(&s.pod, &rec.facts)?, mark(rec)))
                        })
                    };
                    if let Some((status, stage)) = status {
                        let name = created.metadata.name.clone().unwrap_or_default();
                        let body =
                            json!({"status": serde_json::to_value(status).unwrap_or_default()});
                        if api.patch_status(&name, &Patch::Merge(body)).await.is_ok() {
                            mark_written(n, &key, created.metadata.uid.unwrap_or_default(), stage);
                        }
                    }
                }
                Err(e) if e.is_conflict() => {}
                Err(e) => tracing::debug!(pod = %key, error = %e, "creating the mirror pod failed"),
            }
        }
        Action::Delete {
            name,
            namespace,
            uid,
        } => {
            let api: Api<Pod> = Api::namespaced(k.client.clone(), &namespace);
            let options = json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                                 "preconditions": {"uid": uid}});
            match api.delete(&name, Some(&options)).await {
                Ok(_) => tracing::info!(pod = %name, "deleted a stale mirror pod"),
                Err(e) => tracing::debug!(pod = %name, error = %e, "deleting a mirror pod failed"),
            }
        }
        Action::Status {
            key,
            mirror,
            status,
            stage,
        } => {
            let ns = mirror.metadata.namespace.clone().unwrap_or_default();
            let api: Api<Pod> = Api::namespaced(k.client.clone(), &ns);
            let name = mirror.metadata.name.clone().unwrap_or_default();
            match api
                .patch_status(&name, &Patch::Merge(json!({ "status": status })))
                .await
            {
                Ok(_) => mark_written(
                    n,
                    &key,
                    mirror.metadata.uid.clone().unwrap_or_default(),
                    stage,
                ),
                Err(e) => {
                    tracing::debug!(pod = %key, error = %e, "writing the mirror pod's status failed")
                }
            }
        }
    }
}

fn mark_written(n: &NodeState, key: &str, mirror_uid: String, stage: Mark) {
    if let Some(s) = n.local().statics.get_mut(key) {
        s.mirror_written = Some((mirror_uid, stage));
    }
}

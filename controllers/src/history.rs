//! Template history in ControllerRevisions, what the DaemonSet and StatefulSet controllers
//! share (upstream's pkg/controller/history): a revision named `OWNER-<hash>`, labelled with
//! the template's labels plus `controller-revision-hash`, carrying the owner's annotations (so
//! `kubernetes.io/change-cause` shows in `kubectl rollout history`) and holding the
//! strategic-merge patch `{"spec":{"template":{…,"$patch":"replace"}}}` that `kubectl rollout
//! undo` applies; claiming revisions (adopt and release) and choosing the ones to prune.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use serde_json::{json, Value};
use tinykube_client::reflector::Store;
use tinykube_client::{Api, Client, ClientError, Patch};
use tinykube_proto::labels::Selector;

use crate::context::BY_NAMESPACE;
use crate::deployment::util::compute_hash;
use crate::owned::Owner;
use crate::util::{adopt_patch, controller_ref, new_controller_ref, release_patch};

/// The label that ties pods and revisions to a template (apps.ControllerRevisionHashLabelKey).
pub const HASH_LABEL: &str = "controller-revision-hash";

/// Keys sorted at every level, as Go's encoding/json writes maps.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The revision data of a template (upstream's getPatch): the template, to be replaced whole.
pub fn patch_of(template: &PodTemplateSpec) -> Value {
    let mut template = serde_json::to_value(template).unwrap_or_else(|_| json!({}));
    if let Some(m) = template.as_object_mut() {
        m.insert("$patch".into(), json!("replace"));
    }
    sorted(json!({"spec": {"template": template}}))
}

/// Whether a revision holds exactly this template (upstream's EqualRevision on the data).
pub fn matches(template: &PodTemplateSpec, history: &ControllerRevision) -> bool {
    history
        .data
        .as_ref()
        .is_some_and(|d| sorted(d.0.clone()) == patch_of(template))
}

/// The template a revision holds, if its data is a template patch.
pub fn template_of(history: &ControllerRevision) -> Option<PodTemplateSpec> {
    let mut template = history.data.as_ref()?.0.pointer("/spec/template")?.clone();
    if let Some(m) = template.as_object_mut() {
        m.remove("$patch");
    }
    serde_json::from_value(template).ok()
}

/// The hash of a template with the owner's collision count.
pub fn hash_of(template: &PodTemplateSpec, collisions: Option<i32>) -> String {
    compute_hash(template, collisions)
}

/// `PREFIX-HASH`, the prefix cut so that the name stays a valid object name.
pub fn revision_name(owner_name: &str, hash: &str) -> String {
    let prefix: String = owner_name.chars().take(223).collect();
    format!("{prefix}-{hash}")
}

/// A new revision object of `owner`'s `template`.
pub fn new_revision<O: Owner>(
    owner: &O,
    template: &PodTemplateSpec,
    hash: &str,
    revision: i64,
) -> ControllerRevision {
    let meta = owner.metadata();
    let mut labels = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(HASH_LABEL.into(), hash.into());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision_name(
                meta.name.as_deref().unwrap_or_default(),
                hash,
            )),
            namespace: meta.namespace.clone(),
            labels: Some(labels),
            annotations: meta.annotations.clone(),
            owner_references: Some(vec![new_controller_ref::<O>(meta)]),
            ..Default::default()
        },
        data: Some(RawExtension(patch_of(template))),
        revision,
    }
}

/// Revisions that may be deleted to honour `limit`: the oldest first, never one that `live`
/// still names (the hashes or revision names live pods carry, the current and update ones;
/// upstream's cleanupHistory and truncateHistory).
pub fn to_clean_up<'a>(
    old: &'a [Arc<ControllerRevision>],
    limit: usize,
    live: &HashSet<String>,
) -> Vec<&'a ControllerRevision> {
    let mut to_kill = old.len().saturating_sub(limit);
    let mut sorted: Vec<&ControllerRevision> = old.iter().map(Arc::as_ref).collect();
    sorted.sort_by_key(|h| h.revision);
    let mut out = Vec::new();
    for h in sorted {
        if to_kill == 0 {
            break;
        }
        let hash = h.metadata.labels.as_ref().and_then(|l| l.get(HASH_LABEL));
        let name = h.metadata.name.as_ref();
        if hash.is_some_and(|x| live.contains(x)) || name.is_some_and(|n| live.contains(n)) {
            continue;
        }
        out.push(h);
        to_kill -= 1;
    }
    out
}

/// The hash label of a revision.
pub fn revision_hash(h: &ControllerRevision) -> String {
    h.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(HASH_LABEL))
        .cloned()
        .unwrap_or_default()
}

fn name_of(meta: &ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

/// The revisions `owner` controls, adopting matching orphans and releasing owned revisions
/// that no longer match (upstream's ClaimControllerRevisions).
pub async fn claim<O: Owner>(
    client: &Client,
    revisions: &Store<ControllerRevision>,
    owner: &O,
    selector: &Selector,
) -> Result<Vec<Arc<ControllerRevision>>, ClientError> {
    let meta = owner.metadata();
    let ns = meta.namespace.clone().unwrap_or_default();
    let uid = meta.uid.clone().unwrap_or_default();
    let api: Api<ControllerRevision> = Api::namespaced(client.clone(), &ns);
    let mut owned = Vec::new();
    for h in revisions.by_index(BY_NAMESPACE, &ns) {
        let labels = h.metadata.labels.clone().unwrap_or_default();
        let matching = selector.matches(&labels);
        match controller_ref(&h.metadata) {
            Some(r) if r.uid != uid => {}
            Some(_) if matching => owned.push(h),
            Some(_) => {
                let patch = release_patch(&h.metadata, &uid);
                match api.patch(&name_of(&h.metadata), &Patch::Merge(patch)).await {
                    Ok(_) => {}
                    Err(e) if e.is_not_found() || e.code() == Some(422) => {}
                    Err(e) => return Err(e),
                }
            }
            None if matching
                && h.metadata.deletion_timestamp.is_none()
                && meta.deletion_timestamp.is_none() =>
            {
                let patch = adopt_patch(&h.metadata, new_controller_ref::<O>(meta));
                match api
                    .patch(&name_of(&h.metadata), &Patch::Strategic(patch))
                    .await
                {
                    Ok(h) => owned.push(Arc::new(h)),
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(e),
                }
            }
            None => {}
        }
    }
    Ok(owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::StatefulSet;

    fn template(image: &str) -> PodTemplateSpec {
        serde_json::from_value(json!({"metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": image}]}}))
        .unwrap()
    }

    #[test]
    fn revisions_hold_the_template_and_give_it_back() {
        let set: StatefulSet = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                         "annotations": {"kubernetes.io/change-cause": "v1"}}
        }))
        .unwrap();
        let (a, b) = (template("nginx:1"), template("nginx:2"));
        let (ha, hb) = (hash_of(&a, None), hash_of(&b, None));
        assert_ne!(ha, hb);
        assert_ne!(
            hash_of(&a, Some(1)),
            ha,
            "the collision count changes the hash"
        );
        let r = new_revision(&set, &a, &ha, 2);
        assert_eq!(r.metadata.name, Some(format!("web-{ha}")));
        assert_eq!(r.revision, 2);
        let owner = &r.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("StatefulSet", Some(true))
        );
        assert_eq!(r.metadata.labels.as_ref().unwrap()[HASH_LABEL], ha);
        assert_eq!(
            r.metadata.annotations.as_ref().unwrap()["kubernetes.io/change-cause"],
            "v1"
        );
        assert!(matches(&a, &r) && !matches(&b, &r));
        assert_eq!(template_of(&r), Some(a));
    }

    #[test]
    fn cleanup_keeps_the_limit_and_live_revisions() {
        let rev = |n: i64, hash: &str| {
            Arc::new(ControllerRevision {
                metadata: ObjectMeta {
                    name: Some(format!("r{n}")),
                    labels: Some([(HASH_LABEL.to_string(), hash.to_string())].into()),
                    ..Default::default()
                },
                data: None,
                revision: n,
            })
        };
        let old = vec![rev(3, "c"), rev(1, "a"), rev(2, "b"), rev(4, "d")];
        let revisions = |limit, live: &[&str]| {
            let live: HashSet<String> = live.iter().map(|s| s.to_string()).collect();
            to_clean_up(&old, limit, &live)
                .iter()
                .map(|h| h.revision)
                .collect::<Vec<_>>()
        };
        type Row<'a> = (usize, &'a [&'a str], Vec<i64>);
        let table: Vec<Row> = vec![
            (10, &[], vec![]),
            (2, &[], vec![1, 2]),
            (2, &["a"], vec![2, 3]),
            (0, &["b", "d"], vec![1, 3]),
            // A revision named by a live pod (StatefulSets label pods with the name).
            (2, &["r1"], vec![2, 3]),
        ];
        for (limit, live, want) in table {
            assert_eq!(revisions(limit, live), want, "{limit} {live:?}");
        }
    }
}

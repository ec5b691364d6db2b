//! One pass over a terminating namespace, as upstream's namespaced-resources deleter: discover
//! the served namespaced kinds, delete their objects (delete-collection where served), count
//! what remains and which finalizers hold it, write the deletion conditions, and once nothing
//! is left remove the `kubernetes` finalizer through the `finalize` subresource.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, NamespaceCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{json, Value};
use tinykube_client::dynamic::{discover_partial, ApiResource, DynamicApi};
use tinykube_client::{Api, ClientError, ListParams};

use super::{Controller, FINALIZER};

#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    #[error("discovering the served resources: {0}")]
    Discovery(#[source] ClientError),
    #[error("deleting the content of namespace {namespace}: {message}")]
    Content { namespace: String, message: String },
    #[error("updating namespace {namespace}: {source}")]
    Update {
        namespace: String,
        #[source]
        source: ClientError,
    },
}

/// What deleting one resource's objects left behind.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Remaining {
    /// `"pods."` / `"replicasets.apps"` → objects left.
    pub resources: BTreeMap<String, usize>,
    /// Finalizer → objects it holds.
    pub finalizers: BTreeMap<String, usize>,
}

/// Upstream's five deletion conditions for one pass, stamped `now`.
pub fn conditions(
    discovery_error: Option<&str>,
    content_errors: &[String],
    remaining: &Remaining,
    now: Timestamp,
) -> Vec<NamespaceCondition> {
    let now = Time(now);
    let cond =
        |kind: &str, ok: bool, ok_reason: &str, bad_reason: &str, ok_msg: &str, bad_msg: String| {
            NamespaceCondition {
                type_: kind.into(),
                status: if ok { "False" } else { "True" }.into(),
                reason: Some(if ok { ok_reason } else { bad_reason }.into()),
                message: Some(if ok { ok_msg.to_string() } else { bad_msg }),
                last_transition_time: Some(now.clone()),
            }
        };
    let resources: Vec<String> = remaining
        .resources
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(r, n)| format!("{r} has {n} resource instances"))
        .collect();
    let finalizers: Vec<String> = remaining
        .finalizers
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(f, n)| format!("{f} in {n} resource instances"))
        .collect();
    vec![
        cond(
            "NamespaceDeletionDiscoveryFailure",
            discovery_error.is_none(),
            "ResourcesDiscovered",
            "DiscoveryFailed",
            "All resources successfully discovered",
            discovery_error.unwrap_or_default().to_string(),
        ),
        cond(
            "NamespaceDeletionGroupVersionParsingFailure",
            true,
            "ParsedGroupVersions",
            "GroupVersionParsingFailed",
            "All legacy kube types successfully parsed",
            String::new(),
        ),
        cond(
            "NamespaceDeletionContentFailure",
            content_errors.is_empty(),
            "ContentDeleted",
            "ContentDeletionFailed",
            "All content successfully deleted, may be waiting on finalization",
            format!(
                "Failed to delete all resource types, {} remaining: {}",
                content_errors.len(),
                content_errors.join(", ")
            ),
        ),
        cond(
            "NamespaceContentRemaining",
            resources.is_empty(),
            "ContentRemoved",
            "SomeResourcesRemain",
            "All content successfully removed",
            format!("Some resources are remaining: {}", resources.join(", ")),
        ),
        cond(
            "NamespaceFinalizersRemaining",
            finalizers.is_empty(),
            "ContentHasNoFinalizers",
            "SomeFinalizersRemain",
            "All content-preserving finalizers finished",
            format!(
                "Some content in the namespace has finalizers remaining: {}",
                finalizers.join(", ")
            ),
        ),
    ]
}

/// Keep the transition time of a condition whose status did not change.
fn merge_conditions(
    old: &[NamespaceCondition],
    new: Vec<NamespaceCondition>,
) -> Vec<NamespaceCondition> {
    new.into_iter()
        .map(|mut c| {
            if let Some(o) = old.iter().find(|o| o.type_ == c.type_) {
                if o.status == c.status && o.reason == c.reason && o.message == c.message {
                    c.last_transition_time = o.last_transition_time.clone();
                }
            }
            c
        })
        .collect()
}

/// Upstream's message for group versions whose resources could not be listed.
pub fn discovery_failure(failed: &[(String, ClientError)]) -> Option<String> {
    if failed.is_empty() {
        return None;
    }
    let mut groups: Vec<String> = failed.iter().map(|(gv, e)| format!("{gv}: {e}")).collect();
    groups.sort();
    Some(format!(
        "Discovery failed for some groups, {} failing: unable to retrieve the complete list of server APIs: {}",
        failed.len(),
        groups.join(", ")
    ))
}

fn has_verb(r: &ApiResource, verb: &str) -> bool {
    r.verbs.iter().any(|v| v == verb)
}

impl Controller {
    /// One deletion pass over the namespace `name`.
    pub async fn sync(&self, name: &str) -> Result<(), NamespaceError> {
        let api: Api<Namespace> = Api::all(self.ctx.client.clone());
        let update = |source| NamespaceError::Update {
            namespace: name.to_string(),
            source,
        };
        let Some(ns) = api.get_opt(name).await.map_err(update)? else {
            return Ok(());
        };
        if ns.metadata.deletion_timestamp.is_none() {
            return Ok(());
        }
        let finalizers: Vec<String> = ns
            .spec
            .as_ref()
            .and_then(|s| s.finalizers.clone())
            .unwrap_or_default();
        if !finalizers.iter().any(|f| f == FINALIZER) {
            return Ok(());
        }
        // Discovery errors are not fatal: what was found is deleted, the rest is retried.
        let (resources, discovery_error) = match discover_partial(&self.ctx.client).await {
            Ok(found) => {
                let error = discovery_failure(&found.failed);
                (found.resources, error)
            }
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        let mut errors = Vec::new();
        let mut remaining = Remaining::default();
        for r in resources
            .iter()
            .filter(|r| r.namespaced && has_verb(r, "list") && has_verb(r, "delete"))
        {
            if let Err(e) = self.delete_all(r, name, &mut remaining).await {
                errors.push(format!("{}.{}: {e}", r.plural, r.group));
            }
        }
        let old = ns
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let new = merge_conditions(
            &old,
            conditions(
                discovery_error.as_deref(),
                &errors,
                &remaining,
                self.ctx.clock.timestamp(),
            ),
        );
        if new != old {
            let mut next = ns.clone();
            next.status.get_or_insert_with(Default::default).conditions = Some(new);
            match api.replace_status(name, &next).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => return Ok(()),
                Err(e) => return Err(update(e)),
            }
        }
        if let Some(e) = discovery_error {
            return Err(NamespaceError::Content {
                namespace: name.into(),
                message: e,
            });
        }
        if !errors.is_empty() {
            return Err(NamespaceError::Content {
                namespace: name.into(),
                message: errors.join("; "),
            });
        }
        if !remaining.resources.is_empty() {
            // Check again soon: graceful deletions and finalizers take their time (a poll of
            // other components' progress, on real time).
            self.queue
                .add_after_real(name, std::time::Duration::from_secs(1));
            return Ok(());
        }
        self.finalize(name, &finalizers).await
    }

    /// Delete every object of `r` in `namespace`; record what is still there.
    async fn delete_all(
        &self,
        r: &ApiResource,
        namespace: &str,
        remaining: &mut Remaining,
    ) -> Result<(), ClientError> {
        let api = DynamicApi::new(self.ctx.client.clone(), r.clone(), Some(namespace));
        let background =
            json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"});
        if has_verb(r, "deletecollection") {
            api.delete_collection(Some(&background)).await?;
        } else {
            for item in api.list(&ListParams::default()).await? {
                if let Some(n) = item.pointer("/metadata/name").and_then(Value::as_str) {
                    match api.delete(n, Some(&background)).await {
                        Ok(_) => {}
                        Err(e) if e.is_not_found() => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        let left = api.list(&ListParams::default()).await?;
        if !left.is_empty() {
            remaining
                .resources
                .insert(format!("{}.{}", r.plural, r.group), left.len());
            for item in &left {
                for f in item
                    .pointer("/metadata/finalizers")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    *remaining.finalizers.entry(f.to_string()).or_default() += 1;
                }
            }
        }
        Ok(())
    }

    /// Remove `kubernetes` from spec.finalizers through `namespaces/NAME/finalize`.
    async fn finalize(&self, name: &str, finalizers: &[String]) -> Result<(), NamespaceError> {
        let rest: Vec<&String> = finalizers.iter().filter(|f| *f != FINALIZER).collect();
        let res = ApiResource {
            group: String::new(),
            version: "v1".into(),
            kind: "Namespace".into(),
            plural: "namespaces".into(),
            namespaced: false,
            verbs: Vec::new(),
        };
        let body = json!({
            "kind": "Namespace",
            "apiVersion": "v1",
            "metadata": {"name": name},
            "spec": {"finalizers": rest},
        });
        let api = DynamicApi::new(self.ctx.client.clone(), res, None);
        match api.replace_subresource(name, "finalize", &body).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(source) => Err(NamespaceError::Update {
                namespace: name.into(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(c: &[NamespaceCondition]) -> Vec<(String, String, String, String)> {
        c.iter()
            .map(|c| {
                (
                    c.type_.clone(),
                    c.status.clone(),
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn partial_discovery_reads_as_upstream() {
        assert_eq!(discovery_failure(&[]), None);
        let gone = ClientError::Api(tinykube_client::Status {
            code: 404,
            message: "the server could not find the requested resource".into(),
            ..Default::default()
        });
        let msg = discovery_failure(&[("stable.example.com/v1".into(), gone)]).unwrap();
        assert!(
            msg.starts_with("Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: stable.example.com/v1: "),
            "{msg}"
        );
    }

    #[test]
    fn conditions_read_as_upstream() {
        let mut remaining = Remaining::default();
        remaining.resources.insert("pods.".into(), 2);
        remaining.resources.insert("replicasets.apps".into(), 1);
        remaining.finalizers.insert("example.com/hold".into(), 2);
        let c = summary(&conditions(None, &[], &remaining, Timestamp::UNIX_EPOCH));
        assert_eq!(c[0].1, "False");
        assert_eq!(c[0].2, "ResourcesDiscovered");
        assert_eq!(c[2].2, "ContentDeleted");
        assert_eq!(
            c[3],
            (
                "NamespaceContentRemaining".into(),
                "True".into(),
                "SomeResourcesRemain".into(),
                "Some resources are remaining: pods. has 2 resource instances, replicasets.apps has 1 resource instances".into()
            )
        );
        assert_eq!(
            c[4].3,
            "Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances"
        );
        let done = summary(&conditions(
            None,
            &[],
            &Remaining::default(),
            Timestamp::UNIX_EPOCH,
        ));
        assert_eq!(
            done.iter().map(|c| c.2.as_str()).collect::<Vec<_>>(),
            [
                "ResourcesDiscovered",
                "ParsedGroupVersions",
                "ContentDeleted",
                "ContentRemoved",
                "ContentHasNoFinalizers"
            ]
        );
        assert!(done.iter().all(|c| c.1 == "False"));
    }
}

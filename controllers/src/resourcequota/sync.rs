//! Recounting one quota, as upstream's syncResourceQuota: the resources its `spec.hard` names
//! are counted over the namespace's objects (listed fresh, each kind by its evaluator, within
//! the quota's scopes), and `status.hard` and `status.used` written by compare-and-swap when
//! they differ (a 409 means admission charged meanwhile: the key is retried on a fresh view).

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ResourceQuota, ResourceQuotaStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use serde_json::Value;
use tinykube_client::dynamic::{discover, ApiResource, DynamicApi};
use tinykube_client::{Api, ClientError, ListParams};
use tinykube_proto::quantity::{Format, Quantity};
use tinykube_proto::quota::{add, mask, parse_list, quota_scopes, Evaluator, ResourceList};

use super::Controller;
use crate::util::split_key;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("discovering the resources quota {quota} counts: {source}")]
    Discovery {
        quota: String,
        #[source]
        source: ClientError,
    },
    #[error("listing {resource} for quota {quota}: {source}")]
    List {
        quota: String,
        resource: String,
        #[source]
        source: ClientError,
    },
    #[error("writing the status of quota {quota}: {source}")]
    Status {
        quota: String,
        #[source]
        source: ClientError,
    },
}

/// The resources (`(group, plural)`) whose objects count towards the quota resources `names`.
pub fn counted_resources<'a>(names: impl Iterator<Item = &'a str>) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for name in names {
        let core = |p: &str| (String::new(), p.to_string());
        let found = if Evaluator::Pods.tracks(name) {
            Some(core("pods"))
        } else if Evaluator::Services.tracks(name) {
            Some(core("services"))
        } else if Evaluator::PersistentVolumeClaims.tracks(name) {
            Some(core("persistentvolumeclaims"))
        } else if let Some(rest) = name.strip_prefix("count/") {
            Some(match rest.split_once('.') {
                Some((plural, group)) => (group.to_string(), plural.to_string()),
                None => core(rest),
            })
        } else if matches!(
            name,
            "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas"
        ) {
            Some(core(name))
        } else {
            None
        };
        out.extend(found);
    }
    out
}

/// The usage of `objects` (of resource `group/plural`) a quota with `hard` and `scopes` counts:
/// every tracked resource, zero when nothing uses it.
pub fn usage_of(
    group: &str,
    plural: &str,
    quota: &Value,
    objects: &[Value],
    now_unix: i64,
) -> ResourceList {
    let hard = parse_list(quota.pointer("/spec/hard"));
    let evaluator = Evaluator::of(group, plural);
    let tracked = evaluator.matching(hard.keys().map(String::as_str));
    let scopes = quota_scopes(quota);
    let mut used: ResourceList = tracked
        .iter()
        .map(|r| (r.clone(), Quantity::from_value(0, Format::DecimalSI)))
        .collect();
    for obj in objects {
        if evaluator.matches_scopes(&scopes, obj, now_unix) {
            used = add(
                &used,
                &mask(&evaluator.usage(obj, now_unix), tracked.iter()),
            );
        }
    }
    used
}

fn api_list(list: &ResourceList) -> std::collections::BTreeMap<String, ApiQuantity> {
    list.iter()
        .map(|(k, q)| (k.clone(), ApiQuantity(q.to_string())))
        .collect()
}

impl Controller {
    /// The served resource `group/plural`, from discovery (refreshed on a miss, at most every
    /// `DISCOVERY_MISS_PERIOD`).
    async fn resource(
        &self,
        quota: &str,
        group: &str,
        plural: &str,
    ) -> Result<Option<ApiResource>, SyncError> {
        let find = |all: &[ApiResource]| {
            all.iter()
                .find(|r| r.group == group && r.plural == plural)
                .cloned()
        };
        {
            let known = self.resources.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(r) = find(&known.0) {
                return Ok(Some(r));
            }
            if known
                .1
                .is_some_and(|at| at.elapsed() < super::DISCOVERY_MISS_PERIOD)
            {
                return Ok(None);
            }
        }
        let fresh = discover(&self.ctx.client)
            .await
            .map_err(|source| SyncError::Discovery {
                quota: quota.to_string(),
                source,
            })?;
        let found = find(&fresh);
        *self.resources.lock().unwrap_or_else(|e| e.into_inner()) =
            (fresh, Some(std::time::Instant::now()));
        Ok(found)
    }

    pub async fn sync(self: &Arc<Self>, key: &str) -> Result<(), SyncError> {
        let Some(cached) = self.quotas.get(key) else {
            return Ok(());
        };
        let (ns, name) = split_key(key);
        let quota = serde_json::to_value(&*cached).unwrap_or(Value::Null);
        let hard = parse_list(quota.pointer("/spec/hard"));
        // Scopes and terminating pods are judged by the cluster's clock.
        let now = self
            .ctx
            .clock
            .now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let mut computed = ResourceList::new();
        for (group, plural) in counted_resources(hard.keys().map(String::as_str)) {
            // A resource that is not served (yet) has no objects: its usage is zero.
            let Some(resource) = self.resource(key, &group, &plural).await? else {
                computed = add(&computed, &usage_of(&group, &plural, &quota, &[], now));
                continue;
            };
            let api = DynamicApi::new(self.ctx.client.clone(), resource.clone(), Some(ns));
            let objects =
                api.list(&ListParams::default())
                    .await
                    .map_err(|source| SyncError::List {
                        quota: key.to_string(),
                        resource: format!("{plural}.{group}"),
                        source,
                    })?;
            self.watch(&resource);
            computed = add(&computed, &usage_of(&group, &plural, &quota, &objects, now));
        }
        let mut used = parse_list(quota.pointer("/status/used"));
        used.extend(computed);
        let used = mask(&used, hard.keys());
        let same = parse_list(quota.pointer("/status/hard")) == hard
            && parse_list(quota.pointer("/status/used")) == used
            && quota.pointer("/status/used").is_some();
        if same {
            return Ok(());
        }
        let mut updated = (*cached).clone();
        updated.status = Some(ResourceQuotaStatus {
            hard: Some(api_list(&hard)),
            used: Some(api_list(&used)),
        });
        let api: Api<ResourceQuota> = Api::namespaced(self.ctx.client.clone(), ns);
        match api.replace_status(name, &updated).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(source) => Err(SyncError::Status {
                quota: key.to_string(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tinykube_proto::quota::to_json;

    #[test]
    fn resources_counted_for_quota_names() {
        let names = [
            "pods",
            "requests.cpu",
            "count/deployments.apps",
            "count/secrets",
            "configmaps",
            "services.nodeports",
            "gold.storageclass.storage.k8s.io/requests.storage",
            "example.com/unknown",
        ];
        let got: Vec<String> = counted_resources(names.into_iter())
            .into_iter()
            .map(|(g, p)| format!("{p}.{g}"))
            .collect();
        assert_eq!(
            got,
            [
                "configmaps.",
                "persistentvolumeclaims.",
                "pods.",
                "secrets.",
                "services.",
                "deployments.apps"
            ]
        );
    }

    #[test]
    fn recount_within_scopes() {
        let quota = json!({"spec": {"hard": {"pods": "10", "requests.cpu": "4", "count/pods": "20"},
                                    "scopes": ["NotTerminating"]}});
        let pod = |cpu: &str, deadline: Option<i64>, phase: &str| {
            json!({"spec": {"activeDeadlineSeconds": deadline, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
                   "status": {"phase": phase}})
        };
        let pods = [
            pod("500m", None, "Running"),
            pod("1", None, "Pending"),
            pod("2", Some(30), "Running"),
            pod("1", None, "Succeeded"),
        ];
        assert_eq!(
            to_json(&usage_of("", "pods", &quota, &pods, 0)),
            json!({"count/pods": "3", "pods": "2", "requests.cpu": "1500m"})
        );
        assert_eq!(
            to_json(&usage_of("", "pods", &quota, &[], 0)),
            json!({"count/pods": "0", "pods": "0", "requests.cpu": "0"})
        );
    }
}

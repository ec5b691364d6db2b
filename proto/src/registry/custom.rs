//! Custom resources in the registry: the served resources of a CustomResourceDefinition (one
//! [`ResourceInfo`] per served version, named by its accepted names) and the facts of its
//! definition the API server reads (schema, subresources, printer columns, storage version).
//!
//! A `ResourceInfo` names its resource with `&'static str`s, as the built-in table does. The
//! names of custom resources are interned: each distinct string is allocated once for the life
//! of the process and shared by every later definition that uses it, so re-reading definitions
//! (every change of any CRD) allocates nothing new, and the memory held is bounded by the
//! distinct names ever served.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use super::{ResourceInfo, Subresource};

/// The verbs of a custom resource, in the order upstream's discovery lists them.
pub const VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// One served version of a custom resource, as its definition says.
#[derive(Debug, PartialEq)]
pub struct Custom {
    /// The CustomResourceDefinition, as stored.
    pub crd: Value,
    /// This version's entry of `spec.versions`.
    pub version: Value,
    /// The version objects are stored in (`storage: true`).
    pub storage_version: String,
}

/// Where the scale subresource reads and writes (`spec.versions[].subresources.scale`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

impl Custom {
    /// The version's name (`v1`).
    pub fn version_name(&self) -> &str {
        self.version
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The version's `openAPIV3Schema`, if any.
    pub fn schema(&self) -> Option<&Value> {
        self.version.pointer("/schema/openAPIV3Schema")
    }

    /// Whether the definition is being deleted: its resources take no new objects.
    pub fn terminating(&self) -> bool {
        self.crd
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null())
    }

    /// The UID of the definition.
    pub fn crd_uid(&self) -> &str {
        self.crd
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The scale subresource's paths, when declared.
    pub fn scale(&self) -> Option<ScalePaths> {
        let scale = self.version.pointer("/subresources/scale")?;
        let path = |k: &str| scale.get(k).and_then(Value::as_str).map(str::to_string);
        Some(ScalePaths {
            spec_replicas: path("specReplicasPath")?,
            status_replicas: path("statusReplicasPath")?,
            label_selector: path("labelSelectorPath"),
        })
    }

    /// The Warning a request of a deprecated version gets: the definition's own, or upstream's
    /// default, which names the newest served version that is not deprecated and newer.
    pub fn deprecation_warning(&self, group: &str, kind: &str) -> Option<String> {
        if self.version.get("deprecated").and_then(Value::as_bool) != Some(true) {
            return None;
        }
        if let Some(w) = self
            .version
            .get("deprecationWarning")
            .and_then(Value::as_str)
        {
            return Some(w.to_string());
        }
        let this = self.version_name();
        let mut text = format!("{group}/{this} {kind} is deprecated");
        let newer = self
            .crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
            .filter(|v| v.get("deprecated").and_then(Value::as_bool) != Some(true))
            .filter_map(|v| v.get("name").and_then(Value::as_str))
            .filter(|name| compare_versions(name, this) == Ordering::Less)
            .min_by(|a, b| compare_versions(a, b));
        if let Some(name) = newer {
            text.push_str(&format!("; use {group}/{name} {kind}"));
        }
        Some(text)
    }

    /// The JSONPaths of the version's `selectableFields` (`.spec.color`).
    pub fn selectable_fields(&self) -> Vec<String> {
        self.version
            .get("selectableFields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    }
}

/// The resources a definition serves: one per version with `served: true`, named by
/// `status.acceptedNames` (nothing before names are accepted), in `spec.versions` order.
pub fn resources(crd: &Value) -> Vec<ResourceInfo> {
    let names = crd.pointer("/status/acceptedNames");
    let name = |k: &str| {
        names
            .and_then(|n| n.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let list = |k: &str| -> Vec<String> {
        names
            .and_then(|n| n.get(k))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let (plural, kind) = (name("plural"), name("kind"));
    let group = crd.pointer("/spec/group").and_then(Value::as_str);
    let (Some(group), false, false) = (group, plural.is_empty(), kind.is_empty()) else {
        return Vec::new();
    };
    let list_kind = match name("listKind") {
        "" => format!("{kind}List"),
        lk => lk.to_string(),
    };
    let singular = match name("singular") {
        "" => kind.to_lowercase(),
        s => s.to_string(),
    };
    let namespaced = crd.pointer("/spec/scope").and_then(Value::as_str) != Some("Cluster");
    let versions: Vec<&Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let kind = intern(kind);
    let short_names = intern_list(&list("shortNames"));
    let categories = intern_list(&list("categories"));
    versions
        .into_iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| {
            let version = v.get("name").and_then(Value::as_str)?;
            let status = v.pointer("/subresources/status").is_some();
            let scale = v.pointer("/subresources/scale").is_some();
            Some(ResourceInfo {
                group: intern(group),
                version: intern(version),
                kind,
                list_kind: intern(&list_kind),
                plural: intern(plural),
                singular: intern(&singular),
                short_names,
                categories,
                namespaced,
                verbs: VERBS,
                subresources: subresources(kind, status, scale),
                has_generation: true,
                custom: Some(Arc::new(Custom {
                    crd: crd.clone(),
                    version: v.clone(),
                    storage_version: storage_version.clone(),
                })),
            })
        })
        .collect()
}

fn subresources(kind: &'static str, status: bool, scale: bool) -> &'static [Subresource] {
    let mut subs = Vec::new();
    if status {
        subs.push(super::status(kind));
    }
    if scale {
        subs.push(super::scale());
    }
    if subs.is_empty() {
        return &[];
    }
    static SEEN: OnceLock<Mutex<HashSet<&'static [Subresource]>>> = OnceLock::new();
    let mut seen = lock(&SEEN);
    if let Some(s) = seen.get(subs.as_slice()) {
        return s;
    }
    let leaked: &'static [Subresource] = Vec::leak(subs);
    seen.insert(leaked);
    leaked
}

fn lock<T: Default>(cell: &'static OnceLock<Mutex<T>>) -> std::sync::MutexGuard<'static, T> {
    cell.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The process-wide copy of `s`.
pub fn intern(s: &str) -> &'static str {
    static SEEN: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut seen = lock(&SEEN);
    if let Some(s) = seen.get(s) {
        return s;
    }
    let leaked: &'static str = String::leak(s.to_string());
    seen.insert(leaked);
    leaked
}

/// The process-wide copy of a list of names.
fn intern_list(items: &[String]) -> &'static [&'static str] {
    if items.is_empty() {
        return &[];
    }
    let interned: Vec<&'static str> = items.iter().map(|s| intern(s)).collect();
    static SEEN: OnceLock<Mutex<HashSet<&'static [&'static str]>>> = OnceLock::new();
    let mut seen = lock(&SEEN);
    if let Some(s) = seen.get(interned.as_slice()) {
        return s;
    }
    let leaked: &'static [&'static str] = Vec::leak(interned);
    seen.insert(leaked);
    leaked
}

/// Upstream's order of Kubernetes-like versions (`v2` > `v1` > `v1beta2` > `v1beta1` >
/// `v1alpha1`, then any other name alphabetically): `Less` means `a` comes first.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    // (major, stage: 2 GA / 1 beta / 0 alpha, minor)
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 || rest.starts_with('0') {
            return None;
        }
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (stage, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        if num.is_empty() || num.starts_with('0') || !num.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        Some((major, stage, num.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sb
            .cmp(&sa)
            .then_with(|| mb.cmp(&ma))
            .then_with(|| nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crontab() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com", "uid": "u1"},
            "spec": {
                "group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                          "shortNames": ["ct"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}, "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas"}}},
                    {"name": "v1beta1", "served": true, "storage": false, "deprecated": true},
                    {"name": "v1alpha1", "served": false, "storage": false},
                ],
            },
            "status": {"acceptedNames": {"plural": "crontabs", "singular": "crontab",
                       "kind": "CronTab", "listKind": "CronTabList", "shortNames": ["ct"]}},
        })
    }

    #[test]
    fn served_versions_become_resources_named_by_accepted_names() {
        let infos = resources(&crontab());
        let versions: Vec<&str> = infos.iter().map(|i| i.version).collect();
        assert_eq!(versions, ["v1", "v1beta1"]);
        let v1 = &infos[0];
        assert_eq!(v1.api_version(), "stable.example.com/v1");
        assert_eq!(
            (v1.kind, v1.list_kind, v1.plural),
            ("CronTab", "CronTabList", "crontabs")
        );
        assert_eq!(v1.short_names, ["ct"]);
        assert!(v1.namespaced && v1.has_status() && v1.subresource("scale").is_some());
        let custom = v1.custom.as_ref().unwrap();
        assert_eq!(custom.storage_version, "v1");
        assert_eq!(custom.scale().unwrap().spec_replicas, ".spec.replicas");
        assert!(infos[1].subresources.is_empty());
        assert_eq!(
            infos[1]
                .custom
                .as_ref()
                .unwrap()
                .deprecation_warning("stable.example.com", "CronTab")
                .as_deref(),
            Some("stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1 CronTab")
        );
    }

    #[test]
    fn nothing_is_served_before_names_are_accepted() {
        let mut crd = crontab();
        crd["status"] = json!({});
        assert!(resources(&crd).is_empty());
    }

    #[test]
    fn interned_names_are_shared() {
        let a = intern(&String::from("widgets"));
        let b = intern("widgets");
        assert!(std::ptr::eq(a, b));
        assert!(std::ptr::eq(
            intern_list(&["w".to_string()]),
            intern_list(&["w".to_string()])
        ));
    }
}

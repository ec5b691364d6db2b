//! `metadata.managedFields`, kept as upstream's field manager keeps it: every create, update
//! and patch records which fields its manager set (an `Update` entry), server-side apply records
//! what each applier applied (an `Apply` entry, see `handlers::apply`). The field sets and their
//! arithmetic are `tinykube_proto::managed`; this module names the manager of a request and
//! puts the entries on the object.

use axum::http::{header, HeaderMap};
use serde_json::Value;
use tinykube_proto::managed::{self, TypeInfo, Writer};
use tinykube_proto::registry::ResourceInfo;

use crate::object;

/// Upstream's limit on a manager's name.
const MAX_MANAGER_LEN: usize = 128;

/// Who writes, as the managedFields entries name it.
#[derive(Debug, Clone)]
pub struct Manager {
    pub name: String,
    /// The request's group/version (`v1`, `apps/v1`).
    pub api_version: String,
    /// When (RFC 3339, seconds).
    pub time: String,
}

impl Manager {
    /// The manager of a request: `?fieldManager=`, else the User-Agent up to its first `/`
    /// (`kubectl/v1.32.4 (linux/amd64) …` is `kubectl`), as upstream; writing at `now`.
    pub fn of(
        info: &ResourceInfo,
        field_manager: Option<&str>,
        headers: &HeaderMap,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Manager {
        let name = match field_manager.filter(|m| !m.is_empty()) {
            Some(m) => m.to_string(),
            None => {
                let agent = headers
                    .get(header::USER_AGENT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                agent.split('/').next().unwrap_or("").to_string()
            }
        };
        Manager {
            name: name.chars().take(MAX_MANAGER_LEN).collect(),
            api_version: info.api_version(),
            time: object::timestamp(now),
        }
    }

    /// The writer of a (sub)resource write.
    pub fn writer<'a>(&'a self, subresource: Option<&'a str>) -> Writer<'a> {
        Writer {
            manager: &self.name,
            api_version: &self.api_version,
            subresource,
            time: &self.time,
        }
    }
}

/// Where the field manager takes a kind's types from: the built-in name rules, or a custom
/// resource's `openAPIV3Schema` (its list types, map types and keys).
pub fn type_info(info: &ResourceInfo) -> TypeInfo<'_> {
    static NO_SCHEMA: Value = Value::Null;
    match &info.custom {
        Some(custom) => TypeInfo::custom(custom.schema().unwrap_or(&NO_SCHEMA), info.has_status()),
        None => TypeInfo::built_in(info.has_status()),
    }
}

/// The managedFields entries of `obj` (none when absent or not a list).
pub fn entries(obj: &Value) -> Vec<Value> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Record an update-type write by `manager` that turns `old` (`None`: a create) into `new`.
/// Entries a client sent that differ from the stored ones replace them first (upstream's way
/// to reset managedFields: send `[{}]`); otherwise the stored entries are carried over.
pub fn record_update(
    info: &ResourceInfo,
    manager: &Manager,
    subresource: Option<&str>,
    old: Option<&Value>,
    new: &mut Value,
) {
    let sent = entries(new);
    let stored = old.map(entries).unwrap_or_default();
    let base = if !sent.is_empty() && sent != stored {
        sent.into_iter()
            .filter(|e| e.as_object().is_some_and(|m| !m.is_empty()))
            .collect()
    } else {
        stored
    };
    let updated = managed::update(
        &base,
        old,
        new,
        &manager.writer(subresource),
        type_info(info),
    );
    managed::set_managed_fields(new, updated);
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn the_manager_defaults_to_the_user_agents_program() {
        let info = tinykube_proto::registry::builtin("", "v1", "pods").expect("pods are served");
        let mut headers = HeaderMap::new();
        headers.insert(
            header::USER_AGENT,
            HeaderValue::from_static("kubectl/v1.32.4 (linux/amd64) kubernetes/abc"),
        );
        let now = "2030-01-02T03:04:05Z".parse().expect("a time");
        let manager = Manager::of(info, None, &headers, now);
        assert_eq!(
            (manager.name.as_str(), manager.time.as_str()),
            ("kubectl", "2030-01-02T03:04:05Z")
        );
        assert_eq!(Manager::of(info, Some(""), &headers, now).name, "kubectl");
        assert_eq!(
            Manager::of(info, Some("kubectl-client-side-apply"), &headers, now).name,
            "kubectl-client-side-apply"
        );
        assert_eq!(Manager::of(info, None, &HeaderMap::new(), now).name, "");
        let long = "m".repeat(200);
        assert_eq!(
            Manager::of(info, Some(&long), &headers, now).name.len(),
            128
        );
    }
}

//! What the admission plugin knows of a request (upstream's `admission.Attributes`): the
//! resource and subresource, the operation, the objects, the user; and the `request` variable
//! CEL expressions read, shaped as upstream's AdmissionRequest.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use tinykube_proto::registry::ResourceInfo;

/// The operation of a write, as admission rules name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    /// The options kind a request of this operation carries.
    fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        }
    }
}

/// The authenticated (or impersonated) user of a request, as upstream's `user.Info`: name,
/// uid, groups and the extra attributes (a ServiceAccount token's credential id and bound pod,
/// impersonated `Impersonate-Extra-*` values); `system:anonymous` when the server runs without
/// authentication.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn anonymous() -> UserInfo {
        UserInfo {
            username: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
            extra: BTreeMap::new(),
        }
    }

    /// The user as authentication.k8s.io/v1 `UserInfo` (also admission's `userInfo`): empty
    /// fields left out.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if !self.username.is_empty() {
            m.insert("username".into(), self.username.clone().into());
        }
        if !self.uid.is_empty() {
            m.insert("uid".into(), self.uid.clone().into());
        }
        if !self.groups.is_empty() {
            m.insert("groups".into(), json!(self.groups));
        }
        if !self.extra.is_empty() {
            m.insert("extra".into(), json!(self.extra));
        }
        Value::Object(m)
    }
}

/// One write as admission sees it.
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    pub info: &'a ResourceInfo,
    /// `""` for the main resource, else `status`, `scale`, ….
    pub subresource: &'a str,
    pub operation: Operation,
    pub name: &'a str,
    /// `""` for cluster-scoped objects.
    pub namespace: &'a str,
    /// The new object: `None` on delete.
    pub object: Option<&'a Value>,
    /// The stored object: `None` on create.
    pub old_object: Option<&'a Value>,
    pub dry_run: bool,
    pub user: &'a UserInfo,
}

impl Attributes<'_> {
    /// The group, version and kind of the objects: a subresource's own kind (`autoscaling/v1`
    /// `Scale`) or the resource's.
    pub fn kind(&self) -> (&str, &str, &str) {
        match self.info.subresource(self.subresource) {
            Some(s) if !s.kind.is_empty() => (
                s.group.unwrap_or(self.info.group),
                s.version.unwrap_or(self.info.version),
                s.kind,
            ),
            _ => (self.info.group, self.info.version, self.info.kind),
        }
    }

    /// The name upstream's forbidden errors give: the object's name (or generateName), else
    /// `Unknown` (a delete has no new object).
    pub fn error_name(&self) -> String {
        let meta = |k: &str| {
            self.object
                .and_then(|o| o.pointer(&format!("/metadata/{k}")))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        meta("name")
            .or_else(|| meta("generateName"))
            .unwrap_or_else(|| "Unknown".into())
    }

    /// The `request` variable: upstream's AdmissionRequest as JSON (empty fields left out).
    pub fn request_value(&self, uid: &str) -> Value {
        let (group, version, kind) = self.kind();
        let gvk = json!({"group": group, "version": version, "kind": kind});
        let gvr = json!({"group": self.info.group, "version": self.info.version,
                         "resource": self.info.plural});
        let mut m = Map::new();
        m.insert("uid".into(), uid.into());
        m.insert("kind".into(), gvk.clone());
        m.insert("resource".into(), gvr.clone());
        if !self.subresource.is_empty() {
            m.insert("subResource".into(), self.subresource.into());
        }
        m.insert("requestKind".into(), gvk);
        m.insert("requestResource".into(), gvr);
        if !self.subresource.is_empty() {
            m.insert("requestSubResource".into(), self.subresource.into());
        }
        if !self.name.is_empty() {
            m.insert("name".into(), self.name.into());
        }
        if !self.namespace.is_empty() {
            m.insert("namespace".into(), self.namespace.into());
        }
        m.insert("operation".into(), self.operation.as_str().into());
        m.insert("userInfo".into(), self.user.to_json());
        if self.dry_run {
            m.insert("dryRun".into(), true.into());
        }
        m.insert(
            "options".into(),
            json!({"kind": self.operation.options_kind(), "apiVersion": "meta.k8s.io/v1"}),
        );
        Value::Object(m)
    }
}

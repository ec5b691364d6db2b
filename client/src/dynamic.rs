//! `DynamicApi`: an untyped client for any served resource, named by group, version and plural
//! (for the garbage collector and namespace deletion, which handle every kind alike), and
//! discovery of the served resources.

use serde::Deserialize;
use serde_json::Value;

use crate::api::{ListParams, Patch};
use crate::config::Client;
use crate::error::ClientError;
use crate::rest::{collection_path, found, Request};

/// One served resource as discovery lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResource {
    /// Empty for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    pub verbs: Vec<String>,
}

impl ApiResource {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// An untyped client for one resource, in one namespace or across all of them.
#[derive(Clone)]
pub struct DynamicApi {
    client: Client,
    resource: ApiResource,
    namespace: Option<String>,
}

impl DynamicApi {
    pub fn new(client: Client, resource: ApiResource, namespace: Option<&str>) -> Self {
        DynamicApi {
            client,
            resource,
            namespace: namespace.map(str::to_string),
        }
    }

    fn collection(&self) -> String {
        let r = &self.resource;
        let namespace = self.namespace.as_deref().filter(|_| r.namespaced);
        collection_path(&r.group, &r.version, &r.plural, namespace)
    }

    fn item(&self, name: &str) -> String {
        format!("{}/{name}", self.collection())
    }

    /// `None` when the object does not exist.
    pub async fn get_opt(&self, name: &str) -> Result<Option<Value>, ClientError> {
        found(self.client.send(Request::get(self.item(name))).await)
    }

    /// The list's `items`.
    pub async fn list(&self, lp: &ListParams) -> Result<Vec<Value>, ClientError> {
        let request = Request::get(self.collection()).query(lp.query());
        let list: Value = self.client.send(request).await?;
        Ok(list
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default())
    }

    /// Delete with optional DeleteOptions.
    pub async fn delete(&self, name: &str, options: Option<&Value>) -> Result<Value, ClientError> {
        self.client
            .send(Request::delete(self.item(name), options))
            .await
    }

    /// Delete every object of the collection (in the namespace) with optional DeleteOptions.
    pub async fn delete_collection(&self, options: Option<&Value>) -> Result<(), ClientError> {
        let request = Request::delete(self.collection(), options);
        self.client.send::<Value, _>(request).await.map(|_| ())
    }

    /// PUT `body` to a subresource (`status`, `finalize`) and return the server's answer.
    pub async fn replace_subresource(
        &self,
        name: &str,
        subresource: &str,
        body: &Value,
    ) -> Result<Value, ClientError> {
        let path = format!("{}/{subresource}", self.item(name));
        self.client.send(Request::put(path, body)).await
    }

    pub async fn patch(&self, name: &str, patch: &Patch) -> Result<Value, ClientError> {
        self.client
            .send(Request::patch(self.item(name), patch))
            .await
    }
}

#[derive(Deserialize)]
struct ResourceList {
    #[serde(rename = "groupVersion", default)]
    group_version: String,
    #[serde(default)]
    resources: Vec<ListedResource>,
}

#[derive(Deserialize)]
struct ListedResource {
    name: String,
    #[serde(default)]
    namespaced: bool,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    verbs: Vec<String>,
}

#[derive(Deserialize)]
struct GroupList {
    #[serde(default)]
    groups: Vec<Group>,
}

#[derive(Deserialize)]
struct Group {
    #[serde(rename = "preferredVersion")]
    preferred_version: Option<GroupVersion>,
}

#[derive(Deserialize)]
struct GroupVersion {
    #[serde(rename = "groupVersion")]
    group_version: String,
}

/// Every served resource (subresources left out), in the preferred version of each group.
pub async fn discover(client: &Client) -> Result<Vec<ApiResource>, ClientError> {
    let mut lists: Vec<ResourceList> = vec![client.send(Request::get("/api/v1".into())).await?];
    let groups: GroupList = client.send(Request::get("/apis".into())).await?;
    for g in groups.groups {
        if let Some(v) = g.preferred_version {
            let path = format!("/apis/{}", v.group_version);
            lists.push(client.send(Request::get(path)).await?);
        }
    }
    let mut out = Vec::new();
    for list in lists {
        let (group, version) = match list.group_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), list.group_version.clone()),
        };
        for r in list.resources {
            if r.name.contains('/') {
                continue;
            }
            out.push(ApiResource {
                group: group.clone(),
                version: version.clone(),
                kind: r.kind,
                plural: r.name,
                namespaced: r.namespaced,
                verbs: r.verbs,
            });
        }
    }
    Ok(out)
}

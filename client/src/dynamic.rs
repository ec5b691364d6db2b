//! `DynamicApi`: an untyped client for any served resource, named by group, version and plural
//! (for the garbage collector and namespace deletion, which handle every kind alike), and
//! discovery of the served resources.

use reqwest::Method;
use serde::Deserialize;
use serde_json::Value;

use crate::api::{answer, ListParams, Patch};
use crate::config::Client;
use crate::error::ClientError;

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
    fn base(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

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
        match &self.namespace {
            Some(ns) if self.resource.namespaced => format!(
                "{}/namespaces/{ns}/{}",
                self.resource.base(),
                self.resource.plural
            ),
            _ => format!("{}/{}", self.resource.base(), self.resource.plural),
        }
    }

    fn item(&self, name: &str) -> String {
        format!("{}/{name}", self.collection())
    }

    /// `None` when the object does not exist.
    pub async fn get_opt(&self, name: &str) -> Result<Option<Value>, ClientError> {
        let resp = self
            .client
            .request(Method::GET, &self.item(name))
            .send()
            .await?;
        match answer(resp).await {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The list's `items`.
    pub async fn list(&self, lp: &ListParams) -> Result<Vec<Value>, ClientError> {
        let resp = self
            .client
            .request(Method::GET, &self.collection())
            .query(&lp.query())
            .send()
            .await?;
        let list: Value = answer(resp).await?;
        Ok(list
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default())
    }

    /// Delete with optional DeleteOptions.
    pub async fn delete(&self, name: &str, options: Option<&Value>) -> Result<Value, ClientError> {
        let mut req = self.client.request(Method::DELETE, &self.item(name));
        if let Some(o) = options {
            req = req.json(o);
        }
        answer(req.send().await?).await
    }

    /// Delete every object of the collection (in the namespace) with optional DeleteOptions.
    pub async fn delete_collection(&self, options: Option<&Value>) -> Result<(), ClientError> {
        let mut req = self.client.request(Method::DELETE, &self.collection());
        if let Some(o) = options {
            req = req.json(o);
        }
        answer::<Value>(req.send().await?).await.map(|_| ())
    }

    /// PUT `body` to a subresource (`status`, `finalize`) and return the server's answer.
    pub async fn replace_subresource(
        &self,
        name: &str,
        subresource: &str,
        body: &Value,
    ) -> Result<Value, ClientError> {
        let path = format!("{}/{subresource}", self.item(name));
        answer(
            self.client
                .request(Method::PUT, &path)
                .json(body)
                .send()
                .await?,
        )
        .await
    }

    pub async fn patch(&self, name: &str, patch: &Patch) -> Result<Value, ClientError> {
        let req = self
            .client
            .request(Method::PATCH, &self.item(name))
            .header(reqwest::header::CONTENT_TYPE, patch.content_type())
            .body(serde_json::to_vec(patch.body())?);
        answer(req.send().await?).await
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
    let get = |path: String| {
        let client = client.clone();
        async move {
            let resp = client.request(Method::GET, &path).send().await?;
            answer::<ResourceList>(resp).await
        }
    };
    let mut lists = vec![get("/api/v1".into()).await?];
    let resp = client.request(Method::GET, "/apis").send().await?;
    let groups: GroupList = answer(resp).await?;
    for g in groups.groups {
        if let Some(v) = g.preferred_version {
            lists.push(get(format!("/apis/{}", v.group_version)).await?);
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

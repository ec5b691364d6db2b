//! `DynamicApi`: an untyped client for any served resource, named by group, version and plural
//! (for the garbage collector and namespace deletion, which handle every kind alike), its
//! list+watch [`watcher`], and discovery of the served resources.

use futures::Stream;
use serde::Deserialize;
use serde_json::Value;

use crate::api::{ListParams, Patch};
use crate::config::Client;
use crate::error::{ClientError, Status};
use crate::rest::{answer, collection_path, found, Request};
use crate::watch::{decode_stream, WatchEvent};
use crate::watcher::{watch_source, Event, EventStream, ListWatch, Listed};

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

    /// The list's `items` and its resourceVersion (where a watch of the same collection starts).
    pub async fn list_versioned(&self, lp: &ListParams) -> Result<ObjectList, ClientError> {
        let request = Request::get(self.collection()).query(lp.query());
        let mut list: Value = self.client.send(request).await?;
        let resource_version = list
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let items = match list.get_mut("items").map(Value::take) {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        };
        Ok(ObjectList {
            items,
            resource_version,
        })
    }

    /// Watch from `resource_version`; the stream ends when the server closes it.
    pub async fn watch(
        &self,
        lp: &ListParams,
        resource_version: &str,
    ) -> Result<
        impl Stream<Item = Result<WatchEvent<Value>, ClientError>> + Send + use<>,
        ClientError,
    > {
        let mut query = lp.query();
        query.retain(|(k, _)| *k != "limit" && *k != "continue");
        query.push(("watch", "true".into()));
        query.push(("resourceVersion", resource_version.to_string()));
        query.push(("allowWatchBookmarks", lp.bookmarks.to_string()));
        query.push((
            "timeoutSeconds",
            lp.timeout_seconds.unwrap_or(290).to_string(),
        ));
        let request = Request::get(self.collection()).query(query);
        let resp = self.client.response(request).await?;
        if !resp.status().is_success() {
            return Err(answer::<Value>(resp)
                .await
                .err()
                .unwrap_or(ClientError::Api(Status::default())));
        }
        Ok(decode_stream(resp.bytes_stream()))
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

    /// POST `obj` to the collection and return the object as stored.
    pub async fn create(&self, obj: &Value) -> Result<Value, ClientError> {
        self.client
            .send(Request::post(self.collection(), obj))
            .await
    }

    /// PUT `obj` (with the resourceVersion it was read at) and return the object as stored.
    pub async fn replace(&self, name: &str, obj: &Value) -> Result<Value, ClientError> {
        self.client.send(Request::put(self.item(name), obj)).await
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

/// A list's objects and resourceVersion.
#[derive(Debug, Clone, Default)]
pub struct ObjectList {
    pub items: Vec<Value>,
    pub resource_version: String,
}

impl ListWatch for DynamicApi {
    type Item = Value;

    fn describe(&self) -> String {
        self.resource.kind.clone()
    }

    async fn list(&self, lp: &ListParams) -> Result<Listed<Value>, ClientError> {
        let list = self.list_versioned(lp).await?;
        Ok(Listed {
            items: list.items,
            resource_version: list.resource_version,
        })
    }

    async fn watch(
        &self,
        lp: &ListParams,
        resource_version: &str,
    ) -> Result<EventStream<Value>, ClientError> {
        Ok(Box::pin(
            DynamicApi::watch(self, lp, resource_version).await?,
        ))
    }

    fn resource_version(item: &Value) -> Option<String> {
        item.pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string)
    }
}

/// An endless stream of watcher events for `api` filtered by `lp`, as
/// [`crate::watcher::watcher`] gives for typed kinds (the same state machine); errors are
/// reported and retried with backoff.
pub fn watcher(
    api: DynamicApi,
    lp: ListParams,
) -> impl Stream<Item = Result<Event<Value>, ClientError>> + Send {
    watch_source(api, lp)
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

/// What discovery found, and the group versions it could not read (upstream's
/// `ErrGroupDiscoveryFailed`): callers may act on what was found, as upstream's garbage
/// collector and namespace deleter do.
#[derive(Debug, Default)]
pub struct Discovery {
    pub resources: Vec<ApiResource>,
    /// `group/version` → why its resource list could not be read.
    pub failed: Vec<(String, ClientError)>,
}

/// Every served resource (subresources left out), in the preferred version of each group.
pub async fn discover(client: &Client) -> Result<Vec<ApiResource>, ClientError> {
    let found = discover_partial(client).await?;
    match found.failed.into_iter().next() {
        Some((_, e)) => Err(e),
        None => Ok(found.resources),
    }
}

/// [`discover`], tolerating groups whose resource list fails (a CRD's group being removed, an
/// aggregated API that is down): only `/api/v1` and `/apis` must answer.
pub async fn discover_partial(client: &Client) -> Result<Discovery, ClientError> {
    let mut lists: Vec<ResourceList> = vec![client.send(Request::get("/api/v1".into())).await?];
    let groups: GroupList = client.send(Request::get("/apis".into())).await?;
    let mut failed = Vec::new();
    for g in groups.groups {
        if let Some(v) = g.preferred_version {
            let path = format!("/apis/{}", v.group_version);
            match client.send(Request::get(path)).await {
                Ok(list) => lists.push(list),
                Err(e) => failed.push((v.group_version, e)),
            }
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
    Ok(Discovery {
        resources: out,
        failed,
    })
}

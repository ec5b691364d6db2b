//! `Api<K>`: a typed REST client for one kind, built from `k8s-openapi`'s `Resource` facts.

use std::marker::PhantomData;

use futures::Stream;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{
    ClusterResourceScope, ListableResource, Metadata, NamespaceResourceScope, Resource,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::config::Client;
use crate::error::{ClientError, Status};
use crate::rest::{answer, collection_path, found, Request};
use crate::watch::{decode_stream, WatchEvent};

/// Whether a kind lives in namespaces.
pub trait Scope {
    const NAMESPACED: bool;
}
impl Scope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}
impl Scope for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// The bounds every kind handled by [`Api`] meets.
pub trait Kind:
    Resource
    + ListableResource
    + Metadata<Ty = ObjectMeta>
    + DeserializeOwned
    + Serialize
    + Clone
    + Send
    + Sync
    + 'static
where
    <Self as Resource>::Scope: Scope,
{
}
impl<K> Kind for K
where
    K: Resource
        + ListableResource
        + Metadata<Ty = ObjectMeta>
        + DeserializeOwned
        + Serialize
        + Clone
        + Send
        + Sync
        + 'static,
    <K as Resource>::Scope: Scope,
{
}

/// Options of list and watch.
#[derive(Debug, Clone, Default)]
pub struct ListParams {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub limit: Option<u32>,
    pub continue_token: Option<String>,
    pub timeout_seconds: Option<u32>,
    pub bookmarks: bool,
}

impl ListParams {
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_string());
        self
    }

    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_string());
        self
    }

    pub(crate) fn query(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if let Some(s) = &self.label_selector {
            q.push(("labelSelector", s.clone()));
        }
        if let Some(s) = &self.field_selector {
            q.push(("fieldSelector", s.clone()));
        }
        if let Some(l) = self.limit {
            q.push(("limit", l.to_string()));
        }
        if let Some(c) = &self.continue_token {
            q.push(("continue", c.clone()));
        }
        q
    }
}

/// Options of create and update.
#[derive(Debug, Clone, Default)]
pub struct PostParams {
    pub field_manager: Option<String>,
}

/// A patch body and its type.
#[derive(Debug, Clone)]
pub enum Patch {
    Merge(Value),
    Json(Value),
    Strategic(Value),
}

impl Patch {
    pub(crate) fn content_type(&self) -> &'static str {
        match self {
            Patch::Merge(_) => "application/merge-patch+json",
            Patch::Json(_) => "application/json-patch+json",
            Patch::Strategic(_) => "application/strategic-merge-patch+json",
        }
    }

    pub(crate) fn body(&self) -> &Value {
        match self {
            Patch::Merge(v) | Patch::Json(v) | Patch::Strategic(v) => v,
        }
    }
}

/// A typed client for kind `K`, in one namespace or across all of them.
pub struct Api<K> {
    client: Client,
    namespace: Option<String>,
    _kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Api {
            client: self.client.clone(),
            namespace: self.namespace.clone(),
            _kind: PhantomData,
        }
    }
}

impl<K: Kind> Api<K>
where
    <K as Resource>::Scope: Scope,
{
    /// Objects of a namespaced kind in one namespace.
    pub fn namespaced(client: Client, namespace: &str) -> Self {
        Api {
            client,
            namespace: Some(namespace.to_string()),
            _kind: PhantomData,
        }
    }

    /// Every object of the kind: across namespaces, or cluster-scoped.
    pub fn all(client: Client) -> Self {
        Api {
            client,
            namespace: None,
            _kind: PhantomData,
        }
    }

    fn collection(&self, namespace: Option<&str>) -> String {
        let namespace = namespace
            .or(self.namespace.as_deref())
            .filter(|_| <K::Scope as Scope>::NAMESPACED);
        collection_path(K::GROUP, K::VERSION, K::URL_PATH_SEGMENT, namespace)
    }

    fn item(&self, name: &str) -> String {
        format!("{}/{name}", self.collection(None))
    }

    fn subresource(&self, name: &str, subresource: &str) -> String {
        format!("{}/{subresource}", self.item(name))
    }

    pub async fn get(&self, name: &str) -> Result<K, ClientError> {
        self.client.send(Request::get(self.item(name))).await
    }

    /// `None` when the object does not exist.
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>, ClientError> {
        found(self.get(name).await)
    }

    pub async fn list(&self, lp: &ListParams) -> Result<k8s_openapi::List<K>, ClientError> {
        let request = Request::get(self.collection(None)).query(lp.query());
        self.client.send(request).await
    }

    /// POST to the collection of the object's namespace (else this client's).
    pub async fn create(&self, obj: &K) -> Result<K, ClientError> {
        let path = self.collection(obj.metadata().namespace.as_deref());
        self.client.send(Request::post(path, obj)).await
    }

    pub async fn replace(&self, name: &str, obj: &K) -> Result<K, ClientError> {
        self.client.send(Request::put(self.item(name), obj)).await
    }

    pub async fn replace_status(&self, name: &str, obj: &K) -> Result<K, ClientError> {
        let path = self.subresource(name, "status");
        self.client.send(Request::put(path, obj)).await
    }

    pub async fn patch(&self, name: &str, patch: &Patch) -> Result<K, ClientError> {
        self.client
            .send(Request::patch(self.item(name), patch))
            .await
    }

    pub async fn patch_status(&self, name: &str, patch: &Patch) -> Result<K, ClientError> {
        let path = self.subresource(name, "status");
        self.client.send(Request::patch(path, patch)).await
    }

    /// Delete with optional DeleteOptions (`gracePeriodSeconds`, `propagationPolicy`,
    /// `preconditions`); returns the object as the server last showed it.
    pub async fn delete(&self, name: &str, options: Option<&Value>) -> Result<Value, ClientError> {
        self.client
            .send(Request::delete(self.item(name), options))
            .await
    }

    /// POST to a subresource (`binding`, `eviction`) and return the server's answer.
    pub async fn create_subresource(
        &self,
        name: &str,
        subresource: &str,
        body: &Value,
    ) -> Result<Value, ClientError> {
        let path = self.subresource(name, subresource);
        self.client.send(Request::post(path, body)).await
    }

    /// Watch from `resource_version`; the stream ends when the server closes it.
    pub async fn watch(
        &self,
        lp: &ListParams,
        resource_version: &str,
    ) -> Result<impl Stream<Item = Result<WatchEvent<K>, ClientError>> + Send + use<K>, ClientError>
    {
        let mut query = lp.query();
        query.retain(|(k, _)| *k != "limit" && *k != "continue");
        query.push(("watch", "true".into()));
        query.push(("resourceVersion", resource_version.to_string()));
        query.push(("allowWatchBookmarks", lp.bookmarks.to_string()));
        query.push((
            "timeoutSeconds",
            lp.timeout_seconds.unwrap_or(290).to_string(),
        ));
        let request = Request::get(self.collection(None)).query(query);
        let resp = self.client.response(request).await?;
        if !resp.status().is_success() {
            return Err(answer::<Value>(resp)
                .await
                .err()
                .unwrap_or(ClientError::Api(Status::default())));
        }
        Ok(decode_stream(resp.bytes_stream()))
    }
}

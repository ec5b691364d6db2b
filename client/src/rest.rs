//! The one request path of [`Api`](crate::Api) and [`DynamicApi`](crate::dynamic::DynamicApi):
//! resource URLs, a [`Request`] (method, path, query, optional JSON body and its content type),
//! and [`Client::send`], which sends it and decodes the answer or the server's `Status`.

use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::api::Patch;
use crate::config::Client;
use crate::error::{ClientError, Status};

/// `/api/VERSION` for the core group, `/apis/GROUP/VERSION` for the others.
pub(crate) fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// A resource's collection: in `namespace` if given (the caller passes one only for a
/// namespaced resource), else cluster-wide.
pub(crate) fn collection_path(
    group: &str,
    version: &str,
    plural: &str,
    namespace: Option<&str>,
) -> String {
    let base = group_version_path(group, version);
    match namespace {
        Some(ns) => format!("{base}/namespaces/{ns}/{plural}"),
        None => format!("{base}/{plural}"),
    }
}

/// One API request: method, path and query, and an optional body sent as JSON, under
/// `application/json` unless a patch names its own content type.
pub(crate) struct Request<'a, B: ?Sized> {
    method: Method,
    path: String,
    query: Vec<(&'static str, String)>,
    body: Option<&'a B>,
    content_type: Option<&'static str>,
}

impl Request<'static, ()> {
    pub(crate) fn get(path: String) -> Self {
        Request::new(Method::GET, path, None)
    }
}

impl<'a, B: Serialize + ?Sized> Request<'a, B> {
    fn new(method: Method, path: String, body: Option<&'a B>) -> Self {
        Request {
            method,
            path,
            query: Vec::new(),
            body,
            content_type: None,
        }
    }

    pub(crate) fn post(path: String, body: &'a B) -> Self {
        Request::new(Method::POST, path, Some(body))
    }

    pub(crate) fn put(path: String, body: &'a B) -> Self {
        Request::new(Method::PUT, path, Some(body))
    }

    /// With optional DeleteOptions as the body.
    pub(crate) fn delete(path: String, options: Option<&'a B>) -> Self {
        Request::new(Method::DELETE, path, options)
    }

    pub(crate) fn query(mut self, query: Vec<(&'static str, String)>) -> Self {
        self.query = query;
        self
    }
}

impl<'a> Request<'a, Value> {
    pub(crate) fn patch(path: String, patch: &'a Patch) -> Self {
        Request {
            content_type: Some(patch.content_type()),
            ..Request::new(Method::PATCH, path, Some(patch.body()))
        }
    }
}

impl Client {
    /// Send `request` and return the server's response, whatever its status.
    pub(crate) async fn response<B: Serialize + ?Sized>(
        &self,
        request: Request<'_, B>,
    ) -> Result<Response, ClientError> {
        let mut req = self
            .request(request.method, &request.path)
            .query(&request.query);
        // Before the body: `json` keeps a content type that is already set.
        if let Some(content_type) = request.content_type {
            req = req.header(CONTENT_TYPE, content_type);
        }
        if let Some(body) = request.body {
            req = req.json(body);
        }
        Ok(req.send().await?)
    }

    /// Send `request` and decode the answer as `T`, or the server's `Status` as
    /// [`ClientError::Api`].
    pub(crate) async fn send<T: DeserializeOwned, B: Serialize + ?Sized>(
        &self,
        request: Request<'_, B>,
    ) -> Result<T, ClientError> {
        answer(self.response(request).await?).await
    }
}

/// A success body decoded as `T`; any other status as [`ClientError::Api`], with the code and
/// the server's `Status` (or its raw text as the message).
pub(crate) async fn answer<T: DeserializeOwned>(resp: Response) -> Result<T, ClientError> {
    let code = resp.status();
    let bytes = resp.bytes().await?;
    if !code.is_success() {
        let mut status: Status = serde_json::from_slice(&bytes).unwrap_or_default();
        status.code = code.as_u16();
        if status.message.is_empty() {
            status.message = String::from_utf8_lossy(&bytes).trim().to_string();
        }
        return Err(ClientError::Api(status));
    }
    Ok(serde_json::from_slice(&bytes)?)
}

/// A not-found answer as `None`.
pub(crate) fn found<T>(result: Result<T, ClientError>) -> Result<Option<T>, ClientError> {
    match result {
        Ok(o) => Ok(Some(o)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collection_paths() {
        let cases = [
            ("", "v1", "pods", Some("ns"), "/api/v1/namespaces/ns/pods"),
            ("", "v1", "nodes", None, "/api/v1/nodes"),
            (
                "apps",
                "v1",
                "deployments",
                Some("a"),
                "/apis/apps/v1/namespaces/a/deployments",
            ),
            (
                "storage.k8s.io",
                "v1",
                "storageclasses",
                None,
                "/apis/storage.k8s.io/v1/storageclasses",
            ),
        ];
        for (group, version, plural, namespace, want) in cases {
            assert_eq!(collection_path(group, version, plural, namespace), want);
        }
    }
}

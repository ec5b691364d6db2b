//! The `metrics.k8s.io/v1beta1` API as metrics-server serves it behind the aggregator:
//! discovery, NodeMetrics and PodMetrics (get and list, label and field selectors, Tables with
//! the `cpu`, `memory` and `Window` columns), and the health endpoints. Pods and nodes come from
//! informers (their labels, phase and node), usage from the [`Storage`].

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{json, Value};
use tinykube_client::reflector::Store;
use tinykube_clock::Clock;
use tinykube_proto::labels::Selector;
use tinykube_proto::quantity::{Format, Quantity};

use crate::storage::{Storage, Usage};

pub const GROUP: &str = "metrics.k8s.io";
pub const VERSION: &str = "v1beta1";
const GROUP_VERSION: &str = "metrics.k8s.io/v1beta1";

/// What the handlers read.
pub struct Shared {
    pub storage: Arc<RwLock<Storage>>,
    pub nodes: Store<Node>,
    pub pods: Store<Pod>,
    pub clock: Clock,
}

type AppState = Arc<Shared>;

fn json_reply(code: StatusCode, body: Value) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn status(code: StatusCode, reason: &str, message: String, details: Option<Value>) -> Response {
    let mut s = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16()});
    if let Some(d) = details {
        s["details"] = d;
    }
    json_reply(code, s)
}

fn not_found(kind: &str, name: &str) -> Response {
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        format!("{kind}.{GROUP} \"{name}\" not found"),
        Some(json!({"name": name, "group": GROUP, "kind": kind})),
    )
}

fn bad_request(message: String) -> Response {
    status(StatusCode::BAD_REQUEST, "BadRequest", message, None)
}

fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "cpu": Quantity::from_nanos(i128::from(u.cpu_nanocores), Format::DecimalSI).to_string(),
        "memory": Quantity::from_value(i64::try_from(u.memory).unwrap_or(i64::MAX), Format::BinarySI).to_string(),
    })
}

fn meta(
    name: &str,
    namespace: Option<&str>,
    labels: Option<&BTreeMap<String, String>>,
    now: SystemTime,
) -> Value {
    let mut m = json!({"name": name});
    if let Some(ns) = namespace {
        m["namespace"] = json!(ns);
    }
    m["creationTimestamp"] = json!(rfc3339(now));
    if let Some(l) = labels.filter(|l| !l.is_empty()) {
        m["labels"] = json!(l);
    }
    m
}

/// The list options metrics-server honours.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    label_selector: Option<String>,
    field_selector: Option<String>,
    watch: Option<String>,
}

/// A parsed label selector and the `metadata.name` / `metadata.namespace` field requirements.
struct Filter {
    labels: Selector,
    fields: Selector,
}

impl Filter {
    fn parse(q: &ListQuery) -> Result<Filter, String> {
        let labels = Selector::parse(q.label_selector.as_deref().unwrap_or(""))
            .map_err(|e| format!("unable to parse requirement: {e}"))?;
        let fields = Selector::parse(q.field_selector.as_deref().unwrap_or(""))
            .map_err(|e| format!("invalid field selector: {e}"))?;
        if let Some(r) = fields
            .requirements()
            .iter()
            .find(|r| !matches!(r.key.as_str(), "metadata.name" | "metadata.namespace"))
        {
            return Err(format!("field label not supported: {}", r.key));
        }
        Ok(Filter { labels, fields })
    }

    fn matches(
        &self,
        labels: Option<&BTreeMap<String, String>>,
        name: &str,
        namespace: &str,
    ) -> bool {
        let empty = BTreeMap::new();
        self.labels.matches(labels.unwrap_or(&empty))
            && self.fields.matches_with(|k| match k {
                "metadata.name" => Some(name),
                "metadata.namespace" => Some(namespace),
                _ => None,
            })
    }
}

fn wants_table(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"))
}

/// A Table of metrics objects as metrics-server's `ConvertToTable` gives it.
fn table(items: &[Value]) -> Value {
    let col = |name: &str, format: &str, description: &str| json!({"name": name, "type": "string", "format": format, "description": description, "priority": 0});
    let rows: Vec<Value> = items
        .iter()
        .map(|item| {
            let (mut cpu, mut memory) = (Quantity::from_milli(0), Quantity::from_value(0, Format::BinarySI));
            let usages: Vec<&Value> = match item.get("containers").and_then(Value::as_array) {
                Some(cs) => cs.iter().map(|c| &c["usage"]).collect(),
                None => vec![&item["usage"]],
            };
            for u in usages {
                if let Ok(q) = Quantity::parse(u["cpu"].as_str().unwrap_or("0")) {
                    cpu = cpu + q;
                }
                if let Ok(q) = Quantity::parse(u["memory"].as_str().unwrap_or("0")) {
                    memory = memory + q;
                }
            }
            json!({
                "cells": [item["metadata"]["name"], cpu.to_string(), memory.to_string(), item["window"]],
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": item["metadata"]},
            })
        })
        .collect();
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
        "columnDefinitions": [
            col("Name", "name", "Name of the resource"),
            col("cpu", "quantity", ""),
            col("memory", "quantity", ""),
            col("Window", "duration", ""),
        ],
        "rows": rows,
    })
}

fn reply(headers: &HeaderMap, value: Value) -> Response {
    if wants_table(headers) {
        let items = match value.get("items").and_then(Value::as_array) {
            Some(items) => items.clone(),
            None => vec![value],
        };
        return json_reply(StatusCode::OK, table(&items));
    }
    json_reply(StatusCode::OK, value)
}

fn node_metrics(node: &Node, storage: &Storage, now: SystemTime) -> Option<Value> {
    let name = node.metadata.name.as_deref()?;
    let u = storage.node(name)?;
    Some(json!({
        "kind": "NodeMetrics", "apiVersion": GROUP_VERSION,
        "metadata": meta(name, None, node.metadata.labels.as_ref(), now),
        "timestamp": rfc3339(u.timestamp),
        "window": tinykube_proto::duration::format(u.window),
        "usage": usage_json(&u),
    }))
}

fn pod_metrics(pod: &Pod, storage: &Storage, now: SystemTime) -> Option<Value> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Running") {
        return None;
    }
    let node = pod.spec.as_ref()?.node_name.as_deref()?;
    let name = pod.metadata.name.as_deref()?;
    let namespace = pod.metadata.namespace.as_deref()?;
    let (first, containers) = storage.pod(node, namespace, name)?;
    let containers: Vec<Value> = containers
        .iter()
        .map(|(c, u)| json!({"name": c, "usage": usage_json(u)}))
        .collect();
    Some(json!({
        "kind": "PodMetrics", "apiVersion": GROUP_VERSION,
        "metadata": meta(name, Some(namespace), pod.metadata.labels.as_ref(), now),
        "timestamp": rfc3339(first.timestamp),
        "window": tinykube_proto::duration::format(first.window),
        "containers": containers,
    }))
}

fn list(kind: &str, items: Vec<Value>) -> Value {
    json!({"kind": format!("{kind}List"), "apiVersion": GROUP_VERSION, "metadata": {}, "items": items})
}

fn refuse_watch(q: &ListQuery) -> Option<Response> {
    q.watch
        .as_deref()
        .filter(|w| *w == "true" || *w == "1")
        .map(|_| {
            status(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource".into(),
                None,
            )
        })
}

async fn list_nodes(
    State(s): State<AppState>,
    Query(q): Query<ListQuery>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = refuse_watch(&q) {
        return r;
    }
    let filter = match Filter::parse(&q) {
        Ok(f) => f,
        Err(message) => return bad_request(message),
    };
    let now = s.clock.now();
    let storage = s.storage.read().unwrap_or_else(|e| e.into_inner());
    let mut nodes = s.nodes.list();
    nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let items = nodes
        .iter()
        .filter(|n| {
            let name = n.metadata.name.as_deref().unwrap_or("");
            filter.matches(n.metadata.labels.as_ref(), name, "")
        })
        .filter_map(|n| node_metrics(n, &storage, now))
        .collect();
    reply(&headers, list("NodeMetrics", items))
}

async fn get_node(
    State(s): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let now = s.clock.now();
    let storage = s.storage.read().unwrap_or_else(|e| e.into_inner());
    match s
        .nodes
        .get(&name)
        .and_then(|n| node_metrics(&n, &storage, now))
    {
        Some(m) => reply(&headers, m),
        None => not_found("nodemetrics", &name),
    }
}

fn pods_of(s: &Shared, namespace: Option<&str>, q: ListQuery, headers: &HeaderMap) -> Response {
    if let Some(r) = refuse_watch(&q) {
        return r;
    }
    let filter = match Filter::parse(&q) {
        Ok(f) => f,
        Err(message) => return bad_request(message),
    };
    let now = s.clock.now();
    let storage = s.storage.read().unwrap_or_else(|e| e.into_inner());
    let mut pods: Vec<_> = s
        .pods
        .list()
        .into_iter()
        .filter(|p| namespace.is_none_or(|ns| p.metadata.namespace.as_deref() == Some(ns)))
        .filter(|p| {
            filter.matches(
                p.metadata.labels.as_ref(),
                p.metadata.name.as_deref().unwrap_or(""),
                p.metadata.namespace.as_deref().unwrap_or(""),
            )
        })
        .collect();
    pods.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    let items = pods
        .iter()
        .filter_map(|p| pod_metrics(p, &storage, now))
        .collect();
    reply(headers, list("PodMetrics", items))
}

async fn list_all_pods(
    State(s): State<AppState>,
    Query(q): Query<ListQuery>,
    headers: HeaderMap,
) -> Response {
    pods_of(&s, None, q, &headers)
}

async fn list_pods(
    State(s): State<AppState>,
    Path(namespace): Path<String>,
    Query(q): Query<ListQuery>,
    headers: HeaderMap,
) -> Response {
    pods_of(&s, Some(&namespace), q, &headers)
}

async fn get_pod(
    State(s): State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let Some(pod) = s.pods.get(&format!("{namespace}/{name}")) else {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("pods \"{name}\" not found"),
            Some(json!({"name": name, "kind": "pods"})),
        );
    };
    let now = s.clock.now();
    let storage = s.storage.read().unwrap_or_else(|e| e.into_inner());
    match pod_metrics(&pod, &storage, now) {
        Some(m) => reply(&headers, m),
        None => not_found("podmetrics", &format!("{namespace}/{name}")),
    }
}

async fn api_group_list() -> Response {
    json_reply(
        StatusCode::OK,
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [group()]}),
    )
}

fn group() -> Value {
    let v = json!({"groupVersion": GROUP_VERSION, "version": VERSION});
    json!({"name": GROUP, "versions": [v], "preferredVersion": v})
}

async fn api_group() -> Response {
    let mut g = group();
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    json_reply(StatusCode::OK, g)
}

/// The APIResourceList the aggregator's discovery reads.
pub fn resource_list() -> Value {
    let verbs = json!(["get", "list"]);
    json!({
        "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
        "resources": [
            {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": verbs},
            {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": verbs},
        ],
    })
}

async fn api_resources() -> Response {
    json_reply(StatusCode::OK, resource_list())
}

async fn healthy() -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "ok").into_response()
}

async fn fallback(method: Method) -> Response {
    if method != Method::GET {
        return status(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource".into(),
            None,
        );
    }
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        "the server could not find the requested resource".into(),
        None,
    )
}

/// The routes of the metrics API and the health checks.
pub fn router(shared: AppState) -> Router {
    let base = "/apis/metrics.k8s.io/v1beta1";
    Router::new()
        .route("/healthz", get(healthy))
        .route("/livez", get(healthy))
        .route("/readyz", get(healthy))
        .route("/apis", get(api_group_list))
        .route("/apis/metrics.k8s.io", get(api_group))
        .route(base, get(api_resources))
        .route(&format!("{base}/nodes"), get(list_nodes))
        .route(&format!("{base}/nodes/{{name}}"), get(get_node))
        .route(&format!("{base}/pods"), get(list_all_pods))
        .route(
            &format!("{base}/namespaces/{{namespace}}/pods"),
            get(list_pods),
        )
        .route(
            &format!("{base}/namespaces/{{namespace}}/pods/{{name}}"),
            get(get_pod),
        )
        .fallback(fallback)
        .with_state(shared)
}

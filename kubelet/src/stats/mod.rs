//! Resource usage of this kubelet's nodes, served as upstream's kubelet serves it: the
//! accounting of what each container uses ([`meter`], from the baselines of [`model`]), and
//! the endpoints `/stats/summary` ([`summary`]), `/metrics/resource` and `/metrics`
//! ([`prometheus`]) and `/metrics/cadvisor` ([`cadvisor`]).
//!
//! One process may play many nodes on one port: the node a request is about is named by the
//! `Tinykube-Node` header (the API server's node proxy and the metrics server send it).
//! Without it, a process of one node answers for that node, and one of many answers 400.
//! Each request reads one node's account once (a short lock, no await) and renders it.

pub(crate) mod cadvisor;
pub(crate) mod meter;
pub(crate) mod model;
pub(crate) mod prometheus;
pub(crate) mod summary;
pub(crate) mod view;

#[cfg(test)]
mod handler_tests;
#[cfg(test)]
mod meter_tests;

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use k8s_openapi::api::core::v1::Pod;

pub(crate) use meter::{ContainerKey, ContainerMeter, ContainerSpec, NodeMeter};

use crate::runner::state::State as RunState;
use crate::{Kubelet, NodeState};

/// The request header naming the node a request is about.
pub const NODE_HEADER: &str = "Tinykube-Node";

/// The routes of this module.
pub(crate) fn routes() -> Router<Arc<Kubelet>> {
    Router::new()
        .route("/stats/summary", get(stats_summary))
        .route("/metrics/resource", get(metrics_resource))
        .route("/metrics/cadvisor", get(metrics_cadvisor))
        .route("/metrics", get(metrics))
}

fn plain(status: StatusCode, msg: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        msg,
    )
        .into_response()
}

/// Why a request names no node of this kubelet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// No header, and more than one node here.
    #[error("this kubelet runs {0} nodes: name the node in the {NODE_HEADER} header")]
    Ambiguous(usize),
    /// The header names a node this kubelet does not run.
    #[error("node \"{0}\" is not run by this kubelet")]
    Unknown(String),
}

impl IntoResponse for SelectError {
    fn into_response(self) -> Response {
        let status = match self {
            SelectError::Ambiguous(_) => StatusCode::BAD_REQUEST,
            SelectError::Unknown(_) => StatusCode::NOT_FOUND,
        };
        plain(status, format!("{self}\n"))
    }
}

/// The node a request is about: the `Tinykube-Node` header's, or the only one.
pub(crate) fn select<'a>(
    k: &'a Kubelet,
    headers: &HeaderMap,
) -> Result<&'a Arc<NodeState>, SelectError> {
    match headers.get(NODE_HEADER) {
        Some(v) => {
            let name = v.to_str().unwrap_or("").trim();
            k.node(name)
                .ok_or_else(|| SelectError::Unknown(name.to_string()))
        }
        None => match k.nodes.as_slice() {
            [one] => Ok(one),
            many => Err(SelectError::Ambiguous(many.len())),
        },
    }
}

/// The QoS class of a pod: its status's, or worked out from its containers' resources.
pub(crate) fn qos_class(pod: &Pod) -> &str {
    if let Some(q) = pod.status.as_ref().and_then(|s| s.qos_class.as_deref()) {
        return q;
    }
    let containers: Vec<_> = pod
        .spec
        .iter()
        .flat_map(|s| {
            s.containers
                .iter()
                .chain(s.init_containers.iter().flatten())
        })
        .collect();
    let resources = |c: &&k8s_openapi::api::core::v1::Container| {
        let r = c.resources.as_ref();
        let get = |limits: bool, name: &str| {
            r.and_then(|r| {
                if limits {
                    r.limits.as_ref()
                } else {
                    r.requests.as_ref()
                }
            })
            .and_then(|l| l.get(name))
            .map(|q| q.0.clone())
        };
        (
            get(false, "cpu"),
            get(true, "cpu"),
            get(false, "memory"),
            get(true, "memory"),
        )
    };
    if containers.iter().all(|c| {
        let (rc, lc, rm, lm) = resources(c);
        rc.is_none() && lc.is_none() && rm.is_none() && lm.is_none()
    }) {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let (rc, lc, rm, lm) = resources(c);
        lc.is_some()
            && lm.is_some()
            && rc.is_none_or(|r| Some(r) == lc)
            && rm.is_none_or(|r| Some(r) == lm)
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Whether a query flag is true (`strconv.ParseBool`'s spellings).
fn flag(q: &HashMap<String, String>, name: &str) -> bool {
    q.get(name)
        .is_some_and(|v| matches!(v.as_str(), "1" | "t" | "T" | "true" | "TRUE" | "True"))
}

async fn stats_summary(
    State(k): State<Arc<Kubelet>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let n = match select(&k, &headers) {
        Ok(n) => n,
        Err(e) => return e.into_response(),
    };
    let s = n.meter.snapshot();
    let body = summary::render(&n.config.name, &s, flag(&q, "only_cpu_and_memory"));
    (
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_string_pretty(&body).unwrap_or_default(),
    )
        .into_response()
}

fn text(body: String) -> Response {
    ([(header::CONTENT_TYPE, prometheus::CONTENT_TYPE)], body).into_response()
}

async fn metrics_resource(State(k): State<Arc<Kubelet>>, headers: HeaderMap) -> Response {
    match select(&k, &headers) {
        Ok(n) => text(prometheus::resource(&n.meter.snapshot())),
        Err(e) => e.into_response(),
    }
}

async fn metrics_cadvisor(State(k): State<Arc<Kubelet>>, headers: HeaderMap) -> Response {
    let n = match select(&k, &headers) {
        Ok(n) => n,
        Err(e) => return e.into_response(),
    };
    let machine_id = crate::hash::hex(&[b"machine", n.config.name.as_bytes()], 2);
    let ids = cadvisor::MachineIds {
        boot_id: k.machine.boot_id.clone(),
        system_uuid: crate::node::uuid_like(&machine_id),
        machine_id,
    };
    text(cadvisor::render(&n.meter.snapshot(), &ids))
}

async fn metrics(State(k): State<Arc<Kubelet>>, headers: HeaderMap) -> Response {
    let n = match select(&k, &headers) {
        Ok(n) => n,
        Err(e) => return e.into_response(),
    };
    let s = n.meter.snapshot();
    text(prometheus::kubelet(&n.config.name, &s, states(n, &s)))
}

/// How many of the node's containers are running (those in its account) or exited (by its
/// pods' states), and the pods with a running container.
fn states(n: &NodeState, s: &view::Snapshot) -> prometheus::States {
    let handles: Vec<_> = n
        .local()
        .pods
        .values()
        .filter_map(|r| r.facts.run.clone())
        .collect();
    let mut out = prometheus::States {
        running: s.pods.iter().map(|p| p.containers.len() as u64).sum(),
        running_pods: s.pods.iter().filter(|p| !p.containers.is_empty()).count() as u64,
        ..Default::default()
    };
    for h in handles {
        let run = h.run();
        for c in run.apps.iter().chain(run.inits.iter()) {
            match &c.state {
                RunState::Terminated(_) => out.exited += 1,
                RunState::Waiting { .. } if c.id.is_some() => out.exited += 1,
                _ => {}
            }
        }
    }
    out
}

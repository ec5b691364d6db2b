//! The kubelet's streaming endpoints, which the API server proxies `pods/log`, `pods/exec`,
//! `pods/attach` and `pods/portforward` to: `logs` (`/containerLogs/…`, plain or followed text),
//! `exec` (`/exec/…` and `/attach/…` over WebSocket or SPDY), `channel` (the channel protocols'
//! framing), `spdy` (SPDY/3.1) and `portforward` (`/portForward/…`). Pods are found by
//! namespace and name across every node this process plays, through [`crate::runner`]. Also
//! `simnet` (`/simnet/…`), where the other kubelet processes reach this one's pods.

pub mod channel;
pub mod exec;
pub mod logs;
pub mod portforward;
pub mod simnet;
pub mod spdy;
mod tty;

use std::sync::Arc;

use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;

use crate::runner::StreamError;
use crate::Kubelet;

/// The HTTP status of a failure, as upstream's kubelet answers it.
pub(crate) fn status_of(e: &StreamError) -> StatusCode {
    match e {
        StreamError::PodNotFound { .. } | StreamError::ContainerNotFound { .. } => {
            StatusCode::NOT_FOUND
        }
        StreamError::NotRunning(_) => StatusCode::BAD_REQUEST,
    }
}

/// The streaming routes.
pub(crate) fn routes() -> Router<Arc<Kubelet>> {
    Router::new()
        .route(
            "/containerLogs/{namespace}/{pod}/{container}",
            get(logs::container_logs),
        )
        .route(
            "/exec/{namespace}/{pod}/{container}",
            get(exec::exec).post(exec::exec),
        )
        .route(
            "/attach/{namespace}/{pod}/{container}",
            get(exec::attach).post(exec::attach),
        )
        .route(
            "/portForward/{namespace}/{pod}",
            get(portforward::port_forward).post(portforward::port_forward),
        )
        .route("/simnet/connect", post(simnet::connect))
        .route("/simnet/http", post(simnet::http))
        .route("/simnet/grpc", post(simnet::grpc))
}

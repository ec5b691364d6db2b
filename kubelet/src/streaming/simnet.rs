//! The kubelet's end of the simulated network between kubelet processes: `POST /simnet/http`,
//! `/simnet/connect` and `/simnet/grpc` (JSON of [`crate::runner::remote`]) reach what listens
//! at a pod IP of this process, as a pod of another kubelet would. Answered from this
//! process's listeners only, never passed on, so a request cannot loop.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use tinykube_runtime::{NetError, Server};

use crate::runner::remote::{Answer, GrpcCall, HttpCall, Target, WireResponse};
use crate::Kubelet;

/// What listens at `ip:port` here.
fn local(k: &Kubelet, ip: &str, port: u16) -> Result<Arc<dyn Server>, NetError> {
    k.network.local(ip, port, |ip| k.holds_ip(ip))
}

pub(crate) async fn connect(
    State(k): State<Arc<Kubelet>>,
    Json(t): Json<Target>,
) -> Json<Answer<()>> {
    Json(local(&k, &t.ip, t.port).map(|_| ()).into())
}

pub(crate) async fn http(
    State(k): State<Arc<Kubelet>>,
    Json(call): Json<HttpCall>,
) -> Json<Answer<WireResponse>> {
    let answer =
        local(&k, &call.ip, call.port).map(|s| s.http(&call.request.into(), k.clock.now()).into());
    Json(answer.into())
}

pub(crate) async fn grpc(
    State(k): State<Arc<Kubelet>>,
    Json(call): Json<GrpcCall>,
) -> Json<Answer<bool>> {
    let answer = local(&k, &call.ip, call.port)
        .and_then(|s| s.grpc_health(&call.service).ok_or(NetError::Refused));
    Json(answer.into())
}

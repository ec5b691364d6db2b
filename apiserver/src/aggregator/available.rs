//! The availability controller, as upstream's (local and remote AvailableConditionController)
//! in one task of the API server: a Local APIService is Available (`Local`); a remote one is
//! checked: its Service must exist and listen on the port named, its Endpoints must have a
//! ready address for that port, and its backend must answer `GET /apis/GROUP/VERSION` in
//! time (`Passed`, or False with upstream's reason and message). The check's answer, the
//! backend's APIResourceList, is kept for discovery. The dial target is the endpoint's address
//! and port, or the `HOST:PORT` its Endpoints publish in `aggregator.tinykube.io/address`. Runs on every change of APIServices,
//! Services, Endpoints and CustomResourceDefinitions, and every 10 s.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method};
use serde_json::{json, Value};
use tinykube_proto::registry;

use super::{info, local, Remote, ServiceRef};
use crate::error::{ApiError, ApiResult};
use crate::fieldmanager::{self, Manager};
use crate::handlers::forward;
use crate::object;
use crate::registry::apiregistration::{LOCAL_MESSAGE, LOCAL_REASON};
use crate::state::AppState;
use crate::storage::{self, Change};

/// How often every APIService is checked when nothing changes.
const RESYNC: Duration = Duration::from_secs(10);
/// How long a backend has to answer its discovery check (upstream's client timeout).
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest discovery document read from a backend.
const DISCOVERY_LIMIT: usize = 4 * 1024 * 1024;
/// The manager the controller's status writes are recorded under.
const MANAGER: &str = "kube-apiserver";

/// The Endpoints annotation naming the `HOST:PORT` the aggregator dials instead of the
/// endpoint's address: Endpoints may not hold loopback addresses (upstream's validation), and
/// tinykube's aggregated servers listen on loopback, as a kubelet publishes its reachable
/// address in `kubelet.tinykube.io/address` while its node's InternalIP is never dialled.
pub const DIAL_ANNOTATION: &str = "aggregator.tinykube.io/address";

/// Why a backend cannot be used: an Available condition's reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub reason: &'static str,
    pub message: String,
}

/// The desired Available condition: status, reason, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub status: &'static str,
    pub reason: String,
    pub message: String,
}

impl Condition {
    fn local() -> Condition {
        Condition {
            status: "True",
            reason: LOCAL_REASON.into(),
            message: LOCAL_MESSAGE.into(),
        }
    }

    fn passed() -> Condition {
        Condition {
            status: "True",
            reason: "Passed".into(),
            message: "all checks passed".into(),
        }
    }

    fn failed(p: Problem) -> Condition {
        Condition {
            status: "False",
            reason: p.reason.into(),
            message: p.message,
        }
    }
}

/// The Service's port `port` (its name) and the first ready address of its Endpoints on that
/// port name, as upstream's service resolver finds them.
pub fn backend_of(
    service: &ServiceRef,
    svc: Option<&Value>,
    endpoints: Option<&Value>,
) -> Result<SocketAddr, Problem> {
    let (ns, name) = (&service.namespace, &service.name);
    let Some(svc) = svc else {
        return Err(Problem {
            reason: "ServiceNotFound",
            message: format!("service/{name} in {ns:?} is not present"),
        });
    };
    let ports = svc.pointer("/spec/ports").and_then(Value::as_array);
    let Some(port) = ports
        .into_iter()
        .flatten()
        .find(|p| p["port"].as_i64() == Some(service.port))
    else {
        return Err(Problem {
            reason: "ServicePortError",
            message: format!(
                "service/{name} in {ns:?} is not listening on port {}",
                service.port
            ),
        });
    };
    let port_name = port["name"].as_str().unwrap_or("");
    let Some(endpoints) = endpoints else {
        return Err(Problem {
            reason: "EndpointsNotFound",
            message: format!("cannot find endpoints for service/{name} in {ns:?}"),
        });
    };
    let subsets = endpoints.get("subsets").and_then(Value::as_array);
    for subset in subsets.into_iter().flatten() {
        let target = subset["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"].as_str().unwrap_or("") == port_name)
            .and_then(|p| p["port"].as_i64())
            .and_then(|p| u16::try_from(p).ok());
        let ip = subset["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|a| a["ip"].as_str().and_then(|ip| ip.parse::<IpAddr>().ok()));
        if let (Some(port), Some(ip)) = (target, ip) {
            let published = endpoints
                .pointer(&format!(
                    "/metadata/annotations/{}",
                    DIAL_ANNOTATION.replace('/', "~1")
                ))
                .and_then(Value::as_str)
                .and_then(|a| a.parse::<SocketAddr>().ok());
            return Ok(published.unwrap_or(SocketAddr::new(ip, port)));
        }
    }
    Err(Problem {
        reason: "MissingEndpoints",
        message: format!(
            "endpoints for service/{name} in {ns:?} have no addresses with port name {port_name:?}"
        ),
    })
}

/// Where a remote APIService's backend is reached now.
pub fn resolve(state: &AppState, service: &ServiceRef) -> Result<SocketAddr, Problem> {
    let services = registry::builtin("", "v1", "services").expect("services are served");
    let endpoints = registry::builtin("", "v1", "endpoints").expect("endpoints are served");
    let read = |info, name: &str| {
        state
            .objects
            .try_get(info, Some(&service.namespace), name)
            .map_err(|e| Problem {
                reason: "ServiceAccessError",
                message: format!(
                    "service/{} in {:?} cannot be checked due to: {e}",
                    service.name, service.namespace
                ),
            })
    };
    let svc = read(services, &service.name)?;
    let eps = read(endpoints, &service.name)?;
    backend_of(service, svc.as_ref(), eps.as_ref())
}

/// The discovery path a remote APIService's backend must serve.
fn discovery_path(remote: &Remote) -> String {
    if remote.group.is_empty() {
        format!("/api/{}", remote.version)
    } else {
        format!("/apis/{}/{}", remote.group, remote.version)
    }
}

/// Upstream's discovery check: GET the group version as `system:kube-aggregator` in
/// `system:masters`; any 2xx passes. Returns the condition and the document read.
async fn check(state: &AppState, remote: &Remote) -> (Condition, Option<Value>) {
    let addr = match resolve(state, &remote.service) {
        Ok(addr) => addr,
        Err(p) => return (Condition::failed(p), None),
    };
    let path = discovery_path(remote);
    let url = format!("http://{addr}{path}");
    let failed = |why: String| {
        Condition::failed(Problem {
            reason: "FailedDiscoveryCheck",
            message: format!("failing or missing response from {url}: {why}"),
        })
    };
    let extra = [
        (
            HeaderName::from_static("x-remote-user"),
            HeaderValue::from_static("system:kube-aggregator"),
        ),
        (
            HeaderName::from_static("x-remote-group"),
            HeaderValue::from_static("system:masters"),
        ),
        (header::ACCEPT, HeaderValue::from_static("application/json")),
    ];
    let no_headers = HeaderMap::new();
    let asked = forward(addr, Method::GET, &path, &no_headers, &extra, Body::empty());
    let resp = match tokio::time::timeout(CHECK_TIMEOUT, asked).await {
        Err(_) => {
            return (
                failed(format!("Get {url:?}: context deadline exceeded")),
                None,
            )
        }
        Ok(Err(e)) => return (failed(format!("Get {url:?}: {}", e.0)), None),
        Ok(Ok(resp)) => resp,
    };
    let code = resp.status();
    if !code.is_success() && !code.is_redirection() {
        let why = format!("bad status from {url}: {}", code.as_u16());
        return (failed(why), None);
    }
    let body = tokio::time::timeout(
        CHECK_TIMEOUT,
        axum::body::to_bytes(resp.into_body(), DISCOVERY_LIMIT),
    )
    .await;
    let document = match body {
        Ok(Ok(bytes)) => serde_json::from_slice::<Value>(&bytes)
            .ok()
            .filter(|v| v["kind"] == "APIResourceList"),
        _ => None,
    };
    (Condition::passed(), document)
}

/// Set the Available condition as upstream's SetAPIServiceCondition: the transition time
/// moves only when the status changes. `None` when nothing changes.
pub fn with_condition(obj: &Value, want: &Condition, now: &str) -> Option<Value> {
    let mut new = obj.clone();
    let status = new
        .as_object_mut()?
        .entry("status")
        .or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = status
        .as_object_mut()?
        .entry("conditions")
        .or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut()?;
    match list.iter_mut().find(|c| c["type"] == "Available") {
        Some(c) => {
            if c["status"] != want.status {
                c["status"] = json!(want.status);
                c["lastTransitionTime"] = json!(now);
            }
            c["reason"] = json!(want.reason);
            c["message"] = json!(want.message);
        }
        None => list.push(json!({"type": "Available", "status": want.status,
            "lastTransitionTime": now, "reason": want.reason, "message": want.message})),
    }
    (new != *obj).then_some(new)
}

async fn write_condition(state: &AppState, name: &str, want: &Condition) -> ApiResult<()> {
    let now = object::timestamp(state.clock.utc());
    let manager = Manager {
        name: MANAGER.into(),
        api_version: info().api_version(),
        time: now.clone(),
    };
    let result = state
        .objects
        .update(info(), None, name, |current| {
            let Some(mut new) = with_condition(&current, want, &now) else {
                return Ok(Change::Unchanged);
            };
            fieldmanager::record_update(info(), &manager, Some("status"), Some(&current), &mut new);
            Ok(Change::Write(new))
        })
        .await;
    match result {
        Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// One pass: the Local APIServices of definitions, then every APIService's condition; the
/// remote ones are published for the proxy and discovery.
async fn sync(state: &AppState) -> ApiResult<()> {
    local::sync_crds(state).await?;
    let page = state.objects.list(info(), None, None, None)?;
    let previous = state.aggregator.snapshot();
    let mut remotes = Vec::new();
    for obj in &page.items {
        let want = match Remote::of(obj) {
            None => Condition::local(),
            Some(mut remote) => {
                let (want, document) = check(state, &remote).await;
                remote.available = want.status == "True";
                // A backend that stops answering keeps its last document: discovery then
                // says it is Stale.
                remote.resources = document.or_else(|| {
                    previous
                        .iter()
                        .find(|p| p.name == remote.name && p.service == remote.service)
                        .and_then(|p| p.resources.clone())
                });
                remotes.push(remote);
                want
            }
        };
        write_condition(state, object::name(obj), &want).await?;
    }
    state.aggregator.publish(remotes);
    Ok(())
}

/// Wait for a change of what the checks read, or the resync period.
async fn changes(state: &AppState, revision: u64) {
    let store = state.objects.store();
    let core = |plural| storage::kind_prefix(registry::builtin("", "v1", plural).expect("served"));
    let crds = registry::builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .expect("customresourcedefinitions are served");
    let prefixes = [
        storage::kind_prefix(info()),
        core("services"),
        core("endpoints"),
        storage::kind_prefix(crds),
    ];
    let mut watches: Vec<_> = prefixes
        .iter()
        .filter_map(|p| store.watch(p, revision).ok())
        .collect();
    if watches.is_empty() {
        tokio::time::sleep(RESYNC).await;
        return;
    }
    let any = futures::future::select_all(watches.iter_mut().map(|w| Box::pin(w.next())));
    tokio::select! {
        _ = any => {
            // Let a burst of writes (a Service, its Endpoints, the APIService) land first.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        _ = tokio::time::sleep(RESYNC) => {}
    }
}

/// Run the controller until the server stops.
pub fn start(state: AppState) {
    tokio::spawn(async move {
        let shutdown = state.shutdown.clone();
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = run(state) => {}
        }
    });
}

async fn run(state: AppState) {
    loop {
        let revision = state.objects.store().revision();
        if let Err(e) = sync(&state).await {
            tracing::warn!(error = %e, "checking APIServices");
        }
        changes(&state, revision).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service_ref() -> ServiceRef {
        ServiceRef {
            namespace: "kube-system".into(),
            name: "metrics-server".into(),
            port: 443,
        }
    }

    #[test]
    fn backends_resolve_as_upstream() {
        let svc = json!({"spec": {"ports": [{"name": "https", "port": 443, "targetPort": 4443}]}});
        let eps = |subsets: Value| json!({ "subsets": subsets });
        let ready = eps(json!([{"addresses": [{"ip": "10.244.0.5"}],
                                 "ports": [{"name": "https", "port": 4443}]}]));
        type Case<'a> = (
            Option<Value>,
            Option<Value>,
            Result<&'a str, (&'a str, &'a str)>,
        );
        let cases: Vec<Case> = vec![
            (Some(svc.clone()), Some(ready.clone()), Ok("10.244.0.5:4443")),
            (
                Some(svc.clone()),
                Some({
                    let mut e = ready.clone();
                    e["metadata"] = json!({"annotations": {DIAL_ANNOTATION: "127.0.0.1:40000"}});
                    e
                }),
                Ok("127.0.0.1:40000"),
            ),
            (
                None,
                None,
                Err(("ServiceNotFound", "service/metrics-server in \"kube-system\" is not present")),
            ),
            (
                Some(json!({"spec": {"ports": [{"name": "https", "port": 8443}]}})),
                None,
                Err((
                    "ServicePortError",
                    "service/metrics-server in \"kube-system\" is not listening on port 443",
                )),
            ),
            (
                Some(svc.clone()),
                None,
                Err((
                    "EndpointsNotFound",
                    "cannot find endpoints for service/metrics-server in \"kube-system\"",
                )),
            ),
            (
                Some(svc.clone()),
                Some(eps(json!([{"notReadyAddresses": [{"ip": "127.0.0.1"}],
                                  "ports": [{"name": "https", "port": 4443}]}]))),
                Err((
                    "MissingEndpoints",
                    "endpoints for service/metrics-server in \"kube-system\" have no addresses with port name \"https\"",
                )),
            ),
            (
                Some(svc.clone()),
                Some(eps(json!([{"addresses": [{"ip": "127.0.0.1"}],
                                  "ports": [{"name": "http", "port": 80}]}]))),
                Err((
                    "MissingEndpoints",
                    "endpoints for service/metrics-server in \"kube-system\" have no addresses with port name \"https\"",
                )),
            ),
        ];
        for (svc, eps, want) in cases {
            let got = backend_of(&service_ref(), svc.as_ref(), eps.as_ref())
                .map(|a| a.to_string())
                .map_err(|p| (p.reason, p.message));
            let want = want.map(String::from).map_err(|(r, m)| (r, m.to_string()));
            assert_eq!(got, want);
        }
    }

    #[test]
    fn conditions_move_their_transition_time_only_on_a_new_status() {
        let obj = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"}});
        let down = Condition::failed(Problem {
            reason: "MissingEndpoints",
            message: "m".into(),
        });
        let first = with_condition(&obj, &down, "t1").unwrap();
        assert_eq!(first["status"]["conditions"][0]["lastTransitionTime"], "t1");
        assert_eq!(with_condition(&first, &down, "t2"), None);
        let other = Condition::failed(Problem {
            reason: "FailedDiscoveryCheck",
            message: "n".into(),
        });
        let second = with_condition(&first, &other, "t2").unwrap();
        let c = &second["status"]["conditions"][0];
        assert_eq!(
            (c["lastTransitionTime"].as_str(), c["reason"].as_str()),
            (Some("t1"), Some("FailedDiscoveryCheck"))
        );
        let up = with_condition(&second, &Condition::passed(), "t3").unwrap();
        let c = &up["status"]["conditions"][0];
        assert_eq!(
            (
                c["status"].as_str(),
                c["lastTransitionTime"].as_str(),
                c["message"].as_str()
            ),
            (Some("True"), Some("t3"), Some("all checks passed"))
        );
    }
}

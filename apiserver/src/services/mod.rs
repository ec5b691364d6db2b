//! Cluster IPs and node ports of Services, as upstream's service REST storage allocates them:
//! a requested value is honoured or refused (taken, out of range) with upstream's messages,
//! others are picked at random; what a write no longer holds is released after it lands, and a
//! deleted Service releases everything. The records live in the store (`alloc`), are reserved
//! before the Service is written and released if that write fails, and `repair` reconciles them
//! with the stored Services at start-up, so a crash in between leaks nothing for long.
//! `kubernetes` keeps the `kubernetes` Service, its Endpoints and EndpointSlices listing every
//! API server whose identity lease (`leases`) is live.

pub mod alloc;
pub mod kubernetes;
pub mod leases;
pub mod ranges;
pub mod repair;

use serde_json::{json, Value};
use tinykube_proto::registry::ResourceInfo;

use crate::error::{ApiError, ApiResult};
use crate::registry::field::FieldError;
use crate::registry::service::{go_strings, wants_cluster_ip, wants_node_ports};
use crate::state::AppState;
use crate::storage::{Change, Outcome};
use alloc::{Owner, Slot};
pub use ranges::{IpRange, PortRange};

/// The ranges Services draw from (`--service-cluster-ip-range`, `--service-node-port-range`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ServiceNet {
    pub ips: IpRange,
    pub ports: PortRange,
}

/// Random picks tried before searching the whole range.
const RANDOM_TRIES: u32 = 32;

/// Whether `info` is core/v1 services.
pub fn is_service(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.kind == "Service" && info.custom.is_none()
}

fn services_info() -> &'static ResourceInfo {
    tinykube_proto::registry::builtin("", "v1", "services").expect("services are served")
}

/// What a stored service holds: its cluster IPs (not `None`) and its node ports.
pub fn held(svc: &Value) -> Vec<Slot> {
    let mut out: Vec<Slot> = Vec::new();
    if wants_cluster_ip(svc) {
        let ips = svc.pointer("/spec/clusterIPs").and_then(Value::as_array);
        for ip in ips.into_iter().flatten().filter_map(Value::as_str) {
            if ip != "None" && !ip.is_empty() {
                out.push(Slot::Ip(ip.to_string()));
            }
        }
    }
    if wants_node_ports(svc) {
        for p in svc
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let n = p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
            if n != 0 && !out.contains(&Slot::Port(n)) {
                out.push(Slot::Port(n));
            }
        }
    }
    out
}

fn invalid(svc: &Value, err: FieldError) -> ApiError {
    let name = svc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    ApiError::invalid(services_info(), name, vec![err])
}

/// Reserve `slot` (or, for a dry run, only check it is free); `false` when taken.
async fn take(state: &AppState, slot: &Slot, owner: &Owner, dry_run: bool) -> ApiResult<bool> {
    let store = state.objects.store();
    if dry_run {
        return Ok(alloc::holder(store, slot)?.is_none());
    }
    alloc::reserve(store, slot, owner).await
}

/// Reserve a random free value from `candidates`: random picks, then an exhaustive search.
async fn take_random(
    state: &AppState,
    owner: &Owner,
    dry_run: bool,
    random: impl Fn(u32) -> Slot,
    every: impl Iterator<Item = Slot>,
    taken: &[Slot],
) -> ApiResult<Option<Slot>> {
    for attempt in 0..RANDOM_TRIES {
        let slot = random(attempt);
        if !taken.contains(&slot) && take(state, &slot, owner, dry_run).await? {
            return Ok(Some(slot));
        }
    }
    for slot in every {
        if !taken.contains(&slot) && take(state, &slot, owner, dry_run).await? {
            return Ok(Some(slot));
        }
    }
    Ok(None)
}

/// Release what `reserved` holds (a write that did not land).
pub async fn release_slots(state: &AppState, reserved: &[Slot], uid: &str) {
    for slot in reserved {
        if let Err(e) = alloc::release(state.objects.store(), slot, uid).await {
            tracing::warn!(?slot, error = %e, "releasing a service allocation");
        }
    }
}

/// Reserve what `new` needs beyond what `old` (the stored service, on update) holds, filling
/// in random cluster IPs and node ports; returns the slots reserved by this call. On a refusal
/// nothing stays reserved.
pub async fn allocate(
    state: &AppState,
    old: Option<&Value>,
    new: &mut Value,
    dry_run: bool,
) -> ApiResult<Vec<Slot>> {
    let mut reserved = Vec::new();
    let owner = Owner::of(new);
    match allocate_into(state, old, new, dry_run, &owner, &mut reserved).await {
        Ok(()) => Ok(reserved),
        Err(e) => {
            if !dry_run {
                release_slots(state, &reserved, &owner.uid).await;
            }
            Err(e)
        }
    }
}

async fn allocate_into(
    state: &AppState,
    old: Option<&Value>,
    new: &mut Value,
    dry_run: bool,
    owner: &Owner,
    reserved: &mut Vec<Slot>,
) -> ApiResult<()> {
    let net = state.services;
    let had = old.map(held).unwrap_or_default();
    if wants_cluster_ip(new) {
        let ips: Vec<String> = new
            .pointer("/spec/clusterIPs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        match ips.first().filter(|ip| !ip.is_empty()) {
            Some(ip) => {
                let slot = Slot::Ip(ip.clone());
                if !had.contains(&slot) {
                    let problem = if !net.ips.contains(ip) {
                        Some(format!(
                            "the provided IP ({ip}) is not in the valid range. The range of valid IPs is {}",
                            net.ips
                        ))
                    } else if !take(state, &slot, owner, dry_run).await? {
                        Some("provided IP is already allocated".to_string())
                    } else {
                        reserved.push(slot);
                        None
                    };
                    if let Some(problem) = problem {
                        return Err(invalid(
                            new,
                            FieldError::invalid_go(
                                "spec.clusterIPs",
                                go_strings(&ips),
                                format!("failed to allocate IP {ip}: {problem}"),
                            ),
                        ));
                    }
                }
            }
            None => {
                let picked = take_random(
                    state,
                    owner,
                    dry_run,
                    |a| Slot::Ip(net.ips.random(a)),
                    net.ips.all().map(Slot::Ip),
                    &[],
                )
                .await?;
                let Some(Slot::Ip(ip)) = picked else {
                    return Err(ApiError::Internal(
                        "failed to allocate a serviceIP: range is full".into(),
                    ));
                };
                reserved.push(Slot::Ip(ip.clone()));
                let spec = &mut new["spec"];
                spec["clusterIP"] = json!(ip);
                spec["clusterIPs"] = json!([ip]);
            }
        }
    }
    if !wants_node_ports(new) {
        return Ok(());
    }
    let count = new
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    for i in 0..count {
        let requested = new["spec"]["ports"][i]
            .get("nodePort")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if requested != 0 {
            let slot = Slot::Port(requested);
            if had.contains(&slot) || reserved.contains(&slot) {
                continue;
            }
            let problem = if !net.ports.contains(requested) {
                Some(format!(
                    "provided port is not in the valid range. The range of valid ports is {}",
                    net.ports
                ))
            } else if !take(state, &slot, owner, dry_run).await? {
                Some("provided port is already allocated".to_string())
            } else {
                reserved.push(slot);
                None
            };
            if let Some(problem) = problem {
                return Err(invalid(
                    new,
                    FieldError::invalid(format!("spec.ports[{i}].nodePort"), requested, problem),
                ));
            }
            continue;
        }
        let picked = take_random(
            state,
            owner,
            dry_run,
            |a| Slot::Port(net.ports.random(a)),
            net.ports.all().map(Slot::Port),
            &had,
        )
        .await?;
        let Some(Slot::Port(port)) = picked else {
            return Err(ApiError::Internal(
                "failed to allocate a nodePort: range is full".into(),
            ));
        };
        reserved.push(Slot::Port(port));
        new["spec"]["ports"][i]["nodePort"] = json!(port);
    }
    Ok(())
}

/// After an update landed: release what the old service held and the new one does not.
pub async fn release_unused(state: &AppState, old: &Value, new: &Value) {
    let keep = held(new);
    let gone: Vec<Slot> = held(old)
        .into_iter()
        .filter(|s| !keep.contains(s))
        .collect();
    release_slots(state, &gone, &Owner::of(old).uid).await;
}

/// After a service is gone: release everything it held.
pub async fn release_all(state: &AppState, svc: &Value) {
    release_slots(state, &held(svc), &Owner::of(svc).uid).await;
}

/// The read-modify-write loop of every Service update (main resource and status), with the
/// allocations of the changed spec reserved before the write and released if it does not land.
pub async fn update(
    state: &AppState,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    mut change: impl FnMut(Value) -> ApiResult<Change>,
) -> ApiResult<Outcome> {
    loop {
        let (current, revision) = state.objects.get_at(info, ns, name)?;
        let uid = Owner::of(&current).uid;
        match change(current.clone())? {
            Change::Unchanged => return Ok(Outcome::Unchanged(current)),
            Change::Delete => {
                let done = state
                    .objects
                    .change_at(info, ns, name, revision, Change::Delete)
                    .await?;
                if let Some(outcome) = done {
                    release_all(state, &current).await;
                    return Ok(outcome);
                }
            }
            Change::Write(mut new) => {
                let reserved = allocate(state, Some(&current), &mut new, false).await?;
                let done = state
                    .objects
                    .change_at(info, ns, name, revision, Change::Write(new))
                    .await;
                match done {
                    Ok(Some(outcome)) => {
                        release_unused(state, &current, &outcome_object(&outcome)).await;
                        return Ok(outcome);
                    }
                    Ok(None) => release_slots(state, &reserved, &uid).await,
                    Err(e) => {
                        release_slots(state, &reserved, &uid).await;
                        return Err(e);
                    }
                }
            }
        }
    }
}

fn outcome_object(outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Written(v) | Outcome::Deleted(v) | Outcome::Unchanged(v) => v.clone(),
    }
}

//! Every API server's identity Lease (`kube-system/apiserver-…`, coordination.k8s.io/v1), as
//! upstream's identity lease controller keeps it, and the lease endpoint reconciler that lists
//! the API servers whose lease is fresh in the `kubernetes` Endpoints (`kubernetes.rs`).
//!
//! - The Lease: labels `apiserver.kubernetes.io/identity: kube-apiserver` and
//!   `kubernetes.io/hostname`, holderIdentity `ID_UUID`, leaseDurationSeconds 3600, renewed every
//!   10 s on the server's clock. Upstream names it after a hash of the hostname; tinykube's API
//!   servers share one host, so the hash also covers the address served on, and that address
//!   (`IP:PORT`) is in the annotation `apiserver.tinykube.io/address`.
//! - Live: renewed less than 15 s ago (upstream's endpoint reconciler TTL). Each renewal is
//!   followed by a reconcile of the Service, Endpoints and EndpointSlices.
//! - Gone: on shutdown the server deletes its lease and reconciles without itself; a lease
//!   not renewed for its whole duration is deleted by any server (upstream's lease GC), checked
//!   at start and hourly.

use std::net::SocketAddr;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};
use tinykube_proto::registry::{builtin, ResourceInfo};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::kubernetes;
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::state::AppState;
use crate::storage::Change;

/// Upstream's `IdentityLeaseComponentLabelKey` and the value kube-apiserver gives it.
pub const IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";
pub const IDENTITY: &str = "kube-apiserver";
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// Where a lease says which address its API server serves on.
pub const ADDRESS_ANNOTATION: &str = "apiserver.tinykube.io/address";
const NAMESPACE: &str = "kube-system";
/// Upstream's `IdentityLeaseDurationSeconds`: how long an unrenewed lease lingers before GC.
pub const LEASE_DURATION_SECONDS: i64 = 3600;
/// Upstream's `IdentityLeaseRenewIntervalPeriod` (and `DefaultEndpointReconcilerInterval`).
pub const RENEW_INTERVAL: Duration = Duration::from_secs(10);
/// Upstream's `DefaultEndpointReconcilerTTL`: a lease renewed longer ago than this is not live.
pub const LIVE_TTL: Duration = Duration::from_secs(15);
/// Upstream's `IdentityLeaseGCPeriod`.
pub const GC_PERIOD: Duration = Duration::from_secs(3600);

fn leases_info() -> &'static ResourceInfo {
    builtin("coordination.k8s.io", "v1", "leases").expect("leases are served")
}

/// Who this API server is.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The lease's name, `apiserver-` and 26 base32 characters.
    pub id: String,
    /// `ID_UUID`, new at every start.
    pub holder: String,
    pub hostname: String,
    pub address: SocketAddr,
}

impl Identity {
    pub fn new(address: SocketAddr) -> Identity {
        let hostname = hostname();
        let id = lease_name(&hostname, address);
        Identity {
            holder: format!("{id}_{}", uuid::Uuid::new_v4()),
            id,
            hostname,
            address,
        }
    }
}

/// The machine's hostname (as upstream's identity and `kubernetes.io/hostname` label use it).
fn hostname() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_lowercase())
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// `apiserver-` and the lower-case unpadded base32 of a 128-bit FNV-1a hash of the
/// length-prefixed hostname, `kube-apiserver` and address: upstream's shape (it hashes with
/// SHA-256 and leaves the address out), stable across restarts on the same address.
pub fn lease_name(hostname: &str, address: SocketAddr) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    let mut hash = OFFSET;
    for part in [hostname, IDENTITY, &address.to_string()] {
        let len = (part.len() as u16).to_be_bytes();
        for b in len.iter().chain(part.as_bytes()) {
            hash ^= u128::from(*b);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    format!("apiserver-{}", base32(&hash.to_be_bytes()))
}

/// RFC 4648 base32, lower case, no padding.
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::new();
    let (mut buffer, mut bits) = (0u32, 0u32);
    for b in bytes {
        buffer = (buffer << 8) | u32::from(*b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// `metav1.MicroTime` as it marshals (`2026-11-22T07:35:09.123456Z`).
fn micro_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Whether `lease` is an API server's identity lease.
fn is_identity(lease: &Value) -> bool {
    lease
        .pointer("/metadata/labels")
        .and_then(|l| l.get(IDENTITY_LABEL))
        == Some(&json!(IDENTITY))
}

/// How long ago `lease` was renewed, at `now`; `None` without a readable renewTime.
fn since_renewal(lease: &Value, now: DateTime<Utc>) -> Option<Duration> {
    let renewed = lease.pointer("/spec/renewTime").and_then(Value::as_str)?;
    let renewed = DateTime::parse_from_rfc3339(renewed).ok()?;
    Some(
        (now - renewed.with_timezone(&Utc))
            .to_std()
            .unwrap_or_default(),
    )
}

/// The address of a live identity lease: renewed within [`LIVE_TTL`] of `now`.
pub fn live_address(lease: &Value, now: DateTime<Utc>) -> Option<SocketAddr> {
    if !is_identity(lease) || since_renewal(lease, now)? >= LIVE_TTL {
        return None;
    }
    let address = lease
        .pointer("/metadata/annotations")?
        .get(ADDRESS_ANNOTATION)?;
    address.as_str()?.parse().ok()
}

/// Whether an identity lease outlived its duration unrenewed (upstream's GC deletes it).
pub fn expired(lease: &Value, now: DateTime<Utc>) -> bool {
    let duration = lease
        .pointer("/spec/leaseDurationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(LEASE_DURATION_SECONDS)
        .max(0) as u64;
    is_identity(lease)
        && since_renewal(lease, now).is_none_or(|d| d > Duration::from_secs(duration))
}

fn identity_leases(state: &AppState) -> ApiResult<Vec<Value>> {
    let page = state
        .objects
        .list(leases_info(), Some(NAMESPACE), None, None)?;
    Ok(page.items.into_iter().filter(is_identity).collect())
}

/// The addresses of the API servers whose lease is live now, sorted.
pub fn live(state: &AppState) -> ApiResult<Vec<SocketAddr>> {
    let now = state.clock.utc();
    let mut out: Vec<SocketAddr> = identity_leases(state)?
        .iter()
        .filter_map(|l| live_address(l, now))
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// Create or renew `me`'s lease.
pub async fn renew(state: &AppState, me: &Identity) -> ApiResult<()> {
    let info = leases_info();
    let now = micro_time(state.clock.utc());
    let fill = |mut lease: Value| {
        lease["metadata"]["labels"][IDENTITY_LABEL] = json!(IDENTITY);
        lease["metadata"]["labels"][HOSTNAME_LABEL] = json!(me.hostname);
        lease["metadata"]["annotations"][ADDRESS_ANNOTATION] = json!(me.address.to_string());
        lease["spec"]["holderIdentity"] = json!(me.holder);
        lease["spec"]["leaseDurationSeconds"] = json!(LEASE_DURATION_SECONDS);
        lease["spec"]["renewTime"] = json!(now);
        lease
    };
    loop {
        let outcome = state
            .objects
            .update(info, Some(NAMESPACE), &me.id, |current| {
                Ok(Change::Write(fill(current)))
            })
            .await;
        match outcome {
            Ok(_) => return Ok(()),
            Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
        let lease = fill(json!({
            "kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
            "metadata": {
                "name": me.id, "namespace": NAMESPACE,
                "uid": uuid::Uuid::new_v4().to_string(),
                "creationTimestamp": object::timestamp(state.clock.utc()),
                "labels": {}, "annotations": {},
            },
            "spec": {},
        }));
        match state.objects.create(info, &lease).await {
            Ok(_) => return Ok(()),
            // Created meanwhile (by our predecessor on this address): renew that one.
            Err(ApiError::AlreadyExists { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Delete the identity lease `name` if `doomed` still says so of the stored one.
async fn delete_if(
    state: &AppState,
    name: &str,
    doomed: impl Fn(&Value) -> bool,
) -> ApiResult<bool> {
    let outcome = state
        .objects
        .update(leases_info(), Some(NAMESPACE), name, |lease| {
            Ok(if doomed(&lease) {
                Change::Delete
            } else {
                Change::Unchanged
            })
        })
        .await;
    match outcome {
        Ok(crate::storage::Outcome::Deleted(_)) => Ok(true),
        Ok(_) | Err(ApiError::NotFound { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Delete the identity leases not renewed for their whole duration; returns how many.
pub async fn collect_garbage(state: &AppState) -> ApiResult<usize> {
    let mut deleted = 0;
    for lease in identity_leases(state)? {
        let name = object::name(&lease).to_string();
        if expired(&lease, state.clock.utc())
            && delete_if(state, &name, |l| expired(l, state.clock.utc())).await?
        {
            tracing::info!(lease = %name, "deleted an expired API server identity lease");
            deleted += 1;
        }
    }
    Ok(deleted)
}

/// At start: write `me`'s lease; when the store is this server's alone, delete the other
/// identity leases (a previous run's, perhaps on another port); collect expired ones.
pub async fn start_up(state: &AppState, me: &Identity, shared_store: bool) -> ApiResult<()> {
    renew(state, me).await?;
    if !shared_store {
        for lease in identity_leases(state)? {
            let name = object::name(&lease).to_string();
            if name != me.id {
                delete_if(state, &name, is_identity).await?;
            }
        }
    }
    collect_garbage(state).await?;
    Ok(())
}

/// Renew `me`'s lease and reconcile the `kubernetes` endpoints with the live leases.
async fn reconcile(state: &AppState, me: &Identity) -> ApiResult<()> {
    renew(state, me).await?;
    kubernetes::sync_endpoints(state, &live(state)?).await
}

/// Delete `me`'s lease (if it is still ours) and reconcile the endpoints without it.
async fn remove(state: &AppState, me: &Identity) -> ApiResult<()> {
    let holder = json!(me.holder);
    delete_if(state, &me.id, |l| {
        l.pointer("/spec/holderIdentity") == Some(&holder)
    })
    .await?;
    let live = live(state)?;
    if live.is_empty() {
        // As upstream: the last API server leaves its address rather than none.
        return Ok(());
    }
    kubernetes::sync_endpoints(state, &live).await
}

/// The running lease loop of one API server.
pub struct Reconciler {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Reconciler {
    /// Renew and reconcile every [`RENEW_INTERVAL`], collect garbage every [`GC_PERIOD`], until
    /// the server shuts down or [`stop`](Self::stop) is called; then remove `me`.
    pub fn start(state: AppState, me: Identity) -> Reconciler {
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            let mut renewals = state.clock.interval(RENEW_INTERVAL);
            let mut collections = state.clock.interval(GC_PERIOD);
            // Both first ticks are due at once; start-up just did both.
            renewals.reset();
            collections.reset();
            loop {
                tokio::select! {
                    _ = token.cancelled() => break,
                    _ = state.shutdown.cancelled() => break,
                    _ = renewals.tick() => {
                        if let Err(e) = reconcile(&state, &me).await {
                            tracing::warn!(error = %e, "renewing the identity lease and the kubernetes endpoints");
                        }
                    }
                    _ = collections.tick() => {
                        if let Err(e) = collect_garbage(&state).await {
                            tracing::warn!(error = %e, "collecting expired identity leases");
                        }
                    }
                }
            }
            if let Err(e) = remove(&state, &me).await {
                tracing::warn!(error = %e, "removing the identity lease and this server's endpoint");
            }
        });
        Reconciler { stop, task }
    }

    /// Stop renewing, remove this server's lease and endpoint, and wait until that is done.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn lease(labels: Value, address: &str, renew: Option<&str>, duration: i64) -> Value {
        json!({
            "metadata": {"labels": labels, "annotations": {ADDRESS_ANNOTATION: address}},
            "spec": {"renewTime": renew, "leaseDurationSeconds": duration},
        })
    }

    #[test]
    fn live_expired_and_neither() {
        let ours = json!({IDENTITY_LABEL: IDENTITY});
        let now = at("2030-01-01T00:10:00Z");
        // (lease, live address, expired)
        let cases = [
            (
                lease(
                    ours.clone(),
                    "127.0.0.1:6443",
                    Some("2030-01-01T00:09:55.5Z"),
                    3600,
                ),
                Some("127.0.0.1:6443"),
                false,
            ),
            (
                lease(
                    ours.clone(),
                    "127.0.0.1:6443",
                    Some("2030-01-01T00:09:45Z"),
                    3600,
                ),
                None,
                false,
            ),
            (
                lease(
                    ours.clone(),
                    "127.0.0.1:6443",
                    Some("2030-01-01T00:09:46Z"),
                    3600,
                ),
                Some("127.0.0.1:6443"),
                false,
            ),
            (
                lease(
                    ours.clone(),
                    "127.0.0.1:6443",
                    Some("2029-12-31T23:09:59Z"),
                    3600,
                ),
                None,
                true,
            ),
            (
                lease(
                    ours.clone(),
                    "127.0.0.1:6443",
                    Some("2030-01-01T00:05:00Z"),
                    60,
                ),
                None,
                true,
            ),
            (
                lease(ours.clone(), "127.0.0.1:6443", None, 3600),
                None,
                true,
            ),
            (
                lease(
                    ours.clone(),
                    "not an address",
                    Some("2030-01-01T00:09:59Z"),
                    3600,
                ),
                None,
                false,
            ),
            (
                // A leader election lease, or another component's identity: never ours to judge.
                lease(
                    json!({IDENTITY_LABEL: "kube-controller-manager"}),
                    "127.0.0.1:1",
                    None,
                    15,
                ),
                None,
                false,
            ),
            (lease(json!({}), "127.0.0.1:1", None, 15), None, false),
        ];
        for (l, want_live, want_expired) in cases {
            let got = live_address(&l, now).map(|a| a.to_string());
            assert_eq!(got.as_deref(), want_live, "{l}");
            assert_eq!(expired(&l, now), want_expired, "{l}");
        }
    }

    #[test]
    fn lease_names_as_upstream_shapes_them_one_per_address() {
        let a = lease_name("host", "127.0.0.1:6443".parse().unwrap());
        assert!(a.starts_with("apiserver-"), "{a}");
        assert_eq!(a.len(), "apiserver-".len() + 26, "{a}");
        assert!(a[10..]
            .chars()
            .all(|c| c.is_ascii_lowercase() || ('2'..='7').contains(&c)));
        assert_eq!(a, lease_name("host", "127.0.0.1:6443".parse().unwrap()));
        assert_ne!(a, lease_name("host", "127.0.0.1:6444".parse().unwrap()));
        assert_ne!(a, lease_name("other", "127.0.0.1:6443".parse().unwrap()));
    }

    #[test]
    fn base32_as_rfc_4648() {
        let cases: [(&[u8], &str); 5] = [
            (b"", ""),
            (b"f", "my"),
            (b"fo", "mzxq"),
            (b"foob", "mzxw6yq"),
            (b"foobar", "mzxw6ytboi"),
        ];
        for (input, want) in cases {
            assert_eq!(base32(input), want);
        }
    }

    #[test]
    fn micro_time_as_metav1_marshals_it() {
        assert_eq!(
            micro_time(at("2030-01-01T00:00:01.5Z")),
            "2030-01-01T00:00:01.500000Z"
        );
    }
}

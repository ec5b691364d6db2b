//! Leader election on a coordination.k8s.io/v1 Lease, as upstream's leaderelection: acquire when
//! the lease is free or expired, renew every retry period, give up leadership when renewals fail
//! for the renew deadline, and release the lease on shutdown so a successor takes over at once.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use tokio::sync::watch;

use crate::api::Api;
use crate::config::Client;
use crate::error::ClientError;
use crate::events::{EventType, Recorder};

/// Upstream's election timings, the defaults of kube-scheduler's and kube-controller-manager's
/// `--leader-elect-*` flags and of every [`LeaseConfig`].
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);

/// Timings of an election (upstream's defaults: [`LEASE_DURATION`], [`RENEW_DEADLINE`],
/// [`RETRY_PERIOD`]).
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    /// When set, leadership changes are recorded as upstream's `LeaderElection` events on the
    /// Lease ("ID became leader", "ID stopped leading") from this component.
    pub event_source: Option<String>,
}

impl LeaseConfig {
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        LeaseConfig {
            namespace: namespace.to_string(),
            name: name.to_string(),
            identity: identity.to_string(),
            lease_duration: LEASE_DURATION,
            renew_deadline: RENEW_DEADLINE,
            retry_period: RETRY_PERIOD,
            event_source: None,
        }
    }
}

/// This machine's host name (`/etc/hostname`), `localhost` when it has none.
pub fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// A holder identity as upstream's components choose theirs: `HOST_UUID`, with a random
/// version-4 UUID so that two processes on one host never share one.
pub fn unique_identity(host: &str) -> String {
    use rand::Rng;
    let mut b: [u8; 16] = rand::rng().random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{host}_{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Runs an election; `is_leader()` says whether this process currently leads.
pub struct LeaderElector {
    api: Api<Lease>,
    /// Writes the `LeaderElection` events, when the config names a source.
    recorder: Option<Recorder>,
    cfg: LeaseConfig,
    leading: watch::Sender<bool>,
}

enum Attempt {
    Acquired,
    HeldByOther,
}

impl LeaderElector {
    pub fn new(client: Client, cfg: LeaseConfig) -> Self {
        let (leading, _) = watch::channel(false);
        LeaderElector {
            recorder: cfg
                .event_source
                .as_deref()
                .map(|source| Recorder::new(client.clone(), source, None)),
            api: Api::namespaced(client, &cfg.namespace),
            cfg,
            leading,
        }
    }

    /// Follow leadership changes.
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.leading.subscribe()
    }

    fn fresh_spec(&self, now: Timestamp, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.cfg.identity.clone()),
            lease_duration_seconds: Some(self.cfg.lease_duration.as_secs() as i32),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }

    /// One acquire-or-renew attempt.
    async fn try_acquire_or_renew(&self) -> Result<Attempt, ClientError> {
        let now = crate::now();
        let Some(mut lease) = self.api.get_opt(&self.cfg.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.cfg.name.clone()),
                    namespace: Some(self.cfg.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(self.fresh_spec(now, 0)),
            };
            return match self.api.create(&lease).await {
                Ok(_) => Ok(Attempt::Acquired),
                Err(e) if e.code() == Some(409) => Ok(Attempt::HeldByOther),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let mine = holder == self.cfg.identity;
        let duration =
            SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(0)));
        let expired = match &spec.renew_time {
            Some(MicroTime(t)) => t.checked_add(duration).map(|end| end < now).unwrap_or(true),
            None => true,
        };
        if !mine && !holder.is_empty() && !expired {
            return Ok(Attempt::HeldByOther);
        }
        let new_spec = if mine {
            LeaseSpec {
                renew_time: Some(MicroTime(now)),
                lease_duration_seconds: Some(self.cfg.lease_duration.as_secs() as i32),
                ..spec
            }
        } else {
            self.fresh_spec(now, spec.lease_transitions.unwrap_or(0) + 1)
        };
        lease.spec = Some(new_spec);
        match self.api.replace(&self.cfg.name, &lease).await {
            Ok(_) => Ok(Attempt::Acquired),
            Err(e) if e.is_conflict() => Ok(Attempt::HeldByOther),
            Err(e) => Err(e),
        }
    }

    /// Give the lease up so the next candidate need not wait for it to expire. As upstream's
    /// release: no holder (`holderIdentity: ""`), a 1 s duration, acquire and renew time now,
    /// the transitions kept.
    async fn release(&self) {
        if let Ok(Some(mut lease)) = self.api.get_opt(&self.cfg.name).await {
            let spec = lease.spec.clone().unwrap_or_default();
            if spec.holder_identity.as_deref() == Some(&self.cfg.identity) {
                let now = crate::now();
                lease.spec = Some(LeaseSpec {
                    holder_identity: Some(String::new()),
                    lease_duration_seconds: Some(1),
                    acquire_time: Some(MicroTime(now)),
                    renew_time: Some(MicroTime(now)),
                    ..spec
                });
                let _ = self.api.replace(&self.cfg.name, &lease).await;
            }
        }
    }

    /// Record `what` ("became leader", "stopped leading") as a `LeaderElection` event on the
    /// Lease, when the config names an event source.
    async fn record(&self, what: &str) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        let lease = self.api.get_opt(&self.cfg.name).await.ok().flatten();
        let meta = lease.map(|l| l.metadata).unwrap_or_default();
        let regarding = ObjectReference {
            api_version: Some("coordination.k8s.io/v1".into()),
            kind: Some("Lease".into()),
            namespace: Some(self.cfg.namespace.clone()),
            name: Some(self.cfg.name.clone()),
            uid: meta.uid,
            resource_version: meta.resource_version,
            ..Default::default()
        };
        let message = format!("{} {what}", self.cfg.identity);
        if let Err(e) = recorder
            .record(&regarding, EventType::Normal, "LeaderElection", &message)
            .await
        {
            tracing::warn!(error = %e, "could not record the leader election event");
        }
    }

    /// Campaign and hold leadership until `stop` resolves; leadership is reported through
    /// [`LeaderElector::leading`]. Returns when stopped (after releasing the lease).
    pub async fn run(&self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        let mut last_renew: Option<tokio::time::Instant> = None;
        loop {
            let attempt = self.try_acquire_or_renew().await;
            let now = tokio::time::Instant::now();
            match attempt {
                Ok(Attempt::Acquired) => {
                    if last_renew.is_none() {
                        tracing::info!(lease = %self.cfg.name, identity = %self.cfg.identity, "became leader");
                        self.record("became leader").await;
                    }
                    last_renew = Some(now);
                    self.leading
                        .send_if_modified(|l| !std::mem::replace(l, true));
                }
                Ok(Attempt::HeldByOther) | Err(_) => {
                    if let Err(e) = &attempt {
                        tracing::warn!(error = %e, "leader election attempt failed");
                    }
                    let lost = last_renew
                        .is_some_and(|t| now.duration_since(t) > self.cfg.renew_deadline)
                        || matches!(attempt, Ok(Attempt::HeldByOther));
                    if lost && last_renew.is_some() {
                        tracing::warn!(lease = %self.cfg.name, "lost leadership");
                        self.record("stopped leading").await;
                        last_renew = None;
                        self.leading
                            .send_if_modified(|l| std::mem::replace(l, false));
                    }
                }
            }
            tokio::select! {
                _ = &mut stop => {
                    if *self.leading.borrow() {
                        self.record("stopped leading").await;
                        self.release().await;
                        self.leading.send_replace(false);
                    }
                    return;
                }
                _ = tokio::time::sleep(self.cfg.retry_period) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_host_and_a_uuid() {
        let id = unique_identity("vm");
        let (host, uuid) = id.split_once('_').expect("HOST_UUID");
        assert_eq!(host, "vm");
        let lens: Vec<usize> = uuid.split('-').map(str::len).collect();
        assert_eq!(lens, [8, 4, 4, 4, 12], "{id}");
        assert!(
            uuid.chars().all(|c| c == '-' || c.is_ascii_hexdigit()),
            "{id}"
        );
        assert_eq!(uuid.as_bytes()[14], b'4', "version 4: {id}");
        assert_ne!(id, unique_identity("vm"));
    }
}

//! Pods held at Permit, as upstream's waiting pods map: a pod one or more Permit plugins asked
//! to wait for stays reserved on its node until every one of them allows it, anyone rejects it,
//! or the first of their timeouts passes. Its binding cycle waits in [`WaitingPod::wait`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio::sync::watch;
use tokio::time::Instant;

use super::Status;

/// The longest a Permit plugin may hold a pod, as upstream's maxTimeout.
pub const MAX_WAIT: Duration = Duration::from_secs(15 * 60);

/// The key a waiting pod is found by: its uid (`namespace/name` for a pod without one).
pub fn pod_key(pod: &Pod) -> String {
    match &pod.metadata.uid {
        Some(uid) if !uid.is_empty() => uid.clone(),
        _ => format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        ),
    }
}

/// A pod held at Permit.
pub struct WaitingPod {
    pod: Arc<Pod>,
    /// Plugins still to allow it, with when their wait runs out and how long it was.
    pending: Mutex<BTreeMap<String, (Instant, Duration)>>,
    /// The verdict, once there is one (the first allow-by-all or reject wins).
    verdict: watch::Sender<Option<Status>>,
}

impl WaitingPod {
    fn new(pod: Arc<Pod>, waits: &[(&str, Duration)]) -> WaitingPod {
        let now = Instant::now();
        WaitingPod {
            pod,
            pending: Mutex::new(
                waits
                    .iter()
                    .map(|(name, d)| (name.to_string(), (now + *d, *d)))
                    .collect(),
            ),
            verdict: watch::channel(None).0,
        }
    }

    pub fn pod(&self) -> &Pod {
        &self.pod
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (Instant, Duration)>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The Permit plugins that have not allowed the pod yet.
    pub fn pending_plugins(&self) -> Vec<String> {
        self.pending().keys().cloned().collect()
    }

    fn decide(&self, status: Status) {
        self.verdict.send_if_modified(|v| {
            if v.is_some() {
                return false;
            }
            *v = Some(status);
            true
        });
    }

    /// `plugin` allows the pod; once every waiting plugin has, it is bound.
    pub fn allow(&self, plugin: &str) {
        let mut pending = self.pending();
        pending.remove(plugin);
        if pending.is_empty() {
            self.decide(Status::Success);
        }
    }

    /// Turn the pod down: it is unreserved and goes back to the queue as unschedulable.
    pub fn reject(&self, plugin: &str, message: &str) {
        tracing::debug!(pod = ?self.pod.metadata.name, plugin, message, "waiting pod rejected");
        self.decide(Status::unschedulable(message));
    }

    /// Wait for the verdict; a plugin's timeout passing rejects the pod.
    pub async fn wait(&self) -> Status {
        let mut rx = self.verdict.subscribe();
        loop {
            if let Some(v) = rx.borrow_and_update().clone() {
                return v;
            }
            let first = self
                .pending()
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(name, (at, d))| (name.clone(), *at, *d));
            let Some((plugin, at, timeout)) = first else {
                // Allowed by all (the verdict is on its way) or never held.
                let _ = rx.changed().await;
                continue;
            };
            tokio::select! {
                _ = rx.changed() => {}
                _ = tokio::time::sleep_until(at) => {
                    let message = format!(
                        "rejected due to timeout after waiting {} at plugin {plugin}",
                        go_duration(timeout)
                    );
                    self.reject(&plugin, &message);
                }
            }
        }
    }
}

/// The pods held at Permit, by [`pod_key`]; cheap to clone, shared by every profile.
#[derive(Clone, Default)]
pub struct WaitingPods(Arc<Mutex<HashMap<String, Arc<WaitingPod>>>>);

impl WaitingPods {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<WaitingPod>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hold `pod` for the plugins that asked to wait, each for at most [`MAX_WAIT`].
    pub(crate) fn add(&self, pod: Arc<Pod>, waits: &[(&str, Duration)]) -> Arc<WaitingPod> {
        let waits: Vec<(&str, Duration)> = waits
            .iter()
            .map(|(n, d)| (*n, (*d).min(MAX_WAIT)))
            .collect();
        let wp = Arc::new(WaitingPod::new(pod, &waits));
        self.map().insert(pod_key(&wp.pod), wp.clone());
        wp
    }

    pub(crate) fn remove(&self, key: &str) {
        self.map().remove(key);
    }

    /// The waiting pod with this uid.
    pub fn get(&self, key: &str) -> Option<Arc<WaitingPod>> {
        self.map().get(key).cloned()
    }

    /// Every waiting pod (upstream's IterateOverWaitingPods).
    pub fn list(&self) -> Vec<Arc<WaitingPod>> {
        self.map().values().cloned().collect()
    }

    /// Reject the pod if it is waiting (it was deleted, say); whether it was.
    pub fn reject(&self, key: &str, message: &str) -> bool {
        match self.get(key) {
            Some(wp) => {
                wp.reject("", message);
                true
            }
            None => false,
        }
    }
}

/// A duration as Go prints one (`500ms`, `1.5s`, `1m30s`), for upstream's messages.
pub fn go_duration(d: Duration) -> String {
    fn decimal(n: u128, unit: u128) -> String {
        let (whole, rest) = (n / unit, n % unit);
        if rest == 0 {
            return whole.to_string();
        }
        let width = (unit - 1).to_string().len();
        let fraction = format!("{rest:0width$}");
        format!("{whole}.{}", fraction.trim_end_matches('0'))
    }
    let n = d.as_nanos();
    const SECOND: u128 = 1_000_000_000;
    match n {
        0 => "0s".into(),
        n if n < 1_000 => format!("{n}ns"),
        n if n < 1_000_000 => format!("{}µs", decimal(n, 1_000)),
        n if n < SECOND => format!("{}ms", decimal(n, 1_000_000)),
        n => {
            let (hours, minutes) = (n / (3600 * SECOND), n / (60 * SECOND) % 60);
            let mut out = String::new();
            if hours > 0 {
                out.push_str(&format!("{hours}h"));
            }
            if hours > 0 || minutes > 0 {
                out.push_str(&format!("{minutes}m"));
            }
            out.push_str(&format!("{}s", decimal(n % (60 * SECOND), SECOND)));
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.uid = Some(uid.into());
        p.metadata.name = Some(uid.into());
        Arc::new(p)
    }

    #[test]
    fn durations_print_as_go_does() {
        for (d, want) in [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(15), "15ns"),
            (Duration::from_micros(1500), "1.5ms"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_secs(1), "1s"),
            (Duration::from_millis(2250), "2.25s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(15 * 60), "15m0s"),
            (Duration::from_secs(3600 + 1), "1h0m1s"),
        ] {
            assert_eq!(go_duration(d), want, "{d:?}");
        }
    }

    /// What, plugins waiting with their timeouts in seconds, plugins that allow, a rejection,
    /// and the verdict.
    type Case<'a> = (
        &'a str,
        Vec<(&'a str, u64)>,
        Vec<&'a str>,
        Option<&'a str>,
        Status,
    );

    #[tokio::test(start_paused = true)]
    async fn a_waiting_pod_is_allowed_rejected_or_times_out() {
        let cases: Vec<Case> = vec![
            (
                "every plugin allows",
                vec![("A", 10), ("B", 10)],
                vec!["A", "B"],
                None,
                Status::Success,
            ),
            (
                "one allows, the other times out first",
                vec![("A", 10), ("B", 3)],
                vec!["A"],
                None,
                Status::unschedulable("rejected due to timeout after waiting 3s at plugin B"),
            ),
            (
                "a reject wins",
                vec![("A", 10)],
                vec![],
                Some("no room"),
                Status::unschedulable("no room"),
            ),
            (
                "the wait is capped at 15 minutes",
                vec![("A", 3600)],
                vec![],
                None,
                Status::unschedulable("rejected due to timeout after waiting 15m0s at plugin A"),
            ),
        ];
        for (what, waits, allows, reject, want) in cases {
            let map = WaitingPods::default();
            let waits: Vec<(&str, Duration)> = waits
                .iter()
                .map(|(n, s)| (*n, Duration::from_secs(*s)))
                .collect();
            let wp = map.add(pod("u1"), &waits);
            let started = Instant::now();
            let waiter = tokio::spawn({
                let wp = wp.clone();
                async move { wp.wait().await }
            });
            tokio::time::sleep(Duration::from_secs(1)).await;
            let held = map.get("u1").expect("held").pending_plugins();
            assert_eq!(held.len(), waits.len(), "{what}");
            for a in allows {
                wp.allow(a);
            }
            if let Some(m) = reject {
                assert!(map.reject("u1", m), "{what}");
            }
            assert_eq!(waiter.await.unwrap(), want, "{what}");
            let waited = Instant::now() - started;
            assert!(
                waited <= MAX_WAIT + Duration::from_secs(1),
                "{what}: {waited:?}"
            );
        }
        assert!(!WaitingPods::default().reject("absent", "removed"));
    }
}

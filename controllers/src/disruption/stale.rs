//! Stale `DisruptionTarget` conditions: a pod an eviction (or the taint manager) marked
//! `DisruptionTarget=True` but that was never deleted gets the condition set to False after
//! two minutes, as upstream's disruption controller does.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use tinykube_client::{Api, ClientError};

use super::Controller;
use crate::util::{is_pod_terminal, split_key};

/// How long a `DisruptionTarget=True` condition may stay on a pod that is not terminating.
pub const STALE_POD_DISRUPTION_TIMEOUT: Duration = Duration::from_secs(120);

/// The condition type, and the reason the kubelet's own (never stale) conditions carry.
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
const TERMINATION_BY_KUBELET: &str = "TerminationByKubelet";

/// How long until the pod's `DisruptionTarget` condition counts as stale (zero: it is), or
/// `None` when the pod has no condition that can go stale.
pub fn stale_wait(pod: &Pod, now: Timestamp) -> Option<Duration> {
    if pod.metadata.deletion_timestamp.is_some() || is_pod_terminal(pod) {
        return None;
    }
    let cond = pod
        .status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == DISRUPTION_TARGET)?;
    if cond.status != "True" || cond.reason.as_deref() == Some(TERMINATION_BY_KUBELET) {
        return None;
    }
    let elapsed = match cond.last_transition_time.as_ref().map(|t| t.0) {
        // No transition time: Go's zero time, long ago.
        None => Duration::MAX,
        Some(t) if t <= now => now.duration_since(t).unsigned_abs(),
        Some(_) => Duration::ZERO,
    };
    Some(STALE_POD_DISRUPTION_TIMEOUT.saturating_sub(elapsed))
}

#[derive(Debug, thiserror::Error)]
pub enum StaleError {
    #[error("clearing the DisruptionTarget condition: {0}")]
    Update(#[source] ClientError),
}

impl Controller {
    /// Set the pod's stale `DisruptionTarget` condition to False, or look again when it is due.
    pub async fn sync_stale(&self, key: &str) -> Result<(), StaleError> {
        let Some(pod) = self.pods.get(key) else {
            return Ok(());
        };
        let now = self.ctx.clock.timestamp();
        match stale_wait(&pod, now) {
            None => return Ok(()),
            Some(wait) if !wait.is_zero() => {
                self.stale_queue.add_after_clock(key, wait);
                return Ok(());
            }
            Some(_) => {}
        }
        let mut pod = (*pod).clone();
        let Some(conditions) = pod.status.as_mut().and_then(|s| s.conditions.as_mut()) else {
            return Ok(());
        };
        for c in conditions
            .iter_mut()
            .filter(|c| c.type_ == DISRUPTION_TARGET)
        {
            *c = PodCondition {
                type_: DISRUPTION_TARGET.into(),
                status: "False".into(),
                last_transition_time: Some(Time(now)),
                ..Default::default()
            };
        }
        let (ns, name) = split_key(key);
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), ns);
        match api.replace_status(name, &pod).await {
            Ok(_) => {
                tracing::info!(pod = key, "reset stale DisruptionTarget condition to False");
                Ok(())
            }
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(StaleError::Update(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodStatus;

    fn pod(status: &str, reason: &str, at: Option<i64>, phase: &str, deleting: bool) -> Pod {
        let mut p = Pod {
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: Some(vec![PodCondition {
                    type_: DISRUPTION_TARGET.into(),
                    status: status.into(),
                    reason: Some(reason.into()),
                    last_transition_time: at.map(|s| Time(Timestamp::from_second(s).unwrap())),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        if deleting {
            p.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        }
        p
    }

    #[test]
    fn conditions_go_stale_two_minutes_after_they_were_set() {
        let now = Timestamp::from_second(1000).unwrap();
        let evicted = "EvictionByEvictionAPI";
        let table = [
            (
                pod("True", evicted, Some(1000), "Running", false),
                Some(120),
            ),
            (pod("True", evicted, Some(900), "Running", false), Some(20)),
            (pod("True", evicted, Some(100), "Running", false), Some(0)),
            (pod("True", evicted, None, "Running", false), Some(0)),
            (
                pod("True", evicted, Some(2000), "Running", false),
                Some(120),
            ),
            (pod("False", evicted, Some(100), "Running", false), None),
            (
                pod("True", "TerminationByKubelet", Some(100), "Running", false),
                None,
            ),
            (pod("True", evicted, Some(100), "Failed", false), None),
            (pod("True", evicted, Some(100), "Running", true), None),
            (Pod::default(), None),
        ];
        for (i, (p, want)) in table.into_iter().enumerate() {
            assert_eq!(
                stale_wait(&p, now),
                want.map(Duration::from_secs),
                "row {i}"
            );
        }
    }
}

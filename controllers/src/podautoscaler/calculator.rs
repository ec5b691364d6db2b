//! Upstream's replica calculator for resource metrics: from each pod's usage (milli-units,
//! summed over its containers) and requests, the replica count that brings the average to the
//! target. Pods being deleted or failed are ignored; pending pods, and for CPU pods still in
//! their initialization period whose readiness or sample is not yet trustworthy, count as
//! unready; pods without a sample are missing. Within the tolerance nothing changes; when pods
//! are unready or missing the ratio is recomputed assuming they use nothing (scaling up) or
//! their whole request / the target (scaling down), and a recomputation that flips the
//! direction is dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use tinykube_proto::quantity::Quantity;

/// One pod's sample: its usage in milli-units, when it was taken and over which window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PodMetric {
    pub value: i64,
    pub timestamp: Timestamp,
    pub window: Duration,
}

/// Samples by pod name.
pub type PodMetrics = BTreeMap<String, PodMetric>;

/// Why no replica count could be computed; the texts are upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalcError {
    #[error("no pods returned by selector while calculating replica count")]
    NoPods,
    #[error("did not receive metrics for targeted pods (pods might be unready)")]
    NoReadyMetrics,
    #[error("missing request for {resource} in container {container} of Pod {pod}")]
    MissingRequest {
        resource: String,
        container: String,
        pod: String,
    },
    #[error("no metrics returned matched known pods")]
    NoMatchingPods,
}

/// The tunables of the calculation (the controller manager's flags).
#[derive(Debug, Clone, Copy)]
pub struct Calculator {
    /// A ratio this close to 1 changes nothing (`--horizontal-pod-autoscaler-tolerance`).
    pub tolerance: f64,
    /// After its start a pod's CPU sample is trusted only once it was ready for a whole
    /// sample window (`--horizontal-pod-autoscaler-cpu-initialization-period`).
    pub cpu_initialization_period: Duration,
    /// A pod that turned unready this soon after starting is taken as never ready yet
    /// (`--horizontal-pod-autoscaler-initial-readiness-delay`).
    pub initial_readiness_delay: Duration,
}

impl Default for Calculator {
    fn default() -> Self {
        Calculator {
            tolerance: 0.1,
            cpu_initialization_period: Duration::from_secs(300),
            initial_readiness_delay: Duration::from_secs(30),
        }
    }
}

/// A utilization-target result: replicas, utilization (percent of request, from the ready
/// pods' samples) and their average raw usage (milli-units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utilization {
    pub replicas: i32,
    pub utilization: i32,
    pub raw_average: i64,
}

fn after(t: Timestamp, d: Duration) -> Timestamp {
    t.checked_add(SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX))
        .unwrap_or(t)
}

struct Groups {
    ready: usize,
    unready: BTreeSet<String>,
    missing: BTreeSet<String>,
    ignored: BTreeSet<String>,
}

impl Calculator {
    fn group_pods(
        &self,
        pods: &[Pod],
        metrics: &PodMetrics,
        resource: &str,
        now: Timestamp,
    ) -> Groups {
        let mut g = Groups {
            ready: 0,
            unready: BTreeSet::new(),
            missing: BTreeSet::new(),
            ignored: BTreeSet::new(),
        };
        for pod in pods {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let status = pod.status.as_ref();
            let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("");
            if pod.metadata.deletion_timestamp.is_some() || phase == "Failed" {
                g.ignored.insert(name);
                continue;
            }
            if phase == "Pending" {
                g.unready.insert(name);
                continue;
            }
            let Some(metric) = metrics.get(&name) else {
                g.missing.insert(name);
                continue;
            };
            if resource == "cpu" {
                let ready = status
                    .and_then(|s| s.conditions.as_ref())
                    .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
                let started = status.and_then(|s| s.start_time.as_ref()).map(|t| t.0);
                let unready = match (ready, started) {
                    (Some(cond), Some(start)) => {
                        let changed = cond
                            .last_transition_time
                            .as_ref()
                            .map(|t| t.0)
                            .unwrap_or(start);
                        if after(start, self.cpu_initialization_period) > now {
                            // Still initializing: a sample from before the pod had been ready
                            // a whole window is not trusted.
                            cond.status == "False"
                                || metric.timestamp < after(changed, metric.window)
                        } else {
                            // Unready now, and never ready since its first readiness delay.
                            cond.status == "False"
                                && after(start, self.initial_readiness_delay) > changed
                        }
                    }
                    _ => true,
                };
                if unready {
                    g.unready.insert(name);
                    continue;
                }
            }
            g.ready += 1;
        }
        g
    }

    /// Replicas for a utilization target (percent of the pods' requests), as upstream's
    /// GetResourceReplicas. `container` narrows usage and requests to one container.
    #[allow(clippy::too_many_arguments)]
    pub fn resource_replicas(
        &self,
        current: i32,
        target_utilization: i32,
        resource: &str,
        container: Option<&str>,
        pods: &[Pod],
        mut metrics: PodMetrics,
        now: Timestamp,
    ) -> Result<Utilization, CalcError> {
        if pods.is_empty() {
            return Err(CalcError::NoPods);
        }
        let g = self.group_pods(pods, &metrics, resource, now);
        metrics.retain(|name, _| !g.ignored.contains(name) && !g.unready.contains(name));
        if metrics.is_empty() {
            return Err(CalcError::NoReadyMetrics);
        }
        let requests = pod_requests(pods, container, resource)?;
        let target = i64::from(target_utilization);
        let (ratio, utilization, raw_average) = utilization_ratio(&metrics, &requests, target)?;
        let result = |replicas| Utilization {
            replicas,
            utilization,
            raw_average,
        };
        let scale_up_with_unready = !g.unready.is_empty() && ratio > 1.0;
        if !scale_up_with_unready && g.missing.is_empty() {
            if (1.0 - ratio).abs() <= self.tolerance {
                return Ok(result(current));
            }
            return Ok(result(ceil(ratio * g.ready as f64)));
        }
        if !g.missing.is_empty() {
            for name in &g.missing {
                let request = requests.get(name).copied().unwrap_or(0);
                // Scaling down: the missing use their whole request (or the target, if
                // higher); scaling up: nothing.
                let value = if ratio < 1.0 {
                    request * target.max(100) / 100
                } else {
                    0
                };
                metrics.insert(name.clone(), filler(value, now));
            }
        }
        if scale_up_with_unready {
            for name in &g.unready {
                metrics.insert(name.clone(), filler(0, now));
            }
        }
        let (new_ratio, _, _) = utilization_ratio(&metrics, &requests, target)?;
        Ok(result(self.settle(
            current,
            ratio,
            new_ratio,
            metrics.len(),
        )))
    }

    /// Replicas for an average-value target (milli-units per pod), as upstream's
    /// GetRawResourceReplicas; also returns the ready pods' average usage.
    pub fn raw_resource_replicas(
        &self,
        current: i32,
        target: i64,
        resource: &str,
        pods: &[Pod],
        mut metrics: PodMetrics,
        now: Timestamp,
    ) -> Result<(i32, i64), CalcError> {
        if pods.is_empty() {
            return Err(CalcError::NoPods);
        }
        let g = self.group_pods(pods, &metrics, resource, now);
        metrics.retain(|name, _| !g.ignored.contains(name) && !g.unready.contains(name));
        if metrics.is_empty() {
            return Err(CalcError::NoReadyMetrics);
        }
        let (ratio, usage) = usage_ratio(&metrics, target);
        let scale_up_with_unready = !g.unready.is_empty() && ratio > 1.0;
        if !scale_up_with_unready && g.missing.is_empty() {
            if (1.0 - ratio).abs() <= self.tolerance {
                return Ok((current, usage));
            }
            return Ok((ceil(ratio * g.ready as f64), usage));
        }
        for name in &g.missing {
            let value = if ratio < 1.0 { target } else { 0 };
            metrics.insert(name.clone(), filler(value, now));
        }
        if scale_up_with_unready {
            for name in &g.unready {
                metrics.insert(name.clone(), filler(0, now));
            }
        }
        let (new_ratio, _) = usage_ratio(&metrics, target);
        Ok((self.settle(current, ratio, new_ratio, metrics.len()), usage))
    }

    /// The count after filling in unready and missing pods: unchanged within the tolerance or
    /// when the filled-in ratio points the other way than the measured one.
    fn settle(&self, current: i32, ratio: f64, new_ratio: f64, pods: usize) -> i32 {
        if (1.0 - new_ratio).abs() <= self.tolerance
            || (ratio < 1.0 && new_ratio > 1.0)
            || (ratio > 1.0 && new_ratio < 1.0)
        {
            return current;
        }
        let proposed = ceil(new_ratio * pods as f64);
        if (new_ratio < 1.0 && proposed > current) || (new_ratio > 1.0 && proposed < current) {
            return current;
        }
        proposed
    }
}

fn ceil(x: f64) -> i32 {
    x.ceil().clamp(0.0, f64::from(i32::MAX)) as i32
}

fn filler(value: i64, now: Timestamp) -> PodMetric {
    PodMetric {
        value,
        timestamp: now,
        window: Duration::ZERO,
    }
}

/// Requests of `resource` per pod (milli-units), summed over the containers (and restartable
/// init containers) `container` selects; every selected container must request it.
pub fn pod_requests(
    pods: &[Pod],
    container: Option<&str>,
    resource: &str,
) -> Result<BTreeMap<String, i64>, CalcError> {
    let mut out = BTreeMap::new();
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let mut sum = 0;
        let Some(spec) = pod.spec.as_ref() else {
            out.insert(name, 0);
            continue;
        };
        let sidecars = spec
            .init_containers
            .iter()
            .flatten()
            .filter(|c| c.restart_policy.as_deref() == Some("Always"));
        for c in spec.containers.iter().chain(sidecars) {
            if container.is_some_and(|want| want != c.name) {
                continue;
            }
            let request = c
                .resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get(resource))
                .and_then(|q| Quantity::parse(&q.0).ok());
            match request {
                Some(q) => sum += q.milli_value(),
                None => {
                    return Err(CalcError::MissingRequest {
                        resource: resource.into(),
                        container: c.name.clone(),
                        pod: name,
                    })
                }
            }
        }
        out.insert(name, sum);
    }
    Ok(out)
}

/// Upstream's GetResourceUtilizationRatio: (ratio to target, utilization %, raw average).
fn utilization_ratio(
    metrics: &PodMetrics,
    requests: &BTreeMap<String, i64>,
    target: i64,
) -> Result<(f64, i32, i64), CalcError> {
    let (mut used, mut requested, mut n) = (0i64, 0i64, 0i64);
    for (name, m) in metrics {
        if let Some(r) = requests.get(name) {
            used += m.value;
            requested += r;
            n += 1;
        }
    }
    if requested == 0 {
        return Err(CalcError::NoMatchingPods);
    }
    let utilization = i32::try_from(used * 100 / requested).unwrap_or(i32::MAX);
    Ok((
        f64::from(utilization) / target as f64,
        utilization,
        used / n,
    ))
}

/// Upstream's GetMetricUsageRatio: (ratio to target, average usage).
fn usage_ratio(metrics: &PodMetrics, target: i64) -> (f64, i64) {
    let total: i64 = metrics.values().map(|m| m.value).sum();
    let average = total / metrics.len().max(1) as i64;
    (average as f64 / target as f64, average)
}

#[cfg(test)]
#[path = "calculator_tests.rs"]
mod tests;

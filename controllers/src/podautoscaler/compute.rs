//! One metric's proposal, as upstream's computeReplicasForMetric: Resource and
//! ContainerResource metrics go through the metrics source and the calculator; Pods, Object
//! and External metrics need a custom or external metrics API tinykube does not serve, and
//! fail as upstream's do without one. A failure carries the ScalingActive condition and the
//! Warning event upstream records.

use k8s_openapi::api::autoscaling::v2::{
    ContainerResourceMetricStatus, MetricSpec, MetricStatus, MetricTarget, MetricValueStatus,
    ResourceMetricStatus,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;
use k8s_openapi::jiff::Timestamp;
use tinykube_proto::quantity::Quantity;

use super::calculator::Calculator;
use super::metrics::MetricsSource;

/// A metric's proposal.
pub struct Proposal {
    pub replicas: i32,
    /// How the metric is named in the rescale reason (`cpu resource utilization (percentage
    /// of request)`).
    pub name: String,
    pub timestamp: Timestamp,
    pub status: MetricStatus,
}

/// A metric that could not be computed: the event (reason, message) and the error.
pub struct Failure {
    pub reason: &'static str,
    pub error: String,
}

impl Failure {
    fn new(reason: &'static str, error: String) -> Self {
        Failure { reason, error }
    }

    /// The ScalingActive=False message upstream sets for it.
    pub fn condition_message(&self) -> String {
        format!(
            "the HPA was unable to compute the replica count: {}",
            self.event_message()
        )
    }

    /// The Warning event's message: the error without the outer "failed to get … metric
    /// value" wrapper upstream adds only to the returned error.
    pub fn event_message(&self) -> String {
        match self.error.split_once("metric value: ") {
            Some((_, inner)) => inner.to_string(),
            None => self.error.clone(),
        }
    }
}

const NO_CUSTOM_METRICS: &str =
    "unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered";
const NO_EXTERNAL_METRICS: &str =
    "unable to fetch metrics from external metrics API: no external metrics API (external.metrics.k8s.io) registered";

/// What the computation needs besides the metric.
pub struct Inputs<'a> {
    pub calculator: &'a Calculator,
    pub source: &'a dyn MetricsSource,
    pub namespace: &'a str,
    pub selector: &'a str,
    pub pods: &'a [Pod],
    /// The target's `spec.replicas`.
    pub current: i32,
    pub now: Timestamp,
}

/// The proposal of one metric.
pub async fn metric(spec: &MetricSpec, inp: &Inputs<'_>) -> Result<Proposal, Failure> {
    match spec.type_.as_str() {
        "Resource" => {
            let Some(src) = spec.resource.as_ref() else {
                return Err(unknown(spec));
            };
            let (replicas, name, timestamp, current) = resource(&src.name, None, &src.target, inp)
                .await
                .map_err(|e| {
                    Failure::new(
                        "FailedGetResourceMetric",
                        format!("failed to get {} resource metric value: {e}", src.name),
                    )
                })?;
            let status = MetricStatus {
                type_: "Resource".into(),
                resource: Some(ResourceMetricStatus {
                    name: src.name.clone(),
                    current,
                }),
                ..Default::default()
            };
            Ok(Proposal {
                replicas,
                name,
                timestamp,
                status,
            })
        }
        "ContainerResource" => {
            let Some(src) = spec.container_resource.as_ref() else {
                return Err(unknown(spec));
            };
            let (replicas, name, timestamp, current) =
                resource(&src.name, Some(&src.container), &src.target, inp)
                    .await
                    .map_err(|e| {
                        Failure::new(
                            "FailedGetContainerResourceMetric",
                            format!(
                                "failed to get {} container metric value: {e}",
                                src.container
                            ),
                        )
                    })?;
            let status = MetricStatus {
                type_: "ContainerResource".into(),
                container_resource: Some(ContainerResourceMetricStatus {
                    name: src.name.clone(),
                    container: src.container.clone(),
                    current,
                }),
                ..Default::default()
            };
            Ok(Proposal {
                replicas,
                name,
                timestamp,
                status,
            })
        }
        "Pods" => {
            let name = spec
                .pods
                .as_ref()
                .map(|p| p.metric.name.as_str())
                .unwrap_or("");
            Err(Failure::new(
                "FailedGetPodsMetric",
                format!("failed to get pods metric value: unable to get metric {name}: {NO_CUSTOM_METRICS}"),
            ))
        }
        "Object" => {
            let (name, kind, target) = spec
                .object
                .as_ref()
                .map(|o| {
                    (
                        o.metric.name.as_str(),
                        o.described_object.kind.as_str(),
                        o.described_object.name.as_str(),
                    )
                })
                .unwrap_or_default();
            Err(Failure::new(
                "FailedGetObjectMetric",
                format!(
                    "failed to get object metric value: unable to get metric {name}: {kind} on {}/{target}/{NO_CUSTOM_METRICS}",
                    inp.namespace
                ),
            ))
        }
        "External" => {
            let name = spec
                .external
                .as_ref()
                .map(|e| e.metric.name.as_str())
                .unwrap_or("");
            Err(Failure::new(
                "FailedGetExternalMetric",
                format!(
                    "failed to get external metric value: unable to get external metric {}/{name}/nil: {NO_EXTERNAL_METRICS}",
                    inp.namespace
                ),
            ))
        }
        _ => Err(unknown(spec)),
    }
}

fn unknown(spec: &MetricSpec) -> Failure {
    Failure::new(
        "InvalidMetricSourceType",
        format!("unknown metric source type {:?}", spec.type_),
    )
}

/// A resource metric (of the whole pod, or one container): replicas, the metric's name in
/// reasons, the sample time and the current value for the status.
async fn resource(
    resource: &str,
    container: Option<&str>,
    target: &MetricTarget,
    inp: &Inputs<'_>,
) -> Result<(i32, String, Timestamp, MetricValueStatus), String> {
    let (samples, timestamp) = inp
        .source
        .resource_metrics(resource, inp.namespace, inp.selector, container)
        .await
        .map_err(|e| {
            let what = if target.average_value.is_some() { "usage" } else { "utilization" };
            format!("failed to get {resource} {what}: unable to get metrics for resource {resource}: {e}")
        })?;
    let milli = |m: i64| Some(Q(Quantity::from_milli(m).to_string()));
    if let Some(avg) = &target.average_value {
        let goal = Quantity::parse(&avg.0)
            .map(|q| q.milli_value())
            .unwrap_or(0);
        let (replicas, usage) = inp
            .calculator
            .raw_resource_replicas(inp.current, goal, resource, inp.pods, samples, inp.now)
            .map_err(|e| format!("failed to get {resource} usage: {e}"))?;
        let status = MetricValueStatus {
            average_value: milli(usage),
            ..Default::default()
        };
        return Ok((replicas, format!("{resource} resource"), timestamp, status));
    }
    let Some(goal) = target.average_utilization else {
        return Err("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set".into());
    };
    let u = inp
        .calculator
        .resource_replicas(
            inp.current,
            goal,
            resource,
            container,
            inp.pods,
            samples,
            inp.now,
        )
        .map_err(|e| format!("failed to get {resource} utilization: {e}"))?;
    let name = if container.is_some() {
        format!("{resource} container resource utilization (percentage of request)")
    } else {
        format!("{resource} resource utilization (percentage of request)")
    };
    let status = MetricValueStatus {
        average_utilization: Some(u.utilization),
        average_value: milli(u.raw_average),
        ..Default::default()
    };
    Ok((u.replicas, name, timestamp, status))
}

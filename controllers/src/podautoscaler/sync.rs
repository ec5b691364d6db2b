//! One reconcile of a HorizontalPodAutoscaler, as upstream's reconcileAutoscaler: get the
//! target's scale, compute the desired count from every metric, normalize it (stabilization,
//! bounds, rates), rescale, and write the status only when it changed.

use k8s_openapi::api::autoscaling::v2::{
    HorizontalPodAutoscaler, HorizontalPodAutoscalerCondition, HorizontalPodAutoscalerStatus,
    MetricStatus,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use tinykube_client::dynamic::{ApiResource, DynamicApi};
use tinykube_client::events::EventType;
use tinykube_client::{Api, ClientError};
use tinykube_proto::labels::Selector;

use super::behavior::{self, SCALE_DOWN_STABILIZED};
use super::compute::{self, Inputs};
use super::{Controller, COMPONENT};
use crate::util::{object_ref, split_key};

/// Set (or add) a condition; its transition time moves only when its status does.
fn set_condition(
    status: &mut HorizontalPodAutoscalerStatus,
    type_: &str,
    value: bool,
    reason: &str,
    message: String,
    now: Timestamp,
) {
    let value = if value { "True" } else { "False" };
    let list = status.conditions.get_or_insert_with(Vec::new);
    let i = match list.iter().position(|c| c.type_ == type_) {
        Some(i) => i,
        None => {
            list.push(HorizontalPodAutoscalerCondition {
                type_: type_.into(),
                ..Default::default()
            });
            list.len() - 1
        }
    };
    let c = &mut list[i];
    if c.status != value {
        c.last_transition_time = Some(Time(now));
    }
    c.status = value.into();
    c.reason = Some(reason.into());
    c.message = Some(message);
}

/// The resource serving a scale target's kind (`no matches …` when it has no scale).
fn scale_resource(api_version: &str, kind: &str) -> Result<ApiResource, String> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let plural = match (group, kind) {
        ("apps", "Deployment") => "deployments",
        ("apps", "ReplicaSet") => "replicasets",
        ("apps", "StatefulSet") => "statefulsets",
        ("", "ReplicationController") => "replicationcontrollers",
        _ => return Err(format!("no matches for kind {kind:?} in group {group:?}")),
    };
    Ok(ApiResource {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
        verbs: Vec::new(),
    })
}

/// What the metrics decided: a count, or a failure to report after the status is saved.
enum Computed {
    Replicas { replicas: i32, metric: String },
    Failed(String),
}

impl Controller {
    pub(super) async fn sync(&self, key: &str) -> Result<(), ClientError> {
        let Some(cached) = self.hpas.get(key) else {
            self.forget(key);
            return Ok(());
        };
        // Whatever happens, look again a sync period from now.
        self.enqueue(key);
        if let Err(e) = self.reconcile((*cached).clone(), key).await {
            tracing::info!(hpa = %key, error = %e, "horizontal pod autoscaler sync failed");
        }
        Ok(())
    }

    fn event(
        &self,
        hpa: &HorizontalPodAutoscaler,
        kind: EventType,
        reason: &'static str,
        message: String,
    ) {
        let regarding = object_ref::<HorizontalPodAutoscaler>(&hpa.metadata);
        self.ctx
            .recorder(COMPONENT)
            .record(&regarding, kind, reason, message);
    }

    async fn reconcile(&self, mut hpa: HorizontalPodAutoscaler, key: &str) -> Result<(), String> {
        let now = self.ctx.clock.timestamp();
        let original = hpa.status.clone();
        let (namespace, _) = split_key(key);
        let target = hpa.spec.scale_target_ref.clone();
        let reference = format!("{}/{namespace}/{}", target.kind, target.name);
        let mut status = hpa.status.clone().unwrap_or_default();

        let scale = match self
            .get_scale(
                namespace,
                &target.api_version.clone().unwrap_or_default(),
                &target.kind,
                &target.name,
            )
            .await
        {
            Ok(s) => s,
            Err(e) => {
                self.event(&hpa, EventType::Warning, "FailedGetScale", e.clone());
                set_condition(
                    &mut status,
                    "AbleToScale",
                    false,
                    "FailedGetScale",
                    format!("the HPA controller was unable to get the target's current scale: {e}"),
                    now,
                );
                hpa.status = Some(status);
                self.update_status(&hpa, original.as_ref()).await;
                return Err(format!(
                    "failed to query scale subresource for {reference}: {e}"
                ));
            }
        };
        set_condition(
            &mut status,
            "AbleToScale",
            true,
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale".into(),
            now,
        );
        let current = scale
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0) as i32;
        self.with_history(key, |h| h.record_initial(current, now));

        let spec = hpa.spec.clone();
        let min = spec.min_replicas.unwrap_or(1);
        let max = spec.max_replicas;
        let mut metric_statuses: Option<Vec<MetricStatus>> = None;
        let mut reason = String::new();
        let (desired, rescale) = if current == 0 && min != 0 {
            set_condition(
                &mut status,
                "ScalingActive",
                false,
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero".into(),
                now,
            );
            (0, false)
        } else if current > max {
            reason = "Current number of replicas above Spec.MaxReplicas".into();
            (max, true)
        } else if current < min {
            reason = "Current number of replicas below Spec.MinReplicas".into();
            (min, true)
        } else {
            let selector = scale
                .pointer("/status/selector")
                .and_then(Value::as_str)
                .unwrap_or("");
            let computed = self
                .compute(
                    &hpa,
                    &mut status,
                    &mut metric_statuses,
                    namespace,
                    selector,
                    current,
                    now,
                )
                .await;
            let (proposal, metric) = match computed {
                Computed::Replicas { replicas, metric } => (replicas, metric),
                Computed::Failed(e) => {
                    status.current_replicas = (current != 0).then_some(current);
                    status.current_metrics = metric_statuses;
                    hpa.status = Some(status);
                    self.update_status(&hpa, original.as_ref()).await;
                    self.event(
                        &hpa,
                        EventType::Warning,
                        "FailedComputeMetricsReplicas",
                        e.clone(),
                    );
                    return Err(format!("failed to compute desired number of replicas based on listed metrics for {reference}: {e}"));
                }
            };
            if proposal > current {
                reason = format!("{metric} above target");
            } else if proposal < current {
                reason = "All metrics below target".into();
            }
            let desired = self.normalize(key, &spec, &mut status, current, proposal, min, now);
            (desired, desired != current)
        };

        let desired = if rescale {
            let mut body = scale.clone();
            if let Some(s) = body.get_mut("spec").and_then(Value::as_object_mut) {
                s.insert("replicas".into(), desired.into());
            }
            if let Err(e) = self
                .put_scale(
                    namespace,
                    &target.api_version.clone().unwrap_or_default(),
                    &target.kind,
                    &target.name,
                    &body,
                )
                .await
            {
                self.event(
                    &hpa,
                    EventType::Warning,
                    "FailedRescale",
                    format!("New size: {desired}; reason: {reason}; error: {e}"),
                );
                set_condition(
                    &mut status,
                    "AbleToScale",
                    false,
                    "FailedUpdateScale",
                    format!("the HPA controller was unable to update the target scale: {e}"),
                    now,
                );
                status.current_replicas = (current != 0).then_some(current);
                status.current_metrics = metric_statuses;
                hpa.status = Some(status);
                self.update_status(&hpa, original.as_ref()).await;
                return Err(format!("failed to rescale {reference}: {e}"));
            }
            set_condition(
                &mut status,
                "AbleToScale",
                true,
                "SucceededRescale",
                format!("the HPA controller was able to update the target scale to {desired}"),
                now,
            );
            self.event(
                &hpa,
                EventType::Normal,
                "SuccessfulRescale",
                format!("New size: {desired}; reason: {reason}"),
            );
            if let Some(b) = spec.behavior.as_ref() {
                self.with_history(key, |h| h.record_scale(b, current, desired, now));
            }
            tracing::info!(hpa = %key, from = current, to = desired, %reason, "rescaled");
            status.last_scale_time = Some(Time(now));
            desired
        } else {
            current
        };
        status.current_replicas = (current != 0).then_some(current);
        status.desired_replicas = desired;
        status.current_metrics = metric_statuses;
        hpa.status = Some(status);
        self.update_status(&hpa, original.as_ref()).await;
        Ok(())
    }

    /// Upstream's computeReplicasForMetrics: the largest proposal of the metrics that could
    /// be computed; a failure when all failed, or some failed and the rest would scale down.
    #[allow(clippy::too_many_arguments)]
    async fn compute(
        &self,
        hpa: &HorizontalPodAutoscaler,
        status: &mut HorizontalPodAutoscalerStatus,
        statuses: &mut Option<Vec<MetricStatus>>,
        namespace: &str,
        selector: &str,
        current: i32,
        now: Timestamp,
    ) -> Computed {
        if selector.is_empty() {
            self.event(
                hpa,
                EventType::Warning,
                "SelectorRequired",
                "selector is required".into(),
            );
            set_condition(
                status,
                "ScalingActive",
                false,
                "InvalidSelector",
                "the HPA target's scale is missing a selector".into(),
                now,
            );
            return Computed::Failed("selector is required".into());
        }
        let parsed = match Selector::parse(selector) {
            Ok(s) => s,
            Err(e) => {
                let msg = format!(
                    "couldn't convert selector into a corresponding internal selector object: {e}"
                );
                self.event(hpa, EventType::Warning, "InvalidSelector", msg.clone());
                set_condition(
                    status,
                    "ScalingActive",
                    false,
                    "InvalidSelector",
                    msg.clone(),
                    now,
                );
                return Computed::Failed(msg);
            }
        };
        let pods: Vec<Pod> = self
            .pods
            .list()
            .into_iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(namespace))
            .filter(|p| parsed.matches(&p.metadata.labels.clone().unwrap_or_default()))
            .map(|p| (*p).clone())
            .collect();
        let specs = hpa.spec.metrics.clone().unwrap_or_default();
        let inputs = Inputs {
            calculator: &self.settings.calculator,
            source: self.metrics.as_ref(),
            namespace,
            selector,
            pods: &pods,
            current,
            now,
        };
        let mut out = vec![MetricStatus::default(); specs.len()];
        let (mut replicas, mut metric) = (0, String::new());
        let mut invalid = 0;
        let mut first_failure = None;
        for (i, spec) in specs.iter().enumerate() {
            match compute::metric(spec, &inputs).await {
                Ok(p) => {
                    if replicas == 0 || p.replicas > replicas {
                        replicas = p.replicas;
                        metric = p.name;
                    }
                    out[i] = p.status;
                }
                Err(f) => {
                    self.event(hpa, EventType::Warning, f.reason, f.event_message());
                    invalid += 1;
                    first_failure.get_or_insert(f);
                }
            }
        }
        *statuses = Some(out);
        if let Some(f) = first_failure.as_ref() {
            if invalid >= specs.len() || replicas < current {
                set_condition(
                    status,
                    "ScalingActive",
                    false,
                    f.reason,
                    f.condition_message(),
                    now,
                );
                return Computed::Failed(format!(
                    "invalid metrics ({invalid} invalid out of {}), first error is: {}",
                    specs.len(),
                    f.error
                ));
            }
        }
        set_condition(
            status,
            "ScalingActive",
            true,
            "ValidMetricFound",
            format!("the HPA was able to successfully calculate a replica count from {metric}"),
            now,
        );
        Computed::Replicas { replicas, metric }
    }

    /// Stabilize and bound the proposal, setting AbleToScale and ScalingLimited.
    #[allow(clippy::too_many_arguments)]
    fn normalize(
        &self,
        key: &str,
        spec: &k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerSpec,
        status: &mut HorizontalPodAutoscalerStatus,
        current: i32,
        proposal: i32,
        min: i32,
        now: Timestamp,
    ) -> i32 {
        let max = spec.max_replicas;
        let (stabilized, why, limited) = match spec.behavior.as_ref() {
            None => {
                let window = self.settings.downscale_stabilization.as_secs() as i64;
                let stabilized = self.with_history(key, |h| h.stabilize(proposal, window, now));
                (
                    stabilized,
                    SCALE_DOWN_STABILIZED,
                    behavior::limit(current, stabilized, min, max),
                )
            }
            Some(b) => {
                let up = b
                    .scale_up
                    .as_ref()
                    .and_then(|r| r.stabilization_window_seconds)
                    .unwrap_or(0);
                let down = b
                    .scale_down
                    .as_ref()
                    .and_then(|r| r.stabilization_window_seconds)
                    .map(i64::from)
                    .unwrap_or(self.settings.downscale_stabilization.as_secs() as i64);
                self.with_history(key, |h| {
                    let (s, why) =
                        h.stabilize_with_behavior(current, proposal, i64::from(up), down, now);
                    (s, why, h.limit_with_behavior(current, s, min, max, b, now))
                })
            }
        };
        if stabilized != proposal {
            set_condition(status, "AbleToScale", true, why.0, why.1.into(), now);
        } else {
            set_condition(
                status,
                "AbleToScale",
                true,
                "ReadyForNewScale",
                "recommended size matches current size".into(),
                now,
            );
        }
        let is_limited = limited.replicas != stabilized;
        set_condition(
            status,
            "ScalingLimited",
            is_limited,
            limited.reason,
            limited.message.into(),
            now,
        );
        limited.replicas
    }

    async fn get_scale(
        &self,
        namespace: &str,
        api_version: &str,
        kind: &str,
        name: &str,
    ) -> Result<Value, String> {
        let resource = scale_resource(api_version, kind)?;
        let plural = resource.plural.clone();
        let group = resource.group.clone();
        let api = DynamicApi::new(self.ctx.client.clone(), resource, Some(namespace));
        // The item path with `/scale` appended is the scale subresource.
        match api.get_opt(&format!("{name}/scale")).await {
            Ok(Some(scale)) => Ok(scale),
            Ok(None) => {
                let qualified = if group.is_empty() {
                    plural
                } else {
                    format!("{plural}.{group}")
                };
                Err(format!("{qualified} {name:?} not found"))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    async fn put_scale(
        &self,
        namespace: &str,
        api_version: &str,
        kind: &str,
        name: &str,
        body: &Value,
    ) -> Result<(), String> {
        let resource = scale_resource(api_version, kind)?;
        let api = DynamicApi::new(self.ctx.client.clone(), resource, Some(namespace));
        api.replace_subresource(name, "scale", body)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Write the status when it changed (upstream's updateStatusIfNeeded).
    async fn update_status(
        &self,
        hpa: &HorizontalPodAutoscaler,
        original: Option<&HorizontalPodAutoscalerStatus>,
    ) {
        if hpa.status.as_ref() == original {
            return;
        }
        let namespace = hpa.metadata.namespace.as_deref().unwrap_or_default();
        let name = hpa.metadata.name.as_deref().unwrap_or_default();
        let api: Api<HorizontalPodAutoscaler> = Api::namespaced(self.ctx.client.clone(), namespace);
        if let Err(e) = api.replace_status(name, hpa).await {
            self.event(hpa, EventType::Warning, "FailedUpdateStatus", e.to_string());
            tracing::info!(hpa = %name, error = %e, "failed to update the autoscaler's status");
        }
    }
}

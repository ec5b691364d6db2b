//! The scheduling framework: what a plugin is, what it answers, and the per-node view it
//! answers about. A plugin's answer separates "this node does not fit" (Unschedulable,
//! UnschedulableAndUnresolvable) from "something broke" (Error).
//!
//! A [`Plugin`] implements any of upstream's extension points ([`Point`]); each has a no-op
//! default. [`runtime::Framework`] is one profile's plugins per extension point, built through
//! a [`runtime::Registry`] it is handed and run in upstream's order; [`handle::Handle`] is what
//! plugins may reach (listers, the client for binders, the waiting pods of [`waiting`]);
//! [`node_info`] is the per-node view, with the [`resources`] and [`ports`] its pods hold.
//! The framework knows no plugin and no configuration: those are built on top of it.

pub mod affinity;
pub mod handle;
pub mod node_info;
pub mod point;
pub mod ports;
pub mod resources;
pub mod runtime;
#[cfg(test)]
pub(crate) mod testing;
pub mod waiting;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;

pub use handle::Handle;
pub use node_info::NodeInfo;
pub use point::Point;
pub use resources::Resources;
pub use runtime::{Framework, Registry};

/// A plugin's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Success,
    /// The node does not fit now; preemption or cluster changes may help.
    Unschedulable(Vec<String>),
    /// The node can never fit this pod (e.g. node affinity); preemption cannot help.
    UnschedulableAndUnresolvable(Vec<String>),
    Error(String),
    /// The plugin has nothing to say about this pod (a Bind plugin that leaves the pod to the
    /// next binder).
    Skip,
}

impl Status {
    pub fn unschedulable(reason: &str) -> Self {
        Status::Unschedulable(vec![reason.to_string()])
    }

    pub fn unresolvable(reason: &str) -> Self {
        Status::UnschedulableAndUnresolvable(vec![reason.to_string()])
    }

    pub fn is_success(&self) -> bool {
        matches!(self, Status::Success)
    }

    /// Whether removing pods could make the node fit (the nodes preemption looks at).
    pub fn is_resolvable(&self) -> bool {
        matches!(self, Status::Unschedulable(_))
    }

    /// Whether the pod was turned down (as opposed to something breaking): upstream's
    /// IsRejected, Unschedulable or UnschedulableAndUnresolvable.
    pub fn is_rejected(&self) -> bool {
        matches!(
            self,
            Status::Unschedulable(_) | Status::UnschedulableAndUnresolvable(_)
        )
    }

    pub fn reasons(&self) -> Vec<String> {
        match self {
            Status::Success | Status::Skip => Vec::new(),
            Status::Unschedulable(r) | Status::UnschedulableAndUnresolvable(r) => r.clone(),
            Status::Error(e) => vec![e.clone()],
        }
    }

    /// The reasons as one message, as upstream's Status.Message joins them.
    pub fn message(&self) -> String {
        self.reasons().join(", ")
    }
}

/// A Permit plugin's answer for a pod reserved on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permit {
    /// Bind it.
    Allow,
    /// Hold the pod (it stays reserved) until this plugin allows it through
    /// [`waiting::WaitingPod::allow`], someone rejects it, or the timeout passes.
    Wait(Duration),
    /// Do not bind it: an Unschedulable status, or an Error.
    Reject(Status),
}

/// CycleState key of the incoming pod's [`Resources::requested`], computed once per cycle.
pub const POD_REQUESTS: &str = "PodRequests";
/// CycleState key of the incoming pod's [`resources::nonzero`] requests.
pub const POD_NONZERO_REQUESTS: &str = "PodNonZeroRequests";

/// The incoming pod's requests: from the cycle when put there, else computed.
pub fn pod_requests<'a>(pod: &Pod, state: &'a CycleState) -> std::borrow::Cow<'a, Resources> {
    match state.get::<Resources>(POD_REQUESTS) {
        Some(r) => std::borrow::Cow::Borrowed(r),
        None => std::borrow::Cow::Owned(Resources::requested(pod)),
    }
}

/// The incoming pod's non-zero cpu and memory requests: from the cycle when put there, else
/// computed.
pub fn pod_nonzero_requests(pod: &Pod, state: &CycleState) -> (i64, i64) {
    match state.get::<(i64, i64)>(POD_NONZERO_REQUESTS) {
        Some(r) => *r,
        None => resources::nonzero(pod),
    }
}

/// What plugins computed for the pod being scheduled, shared by the cycle's extension points
/// (PreFilter writes, Filter and Score read; Reserve may write for the binding cycle, which
/// gets the same state), keyed by plugin name.
#[derive(Default)]
pub struct CycleState {
    entries: std::collections::HashMap<&'static str, Box<dyn std::any::Any + Send + Sync>>,
    /// Per filter plugin of the framework, whether its PreFilter said Skip.
    skip_filter: Vec<bool>,
    /// A PreFilter's rejection, which every node then gets.
    pre_filter_rejection: Option<Status>,
}

impl CycleState {
    /// A cycle for `pod`, with what every plugin asks of it computed once.
    pub fn for_pod(pod: &Pod) -> Self {
        let mut state = CycleState::default();
        state.put(POD_REQUESTS, Resources::requested(pod));
        state.put(POD_NONZERO_REQUESTS, resources::nonzero(pod));
        state
    }

    pub fn put<T: std::any::Any + Send + Sync>(&mut self, key: &'static str, value: T) {
        self.entries.insert(key, Box::new(value));
    }

    pub fn get<T: std::any::Any>(&self, key: &'static str) -> Option<&T> {
        self.entries.get(key).and_then(|b| b.downcast_ref())
    }
}

/// A future a binding-cycle extension point returns (PreBind and Bind may do I/O).
pub type Pending<'a> = BoxFuture<'a, Status>;

/// A scheduler plugin. Each method is one of upstream's extension points with a no-op default;
/// which points a plugin is enabled at is the profile's business.
/// Only PreBind and Bind may do I/O; everything before runs in the scheduling cycle and must
/// be quick and pure.
pub trait Plugin: Send + Sync {
    fn name(&self) -> &'static str;

    /// PreFilter: compute what filtering needs from the whole cluster, once per pod.
    /// [`Status::Skip`] says this plugin's Filter has nothing to check for this pod, so it is
    /// not run; a rejection (or error) makes every node fail with it.
    fn pre_filter(&self, _pod: &Pod, _nodes: &[Arc<NodeInfo>], _state: &mut CycleState) -> Status {
        Status::Success
    }

    /// Filter: whether `pod` may run on `node`.
    fn filter(&self, _pod: &Pod, _node: &NodeInfo, _state: &CycleState) -> Status {
        Status::Success
    }

    /// PreScore: compute what scoring needs, once per pod, from the feasible nodes (and all
    /// nodes of the snapshot).
    fn pre_score(
        &self,
        _pod: &Pod,
        _feasible: &[&NodeInfo],
        _all: &[Arc<NodeInfo>],
        _state: &mut CycleState,
    ) {
    }

    /// Score: raw score of a feasible `node` for `pod`.
    fn score(&self, _pod: &Pod, _node: &NodeInfo, _state: &CycleState) -> i64 {
        0
    }

    /// NormalizeScore: map raw scores to 0..=100 (default: already in range).
    fn normalize(&self, _scores: &mut [i64]) {}

    /// Reserve: the pod is assumed on `node`; keep whatever the plugin tracks in step. A
    /// failure here (or at any later point) runs every Reserve plugin's [`Plugin::unreserve`].
    fn reserve(&self, _pod: &Pod, _node: &str, _state: &mut CycleState) -> Status {
        Status::Success
    }

    /// Unreserve: undo [`Plugin::reserve`]; must be idempotent, as it may run for a pod whose
    /// Reserve never ran.
    fn unreserve(&self, _pod: &Pod, _node: &str, _state: &mut CycleState) {}

    /// Permit: allow, hold or turn down the binding of a reserved pod.
    fn permit(&self, _pod: &Pod, _node: &str, _state: &CycleState) -> Permit {
        Permit::Allow
    }

    /// PreBind: work that must be done before the pod is bound (may do I/O).
    fn pre_bind<'a>(
        &'a self,
        _pod: &'a Pod,
        _node: &'a str,
        _state: &'a CycleState,
    ) -> Pending<'a> {
        Box::pin(std::future::ready(Status::Success))
    }

    /// Bind: bind the pod, or [`Status::Skip`] to leave it to the next Bind plugin.
    fn bind<'a>(&'a self, _pod: &'a Pod, _node: &'a str, _state: &'a CycleState) -> Pending<'a> {
        Box::pin(std::future::ready(Status::Skip))
    }

    /// PostBind: informational, after a successful binding.
    fn post_bind(&self, _pod: &Pod, _node: &str, _state: &CycleState) {}
}

/// Scale scores so the highest becomes 100 (or, `reverse`, the lowest becomes 100), as
/// upstream's DefaultNormalizeScore.
pub fn default_normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = 100);
        }
        return;
    }
    for s in scores.iter_mut() {
        let scaled = *s * 100 / max;
        *s = if reverse { 100 - scaled } else { scaled };
    }
}

/// Upstream's FitError summary of why no node fits: `0/3 nodes are available: 1 node(s) had
/// untolerated taint(s), 2 Insufficient cpu.` Each reason is counted over the nodes that gave
/// it, and the "count reason" strings are sorted as strings, as upstream sorts them.
pub fn fit_error(total: usize, reasons: &BTreeMap<String, usize>) -> String {
    let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    format!("0/{total} nodes are available: {}.", parts.join(", "))
}

/// Why each node failed the filters in one cycle, by node index.
#[derive(Debug, Default)]
pub struct Diagnosis {
    pub statuses: Vec<Status>,
}

impl Diagnosis {
    /// The reasons histogram over every node.
    pub fn fit_error(&self) -> String {
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        for s in &self.statuses {
            for r in s.reasons() {
                *reasons.entry(r).or_default() += 1;
            }
        }
        fit_error(self.statuses.len(), &reasons)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_errors_read_as_upstream() {
        let mut reasons = BTreeMap::new();
        reasons.insert("node(s) had untolerated taint(s)".to_string(), 1);
        reasons.insert("Insufficient cpu".to_string(), 3);
        assert_eq!(
            fit_error(4, &reasons),
            "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu."
        );
        let diagnosis = Diagnosis {
            statuses: vec![
                Status::unresolvable("node(s) had untolerated taint(s)"),
                Status::Unschedulable(vec![
                    "Insufficient cpu".into(),
                    "Insufficient memory".into(),
                ]),
                Status::unschedulable("Insufficient cpu"),
            ],
        };
        assert_eq!(
            diagnosis.fit_error(),
            "0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
        );
    }

    #[test]
    fn normalization_scales_to_100() {
        let mut s = [10, 20, 40];
        default_normalize(&mut s, false);
        assert_eq!(s, [25, 50, 100]);
        let mut r = [0, 1, 2];
        default_normalize(&mut r, true);
        assert_eq!(r, [100, 50, 0]);
    }
}

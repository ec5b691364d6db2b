//! One profile's framework: its plugins per extension point, built from the profile's plan
//! through the [`Registry`] it is handed (as upstream's runtime takes one), and the functions
//! that run each point in upstream's order and with upstream's rules (the first failing filter
//! decides; Reserve in order and Unreserve in reverse; Permit may hold the pod; the first Bind
//! plugin that does not skip binds).

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::waiting::{pod_key, WaitingPods};
use super::{CycleState, Handle, NodeInfo, Permit, Plugin, Point, Status};

/// Upstream's Registry: builds the plugin a name stands for (once per profile), reaching the
/// cluster through the handle; None for a name it has no plugin object for.
pub type Registry<'a> = dyn Fn(&str, &Handle) -> Option<Arc<dyn Plugin>> + 'a;

/// One profile's plugins, ready to run. Plugins enabled at several points are one instance.
pub struct Framework {
    pub profile_name: String,
    filter: Vec<Arc<dyn Plugin>>,
    score: Vec<(Arc<dyn Plugin>, i64)>,
    reserve: Vec<Arc<dyn Plugin>>,
    permit: Vec<Arc<dyn Plugin>>,
    pre_bind: Vec<Arc<dyn Plugin>>,
    bind: Vec<Arc<dyn Plugin>>,
    post_bind: Vec<Arc<dyn Plugin>>,
    /// The PostFilter plugins by name: the scheduling cycle runs them itself (DefaultPreemption
    /// decides, the cycle acts), so they are no plugin objects here.
    post_filter: Vec<String>,
    /// The share of nodes to find feasible before scoring (0: upstream's adaptive default).
    pub percentage_of_nodes_to_score: i32,
    waiting: WaitingPods,
    clock: tinykube_clock::Clock,
}

impl Framework {
    /// A framework with no plugins.
    pub fn empty(profile_name: &str, handle: &Handle) -> Framework {
        Framework {
            profile_name: profile_name.to_string(),
            filter: Vec::new(),
            score: Vec::new(),
            reserve: Vec::new(),
            permit: Vec::new(),
            pre_bind: Vec::new(),
            bind: Vec::new(),
            post_bind: Vec::new(),
            post_filter: Vec::new(),
            percentage_of_nodes_to_score: 0,
            waiting: handle.waiting.clone(),
            clock: handle.clock.clone(),
        }
    }

    /// Build the plugins `plan` names at each point, in its order with its score weights,
    /// through `registry`: one instance per plugin, shared by the points that name it.
    pub fn new<'p>(
        profile_name: &str,
        plan: impl Fn(Point) -> &'p [(String, i64)],
        registry: &Registry,
        handle: &Handle,
    ) -> Framework {
        let mut fw = Framework::empty(profile_name, handle);
        let mut instances: HashMap<&str, Option<Arc<dyn Plugin>>> = HashMap::new();
        for point in Point::ALL {
            for (name, weight) in plan(point) {
                if point == Point::PostFilter {
                    fw.post_filter.push(name.clone());
                    continue;
                }
                let plugin = instances
                    .entry(name.as_str())
                    .or_insert_with(|| registry(name, handle));
                if let Some(p) = plugin {
                    fw.push(point, p.clone(), *weight);
                }
            }
        }
        fw
    }

    /// Whether the PostFilter plugin `name` is enabled.
    pub fn runs_post_filter(&self, name: &str) -> bool {
        self.post_filter.iter().any(|n| n == name)
    }

    /// Add `plugin` at the end of `point` (`weight` counts at Score only).
    pub fn push(&mut self, point: Point, plugin: Arc<dyn Plugin>, weight: i64) {
        match point {
            Point::Filter => self.filter.push(plugin),
            Point::Score => self.score.push((plugin, weight)),
            Point::Reserve => self.reserve.push(plugin),
            Point::Permit => self.permit.push(plugin),
            Point::PreBind => self.pre_bind.push(plugin),
            Point::Bind => self.bind.push(plugin),
            Point::PostBind => self.post_bind.push(plugin),
            Point::PostFilter => {}
        }
    }

    /// The plugins at `point`, by name, with their weights (0 except at Score).
    pub fn names(&self, point: Point) -> Vec<(&str, i64)> {
        let plain = |v: &[Arc<dyn Plugin>]| v.iter().map(|p| (p.name(), 0)).collect();
        match point {
            Point::Filter => plain(&self.filter),
            Point::Score => self.score.iter().map(|(p, w)| (p.name(), *w)).collect(),
            Point::Reserve => plain(&self.reserve),
            Point::Permit => plain(&self.permit),
            Point::PreBind => plain(&self.pre_bind),
            Point::Bind => plain(&self.bind),
            Point::PostBind => plain(&self.post_bind),
            Point::PostFilter => self.post_filter.iter().map(|n| (n.as_str(), 0)).collect(),
        }
    }

    /// Pods held at Permit.
    pub fn waiting(&self) -> &WaitingPods {
        &self.waiting
    }

    /// The scheduler's clock (the handle's).
    pub fn clock(&self) -> &tinykube_clock::Clock {
        &self.clock
    }

    /// PreFilter of every filter plugin, in order, until one rejects the pod; which Filters
    /// said Skip is kept in the state.
    pub fn run_pre_filter(&self, pod: &Pod, nodes: &[Arc<NodeInfo>], state: &mut CycleState) {
        state.skip_filter = vec![false; self.filter.len()];
        state.pre_filter_rejection = None;
        for (i, p) in self.filter.iter().enumerate() {
            match p.pre_filter(pod, nodes, state) {
                Status::Success => {}
                Status::Skip => state.skip_filter[i] = true,
                s => {
                    state.pre_filter_rejection = Some(if s.is_rejected() {
                        s
                    } else {
                        wrapped("PreFilter", p.name(), &s)
                    });
                    return;
                }
            }
        }
    }

    /// The filters in order, but those whose PreFilter said Skip; the first that fails decides.
    pub fn run_filters(&self, pod: &Pod, node: &NodeInfo, state: &CycleState) -> Status {
        if let Some(rejection) = &state.pre_filter_rejection {
            return rejection.clone();
        }
        for (i, p) in self.filter.iter().enumerate() {
            if state.skip_filter.get(i) == Some(&true) {
                continue;
            }
            let s = p.filter(pod, node, state);
            if !s.is_success() {
                return s;
            }
        }
        Status::Success
    }

    /// PreScore, then each feasible node's total: every score plugin's normalized score times
    /// its weight.
    pub fn run_scores(
        &self,
        pod: &Pod,
        feasible: &[&NodeInfo],
        all: &[Arc<NodeInfo>],
        state: &mut CycleState,
    ) -> Vec<i64> {
        let scoring = || self.score.iter().filter(|(_, w)| *w > 0);
        for (p, _) in scoring() {
            p.pre_score(pod, feasible, all, state);
        }
        let mut totals = vec![0i64; feasible.len()];
        for (p, weight) in scoring() {
            let mut scores: Vec<i64> = feasible.iter().map(|n| p.score(pod, n, state)).collect();
            p.normalize(&mut scores);
            for (t, s) in totals.iter_mut().zip(scores) {
                *t += s * weight;
            }
        }
        totals
    }

    /// Reserve, in order, until one fails.
    pub fn run_reserve(&self, pod: &Pod, node: &str, state: &mut CycleState) -> Status {
        for p in &self.reserve {
            match p.reserve(pod, node, state) {
                Status::Success | Status::Skip => {}
                s if s.is_rejected() => return s,
                s => return wrapped("Reserve", p.name(), &s),
            }
        }
        Status::Success
    }

    /// Unreserve on every Reserve plugin, in reverse order.
    pub fn run_unreserve(&self, pod: &Pod, node: &str, state: &mut CycleState) {
        for p in self.reserve.iter().rev() {
            p.unreserve(pod, node, state);
        }
    }

    /// Permit: `Ok(true)` when some plugin holds the pod (it is then among the waiting pods),
    /// `Ok(false)` when all allow, or the first rejection or error.
    pub fn run_permit(
        &self,
        pod: &Arc<Pod>,
        node: &str,
        state: &CycleState,
    ) -> Result<bool, Status> {
        let mut waits = Vec::new();
        for p in &self.permit {
            match p.permit(pod, node, state) {
                Permit::Allow => {}
                Permit::Wait(timeout) => waits.push((p.name(), timeout)),
                Permit::Reject(s) if s.is_rejected() => return Err(s),
                Permit::Reject(Status::Success | Status::Skip) => {}
                Permit::Reject(s) => return Err(wrapped("Permit", p.name(), &s)),
            }
        }
        if waits.is_empty() {
            return Ok(false);
        }
        self.waiting.add(pod.clone(), &waits);
        Ok(true)
    }

    /// Wait until a pod held at Permit is allowed (Success) or rejected; Success at once for a
    /// pod that is not held.
    pub async fn wait_on_permit(&self, pod: &Pod) -> Status {
        let key = pod_key(pod);
        let Some(held) = self.waiting.get(&key) else {
            return Status::Success;
        };
        let status = held.wait().await;
        self.waiting.remove(&key);
        match status {
            Status::Error(e) => Status::Error(format!("waiting on permit for pod: {e}")),
            s => s,
        }
    }

    /// PreBind, in order, until one fails.
    pub async fn run_pre_bind(&self, pod: &Pod, node: &str, state: &CycleState) -> Status {
        for p in &self.pre_bind {
            match p.pre_bind(pod, node, state).await {
                Status::Success | Status::Skip => {}
                s if s.is_rejected() => return s,
                s => return wrapped("PreBind", p.name(), &s),
            }
        }
        Status::Success
    }

    /// Bind: the first plugin that does not skip binds (Skip when all do).
    pub async fn run_bind(&self, pod: &Pod, node: &str, state: &CycleState) -> Status {
        for p in &self.bind {
            match p.bind(pod, node, state).await {
                Status::Skip => continue,
                s if s.is_success() || s.is_rejected() => return s,
                s => return wrapped("Bind", p.name(), &s),
            }
        }
        Status::Skip
    }

    /// PostBind, informational.
    pub fn run_post_bind(&self, pod: &Pod, node: &str, state: &CycleState) {
        for p in &self.post_bind {
            p.post_bind(pod, node, state);
        }
    }
}

/// An error of a plugin at a point, worded as upstream's `running X plugin "Y": err`.
fn wrapped(point: &str, plugin: &str, s: &Status) -> Status {
    Status::Error(format!(
        "running {point} plugin {plugin:?}: {}",
        s.message()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    /// A plugin that records what it was asked and answers as told.
    struct Probe {
        name: &'static str,
        log: Arc<Mutex<Vec<String>>>,
        reserve: Status,
        permit: Permit,
        bind: Status,
    }

    impl Probe {
        fn new(name: &'static str, log: &Arc<Mutex<Vec<String>>>) -> Probe {
            Probe {
                name,
                log: log.clone(),
                reserve: Status::Success,
                permit: Permit::Allow,
                bind: Status::Skip,
            }
        }

        fn note(&self, what: &str) {
            self.log
                .lock()
                .unwrap()
                .push(format!("{what} {}", self.name));
        }
    }

    impl Plugin for Probe {
        fn name(&self) -> &'static str {
            self.name
        }
        fn reserve(&self, _: &Pod, _: &str, _: &mut CycleState) -> Status {
            self.note("reserve");
            self.reserve.clone()
        }
        fn unreserve(&self, _: &Pod, _: &str, _: &mut CycleState) {
            self.note("unreserve");
        }
        fn permit(&self, _: &Pod, _: &str, _: &CycleState) -> Permit {
            self.note("permit");
            self.permit.clone()
        }
        fn pre_bind<'a>(
            &'a self,
            _: &'a Pod,
            _: &'a str,
            _: &'a CycleState,
        ) -> super::super::Pending<'a> {
            self.note("preBind");
            Box::pin(std::future::ready(Status::Success))
        }
        fn bind<'a>(
            &'a self,
            _: &'a Pod,
            _: &'a str,
            _: &'a CycleState,
        ) -> super::super::Pending<'a> {
            self.note("bind");
            Box::pin(std::future::ready(self.bind.clone()))
        }
        fn post_bind(&self, _: &Pod, _: &str, _: &CycleState) {
            self.note("postBind");
        }
    }

    fn pod() -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.uid = Some("uid-1".into());
        p.metadata.name = Some("p".into());
        Arc::new(p)
    }

    /// Run the cycle from Reserve to PostBind as `schedule_one` does; the log and the outcome.
    async fn cycle(fw: &Framework, log: &Arc<Mutex<Vec<String>>>) -> (Vec<String>, Status) {
        let pod = pod();
        let mut state = CycleState::default();
        let mut outcome = fw.run_reserve(&pod, "n1", &mut state);
        if outcome.is_success() {
            outcome = match fw.run_permit(&pod, "n1", &state) {
                Ok(_) => Status::Success,
                Err(s) => s,
            };
        }
        if outcome.is_success() {
            outcome = fw.wait_on_permit(&pod).await;
        }
        if outcome.is_success() {
            outcome = fw.run_pre_bind(&pod, "n1", &state).await;
        }
        if outcome.is_success() {
            outcome = fw.run_bind(&pod, "n1", &state).await;
        }
        if outcome.is_success() {
            fw.run_post_bind(&pod, "n1", &state);
        } else {
            fw.run_unreserve(&pod, "n1", &mut state);
        }
        let log = std::mem::take(&mut *log.lock().unwrap());
        (log, outcome)
    }

    type Setup = fn(&mut Probe, &mut Probe);

    #[tokio::test(start_paused = true)]
    async fn extension_points_run_in_upstreams_order() {
        let cases: Vec<(&str, Setup, &str, Status)> = vec![
            (
                "all allow; A skips binding, B binds",
                |_, b| b.bind = Status::Success,
                "reserve A,reserve B,permit A,permit B,preBind A,preBind B,bind A,bind B,postBind A,postBind B",
                Status::Success,
            ),
            (
                "B fails Reserve: Unreserve on both, in reverse",
                |_, b| b.reserve = Status::unschedulable("no"),
                "reserve A,reserve B,unreserve B,unreserve A",
                Status::unschedulable("no"),
            ),
            (
                "A rejects at Permit",
                |a, _| a.permit = Permit::Reject(Status::unschedulable("not now")),
                "reserve A,reserve B,permit A,unreserve B,unreserve A",
                Status::unschedulable("not now"),
            ),
            (
                "an error at Permit names the plugin",
                |_, b| b.permit = Permit::Reject(Status::Error("boom".into())),
                "reserve A,reserve B,permit A,permit B,unreserve B,unreserve A",
                Status::Error("running Permit plugin \"B\": boom".into()),
            ),
            (
                "the first binder that does not skip binds",
                |a, b| {
                    a.bind = Status::Success;
                    b.bind = Status::Error("never asked".into());
                },
                "reserve A,reserve B,permit A,permit B,preBind A,preBind B,bind A,postBind A,postBind B",
                Status::Success,
            ),
            (
                "a binder's error unreserves",
                |a, _| a.bind = Status::Error("conflict".into()),
                "reserve A,reserve B,permit A,permit B,preBind A,preBind B,bind A,unreserve B,unreserve A",
                Status::Error("running Bind plugin \"A\": conflict".into()),
            ),
            (
                "held at Permit until the timeout",
                |a, _| a.permit = Permit::Wait(Duration::from_secs(2)),
                "reserve A,reserve B,permit A,permit B,unreserve B,unreserve A",
                Status::unschedulable("rejected due to timeout after waiting 2s at plugin A"),
            ),
        ];
        for (what, setup, want_log, want) in cases {
            let log = Arc::new(Mutex::new(Vec::new()));
            let (mut a, mut b) = (Probe::new("A", &log), Probe::new("B", &log));
            setup(&mut a, &mut b);
            let (a, b): (Arc<dyn Plugin>, Arc<dyn Plugin>) = (Arc::new(a), Arc::new(b));
            let mut fw = Framework::empty("p", &Handle::detached());
            for point in [
                Point::Reserve,
                Point::Permit,
                Point::PreBind,
                Point::Bind,
                Point::PostBind,
            ] {
                fw.push(point, a.clone(), 0);
                fw.push(point, b.clone(), 0);
            }
            let (got, outcome) = cycle(&fw, &log).await;
            assert_eq!(got.join(","), want_log, "{what}");
            assert_eq!(outcome, want, "{what}");
            assert!(
                fw.waiting().list().is_empty(),
                "{what}: nothing left waiting"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_pod_binds_once_allowed() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut gate = Probe::new("Gate", &log);
        gate.permit = Permit::Wait(Duration::from_secs(60));
        gate.bind = Status::Success;
        let gate: Arc<dyn Plugin> = Arc::new(gate);
        let mut fw = Framework::empty("p", &Handle::detached());
        fw.push(Point::Permit, gate.clone(), 0);
        fw.push(Point::Bind, gate, 0);
        let fw = Arc::new(fw);
        let run = tokio::spawn({
            let (fw, log) = (fw.clone(), log.clone());
            async move { cycle(&fw, &log).await }
        });
        tokio::time::sleep(Duration::from_secs(5)).await;
        let held = fw.waiting().get("uid-1").expect("the pod is held");
        assert_eq!(held.pending_plugins(), ["Gate"]);
        held.allow("Gate");
        let (got, outcome) = run.await.unwrap();
        assert_eq!(outcome, Status::Success);
        assert_eq!(got.join(","), "permit Gate,bind Gate");
    }

    /// A filter plugin whose PreFilter answers as told and whose Filter counts its calls.
    struct Sieve(Status, Mutex<usize>);

    impl Plugin for Sieve {
        fn name(&self) -> &'static str {
            "Sieve"
        }
        fn pre_filter(&self, _: &Pod, _: &[Arc<NodeInfo>], _: &mut CycleState) -> Status {
            self.0.clone()
        }
        fn filter(&self, _: &Pod, _: &NodeInfo, _: &CycleState) -> Status {
            *self.1.lock().unwrap() += 1;
            Status::unschedulable("sieved")
        }
    }

    #[test]
    fn pre_filter_may_skip_a_filter_or_reject_the_pod() {
        let cases = [
            (
                "Success: the filter runs",
                Status::Success,
                Status::unschedulable("sieved"),
                1,
            ),
            (
                "Skip: the filter does not run",
                Status::Skip,
                Status::Success,
                0,
            ),
            (
                "a rejection fails every node",
                Status::unresolvable("no"),
                Status::unresolvable("no"),
                0,
            ),
            (
                "an error names the plugin",
                Status::Error("boom".into()),
                Status::Error("running PreFilter plugin \"Sieve\": boom".into()),
                0,
            ),
        ];
        for (what, pre, want, calls) in cases {
            let sieve = Arc::new(Sieve(pre, Mutex::new(0)));
            let mut fw = Framework::empty("p", &Handle::detached());
            fw.push(Point::Filter, sieve.clone(), 0);
            let node =
                super::super::testing::node("n1", serde_json::json!({}), serde_json::json!({}));
            let mut state = CycleState::default();
            fw.run_pre_filter(&pod(), &[], &mut state);
            assert_eq!(fw.run_filters(&pod(), &node, &state), want, "{what}");
            assert_eq!(*sieve.1.lock().unwrap(), calls, "{what}");
        }
    }

    #[tokio::test]
    async fn binding_skips_when_no_binder_takes_the_pod() {
        let fw = Framework::empty("p", &Handle::detached());
        assert_eq!(
            fw.run_bind(&pod(), "n1", &CycleState::default()).await,
            Status::Skip
        );
    }
}

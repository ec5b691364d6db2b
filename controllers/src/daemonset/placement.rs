//! Which nodes a DaemonSet's pod belongs on (upstream's NodeShouldRunDaemonPod), and the pod
//! a DaemonSet creates for a node: the template with the default daemon tolerations and the
//! required node affinity pinned to that node (ReplaceDaemonSetPodNodeNameNodeAffinity).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodSpec, Taint, Toleration,
};
use tinykube_proto::node_affinity::{self, NAME_FIELD};
use tinykube_proto::taints::tolerated;

/// Where a DaemonSet's pod stands with a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// A daemon pod should be created here.
    pub should_run: bool,
    /// A daemon pod already here may stay (e.g. only a NoSchedule taint appeared).
    pub should_continue_running: bool,
}

/// The tolerations upstream adds to every daemon pod (AddOrUpdateDaemonPodTolerations), in
/// upstream's order; `network-unavailable` only for hostNetwork pods.
pub fn default_tolerations(host_network: bool) -> Vec<Toleration> {
    let exists = |key: &str, effect: &str| Toleration {
        key: Some(key.to_string()),
        operator: Some("Exists".into()),
        effect: Some(effect.to_string()),
        ..Default::default()
    };
    let mut v = vec![
        exists("node.kubernetes.io/not-ready", "NoExecute"),
        exists("node.kubernetes.io/unreachable", "NoExecute"),
        exists("node.kubernetes.io/disk-pressure", "NoSchedule"),
        exists("node.kubernetes.io/memory-pressure", "NoSchedule"),
        exists("node.kubernetes.io/pid-pressure", "NoSchedule"),
        exists("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if host_network {
        v.push(exists(
            "node.kubernetes.io/network-unavailable",
            "NoSchedule",
        ));
    }
    v
}

/// Add `t` to the spec's tolerations, replacing one with the same key, operator, value and
/// effect (upstream's AddOrUpdateTolerationInPodSpec).
fn add_or_update_toleration(spec: &mut PodSpec, t: Toleration) {
    let list = spec.tolerations.get_or_insert_with(Vec::new);
    let op = |x: &Toleration| x.operator.clone().unwrap_or_else(|| "Equal".into());
    let same = |x: &Toleration| {
        x.key == t.key
            && op(x) == op(&t)
            && x.value.clone().unwrap_or_default() == t.value.clone().unwrap_or_default()
            && x.effect == t.effect
    };
    match list.iter_mut().find(|x| same(x)) {
        Some(existing) => *existing = t,
        None => list.push(t),
    }
}

/// Add the default daemon tolerations to a pod spec.
pub fn add_daemon_tolerations(spec: &mut PodSpec) {
    let host_network = spec.host_network.unwrap_or(false);
    for t in default_tolerations(host_network) {
        add_or_update_toleration(spec, t);
    }
}

/// The affinity with its required node selector replaced by the single term
/// `matchFields: metadata.name In [node]` (other affinity is kept).
pub fn pin_to_node(affinity: Option<Affinity>, node: &str) -> Affinity {
    let term = NodeSelectorTerm {
        match_fields: Some(vec![NodeSelectorRequirement {
            key: NAME_FIELD.into(),
            operator: "In".into(),
            values: Some(vec![node.to_string()]),
        }]),
        match_expressions: None,
    };
    let mut affinity = affinity.unwrap_or_default();
    let na = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    na.required_during_scheduling_ignored_during_execution = Some(NodeSelector {
        node_selector_terms: vec![term],
    });
    affinity
}

/// The node a daemon pod is for: its nodeName, else the single `metadata.name In [x]` field
/// requirement of its required node affinity (upstream's GetTargetNodeName).
pub fn target_node(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(n) = spec.node_name.as_ref().filter(|n| !n.is_empty()) {
        return Some(n.clone());
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms.iter().find_map(|t| {
        t.match_fields.iter().flatten().find_map(|r| {
            let values = r.values.as_deref().unwrap_or(&[]);
            (r.key == NAME_FIELD && r.operator == "In" && values.len() == 1)
                .then(|| values[0].clone())
        })
    })
}

/// The DaemonSet's pod template spec (empty when unset).
pub fn template_spec(ds: &DaemonSet) -> PodSpec {
    ds.spec
        .as_ref()
        .and_then(|s| s.template.spec.clone())
        .unwrap_or_default()
}

/// nodeSelector and required node affinity (terms ORed) admit the node.
pub fn fits_affinity(spec: &PodSpec, node: &Node) -> bool {
    let none = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&none);
    let name = node.metadata.name.as_deref().unwrap_or_default();
    node_affinity::required_matches(spec, labels, name)
}

/// The first taint with one of `effects` that no toleration tolerates.
fn untolerated<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    effects: &[&str],
) -> Option<&'a Taint> {
    taints
        .iter()
        .find(|taint| effects.contains(&taint.effect.as_str()) && !tolerated(tolerations, taint))
}

/// Upstream's NodeShouldRunDaemonPod for the DaemonSet's pod template on `node`.
pub fn node_should_run(template: &PodSpec, node: &Node) -> Placement {
    const NO: Placement = Placement {
        should_run: false,
        should_continue_running: false,
    };
    let name = node.metadata.name.as_deref().unwrap_or_default();
    if template
        .node_name
        .as_deref()
        .is_some_and(|n| !n.is_empty() && n != name)
    {
        return NO;
    }
    let mut spec = template.clone();
    add_daemon_tolerations(&mut spec);
    // The pod's pinned affinity always matches this node; the template's own rules decide.
    if !fits_affinity(template, node) {
        return NO;
    }
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[]);
    let tolerations = spec.tolerations.as_deref().unwrap_or(&[]);
    if untolerated(taints, tolerations, &["NoSchedule", "NoExecute"]).is_none() {
        return Placement {
            should_run: true,
            should_continue_running: true,
        };
    }
    Placement {
        should_run: false,
        should_continue_running: untolerated(taints, tolerations, &["NoExecute"]).is_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn node(v: Value) -> Node {
        serde_json::from_value(v).unwrap()
    }

    fn spec(v: Value) -> PodSpec {
        let mut v = v;
        v["containers"] = json!([{"name": "c", "image": "i"}]);
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn placement_follows_selectors_affinity_and_taints() {
        let master = json!({"metadata": {"name": "master0", "labels": {"node-role.kubernetes.io/master": ""}},
            "spec": {"taints": [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]}});
        let ssd = json!({"metadata": {"name": "w1", "labels": {"disktype": "ssd"}}});
        let plain = json!({"metadata": {"name": "w2"}});
        let cordoned = json!({"metadata": {"name": "w3"}, "spec": {"unschedulable": true,
            "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}});
        let no_execute = json!({"metadata": {"name": "w4"},
            "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoExecute"}]}});
        let not_ready = json!({"metadata": {"name": "w5"},
            "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
                                {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}});
        let master_toleration = json!({"tolerations": [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]});
        let (yes, stay, no) = ((true, true), (false, true), (false, false));
        let table: Vec<(&str, Value, Value, (bool, bool))> = vec![
            ("plain pod on a plain node", json!({}), plain.clone(), yes),
            (
                "tainted master without toleration",
                json!({}),
                master.clone(),
                stay,
            ),
            (
                "tainted master with toleration",
                master_toleration.clone(),
                master.clone(),
                yes,
            ),
            (
                "nodeSelector matches",
                json!({"nodeSelector": {"disktype": "ssd"}}),
                ssd.clone(),
                yes,
            ),
            (
                "nodeSelector misses",
                json!({"nodeSelector": {"disktype": "ssd"}}),
                plain.clone(),
                no,
            ),
            ("cordoned node is tolerated", json!({}), cordoned, yes),
            ("untolerated NoExecute", json!({}), no_execute.clone(), no),
            (
                "tolerated NoExecute",
                json!({"tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
                no_execute,
                yes,
            ),
            (
                "not-ready NoSchedule keeps new pods off",
                json!({}),
                not_ready,
                stay,
            ),
            (
                "nodeName elsewhere",
                json!({"nodeName": "w9"}),
                plain.clone(),
                no,
            ),
            (
                "affinity In",
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["ssd"]}]}]}}}}),
                ssd.clone(),
                yes,
            ),
            (
                "affinity NotIn",
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "disktype", "operator": "NotIn", "values": ["ssd"]}]}]}}}}),
                ssd,
                no,
            ),
            (
                "matchFields on the name",
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["w2"]}]}]}}}}),
                plain.clone(),
                yes,
            ),
            (
                "matchFields on another name",
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["w1"]}]}]}}}}),
                plain,
                no,
            ),
        ];
        for (name, s, n, (run, stay)) in table {
            let got = node_should_run(&spec(s), &node(n));
            assert_eq!(
                (got.should_run, got.should_continue_running),
                (run, stay),
                "{name}"
            );
        }
    }

    #[test]
    fn default_tolerations_as_upstream() {
        let table = [
            (json!({}), 6, None),
            (
                json!({"hostNetwork": true}),
                7,
                Some("node.kubernetes.io/network-unavailable"),
            ),
            // A template toleration identical to a default one is not duplicated.
            (
                json!({"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}]}),
                6,
                None,
            ),
            // One with tolerationSeconds is replaced by the forever one.
            (
                json!({"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]}),
                6,
                None,
            ),
            (
                json!({"tolerations": [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]}),
                7,
                None,
            ),
        ];
        for (s, n, last) in table {
            let mut spec = spec(s.clone());
            add_daemon_tolerations(&mut spec);
            let t = spec.tolerations.unwrap();
            assert_eq!(t.len(), n, "{s}");
            assert!(t.iter().all(|t| t.toleration_seconds.is_none()), "{s}");
            if let Some(last) = last {
                assert_eq!(t.last().unwrap().key.as_deref(), Some(last));
            }
        }
        let keys: Vec<_> = default_tolerations(false)
            .into_iter()
            .map(|t| (t.key.unwrap(), t.effect.unwrap()))
            .collect();
        assert_eq!(
            keys[0],
            ("node.kubernetes.io/not-ready".into(), "NoExecute".into())
        );
        assert_eq!(
            keys[5],
            (
                "node.kubernetes.io/unschedulable".into(),
                "NoSchedule".into()
            )
        );
    }

    #[test]
    fn node_affinity_is_replaced_and_read_back() {
        let pinned = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}});
        let table = [
            (Value::Null, pinned.clone()),
            (json!({}), pinned.clone()),
            (json!({"nodeAffinity": {}}), pinned.clone()),
            (
                json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["old"]}]}]}}}),
                pinned.clone(),
            ),
            (
                json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k"}]},
                       "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                           {"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}}),
                json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k"}]},
                       "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                           {"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}],
                           "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                               {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}),
            ),
        ];
        for (before, want) in table {
            let before: Option<Affinity> = serde_json::from_value(before.clone()).unwrap();
            let got = pin_to_node(before, "n1");
            assert_eq!(serde_json::to_value(&got).unwrap(), want);
            let pod = Pod {
                spec: Some(PodSpec {
                    affinity: Some(got),
                    ..Default::default()
                }),
                ..Default::default()
            };
            assert_eq!(target_node(&pod).as_deref(), Some("n1"));
        }
        let bound = Pod {
            spec: Some(PodSpec {
                node_name: Some("n2".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(target_node(&bound).as_deref(), Some("n2"));
        assert_eq!(target_node(&Pod::default()), None);
    }
}

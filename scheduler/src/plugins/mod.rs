//! The filter/score plugins, one file each, and the registry that builds a profile's plugin
//! list in upstream's default order and weights.

pub mod balanced_allocation;
pub mod default_preemption;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod pod_topology_spread;
pub mod taint_toleration;

use crate::framework::Plugin;

/// A plugin in a profile: whether it filters, and its score weight (0: it does not score).
pub struct Weighted {
    pub plugin: Box<dyn Plugin>,
    pub weight: i64,
    pub filters: bool,
}

/// A plugin with its default arguments, by upstream's name.
pub fn by_name(name: &str) -> Option<Box<dyn Plugin>> {
    Some(match name {
        node_unschedulable::NAME => Box::new(node_unschedulable::NodeUnschedulable),
        node_name::NAME => Box::new(node_name::NodeName),
        taint_toleration::NAME => Box::new(taint_toleration::TaintToleration),
        node_affinity::NAME => Box::new(node_affinity::NodeAffinity),
        node_resources_fit::NAME => Box::new(node_resources_fit::NodeResourcesFit::default()),
        balanced_allocation::NAME => Box::new(balanced_allocation::BalancedAllocation),
        pod_topology_spread::NAME => Box::new(pod_topology_spread::PodTopologySpread::default()),
        inter_pod_affinity::NAME => Box::new(inter_pod_affinity::InterPodAffinity),
        _ => return None,
    })
}

/// The default profile's plugins, in upstream's filter order, with its score weights.
pub fn default_plugins() -> Vec<Weighted> {
    [
        (node_unschedulable::NAME, true, 0),
        (node_name::NAME, true, 0),
        (taint_toleration::NAME, true, 3),
        (node_affinity::NAME, true, 2),
        (node_resources_fit::NAME, true, 1),
        (balanced_allocation::NAME, false, 1),
        (pod_topology_spread::NAME, true, 2),
        (inter_pod_affinity::NAME, true, 2),
    ]
    .into_iter()
    .filter_map(|(name, filters, weight)| {
        Some(Weighted {
            plugin: by_name(name)?,
            weight,
            filters,
        })
    })
    .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_profile_runs_upstreams_plugins_in_order() {
        let names: Vec<(&str, i64)> = super::default_plugins()
            .iter()
            .map(|w| (w.plugin.name(), w.weight))
            .collect();
        assert_eq!(
            names,
            [
                ("NodeUnschedulable", 0),
                ("NodeName", 0),
                ("TaintToleration", 3),
                ("NodeAffinity", 2),
                ("NodeResourcesFit", 1),
                ("NodeResourcesBalancedAllocation", 1),
                ("PodTopologySpread", 2),
                ("InterPodAffinity", 2),
            ]
        );
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::{json, Value};

    use crate::framework::NodeInfo;

    pub fn pod(spec: Value) -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": "p", "namespace": "default"}, "spec": spec}),
        )
        .unwrap()
    }

    pub fn node(name: &str, labels: Value, spec: Value) -> NodeInfo {
        let n: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        }))
        .unwrap();
        NodeInfo::new(Arc::new(n), Vec::new())
    }
}

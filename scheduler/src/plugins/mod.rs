//! The in-tree plugins, one file each, and the registry: which extension points each
//! implements, its default score weight, and how to build it from its arguments.

pub mod balanced_allocation;
pub mod default_binder;
pub mod default_preemption;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod pod_topology_spread;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;

/// The unit tests' pods and nodes.
#[cfg(test)]
pub(crate) use crate::framework::testing;

use std::sync::Arc;

use crate::framework::{Handle, Plugin, Point};

/// A plugin the registry knows: the extension points it implements and its score weight in
/// the default profile.
pub struct Registered {
    pub name: &'static str,
    pub points: &'static [Point],
    pub weight: i64,
}

const FILTER: &[Point] = &[Point::Filter];
const FILTER_SCORE: &[Point] = &[Point::Filter, Point::Score];

/// Upstream's default plugins that tinykube implements, in upstream's default order; every one
/// is enabled by default at every point it implements.
pub const REGISTRY: &[Registered] = &[
    Registered {
        name: node_unschedulable::NAME,
        points: FILTER,
        weight: 0,
    },
    Registered {
        name: node_name::NAME,
        points: FILTER,
        weight: 0,
    },
    Registered {
        name: taint_toleration::NAME,
        points: FILTER_SCORE,
        weight: 3,
    },
    Registered {
        name: node_affinity::NAME,
        points: FILTER_SCORE,
        weight: 2,
    },
    Registered {
        name: node_ports::NAME,
        points: FILTER,
        weight: 0,
    },
    Registered {
        name: node_resources_fit::NAME,
        points: FILTER_SCORE,
        weight: 1,
    },
    Registered {
        name: volume_restrictions::NAME,
        points: FILTER,
        weight: 0,
    },
    Registered {
        name: volume_binding::NAME,
        points: &[Point::Filter, Point::Reserve, Point::PreBind],
        weight: 0,
    },
    Registered {
        name: pod_topology_spread::NAME,
        points: FILTER_SCORE,
        weight: 2,
    },
    Registered {
        name: inter_pod_affinity::NAME,
        points: FILTER_SCORE,
        weight: 2,
    },
    Registered {
        name: default_preemption::NAME,
        points: &[Point::PostFilter],
        weight: 0,
    },
    Registered {
        name: balanced_allocation::NAME,
        points: &[Point::Score],
        weight: 1,
    },
    Registered {
        name: default_binder::NAME,
        points: &[Point::Bind],
        weight: 0,
    },
];

/// Upstream plugins with nothing to do in tinykube (no images, zones, CSI drivers and their
/// volume limits, resource claims, gates; the queue sorts by priority anyway): accepted in a
/// configuration, so that upstream's examples load, and ignored.
pub const INERT: &[&str] = &[
    "PrioritySort",
    "SchedulingGates",
    "ImageLocality",
    "VolumeZone",
    "NodeVolumeLimits",
    "EBSLimits",
    "GCEPDLimits",
    "AzureDiskLimits",
    "DynamicResources",
    "NodeDeclaredFeatures",
];

pub fn registered(name: &str) -> Option<&'static Registered> {
    REGISTRY.iter().find(|r| r.name == name)
}

/// The arguments of the plugins that take any (a profile's `pluginConfig`), upstream's
/// defaults unless given.
#[derive(Clone, Default)]
pub struct Args {
    pub fit: node_resources_fit::NodeResourcesFit,
    /// PodTopologySpread's constraints for pods without their own.
    pub spread: pod_topology_spread::Defaults,
}

/// Build a registered plugin. None for an unknown name and for DefaultPreemption, which the
/// scheduling cycle runs itself as the PostFilter.
pub fn new(name: &str, args: &Args, handle: &Handle) -> Option<Arc<dyn Plugin>> {
    Some(match name {
        node_unschedulable::NAME => Arc::new(node_unschedulable::NodeUnschedulable),
        node_name::NAME => Arc::new(node_name::NodeName),
        taint_toleration::NAME => Arc::new(taint_toleration::TaintToleration),
        node_affinity::NAME => Arc::new(node_affinity::NodeAffinity),
        node_ports::NAME => Arc::new(node_ports::NodePorts),
        node_resources_fit::NAME => Arc::new(args.fit.clone()),
        balanced_allocation::NAME => Arc::new(balanced_allocation::BalancedAllocation),
        pod_topology_spread::NAME => Arc::new(pod_topology_spread::PodTopologySpread {
            defaults: args.spread.clone(),
            selectors: handle.selectors.clone(),
        }),
        inter_pod_affinity::NAME => Arc::new(inter_pod_affinity::InterPodAffinity {
            namespaces: handle.namespaces.clone(),
        }),
        default_binder::NAME => Arc::new(default_binder::DefaultBinder::new(handle.client.clone())),
        volume_binding::NAME => Arc::new(volume_binding::VolumeBinding {
            client: handle.client.clone(),
            claims: handle.claims.clone(),
            volumes: handle.volumes.clone(),
            classes: handle.classes.clone(),
            bind_timeout: volume_binding::BIND_TIMEOUT,
            clock: handle.clock.clone(),
        }),
        volume_restrictions::NAME => Arc::new(volume_restrictions::VolumeRestrictions {
            claims: handle.claims.clone(),
        }),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::Profile;
    use crate::framework::{Handle, Point};

    #[test]
    fn the_default_profile_runs_upstreams_plugins_in_order() {
        let fw = Profile::default_named("default-scheduler").framework(&Handle::detached());
        let names = |p| fw.names(p).into_iter().map(|(n, _)| n).collect::<Vec<_>>();
        assert_eq!(
            names(Point::Filter),
            [
                "NodeUnschedulable",
                "NodeName",
                "TaintToleration",
                "NodeAffinity",
                "NodePorts",
                "NodeResourcesFit",
                "VolumeRestrictions",
                "VolumeBinding",
                "PodTopologySpread",
                "InterPodAffinity",
            ]
        );
        assert_eq!(
            fw.names(Point::Score),
            [
                ("TaintToleration", 3),
                ("NodeAffinity", 2),
                ("NodeResourcesFit", 1),
                ("PodTopologySpread", 2),
                ("InterPodAffinity", 2),
                ("NodeResourcesBalancedAllocation", 1),
            ]
        );
        assert_eq!(names(Point::PostFilter), ["DefaultPreemption"]);
        assert_eq!(names(Point::Bind), ["DefaultBinder"]);
        assert_eq!(names(Point::Reserve), ["VolumeBinding"]);
        assert_eq!(names(Point::PreBind), ["VolumeBinding"]);
        for point in [Point::Permit, Point::PostBind] {
            assert!(names(point).is_empty(), "{point:?}");
        }
    }
}

//! The controllers this binary knows, by their upstream names, and `--controllers` parsing
//! (`*` for every default controller, `name` to enable, `-name` to disable).
//!
//! To add a controller: write its folder (`mod.rs` with a `start` function, `sync.rs`), then
//! put its `start` in [`CONTROLLERS`].

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::context::Context;

/// Starts a controller: subscribes to the informers it needs (synchronously, before they run)
/// and returns the future that runs it until dropped.
pub type StartFn = fn(&Arc<Context>) -> BoxFuture<'static, ()>;

/// One known controller.
pub struct Entry {
    pub name: &'static str,
    /// `None`: known but not implemented in tinykube yet (skipped with a log line).
    pub start: Option<StartFn>,
}

/// Every known controller, in start order.
pub const CONTROLLERS: &[Entry] = &[
    Entry {
        name: "endpoint",
        start: Some(crate::endpoint::start),
    },
    Entry {
        name: "endpointslice",
        start: Some(crate::endpointslice::start),
    },
    Entry {
        name: "replicaset",
        start: Some(crate::replicaset::start),
    },
    Entry {
        name: "replicationcontroller",
        start: Some(crate::replicaset::start_rc),
    },
    Entry {
        name: "deployment",
        start: Some(crate::deployment::start),
    },
    Entry {
        name: "daemonset",
        start: Some(crate::daemonset::start),
    },
    Entry {
        name: "cronjob",
        start: Some(crate::cronjob::start),
    },
    Entry {
        name: "statefulset",
        start: Some(crate::statefulset::start),
    },
    Entry {
        name: "job",
        start: Some(crate::job::start),
    },
    Entry {
        name: "garbagecollector",
        start: Some(crate::garbagecollector::start),
    },
    Entry {
        name: "namespace",
        start: Some(crate::namespace::start),
    },
    Entry {
        name: "nodelifecycle",
        start: Some(crate::nodelifecycle::start),
    },
    Entry {
        name: "horizontalpodautoscaling",
        start: Some(crate::podautoscaler::start),
    },
    Entry {
        name: "disruption",
        start: Some(crate::disruption::start),
    },
    Entry {
        name: "ttl",
        start: Some(crate::ttl::start),
    },
    Entry {
        name: "ttl-after-finished",
        start: Some(crate::ttlafterfinished::start),
    },
    Entry {
        name: "podgc",
        start: Some(crate::podgc::start),
    },
    Entry {
        name: "serviceaccount",
        start: Some(crate::serviceaccount::start),
    },
    Entry {
        name: "serviceaccount-token",
        start: Some(crate::serviceaccounttoken::start),
    },
    Entry {
        name: "root-ca-cert-publisher",
        start: Some(crate::rootcacertpublisher::start),
    },
    Entry {
        name: "resourcequota",
        start: Some(crate::resourcequota::start),
    },
    Entry {
        name: "clusterrole-aggregation",
        start: Some(crate::clusterroleaggregation::start),
    },
    Entry {
        name: "persistentvolume-binder",
        start: Some(crate::persistentvolume::start),
    },
    Entry {
        name: "persistentvolume-protection",
        start: Some(crate::pvprotection::start),
    },
    Entry {
        name: "persistentvolumeclaim-protection",
        start: Some(crate::pvcprotection::start),
    },
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    #[error("{0:?} is not in the list of known controllers")]
    Unknown(String),
}

/// The controllers `--controllers` enables, in start order. As upstream: an explicit `-name`
/// wins, then an explicit `name`, then `*` enables every controller.
pub fn enabled(spec: &[String]) -> Result<Vec<&'static Entry>, SelectionError> {
    for item in spec {
        let name = item.strip_prefix('-').unwrap_or(item);
        if name != "*" && !CONTROLLERS.iter().any(|c| c.name == name) {
            return Err(SelectionError::Unknown(item.clone()));
        }
    }
    let has = |s: &str| spec.iter().any(|i| i == s);
    Ok(CONTROLLERS
        .iter()
        .filter(|c| {
            if has(&format!("-{}", c.name)) {
                false
            } else {
                has(c.name) || has("*")
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(spec: &[&str]) -> Result<Vec<&'static str>, SelectionError> {
        let spec: Vec<String> = spec.iter().map(|s| s.to_string()).collect();
        enabled(&spec).map(|v| v.iter().map(|e| e.name).collect())
    }

    #[test]
    fn selection_as_upstream() {
        let all: Vec<&str> = CONTROLLERS.iter().map(|c| c.name).collect();
        type Row<'a> = (&'a [&'a str], Result<Vec<&'a str>, SelectionError>);
        let table: &[Row] = &[
            (&["*"], Ok(all.clone())),
            (&["replicaset"], Ok(vec!["replicaset"])),
            (
                &["*", "-garbagecollector"],
                Ok(all
                    .iter()
                    .copied()
                    .filter(|n| *n != "garbagecollector")
                    .collect()),
            ),
            (&["-replicaset", "replicaset"], Ok(vec![])),
            (&[], Ok(vec![])),
            (
                &["*", "nosuch"],
                Err(SelectionError::Unknown("nosuch".into())),
            ),
            (&["-nosuch"], Err(SelectionError::Unknown("-nosuch".into()))),
        ];
        for (spec, want) in table {
            assert_eq!(&names(spec), want, "{spec:?}");
        }
    }
}

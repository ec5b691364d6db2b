//! The kinds this server serves, as run-time data: the built-in table of `proto::registry` and
//! the resources of the CustomResourceDefinitions that are established. Routing, discovery,
//! OpenAPI and every handler read one snapshot of it; the CRD controller (`crds`) replaces the
//! snapshot whenever a definition changes, so a change is served from the next request on.

use std::sync::{Arc, RwLock};

use serde_json::Value;
use tinykube_proto::registry::{self, ResourceInfo};

/// What is served at one moment.
#[derive(Debug, Default)]
pub struct Served {
    /// Built-in resources, then custom ones (each group's versions by upstream's priority).
    resources: Vec<ResourceInfo>,
    /// The definitions whose resources are served, as stored.
    crds: Vec<Value>,
}

impl Served {
    fn build(crds: Vec<Value>) -> Served {
        let mut resources: Vec<ResourceInfo> = registry::RESOURCES.to_vec();
        let mut custom: Vec<ResourceInfo> =
            crds.iter().flat_map(registry::custom::resources).collect();
        custom.sort_by(|a, b| {
            a.group
                .cmp(b.group)
                .then_with(|| registry::custom::compare_versions(a.version, b.version))
                .then_with(|| a.plural.cmp(b.plural))
        });
        // A built-in group is served by the built-in kinds alone.
        custom.retain(|c| !registry::RESOURCES.iter().any(|b| b.group == c.group));
        resources.extend(custom);
        Served { resources, crds }
    }

    /// Every served resource.
    pub fn all(&self) -> &[ResourceInfo] {
        &self.resources
    }

    /// The definitions whose resources are served.
    pub fn crds(&self) -> &[Value] {
        &self.crds
    }

    /// The resource served at `group/version/plural`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceInfo> {
        self.resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
    }

    /// The resource of a kind in a group version.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<&ResourceInfo> {
        self.resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
    }

    /// Every resource of one group version.
    pub fn group_version<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a ResourceInfo> + 'a {
        self.resources
            .iter()
            .filter(move |r| r.group == group && r.version == version)
    }

    /// The versions served for a group, the preferred one first.
    pub fn versions(&self, group: &str) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for r in self.resources.iter().filter(|r| r.group == group) {
            if !out.contains(&r.version) {
                out.push(r.version);
            }
        }
        out
    }

    /// The named groups in the order `/apis` lists them: the built-in ones, then the custom
    /// ones by name (upstream orders groups by priority, and every CRD group has the same).
    pub fn groups(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = registry::GROUPS.to_vec();
        let mut custom: Vec<&'static str> = self
            .resources
            .iter()
            .map(|r| r.group)
            .filter(|g| !g.is_empty() && !out.contains(g))
            .collect();
        custom.sort_unstable();
        custom.dedup();
        out.extend(custom);
        out
    }
}

/// The server's registry of served kinds: a snapshot readers take cheaply, replaced whole.
#[derive(Debug)]
pub struct Kinds {
    current: RwLock<Arc<Served>>,
    /// Held by whoever decides the next snapshot from the store (`crds`), so that two
    /// deciders never interleave their read and their publication.
    pub writer: tokio::sync::Mutex<()>,
}

impl Default for Kinds {
    fn default() -> Self {
        Kinds {
            current: RwLock::new(Arc::new(Served::build(Vec::new()))),
            writer: tokio::sync::Mutex::new(()),
        }
    }
}

impl Kinds {
    /// What is served now.
    pub fn snapshot(&self) -> Arc<Served> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Serve the built-in kinds and the resources of these definitions.
    pub fn set_crds(&self, crds: Vec<Value>) {
        let served = Arc::new(Served::build(crds));
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = served;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_sort_as_upstream() {
        use tinykube_proto::registry::custom::compare_versions;
        let mut v = vec![
            "foo1",
            "v1alpha1",
            "v11alpha2",
            "v1",
            "v2",
            "v1beta2",
            "v12alpha1",
            "v10beta3",
            "v10",
            "foo10",
            "v3beta1",
        ];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            v,
            [
                "v10",
                "v2",
                "v1",
                "v10beta3",
                "v3beta1",
                "v1beta2",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "foo1",
                "foo10"
            ]
        );
    }

    #[test]
    fn definitions_add_their_groups_and_resources() {
        let kinds = Kinds::default();
        assert!(kinds.snapshot().lookup("", "v1", "pods").is_some());
        kinds.set_crds(vec![json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Cluster",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1beta1", "served": true, "storage": false},
                                  {"name": "v1", "served": true, "storage": true}]},
            "status": {"acceptedNames": {"plural": "widgets", "kind": "Widget"}},
        })]);
        let served = kinds.snapshot();
        assert_eq!(served.versions("example.com"), ["v1", "v1beta1"]);
        assert_eq!(served.groups().last(), Some(&"example.com"));
        let w = served.lookup("example.com", "v1", "widgets").unwrap();
        assert!(!w.namespaced);
        assert_eq!(
            served
                .by_kind("example.com", "v1beta1", "Widget")
                .unwrap()
                .plural,
            "widgets"
        );
        kinds.set_crds(Vec::new());
        assert!(kinds
            .snapshot()
            .lookup("example.com", "v1", "widgets")
            .is_none());
    }
}

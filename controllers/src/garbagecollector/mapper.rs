//! Which served resource an owner reference's `apiVersion`/`kind` names, as upstream's GC asks
//! its RESTMapper: the answer comes from discovery, cached; a kind the cache does not know
//! triggers a fresh discovery, at most once per [`Mapper`]'s interval, so custom resources
//! become known as soon as their CRD is served without a discovery storm from unknown kinds.
//! A group whose list fails keeps what was known of it, as upstream's GC keeps the monitors of
//! groups whose discovery failed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tinykube_client::dynamic::{ApiResource, Discovery};
use tinykube_client::ClientError;
use tokio::time::Instant;

/// Fetches the served resources (`client::dynamic::discover_partial` outside tests).
pub type Discover =
    Arc<dyn Fn() -> BoxFuture<'static, Result<Discovery, ClientError>> + Send + Sync>;

/// The least time between two discoveries caused by an unknown kind.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(3);

/// `Kind` for the core group, `Kind.group` otherwise: how the collector names a kind.
pub fn group_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

/// The group of `apps/v1` (`apps`) or `v1` (the core group, empty).
pub fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

/// The resource serving `kind` in `api_version`'s group: that version if served, else the
/// group's preferred one (the objects are the same whatever the version).
pub fn lookup<'a>(
    resources: &'a [ApiResource],
    api_version: &str,
    kind: &str,
) -> Option<&'a ApiResource> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let mut same_kind = resources
        .iter()
        .filter(|r| r.group == group && r.kind == kind);
    let first = same_kind.next()?;
    if first.version == version {
        return Some(first);
    }
    same_kind.find(|r| r.version == version).or(Some(first))
}

/// What discovery found, plus the resources of `previous` in the group versions it could not
/// read this time.
pub fn merge(previous: &[ApiResource], found: &Discovery) -> Vec<ApiResource> {
    let mut out = found.resources.clone();
    for r in previous {
        let gv = r.api_version();
        if found.failed.iter().any(|(failed, _)| *failed == gv) {
            out.push(r.clone());
        }
    }
    out
}

struct Cached {
    resources: Vec<ApiResource>,
    /// When discovery was last asked (successfully or not).
    asked: Option<Instant>,
}

/// The cached discovery and its refresh policy.
pub struct Mapper {
    discover: Discover,
    interval: Duration,
    cached: Mutex<Cached>,
    /// Serialises refreshes: workers missing the same kind wait for one discovery.
    refreshing: tokio::sync::Mutex<()>,
}

impl Mapper {
    pub fn new(discover: Discover, interval: Duration) -> Self {
        Mapper {
            discover,
            interval,
            cached: Mutex::new(Cached {
                resources: Vec::new(),
                asked: None,
            }),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    fn cached(&self) -> std::sync::MutexGuard<'_, Cached> {
        match self.cached.lock() {
            Ok(c) => c,
            Err(p) => p.into_inner(),
        }
    }

    fn find(&self, api_version: &str, kind: &str) -> Option<ApiResource> {
        lookup(&self.cached().resources, api_version, kind).cloned()
    }

    /// Ask discovery now (the periodic resync does), keep and return its answer.
    pub async fn refresh(&self) -> Result<Vec<ApiResource>, ClientError> {
        let _one = self.refreshing.lock().await;
        self.discover_now().await
    }

    async fn discover_now(&self) -> Result<Vec<ApiResource>, ClientError> {
        let answer = (self.discover)().await;
        let mut cached = self.cached();
        cached.asked = Some(Instant::now());
        let found = answer?;
        for (gv, e) in &found.failed {
            tracing::warn!(group_version = %gv, error = %e, "garbage collector: discovery failed for a group; keeping what was known of it");
        }
        cached.resources = merge(&cached.resources, &found);
        Ok(cached.resources.clone())
    }

    /// The resource of `apiVersion`/`kind`; `None` when discovery (refreshed if allowed)
    /// does not list it.
    pub async fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<ApiResource>, ClientError> {
        if let Some(r) = self.find(api_version, kind) {
            return Ok(Some(r));
        }
        let _one = self.refreshing.lock().await;
        // Another worker may have refreshed while this one waited.
        if let Some(r) = self.find(api_version, kind) {
            return Ok(Some(r));
        }
        let due = self
            .cached()
            .asked
            .is_none_or(|t| t.elapsed() >= self.interval);
        if due {
            self.discover_now().await?;
        }
        Ok(self.find(api_version, kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn res(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> ApiResource {
        ApiResource {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            verbs: ["get", "list", "watch", "delete"]
                .map(String::from)
                .to_vec(),
        }
    }

    fn builtins() -> Vec<ApiResource> {
        vec![
            res("", "v1", "ConfigMap", "configmaps", true),
            res("apps", "v1", "Deployment", "deployments", true),
            res(
                "scheduling.k8s.io",
                "v1",
                "PriorityClass",
                "priorityclasses",
                false,
            ),
        ]
    }

    fn crontab(version: &str) -> ApiResource {
        res("stable.example.com", version, "CronTab", "crontabs", true)
    }

    #[test]
    fn lookup_by_group_and_kind() {
        let mut all = builtins();
        all.push(crontab("v1"));
        all.push(crontab("v2"));
        let cases = [
            ("v1", "ConfigMap", Some(("", "configmaps"))),
            ("apps/v1", "Deployment", Some(("apps", "deployments"))),
            ("extensions/v1beta1", "Deployment", None),
            ("v1", "Deployment", None),
            (
                "scheduling.k8s.io/v1",
                "PriorityClass",
                Some(("scheduling.k8s.io", "priorityclasses")),
            ),
            (
                "stable.example.com/v1",
                "CronTab",
                Some(("stable.example.com", "crontabs")),
            ),
            ("stable.example.com/v1", "Crontab", None),
            ("other.example.com/v1", "CronTab", None),
        ];
        for (api_version, kind, want) in cases {
            let got =
                lookup(&all, api_version, kind).map(|r| (r.group.as_str(), r.plural.as_str()));
            assert_eq!(got, want, "{api_version} {kind}");
        }
        // The reference's own version when served, else the group's preferred (listed) one.
        assert_eq!(
            lookup(&all, "stable.example.com/v2", "CronTab")
                .unwrap()
                .version,
            "v2"
        );
        assert_eq!(
            lookup(&all, "stable.example.com/v9", "CronTab")
                .unwrap()
                .version,
            "v1"
        );
    }

    #[test]
    fn group_kinds_name_the_group() {
        assert_eq!(group_kind("", "Pod"), "Pod");
        assert_eq!(group_kind("apps", "ReplicaSet"), "ReplicaSet.apps");
        assert_eq!(group_of("v1"), "");
        assert_eq!(group_of("stable.example.com/v1"), "stable.example.com");
    }

    /// A discovery whose answer the test changes, counting the calls.
    fn fake(served: Arc<Mutex<Vec<ApiResource>>>, calls: Arc<AtomicUsize>) -> Discover {
        Arc::new(move || {
            let served = served.clone();
            let calls = calls.clone();
            Box::pin(async move {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(Discovery {
                    resources: served.lock().unwrap().clone(),
                    failed: Vec::new(),
                })
            })
        })
    }

    #[test]
    fn a_group_that_fails_discovery_keeps_what_was_known() {
        let mut before = builtins();
        before.push(crontab("v1"));
        let found = Discovery {
            resources: builtins(),
            failed: vec![(
                "stable.example.com/v1".into(),
                ClientError::Api(Default::default()),
            )],
        };
        assert_eq!(merge(&before, &found), before);
        // A group simply gone from discovery is forgotten.
        let gone = Discovery {
            resources: builtins(),
            failed: Vec::new(),
        };
        assert_eq!(merge(&before, &gone), builtins());
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_custom_kind_is_found_after_a_rate_limited_refresh() {
        let served = Arc::new(Mutex::new(builtins()));
        let calls = Arc::new(AtomicUsize::new(0));
        let mapper = Mapper::new(fake(served.clone(), calls.clone()), REFRESH_INTERVAL);
        mapper.refresh().await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        // Known kinds are answered from the cache.
        let cm = mapper.resolve("v1", "ConfigMap").await.unwrap().unwrap();
        assert_eq!(cm.plural, "configmaps");
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        // The CRD is established: right after a discovery the kind stays unknown...
        served.lock().unwrap().push(crontab("v1"));
        assert_eq!(
            mapper
                .resolve("stable.example.com/v1", "CronTab")
                .await
                .unwrap(),
            None
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        // ...and once the interval has passed, the miss refreshes discovery once.
        tokio::time::advance(REFRESH_INTERVAL).await;
        let ct = mapper
            .resolve("stable.example.com/v1", "CronTab")
            .await
            .unwrap();
        assert_eq!(ct, Some(crontab("v1")));
        assert_eq!(calls.load(Ordering::SeqCst), 2);

        // A kind that is not served at all refreshes at most once per interval.
        for _ in 0..5 {
            assert_eq!(
                mapper
                    .resolve("nope.example.com/v1", "Ghost")
                    .await
                    .unwrap(),
                None
            );
        }
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        tokio::time::advance(REFRESH_INTERVAL).await;
        assert_eq!(
            mapper
                .resolve("nope.example.com/v1", "Ghost")
                .await
                .unwrap(),
            None
        );
        assert_eq!(calls.load(Ordering::SeqCst), 3);

        // The CRD is deleted: the next periodic refresh forgets its kind.
        served.lock().unwrap().retain(|r| r.kind != "CronTab");
        mapper.refresh().await.unwrap();
        assert_eq!(
            mapper
                .resolve("stable.example.com/v1", "CronTab")
                .await
                .unwrap(),
            None
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_discovery_is_reported_and_rate_limited_too() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let failing: Discover = Arc::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Err(ClientError::Api(Default::default())) })
        });
        let mapper = Mapper::new(failing, REFRESH_INTERVAL);
        assert!(mapper.resolve("v1", "ConfigMap").await.is_err());
        assert_eq!(mapper.resolve("v1", "ConfigMap").await.unwrap(), None);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}

//! Scraping: every `--metric-resolution`, each node's kubelet is asked for `/metrics/resource`
//! (at the address the node publishes, naming the node in the `Tinykube-Node` header, since one
//! kubelet process plays many nodes), and the points go to the [`Storage`]. A new node is
//! scraped when it appears and again a second later, so `kubectl top nodes` answers right
//! after a cluster starts rather than a resolution or two later (metrics-server waits for its
//! cycles).

use std::collections::HashSet;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use tinykube_client::reflector::Store;
use tinykube_clock::Clock;
use tokio_util::sync::CancellationToken;

use crate::prom;
use crate::storage::Storage;

/// The node annotation where a tinykube kubelet publishes the address it serves on.
pub const ADDRESS_ANNOTATION: &str = "kubelet.tinykube.io/address";
/// The request header naming the node a kubelet request is about.
pub const NODE_HEADER: &str = "Tinykube-Node";
/// Nodes scraped at once.
const CONCURRENCY: usize = 64;
/// How soon a node with a single point is scraped again.
const WARM_UP: Duration = Duration::from_secs(1);

/// What the scraper needs.
pub struct Scraper {
    pub http: reqwest::Client,
    pub nodes: Store<Node>,
    pub storage: Arc<RwLock<Storage>>,
    pub clock: Clock,
    pub resolution: Duration,
}

impl Scraper {
    /// One node's points, or why they could not be had.
    async fn scrape(&self, node: &Node) -> Result<prom::Batch, String> {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let address = node
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ADDRESS_ANNOTATION))
            .ok_or_else(|| format!("node {name:?} publishes no {ADDRESS_ANNOTATION} annotation"))?;
        let url = format!("http://{address}/metrics/resource");
        let resp = self
            .http
            .get(&url)
            .header(NODE_HEADER, name)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("{url}: request failed, status {}", resp.status()));
        }
        let text = resp.text().await.map_err(|e| format!("{url}: {e}"))?;
        Ok(prom::decode(&text, self.clock.now()))
    }

    /// Scrape `names` (all nodes when `None`) and store what came back.
    async fn cycle(&self, names: Option<&HashSet<String>>) {
        let nodes: Vec<_> = self
            .nodes
            .list()
            .into_iter()
            .filter(|n| {
                names.is_none_or(|want| want.contains(n.metadata.name.as_deref().unwrap_or("")))
            })
            .collect();
        let live: HashSet<String> = nodes
            .iter()
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        let this = self;
        let mut results = futures::stream::iter(nodes)
            .map(move |n| async move {
                let result = this.scrape(&n).await;
                (n.metadata.name.clone().unwrap_or_default(), result)
            })
            .buffer_unordered(CONCURRENCY);
        while let Some((name, result)) = results.next().await {
            match result {
                Ok(batch) => self.storage_mut().store(&name, batch),
                Err(e) => tracing::warn!(node = %name, error = %e, "Failed to scrape node"),
            }
        }
        if names.is_none() {
            self.storage_mut().retain(|n| live.contains(n));
        }
    }

    fn storage_mut(&self) -> std::sync::RwLockWriteGuard<'_, Storage> {
        self.storage.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Nodes to scrape before the next cycle, each once: those never tried (`tried`), and those
    /// with one point and no usage yet whose point is a second old (`warmed`).
    fn pending(
        &self,
        tried: &mut HashSet<String>,
        warmed: &mut HashSet<String>,
    ) -> HashSet<String> {
        let storage = self.storage.read().unwrap_or_else(|e| e.into_inner());
        let now = self.clock.now();
        let mut out = HashSet::new();
        for name in self
            .nodes
            .list()
            .iter()
            .filter_map(|n| n.metadata.name.clone())
        {
            let due = match storage.last_point(&name) {
                None => tried.insert(name.clone()),
                Some(at) => {
                    !storage.has_node(&name)
                        && now.duration_since(at).unwrap_or_default() >= WARM_UP
                        && warmed.insert(name.clone())
                }
            };
            if due {
                out.insert(name);
            }
        }
        out
    }

    /// Scrape until `shutdown`: every node each resolution, and nodes that appear (or have a
    /// single point a second old) at once.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut tick = self.clock.interval(self.resolution);
        let mut poll = self.clock.interval(WARM_UP);
        let (mut tried, mut warmed) = (HashSet::new(), HashSet::new());
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => self.cycle(None).await,
                _ = poll.tick() => {}
            }
            let pending = self.pending(&mut tried, &mut warmed);
            if !pending.is_empty() {
                self.cycle(Some(&pending)).await;
            }
        }
    }
}

//! tinykube-controller-manager: the controllers that make workloads happen (Endpoints and
//! EndpointSlices of Services, ReplicaSet, DaemonSet, Deployment, StatefulSet,
//! ReplicationController, Job, CronJob, the garbage collectors of owned objects, of pods and of
//! finished Jobs, namespace lifecycle, node lifecycle, disruption budgets, node TTLs,
//! ServiceAccounts and their legacy token Secrets, quotas, aggregated ClusterRoles, persistent volume binding and
//! provisioning, volume and claim protection, horizontal pod autoscaling), each a reconcile loop over shared informer
//! caches with a rate-limited work queue keyed by object.
//!
//! One entry, [`run`]. It campaigns for the `kube-controller-manager` Lease when asked to,
//! builds the shared [`context::Context`], starts every enabled controller of the
//! [`registry`] and then the informers they subscribed to.

pub mod clusterroleaggregation;
pub mod context;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpoint;
pub mod endpointslice;
pub mod events;
pub mod expectations;
pub mod garbagecollector;
pub mod history;
pub mod job;
pub mod namespace;
pub mod nodelifecycle;
pub mod owned;
pub mod persistentvolume;
pub mod podaddress;
pub mod podautoscaler;
pub mod podgc;
pub mod pvcprotection;
pub mod pvprotection;
pub mod registry;
pub mod replicaset;
pub mod resourcequota;
pub mod rootcacertpublisher;
pub mod serviceaccount;
pub mod serviceaccounttoken;
pub mod statefulset;
pub mod ttl;
pub mod ttlafterfinished;
pub mod util;
pub mod workqueue;

use std::sync::Arc;

use tinykube_client::Client;
use tokio_util::sync::CancellationToken;

pub use context::Options;

/// Settings of one controller-manager process.
pub struct Config {
    pub client: tinykube_client::Config,
    /// `--controllers`: `*`, `name`, `-name`.
    pub controllers: Vec<String>,
    /// Campaign on this Lease and run the controllers only while leading.
    pub leader_election: Option<tinykube_client::leader::LeaseConfig>,
    /// Host name for event sources.
    pub host: String,
    pub options: Options,
    /// The cluster's time (`Clock::real()` for the binary; a test's manual clock moves node
    /// grace periods, evictions, Job deadlines and back-offs, CronJob schedules, …).
    pub clock: tinykube_clock::Clock,
}

#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    #[error("connecting to the API server: {0}")]
    Client(#[from] tinykube_client::ClientError),
    #[error("--controllers: {0}")]
    Selection(#[from] registry::SelectionError),
    #[error("leaderelection lost")]
    LeadershipLost,
}

/// Run until `shutdown` is cancelled (or leadership is lost).
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), ManagerError> {
    let enabled = registry::enabled(&config.controllers)?;
    let client = Client::new(config.client)?;
    let mut leading = None;
    let mut elector_task = None;
    if let Some(lease) = config.leader_election {
        let elector = Arc::new(tinykube_client::leader::LeaderElector::new(
            client.clone(),
            lease,
        ));
        let mut rx = elector.leading();
        let stop = shutdown.clone();
        elector_task = Some(tokio::spawn(async move {
            elector.run(stop.cancelled_owned()).await
        }));
        tracing::info!("waiting for the kube-controller-manager lease");
        tokio::select! {
            _ = rx.wait_for(|l| *l) => {}
            _ = shutdown.cancelled() => {}
        }
        leading = Some(rx);
    }
    let ctx = Arc::new(context::Context::new(
        client,
        config.clock,
        config.host,
        config.options,
    ));
    let mut running = Vec::new();
    for entry in enabled {
        match entry.start {
            Some(start) => {
                tracing::info!(controller = entry.name, "starting controller");
                running.push(start(&ctx));
            }
            None => tracing::info!(
                controller = entry.name,
                "controller not implemented in tinykube yet; skipping"
            ),
        }
    }
    running.push(ctx.start_informers());
    let all = futures::future::join_all(running);
    let lost = async {
        match leading.as_mut() {
            Some(rx) => {
                let _ = rx.wait_for(|l| !*l).await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    let result = tokio::select! {
        _ = shutdown.cancelled() => Ok(()),
        _ = lost, if !shutdown.is_cancelled() => Err(ManagerError::LeadershipLost),
        _ = all => Ok(()),
    };
    if let Some(t) = elector_task {
        if result.is_ok() {
            // Let a graceful stop release the lease.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), t).await;
        } else {
            t.abort();
        }
    }
    result
}

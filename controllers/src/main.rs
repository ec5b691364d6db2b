//! tinykube-controller-manager: parse flags, set up logging, run the controllers until
//! SIGTERM/SIGINT.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use tinykube_cli::GoDuration;
use tinykube_client::leader;

/// Runs the controllers that drive the cluster to its desired state (Endpoints and
/// EndpointSlices, ReplicaSet, Deployment, DaemonSet, garbage collectors, namespace and node
/// lifecycle, disruption budgets, ServiceAccounts, quotas, aggregated ClusterRoles), as
/// upstream's kube-controller-manager.
#[derive(Parser, Debug)]
#[command(name = "tinykube-controller-manager", version)]
struct Flags {
    /// kubeconfig of the cluster (default: $KUBECONFIG, when --master is not given either).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// API server URL; overrides the kubeconfig's server.
    #[arg(long)]
    master: Option<String>,
    /// Controllers to run: '*' enables all, 'foo' enables foo, '-foo' disables foo. Known:
    /// endpoint, endpointslice, replicaset, deployment, daemonset, garbagecollector, namespace,
    /// nodelifecycle, horizontalpodautoscaling, disruption, ttl, podgc, serviceaccount,
    /// serviceaccount-token, root-ca-cert-publisher, resourcequota, clusterrole-aggregation.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    controllers: Vec<String>,
    /// Campaign for leadership on the kube-controller-manager Lease and run only while leading.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "true")]
    leader_elect: bool,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "kube-controller-manager")]
    leader_elect_resource_name: String,
    /// Namespace of the leader-election Lease.
    #[arg(long, default_value = "kube-system")]
    leader_elect_resource_namespace: String,
    /// How long a lease is valid without renewal (Go duration).
    #[arg(long, default_value_t = GoDuration(leader::LEASE_DURATION))]
    leader_elect_lease_duration: GoDuration,
    /// How long the leader keeps trying to renew before giving up.
    #[arg(long, default_value_t = GoDuration(leader::RENEW_DEADLINE))]
    leader_elect_renew_deadline: GoDuration,
    /// Interval between acquire or renew attempts.
    #[arg(long, default_value_t = GoDuration(leader::RETRY_PERIOD))]
    leader_elect_retry_period: GoDuration,
    /// How often node health is checked (node lifecycle).
    #[arg(long, value_parser = tinykube_cli::go_duration, default_value = "5s")]
    node_monitor_period: Duration,
    /// How long a node may go without a heartbeat before it is marked unhealthy.
    #[arg(long, value_parser = tinykube_cli::go_duration, default_value = "40s")]
    node_monitor_grace_period: Duration,
    /// Terminated pods kept before the pod garbage collector deletes the oldest; 0 keeps them all.
    #[arg(long, default_value_t = 12500)]
    terminated_pod_gc_threshold: usize,
    /// How often the pod garbage collector runs (tinykube's own flag; upstream's is fixed at
    /// 20s). Pods bound to a deleted node go after twice this.
    #[arg(long, value_parser = tinykube_cli::go_duration, default_value = "20s")]
    pod_gc_check_period: Duration,
    /// How often the garbage collector resyncs its monitors with discovery, so that the
    /// resources of new CRDs are watched (tinykube's own flag; upstream's is fixed at 30s).
    #[arg(long, value_parser = tinykube_cli::go_duration, default_value = "30s")]
    gc_resync_period: Duration,
    /// The cluster CA certificate (PEM) the root CA publisher puts in every namespace's
    /// `kube-root-ca.crt`: the API server's `DATA_DIR/ca.crt`.
    #[arg(long)]
    root_ca_file: Option<std::path::PathBuf>,
    /// PEM private key to sign the tokens of `kubernetes.io/service-account-token` Secrets with
    /// (the serviceaccount-token controller): the API server's `DATA_DIR/ca.key`. Without it
    /// that controller is disabled, as upstream's.
    #[arg(long)]
    service_account_private_key_file: Option<std::path::PathBuf>,
    /// Deployments synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_deployment_syncs: usize,
    /// ReplicaSets synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_replicaset_syncs: usize,
    /// Jobs synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_job_syncs: usize,
    /// tinykube only, for tests: the first delay before a Job replaces a failed pod (doubled
    /// per failure up to 6 minutes); upstream's is a fixed 10s.
    #[arg(long, value_parser = tinykube_cli::go_duration, default_value = "10s")]
    job_pod_failure_backoff: Duration,
    /// How often each HorizontalPodAutoscaler is synced (metrics read, replicas computed).
    #[arg(long, value_parser = tinykube_cli::go_duration, default_value = "15s")]
    horizontal_pod_autoscaler_sync_period: Duration,
    /// How far back the autoscaler looks for a higher recommendation before scaling down.
    #[arg(long, value_parser = tinykube_cli::go_duration, default_value = "5m0s")]
    horizontal_pod_autoscaler_downscale_stabilization: Duration,
    /// The minimum change (from 1.0) in the desired-to-actual metrics ratio for the
    /// autoscaler to act.
    #[arg(long, default_value_t = 0.1)]
    horizontal_pod_autoscaler_tolerance: f64,
    /// After a pod starts, how long its CPU samples are trusted only once it was ready for a
    /// whole sample window.
    #[arg(long, value_parser = tinykube_cli::go_duration, default_value = "5m0s")]
    horizontal_pod_autoscaler_cpu_initialization_period: Duration,
    /// After a pod starts, how long a readiness change still counts as its initial one.
    #[arg(long, value_parser = tinykube_cli::go_duration, default_value = "30s")]
    horizontal_pod_autoscaler_initial_readiness_delay: Duration,
    /// Garbage collector workers.
    #[arg(long, default_value_t = 20)]
    concurrent_gc_syncs: usize,
    /// Log format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
}

#[tokio::main]
async fn main() {
    let flags: Flags = tinykube_cli::parse("tinykube-controller-manager");
    tinykube_cli::init_logging("info", flags.log_format == "json");
    let fail =
        |message: String| -> ! { tinykube_cli::exit("tinykube-controller-manager", 1, message) };
    if let Err(e) = tinykube_controllers::registry::enabled(&flags.controllers) {
        tinykube_cli::exit(
            "tinykube-controller-manager",
            2,
            format!("--controllers: {e}"),
        );
    }
    let client =
        match tinykube_client::Config::load(flags.kubeconfig.as_deref(), flags.master.as_deref()) {
            Ok(c) => c,
            Err(e) => fail(e.to_string()),
        };
    let host = tinykube_client::leader::host_name();
    let leader_election = flags
        .leader_elect
        .then(|| tinykube_client::leader::LeaseConfig {
            lease_duration: flags.leader_elect_lease_duration.0,
            renew_deadline: flags.leader_elect_renew_deadline.0,
            retry_period: flags.leader_elect_retry_period.0,
            event_source: Some("kube-controller-manager".into()),
            ..tinykube_client::leader::LeaseConfig::new(
                &flags.leader_elect_resource_namespace,
                &flags.leader_elect_resource_name,
                &tinykube_client::leader::unique_identity(&host),
            )
        });
    let config = tinykube_controllers::Config {
        client,
        controllers: flags.controllers,
        leader_election,
        host,
        options: tinykube_controllers::Options {
            concurrent_replicaset_syncs: flags.concurrent_replicaset_syncs,
            concurrent_deployment_syncs: flags.concurrent_deployment_syncs,
            concurrent_gc_syncs: flags.concurrent_gc_syncs,
            node_monitor_period: flags.node_monitor_period,
            node_monitor_grace_period: flags.node_monitor_grace_period,
            terminated_pod_gc_threshold: flags.terminated_pod_gc_threshold,
            pod_gc_check_period: flags.pod_gc_check_period,
            gc_resync_period: flags.gc_resync_period,
            root_ca_file: flags.root_ca_file,
            service_account_private_key_file: flags.service_account_private_key_file,
            concurrent_job_syncs: flags.concurrent_job_syncs,
            job_pod_failure_backoff: flags.job_pod_failure_backoff,
            hpa: tinykube_controllers::podautoscaler::Settings {
                sync_period: flags.horizontal_pod_autoscaler_sync_period,
                downscale_stabilization: flags.horizontal_pod_autoscaler_downscale_stabilization,
                calculator: tinykube_controllers::podautoscaler::calculator::Calculator {
                    tolerance: flags.horizontal_pod_autoscaler_tolerance,
                    cpu_initialization_period: flags
                        .horizontal_pod_autoscaler_cpu_initialization_period,
                    initial_readiness_delay: flags
                        .horizontal_pod_autoscaler_initial_readiness_delay,
                },
            },
        },
        clock: tinykube_clock::Clock::real(),
    };
    let shutdown = tinykube_cli::shutdown_on_signal();
    if let Err(e) = tinykube_controllers::run(config, shutdown).await {
        tracing::error!(error = %e, "controller manager stopped");
        tinykube_cli::exit("tinykube-controller-manager", 1, e);
    }
}

//! tinykube-scheduler: parse flags, set up logging, schedule until SIGTERM/SIGINT.

use std::path::PathBuf;

use clap::Parser;

/// Watches pending pods of its scheduler name and binds each to the best node, with upstream's
/// plugins, messages and events.
#[derive(Parser, Debug)]
#[command(name = "tinykube-scheduler", version)]
struct Flags {
    /// kubeconfig of the cluster (default: $KUBECONFIG, when --master is not given either).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// API server URL; overrides the kubeconfig's server.
    #[arg(long)]
    master: Option<String>,
    /// The schedulerName of the pods this scheduler places (without --config).
    #[arg(long, default_value = "default-scheduler")]
    scheduler_name: String,
    /// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1, YAML or JSON): its
    /// profiles, each serving one schedulerName with its own plugins, replace --scheduler-name;
    /// its leaderElection and clientConnection.kubeconfig apply unless flags say otherwise.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Seed for tie-breaks between equally scored nodes (reproducible placements).
    #[arg(long)]
    seed: Option<u64>,
    /// Address to serve /healthz and Prometheus /metrics on (plain HTTP).
    #[arg(long, default_value = "127.0.0.1")]
    bind_address: std::net::IpAddr,
    /// Port of /healthz and /metrics (0 picks a free port and logs it).
    #[arg(long, default_value_t = 10259)]
    secure_port: u16,
    /// Campaign for leadership on a Lease and schedule only while leading [default: false;
    /// with --config, the file's leaderElection.leaderElect, true if unset, as upstream].
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    leader_elect: Option<bool>,
    /// Name of the leader-election Lease [default: kube-scheduler].
    #[arg(long, alias = "lock-object-name")]
    leader_elect_resource_name: Option<String>,
    /// Namespace of the leader-election Lease [default: kube-system].
    #[arg(long, alias = "lock-object-namespace")]
    leader_elect_resource_namespace: Option<String>,
    /// How long a lease is valid without renewal (Go duration) [default: 15s].
    #[arg(long, value_parser = tinykube_cli::go_duration)]
    leader_elect_lease_duration: Option<std::time::Duration>,
    /// How long the leader keeps trying to renew before giving up [default: 10s].
    #[arg(long, value_parser = tinykube_cli::go_duration)]
    leader_elect_renew_deadline: Option<std::time::Duration>,
    /// Interval between acquire or renew attempts [default: 2s].
    #[arg(long, value_parser = tinykube_cli::go_duration)]
    leader_elect_retry_period: Option<std::time::Duration>,
}

/// mimalloc instead of glibc's malloc: a scheduling cycle allocates and frees many small values
/// (see ARCHITECTURE.md, Choices).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let flags: Flags = tinykube_cli::parse("tinykube-scheduler");
    tinykube_cli::init_logging("info", false);
    let fail = |message: String| -> ! { tinykube_cli::exit("tinykube-scheduler", 1, message) };
    let loaded = match &flags.config {
        Some(path) => match tinykube_scheduler::config::load(path) {
            Ok(l) => Some(l),
            Err(e) => fail(e.to_string()),
        },
        None => None,
    };
    let file_election = loaded
        .as_ref()
        .and_then(|l| l.leader_election.clone())
        .unwrap_or_default();
    let file_duration = |d: &Option<String>, what: &str| -> Option<std::time::Duration> {
        d.as_deref().map(|v| {
            tinykube_cli::go_duration(v)
                .unwrap_or_else(|e| fail(format!("leaderElection.{what}: {e}")))
        })
    };
    let kubeconfig = flags.kubeconfig.clone().or_else(|| {
        loaded
            .as_ref()
            .and_then(|l| l.kubeconfig.clone())
            .filter(|k| !k.is_empty())
            .map(PathBuf::from)
    });
    let client = match tinykube_client::Config::load(kubeconfig.as_deref(), flags.master.as_deref())
    {
        Ok(c) => c,
        Err(e) => fail(e.to_string()),
    };
    let host = tinykube_client::leader::host_name();
    let leader_elect = flags
        .leader_elect
        .or(file_election.leader_elect)
        .unwrap_or(loaded.is_some());
    let profiles = match loaded {
        Some(ref l) => l.profiles.clone(),
        None => vec![tinykube_scheduler::config::Profile::default_named(
            &flags.scheduler_name,
        )],
    };
    // Upstream records leader election under the first profile's scheduler name.
    let event_source = profiles
        .first()
        .map(|p| p.scheduler_name.clone())
        .unwrap_or_else(|| flags.scheduler_name.clone());
    let leader_election = leader_elect.then(|| {
        let name = flags
            .leader_elect_resource_name
            .clone()
            .or(file_election.resource_name.clone())
            .unwrap_or_else(|| "kube-scheduler".into());
        let namespace = flags
            .leader_elect_resource_namespace
            .clone()
            .or(file_election.resource_namespace.clone())
            .unwrap_or_else(|| "kube-system".into());
        tinykube_client::leader::LeaseConfig {
            lease_duration: flags
                .leader_elect_lease_duration
                .or_else(|| file_duration(&file_election.lease_duration, "leaseDuration"))
                .unwrap_or(tinykube_client::leader::LEASE_DURATION),
            renew_deadline: flags
                .leader_elect_renew_deadline
                .or_else(|| file_duration(&file_election.renew_deadline, "renewDeadline"))
                .unwrap_or(tinykube_client::leader::RENEW_DEADLINE),
            retry_period: flags
                .leader_elect_retry_period
                .or_else(|| file_duration(&file_election.retry_period, "retryPeriod"))
                .unwrap_or(tinykube_client::leader::RETRY_PERIOD),
            event_source: Some(event_source.clone()),
            ..tinykube_client::leader::LeaseConfig::new(
                &namespace,
                &name,
                &tinykube_client::leader::unique_identity(&host),
            )
        }
    });
    let config = tinykube_scheduler::Config {
        client,
        profiles,
        seed: flags.seed,
        host,
        leader_election,
        health_addr: Some(std::net::SocketAddr::new(
            flags.bind_address,
            flags.secure_port,
        )),
        clock: tinykube_clock::Clock::real(),
    };
    let shutdown = tinykube_cli::shutdown_on_signal();
    if let Err(e) = tinykube_scheduler::run(config, shutdown).await {
        tracing::error!(error = %e, "scheduler stopped");
        tinykube_cli::exit("tinykube-scheduler", 1, e);
    }
}

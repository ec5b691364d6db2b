//! tinykube-controller-manager: parse flags, set up logging, run the controllers until
//! SIGTERM/SIGINT.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use tokio_util::sync::CancellationToken;

/// Runs the controllers that drive workloads to their desired state (ReplicaSet, Deployment,
/// garbage collector, namespace lifecycle), as upstream's kube-controller-manager.
#[derive(Parser, Debug)]
#[command(name = "tinykube-controller-manager", version)]
struct Flags {
    /// kubeconfig of the cluster (default: $KUBECONFIG).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// API server URL; overrides the kubeconfig's server.
    #[arg(long)]
    master: Option<String>,
    /// Controllers to run: '*' enables all, 'foo' enables foo, '-foo' disables foo. Known:
    /// replicaset, deployment, daemonset, garbagecollector, namespace, nodelifecycle.
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
    #[arg(long, value_parser = go_duration, default_value = "15s")]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before giving up.
    #[arg(long, value_parser = go_duration, default_value = "10s")]
    leader_elect_renew_deadline: Duration,
    /// Interval between acquire or renew attempts.
    #[arg(long, value_parser = go_duration, default_value = "2s")]
    leader_elect_retry_period: Duration,
    /// How often node health is checked (node lifecycle).
    #[arg(long, value_parser = go_duration, default_value = "5s")]
    node_monitor_period: Duration,
    /// How long a node may go without a heartbeat before it is marked unhealthy.
    #[arg(long, value_parser = go_duration, default_value = "40s")]
    node_monitor_grace_period: Duration,
    /// Deployments synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_deployment_syncs: usize,
    /// ReplicaSets synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_replicaset_syncs: usize,
    /// Garbage collector workers.
    #[arg(long, default_value_t = 20)]
    concurrent_gc_syncs: usize,
    /// Log format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
}

fn go_duration(s: &str) -> Result<Duration, String> {
    tinykube_proto::duration::parse(s).map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() {
    let flags = match Flags::try_parse() {
        Ok(f) => f,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            eprintln!(
                "tinykube-controller-manager: {}",
                first.trim_start_matches("error: ")
            );
            std::process::exit(2);
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if flags.log_format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
    let fail = |message: String| -> ! {
        eprintln!("tinykube-controller-manager: {message}");
        std::process::exit(1);
    };
    if let Err(e) = tinykube_controllers::registry::enabled(&flags.controllers) {
        eprintln!("tinykube-controller-manager: --controllers: {e}");
        std::process::exit(2);
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
            lease_duration: flags.leader_elect_lease_duration,
            renew_deadline: flags.leader_elect_renew_deadline,
            retry_period: flags.leader_elect_retry_period,
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
        },
    };
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    // Installed before anything runs: a SIGTERM right after start-up still stops cleanly.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::spawn(async move {
        tokio::select! {
            _ = async { if let Some(t) = term.as_mut() { t.recv().await; } else { std::future::pending::<()>().await } } => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        signal.cancel();
    });
    if let Err(e) = tinykube_controllers::run(config, shutdown).await {
        tracing::error!(error = %e, "controller manager stopped");
        eprintln!("tinykube-controller-manager: {e}");
        std::process::exit(1);
    }
}

//! tinykube-scheduler: parse flags, set up logging, schedule until SIGTERM/SIGINT.

use std::path::PathBuf;

use clap::Parser;
use tokio_util::sync::CancellationToken;

/// Watches pending pods of its scheduler name and binds each to the best node, with upstream's
/// plugins, messages and events.
#[derive(Parser, Debug)]
#[command(name = "tinykube-scheduler", version)]
struct Flags {
    /// kubeconfig of the cluster (default: $KUBECONFIG).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// API server URL; overrides the kubeconfig's server.
    #[arg(long)]
    master: Option<String>,
    /// The schedulerName of the pods this scheduler places.
    #[arg(long, default_value = "default-scheduler")]
    scheduler_name: String,
    /// Seed for tie-breaks between equally scored nodes (reproducible placements).
    #[arg(long)]
    seed: Option<u64>,
    /// Address to serve /healthz and Prometheus /metrics on (plain HTTP).
    #[arg(long, default_value = "127.0.0.1")]
    bind_address: std::net::IpAddr,
    /// Port of /healthz and /metrics (0 picks a free port and logs it).
    #[arg(long, default_value_t = 10259)]
    secure_port: u16,
    /// Campaign for leadership on a Lease and schedule only while leading.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    leader_elect: bool,
    /// Name of the leader-election Lease.
    #[arg(long, alias = "lock-object-name", default_value = "kube-scheduler")]
    leader_elect_resource_name: String,
    /// Namespace of the leader-election Lease.
    #[arg(long, alias = "lock-object-namespace", default_value = "kube-system")]
    leader_elect_resource_namespace: String,
    /// How long a lease is valid without renewal (Go duration).
    #[arg(long, default_value = "15s", value_parser = go_duration)]
    leader_elect_lease_duration: std::time::Duration,
    /// How long the leader keeps trying to renew before giving up.
    #[arg(long, default_value = "10s", value_parser = go_duration)]
    leader_elect_renew_deadline: std::time::Duration,
    /// Interval between acquire or renew attempts.
    #[arg(long, default_value = "2s", value_parser = go_duration)]
    leader_elect_retry_period: std::time::Duration,
}

fn go_duration(s: &str) -> Result<std::time::Duration, String> {
    tinykube_proto::duration::parse(s).map_err(|e| e.to_string())
}

/// A random identity suffix, as upstream's `hostname_<uuid>` holder identities.
fn unique_suffix() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..4)
        .map(|_| format!("{:08x}", rng.random::<u32>()))
        .collect::<Vec<_>>()
        .join("-")
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
                "tinykube-scheduler: {}",
                first.trim_start_matches("error: ")
            );
            std::process::exit(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let client =
        match tinykube_client::Config::load(flags.kubeconfig.as_deref(), flags.master.as_deref()) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("tinykube-scheduler: {e}");
                std::process::exit(1);
            }
        };
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    let leader_election = flags
        .leader_elect
        .then(|| tinykube_client::leader::LeaseConfig {
            lease_duration: flags.leader_elect_lease_duration,
            renew_deadline: flags.leader_elect_renew_deadline,
            retry_period: flags.leader_elect_retry_period,
            ..tinykube_client::leader::LeaseConfig::new(
                &flags.leader_elect_resource_namespace,
                &flags.leader_elect_resource_name,
                &format!("{host}_{}", unique_suffix()),
            )
        });
    let config = tinykube_scheduler::Config {
        client,
        scheduler_names: vec![flags.scheduler_name],
        seed: flags.seed,
        host,
        leader_election,
        health_addr: Some(std::net::SocketAddr::new(
            flags.bind_address,
            flags.secure_port,
        )),
    };
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = async { if let Some(t) = term.as_mut() { t.recv().await; } else { std::future::pending::<()>().await } } => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        signal.cancel();
    });
    if let Err(e) = tinykube_scheduler::run(config, shutdown).await {
        tracing::error!(error = %e, "scheduler stopped");
        eprintln!("tinykube-scheduler: {e}");
        std::process::exit(1);
    }
}

//! tinykube: the launcher. `tinykube up` parses flags, sets up logging and runs the cluster
//! until Ctrl-C or SIGTERM.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

/// A miniature Kubernetes: the API server, scheduler, controller manager and kubelets of one
/// cluster, as child processes.
#[derive(Parser, Debug)]
#[command(name = "tinykube", version)]
struct Flags {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Start a cluster (or resume the one in --data-dir), wait until every node is Ready, print
    /// the `export KUBECONFIG=…` line and run until Ctrl-C.
    Up {
        /// Worker nodes worker0, worker1, … (above 10, one kubelet simulates them as worker-0 …)
        /// [default: 3, or what the data dir's cluster had].
        #[arg(long)]
        nodes: Option<usize>,
        /// Master nodes master0, … (label node-role.kubernetes.io/master, NoSchedule taint)
        /// [default: 0, or what the data dir's cluster had].
        #[arg(long)]
        masters: Option<usize>,
        /// Where the cluster lives: store, kubeconfig, logs, static pod manifests.
        #[arg(long, default_value = "./tinykube-data")]
        data_dir: PathBuf,
        /// API server port on 127.0.0.1 (0 picks a free one) [default: 6443, or what the data
        /// dir's cluster had].
        #[arg(long)]
        port: Option<u16>,
        /// How long a node may go without a heartbeat before the controller manager marks it
        /// Unknown (upstream's `--node-monitor-grace-period`, 40s); shorter values (e.g. 10s)
        /// also shorten the kubelets' node leases, for node failure demos that take seconds.
        #[arg(long, value_parser = go_duration)]
        node_monitor_grace_period: Option<std::time::Duration>,
    },
}

fn go_duration(s: &str) -> Result<std::time::Duration, String> {
    tinykube_proto::duration::parse(s).map_err(|e| e.to_string())
}

fn fail(message: &str) -> ! {
    eprintln!("tinykube: {message}");
    std::process::exit(2);
}

#[tokio::main]
async fn main() {
    let flags = match Flags::try_parse() {
        Ok(f) => f,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.to_string();
            fail(
                text.lines()
                    .next()
                    .unwrap_or("invalid arguments")
                    .trim_start_matches("error: "),
            );
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let Cmd::Up {
        nodes,
        masters,
        data_dir,
        port,
        node_monitor_grace_period,
    } = flags.command;
    let bin_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(PathBuf::from))
        .unwrap_or_else(|| fail("cannot find the folder of the tinykube executable"));
    let config = tinykube_cluster::Config {
        data_dir,
        workers: nodes,
        masters,
        port,
        bin_dir,
        node_monitor_grace_period,
    };
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    // Installed before any child starts: a signal during start-up must stop them all.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::spawn(async move {
        tokio::select! {
            _ = async { if let Some(t) = term.as_mut() { t.recv().await; } else { std::future::pending::<()>().await } } => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        signal.cancel();
    });
    if let Err(e) = tinykube_cluster::run(config, shutdown).await {
        eprintln!("tinykube: {e}");
        std::process::exit(1);
    }
}

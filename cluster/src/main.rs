//! tinykube: the launcher. `tinykube up` parses flags, sets up logging and runs the cluster
//! until Ctrl-C or SIGTERM.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

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
        #[arg(long, value_parser = tinykube_cli::go_duration)]
        node_monitor_grace_period: Option<std::time::Duration>,
    },
}

#[tokio::main]
async fn main() {
    let flags: Flags = tinykube_cli::parse("tinykube");
    tinykube_cli::init_logging("warn", false);
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
        .unwrap_or_else(|| {
            tinykube_cli::exit(
                "tinykube",
                2,
                "cannot find the folder of the tinykube executable",
            )
        });
    let config = tinykube_cluster::Config {
        data_dir,
        workers: nodes,
        masters,
        port,
        bin_dir,
        node_monitor_grace_period,
    };
    // Installed before any child starts: a signal during start-up must stop them all.
    let shutdown = tinykube_cli::shutdown_on_signal();
    if let Err(e) = tinykube_cluster::run(config, shutdown).await {
        tinykube_cli::exit("tinykube", 1, e);
    }
}

//! tinykube: the launcher. `tinykube up` parses flags, sets up logging and runs the cluster
//! until Ctrl-C or SIGTERM (or, with `--exit-on-stdin-close`, until its stdin is closed).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use tinykube_cluster::summary::Output;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum OutputFlag {
    /// The one-screen summary ending with the `export KUBECONFIG=…` line.
    Text,
    /// One JSON line (server, kubeconfig, dataDir, nodes, pids, apiservers, etcdServers) and
    /// nothing else on stdout.
    Json,
}

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
        /// What to print on stdout once every node is Ready: `text`, the summary for a person,
        /// or `json`, exactly one line {"server", "kubeconfig", "dataDir", "nodes", "pids",
        /// "apiservers", "etcdServers"} for a test fixture to read (errors still go to stderr with
        /// a non-zero exit).
        #[arg(long, value_enum, default_value = "text")]
        output: OutputFlag,
        /// Stop the cluster, as Ctrl-C does, when stdin reaches end of file: a test fixture that
        /// holds the pipe stops the cluster by closing it, or by dying. Without it stdin is ignored.
        #[arg(long)]
        exit_on_stdin_close: bool,
        /// Serve the API over HTTPS with the cluster CA and client certificates: the kubeconfig
        /// gets the CA and an admin certificate (kubernetes-admin, system:masters), each
        /// component its own [default: false, or what the data dir's cluster had].
        #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
        secure: Option<bool>,
        /// How often the metrics server scrapes the kubelets (its `--metric-resolution`,
        /// 15s when unset): what `kubectl top` and the autoscaler see moves at this pace.
        #[arg(long, value_parser = tinykube_cli::go_duration)]
        metric_resolution: Option<std::time::Duration>,
        /// How often the HorizontalPodAutoscaler controller syncs (the controller manager's
        /// flag of that name, 15s when unset); shorter for labs and tests.
        #[arg(long, value_parser = tinykube_cli::go_duration)]
        horizontal_pod_autoscaler_sync_period: Option<std::time::Duration>,
        /// How long the autoscaler waits before scaling down (the controller manager's flag
        /// of that name, 5m0s when unset); shorter for labs and tests.
        #[arg(long, value_parser = tinykube_cli::go_duration)]
        horizontal_pod_autoscaler_downscale_stabilization: Option<std::time::Duration>,
        /// Keep the cluster in etcd instead of the API server's embedded sled store: starts the
        /// `etcd` found on PATH (Debian's etcd-server) with its data in DATA_DIR/etcd, on free
        /// 127.0.0.1 ports, stopped with the cluster and resumed with it; `--etcd=false` goes
        /// back to sled [default: false, or what the data dir's cluster had].
        #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true,
              conflicts_with = "etcd_servers")]
        etcd: Option<bool>,
        /// Use these etcd servers (comma-separated URLs, as kube-apiserver's --etcd-servers)
        /// instead of starting one [default: what the data dir's cluster had].
        #[arg(long, value_delimiter = ',')]
        etcd_servers: Option<Vec<String>>,
        /// How many API servers to run; above one they share the etcd store (--etcd or
        /// --etcd-servers) and the kubeconfig's server is a balancer that hands each connection
        /// to the next live one [default: 1, or what the data dir's cluster had].
        #[arg(long)]
        apiservers: Option<usize>,
    },
}

/// Cancel `shutdown` once stdin reaches end of file (or cannot be read). A plain thread: a
/// blocking read cannot be cancelled, and tokio's runtime would wait for it on the way out.
fn cancel_on_stdin_close(shutdown: CancellationToken) {
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        shutdown.cancel();
    });
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
        output,
        exit_on_stdin_close,
        secure,
        metric_resolution,
        horizontal_pod_autoscaler_sync_period,
        horizontal_pod_autoscaler_downscale_stabilization,
        etcd,
        etcd_servers,
        apiservers,
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
        output: match output {
            OutputFlag::Text => Output::Text,
            OutputFlag::Json => Output::Json,
        },
        secure,
        metric_resolution,
        hpa_sync_period: horizontal_pod_autoscaler_sync_period,
        hpa_downscale_stabilization: horizontal_pod_autoscaler_downscale_stabilization,
        etcd,
        etcd_servers,
        apiservers,
    };
    // Installed before any child starts: a signal during start-up must stop them all.
    let shutdown = tinykube_cli::shutdown_on_signal();
    if exit_on_stdin_close {
        cancel_on_stdin_close(shutdown.clone());
    }
    if let Err(e) = tinykube_cluster::run(config, shutdown).await {
        tinykube_cli::exit("tinykube", 1, e);
    }
}

//! tinykube-metrics-server: parse flags, set up logging, serve the metrics API until
//! SIGTERM/SIGINT.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// Scrapes the kubelets' resource metrics and serves metrics.k8s.io/v1beta1 (NodeMetrics,
/// PodMetrics) behind the API server's aggregator, as metrics-server: `kubectl top` and the
/// HorizontalPodAutoscaler read it. Registers the kube-system/metrics-server Service and the
/// v1beta1.metrics.k8s.io APIService at start.
#[derive(Parser, Debug)]
#[command(name = "tinykube-metrics-server", version)]
struct Flags {
    /// kubeconfig of the cluster (default: $KUBECONFIG, when --master is not given either).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// API server URL; overrides the kubeconfig's server.
    #[arg(long)]
    master: Option<String>,
    /// Address to serve on (plain HTTP: the aggregator reaches it on the host).
    #[arg(long, default_value = "127.0.0.1")]
    bind_address: IpAddr,
    /// Port to serve on; 0 picks a free one (the registration names the one bound).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// How often the kubelets are scraped (Go duration).
    #[arg(long, value_parser = tinykube_cli::go_duration, default_value = "15s")]
    metric_resolution: Duration,
    /// How long one kubelet scrape may take (Go duration).
    #[arg(long, value_parser = tinykube_cli::go_duration, default_value = "10s")]
    kubelet_request_timeout: Duration,
    /// Do not create the Service and APIService (someone else registers this server).
    #[arg(long)]
    no_register: bool,
    /// Log format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
}

#[tokio::main]
async fn main() {
    let flags: Flags = tinykube_cli::parse("tinykube-metrics-server");
    tinykube_cli::init_logging("info", flags.log_format == "json");
    let client =
        match tinykube_client::Config::load(flags.kubeconfig.as_deref(), flags.master.as_deref()) {
            Ok(c) => c,
            Err(e) => tinykube_cli::exit("tinykube-metrics-server", 1, e),
        };
    let config = tinykube_metrics_server::Config {
        bind: SocketAddr::new(flags.bind_address, flags.port),
        metric_resolution: flags.metric_resolution,
        kubelet_request_timeout: flags.kubelet_request_timeout,
        register: !flags.no_register,
        ..tinykube_metrics_server::Config::new(client)
    };
    let shutdown = tinykube_cli::shutdown_on_signal();
    if let Err(e) = tinykube_metrics_server::run(config, shutdown).await {
        tinykube_cli::exit("tinykube-metrics-server", 1, e);
    }
}

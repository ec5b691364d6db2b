//! tinykube-kubelet: parse flags, set up logging, run the node(s) until SIGTERM/SIGINT.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use tinykube_kubelet::ipam;
use tinykube_kubelet::node::{self, NodeConfig};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// A kubelet of simulated nodes: registers its Node, keeps its Lease and conditions fresh, runs
/// the pods bound to it and its static pods (with mirror pods) with simulated containers
/// (commands in a busybox-shell interpreter, known images from a table: no image is pulled),
/// and serves their logs and exec.
#[derive(Parser, Debug)]
#[command(name = "tinykube-kubelet", version)]
struct Flags {
    /// kubeconfig of the cluster (default: $KUBECONFIG, when --master is not given either).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// API server URL; overrides the kubeconfig's server.
    #[arg(long)]
    master: Option<String>,
    /// The node name [default: the host name]; with --simulate-nodes, the prefix of NAME-0…
    #[arg(long)]
    hostname_override: Option<String>,
    /// Create the Node object; with false, wait for someone else to create it.
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    register_node: bool,
    /// Labels added at registration: key=value,...
    #[arg(long, default_value = "")]
    node_labels: String,
    /// Taints added at registration: key=value:Effect,...
    #[arg(long, default_value = "")]
    register_with_taints: String,
    /// Capacity (and allocatable) of the node.
    #[arg(
        long,
        default_value = "cpu=4,memory=8Gi,ephemeral-storage=20Gi,pods=110"
    )]
    capacity: String,
    /// Directory (or file) of static pod manifests. With --simulate-nodes, `{node}` in the path
    /// is replaced by each node's name; without it every node runs the same manifests.
    #[arg(long)]
    pod_manifest_path: Option<String>,
    /// How often the manifest directory is re-read in full (it is also watched for changes).
    #[arg(long, default_value = "20s", value_parser = tinykube_cli::go_duration)]
    file_check_frequency: Duration,
    /// URL of a Pod or PodList manifest run as static pods.
    #[arg(long)]
    manifest_url: Option<String>,
    /// How often --manifest-url is fetched.
    #[arg(long, default_value = "20s", value_parser = tinykube_cli::go_duration)]
    http_check_frequency: Duration,
    /// How often node conditions are checked; when given, they are also posted that often
    /// (otherwise every 5m or on change, as upstream).
    #[arg(long, value_parser = tinykube_cli::go_duration)]
    node_status_update_frequency: Option<Duration>,
    /// How often unchanged conditions are posted anyway (upstream's nodeStatusReportFrequency)
    /// [default: 5m, or --node-status-update-frequency when that is given].
    #[arg(long, value_parser = tinykube_cli::go_duration)]
    node_status_report_frequency: Option<Duration>,
    /// Run N nodes in this process, named NAME-0 … NAME-(N-1), sharing watches and timers.
    #[arg(long)]
    simulate_nodes: Option<u32>,
    /// The node's InternalIP [default: derived from the name]; with --simulate-nodes, the first
    /// node's, the others counting up from it.
    #[arg(long)]
    node_ip: Option<Ipv4Addr>,
    /// The node's podCIDR [default: derived from the name]; with --simulate-nodes, the first
    /// node's /24, the others the following /24s.
    #[arg(long)]
    pod_cidr: Option<String>,
    /// leaseDurationSeconds of the node Lease (renewed every quarter of it); shorten for demos.
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(i32).range(1..))]
    node_lease_duration_seconds: i32,
    /// Address of the kubelet's endpoint (/healthz, /pods, and /containerLogs, /exec, /attach
    /// for the API server); 0.0.0.0 is published to the API server as 127.0.0.1.
    #[arg(long, default_value = "127.0.0.1")]
    address: IpAddr,
    /// Port of the kubelet's endpoint; 0 picks a free port and prints it. The Nodes publish the
    /// port bound (status.daemonEndpoints) and the address (kubelet.tinykube.io/address).
    #[arg(long, default_value_t = 10255)]
    read_only_port: u16,
    /// The cluster DNS server's IP written into pods' /etc/resolv.conf (the simulated DNS
    /// answers there).
    #[arg(long, default_value = "10.96.0.10")]
    cluster_dns: String,
    /// The cluster's DNS domain (pods' search domains, Service names).
    #[arg(long, default_value = "cluster.local")]
    cluster_domain: String,
    /// Seeds the simulated resource usage's jitter (idle figures of each container and of each
    /// node's system part): the same seed gives the same figures run to run.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormat,
}

fn fail(message: String) -> ! {
    tinykube_cli::exit("tinykube-kubelet", 2, message)
}

/// The nodes this process plays.
fn nodes(flags: &Flags) -> Result<Vec<NodeConfig>, String> {
    let base = flags
        .hostname_override
        .clone()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(tinykube_client::leader::host_name)
        .to_lowercase();
    let labels = node::parse_labels(&flags.node_labels).map_err(|e| e.to_string())?;
    let taints = node::parse_taints(&flags.register_with_taints).map_err(|e| e.to_string())?;
    let cidr_base: Option<Ipv4Addr> = match &flags.pod_cidr {
        Some(c) => Some(
            c.split('/')
                .next()
                .and_then(|a| a.parse().ok())
                .ok_or_else(|| {
                    format!("invalid --pod-cidr {c:?}: want an IPv4 CIDR such as 10.244.1.0/24")
                })?,
        ),
        None => None,
    };
    let names: Vec<String> = match flags.simulate_nodes {
        None => vec![base.clone()],
        Some(0) => return Err("--simulate-nodes must be at least 1".into()),
        Some(n) => (0..n).map(|i| format!("{base}-{i}")).collect(),
    };
    Ok(names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let i = i as u32;
            let node_ip = match flags.node_ip {
                Some(ip) => ipam::nth_ip(ip, i),
                None => ipam::default_node_ip(&name),
            };
            let pod_cidr = match cidr_base {
                Some(b) => ipam::pod_cidr(b, i),
                None => {
                    // 10.(64-127).x.0/24 from the name, clear of 10.244.0.0/16.
                    let ip = ipam::default_node_ip(&name).octets();
                    format!("10.{}.{}.0/24", 64 + (ip[1] & 0x3f), ip[2])
                }
            };
            NodeConfig {
                manifest_path: flags
                    .pod_manifest_path
                    .as_ref()
                    .map(|p| PathBuf::from(p.replace("{node}", &name))),
                name,
                labels: labels.clone(),
                taints: taints.clone(),
                node_ip,
                pod_cidr,
            }
        })
        .collect())
}

#[tokio::main]
async fn main() {
    let flags: Flags = tinykube_cli::parse("tinykube-kubelet");
    tinykube_cli::init_logging("info", matches!(flags.log_format, LogFormat::Json));
    let nodes = nodes(&flags).unwrap_or_else(|e| fail(e));
    let capacity = node::parse_capacity(&flags.capacity).unwrap_or_else(|e| fail(e.to_string()));
    let client =
        tinykube_client::Config::load(flags.kubeconfig.as_deref(), flags.master.as_deref())
            .unwrap_or_else(|e| fail(e.to_string()));
    let config = tinykube_kubelet::Config {
        client,
        nodes,
        capacity,
        register_node: flags.register_node,
        file_check_frequency: flags.file_check_frequency,
        manifest_url: flags.manifest_url.clone(),
        http_check_frequency: flags.http_check_frequency,
        node_status_update_frequency: flags
            .node_status_update_frequency
            .unwrap_or(Duration::from_secs(10)),
        node_status_report_frequency: flags
            .node_status_report_frequency
            .or(flags.node_status_update_frequency)
            .unwrap_or(Duration::from_secs(300)),
        node_lease_duration_seconds: flags.node_lease_duration_seconds,
        serve_addr: Some(SocketAddr::new(flags.address, flags.read_only_port)),
        cluster_dns: flags.cluster_dns.clone(),
        cluster_domain: flags.cluster_domain.clone(),
        seed: flags.seed,
        clock: tinykube_clock::Clock::real(),
    };
    let shutdown = tinykube_cli::shutdown_on_signal();
    if let Err(e) = tinykube_kubelet::run(config, shutdown).await {
        tracing::error!(error = %e, "kubelet stopped");
        tinykube_cli::exit("tinykube-kubelet", 1, e);
    }
}

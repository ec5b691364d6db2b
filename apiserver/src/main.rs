//! tinykube-apiserver: parse flags, set up logging, serve until SIGTERM/SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Backend {
    Sled,
    Etcd,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// The Kubernetes REST API over a store (embedded sled, or etcd v3), for real kubectl,
/// client-go and kube-rs.
#[derive(Parser, Debug)]
#[command(name = "tinykube-apiserver", version)]
struct Flags {
    /// Address to serve on (port 0 picks a free port; the URL is printed on stdout).
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Directory of the sled store and of the cluster's keys (CA, service-account key, serving
    /// certificate); created if missing, reopened with its objects if present. On etcd, only
    /// the keys: API servers sharing one etcd share this directory too.
    #[arg(long, default_value = "./tinykube-data/apiserver")]
    data_dir: PathBuf,
    /// Where objects are stored: `sled` (embedded in --data-dir, one API server) or `etcd`
    /// (--etcd-servers; several API servers may share it).
    #[arg(long, value_enum, default_value = "sled")]
    storage_backend: Backend,
    /// Client URLs of the etcd members, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
    etcd_servers: Vec<String>,
    /// Prefix of every key in etcd (objects are at PREFIX/pods/NAMESPACE/NAME, as upstream's).
    #[arg(long, default_value = "/registry")]
    etcd_prefix: String,
    /// How often etcd's history is compacted (to the revision of one interval before); 0
    /// never compacts.
    #[arg(long, default_value = "5m", value_parser = tinykube_cli::go_duration)]
    etcd_compaction_interval: std::time::Duration,
    /// CSV of `token,user,uid[,groups]`; requests without one of these bearer tokens (or a
    /// ServiceAccount token, or a client certificate) get 401.
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// Serve HTTPS instead of plain HTTP, with --tls-cert-file, else with DATA_DIR/apiserver.crt
    /// signed by the cluster CA (generated on first start). Implied by the three flags below.
    #[arg(long)]
    secure: bool,
    /// PEM certificate (chain) to serve HTTPS with; needs --tls-private-key-file.
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// PEM private key of --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
    /// PEM CA bundle: client certificates it signed authenticate as their CN, with their O as
    /// groups (and then requests without credentials get 401). Implies HTTPS.
    #[arg(long)]
    client_ca_file: Option<PathBuf>,
    /// CIDR of Services' cluster IPs (IPv4); its first address is the `kubernetes` Service's.
    #[arg(long, default_value = "10.96.0.0/12")]
    service_cluster_ip_range: tinykube_apiserver::services::IpRange,
    /// Node ports of NodePort and LoadBalancer Services, both ends included (`30000-32767`
    /// or `30000+2767`).
    #[arg(long, default_value = "30000-32767")]
    service_node_port_range: tinykube_apiserver::services::PortRange,
    /// How requests are authorized: AlwaysAllow, or RBAC (the stored roles and bindings;
    /// members of system:masters are always allowed).
    #[arg(long, default_value = "AlwaysAllow")]
    authorization_mode: tinykube_apiserver::AuthorizationMode,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormat,
}

/// mimalloc instead of glibc's malloc: the write path allocates and frees many small JSON values
/// per request (see the README's Performance section for the figures).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let flags: Flags = tinykube_cli::parse("tinykube-apiserver");
    tinykube_cli::init_logging("info", matches!(flags.log_format, LogFormat::Json));
    let mut config = tinykube_apiserver::Config::new(flags.listen, flags.data_dir);
    config.token_auth_file = flags.token_auth_file;
    config.authorization = flags.authorization_mode;
    if let Backend::Etcd = flags.storage_backend {
        let mut etcd = tinykube_store::EtcdConfig::new(flags.etcd_servers);
        etcd.prefix = flags.etcd_prefix.trim_end_matches('/').to_string();
        etcd.compaction_interval = flags.etcd_compaction_interval;
        config.storage = tinykube_apiserver::Storage::Etcd(etcd);
    }
    if flags.secure || flags.tls_cert_file.is_some() || flags.client_ca_file.is_some() {
        config.tls = Some(tinykube_apiserver::tls::TlsConfig {
            cert_file: flags.tls_cert_file,
            key_file: flags.tls_private_key_file,
            client_ca_file: flags.client_ca_file,
        });
    }
    config.services = tinykube_apiserver::services::ServiceNet {
        ips: flags.service_cluster_ip_range,
        ports: flags.service_node_port_range,
    };
    let shutdown = tinykube_cli::shutdown_on_signal();
    if let Err(e) = tinykube_apiserver::run(config, shutdown).await {
        tinykube_cli::exit("tinykube-apiserver", 1, e);
    }
}

//! tinykube-apiserver: parse flags, set up logging, serve until SIGTERM/SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// The Kubernetes REST API over a sled store, for real kubectl, client-go and kube-rs.
#[derive(Parser, Debug)]
#[command(name = "tinykube-apiserver", version)]
struct Flags {
    /// Address to serve plain HTTP on (port 0 picks a free port; the bound address is printed).
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Directory of the store; created if missing, reopened with its objects if present.
    #[arg(long, default_value = "./tinykube-data/apiserver")]
    data_dir: PathBuf,
    /// CSV of `token,user,uid[,groups]`; requests without one of these bearer tokens get 401.
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormat,
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

#[tokio::main]
async fn main() {
    let flags = match Flags::try_parse() {
        Ok(f) => f,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            // One line, as every tinykube binary reports a bad flag.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            eprintln!(
                "tinykube-apiserver: {}",
                first.trim_start_matches("error: ")
            );
            std::process::exit(2);
        }
    };
    init_tracing(flags.log_format);
    let mut config = tinykube_apiserver::Config::new(flags.listen, flags.data_dir);
    config.token_auth_file = flags.token_auth_file;
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    // Registered before the server starts, so a SIGTERM right after start-up is handled too.
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::spawn(async move {
        wait_for_signal(term).await;
        signal.cancel();
    });
    if let Err(e) = tinykube_apiserver::run(config, shutdown).await {
        eprintln!("tinykube-apiserver: {e}");
        std::process::exit(1);
    }
}

async fn wait_for_signal(term: Option<tokio::signal::unix::Signal>) {
    match term {
        Some(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

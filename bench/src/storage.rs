//! `tinykube-bench storage`: the same API server on each store backend, side by side in one
//! run: sled (embedded), one local etcd member, and a 3-member etcd cluster on loopback.
//! Durable pod creates/s with concurrent keep-alive clients, then watch delivery latency to
//! many watchers, and the API server's RSS.

use std::time::Duration;

use anyhow::{Context, Result};
use tinykube_store::LocalEtcd;

use crate::{create_many, pod, rss_kib, start_apiserver_with, watch_latency};

/// The backends measured, in the order printed.
const BACKENDS: [(&str, usize); 3] = [("sled", 0), ("etcd, 1 member", 1), ("etcd, 3 members", 3)];

pub async fn bench_storage(
    creates: usize,
    clients: usize,
    watchers: usize,
    events: usize,
) -> Result<()> {
    println!(
        "{:<18} {:>12} {:>14} {:>14} {:>12}",
        "backend", "creates/s", "watch p50", "watch p99", "RSS MiB"
    );
    for (name, members) in BACKENDS {
        let dir = tempfile::tempdir()?;
        let etcd = match members {
            0 => Vec::new(),
            n => LocalEtcd::start_cluster(&dir.path().join("etcd"), n)
                .await
                .context("starting etcd from PATH (Debian's etcd-server)")?,
        };
        let mut flags: Vec<String> = Vec::new();
        if !etcd.is_empty() {
            let urls: Vec<String> = etcd.iter().map(|m| m.client_url()).collect();
            flags.extend(["--storage-backend".into(), "etcd".into()]);
            flags.extend(["--etcd-servers".into(), urls.join(",")]);
        }
        let server = start_apiserver_with(&flags).await?;
        let rate = create_many(
            &server.url,
            "/api/v1/namespaces/default/pods",
            creates,
            clients,
            "bench",
            pod,
        )
        .await?;
        let (p50, p99, seen) = watch_latency(&server.url, watchers, events).await?;
        let rss = match server.child.id() {
            Some(pid) => rss_kib(pid)? as f64 / 1024.0,
            None => 0.0,
        };
        println!(
            "{name:<18} {rate:>12.0} {:>14} {:>14} {rss:>12.1}",
            format!("{:.2} ms", ms(p50)),
            format!("{:.2} ms", ms(p99)),
        );
        if seen < watchers * events {
            println!(
                "  (only {seen} of {} watch deliveries arrived)",
                watchers * events
            );
        }
        drop(server);
        for mut m in etcd {
            m.kill().await;
        }
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

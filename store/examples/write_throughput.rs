//! Measures the RSS that 10 000 pod-sized objects add, durable creates/s with 1 and N concurrent
//! writers (group commit shares flushes), and the same without flushing (the CPU ceiling).
//!
//! `cargo run --release -p tinykube-store --example write_throughput -- [WRITERS] [WRITES_EACH]`
//!
//! Measured on the 2-core development VM (shared with other builds, load average ~5; each commit
//! is sled's flush plus an `fdatasync`, about 1 ms here), 1.5 KB values:
//!
//! | workload | result |
//! |---|---|
//! | durable creates/s, 1 writer | 550–1 200 |
//! | durable creates/s, 8 writers | 2 500–3 600 (4.6 writes per flush) |
//! | non-durable creates/s, 8 writers (CPU ceiling) | 5 200–7 000 |
//! | RSS added by 10 000 objects (incl. sled's 16 MiB cache) | 51 MiB |

use std::time::Instant;

use bytes::Bytes;
use tinykube_store::{Store, StoreConfig};

/// A value about the size of a scheduled pod's JSON.
fn pod_sized(i: usize) -> Bytes {
    let mut s = format!("{{\"metadata\":{{\"name\":\"pod-{i}\"}},\"spec\":\"");
    s.extend(std::iter::repeat_n('x', 1500));
    s.push_str("\"}");
    Bytes::from(s)
}

async fn creates_per_second(store: &Store, run: &str, writers: usize, each: usize) -> f64 {
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let store = store.clone();
            let run = run.to_string();
            tokio::spawn(async move {
                for i in 0..each {
                    let key = format!("/core/pods/{run}/w{w}-{i}");
                    if let Err(e) = store.create(&key, pod_sized(i)).await {
                        eprintln!("create {key}: {e}");
                        std::process::exit(1);
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        if let Err(e) = t.await {
            eprintln!("writer failed: {e}");
            std::process::exit(1);
        }
    }
    (writers * each) as f64 / start.elapsed().as_secs_f64()
}

/// Resident set size in KiB (Linux), 0 elsewhere.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_string();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let writers: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(8);
    let each: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(500);
    let dir = tempfile::tempdir()?;
    let before = rss_kib();
    let store = Store::open(dir.path(), StoreConfig::default())?;
    creates_per_second(&store, "rss", 8, 10_000 / 8).await;
    let objects = store.list("/", None, Some(0))?.remaining;
    println!(
        "RSS added by opening the store and creating {objects} pod-sized ({} B) objects: {} MiB",
        pod_sized(0).len(),
        rss_kib().saturating_sub(before) / 1024,
    );

    let single = creates_per_second(&store, "single", 1, each).await;
    println!("durable creates/s, 1 writer x {each}: {single:.0}");
    let before = store.stats();
    let many = creates_per_second(&store, "many", writers, each).await;
    let after = store.stats();
    let per_flush =
        (after.writes - before.writes) as f64 / (after.commits - before.commits).max(1) as f64;
    println!(
        "durable creates/s, {writers} writers x {each}: {many:.0} ({per_flush:.1} writes per flush)"
    );

    let dir_nd = tempfile::tempdir()?;
    let cfg = StoreConfig {
        durable: false,
        ..StoreConfig::default()
    };
    let not_durable = Store::open(dir_nd.path(), cfg)?;
    let ceiling = creates_per_second(&not_durable, "nd", writers, each).await;
    println!("non-durable creates/s (CPU ceiling), {writers} writers x {each}: {ceiling:.0}");
    not_durable.close().await;
    store.close().await;
    Ok(())
}

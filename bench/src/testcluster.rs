//! `tinykube-bench testcluster`: how fast a test gets a cluster. Start-to-ready of an
//! in-process `TestCluster` (1 and 3 nodes), then the time from creating a 3-replica
//! Deployment to its 3 pods Running, the memory the cluster adds to the test's process, and
//! beside them `tinykube up`'s start-to-ready (the fixture of other languages). Rounds
//! alternate the shapes, so a busy moment of the machine hits all of them alike.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde_json::{json, Value};
use tinykube_testcluster::TestCluster;

use crate::kubelet::cold_start;

/// One in-process round: (start-to-ready, create-to-3-Running, RSS added in KiB).
async fn in_process(nodes: usize) -> Result<(Duration, Duration, i64)> {
    let before = crate::rss_kib(std::process::id())? as i64;
    let started = Instant::now();
    let cluster = TestCluster::builder().nodes(nodes).start().await?;
    let ready = started.elapsed();
    let http = reqwest::Client::new();
    let url = cluster.server_url().to_string();
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}});
    let created = Instant::now();
    let status = http
        .post(format!("{url}/apis/apps/v1/namespaces/default/deployments"))
        .json(&deployment)
        .send()
        .await?
        .status();
    if !status.is_success() {
        bail!("creating the Deployment: {status}");
    }
    let running = loop {
        let list: Value = http
            .get(format!(
                "{url}/api/v1/namespaces/default/pods?labelSelector=app%3Dweb"
            ))
            .send()
            .await?
            .json()
            .await?;
        let n = list["items"].as_array().map_or(0, |items| {
            items
                .iter()
                .filter(|p| p["status"]["phase"] == "Running")
                .count()
        });
        if n == 3 {
            break created.elapsed();
        }
        if created.elapsed() > Duration::from_secs(60) {
            bail!("3 pods not Running after a minute");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    let added = crate::rss_kib(std::process::id())? as i64 - before;
    cluster.stop().await;
    Ok((ready, running, added))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// min / median / max of some durations, in milliseconds.
fn spread(mut v: Vec<Duration>) -> String {
    v.sort();
    format!(
        "min {:.0} ms, median {:.0} ms, max {:.0} ms",
        ms(v[0]),
        ms(v[v.len() / 2]),
        ms(v[v.len() - 1])
    )
}

pub async fn bench_testcluster(rounds: usize) -> Result<()> {
    let rounds = rounds.max(1);
    let shapes = [1usize, 3];
    let mut start = vec![Vec::new(); 2];
    let mut deploy = vec![Vec::new(); 2];
    let mut memory = vec![Vec::new(); 2];
    let mut up = vec![Vec::new(); 2];
    for _ in 0..rounds {
        for (i, &n) in shapes.iter().enumerate() {
            let (ready, running, added) = in_process(n).await?;
            start[i].push(ready);
            deploy[i].push(running);
            memory[i].push(added);
            up[i].push(cold_start(n).await?);
        }
    }
    println!("tinykube-bench testcluster: {rounds} round(s), shapes alternated");
    for (i, &n) in shapes.iter().enumerate() {
        let first_mib = memory[i][0] as f64 / 1024.0;
        println!("in-process TestCluster, {n} node(s):");
        println!(
            "  start to ready:                 {}",
            spread(start[i].clone())
        );
        println!(
            "  Deployment of 3 to 3 Running:   {}",
            spread(deploy[i].clone())
        );
        println!(
            "  memory added to the process:    {first_mib:.1} MiB (first round's VmRSS growth)"
        );
        println!("tinykube up --nodes {n} (processes):");
        println!(
            "  start to ready:                 {}",
            spread(up[i].clone())
        );
    }
    Ok(())
}

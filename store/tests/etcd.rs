//! What only the etcd backend promises: several handles (API servers) on one etcd, etcd's
//! key layout, compaction making old revisions `Expired`, and durability when etcd itself is
//! killed or loses a member.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use tinykube_store::{EtcdConfig, LocalEtcd, Store, StoreError};

fn b(s: &str) -> Bytes {
    Bytes::from(s.to_string())
}

async fn connect(urls: Vec<String>) -> Store {
    Store::connect(EtcdConfig::new(urls)).await.unwrap()
}

async fn start() -> (tempfile::TempDir, LocalEtcd) {
    let dir = tempfile::tempdir().unwrap();
    let etcd = LocalEtcd::start(&dir.path().join("etcd"))
        .await
        .expect("etcd from PATH (Debian's etcd-server) starts");
    (dir, etcd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_handles_on_one_etcd_see_each_others_writes() {
    let (_dir, etcd) = start().await;
    let a = connect(vec![etcd.client_url()]).await;
    let b_store = connect(vec![etcd.client_url()]).await;
    let start = a.revision().max(b_store.revision());
    let mut on_b = b_store.watch("/pods/", start).unwrap();
    let mut writers = Vec::new();
    for (name, store) in [("a", a.clone()), ("b", b_store.clone())] {
        writers.push(tokio::spawn(async move {
            for i in 0..50 {
                store
                    .create(&format!("/pods/{name}{i:02}"), b(name))
                    .await
                    .unwrap();
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    let mut revisions = Vec::new();
    let mut keys = BTreeSet::new();
    while revisions.len() < 100 {
        let ev = tokio::time::timeout(Duration::from_secs(10), on_b.next())
            .await
            .expect("every write reaches the other handle's watch")
            .unwrap()
            .unwrap();
        revisions.push(ev.revision);
        assert!(keys.insert(ev.key.clone()), "{} delivered twice", ev.key);
    }
    assert!(
        revisions.windows(2).all(|w| w[0] < w[1]),
        "in revision order"
    );
    // A consistent read on one handle sees the other's last write at once.
    let last = b_store.create("/pods/last", b("b")).await.unwrap();
    a.sync().await.unwrap();
    assert_eq!(a.get("/pods/last").unwrap().unwrap().revision, last);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_where_etcdctl_looks() {
    let (_dir, etcd) = start().await;
    let store = connect(vec![etcd.client_url()]).await;
    store
        .create("/pods/default/nginx", b("{\"kind\":\"Pod\"}"))
        .await
        .unwrap();
    let mut raw = etcd_client::Client::connect([etcd.client_url()], None)
        .await
        .unwrap();
    let got = raw.get("/registry/pods/default/nginx", None).await.unwrap();
    assert_eq!(got.kvs()[0].value(), b"{\"kind\":\"Pod\"}");
    // A key written by another etcd client shows in the store (and outside the prefix, not).
    raw.put("/registry/pods/default/other", "x", None)
        .await
        .unwrap();
    raw.put("/elsewhere/pods/default/z", "x", None)
        .await
        .unwrap();
    store.sync().await.unwrap();
    let keys: Vec<String> = store
        .list("/pods/", None, None)
        .unwrap()
        .items
        .into_iter()
        .map(|r| r.key)
        .collect();
    assert_eq!(keys, ["/pods/default/nginx", "/pods/default/other"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_expires_old_revisions() {
    let (_dir, etcd) = start().await;
    let mut cfg = EtcdConfig::new(vec![etcd.client_url()]);
    cfg.compaction_interval = Duration::from_millis(300);
    let store = Store::connect(cfg).await.unwrap();
    let old = store.revision();
    for i in 0..20 {
        store.create(&format!("/c/{i}"), b("x")).await.unwrap();
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while store.oldest_revision() <= old {
        assert!(tokio::time::Instant::now() < deadline, "etcd compacted");
        store.create("/tick", b("x")).await.ok();
        store.delete("/tick", None).await.ok();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut from_old = store.watch("/c/", old).unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(10), from_old.next())
        .await
        .unwrap();
    assert!(
        matches!(ended, Some(Err(StoreError::Expired { .. }))),
        "a watch from a compacted revision is Expired: {ended:?}"
    );
    let mut from_now = store.watch("/c/", store.revision()).unwrap();
    let r = store.create("/c/new", b("y")).await.unwrap();
    let ev = from_now.next().await.unwrap().unwrap();
    assert_eq!((ev.key.as_str(), ev.revision), ("/c/new", r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_killing_etcd() {
    let (_dir, mut etcd) = start().await;
    let store = connect(vec![etcd.client_url()]).await;
    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut acked = Vec::new();
            for i in 0.. {
                match store.create(&format!("/w/{i:05}"), b("v")).await {
                    Ok(_) => acked.push(format!("/w/{i:05}")),
                    Err(_) => break,
                }
            }
            acked
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    etcd.kill().await;
    let acked = writer.await.unwrap();
    assert!(acked.len() > 10, "writes were acknowledged before the kill");
    etcd.restart().await.unwrap();
    let after = connect(vec![etcd.client_url()]).await;
    let stored: BTreeSet<String> = after
        .list("/w/", None, None)
        .unwrap()
        .items
        .into_iter()
        .map(|r| r.key)
        .collect();
    let lost: Vec<&String> = acked.iter().filter(|k| !stored.contains(*k)).collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_member_cluster_keeps_serving_with_one_member_killed() {
    let dir = tempfile::tempdir().unwrap();
    let mut members = LocalEtcd::start_cluster(dir.path(), 3).await.unwrap();
    let urls: Vec<String> = members.iter().map(|m| m.client_url()).collect();
    let store = connect(urls).await;
    for i in 0..10 {
        store.create(&format!("/k/a{i}"), b("x")).await.unwrap();
    }
    // Kill the leader: the other two elect a new one within etcd's election timeout.
    let mut leader = None;
    for (i, m) in members.iter().enumerate() {
        let mut c = etcd_client::Client::connect([m.client_url()], None)
            .await
            .unwrap();
        let status = c.status().await.unwrap();
        if status.header().map(|h| h.member_id()) == Some(status.leader()) {
            leader = Some(i);
        }
    }
    let leader = leader.expect("one member leads");
    members[leader].kill().await;
    // A write whose answer was lost is tried again and checked.
    for i in 0..10 {
        let key = format!("/k/b{i}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            match store.create(&key, b("y")).await {
                Ok(_) | Err(StoreError::AlreadyExists) => break,
                Err(e) => {
                    assert!(tokio::time::Instant::now() < deadline, "{key}: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }
    let survivors: Vec<String> = (0..3)
        .filter(|i| *i != leader)
        .map(|i| members[i].client_url())
        .collect();
    let check = connect(survivors).await;
    assert_eq!(check.list("/k/", None, None).unwrap().items.len(), 20);
}

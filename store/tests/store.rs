//! The store's contract: revisions, compare-and-swap, consistent lists, watches that replay and
//! then follow without gap or duplicate, compaction, durability across reopen.

use std::time::Duration;

use bytes::Bytes;
use tinykube_store::{EventType, Store, StoreConfig, StoreError};

fn open(dir: &std::path::Path) -> Store {
    Store::open(dir, StoreConfig::default()).unwrap()
}

fn b(s: &str) -> Bytes {
    Bytes::from(s.to_string())
}

#[tokio::test]
async fn writes_take_increasing_revisions_and_check_preconditions() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    assert_eq!(store.revision(), 0);
    let r1 = store.create("/a", b("1")).await.unwrap();
    assert_eq!(r1, 1);
    assert!(matches!(
        store.create("/a", b("x")).await,
        Err(StoreError::AlreadyExists)
    ));
    let r2 = store.update("/a", r1, b("2")).await.unwrap();
    assert_eq!(r2, 2);
    assert!(matches!(
        store.update("/a", r1, b("3")).await,
        Err(StoreError::Conflict { current: 2 })
    ));
    assert!(matches!(
        store.update("/missing", 1, b("3")).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.delete("/a", Some(r1)).await,
        Err(StoreError::Conflict { .. })
    ));
    let (last, r3) = store.delete("/a", Some(r2)).await.unwrap();
    assert_eq!((last.value, last.revision, r3), (b("2"), 2, 3));
    assert!(store.get("/a").unwrap().is_none());
    assert!(matches!(
        store.delete("/a", None).await,
        Err(StoreError::NotFound)
    ));
}

#[tokio::test]
async fn lists_page_in_key_order_at_one_revision() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for k in ["/p/ns1/c", "/p/ns1/a", "/p/ns2/b", "/q/x"] {
        store.create(k, b(k)).await.unwrap();
    }
    let all = store.list("/p/", None, None).unwrap();
    let keys: Vec<&str> = all.items.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["/p/ns1/a", "/p/ns1/c", "/p/ns2/b"]);
    assert_eq!(all.revision, 4);
    let page = store.list("/p/", None, Some(2)).unwrap();
    assert_eq!((page.items.len(), page.remaining), (2, 1));
    let rest = store.list("/p/", Some("/p/ns1/c"), Some(2)).unwrap();
    assert_eq!(rest.items[0].key, "/p/ns2/b");
    assert_eq!(rest.remaining, 0);
    assert_eq!(store.list("/p/ns1/", None, None).unwrap().items.len(), 2);
}

#[tokio::test]
async fn watch_replays_history_then_follows_live_without_gap_or_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let start = store.create("/w/0", b("0")).await.unwrap();
    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            for i in 1..=200 {
                store.create(&format!("/w/{i}"), b("x")).await.unwrap();
                store.create(&format!("/other/{i}"), b("y")).await.unwrap();
            }
        })
    };
    // Start watching while the writer runs: some events come from history, some live.
    while store.revision() < start + 20 {
        tokio::task::yield_now().await;
    }
    let mut watch = store.watch("/w/", start).unwrap();
    let mut revisions = Vec::new();
    while revisions.len() < 200 {
        let ev = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("events keep coming")
            .unwrap()
            .unwrap();
        assert!(ev.key.starts_with("/w/"));
        assert_eq!(ev.kind, EventType::Added);
        revisions.push(ev.revision);
    }
    writer.await.unwrap();
    assert!(
        revisions.windows(2).all(|w| w[0] < w[1]),
        "in order, no duplicates"
    );
    assert_eq!(revisions[0], start + 1);
}

#[tokio::test]
async fn watch_reports_modifications_and_deletions_with_previous_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut watch = store.watch("/k", store.revision()).unwrap();
    let r = store.create("/k", b("1")).await.unwrap();
    store.update("/k", r, b("2")).await.unwrap();
    store.delete("/k", None).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let ev = watch.next().await.unwrap().unwrap();
        seen.push((ev.kind, ev.value.clone(), ev.prev_value.clone()));
    }
    assert_eq!(
        seen,
        [
            (EventType::Added, b("1"), None),
            (EventType::Modified, b("2"), Some(b("1"))),
            (EventType::Deleted, b("2"), Some(b("2"))),
        ]
    );
}

#[tokio::test]
async fn compacted_history_answers_expired() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        history_max_events: 5,
        ..StoreConfig::default()
    };
    let store = Store::open(dir.path(), cfg).unwrap();
    for i in 0..20 {
        store.create(&format!("/c/{i}"), b("x")).await.unwrap();
    }
    store.compact_now();
    let oldest = store.oldest_revision();
    assert!(
        oldest >= 15,
        "history keeps at most 5 events: oldest {oldest}"
    );
    assert!(matches!(
        store.watch("/c/", 1),
        Err(StoreError::Expired { requested: 1, .. })
    ));
    let mut w = store.watch("/c/", oldest).unwrap();
    assert_eq!(w.next().await.unwrap().unwrap().revision, oldest + 1);
}

#[tokio::test]
async fn a_slow_watcher_catches_up_from_history() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        durable: false,
        ..StoreConfig::default()
    };
    let store = Store::open(dir.path(), cfg).unwrap();
    let mut watch = store.watch("/s/", 0).unwrap();
    // More events than the live fan-out buffers while the watcher reads nothing.
    for i in 0..5000 {
        store.create(&format!("/s/{i:05}"), b("x")).await.unwrap();
    }
    let mut count = 0;
    let mut last = 0;
    while count < 5000 {
        let ev = watch.next().await.unwrap().unwrap();
        assert!(ev.revision > last);
        last = ev.revision;
        count += 1;
    }
    assert_eq!(last, 5000);
}

#[tokio::test]
async fn reopening_serves_every_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        let r = store.create("/d/a", b("1")).await.unwrap();
        store.update("/d/a", r, b("2")).await.unwrap();
        store.create("/d/b", b("3")).await.unwrap();
        store.delete("/d/b", None).await.unwrap();
        store.close().await;
    }
    let store = open(dir.path());
    let a = store.get("/d/a").unwrap().unwrap();
    assert_eq!((a.value, a.revision), (b("2"), 2));
    assert!(store.get("/d/b").unwrap().is_none());
    assert_eq!(store.revision(), 4, "the counter never goes backwards");
    assert_eq!(store.create("/d/c", b("4")).await.unwrap(), 5);
    // History did not survive: older revisions answer Expired, so clients re-list.
    assert!(matches!(
        store.watch("/d/", 1),
        Err(StoreError::Expired { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_read_modify_write_loses_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.create("/counter", b("0")).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                loop {
                    let cur = store.get("/counter").unwrap().unwrap();
                    let n: u64 = std::str::from_utf8(&cur.value).unwrap().parse().unwrap();
                    match store
                        .update("/counter", cur.revision, Bytes::from((n + 1).to_string()))
                        .await
                    {
                        Ok(_) => break,
                        Err(StoreError::Conflict { .. }) => continue,
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(store.get("/counter").unwrap().unwrap().value, b("200"));
}

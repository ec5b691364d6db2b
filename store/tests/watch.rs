//! Watches: replay then live with no gap or duplicate, prefixes, compaction (`Expired`), slow
//! watchers, many watchers, and the end of a watch when the store closes.

use std::time::Duration;

use bytes::Bytes;
use tinykube_store::{EventType, Store, StoreConfig, StoreError, Watch};

fn open_with(dir: &tempfile::TempDir, cfg: StoreConfig) -> Store {
    Store::open(dir.path(), cfg).expect("open store")
}

fn b(s: &str) -> Bytes {
    Bytes::from(s.to_string())
}

/// The next `n` events as (kind, key, revision).
async fn take(w: &mut Watch, n: usize) -> Vec<(EventType, String, u64)> {
    let mut out = Vec::new();
    while out.len() < n {
        let ev = w.next().await.expect("watch open").expect("no error");
        out.push((ev.kind, ev.key.clone(), ev.revision));
    }
    out
}

#[tokio::test]
async fn replays_history_then_follows_live_events() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(&dir, StoreConfig::default());
    store.create("/p/a", b("1")).await.unwrap(); // 1
    store.create("/q/x", b("1")).await.unwrap(); // 2
    store.update("/p/a", 1, b("2")).await.unwrap(); // 3
    let mut from_start = store.watch("/p/", 0).unwrap();
    let mut from_two = store.watch("/p/", 2).unwrap();
    let mut only_new = store.watch("/p/", store.revision()).unwrap();
    store.delete("/p/a", None).await.unwrap(); // 4
    store.create("/p/b", b("1")).await.unwrap(); // 5

    use EventType::*;
    let s = |k: &str| k.to_string();
    let cases = [
        (
            &mut from_start,
            vec![
                (Added, s("/p/a"), 1),
                (Modified, s("/p/a"), 3),
                (Deleted, s("/p/a"), 4),
                (Added, s("/p/b"), 5),
            ],
        ),
        (
            &mut from_two,
            vec![
                (Modified, s("/p/a"), 3),
                (Deleted, s("/p/a"), 4),
                (Added, s("/p/b"), 5),
            ],
        ),
        (
            &mut only_new,
            vec![(Deleted, s("/p/a"), 4), (Added, s("/p/b"), 5)],
        ),
    ];
    for (i, (watch, want)) in cases.into_iter().enumerate() {
        assert_eq!(take(watch, want.len()).await, want, "watcher {i}");
    }
}

#[tokio::test]
async fn events_carry_new_and_previous_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(&dir, StoreConfig::default());
    let mut w = store.watch("/", 0).unwrap();
    store.create("/k", b("v1")).await.unwrap();
    store.update("/k", 1, b("v2")).await.unwrap();
    store.delete("/k", Some(2)).await.unwrap();
    // (kind, value, previous value)
    let want = [
        (EventType::Added, "v1", None),
        (EventType::Modified, "v2", Some("v1")),
        (EventType::Deleted, "v2", Some("v2")),
    ];
    for (kind, value, prev) in want {
        let ev = w.next().await.unwrap().unwrap();
        assert_eq!(
            (ev.kind, &ev.value, &ev.prev_value),
            (kind, &b(value), &prev.map(b))
        );
    }
}

/// Watchers started at arbitrary moments during concurrent writes see every revision after
/// their start exactly once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_gap_or_duplicate_under_concurrent_writes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        fanout_capacity: 16,
        ..StoreConfig::default()
    };
    let store = open_with(&dir, cfg);
    const WRITERS: u64 = 4;
    const EACH: u64 = 100;
    let total = WRITERS * EACH;
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..EACH {
                    store.create(&format!("/c/{w}/{i}"), b("x")).await.unwrap();
                }
            })
        })
        .collect();
    let mut watchers = Vec::new();
    for k in 0..8 {
        // Start the watchers spread over the run, each at whatever revision is current.
        while store.revision() < k * total / 8 {
            tokio::task::yield_now().await;
        }
        let start = store.revision();
        let mut watch = store.watch("/c/", start).unwrap();
        watchers.push(tokio::spawn(async move {
            let mut revisions = Vec::new();
            while revisions.last().copied().unwrap_or(start) < total {
                revisions.push(watch.next().await.unwrap().unwrap().revision);
            }
            (start, revisions)
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    for w in watchers {
        let (start, revisions) = w.await.unwrap();
        assert_eq!(
            revisions,
            (start + 1..=total).collect::<Vec<_>>(),
            "from {start}"
        );
    }
}

#[tokio::test]
async fn watching_a_compacted_revision_is_expired() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        history_max_events: 5,
        ..StoreConfig::default()
    };
    let store = open_with(&dir, cfg);
    for i in 0..20 {
        store.create(&format!("/k/{i}"), b("x")).await.unwrap();
    }
    store.compact_now();
    assert_eq!(store.oldest_revision(), 15, "revisions 16..=20 are kept");
    // (after, outcome: Ok(first replayed revision) or Expired)
    let cases = [
        (20, None),
        (15, Some(16)),
        (17, Some(18)),
        (14, None),
        (0, None),
    ];
    for (after, first) in cases {
        match (store.watch("/k/", after), first) {
            (Ok(mut w), Some(first)) => assert_eq!(take(&mut w, 1).await[0].2, first),
            (Ok(_), None) if after == 20 => {}
            (Err(StoreError::Expired { requested, oldest }), None) => {
                assert_eq!((requested, oldest), (after, 15));
            }
            (got, want) => panic!("watch after {after}: {:?}, want {want:?}", got.err()),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn history_older_than_the_age_limit_is_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        history_max_age: Duration::from_secs(300),
        durable: false,
        ..StoreConfig::default()
    };
    let store = open_with(&dir, cfg);
    for i in 0..3 {
        store.create(&format!("/k/{i}"), b("x")).await.unwrap();
    }
    tokio::time::advance(Duration::from_secs(200)).await;
    store.create("/k/3", b("x")).await.unwrap(); // 4
    store.compact_now();
    assert_eq!(store.oldest_revision(), 0, "nothing is 5 minutes old yet");
    tokio::time::advance(Duration::from_secs(150)).await;
    store.compact_now();
    assert_eq!(store.oldest_revision(), 3, "revisions 1..=3 are 350 s old");
    assert!(store.watch("/", 2).is_err());
    let mut w = store.watch("/", 3).unwrap();
    assert_eq!(take(&mut w, 1).await[0].2, 4);
}

/// A watcher that does not read while far more events than the fan-out holds go by still gets
/// every one of them, from the history.
#[tokio::test]
async fn a_slow_watcher_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        fanout_capacity: 4,
        ..StoreConfig::default()
    };
    let store = open_with(&dir, cfg);
    let mut slow = store.watch("/s/", 0).unwrap();
    for i in 0..50 {
        store.create(&format!("/s/{i:02}"), b("x")).await.unwrap();
        store
            .create(&format!("/other/{i:02}"), b("x"))
            .await
            .unwrap();
    }
    let got = take(&mut slow, 50).await;
    let want: Vec<u64> = (0..50).map(|i| 2 * i + 1).collect();
    assert_eq!(got.iter().map(|e| e.2).collect::<Vec<_>>(), want);
    store.create("/s/live", b("x")).await.unwrap();
    assert_eq!(take(&mut slow, 1).await[0].1, "/s/live");
}

/// When what a slow watcher missed is compacted, it ends with `Expired` instead of skipping.
#[tokio::test]
async fn a_slow_watcher_past_the_history_gets_expired() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        fanout_capacity: 4,
        history_max_events: 5,
        ..StoreConfig::default()
    };
    let store = open_with(&dir, cfg);
    let mut slow = store.watch("/", 0).unwrap();
    for i in 0..50 {
        store.create(&format!("/k/{i}"), b("x")).await.unwrap();
    }
    store.compact_now();
    match slow.next().await {
        Some(Err(StoreError::Expired { requested, oldest })) => {
            assert_eq!((requested, oldest), (0, 45));
        }
        other => panic!("want Expired, got {other:?}"),
    }
    assert!(
        slow.next().await.is_none(),
        "the watch ends after its error"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_watchers_each_get_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(&dir, StoreConfig::default());
    let watchers: Vec<_> = (0..1000)
        .map(|_| {
            let mut w = store.watch("/n/", 0).unwrap();
            tokio::spawn(async move { take(&mut w, 10).await.len() })
        })
        .collect();
    for i in 0..10 {
        store.create(&format!("/n/{i}"), b("x")).await.unwrap();
    }
    for w in watchers {
        assert_eq!(w.await.unwrap(), 10);
    }
}

#[tokio::test]
async fn watches_end_when_the_store_closes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(&dir, StoreConfig::default());
    let mut w = store.watch("/", 0).unwrap();
    store.create("/a", b("x")).await.unwrap();
    store.close().await;
    assert_eq!(
        take(&mut w, 1).await[0].2,
        1,
        "committed events are still delivered"
    );
    assert!(w.next().await.is_none());
    assert!(matches!(store.watch("/", 1), Err(StoreError::Closed)));
}

#[tokio::test]
async fn a_watch_from_a_future_revision_skips_up_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(&dir, StoreConfig::default());
    let mut from_two = store.watch("/", 2).unwrap();
    let mut from_max = store.watch("/", u64::MAX).unwrap();
    for k in ["/a", "/b", "/c"] {
        store.create(k, b("x")).await.unwrap();
    }
    assert_eq!(take(&mut from_two, 1).await[0].2, 3);
    store.close().await;
    assert!(from_max.next().await.is_none(), "nothing is after u64::MAX");
}

//! One suite for the store interface, run against both backends: sled in a temp dir, and etcd
//! started from PATH on free ports (each test its own member). Revisions are compared, never
//! assumed: etcd starts at revision 1 and counts every key it holds.

use std::time::Duration;

use bytes::Bytes;
use tinykube_store::{EtcdConfig, EventType, LocalEtcd, Store, StoreConfig, StoreError, Watch};

enum Backend {
    Sled,
    Etcd,
}

/// A store and what keeps it alive.
struct Fixture {
    store: Store,
    dir: tempfile::TempDir,
    etcd: Option<LocalEtcd>,
}

impl Fixture {
    async fn new(backend: Backend) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        match backend {
            Backend::Sled => Fixture {
                store: Store::open(&dir.path().join("store"), StoreConfig::default()).unwrap(),
                dir,
                etcd: None,
            },
            Backend::Etcd => {
                let etcd = LocalEtcd::start(&dir.path().join("etcd"))
                    .await
                    .expect("etcd from PATH (Debian's etcd-server) starts");
                let store = Store::connect(EtcdConfig::new(vec![etcd.client_url()]))
                    .await
                    .unwrap();
                Fixture {
                    store,
                    dir,
                    etcd: Some(etcd),
                }
            }
        }
    }

    /// Close the store and open it again on the same data.
    async fn reopen(self) -> Fixture {
        let Fixture { store, dir, etcd } = self;
        store.close().await;
        // sled keeps its files locked until the last handle is gone.
        drop(store);
        let store = match &etcd {
            None => Store::open(&dir.path().join("store"), StoreConfig::default()).unwrap(),
            Some(etcd) => Store::connect(EtcdConfig::new(vec![etcd.client_url()]))
                .await
                .unwrap(),
        };
        Fixture { store, dir, etcd }
    }
}

fn b(s: &str) -> Bytes {
    Bytes::from(s.to_string())
}

/// The next `n` events as (kind, key, value, previous value, revision).
async fn take(w: &mut Watch, n: usize) -> Vec<(EventType, String, String, Option<String>, u64)> {
    let mut out = Vec::new();
    while out.len() < n {
        let ev = tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .expect("an event within 10 s")
            .expect("watch open")
            .expect("no error");
        let text = |v: &Bytes| String::from_utf8_lossy(v).into_owned();
        out.push((
            ev.kind,
            ev.key.clone(),
            text(&ev.value),
            ev.prev_value.as_ref().map(text),
            ev.revision,
        ));
    }
    out
}

async fn create_update_delete(f: Fixture) {
    let s = &f.store;
    let r1 = s.create("/nodes/a", b("1")).await.unwrap();
    assert!(r1 > 0);
    assert!(matches!(
        s.create("/nodes/a", b("2")).await,
        Err(StoreError::AlreadyExists)
    ));
    let got = s.get("/nodes/a").unwrap().unwrap();
    assert_eq!((got.value, got.revision), (b("1"), r1));
    assert!(s.get("/nodes/b").unwrap().is_none());
    match s.update("/nodes/a", r1 + 100, b("x")).await {
        Err(StoreError::Conflict { current }) => assert_eq!(current, r1),
        other => panic!("stale update: {other:?}"),
    }
    let r2 = s.update("/nodes/a", r1, b("2")).await.unwrap();
    assert!(r2 > r1);
    assert_eq!(s.get("/nodes/a").unwrap().unwrap().value, b("2"));
    assert!(matches!(
        s.delete("/nodes/a", Some(r1)).await,
        Err(StoreError::Conflict { current }) if current == r2
    ));
    let (last, r3) = s.delete("/nodes/a", Some(r2)).await.unwrap();
    assert_eq!((last.value, last.revision), (b("2"), r2));
    assert!(r3 > r2);
    assert!(s.get("/nodes/a").unwrap().is_none());
    assert!(matches!(
        s.update("/nodes/a", r2, b("3")).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        s.delete("/nodes/a", None).await,
        Err(StoreError::NotFound)
    ));
    // An unconditional delete of a present key.
    s.create("/nodes/c", b("c")).await.unwrap();
    let (last, _) = s.delete("/nodes/c", None).await.unwrap();
    assert_eq!(last.value, b("c"));
    assert!(s.revision() >= r3);
}

async fn lists_in_pages(f: Fixture) {
    let s = &f.store;
    for k in [
        "/pods/ns1/e",
        "/pods/ns1/a",
        "/pods/ns2/c",
        "/pods/ns1/b",
        "/podsx/z",
    ] {
        s.create(k, b(k)).await.unwrap();
    }
    let all = s.list("/pods/", None, None).unwrap();
    let keys: Vec<&str> = all.items.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(
        keys,
        ["/pods/ns1/a", "/pods/ns1/b", "/pods/ns1/e", "/pods/ns2/c"]
    );
    assert_eq!(all.remaining, 0);
    assert!(all.revision >= all.items.iter().map(|r| r.revision).max().unwrap());
    let first = s.list("/pods/ns1/", None, Some(2)).unwrap();
    assert_eq!(first.items.len(), 2);
    assert_eq!(first.remaining, 1);
    let rest = s
        .list("/pods/ns1/", Some(&first.items[1].key), Some(2))
        .unwrap();
    let keys: Vec<&str> = rest.items.iter().map(|r| r.key.as_str()).collect();
    assert_eq!((keys, rest.remaining), (vec!["/pods/ns1/e"], 0));
}

async fn watches_replay_then_follow(f: Fixture) {
    let s = &f.store;
    let r0 = s.revision();
    let r1 = s.create("/p/a", b("1")).await.unwrap();
    s.create("/q/x", b("1")).await.unwrap();
    let r3 = s.update("/p/a", r1, b("2")).await.unwrap();
    let mut from_start = s.watch("/p/", r0).unwrap();
    let mut from_r1 = s.watch("/p/", r1).unwrap();
    let mut only_new = s.watch("/p/", s.revision()).unwrap();
    let (_, r4) = s.delete("/p/a", None).await.unwrap();
    let r5 = s.create("/p/b", b("3")).await.unwrap();

    use EventType::*;
    let o = |v: &str| Some(v.to_string());
    let ev = |k: EventType, key: &str, v: &str, p: Option<String>, r: u64| {
        (k, key.to_string(), v.to_string(), p, r)
    };
    let all = vec![
        ev(Added, "/p/a", "1", None, r1),
        ev(Modified, "/p/a", "2", o("1"), r3),
        ev(Deleted, "/p/a", "2", o("2"), r4),
        ev(Added, "/p/b", "3", None, r5),
    ];
    assert_eq!(take(&mut from_start, 4).await, all);
    assert_eq!(take(&mut from_r1, 3).await, all[1..]);
    assert_eq!(take(&mut only_new, 2).await, all[2..]);
    // Nothing more: the other prefix's write never shows.
    let more = tokio::time::timeout(Duration::from_millis(200), only_new.next()).await;
    assert!(more.is_err(), "no further event: {more:?}");
}

async fn concurrent_writers_lose_no_update(f: Fixture) {
    let s = f.store.clone();
    s.create("/counters/n", b("0")).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let mut revisions = Vec::new();
            for _ in 0..25 {
                loop {
                    let cur = s.get("/counters/n").unwrap().unwrap();
                    let n: u64 = String::from_utf8_lossy(&cur.value).parse().unwrap();
                    match s
                        .update("/counters/n", cur.revision, b(&(n + 1).to_string()))
                        .await
                    {
                        Ok(rev) => {
                            revisions.push(rev);
                            break;
                        }
                        Err(StoreError::Conflict { .. }) => continue,
                        Err(e) => panic!("update: {e}"),
                    }
                }
            }
            revisions
        }));
    }
    let mut revisions = Vec::new();
    for t in tasks {
        revisions.extend(t.await.unwrap());
    }
    let value = s.get("/counters/n").unwrap().unwrap().value;
    assert_eq!(value, b("100"));
    revisions.sort();
    revisions.dedup();
    assert_eq!(revisions.len(), 100, "every write has its own revision");
}

async fn reopened_store_keeps_everything(f: Fixture) {
    let r1 = f.store.create("/a/1", b("one")).await.unwrap();
    let r2 = f.store.create("/a/2", b("two")).await.unwrap();
    f.store.delete("/a/1", None).await.unwrap();
    let before = f.store.revision();
    let f = f.reopen().await;
    let s = &f.store;
    assert!(s.revision() >= before);
    assert!(s.get("/a/1").unwrap().is_none());
    let two = s.get("/a/2").unwrap().unwrap();
    assert_eq!((two.value, two.revision), (b("two"), r2));
    let r3 = s.create("/a/3", b("three")).await.unwrap();
    assert!(r3 > before && r3 > r1);
}

async fn many_watchers_see_the_same_history(f: Fixture) {
    let s = f.store.clone();
    let start = s.revision();
    let mut watchers: Vec<Watch> = (0..20).map(|_| s.watch("/w/", start).unwrap()).collect();
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            for i in 0..200 {
                s.create(&format!("/w/{i:03}"), b("x")).await.unwrap();
            }
        })
    };
    writer.await.unwrap();
    let expected = take(&mut watchers[0], 200).await;
    let keys: Vec<String> = expected.iter().map(|e| e.1.clone()).collect();
    let want: Vec<String> = (0..200).map(|i| format!("/w/{i:03}")).collect();
    assert_eq!(keys, want);
    for w in watchers.iter_mut().skip(1) {
        assert_eq!(take(w, 200).await, expected);
    }
}

async fn closing_ends_watches(f: Fixture) {
    let s = f.store.clone();
    let mut w = s.watch("/c/", s.revision()).unwrap();
    s.create("/c/1", b("1")).await.unwrap();
    s.close().await;
    let first = w.next().await.expect("the committed event").unwrap();
    assert_eq!(first.key, "/c/1");
    let end = tokio::time::timeout(Duration::from_secs(5), w.next()).await;
    assert!(matches!(end, Ok(None)), "the watch ends: {end:?}");
    assert!(matches!(
        s.create("/c/2", b("2")).await,
        Err(StoreError::Closed)
    ));
}

/// Each test once per backend.
macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sled {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Fixture::new(super::Backend::Sled).await).await
                }
            )*
        }
        mod etcd {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Fixture::new(super::Backend::Etcd).await).await
                }
            )*
        }
    };
}

conformance!(
    create_update_delete,
    lists_in_pages,
    watches_replay_then_follow,
    concurrent_writers_lose_no_update,
    reopened_store_keeps_everything,
    many_watchers_see_the_same_history,
    closing_ends_watches,
);

//! Key-value behaviour of the store: create-if-absent, compare-and-swap, deletes, lists and
//! their pagination, reopening, and concurrent writers.

use std::sync::Arc;

use bytes::Bytes;
use tinykube_store::{Store, StoreConfig, StoreError};

fn open(dir: &tempfile::TempDir) -> Store {
    Store::open(dir.path(), StoreConfig::default()).expect("open store")
}

fn b(s: &str) -> Bytes {
    Bytes::from(s.to_string())
}

#[tokio::test]
async fn create_only_if_absent() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    assert_eq!(store.revision(), 0, "an empty store is at revision 0");
    assert_eq!(store.create("/core/nodes/a", b("1")).await.unwrap(), 1);
    assert!(matches!(
        store.create("/core/nodes/a", b("2")).await,
        Err(StoreError::AlreadyExists)
    ));
    let got = store.get("/core/nodes/a").unwrap().unwrap();
    assert_eq!((got.value, got.revision), (b("1"), 1));
    assert_eq!(store.revision(), 1, "a refused write takes no revision");
    assert_eq!(store.create("/core/nodes/b", b("x")).await.unwrap(), 2);
    assert!(store.get("/core/nodes/c").unwrap().is_none());
}

#[tokio::test]
async fn update_is_compare_and_swap() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    store.create("/k", b("v1")).await.unwrap();
    // (key, expected revision, outcome: Ok(new revision) or the error's name)
    let cases: [(&str, u64, Result<u64, &str>); 5] = [
        ("/k", 1, Ok(2)),
        ("/k", 1, Err("conflict at 2")),
        ("/k", 2, Ok(3)),
        ("/k", 99, Err("conflict at 3")),
        ("/missing", 1, Err("not found")),
    ];
    for (key, expected, want) in cases {
        let got = match store.update(key, expected, b("v")).await {
            Ok(rev) => Ok(rev),
            Err(StoreError::Conflict { current: 2 }) => Err("conflict at 2"),
            Err(StoreError::Conflict { current: 3 }) => Err("conflict at 3"),
            Err(StoreError::NotFound) => Err("not found"),
            Err(e) => panic!("unexpected {e}"),
        };
        assert_eq!(got, want, "update {key} at {expected}");
    }
    assert_eq!(store.get("/k").unwrap().unwrap().revision, 3);
}

#[tokio::test]
async fn delete_with_and_without_expected_revision() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    store.create("/a", b("a")).await.unwrap(); // 1
    store.create("/b", b("b")).await.unwrap(); // 2
    store.update("/b", 2, b("b2")).await.unwrap(); // 3
                                                   // (key, expected, outcome: Ok((last value, last revision, delete revision)) or error)
    type Outcome = Result<(&'static str, u64, u64), &'static str>;
    let cases: [(&str, Option<u64>, Outcome); 5] = [
        ("/b", Some(2), Err("conflict")),
        ("/b", Some(3), Ok(("b2", 3, 4))),
        ("/b", None, Err("not found")),
        ("/a", None, Ok(("a", 1, 5))),
        ("/a", Some(1), Err("not found")),
    ];
    for (key, expected, want) in cases {
        let got = match store.delete(key, expected).await {
            Ok((last, rev)) => {
                assert_eq!(last.key, key);
                Ok((
                    std::str::from_utf8(&last.value).unwrap().to_string(),
                    last.revision,
                    rev,
                ))
            }
            Err(StoreError::Conflict { current: 3 }) => Err("conflict"),
            Err(StoreError::NotFound) => Err("not found"),
            Err(e) => panic!("unexpected {e}"),
        };
        let want = want.map(|(v, r, d)| (v.to_string(), r, d));
        assert_eq!(got, want, "delete {key} expecting {expected:?}");
    }
    assert!(store.get("/a").unwrap().is_none());
    assert_eq!(store.revision(), 5);
}

#[tokio::test]
async fn list_pages_in_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    for k in ["/p/c", "/p/a", "/q/x", "/p/b", "/pz", "/o/y", "/p/d"] {
        store.create(k, b(k)).await.unwrap();
    }
    // (prefix, start_after, limit) -> (keys, remaining)
    type Case<'a> = (
        &'a str,
        Option<&'a str>,
        Option<usize>,
        &'a [&'a str],
        usize,
    );
    let cases: [Case; 8] = [
        ("/p/", None, None, &["/p/a", "/p/b", "/p/c", "/p/d"], 0),
        ("/p/", None, Some(2), &["/p/a", "/p/b"], 2),
        ("/p/", Some("/p/b"), Some(2), &["/p/c", "/p/d"], 0),
        ("/p/", Some("/p/bb"), None, &["/p/c", "/p/d"], 0),
        ("/p/", Some("/a"), Some(1), &["/p/a"], 3),
        ("/p/", Some("/p/d"), None, &[], 0),
        ("/p/", None, Some(0), &[], 4),
        (
            "/",
            None,
            None,
            &["/o/y", "/p/a", "/p/b", "/p/c", "/p/d", "/pz", "/q/x"],
            0,
        ),
    ];
    for (prefix, after, limit, keys, remaining) in cases {
        let page = store.list(prefix, after, limit).unwrap();
        let got: Vec<&str> = page.items.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(got, keys, "list {prefix} after {after:?} limit {limit:?}");
        assert_eq!(
            page.remaining, remaining,
            "remaining of {prefix} {after:?} {limit:?}"
        );
        assert_eq!(page.revision, 7);
        for item in &page.items {
            assert_eq!(item.value, b(&item.key));
        }
    }
}

/// Every list is one snapshot: no item is newer than the list's revision, and since every write
/// here lands under the prefix, the item written last carries exactly that revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lists_are_consistent_under_concurrent_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    for i in 0..20 {
        store.create(&format!("/l/{i:02}"), b("0")).await.unwrap();
    }
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for n in 0..50 {
                    let key = format!("/l/{:02}", (w * 5 + n) % 20);
                    loop {
                        let cur = store.get(&key).unwrap().unwrap();
                        match store.update(&key, cur.revision, b(&n.to_string())).await {
                            Ok(_) => break,
                            Err(StoreError::Conflict { .. }) => continue,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            })
        })
        .collect();
    let mut lists = 0;
    while writers.iter().any(|w| !w.is_finished()) || lists < 10 {
        let page = store.list("/l/", None, None).unwrap();
        assert_eq!(page.items.len(), 20);
        let newest = page.items.iter().map(|i| i.revision).max().unwrap();
        assert_eq!(
            newest, page.revision,
            "list at {} is one snapshot",
            page.revision
        );
        lists += 1;
        tokio::task::yield_now().await;
    }
    for w in writers {
        w.await.unwrap();
    }
    assert_eq!(store.revision(), 20 + 4 * 50);
}

#[tokio::test]
async fn reopening_keeps_data_and_revisions() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(&dir);
        store.create("/a", b("a")).await.unwrap(); // 1
        store.create("/b", b("b")).await.unwrap(); // 2
        store.update("/a", 1, b("a2")).await.unwrap(); // 3
        store.delete("/b", None).await.unwrap(); // 4
        store.close().await;
        assert!(matches!(
            store.create("/c", b("c")).await,
            Err(StoreError::Closed)
        ));
    }
    let store = open(&dir);
    assert_eq!(store.revision(), 4);
    let a = store.get("/a").unwrap().unwrap();
    assert_eq!((a.value, a.revision), (b("a2"), 3));
    assert!(store.get("/b").unwrap().is_none());
    // As upstream after a restart: history from before it is not served; clients re-list.
    assert_eq!(store.oldest_revision(), 4);
    assert!(matches!(
        store.watch("/", 2),
        Err(StoreError::Expired {
            requested: 2,
            oldest: 4
        })
    ));
    let mut watch = store.watch("/", 4).unwrap();
    assert_eq!(store.create("/c", b("c")).await.unwrap(), 5);
    let ev = watch.next().await.unwrap().unwrap();
    assert_eq!((ev.key.as_str(), ev.revision), ("/c", 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_are_all_acknowledged_and_readable() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut acked = Vec::new();
                for i in 0..200 {
                    let key = format!("/w/{t}/{i:03}");
                    let rev = store.create(&key, b(&key)).await.unwrap();
                    acked.push((key, rev));
                }
                acked
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let mut revisions: Vec<u64> = all.iter().map(|(_, r)| *r).collect();
    revisions.sort_unstable();
    assert_eq!(
        revisions,
        (1..=1600).collect::<Vec<u64>>(),
        "one revision per write"
    );
    for (key, rev) in &all {
        let got = store.get(key).unwrap().unwrap();
        assert_eq!((&got.value, got.revision), (&b(key), *rev));
    }
    assert_eq!(store.list("/w/", None, None).unwrap().items.len(), 1600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn read_modify_write_with_retries_loses_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    store.create("/counter", b("0")).await.unwrap();
    let conflicts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            let conflicts = conflicts.clone();
            tokio::spawn(async move {
                for _ in 0..50 {
                    loop {
                        let cur = store.get("/counter").unwrap().unwrap();
                        let n: u64 = std::str::from_utf8(&cur.value).unwrap().parse().unwrap();
                        match store
                            .update("/counter", cur.revision, b(&(n + 1).to_string()))
                            .await
                        {
                            Ok(_) => break,
                            Err(StoreError::Conflict { .. }) => {
                                conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let last = store.get("/counter").unwrap().unwrap();
    assert_eq!(last.value, b("400"));
    assert_eq!(last.revision, 401, "only successful updates take revisions");
}

#[test]
fn opening_outside_a_runtime_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Store::open(dir.path(), StoreConfig::default()),
        Err(StoreError::NoRuntime)
    ));
}

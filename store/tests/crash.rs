//! A real `kill -9` in the middle of concurrent writes: reopening the directory serves every
//! acknowledged write with the revision it was acknowledged with, and the counter never goes
//! backwards. The child process is this test binary itself, re-run with `CHILD_ENV` set.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use bytes::Bytes;
use tinykube_store::{Store, StoreConfig};

/// Set (to the data dir) in the child process only.
const CHILD_ENV: &str = "TINYKUBE_STORE_CRASH_DIR";
const ROUND_ENV: &str = "TINYKUBE_STORE_CRASH_ROUND";
const WRITERS: usize = 8;
/// Acknowledgements to see before killing the child.
const ACKS_BEFORE_KILL: usize = 400;

/// In the child: 8 writers create keys forever, printing `ack KEY REVISION` after each
/// acknowledged write. In a normal test run it does nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_writes_until_killed() {
    let (Ok(dir), Ok(round)) = (std::env::var(CHILD_ENV), std::env::var(ROUND_ENV)) else {
        return;
    };
    let store = Store::open(dir.as_ref(), StoreConfig::default()).expect("child opens the store");
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            let round = round.clone();
            tokio::spawn(async move {
                for i in 0.. {
                    let key = format!("/crash/{round}/{w}/{i}");
                    let rev = store.create(&key, Bytes::from(key.clone())).await.unwrap();
                    println!("ack {key} {rev}");
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
}

/// Run one child until it has acknowledged enough writes, kill it with SIGKILL, and return
/// every acknowledgement it printed.
fn run_and_kill(dir: &std::path::Path, round: usize) -> HashMap<String, u64> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_writes_until_killed", "--nocapture"])
        .env(CHILD_ENV, dir)
        .env(ROUND_ENV, round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the child");
    let mut acks = HashMap::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some((key, rev)) = parse_ack(&line) {
            acks.insert(key, rev);
            if acks.len() == ACKS_BEFORE_KILL {
                break;
            }
        }
    }
    assert_eq!(acks.len(), ACKS_BEFORE_KILL, "the child wrote");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // What the child printed before it died was acknowledged too.
    for line in lines {
        if let Some((key, rev)) = parse_ack(&line.unwrap()) {
            acks.insert(key, rev);
        }
    }
    acks
}

fn parse_ack(line: &str) -> Option<(String, u64)> {
    let mut parts = line.strip_prefix("ack ")?.split(' ');
    Some((parts.next()?.to_string(), parts.next()?.parse().ok()?))
}

#[test]
fn kill_9_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut all: HashMap<String, u64> = HashMap::new();
    let mut floor = 0;
    for round in 0..2 {
        let acks = run_and_kill(dir.path(), round);
        let lowest = acks.values().min().copied().unwrap();
        assert!(
            lowest > floor,
            "round {round}: revisions continue after {floor}, got {lowest}"
        );
        floor = acks.values().max().copied().unwrap();
        all.extend(acks);
    }
    rt.block_on(async {
        let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
        assert!(
            store.revision() >= floor,
            "the counter never goes backwards"
        );
        for (key, rev) in &all {
            let got = store.get(key).unwrap();
            let got = got.unwrap_or_else(|| panic!("acknowledged {key} at {rev} is lost"));
            assert_eq!(
                (got.revision, &got.value[..]),
                (*rev, key.as_bytes()),
                "{key}"
            );
        }
        let next = store.create("/after", Bytes::new()).await.unwrap();
        assert_eq!(next, store.revision());
        assert!(next > floor);
        store.close().await;
    });
}

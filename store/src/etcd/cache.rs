//! The cache: every key under the prefix, loaded by pages at one revision, then kept by one etcd
//! watch from the next revision. Each change is applied to the cache, appended to the replay
//! window and sent to the live watchers, in etcd's order. Progress notifications (asked for by
//! writers and `sync` waiting on a revision that changed nothing under the prefix) move the
//! cache's revision without events. If the watch breaks, it resumes from the cache's revision;
//! if etcd compacted past it meanwhile, the cache loads again and every watcher ends `Expired`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{EventType as EtcdEvent, GetOptions, WatchOptions};
use tokio::sync::broadcast;
use tokio::time::Instant;

use super::{revision_of, EtcdConfig, Shared};
use crate::{lock, write_lock, Event, EventType};

/// Keys read per page of the initial load.
const PAGE: i64 = 10_000;

/// The range end of every key starting with `prefix` (etcd's "prefix" range).
pub(crate) fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// Every key under the prefix as of one revision, read in pages.
pub(crate) async fn load(
    client: &etcd_client::Client,
    cfg: &EtcdConfig,
) -> Result<(BTreeMap<String, (u64, Bytes)>, u64), etcd_client::Error> {
    let mut kv = client.kv_client();
    let prefix = format!("{}/", cfg.prefix);
    let end = range_end(prefix.as_bytes());
    let mut objects = BTreeMap::new();
    let mut from = prefix.as_bytes().to_vec();
    let mut revision = 0i64;
    loop {
        let mut options = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
        if revision > 0 {
            options = options.with_revision(revision);
        }
        let mut resp = kv.get(from.clone(), Some(options)).await?;
        if revision == 0 {
            revision = resp.header().map_or(0, |h| h.revision());
        }
        let more = resp.more();
        let kvs = resp.take_kvs();
        for item in &kvs {
            if let Some(key) = store_key(&cfg.prefix, item.key()) {
                let value = Bytes::copy_from_slice(item.value());
                objects.insert(key, (item.mod_revision() as u64, value));
            }
        }
        match kvs.last() {
            Some(last) if more => {
                from = last.key().to_vec();
                from.push(0);
            }
            _ => break,
        }
    }
    Ok((objects, revision.max(0) as u64))
}

/// The store key of an etcd key under the prefix; `None` (logged) for keys the store cannot
/// hold (not UTF-8).
pub(crate) fn store_key(prefix: &str, raw: &[u8]) -> Option<String> {
    let rest = raw.strip_prefix(prefix.as_bytes())?;
    match std::str::from_utf8(rest) {
        Ok(k) => Some(k.to_string()),
        Err(_) => {
            tracing::warn!(key = %String::from_utf8_lossy(raw), "skipping a key that is not UTF-8");
            None
        }
    }
}

/// Follow etcd from the cache's revision until the store closes.
pub(crate) async fn follow(shared: Arc<Shared>) {
    let mut stop = shared.shutdown.subscribe();
    let mut backoff = Duration::from_millis(100);
    loop {
        if shared.closed() {
            return;
        }
        let after = crate::read_lock(&shared.cache).revision;
        match watch_from(&shared, after, &mut stop).await {
            Ended::Closed => return,
            Ended::Compacted(compacted) => {
                tracing::warn!(
                    after,
                    compacted,
                    "the cache fell behind etcd's compaction; loading again"
                );
                if let Err(e) = reload(&shared).await {
                    tracing::warn!(error = %e, "loading the cache again failed");
                }
            }
            Ended::Broken(msg) => {
                tracing::warn!(error = %msg, after, ?backoff, "the etcd watch broke; resuming");
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = super::stopped(&mut stop) => return,
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        }
        backoff = Duration::from_millis(100);
    }
}

enum Ended {
    Closed,
    Compacted(u64),
    Broken(String),
}

/// One etcd watch from `after + 1`, applying what it reports, until it ends.
async fn watch_from(
    shared: &Shared,
    after: u64,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) -> Ended {
    let prefix = format!("{}/", shared.cfg.prefix);
    let options = WatchOptions::new()
        .with_range(range_end(prefix.as_bytes()))
        .with_start_revision(after as i64 + 1)
        .with_progress_notify();
    let mut client = shared.client.watch_client();
    let mut stream = match client.watch(prefix.clone(), Some(options)).await {
        Ok(s) => s,
        Err(e) => return Ended::Broken(e.to_string()),
    };
    loop {
        tokio::select! {
            _ = super::stopped(stop) => return Ended::Closed,
            _ = shared.progress.notified() => {
                if let Err(e) = stream.request_progress().await {
                    return Ended::Broken(e.to_string());
                }
            }
            msg = stream.message() => match msg {
                Err(e) => return Ended::Broken(e.to_string()),
                Ok(None) => return Ended::Broken("the watch stream ended".into()),
                Ok(Some(resp)) => {
                    if resp.compact_revision() > 0 {
                        return Ended::Compacted(resp.compact_revision() as u64);
                    }
                    if resp.canceled() {
                        return Ended::Broken(format!("watch canceled: {}", resp.cancel_reason()));
                    }
                    if resp.events().is_empty() {
                        if !resp.created() {
                            progressed(shared, revision_of(resp.header()));
                        }
                        continue;
                    }
                    apply(shared, resp.events());
                }
            }
        }
    }
}

/// A progress notification: every change up to `revision` was delivered.
fn progressed(shared: &Shared, revision: u64) {
    {
        let mut cache = write_lock(&shared.cache);
        if revision <= cache.revision {
            return;
        }
        cache.revision = revision;
    }
    shared.seen.send_if_modified(|seen| {
        let moved = revision > *seen;
        *seen = (*seen).max(revision);
        moved
    });
}

/// Apply etcd events to the cache, then publish them.
fn apply(shared: &Shared, events: &[etcd_client::Event]) {
    let mut out = Vec::with_capacity(events.len());
    let mut last = 0;
    {
        let mut cache = write_lock(&shared.cache);
        for ev in events {
            let Some(kv) = ev.kv() else { continue };
            let revision = kv.mod_revision().max(0) as u64;
            last = last.max(revision);
            let Some(key) = store_key(&shared.cfg.prefix, kv.key()) else {
                continue;
            };
            let previous = cache.objects.get(&key).map(|(_, v)| v.clone());
            let event = match ev.event_type() {
                EtcdEvent::Put => {
                    let value = Bytes::copy_from_slice(kv.value());
                    cache.objects.insert(key.clone(), (revision, value.clone()));
                    Event {
                        kind: if previous.is_some() {
                            EventType::Modified
                        } else {
                            EventType::Added
                        },
                        key,
                        value,
                        prev_value: previous,
                        revision,
                    }
                }
                EtcdEvent::Delete => {
                    cache.objects.remove(&key);
                    // A deletion of a key the cache never had changes nothing a watcher saw.
                    let Some(last_value) = previous else { continue };
                    Event {
                        kind: EventType::Deleted,
                        key,
                        value: last_value.clone(),
                        prev_value: Some(last_value),
                        revision,
                    }
                }
            };
            out.push(Arc::new(event));
        }
        cache.revision = cache.revision.max(last);
    }
    publish(shared, out);
    shared.applied.send_if_modified(|applied| {
        let moved = last > *applied;
        *applied = (*applied).max(last);
        moved
    });
    shared.seen.send_if_modified(|seen| {
        let moved = last > *seen;
        *seen = (*seen).max(last);
        moved
    });
}

/// Append to the replay window and send to the live watchers, under the window's lock so a
/// watcher starting from the window misses nothing.
fn publish(shared: &Shared, events: Vec<Arc<Event>>) {
    let now = Instant::now();
    let mut ring = lock(&shared.ring);
    for ev in events {
        ring.events.push_back((now, ev.clone()));
        if let Some(tx) = &ring.tx {
            // No receiver is not an error: nobody is watching.
            let _ = tx.send(ev);
        }
    }
    let over = ring.events.len().saturating_sub(shared.cfg.cache_events);
    for _ in 0..over {
        if let Some((_, ev)) = ring.events.pop_front() {
            ring.from = ev.revision;
        }
    }
    drop(ring);
    trim(shared, now);
}

/// etcd compacted up to `revision`: the window no longer serves watches from before it either,
/// so a revision is watchable exactly when etcd still has its history.
pub(crate) fn forget_before(shared: &Shared, revision: u64) {
    let mut ring = lock(&shared.ring);
    while ring
        .events
        .front()
        .is_some_and(|(_, ev)| ev.revision <= revision)
    {
        ring.events.pop_front();
    }
    ring.from = ring.from.max(revision);
}

/// Drop events older than the window's age.
pub(crate) fn trim(shared: &Shared, now: Instant) {
    let mut ring = lock(&shared.ring);
    while let Some((at, ev)) = ring.events.front() {
        if now.saturating_duration_since(*at) <= shared.cfg.cache_age {
            break;
        }
        ring.from = ev.revision;
        ring.events.pop_front();
    }
}

/// Load the cache again after falling behind a compaction: watchers of the old state cannot
/// continue (their fan-out closes; they answer `Expired`).
async fn reload(shared: &Shared) -> Result<(), etcd_client::Error> {
    let (objects, revision) = load(&shared.client, &shared.cfg).await?;
    {
        let mut cache = write_lock(&shared.cache);
        cache.objects = objects;
        cache.revision = revision;
    }
    {
        let mut ring = lock(&shared.ring);
        ring.events.clear();
        ring.from = revision;
        if ring.tx.is_some() {
            ring.tx = Some(broadcast::channel(1024).0);
        }
    }
    shared.seen.send_replace(revision);
    shared.applied.send_if_modified(|applied| {
        let moved = revision > *applied;
        *applied = (*applied).max(revision);
        moved
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_range_ends() {
        let cases: [(&[u8], &[u8]); 4] = [
            (b"/registry/", b"/registry0"),
            (b"a", b"b"),
            (b"a\xff", b"b"),
            (b"\xff\xff", b"\x00"),
        ];
        for (prefix, end) in cases {
            assert_eq!(range_end(prefix), end, "{prefix:?}");
        }
    }

    #[test]
    fn store_keys_drop_the_prefix() {
        assert_eq!(
            store_key("/registry", b"/registry/pods/default/a").as_deref(),
            Some("/pods/default/a")
        );
        assert_eq!(store_key("/registry", b"/other/pods/a"), None);
        assert_eq!(store_key("/registry", b"/registry/\xff"), None);
    }
}

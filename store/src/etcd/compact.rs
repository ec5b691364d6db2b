//! Compaction of etcd's history, as upstream's API server does it: every interval, compact
//! the revision seen one interval earlier, so a watcher has at least one interval to resume.
//! Several API servers on one etcd take turns through a compare-and-swap on the version of the
//! `compact_rev_key` key: only the one whose swap succeeds compacts in a given interval.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};

use super::{revision_of, Shared};
use crate::StoreError;

/// The key the API servers of one etcd agree on compaction through (upstream's).
const KEY: &str = "compact_rev_key";

pub(crate) async fn compactor(shared: Arc<Shared>) {
    let mut stop = shared.shutdown.subscribe();
    // The compaction key's version we expect, and the revision seen at the previous tick.
    let (mut version, mut last) = (0i64, 0u64);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(shared.cfg.compaction_interval) => {}
            _ = super::stopped(&mut stop) => return,
        }
        match tick(&shared, version, last).await {
            Ok((v, rev)) => (version, last) = (v, rev),
            Err(e) => tracing::warn!(error = %e, "compacting etcd failed"),
        }
    }
}

/// One turn: claim the interval, then compact `last`. Returns the key's version and the current
/// revision for the next turn.
async fn tick(shared: &Shared, version: i64, last: u64) -> Result<(i64, u64), StoreError> {
    let mut kv = shared.client.kv_client();
    let txn = Txn::new()
        .when([Compare::version(KEY, CompareOp::Equal, version)])
        .and_then([TxnOp::put(KEY, last.to_string(), None)])
        .or_else([TxnOp::get(KEY, None)]);
    let resp = shared.request("claiming compaction", kv.txn(txn)).await?;
    let current = revision_of(resp.header());
    if !resp.succeeded() {
        // Another API server compacts this interval (to the revision its swap wrote): follow
        // its count, and stop serving watches from before that revision as it does.
        let theirs = resp.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Get(g) => g.kvs().first().map(|kv| {
                (
                    kv.version(),
                    kv.value_str().ok().and_then(|v| v.parse().ok()),
                )
            }),
            _ => None,
        });
        let (version, compacted) = theirs.unwrap_or((0, None));
        if let Some(rev) = compacted.filter(|r| *r > 0) {
            shared.compacted.fetch_max(rev, Ordering::Relaxed);
            super::cache::forget_before(shared, rev);
        }
        return Ok((version, current));
    }
    if last > 0 {
        let done = shared
            .request("compacting", kv.compact(last as i64, None))
            .await;
        match done {
            Ok(_) => tracing::info!(revision = last, "compacted etcd"),
            // Compacted already (by hand, or by another cluster on the same etcd).
            Err(StoreError::Etcd(msg)) if msg.contains("compacted") => {}
            Err(e) => return Err(e),
        }
        shared.compacted.fetch_max(last, Ordering::Relaxed);
        super::cache::forget_before(shared, last);
    }
    Ok((version + 1, current))
}

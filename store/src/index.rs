//! The committed state both backends serve reads from: every key with the revision that wrote
//! it and its value, as of one revision (sled's index of its tree, etcd's cache of the prefix).

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::{ListResult, Revisioned};

pub(crate) struct Index {
    pub(crate) revision: u64,
    pub(crate) objects: BTreeMap<String, (u64, Bytes)>,
}

impl Index {
    pub(crate) fn get(&self, key: &str) -> Option<Revisioned> {
        self.objects.get(key).map(|(rev, value)| Revisioned {
            key: key.to_string(),
            value: value.clone(),
            revision: *rev,
        })
    }

    /// Keys under `prefix` in order, after `start_after`, at most `limit` of them (`None`: all),
    /// as of the index's revision.
    pub(crate) fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: Option<usize>,
    ) -> ListResult {
        use std::ops::Bound;
        let lower = match start_after {
            Some(k) if k >= prefix => Bound::Excluded(k),
            _ => Bound::Included(prefix),
        };
        let mut iter = self
            .objects
            .range::<str, _>((lower, Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix));
        let items: Vec<Revisioned> = iter
            .by_ref()
            .take(limit.unwrap_or(usize::MAX))
            .map(|(k, (rev, value))| Revisioned {
                key: k.clone(),
                value: value.clone(),
                revision: *rev,
            })
            .collect();
        ListResult {
            items,
            revision: self.revision,
            remaining: iter.count(),
        }
    }
}

//! How the store lays out its one sled tree: object records, history records and the revision
//! counter, each under its own key prefix so one atomic batch can write all three.
//!
//! - `m/revision` → the last revision handed out (8 bytes, big endian).
//! - `o<key>` → revision (8 bytes, big endian) then the value.
//! - `h<revision, 8 bytes big endian>` → one history event: kind, key, value, previous value.
//!   Big-endian revisions keep history keys in revision order for range scans.

use bytes::Bytes;

use crate::{Event, EventType, StoreError};

pub(crate) const REV_KEY: &[u8] = b"m/revision";
pub(crate) const OBJ_PREFIX: &[u8] = b"o";
pub(crate) const HIST_PREFIX: &[u8] = b"h";

/// How a history record stores the previous value.
const PREV_NONE: u8 = 0;
const PREV_SOME: u8 = 1;
/// A deletion: the previous value is the value, stored once.
const PREV_SAME: u8 = 2;

pub(crate) fn obj_key(key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(OBJ_PREFIX.len() + key.len());
    k.extend_from_slice(OBJ_PREFIX);
    k.extend_from_slice(key.as_bytes());
    k
}

pub(crate) fn hist_key(revision: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = HIST_PREFIX[0];
    k[1..].copy_from_slice(&revision.to_be_bytes());
    k
}

/// The revision a history key names.
pub(crate) fn hist_revision(raw_key: &[u8]) -> Result<u64, StoreError> {
    match raw_key {
        [b'h', rest @ ..] => be_u64(rest).ok_or_else(|| corrupt("history key", "not 8 bytes")),
        _ => Err(corrupt("history key", "wrong prefix")),
    }
}

pub(crate) fn encode_revision(revision: u64) -> [u8; 8] {
    revision.to_be_bytes()
}

pub(crate) fn decode_revision(raw: &[u8]) -> Result<u64, StoreError> {
    be_u64(raw).ok_or_else(|| corrupt("revision counter", "not 8 bytes"))
}

pub(crate) fn encode_object(revision: u64, value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(8 + value.len());
    v.extend_from_slice(&revision.to_be_bytes());
    v.extend_from_slice(value);
    v
}

/// An object record's key (without its prefix), revision and value.
pub(crate) fn decode_object(
    raw_key: &[u8],
    raw: &[u8],
) -> Result<(String, u64, Bytes), StoreError> {
    let key = raw_key
        .strip_prefix(OBJ_PREFIX)
        .ok_or_else(|| corrupt("object key", "wrong prefix"))?;
    let key = std::str::from_utf8(key)
        .map_err(|_| corrupt("object key", "not UTF-8"))?
        .to_string();
    if raw.len() < 8 {
        return Err(corrupt("object record", "shorter than its revision"));
    }
    let (rev, value) = raw.split_at(8);
    let rev = be_u64(rev).ok_or_else(|| corrupt("object record", "bad revision"))?;
    Ok((key, rev, Bytes::copy_from_slice(value)))
}

pub(crate) fn encode_event(ev: &Event) -> Vec<u8> {
    let prev_len = match (&ev.kind, &ev.prev_value) {
        (EventType::Deleted, _) | (_, None) => 0,
        (_, Some(p)) => p.len(),
    };
    let mut v = Vec::with_capacity(10 + ev.key.len() + ev.value.len() + prev_len);
    v.push(match ev.kind {
        EventType::Added => 0,
        EventType::Modified => 1,
        EventType::Deleted => 2,
    });
    v.extend_from_slice(&(ev.key.len() as u32).to_be_bytes());
    v.extend_from_slice(ev.key.as_bytes());
    v.extend_from_slice(&(ev.value.len() as u32).to_be_bytes());
    v.extend_from_slice(&ev.value);
    match (&ev.kind, &ev.prev_value) {
        (EventType::Deleted, _) => v.push(PREV_SAME),
        (_, None) => v.push(PREV_NONE),
        (_, Some(p)) => {
            v.push(PREV_SOME);
            v.extend_from_slice(p);
        }
    }
    v
}

/// Decode a history record, or `None` when its key is not under `prefix` (without copying the
/// values of records the caller does not want).
pub(crate) fn decode_event(
    revision: u64,
    raw: &[u8],
    prefix: &str,
) -> Result<Option<Event>, StoreError> {
    let bad = |what: &str| corrupt(&format!("history record {revision}"), what);
    let (&kind, rest) = raw.split_first().ok_or_else(|| bad("empty"))?;
    let kind = match kind {
        0 => EventType::Added,
        1 => EventType::Modified,
        2 => EventType::Deleted,
        _ => return Err(bad("unknown event kind")),
    };
    let (key, rest) = take_field(rest).ok_or_else(|| bad("truncated key"))?;
    if !key.starts_with(prefix.as_bytes()) {
        return Ok(None);
    }
    let key = std::str::from_utf8(key).map_err(|_| bad("key is not UTF-8"))?;
    let (value, rest) = take_field(rest).ok_or_else(|| bad("truncated value"))?;
    let value = Bytes::copy_from_slice(value);
    let prev_value = match rest.split_first() {
        Some((&PREV_NONE, [])) => None,
        Some((&PREV_SAME, [])) => Some(value.clone()),
        Some((&PREV_SOME, prev)) => Some(Bytes::copy_from_slice(prev)),
        _ => return Err(bad("bad previous value")),
    };
    Ok(Some(Event {
        kind,
        key: key.to_string(),
        value,
        prev_value,
        revision,
    }))
}

/// A length-prefixed field and what follows it.
fn take_field(raw: &[u8]) -> Option<(&[u8], &[u8])> {
    if raw.len() < 4 {
        return None;
    }
    let (len, rest) = raw.split_at(4);
    let len = u32::from_be_bytes(len.try_into().ok()?) as usize;
    (rest.len() >= len).then(|| rest.split_at(len))
}

fn be_u64(raw: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(raw.try_into().ok()?))
}

fn corrupt(what: &str, why: &str) -> StoreError {
    StoreError::Corrupt(format!("{what}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventType, key: &str, value: &str, prev: Option<&str>) -> Event {
        Event {
            kind,
            key: key.into(),
            value: Bytes::from(value.to_string()),
            prev_value: prev.map(|p| Bytes::from(p.to_string())),
            revision: 7,
        }
    }

    #[test]
    fn events_round_trip() {
        let cases = [
            event(EventType::Added, "/core/pods/default/a", "{\"a\":1}", None),
            event(
                EventType::Modified,
                "/core/pods/default/a",
                "{\"a\":2}",
                Some("{\"a\":1}"),
            ),
            event(EventType::Deleted, "/core/nodes/n", "{}", Some("{}")),
            event(EventType::Added, "", "", None),
        ];
        for ev in cases {
            let raw = encode_event(&ev);
            let back = decode_event(7, &raw, "").unwrap().unwrap();
            assert_eq!(back.kind, ev.kind, "{ev:?}");
            assert_eq!(back.key, ev.key);
            assert_eq!(back.value, ev.value);
            assert_eq!(back.prev_value, ev.prev_value);
            assert_eq!(back.revision, 7);
        }
    }

    #[test]
    fn events_outside_the_prefix_are_skipped() {
        let raw = encode_event(&event(EventType::Added, "/core/nodes/n", "{}", None));
        let cases = [("/core/nodes/", true), ("/core/pods/", false), ("", true)];
        for (prefix, kept) in cases {
            assert_eq!(
                decode_event(1, &raw, prefix).unwrap().is_some(),
                kept,
                "{prefix}"
            );
        }
    }

    #[test]
    fn damaged_records_are_corrupt_not_panics() {
        let good = encode_event(&event(EventType::Modified, "/k", "new", Some("old")));
        let cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![9],
            good[..3].to_vec(),
            good[..good.len() - 5].to_vec(),
            {
                let mut v = good.clone();
                let at = 1 + 4 + 2 + 4 + 3;
                v[at] = 7;
                v
            },
        ];
        for raw in cases {
            assert!(
                matches!(decode_event(1, &raw, ""), Err(StoreError::Corrupt(_))),
                "{raw:?}"
            );
        }
    }

    #[test]
    fn objects_and_keys_round_trip() {
        let (key, rev, value) =
            decode_object(&obj_key("/core/pods/x"), &encode_object(42, b"v")).unwrap();
        assert_eq!(
            (key.as_str(), rev, &value[..]),
            ("/core/pods/x", 42, &b"v"[..])
        );
        assert_eq!(hist_revision(&hist_key(300)).unwrap(), 300);
        assert!(
            hist_key(255) < hist_key(256),
            "history keys sort by revision"
        );
        assert_eq!(decode_revision(&encode_revision(9)).unwrap(), 9);
        let bad = [
            decode_object(b"o/k", b"short").err(),
            decode_object(b"x/k", &encode_object(1, b"")).err(),
            decode_revision(b"1234").err(),
            hist_revision(b"h12").err(),
        ];
        for err in bad {
            assert!(matches!(err, Some(StoreError::Corrupt(_))), "{err:?}");
        }
    }
}

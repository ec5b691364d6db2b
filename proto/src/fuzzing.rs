//! Fuzz entry points for the parsers of proto (selectors, quantities, patches, typed objects), shared by the `fuzz/` targets (cargo fuzz, for
//! long campaigns) and the corpus test that `cargo test` runs. Each takes arbitrary bytes and
//! asserts what must hold for any input: no panic, and what parses prints back to the same thing.

use serde_json::Value;

use crate::fields::FieldSelector;
use crate::labels::Selector;
use crate::patch::{json_patch, merge_patch, strategic_merge_patch};
use crate::quantity::Quantity;

/// Label and field selectors: a selector that parses prints as a selector that parses to the
/// same requirements.
pub fn selectors(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sel) = Selector::parse(text) {
        let printed = sel.to_string();
        let again = Selector::parse(&printed)
            .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which fails: {e}"));
        assert_eq!(again.to_string(), printed, "{text:?}");
    }
    if let Ok(sel) = FieldSelector::parse(text) {
        let printed = sel.to_string();
        let again = FieldSelector::parse(&printed)
            .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which fails: {e}"));
        assert_eq!(again.to_string(), printed, "{text:?}");
    }
}

/// Quantities: one that parses prints canonically, and the canonical form parses to an equal
/// quantity that prints the same.
pub fn quantity(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(q) = Quantity::parse(text) {
        let printed = q.to_string();
        let again = Quantity::parse(&printed)
            .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which fails: {e}"));
        assert_eq!(again, q, "{text:?} -> {printed:?}");
        assert_eq!(again.to_string(), printed, "{text:?}");
        let _ = (q.milli_value(), q.value());
    }
}

/// Patches: the input is a JSON document and a JSON patch, split at the first newline; every
/// kind of patch applies or fails with an error, never a panic. A merge patch applied twice
/// changes nothing more (RFC 7386 is idempotent).
pub fn patches(data: &[u8]) {
    let (doc, patch) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"{}"[..]),
    };
    let (Ok(doc), Ok(patch)) = (
        serde_json::from_slice::<Value>(doc),
        serde_json::from_slice::<Value>(patch),
    ) else {
        return;
    };
    let _ = json_patch(&doc, &patch);
    let _ = strategic_merge_patch(&doc, &patch, "", "Pod");
    let once = merge_patch(&doc, &patch);
    assert_eq!(
        merge_patch(&once, &patch),
        once,
        "merge patch {patch} on {doc}"
    );
}

/// Typed decoding: a JSON value checked against every served kind's type (what the API server
/// does with a body) answers a value or an error, never a panic, and normalizing is stable.
pub fn objects(data: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    for info in crate::registry::RESOURCES {
        if let Ok(normalized) = crate::typed::normalize(info.group, info.kind, &v) {
            let twice = crate::typed::normalize(info.group, info.kind, &normalized)
                .unwrap_or_else(|e| panic!("{} of {v} normalizes once only: {e}", info.kind));
            assert_eq!(twice, normalized, "{}", info.kind);
            let _ = crate::typed::unknown_fields(&v, &normalized);
        }
    }
}

/// Bytes that parsers treat specially, which mutations insert.
const INTERESTING: &[u8] = b",=!()-./\"{}[]:0 9eEimkMGTP%\n\t\\~";

/// A small deterministic mutator (xorshift), so the corpus test replays the same inputs every
/// run: `count` variants of `seed`, each one to four edits (bit flips, interesting bytes
/// inserted or replaced, bytes deleted, a slice repeated, a splice of `other`, a truncation).
pub fn mutants(seed: &[u8], other: &[u8], count: usize, mut state: u64) -> Vec<Vec<u8>> {
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let mut v = seed.to_vec();
        for _ in 0..1 + next() % 4 {
            let at = if v.is_empty() {
                0
            } else {
                (next() % v.len() as u64) as usize
            };
            let byte = INTERESTING[(next() % INTERESTING.len() as u64) as usize];
            match next() % 7 {
                0 if !v.is_empty() => v[at] ^= 1 << (next() % 8),
                1 if !v.is_empty() => v[at] = byte,
                2 => v.insert(at, byte),
                3 if !v.is_empty() => {
                    v.remove(at);
                }
                4 if !v.is_empty() => {
                    let end = (at + 1 + (next() % 8) as usize).min(v.len());
                    let slice = v[at..end].to_vec();
                    v.splice(at..at, slice);
                }
                5 if !other.is_empty() => {
                    let from = (next() % other.len() as u64) as usize;
                    v.truncate(at);
                    v.extend_from_slice(&other[from..]);
                }
                _ => v.truncate(at),
            }
        }
        out.push(v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_are_deterministic_and_varied() {
        let a = mutants(b"app=web,tier!=db", b"x in (a,b)", 50, 7);
        assert_eq!(a, mutants(b"app=web,tier!=db", b"x in (a,b)", 50, 7));
        assert!(
            a.iter()
                .filter(|m| m.as_slice() != b"app=web,tier!=db")
                .count()
                > 40
        );
    }
}

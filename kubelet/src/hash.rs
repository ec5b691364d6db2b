//! Stable, dependency-free hashes for generated identifiers (static pod UIDs and config hashes,
//! container and image IDs): FNV-1a over the parts, one 64-bit word per seed.

use tinykube_proto::hash::{fnv1a_64, OFFSET_BASIS_64};

/// `words` × 16 hex digits derived from `parts` (each part is length-prefixed, so the split
/// between parts matters).
pub fn hex(parts: &[&[u8]], words: usize) -> String {
    let mut out = String::with_capacity(words * 16);
    for seed in 0..words as u64 {
        let mut h = OFFSET_BASIS_64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for part in parts {
            h = fnv1a_64(h, &(part.len() as u64).to_le_bytes());
            h = fnv1a_64(h, part);
        }
        out.push_str(&format!("{h:016x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_and_sensitive_to_every_part() {
        let a = hex(&[b"host:worker0", b"file:/m/web.yaml"], 2);
        assert_eq!(a.len(), 32);
        assert_eq!(a, hex(&[b"host:worker0", b"file:/m/web.yaml"], 2));
        let cases: [&[&[u8]]; 3] = [
            &[b"host:worker1", b"file:/m/web.yaml"],
            &[b"host:worker0", b"file:/m/web.yml"],
            &[b"host:worker0file:/m/web.yaml"],
        ];
        for parts in cases {
            assert_ne!(a, hex(parts, 2));
        }
    }
}

//! Stable, dependency-free hashes for generated identifiers (static pod UIDs and config hashes,
//! container and image IDs): FNV-1a over the parts, one 64-bit word per seed.

/// `words` × 16 hex digits derived from `parts` (each part is length-prefixed, so the split
/// between parts matters).
pub fn hex(parts: &[&[u8]], words: usize) -> String {
    let mut out = String::with_capacity(words * 16);
    for seed in 0..words as u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut feed = |b: u8| {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        };
        for part in parts {
            for b in (part.len() as u64).to_le_bytes() {
                feed(b);
            }
            for &b in *part {
                feed(b);
            }
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

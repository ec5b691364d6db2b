//! FNV-1a, the one content hash of the workspace: stable across runs, builds and machines, with
//! no dependency. Upstream uses it for `pod-template-hash` and `controller-revision-hash` (32-bit);
//! tinykube also derives the discovery ETag, the OpenAPI `?hash=` and the kubelet's generated
//! identifiers from it (64-bit).

/// FNV-1a's 64-bit offset basis: the seed of the standard hash.
pub const OFFSET_BASIS_64: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME_64: u64 = 0x0000_0100_0000_01b3;
const OFFSET_BASIS_32: u32 = 0x811c_9dc5;
const PRIME_32: u32 = 0x0100_0193;

/// 64-bit FNV-1a of `bytes`, continuing from `seed` ([`OFFSET_BASIS_64`] for the standard hash;
/// a previous result to hash more bytes after it).
pub fn fnv1a_64(seed: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(seed, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME_64))
}

/// The standard 32-bit FNV-1a of `bytes` (Go's `hash/fnv.New32a`).
pub fn fnv1a_32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(OFFSET_BASIS_32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(PRIME_32)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_test_vectors() {
        let cases: [(&[u8], u64, u32); 3] = [
            (b"", 0xcbf2_9ce4_8422_2325, 0x811c_9dc5),
            (b"a", 0xaf63_dc4c_8601_ec8c, 0xe40c_292c),
            (b"foobar", 0x8594_4171_f739_67e8, 0xbf9c_f968),
        ];
        for (bytes, want64, want32) in cases {
            assert_eq!(fnv1a_64(OFFSET_BASIS_64, bytes), want64, "{bytes:?}");
            assert_eq!(fnv1a_32(bytes), want32, "{bytes:?}");
        }
        // Hashing in two steps is hashing the concatenation.
        let split = fnv1a_64(fnv1a_64(OFFSET_BASIS_64, b"foo"), b"bar");
        assert_eq!(split, fnv1a_64(OFFSET_BASIS_64, b"foobar"));
    }
}

//! FNV-1a, the content hash behind the discovery ETag and the OpenAPI documents' `?hash=`:
//! stable across runs and builds, with no dependency.

/// FNV-1a's 64-bit offset basis: the seed of the standard hash.
pub const OFFSET_BASIS_64: u64 = 0xcbf2_9ce4_8422_2325;

const PRIME_64: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a of `bytes`, starting from `seed` ([`OFFSET_BASIS_64`] for the standard hash).
pub fn fnv1a_64(seed: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(seed, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME_64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_test_vectors() {
        let cases: [(&[u8], u64); 3] = [
            (b"", 0xcbf2_9ce4_8422_2325),
            (b"a", 0xaf63_dc4c_8601_ec8c),
            (b"foobar", 0x8594_4171_f739_67e8),
        ];
        for (bytes, want) in cases {
            assert_eq!(fnv1a_64(OFFSET_BASIS_64, bytes), want, "{bytes:?}");
        }
    }
}

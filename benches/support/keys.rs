//! The keys the scale benchmarks use, so `scale` and `scan_index` measure
//! the same key space.

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The i-th key: distinct for every i below 62^5, spread over the space.
pub fn key(i: u64) -> String {
    let mut n = (i.wrapping_mul(387_420_489)) % 916_132_832;
    let mut k = [0u8; 5];
    for c in k.iter_mut().rev() {
        *c = ALPHABET[(n % 62) as usize];
        n /= 62;
    }
    String::from_utf8_lossy(&k).into_owned()
}

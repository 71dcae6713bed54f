//! Keys like real short IDs for the benchmarks: five base-62 digits spread
//! over the key space. Included with `#[path]`.

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The `i`th key, distinct for every `i` below 62^5.
pub fn key(i: u64) -> String {
    let mut n = i.wrapping_mul(2_654_435_761) % 62u64.pow(5);
    let mut digits = [0u8; 5];
    for d in digits.iter_mut().rev() {
        *d = ALPHABET[(n % 62) as usize];
        n /= 62;
    }
    String::from_utf8_lossy(&digits).into_owned()
}

//! The `split` rule's bucket: which of 100 buckets a scanner falls in for
//! one link, so that one person keeps seeing one variant.
//!
//! The hash must give the same answer on every node, in every version and
//! after every restart, or a person would flip between variants: std's
//! `RandomState` is seeded per process and foldhash's output is not
//! promised across versions, so neither will do. The bucket is **SHA-256**
//! of the link key's length (4 bytes, big-endian), the key and the
//! scanner's bytes, its first 8 bytes read as a big-endian integer, modulo
//! 100 (the bias of 2^64 mod 100 is below 10^-17). The key is part of the
//! input so that one scanner's buckets on two links are independent: a
//! person in the first half of one test is not in the first half of every
//! test. `tests` pins a few answers; changing them moves people between
//! variants of running tests.
//!
//! Who the scanner is, is the shell's: the tracking ID when the scan has
//! one, else the address and the User-Agent (`Sec-GPC`, `--no-tracking`).

use sha2::{Digest, Sha256};

/// The scanner's bucket, 0 to 99, for the link `link_key`.
pub fn bucket(link_key: &str, who: &[u8]) -> u8 {
    let mut hash = Sha256::new();
    hash.update((link_key.len() as u32).to_be_bytes());
    hash.update(link_key.as_bytes());
    hash.update(who);
    let digest = hash.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) % 100) as u8
}

// --- Added by i34-cli (issue 34): who a cookie-less scanner is. ---

/// The scanner's bytes for [`bucket`] when a scan carries no tracking ID
/// (`Sec-GPC`, `--no-tracking`, a first scan): the client address as text,
/// one space, the User-Agent (`203.0.113.7 Mozilla/5.0`, the shape pinned
/// below). One definition, so that the server, `qrtag try` and the
/// console's tester put one person in one bucket: a tester that said
/// "variant B" while the server showed A would be worse than none.
pub fn scanner_without_cookie(address: std::net::IpAddr, user_agent: &[u8]) -> Vec<u8> {
    let mut who = address.to_string().into_bytes();
    who.push(b' ');
    who.extend_from_slice(user_agent);
    who
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answers of this version, pinned: a change here re-deals every
    /// running A/B test.
    #[test]
    fn stable_answers() {
        let pinned = [
            bucket("menu", b"0mE3Yk1zAbCdEfGhIjK"),
            bucket("menu", b"0mE3Yk1zAbCdEfGhIjL"),
            bucket("H83if", b"203.0.113.7 Mozilla/5.0"),
            bucket("", b""),
        ];
        assert_eq!(pinned, PINNED, "the split hash changed");
    }

    const PINNED: [u8; 4] = [95, 80, 50, 19];

    #[test]
    fn a_scanner_without_cookie_is_its_address_and_user_agent() {
        let who = scanner_without_cookie([203, 0, 113, 7].into(), b"Mozilla/5.0");
        assert_eq!(who, b"203.0.113.7 Mozilla/5.0");
        assert_eq!(bucket("H83if", &who), PINNED[2]);
    }

    #[test]
    fn the_key_is_part_of_the_input() {
        // "ab" + "c" and "a" + "bc" are told apart by the length prefix.
        let same = (0..100)
            .filter(|i| {
                let who = format!("c{i}");
                bucket("ab", who.as_bytes()) == bucket("a", format!("b{who}").as_bytes())
            })
            .count();
        assert!(same < 10, "{same}");
    }
}

//! The order people expect of keys: `table-2` before `table-10`. Digit runs
//! compare by their value, everything else byte by byte; keys equal so
//! (`a01`, `a1`) fall back to their bytes, so the order is total and two
//! keys compare equal only when they are the same. The CLI's `list`, the
//! console's and the REST API's pages sort with it.
//!
//! Keys with a byte prefix are not one run of this order (`a1`, `a1b`,
//! `a2`, `a10`: prefix `a1`), but they all lie in the run of keys that
//! begin with the same tokens as the prefix without its trailing digits
//! ([`prefix_run`], [`in_run`]), which a prefix search walks and filters.

use std::cmp::Ordering;

/// A piece of a key: a non-digit byte, or a run of ASCII digits held as
/// its digits without leading zeros (`007` and `7` are the same value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Byte(u8),
    Number(&'a [u8]),
}

impl Ord for Token<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Token::Byte(a), Token::Byte(b)) => a.cmp(b),
            // Shorter without leading zeros is smaller; same length, digit by digit.
            (Token::Number(a), Token::Number(b)) => a.len().cmp(&b.len()).then(a.cmp(b)),
            // A number stands where its digits would: a non-digit byte is
            // below every digit or above them all.
            (Token::Number(_), Token::Byte(b)) => b'0'.cmp(b),
            (Token::Byte(a), Token::Number(_)) => a.cmp(&b'0'),
        }
    }
}

impl PartialOrd for Token<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The tokens of `s`, in order.
fn tokens(s: &str) -> impl Iterator<Item = Token<'_>> {
    let bytes = s.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        let &b = bytes.get(at)?;
        if !b.is_ascii_digit() {
            at += 1;
            return Some(Token::Byte(b));
        }
        let start = at;
        while bytes.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        let run = &bytes[start..at];
        let zeros = run.iter().take_while(|&&d| d == b'0').count();
        Some(Token::Number(&run[zeros..]))
    })
}

/// Natural order: by tokens, then by bytes.
///
/// Where the keys first differ outside a digit run (no digit on both
/// sides there, none before it that a digit there would extend) the tokens
/// decide as the bytes do, so most comparisons of a sort (random keys)
/// read no more than a byte comparison would; [`by_tokens`] otherwise.
pub fn cmp(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let i = x.iter().zip(y).take_while(|(p, q)| p == q).count();
    let digit = |s: &[u8], at: usize| s.get(at).is_some_and(u8::is_ascii_digit);
    let in_run = i > 0 && digit(x, i - 1);
    let number_here = (digit(x, i) && digit(y, i)) || (in_run && (digit(x, i) || digit(y, i)));
    if number_here {
        by_tokens(a, b)
    } else {
        x.cmp(y)
    }
}

/// A number that orders keys as [`cmp`] does wherever two numbers differ:
/// the first eight bytes of the tokens written out, a byte as itself and a
/// digit run as `0` (where a digit stands against a byte), its length
/// without leading zeros, then its digits; zero-padded. A sort by it first
/// reads few keys (they lie scattered through memory) and compares the
/// rest with [`cmp`].
pub fn head(key: &str) -> u64 {
    let mut out = [0u8; 8];
    let mut n = 0;
    'tokens: for token in tokens(key) {
        match token {
            Token::Byte(b) => {
                out[n] = b;
                n += 1;
            }
            Token::Number(digits) => {
                out[n] = b'0';
                n += 1;
                if n == out.len() {
                    break;
                }
                // Lengths from 255 on all read 255: the rest is the full
                // comparison's to decide.
                let Ok(len @ 0..=254) = u8::try_from(digits.len()) else {
                    out[n] = u8::MAX;
                    break;
                };
                out[n] = len;
                n += 1;
                for &d in digits {
                    if n == out.len() {
                        break 'tokens;
                    }
                    out[n] = d;
                    n += 1;
                }
            }
        }
        if n == out.len() {
            break;
        }
    }
    u64::from_be_bytes(out)
}

/// The order's definition: tokens, then bytes.
fn by_tokens(a: &str, b: &str) -> Ordering {
    tokens(a).cmp(tokens(b)).then_with(|| a.cmp(b))
}

/// The part of `prefix` whose keys are one run of the natural order:
/// `prefix` without its trailing digits (`table-1` → `table-`).
pub fn prefix_run(prefix: &str) -> &str {
    prefix.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// Whether `key` begins with the tokens of `run` (a [`prefix_run`]):
/// those keys are contiguous in the natural order, and every key that
/// begins with a prefix whose run is `run` is among them.
pub fn in_run(key: &str, run: &str) -> bool {
    let mut keys = tokens(key);
    tokens(run).all(|t| keys.next() == Some(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn digit_runs_by_value() {
        let mut keys = vec![
            "table-10",
            "table-2",
            "table-1",
            "a1b",
            "a10",
            "a2",
            "a1",
            "A9",
            "a01",
            "b",
            "a",
            "x/9/z",
            "x/10",
            "99999999999999999999999",
            "100000000000000000000000",
        ];
        keys.sort_by(|a, b| cmp(a, b));
        assert_eq!(
            keys,
            [
                "99999999999999999999999",
                "100000000000000000000000",
                "A9",
                "a",
                "a01",
                "a1",
                "a1b",
                "a2",
                "a10",
                "b",
                "table-1",
                "table-2",
                "table-10",
                "x/9/z",
                "x/10",
            ]
        );
    }

    #[test]
    fn a_prefix_search_reads_its_run() {
        assert_eq!(prefix_run("a1"), "a");
        assert_eq!(prefix_run("docs/"), "docs/");
        assert_eq!(prefix_run("42"), "");
        assert!(in_run("a10", "a") && in_run("a", "a") && !in_run("b1", "a"));
        assert!(in_run("x01/y", "x1/"), "same tokens, other zeros");
    }

    fn key() -> impl Strategy<Value = String> {
        "[a0-2/_-]{0,6}|[0-9]{0,25}|[a-c/-]{0,9}[0-9]{0,2}[a/-]{0,2}"
    }

    proptest! {
        #[test]
        fn a_total_order_equal_only_to_itself(a in key(), b in key(), c in key()) {
            prop_assert_eq!(cmp(&a, &b), by_tokens(&a, &b), "the shortcut");
            if head(&a) != head(&b) {
                prop_assert_eq!(head(&a).cmp(&head(&b)), cmp(&a, &b), "the head");
            }
            prop_assert_eq!(cmp(&a, &b), cmp(&b, &a).reverse());
            prop_assert_eq!(cmp(&a, &b) == Ordering::Equal, a == b);
            if cmp(&a, &b) != Ordering::Greater && cmp(&b, &c) != Ordering::Greater {
                prop_assert_ne!(cmp(&a, &c), Ordering::Greater);
            }
        }

        #[test]
        fn keys_with_a_prefix_lie_in_its_run_and_the_run_is_contiguous(
            mut keys in proptest::collection::vec(key(), 0..40),
            prefix in "[a0-2/]{0,3}",
        ) {
            keys.sort_by(|a, b| cmp(a, b));
            let run = prefix_run(&prefix);
            let flags: Vec<bool> = keys.iter().map(|k| in_run(k, run)).collect();
            let first = flags.iter().position(|&f| f);
            let last = flags.iter().rposition(|&f| f);
            if let (Some(first), Some(last)) = (first, last) {
                prop_assert!(flags[first..=last].iter().all(|&f| f), "{:?}", keys);
            }
            for k in &keys {
                if k.starts_with(&prefix) {
                    prop_assert!(in_run(k, run));
                    prop_assert_ne!(cmp(k, &prefix), Ordering::Less);
                }
            }
        }
    }
}

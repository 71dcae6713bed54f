//! Which existing keys a person may have meant by a key that does not
//! exist: `qrtag show hR2Ej` when the link is `hR2EJ`.
//!
//! Keys are typed from print, where case is easy to miss and 0/O/o and
//! 1/l/I look alike, so those come first; then keys a small edit away
//! (a letter wrong, missing, extra, or two swapped), counted after
//! folding the look-alikes. One pass over the keys, no allocation per
//! key: at a million keys the answer takes tens of milliseconds, paid
//! only when a command already failed.

/// How close a suggestion is, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Closeness {
    /// The same letters in another case.
    Case,
    /// The same once look-alikes are folded.
    LookAlike,
    /// This many edits apart, look-alikes folded.
    Edits(usize),
}

/// The most edits a suggestion may be away: one for short keys (random
/// IDs are dense, and at two edits nearly any ID has some neighbour),
/// two for longer hand-chosen slugs.
fn max_edits(typed_len: usize) -> usize {
    if typed_len <= 6 { 1 } else { 2 }
}

/// One character class per look-alike group, case folded.
fn fold(b: u8) -> u8 {
    match b {
        b'0' | b'O' | b'o' => b'o',
        b'1' | b'l' | b'I' => b'l',
        other => other.to_ascii_lowercase(),
    }
}

/// Up to `max` of `keys` that `typed` may have meant, closest first (then
/// in key order); never `typed` itself.
pub fn suggest<'k>(
    typed: &str,
    keys: impl IntoIterator<Item = &'k str>,
    max: usize,
) -> Vec<&'k str> {
    let typed_bytes = typed.as_bytes();
    let folded: Vec<u8> = typed_bytes.iter().copied().map(fold).collect();
    let bound = max_edits(folded.len());
    let mut scratch = Scratch::default();
    let mut found: Vec<(Closeness, &'k str)> = Vec::new();
    for key in keys {
        let kb = key.as_bytes();
        if kb.len().abs_diff(folded.len()) > bound || kb == typed_bytes {
            continue;
        }
        let closeness = if kb.eq_ignore_ascii_case(typed_bytes) {
            Closeness::Case
        } else if kb.len() == folded.len() && kb.iter().zip(&folded).all(|(&a, &b)| fold(a) == b) {
            Closeness::LookAlike
        } else if bound == 1 {
            // Short keys, most of a large store: a linear check, no table.
            if !one_edit_apart(&folded, kb) {
                continue;
            }
            Closeness::Edits(1)
        } else {
            match scratch.edits_within(&folded, kb, bound) {
                Some(d) => Closeness::Edits(d),
                None => continue,
            }
        };
        found.push((closeness, key));
    }
    found.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    found.dedup_by(|a, b| a.1 == b.1);
    // A key that differs only in case or look-alikes is the one meant:
    // keys an edit away would only be noise beside it.
    if found
        .first()
        .is_some_and(|f| !matches!(f.0, Closeness::Edits(_)))
    {
        found.retain(|f| !matches!(f.0, Closeness::Edits(_)));
    }
    found.truncate(max);
    found.into_iter().map(|(_, k)| k).collect()
}

/// Whether `b` (folded here) is exactly one edit from `a` (folded, and not
/// equal to it): one byte replaced, inserted or deleted, or two adjacent
/// bytes swapped. Equal to an edit distance of 1, in one pass.
fn one_edit_apart(a: &[u8], b: &[u8]) -> bool {
    let same =
        |x: &[u8], y: &[u8]| x.len() == y.len() && x.iter().zip(y).all(|(&p, &q)| p == fold(q));
    let i = a
        .iter()
        .zip(b)
        .position(|(&p, &q)| p != fold(q))
        .unwrap_or(a.len().min(b.len()));
    match a.len().cmp(&b.len()) {
        std::cmp::Ordering::Equal => {
            i < a.len()
                && (same(&a[i + 1..], &b[i + 1..])
                    || (i + 1 < a.len()
                        && a[i] == fold(b[i + 1])
                        && a[i + 1] == fold(b[i])
                        && same(&a[i + 2..], &b[i + 2..])))
        }
        std::cmp::Ordering::Greater => a.len() == b.len() + 1 && same(&a[i + 1..], &b[i..]),
        std::cmp::Ordering::Less => b.len() == a.len() + 1 && same(&a[i..], &b[i + 1..]),
    }
}

/// The rows of the distance table, kept across keys.
#[derive(Default)]
struct Scratch {
    before: Vec<usize>,
    previous: Vec<usize>,
    current: Vec<usize>,
    key: Vec<u8>,
}

impl Scratch {
    /// The optimal string alignment distance (insertions, deletions,
    /// substitutions, adjacent swaps) between `a` (folded) and `b` (folded
    /// here), if it is at most `bound`; stops at the first row past it.
    fn edits_within(&mut self, a: &[u8], b: &[u8], bound: usize) -> Option<usize> {
        self.key.clear();
        self.key.extend(b.iter().copied().map(fold));
        let b = &self.key;
        let width = b.len() + 1;
        for row in [&mut self.before, &mut self.previous, &mut self.current] {
            row.clear();
            row.resize(width, 0);
        }
        for (j, cell) in self.previous.iter_mut().enumerate() {
            *cell = j;
        }
        for i in 1..=a.len() {
            self.current[0] = i;
            let mut row_min = i;
            for j in 1..width {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                let mut d = (self.previous[j] + 1)
                    .min(self.current[j - 1] + 1)
                    .min(self.previous[j - 1] + cost);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    d = d.min(self.before[j - 2] + 1);
                }
                self.current[j] = d;
                row_min = row_min.min(d);
            }
            if row_min > bound {
                return None;
            }
            std::mem::swap(&mut self.before, &mut self.previous);
            std::mem::swap(&mut self.previous, &mut self.current);
        }
        let d = self.previous[width - 1];
        (d <= bound).then_some(d)
    }
}

/// ` (did you mean A, B or C?)`, or nothing without suggestions: the tail
/// of a "no such key" message.
pub fn did_you_mean(suggestions: &[&str]) -> String {
    match suggestions.split_last() {
        None => String::new(),
        Some((only, [])) => format!(" (did you mean {only}?)"),
        Some((last, rest)) => format!(" (did you mean {} or {last}?)", rest.join(", ")),
    }
}

/// How many suggestions a message offers.
pub const SUGGESTIONS: usize = 3;

/// Orders two keys as [`suggest`] would rank them for `typed` (tests).
#[cfg(test)]
fn rank(typed: &str, key: &str) -> Option<Closeness> {
    let found = suggest(typed, [key], 1);
    found.first().map(|_| {
        if key.eq_ignore_ascii_case(typed) {
            Closeness::Case
        } else {
            let f = |s: &str| s.bytes().map(fold).collect::<Vec<_>>();
            if f(key) == f(typed) {
                Closeness::LookAlike
            } else {
                Closeness::Edits(strsim::osa_distance(
                    &String::from_utf8_lossy(&f(typed)),
                    &String::from_utf8_lossy(&f(key)),
                ))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn case_then_look_alikes_then_edits() {
        let keys = ["hR2EJ", "hR2Ej", "hr2ej", "hR2Ek", "docs", "hRZEj"];
        assert_eq!(suggest("hR2Ej", keys, 3), ["hR2EJ", "hr2ej"]);
        assert_eq!(suggest("hR2El", ["hR2Ek", "hR2E"], 3), ["hR2E", "hR2Ek"]);
        assert_eq!(suggest("0l1Oo", ["OIlo0", "zzzzz"], 3), ["OIlo0"]);
        assert_eq!(suggest("doc", keys, 3), ["docs"]);
        assert_eq!(suggest("dcos", keys, 3), ["docs"], "a swap is one edit");
        assert!(suggest("xxxxx", keys, 3).is_empty());
    }

    #[test]
    fn short_keys_allow_one_edit_and_slugs_two() {
        assert!(suggest("abcde", ["abxye"], 3).is_empty());
        assert_eq!(
            suggest("summer-poster", ["sumer-postr"], 3),
            ["sumer-postr"]
        );
        assert!(suggest("summer-poster", ["sum-post"], 3).is_empty());
    }

    #[test]
    fn the_message_names_every_suggestion() {
        assert_eq!(did_you_mean(&[]), "");
        assert_eq!(did_you_mean(&["a"]), " (did you mean a?)");
        assert_eq!(did_you_mean(&["a", "b", "c"]), " (did you mean a, b or c?)");
    }

    proptest! {
        /// The linear check says what the table says at a bound of one.
        #[test]
        fn one_edit_apart_is_a_distance_of_one(
            a in "[ab01lIoO]{0,6}",
            b in "[ab01lIoO]{0,6}",
        ) {
            let folded: Vec<u8> = a.bytes().map(fold).collect();
            let by_table = Scratch::default().edits_within(&folded, b.as_bytes(), 1) == Some(1);
            prop_assert_eq!(one_edit_apart(&folded, b.as_bytes()), by_table);
        }

        /// Every key is suggested exactly when it is in another case, a
        /// look-alike, or within the edit bound after folding (strsim's
        /// distance as the reference), never the typed key, ranked by
        /// closeness, at most `max`.
        #[test]
        fn suggestions_are_the_closest_keys_in_order(
            typed in "[a-cA-C01lIoO]{1,9}",
            keys in proptest::collection::hash_set("[a-cA-C01lIoO]{1,9}", 0..30),
            max in 1usize..5,
        ) {
            let keys: Vec<String> = keys.into_iter().collect();
            let got = suggest(&typed, keys.iter().map(String::as_str), max);
            let bound = max_edits(typed.len());
            let mut want: Vec<(Closeness, &str)> = keys
                .iter()
                .filter(|k| **k != typed)
                .filter_map(|k| {
                    let r = rank(&typed, k)?;
                    Some((r, k.as_str()))
                })
                .collect();
            for (r, _) in &want {
                if let Closeness::Edits(d) = r {
                    prop_assert!(*d <= bound);
                }
            }
            // Every key within the bound is found (`rank` asks `suggest`
            // of one key; this asks the reference of every key).
            let fold_str = |s: &str| String::from_utf8_lossy(&s.bytes().map(fold).collect::<Vec<_>>()).into_owned();
            let reference = keys
                .iter()
                .filter(|k| **k != typed)
                .filter(|k| strsim::osa_distance(&fold_str(&typed), &fold_str(k)) <= bound)
                .count();
            prop_assert_eq!(want.len(), reference);
            want.sort();
            if want.first().is_some_and(|w| !matches!(w.0, Closeness::Edits(_))) {
                want.retain(|w| !matches!(w.0, Closeness::Edits(_)));
            }
            want.truncate(max);
            let want: Vec<&str> = want.into_iter().map(|(_, k)| k).collect();
            prop_assert_eq!(got, want);
        }
    }
}

//! `Accept-Language` and the `lang` rule.
//!
//! The choice made here: a rule holds when the scanner's **most preferred**
//! language matches one of the rule's tags, not when any accepted language
//! does. A browser set to German that also accepts English (`de, en;q=0.8`,
//! the usual shape) gets the German page, not whichever rule comes first.
//! The most preferred is the range with the highest quality, the first
//! among equals; `q=0` means "not acceptable" and is never chosen; `*`
//! names no language and is passed over; a part that is not a language
//! range with an optional well-formed `q` is skipped as if absent.
//!
//! The match is RFC 4647 basic filtering, case-blind, in either direction:
//! the rule's `en` holds for a scanner's `en-GB` (the rule as the range),
//! and the rule's `en-GB` holds for a scanner who says only `en` (the
//! scanner's as the range), since a person whose browser says `en` reads
//! British English too. `en` never matches `eng` or `en_GB`: a prefix
//! counts only up to a `-`.
//!
//! Bounded work: at most [`MAX_READ`] bytes and [`MAX_PARTS`] ranges of a
//! header are read; a range longer than [`MAX_TAG`] bytes is skipped.

/// Only this much of an `Accept-Language` header is read.
pub const MAX_READ: usize = 1024;
/// Only this many comma-separated ranges are read.
pub const MAX_PARTS: usize = 32;
/// The longest language tag kept; BCP 47 tags people send are far shorter.
pub const MAX_TAG: usize = 35;

/// A scanner's most preferred language, lower-cased, held without
/// allocating.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Preferred {
    bytes: [u8; MAX_TAG],
    len: u8,
}

impl Preferred {
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for Preferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Preferred({:?})",
            String::from_utf8_lossy(self.as_bytes())
        )
    }
}

/// The most preferred language of an `Accept-Language` header's value, if
/// it names one.
pub fn preferred(header: &[u8]) -> Option<Preferred> {
    let header = &header[..header.len().min(MAX_READ)];
    let mut best: Option<(&[u8], u16)> = None;
    for part in header.split(|&b| b == b',').take(MAX_PARTS) {
        let Some((tag, q)) = range(part) else {
            continue;
        };
        if q == 0 || tag == b"*" {
            continue;
        }
        if best.is_none_or(|(_, best_q)| q > best_q) {
            best = Some((tag, q));
            // Nothing later can be preferred to a first range of quality
            // 1, the usual head of a header: the rest need not be read.
            if q == 1000 {
                break;
            }
        }
    }
    let (tag, _) = best?;
    let mut p = Preferred {
        bytes: [0; MAX_TAG],
        len: tag.len() as u8,
    };
    for (to, from) in p.bytes.iter_mut().zip(tag) {
        *to = from.to_ascii_lowercase();
    }
    Some(p)
}

/// One `range;q=value` part: the range and its quality in thousandths, or
/// `None` for a malformed part.
fn range(part: &[u8]) -> Option<(&[u8], u16)> {
    let mut pieces = part.split(|&b| b == b';');
    let tag = trim(pieces.next()?);
    if !(tag == b"*" || is_tag(tag)) || tag.len() > MAX_TAG {
        return None;
    }
    let mut q = 1000;
    for param in pieces {
        let param = trim(param);
        let value = match param {
            [b'q' | b'Q', b'=', value @ ..] => value,
            _ => return None,
        };
        q = quality(value)?;
    }
    Some((tag, q))
}

/// RFC 9110's `qvalue`: `0`, `1`, or either with up to three decimals (a
/// `1` only with zeros).
fn quality(v: &[u8]) -> Option<u16> {
    let (whole, fraction) = match v {
        [w, b'.', rest @ ..] => (*w, rest),
        [w] => (*w, &[][..]),
        _ => return None,
    };
    if fraction.len() > 3 || !fraction.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths = 0u16;
    for i in 0..3 {
        thousandths = thousandths * 10 + fraction.get(i).map_or(0, |d| u16::from(d - b'0'));
    }
    match whole {
        b'0' => Some(thousandths),
        b'1' if thousandths == 0 => Some(1000),
        _ => None,
    }
}

fn trim(s: &[u8]) -> &[u8] {
    s.trim_ascii()
}

/// A language tag as a rule or a header writes it (the shape of BCP 47 and
/// of RFC 4647's language ranges, not its registry): letters, then
/// `-`-separated subtags of 1 to 8 letters or digits.
pub fn is_tag(s: &[u8]) -> bool {
    let mut subtags = s.split(|&b| b == b'-');
    let first = subtags.next().unwrap_or_default();
    (1..=8).contains(&first.len())
        && first.iter().all(u8::is_ascii_alphabetic)
        && subtags.all(|t| (1..=8).contains(&t.len()) && t.iter().all(u8::is_ascii_alphanumeric))
}

/// Whether a scanner's preferred language and a rule's tag (both
/// lower-cased) match: equal, or one a prefix of the other up to a `-`.
pub fn matches(preferred: &[u8], tag: &[u8]) -> bool {
    let prefix_of = |short: &[u8], long: &[u8]| {
        long.len() > short.len() && long.starts_with(short) && long[short.len()] == b'-'
    };
    preferred == tag || prefix_of(tag, preferred) || prefix_of(preferred, tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pref(h: &str) -> Option<String> {
        preferred(h.as_bytes()).map(|p| String::from_utf8(p.as_bytes().to_vec()).unwrap())
    }

    #[test]
    fn the_most_preferred_is_the_highest_quality_first_among_equals() {
        let cases: &[(&str, Option<&str>)] = &[
            ("en-GB,en;q=0.9", Some("en-gb")),
            ("de;q=0.5, fr;q=0.8, en;q=0.8", Some("fr")),
            ("de, en;q=0.8", Some("de")),
            ("fr;q=0.2, pt-BR", Some("pt-br")),
            ("*", None),
            ("*, en;q=0.1", Some("en")),
            ("en;q=0", None),
            ("en;q=0, de;q=0.001", Some("de")),
            ("", None),
            (" , ,", None),
            // Malformed parts are skipped, the rest still read.
            ("en;q=2, de;q=0.5", Some("de")),
            ("en;q=0.5555, de;q=0.1", Some("de")),
            ("en;q=, de;q=0.1", Some("de")),
            ("e n, de;q=0.1", Some("de")),
            ("en_GB, de;q=0.1", Some("de")),
            ("en;level=1, de;q=0.1", Some("de")),
            ("toolongtag, de;q=0.1", Some("de")),
            ("EN-gb;Q=1.000", Some("en-gb")),
            ("en;q=1.0, de;q=1", Some("en")),
            ("en;q=0.9 , de ; q=0.95", Some("de")),
        ];
        for (header, want) in cases {
            assert_eq!(pref(header).as_deref(), *want, "{header:?}");
        }
    }

    #[test]
    fn work_is_bounded() {
        let mut long = "xx;q=0.1,".repeat(MAX_PARTS);
        long.push_str("de");
        assert_eq!(pref(&long).as_deref(), Some("xx"));
        let mut wide = " ".repeat(MAX_READ);
        wide.push_str("de");
        assert_eq!(pref(&wide), None);
        let tag = format!("en-{}", "-abcdefgh".repeat(4));
        assert!(tag.len() > MAX_TAG);
        assert_eq!(pref(&format!("{tag}, de;q=0.5")).as_deref(), Some("de"));
    }

    #[test]
    fn basic_filtering_in_either_direction() {
        assert!(matches(b"en-gb", b"en"));
        assert!(matches(b"en", b"en-gb"));
        assert!(matches(b"pt-br", b"pt-br"));
        assert!(!matches(b"pt-br", b"pt-pt"));
        assert!(!matches(b"eng", b"en"));
        assert!(!matches(b"en", b"eng"));
        assert!(!matches(b"de", b"en"));
    }

    #[test]
    fn tags() {
        for good in ["en", "en-GB", "pt-BR", "zh-Hant-TW", "es-419", "x-klingon"] {
            assert!(is_tag(good.as_bytes()), "{good}");
        }
        for bad in [
            "",
            "en_GB",
            "en-",
            "-en",
            "e n",
            "123",
            "en--gb",
            "abcdefghi",
            "*",
        ] {
            assert!(!is_tag(bad.as_bytes()), "{bad}");
        }
    }
}

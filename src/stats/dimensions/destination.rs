//! Where a scan was sent (issue 34, "which rule answered"): the `Location`
//! the access log recorded for it, so an A/B split's or an app-store
//! split's destinations are counted apart without asking which rules the
//! link had at the time (they change).
//!
//! A dead link's fallback answer (issue 33) keeps the log's own mark, a `~`
//! before its location, so its scans stay apart from the live ones.

use std::borrow::Cow;

use crate::access_log::format::{FALLBACK_MARK, LogLine};

/// A line without a location (not a redirect).
pub const NONE: &str = "none";

/// The row of destinations past [`Bound`].
pub const OTHER: &str = "(other destinations)";

/// A line's destination, as logged (target encoding: it reads like the
/// URL): `~` first for a fallback answer.
pub fn value<'a>(line: &LogLine<'a>) -> Cow<'a, str> {
    match line.location {
        None => Cow::Borrowed(NONE),
        Some(l) if line.fallback => Cow::Owned(format!("{FALLBACK_MARK}{l}")),
        Some(l) => Cow::Borrowed(l),
    }
}

/// How many destinations one run names apart, and their bytes: a link
/// answers a handful, but one that appends paths answers one per path a
/// client makes up (a location is up to 8 KiB logged).
pub struct Bound;

impl Bound {
    /// Most destinations named apart.
    pub const NAMES: usize = 65_536;
    /// Most bytes of them together.
    pub const BYTES: usize = 16 << 20;

    /// Whether one more destination of `len` bytes may be named after
    /// `names` of `bytes` together.
    pub fn admits(names: usize, bytes: usize, len: usize) -> bool {
        names < Self::NAMES && bytes + len <= Self::BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_log::format::parse_line;

    #[test]
    fn a_fallback_keeps_its_mark_and_a_404_has_none() {
        let scan = parse_line("20261121100000.0 - - - /a 302 https://e.com/b GET -").unwrap();
        assert_eq!(value(&scan), "https://e.com/b");
        let fallback = parse_line("20261121100000.0 - - - /a 302 ~https://e.com/f GET -").unwrap();
        assert_eq!(value(&fallback), "~https://e.com/f");
        let missing = parse_line("20261121100000.0 - - - /a 404 - GET -").unwrap();
        assert_eq!(value(&missing), NONE);
    }

    #[test]
    fn the_bound_stops_at_either_limit() {
        assert!(Bound::admits(0, 0, 8192));
        assert!(!Bound::admits(Bound::NAMES, 0, 1));
        assert!(!Bound::admits(1, Bound::BYTES - 10, 11));
    }
}

//! Checking a whole import file before anything is written: every bad line is
//! counted, the first few are kept for the report, and a key that appears
//! twice is an error on its later line naming the earlier one.

use std::collections::HashMap;

use super::{LineError, Problem, Record};
use crate::values::link_key::LinkKey;

/// How many problems a report shows; the rest are counted.
pub const SHOWN: usize = 20;

/// The problems found, in line order: the first [`SHOWN`] and how many in all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Problems {
    pub first: Vec<LineError>,
    pub total: u64,
}

impl Problems {
    pub fn push(&mut self, e: LineError) {
        self.total += 1;
        if self.first.len() < SHOWN {
            self.first.push(e);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Both lists as one, in line order: the first [`SHOWN`] of the two
    /// (each holds its own first ones, so theirs are among them) and the sum.
    pub fn merge(self, other: Problems) -> Problems {
        let mut first = self.first;
        first.extend(other.first);
        first.sort_by_key(|e| e.line);
        first.truncate(SHOWN);
        Problems {
            first,
            total: self.total + other.total,
        }
    }

    /// How many problems were counted but not kept.
    pub fn not_shown(&self) -> u64 {
        self.total - self.first.len() as u64
    }
}

/// Follows the records of one file in order.
#[derive(Debug, Default)]
pub struct Check {
    seen: HashMap<LinkKey, u64, foldhash::fast::RandomState>,
    problems: Problems,
}

impl Check {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next record or bad line; returns the record when it may be
    /// imported, `None` when it was a problem (kept for the report).
    pub fn take(&mut self, item: Result<Record, LineError>) -> Option<Record> {
        let mut record = match item {
            Ok(r) => r,
            Err(e) => {
                self.problems.push(e);
                return None;
            }
        };
        // A drawn key is never a duplicate: drawn again (O(1) expected).
        while record.drawn && self.seen.contains_key(&record.key) {
            record.key = crate::values::short_id::ShortId::random().into();
        }
        match self.seen.get(&record.key) {
            Some(&first) => {
                self.problems.push(LineError::new(
                    record.line,
                    Problem::Duplicate {
                        key: record.key,
                        first,
                    },
                ));
                None
            }
            None => {
                self.seen.insert(record.key.clone(), record.line);
                Some(record)
            }
        }
    }

    /// Whether a problem has been seen yet (so the caller can stop keeping
    /// records it will not write).
    pub fn failed(&self) -> bool {
        !self.problems.is_empty()
    }

    /// `Ok` when every line could be imported.
    pub fn finish(self) -> Result<(), Problems> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(self.problems)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Document;

    fn rec(line: u64, key: &str) -> Result<Record, LineError> {
        Ok(Record {
            line,
            key: LinkKey::parse(key).expect("key"),
            doc: Document::new(),
            drawn: false,
        })
    }

    #[test]
    fn a_drawn_key_already_seen_is_drawn_again() {
        let mut c = Check::new();
        let first = c.take(rec(1, "abcde")).expect("taken");
        let mut again = rec(2, "abcde").expect("record");
        again.drawn = true;
        let again = c.take(Ok(again)).expect("drawn again, not a duplicate");
        assert_ne!(again.key, first.key);
        assert!(!c.failed());
    }

    #[test]
    fn duplicates_name_both_lines_and_every_later_one() {
        let mut c = Check::new();
        assert!(c.take(rec(1, "a")).is_some());
        assert!(c.take(rec(2, "b")).is_some());
        assert!(!c.failed());
        assert!(c.take(rec(4, "a")).is_none());
        assert!(c.take(rec(7, "a")).is_none());
        assert!(c.failed());
        let p = c.finish().expect_err("duplicates");
        let shown: Vec<String> = p.first.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "line 4: the key a is also on line 1",
                "line 7: the key a is also on line 1"
            ]
        );
        assert_eq!(p.total, 2);
    }

    #[test]
    fn keeps_the_first_problems_and_counts_the_rest() {
        let mut c = Check::new();
        for line in 1..=50 {
            assert!(
                c.take(Err(LineError::new(line, Problem::NotObject)))
                    .is_none()
            );
        }
        let p = c.finish().expect_err("problems");
        assert_eq!(p.total, 50);
        assert_eq!(p.first.len(), SHOWN);
        assert_eq!(p.not_shown(), 50 - SHOWN as u64);
        assert!(p.first.windows(2).all(|w| w[0].line < w[1].line));
    }

    #[test]
    fn a_clean_file_passes() {
        let mut c = Check::new();
        assert!(c.take(rec(1, "a")).is_some());
        assert!(c.take(rec(3, "docs/api")).is_some());
        assert_eq!(c.finish(), Ok(()));
    }
}

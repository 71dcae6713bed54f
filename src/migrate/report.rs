//! The import's report (pure): what came over, what was there already,
//! what collides and what cannot come over, and why. It is made from the
//! plan before anything is written, so a dry run and the real run print the
//! same text, and the real run keeps it in a file.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};

use super::plan::{Refusal, Target};
use super::source::LeftOut;
use crate::values::link_key::LinkKey;

/// Why a planned link is not written although it could be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Collision {
    /// The key holds a different link.
    Differs,
    /// The key is a deleted link's tombstone, never reused.
    Deleted(Option<DateTime<Utc>>),
    /// The key would take over URLs of this shorter link.
    TakesOver(LinkKey),
}

/// Visits counted for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VisitCounts {
    pub read: u64,
    /// Not imported before: what goes into the log file.
    pub new: u64,
    /// Imported by an earlier run.
    pub already: u64,
    /// Of links that do not come over (refused, or not in the source).
    pub orphaned: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    /// `yourls-sql dump.sql`.
    pub source: String,
    pub links: u64,
    pub new: u64,
    pub equal: u64,
    /// Different links overwritten (`--update`).
    pub updated: u64,
    pub expired: u64,
    pub collisions: Vec<(String, Collision)>,
    pub refused: Vec<Refusal>,
    /// Per property left out: how many links, why, and the first link.
    pub left_out: BTreeMap<String, (u64, String, String)>,
    pub visits: VisitCounts,
    /// Per-link totals kept (Bitly, Dub, Kutt).
    pub totals: u64,
}

/// A key as the report names it: with its domain when not the default one.
pub fn shown_key(target: &Target, key: &str) -> String {
    match target {
        Target::Default => key.to_owned(),
        Target::Other(host) => format!("{host}/{key}"),
    }
}

impl Report {
    pub fn note_left_out(&mut self, code: &str, left: &[LeftOut]) {
        for l in left {
            let e = self
                .left_out
                .entry(l.what.clone())
                .or_insert_with(|| (0, l.why.clone(), code.to_owned()));
            e.0 += 1;
        }
    }

    /// Whether every link of the source is in qrtag now (or would be).
    pub fn complete(&self) -> bool {
        self.collisions.is_empty() && self.refused.is_empty()
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "import from {}: {} links", self.source, self.links);
        let _ = writeln!(s, "  new: {}", self.new);
        let _ = writeln!(s, "  already there and equal: {}", self.equal);
        if self.updated > 0 {
            let _ = writeln!(s, "  different, overwritten (--update): {}", self.updated);
        }
        let _ = writeln!(s, "  colliding: {}", self.collisions.len());
        let _ = writeln!(s, "  refused: {}", self.refused.len());
        if self.expired > 0 {
            let _ = writeln!(
                s,
                "  expired already: {} (they come over expired and answer 404, as in qrtag an expired link does)",
                self.expired
            );
        }
        if self.totals > 0 {
            let _ = writeln!(
                s,
                "  links with an imported total of clicks: {}",
                self.totals
            );
        }
        let v = self.visits;
        let _ = writeln!(
            s,
            "  visits: {} read, {} new, {} imported before, {} of links not imported",
            v.read, v.new, v.already, v.orphaned
        );
        if !self.collisions.is_empty() {
            let _ = writeln!(s, "colliding (not written):");
            for (key, c) in &self.collisions {
                let why = match c {
                    Collision::Differs => {
                        "the key holds a different link (--update overwrites it)".to_owned()
                    }
                    Collision::Deleted(on) => crate::link::deleted_message(key, *on),
                    Collision::TakesOver(parent) => format!(
                        "it would take over URLs of the link {parent} (--take-over imports it anyway)"
                    ),
                };
                let _ = writeln!(s, "  {key}: {why}");
            }
        }
        if !self.refused.is_empty() {
            let _ = writeln!(s, "refused (cannot come over):");
            for r in &self.refused {
                let code = match &r.domain {
                    Some(d) => format!("{d}/{}", r.code),
                    None => r.code.clone(),
                };
                let _ = write!(s, "  {code:?}: {}", r.why);
                if let Some(k) = &r.suggestion {
                    let _ = write!(s, "; a key qrtag can serve: {k}");
                }
                s.push('\n');
            }
        }
        if !self.left_out.is_empty() {
            let _ = writeln!(s, "left out (not carried over):");
            for (what, (n, why, first)) in &self.left_out {
                let _ = writeln!(s, "  {what}: {n} links ({why}), the first {first}");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_every_kind() {
        let mut r = Report {
            source: "yourls-sql dump.sql".into(),
            links: 4,
            new: 1,
            equal: 1,
            collisions: vec![("taken".into(), Collision::Differs)],
            refused: vec![Refusal {
                code: "a.b".into(),
                domain: None,
                why: "a key holds only ...".into(),
                suggestion: Some("a-b".into()),
            }],
            ..Report::default()
        };
        r.note_left_out(
            "k",
            &[LeftOut {
                what: "password".into(),
                why: "qrtag has no passwords".into(),
            }],
        );
        let text = r.render();
        assert!(text.contains("  new: 1\n"), "{text}");
        assert!(text.contains("  already there and equal: 1\n"), "{text}");
        assert!(
            text.contains("taken: the key holds a different link"),
            "{text}"
        );
        assert!(
            text.contains("\"a.b\": a key holds only ...; a key qrtag can serve: a-b"),
            "{text}"
        );
        assert!(
            text.contains("password: 1 links (qrtag has no passwords), the first k"),
            "{text}"
        );
        assert!(!r.complete());
    }
}

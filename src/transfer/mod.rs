//! Bulk import and export of link documents, the pure part: reading an import
//! file (JSON lines or CSV) into validated records, checking a whole file
//! before anything is written, and writing the export line. No I/O beyond the
//! reader handed in; `src/cli/transfer.rs` is the shell around it and the
//! stores do the bulk writes.
//!
//! The export format is JSON lines, one document per line, `_id` (the key)
//! first and then the stored fields in stored order. Importing that file gives
//! back the same documents: [`export::line`] and [`parse::json_line`] are
//! round-trip tested.

use std::fmt;

use crate::link::{Document, InvalidLink};
use crate::values::link_key::{InvalidKey, LinkKey};

pub mod check;
pub mod export;
pub mod parse;

/// One valid record of an import file: where it was, its key and its document
/// as it will be stored (no `_id`, no `_rev`).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub line: u64,
    pub key: LinkKey,
    pub doc: Document,
    /// The key was drawn (a CSV without a key column, or an empty key
    /// cell), not given: the import may draw it again on a collision, and
    /// says which it drew.
    pub drawn: bool,
}

/// A line (or CSV record, numbered by the line it starts on) that cannot be
/// imported, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: u64,
    pub problem: Problem,
}

// Boxed: a line's error is returned by value on every line read, and the
// rules' errors would make every `Result` of the import twice as large.
impl From<crate::link::rules::RuleError> for Problem {
    fn from(e: crate::link::rules::RuleError) -> Self {
        Problem::Rules(Box::new(e))
    }
}

impl From<crate::link::rules::RuleLoops> for Problem {
    fn from(e: crate::link::rules::RuleLoops) -> Self {
        Problem::RuleLoops(Box::new(e))
    }
}

impl LineError {
    pub fn new(line: u64, problem: Problem) -> Self {
        Self { line, problem }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.problem)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("not a JSON object")]
    NotObject,
    #[error("no \"_id\": every line needs the link's key as \"_id\"")]
    MissingId,
    #[error("\"_id\" must be a string")]
    IdNotString,
    #[error("bad key: {0}")]
    BadKey(#[from] InvalidKey),
    #[error(
        "the field {0:?} is CouchDB metadata and cannot be imported (of such fields only \"_id\" and \"_rev\" are read; \"_rev\" is ignored)"
    )]
    Reserved(String),
    #[error("not a valid link: {0}")]
    BadLink(#[from] InvalidLink),
    #[error("not UTF-8")]
    NotUtf8,
    #[error("bad CSV header: {0}")]
    CsvHeader(String),
    #[error("expected {expected} fields, as in the header, found {found}")]
    FieldCount { expected: u64, found: u64 },
    #[error("\"inactive\" must be true, false, 1, 0 or empty, not {0:?}")]
    CsvInactive(String),
    #[error("{0}")]
    Notes(#[from] crate::link::NotesTooLong),
    /// Issue 33: a `title` cell `qrtag set --title` would refuse.
    #[error("{0}")]
    Title(#[from] crate::link::BadTitle),
    #[error("the key {key} is also on line {first}")]
    Duplicate { key: LinkKey, first: u64 },
    /// Issue 33: a `fallback_url` at the link's own short URL, which would
    /// send its scans back to it while it is dead.
    #[error("fallback_url: {0}")]
    FallbackLoops(#[from] crate::link::fallback_loop::FallbackLoops),
    /// Issue 34: `rules` the core refuses, naming the field
    /// (`rules[2].hours: ...`).
    #[error("{0}")]
    Rules(Box<crate::link::rules::RuleError>),
    /// Issue 34: a CSV `rules` cell that is not JSON.
    #[error("rules: {0}")]
    RulesJson(String),
    /// Issue 34: a rule's destination at the link's own short URL.
    #[error("{0}")]
    RuleLoops(Box<crate::link::rules::RuleLoops>),
    /// Not a problem of the file: the store already has the key and the
    /// import does not overwrite.
    #[error("the key {0} already exists (--update overwrites it)")]
    Exists(LinkKey),
    /// Not a problem of the file either: the store keeps the key as a
    /// deleted link's tombstone, which no import replaces.
    #[error("{}", crate::link::deleted_message(.key, *.on))]
    Deleted {
        key: LinkKey,
        on: Option<chrono::DateTime<chrono::Utc>>,
    },
    /// Not a problem of the file: the key would take over the URLs of a
    /// shorter link the store has ([`crate::values::link_key::taken_over`]).
    #[error(
        "the key {key} would take over URLs of the existing link {parent} (--take-over imports it anyway)"
    )]
    TakesOver { key: LinkKey, parent: LinkKey },
    /// The store refused to write this one document (a CouchDB conflict or
    /// validation).
    #[error("{key} was not written: {reason}")]
    NotWritten { key: LinkKey, reason: String },
}

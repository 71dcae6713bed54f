//! Reading an import file into [`Record`]s, each validated exactly as a store
//! would accept it, or a [`LineError`] naming the line and the reason.
//!
//! The format is told by the first non-blank line: one starting with `{` makes
//! the file JSON lines (as `qrtag export` writes them), anything else CSV with
//! a header row.
//!
//! **JSON lines**: one document per line, the key in `"_id"`. `"_rev"` is
//! dropped (a revision belongs to the database it came from; `--update`
//! overwrites whatever revision the target has). Any other field starting
//! with `_` is CouchDB metadata (`_attachments`, `_deleted`, ...) that would
//! mean something else, or be refused, in CouchDB, so such a line is refused.
//! Blank lines are skipped.
//!
//! **CSV**: a header naming the column `url`, optionally `key` (left out,
//! or a cell left empty, a key is drawn as `qrtag new` draws one),
//! `inactive`, `expires`, `notes`, `created_at`, `changed_at` and
//! `deleted_at` (every field qrtag keeps), in any order and any letter case;
//! no other columns (a misspelt `inactiv` is an error, not a silently dropped
//! column). Fields are trimmed. `inactive` is `true`/`false`, `1`/`0` (any
//! case) or empty for false; an empty cell leaves its field out; times are
//! RFC 3339; notes follow `qrtag set --notes`'s rules. A record becomes the
//! document `{"url": ..., "inactive": ..., "expires": ..., "notes": ...}`, as
//! `qrtag new` writes it.
//!
//! A UTF-8 byte order mark at the start (spreadsheets write one) is skipped.

use std::io::{self, BufRead};

use serde_json::Value;

use super::{LineError, Problem, Record};
use crate::link::rules::Rules;
use crate::link::{self, Document, Link, Notes, Title};
use crate::values::destination::Destination;
use crate::values::link_key::LinkKey;
use crate::values::short_id::ShortId;

const BOM: &[u8] = b"\xEF\xBB\xBF";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    JsonLines,
    Csv,
}

impl Format {
    /// The format of a file whose first non-blank line is `first`.
    pub fn detect(first: &[u8]) -> Self {
        if first.trim_ascii_start().starts_with(b"{") {
            Self::JsonLines
        } else {
            Self::Csv
        }
    }
}

/// Reads every record of `input` in file order, handing each valid record or
/// bad line to `each`. Fails only when reading itself fails. Returns the
/// format, or `None` for input with no non-blank line (nothing to import).
pub fn read<R: BufRead>(
    mut input: R,
    mut each: impl FnMut(Result<Record, LineError>),
) -> io::Result<Option<Format>> {
    // Find the first non-blank line, counting the blank ones before it
    // (which mean nothing in either format).
    let mut prefix = Vec::new();
    let mut line = 0u64;
    let first_start = loop {
        let start = prefix.len();
        if input.read_until(b'\n', &mut prefix)? == 0 {
            return Ok(None);
        }
        line += 1;
        if line == 1 && prefix.starts_with(BOM) {
            prefix.drain(..BOM.len());
        }
        if !is_blank(&prefix[start..]) {
            break start;
        }
    };
    let format = Format::detect(&prefix[first_start..]);
    let mut csv = (format == Format::Csv).then(Csv::default);
    let mut on_line = |line, text: &[u8]| match &mut csv {
        Some(csv) => csv.line(line, text, &mut each),
        None if is_blank(text) => {}
        None => each(json_line(line, text)),
    };
    on_line(line, &prefix[first_start..]);
    let mut buf = prefix;
    loop {
        buf.clear();
        let n = input.read_until(b'\n', &mut buf)?;
        line += 1;
        // At the end an empty "line" tells the CSV reader the input is over.
        on_line(line, &buf[..n]);
        if n == 0 {
            return Ok(Some(format));
        }
    }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// One line of JSON lines (line terminator and surrounding whitespace
/// allowed).
pub fn json_line(line: u64, text: &[u8]) -> Result<Record, LineError> {
    let bad = |problem| LineError::new(line, problem);
    // Without its line end, so that a line cut short is reported at its
    // last column rather than at column 0 of a line after it.
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    let value: Value = serde_json::from_slice(text).map_err(|e| bad(json_problem(&e)))?;
    let Value::Object(mut doc) = value else {
        return Err(bad(Problem::NotObject));
    };
    // `shift_remove`: with serde_json's preserve_order, `remove` would move
    // the last field into the hole and so change the document's field order.
    let id = match doc.shift_remove("_id") {
        Some(Value::String(id)) => id,
        Some(_) => return Err(bad(Problem::IdNotString)),
        None => return Err(bad(Problem::MissingId)),
    };
    doc.shift_remove("_rev");
    if let Some(Value::String(url)) = doc.get_mut("url") {
        lower_host(url);
    }
    store_rules(&mut doc);
    let key = check_document(&id, &doc).map_err(bad)?;
    Ok(Record {
        line,
        key,
        doc,
        drawn: false,
    })
}

/// The checks every record passes: a valid key, no CouchDB metadata field,
/// and a document the stores' readers take as a link. Export asks the same
/// of what it writes, to warn about documents an import would refuse.
pub fn check_document(id: &str, doc: &Document) -> Result<LinkKey, Problem> {
    let key = LinkKey::parse(id)?;
    if let Some(field) = doc.keys().find(|k| k.starts_with('_')) {
        return Err(Problem::Reserved(field.clone()));
    }
    Link::from_document(doc)?;
    link::check_times(doc)?;
    link::check_texts(doc)?;
    // Issue 34: rules as a store holds them, a country rule kept whatever
    // this machine has (an import moves stored links; the server that
    // serves them decides), as the snapshot reads them.
    Rules::from_stored(doc)?;
    Ok(key)
}

/// Issue 34: rules the core takes are stored as the core writes them (a
/// destination's host in capitals lowered, as `url`'s is, which the CouchDB
/// validation asks; an empty list no field); others are left for
/// [`check_document`] to refuse.
fn store_rules(doc: &mut Document) {
    if let Ok(rules) = Rules::from_stored(doc)
        && doc.contains_key("rules")
    {
        if rules.is_empty() && doc.get("rules") == Some(&Value::Null) {
            return;
        }
        rules.write_to(doc);
    }
}

/// A destination whose host is written with capitals becomes the text
/// [`Destination::parse`] stores, as every writer stores it (the CouchDB
/// validation refuses capitals); any other text is left for
/// [`check_document`] to judge.
fn lower_host(url: &mut String) {
    // The common shape is lower case already: no copy made for it.
    if crate::values::destination::is_plain_absolute(url) {
        return;
    }
    if let Ok(d) = Destination::parse(url)
        && d.host_lowered()
    {
        *url = d.into_string();
    }
}

/// serde_json's message without its "at line 1 column N": every line is
/// parsed on its own, so only the column means anything.
fn json_problem(e: &serde_json::Error) -> Problem {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full);
    Problem::Json(format!("{message} (column {})", e.column()))
}

/// CSV, read line by line through `csv-core` so that a record's number is
/// the line it starts on, exactly: blank lines between records, CRLF line
/// ends and quoted fields spanning lines all count as lines. (The `csv`
/// crate's record positions are off by one after CRLF ends and blank lines.)
struct Csv {
    reader: csv_core::Reader,
    out: Vec<u8>,
    out_len: usize,
    ends: Vec<usize>,
    ends_len: usize,
    /// The line the record being read started on.
    start: u64,
    columns: Option<Columns>,
    /// After a bad header nothing more can be read.
    stopped: bool,
}

impl Default for Csv {
    fn default() -> Self {
        Self {
            reader: csv_core::Reader::new(),
            out: vec![0; 1024],
            out_len: 0,
            ends: vec![0; 8],
            ends_len: 0,
            start: 0,
            columns: None,
            stopped: false,
        }
    }
}

impl Csv {
    fn in_record(&self) -> bool {
        self.out_len > 0 || self.ends_len > 0
    }

    /// Takes one physical line (empty: the end of input).
    fn line(
        &mut self,
        line: u64,
        mut text: &[u8],
        each: &mut impl FnMut(Result<Record, LineError>),
    ) {
        if self.stopped {
            return;
        }
        if !self.in_record() {
            if !text.is_empty() && is_blank(text) {
                return;
            }
            self.start = line;
        }
        let at_end = text.is_empty();
        loop {
            let (result, read, written, ended) = self.reader.read_record(
                text,
                &mut self.out[self.out_len..],
                &mut self.ends[self.ends_len..],
            );
            text = &text[read..];
            self.out_len += written;
            self.ends_len += ended;
            match result {
                csv_core::ReadRecordResult::InputEmpty | csv_core::ReadRecordResult::End => return,
                csv_core::ReadRecordResult::OutputFull => {
                    self.out.resize(self.out.len() * 2, 0);
                }
                csv_core::ReadRecordResult::OutputEndsFull => {
                    self.ends.resize(self.ends.len() * 2, 0);
                }
                csv_core::ReadRecordResult::Record => {
                    self.record(each);
                    // A lone CR ended the record: the rest starts another on this line.
                    if !at_end && is_blank(text) {
                        return;
                    }
                    self.start = line;
                }
            }
        }
    }

    fn record(&mut self, each: &mut impl FnMut(Result<Record, LineError>)) {
        let mut fields = Vec::with_capacity(self.ends_len);
        let mut from = 0;
        for &end in &self.ends[..self.ends_len] {
            fields.push(self.out[from..end].trim_ascii());
            from = end;
        }
        let line = self.start;
        match &self.columns {
            Some(c) => each(c.record(line, &fields)),
            None => match Columns::from_header(&fields) {
                Ok(c) => self.columns = Some(c),
                Err(problem) => {
                    each(Err(LineError::new(line, problem)));
                    self.stopped = true;
                }
            },
        }
        self.out_len = 0;
        self.ends_len = 0;
    }
}

/// The CSV columns, every field the store keeps that fits in a cell; `url`
/// is required. Times are RFC 3339; an empty cell leaves the
/// field out.
pub const COLUMNS: [&str; 13] = [
    "key",
    "url",
    "inactive",
    "expires",
    "notes",
    "created_at",
    "changed_at",
    "deleted_at",
    // Where a dead link's scans go (issue 33).
    "fallback_url",
    // Issue 33: last, so the columns before it keep their places.
    "title",
    // Issue 33: by which surface the link was made and last changed
    // (`link::Via`'s names), after the title for the same reason.
    "created_via",
    "changed_via",
    // Issue 34: a link's rules, their JSON array as stored; last, so the
    // columns before it keep their places.
    "rules",
];
const KEY: usize = 0;
const URL: usize = 1;
const INACTIVE: usize = 2;
const NOTES: usize = 4;
const FALLBACK_URL: usize = 8;
const TITLE: usize = 9;
const RULES: usize = 12;

/// Which CSV column holds what: for each of [`COLUMNS`], its index.
#[derive(Debug)]
struct Columns {
    count: usize,
    at: [Option<usize>; COLUMNS.len()],
}

impl Columns {
    fn from_header(header: &[&[u8]]) -> Result<Self, Problem> {
        let mut at: [Option<usize>; COLUMNS.len()] = [None; COLUMNS.len()];
        let mut names = Vec::new();
        for (i, raw) in header.iter().copied().enumerate() {
            let name = std::str::from_utf8(raw).map_err(|_| Problem::NotUtf8)?;
            names.push(name);
            let lower = name.to_ascii_lowercase();
            let Some(slot) = COLUMNS.iter().position(|c| *c == lower) else {
                continue;
            };
            if at[slot].replace(i).is_some() {
                return Err(Problem::CsvHeader(format!(
                    "the column {name:?} is named twice"
                )));
            }
        }
        let optional = COLUMNS[2..].join(", ");
        if at[URL].is_none() {
            return Err(Problem::CsvHeader(format!(
                "it must name the column url (optional: key, {optional}); found {:?}",
                names.join(",")
            )));
        }
        if let Some((_, unknown)) = names
            .iter()
            .enumerate()
            .find(|(i, _)| !at.contains(&Some(*i)))
        {
            return Err(Problem::CsvHeader(format!(
                "unknown column {unknown:?} (the columns are {})",
                COLUMNS.join(", ")
            )));
        }
        Ok(Self {
            count: header.len(),
            at,
        })
    }

    fn record(&self, line: u64, fields: &[&[u8]]) -> Result<Record, LineError> {
        let bad = |problem| LineError::new(line, problem);
        if fields.len() != self.count {
            return Err(bad(Problem::FieldCount {
                expected: self.count as u64,
                found: fields.len() as u64,
            }));
        }
        let field = |column: usize| {
            let Some(i) = self.at[column] else {
                return Ok(None);
            };
            std::str::from_utf8(fields.get(i).copied().unwrap_or_default())
                .map(Some)
                .map_err(|_| bad(Problem::NotUtf8))
        };
        let inactive = match field(INACTIVE)? {
            None => false,
            Some(s) => parse_inactive(s).ok_or_else(|| bad(Problem::CsvInactive(s.to_owned())))?,
        };
        let mut doc = Document::new();
        let mut url = field(URL)?.unwrap_or_default().to_owned();
        lower_host(&mut url);
        doc.insert("url".into(), Value::String(url));
        doc.insert("inactive".into(), Value::Bool(inactive));
        for (column, name) in COLUMNS.iter().enumerate().skip(INACTIVE + 1) {
            let Some(text) = field(column)?.filter(|t| !t.is_empty()) else {
                continue;
            };
            if column == RULES {
                let rules: Value = serde_json::from_str(text)
                    .map_err(|e| bad(Problem::RulesJson(json_problem(&e).to_string())))?;
                doc.insert((*name).into(), rules);
                continue;
            }
            let text = if column == NOTES {
                let notes = Notes::parse(text).map_err(|e| bad(Problem::Notes(e)))?;
                notes.as_str().to_owned()
            } else if column == FALLBACK_URL {
                let mut fallback = text.to_owned();
                lower_host(&mut fallback);
                fallback
            } else if column == TITLE {
                let title = Title::parse(text).map_err(|e| bad(Problem::Title(e)))?;
                title.as_str().to_owned()
            } else {
                text.to_owned()
            };
            doc.insert((*name).into(), Value::String(text));
        }
        // No key column, or an empty cell: a drawn key, as `qrtag new`
        // draws one (the import draws again on a collision).
        let (id, drawn) = match field(KEY)?.filter(|k| !k.is_empty()) {
            Some(k) => (k.to_owned(), false),
            None => (ShortId::random().as_str().to_owned(), true),
        };
        store_rules(&mut doc);
        let key = check_document(&id, &doc).map_err(bad)?;
        Ok(Record {
            line,
            key,
            doc,
            drawn,
        })
    }
}

fn parse_inactive(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "" | "false" | "0" => Some(false),
        "true" | "1" => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests;

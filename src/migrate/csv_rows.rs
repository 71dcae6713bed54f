//! The CSV records of another shortener's export, read one at a time so a
//! large export costs one record of memory, each with the line it starts on
//! so a bad row is named where a spreadsheet shows it.
//!
//! The exports (Shlink's web client, Dub, Bitly) quote only when a field
//! needs it, end lines with LF or CRLF and may begin with a UTF-8 byte order
//! mark; `csv-core` reads all of those, quoted fields spanning lines
//! included.

use std::io::BufRead;

use super::source::SourceError;

/// One record: the line it starts on (1-based) and its fields, trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub line: u64,
    pub fields: Vec<String>,
}

impl Row {
    /// The field at `index`, `""` past the end (a short row), so a missing
    /// trailing cell reads as an empty one, as spreadsheets write them.
    pub fn get(&self, index: usize) -> &str {
        self.fields.get(index).map_or("", String::as_str)
    }

    /// The field at `index`, `None` when empty.
    pub fn non_empty(&self, index: Option<usize>) -> Option<&str> {
        index.map(|i| self.get(i)).filter(|s| !s.is_empty())
    }
}

/// Reads CSV records from `input`; `place` names the file in errors.
pub struct Rows<R> {
    input: R,
    place: String,
    reader: csv_core::Reader,
    buffer: Vec<u8>,
    consumed: usize,
    line: u64,
    first: bool,
    done: bool,
}

impl<R: BufRead> Rows<R> {
    pub fn new(input: R, place: impl Into<String>) -> Self {
        Self {
            input,
            place: place.into(),
            reader: csv_core::Reader::new(),
            buffer: Vec::new(),
            consumed: 0,
            line: 0,
            first: true,
            done: false,
        }
    }

    /// The next record, `None` at the end; blank lines are skipped.
    pub fn next_row(&mut self) -> Result<Option<Row>, SourceError> {
        loop {
            if self.done {
                return Ok(None);
            }
            let mut out = vec![0u8; 256];
            let mut ends = vec![0usize; 16];
            let (mut out_len, mut ends_len) = (0, 0);
            let mut start: Option<u64> = None;
            loop {
                if self.consumed >= self.buffer.len() {
                    self.fill()?;
                }
                let input = &self.buffer[self.consumed..];
                let (result, read, written, ended) =
                    self.reader
                        .read_record(input, &mut out[out_len..], &mut ends[ends_len..]);
                if start.is_none() && (read > 0 || input.is_empty()) {
                    start = Some(self.line + 1);
                }
                self.line += input[..read].iter().filter(|&&b| b == b'\n').count() as u64;
                self.consumed += read;
                out_len += written;
                ends_len += ended;
                match result {
                    csv_core::ReadRecordResult::InputEmpty => {}
                    csv_core::ReadRecordResult::OutputFull => out.resize(out.len() * 2, 0),
                    csv_core::ReadRecordResult::OutputEndsFull => ends.resize(ends.len() * 2, 0),
                    csv_core::ReadRecordResult::Record | csv_core::ReadRecordResult::End => {
                        if matches!(result, csv_core::ReadRecordResult::End) {
                            self.done = true;
                            if ends_len == 0 {
                                return Ok(None);
                            }
                        }
                        let mut fields = Vec::with_capacity(ends_len);
                        let mut from = 0;
                        for &end in &ends[..ends_len] {
                            let bytes = &out[from..end];
                            let text =
                                std::str::from_utf8(bytes).map_err(|_| SourceError::Format {
                                    place: format!(
                                        "{} line {}",
                                        self.place,
                                        start.unwrap_or(self.line)
                                    ),
                                    problem: "not UTF-8 text".into(),
                                })?;
                            fields.push(text.trim().to_owned());
                            from = end;
                        }
                        if self.first {
                            self.first = false;
                            if let Some(f) = fields.first_mut()
                                && let Some(rest) = f.strip_prefix('\u{feff}')
                            {
                                *f = rest.to_owned();
                            }
                        }
                        if fields.iter().all(String::is_empty) {
                            break;
                        }
                        // A record ended by its line's end starts on the line before.
                        let line = start.unwrap_or(self.line).max(1);
                        return Ok(Some(Row { line, fields }));
                    }
                }
            }
        }
    }

    fn fill(&mut self) -> Result<(), SourceError> {
        self.buffer.clear();
        self.consumed = 0;
        let chunk = self.input.fill_buf().map_err(|error| SourceError::Io {
            path: self.place.clone(),
            error,
        })?;
        self.buffer.extend_from_slice(chunk);
        let n = chunk.len();
        self.input.consume(n);
        Ok(())
    }
}

/// A header's columns, found by name whatever their case, spacing or order.
pub struct Header {
    names: Vec<String>,
}

impl Header {
    pub fn new(row: &Row) -> Self {
        Self {
            names: row.fields.iter().map(|f| normalize(f)).collect(),
        }
    }

    /// The first column named any of `names` (compared without case,
    /// spaces, `_` or `-`).
    pub fn find(&self, names: &[&str]) -> Option<usize> {
        names
            .iter()
            .find_map(|n| self.names.iter().position(|h| *h == normalize(n)))
    }
}

fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

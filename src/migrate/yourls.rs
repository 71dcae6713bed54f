//! YOURLS: its two tables, `yourls_url` (keyword, url, title, timestamp,
//! ip, clicks) and `yourls_log` (click_id, click_time, shorturl, referrer,
//! user_agent, ip_address, country_code), from a `mysqldump` SQL dump or
//! from CSV exports of the two tables.
//!
//! Written against YOURLS 1.10.5-dev (github:YOURLS/YOURLS at b8c7882,
//! after 1.10.4): the tables as `includes/functions-install.php` creates
//! them; times are UTC (`includes/Config/Init.php` sets PHP's zone to UTC
//! before `date('Y-m-d H:i:s')` stamps them); a visit with no referrer is
//! logged `direct` (`yourls_get_referrer`).
//!
//! The dump is read one statement at a time (mysqldump's extended INSERTs
//! are at most its `net_buffer_length`, 1 MB by default), so a dump of a
//! million visits is read in bounded memory. A dump that ends inside a
//! statement, or a mysqldump file without its closing `-- Dump completed`
//! line, is refused as truncated before the sink is told it is complete.

use std::io::BufRead;
use std::path::PathBuf;

use chrono::{DateTime, NaiveDateTime, Utc};

use super::source::{Sink, Source, SourceError, SourceLink, SourceVisit};

/// The URL table's columns in the order YOURLS creates them.
const URL_COLUMNS: [&str; 6] = ["keyword", "url", "title", "timestamp", "ip", "clicks"];
/// The log table's columns in that order.
const LOG_COLUMNS: [&str; 7] = [
    "click_id",
    "click_time",
    "shorturl",
    "referrer",
    "user_agent",
    "ip_address",
    "country_code",
];

/// A `mysqldump` of a YOURLS database.
pub struct SqlDump {
    path: PathBuf,
    url_table: String,
    log_table: String,
}

impl SqlDump {
    /// `prefix` is YOURLS's `YOURLS_DB_PREFIX` (`yourls_`).
    pub fn new(path: PathBuf, prefix: &str) -> Self {
        Self {
            path,
            url_table: format!("{prefix}url"),
            log_table: format!("{prefix}log"),
        }
    }
}

#[async_trait::async_trait]
impl Source for SqlDump {
    fn name(&self) -> &'static str {
        "yourls-sql"
    }

    async fn read(&mut self, sink: &mut dyn Sink) -> Result<(), SourceError> {
        let shown = self.path.display().to_string();
        let file = super::source::open_file(&self.path)?;
        read_dump(file, &shown, &self.url_table, &self.log_table, sink)
    }
}

/// YOURLS's two tables exported as CSV (phpMyAdmin's or MySQL Workbench's
/// export, `SELECT ... INTO OUTFILE` with a header added): `yourls_url` in
/// one file, `yourls_log` optionally in another, each with its header row
/// naming the columns (any order; `,` or `;` between them; `NULL` for an
/// empty title).
pub struct CsvExport {
    urls: PathBuf,
    visits: Option<PathBuf>,
}

impl CsvExport {
    pub fn new(urls: PathBuf, visits: Option<PathBuf>) -> Self {
        Self { urls, visits }
    }
}

#[async_trait::async_trait]
impl Source for CsvExport {
    fn name(&self) -> &'static str {
        "yourls-csv"
    }

    async fn read(&mut self, sink: &mut dyn Sink) -> Result<(), SourceError> {
        let open = |p: &PathBuf| super::source::open_file(p);
        let shown = self.urls.display().to_string();
        read_csv(open(&self.urls)?, &shown, &["keyword", "url"], |row| {
            sink.link(url_row(row).map_err(unplaced)?)
        })?;
        if let Some(v) = &self.visits {
            let shown = v.display().to_string();
            read_csv(open(v)?, &shown, &["shorturl", "click_time"], |row| {
                sink.visit(log_row(row).map_err(unplaced)?)
            })?;
        }
        Ok(())
    }
}

/// A row's problem, placed by [`read_csv`] at the record's line.
fn unplaced(problem: String) -> SourceError {
    SourceError::Format {
        place: String::new(),
        problem,
    }
}

/// Reads one CSV table: its header (which must name `needed`), then each
/// record as a [`Row`], numbered by the line it starts on in errors.
fn read_csv(
    mut input: impl BufRead,
    shown: &str,
    needed: &[&str],
    mut each: impl FnMut(&Row<'_>) -> Result<(), SourceError>,
) -> Result<(), SourceError> {
    let at = |line: u64, problem: String| SourceError::Format {
        place: format!("{shown}:{line}"),
        problem,
    };
    let mut line_no = 0u64;
    let mut columns: Option<Vec<String>> = None;
    let mut sep = b',';
    let mut text = String::new();
    loop {
        let start = line_no + 1;
        let Some(fields) = csv_record(&mut input, &mut line_no, &mut text, sep)
            .map_err(|e| match e {
                CsvError::Io(error) => SourceError::Io {
                    path: shown.to_owned(),
                    error,
                },
                CsvError::Unclosed => at(
                    start,
                    "the file ends inside a quoted field begun here: it is truncated; nothing was imported".into(),
                ),
            })?
        else {
            break;
        };
        let Some(cols) = &columns else {
            if !text.contains(',') && text.contains(';') {
                sep = b';';
            }
            let header = if sep == b',' {
                fields
            } else {
                text.trim_end_matches(['\r', '\n'])
                    .split(';')
                    .map(|f| f.trim_matches('"').to_owned())
                    .collect()
            };
            let header: Vec<String> = header
                .iter()
                .map(|h| h.trim().trim_start_matches('\u{feff}').to_ascii_lowercase())
                .collect();
            if let Some(missing) = needed.iter().find(|n| !header.iter().any(|h| h == *n)) {
                return Err(at(
                    start,
                    format!(
                        "the header has no column {missing}: a CSV export of the YOURLS table with its header row is expected"
                    ),
                ));
            }
            columns = Some(header);
            continue;
        };
        if fields.len() == 1 && fields[0].is_empty() {
            continue;
        }
        if fields.len() != cols.len() {
            return Err(at(
                start,
                format!("{} fields, the header has {}", fields.len(), cols.len()),
            ));
        }
        let values: Vec<Option<String>> = fields
            .into_iter()
            .map(|f| (f != "NULL").then_some(f))
            .collect();
        each(&Row {
            columns: cols,
            values: &values,
        })
        .map_err(|e| match e {
            SourceError::Format { place, problem } if place.is_empty() => at(start, problem),
            other => other,
        })?;
    }
    if columns.is_none() {
        return Err(at(
            1,
            "empty: a CSV export with its header row is expected".into(),
        ));
    }
    Ok(())
}

enum CsvError {
    Io(std::io::Error),
    Unclosed,
}

/// One CSV record (RFC 4180: `"` quotes, `""` inside them, line breaks
/// inside quotes), reading as many lines as it spans; `None` at the end.
/// `text` keeps the record's raw text (the header's separator is told from
/// it).
fn csv_record(
    input: &mut impl BufRead,
    line_no: &mut u64,
    text: &mut String,
    sep: u8,
) -> Result<Option<Vec<String>>, CsvError> {
    text.clear();
    let mut fields = Vec::new();
    let mut field = Vec::new();
    let mut quoted = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = input.read_until(b'\n', &mut line).map_err(CsvError::Io)?;
        if n == 0 {
            if quoted {
                return Err(CsvError::Unclosed);
            }
            if text.is_empty() {
                return Ok(None);
            }
            fields.push(String::from_utf8_lossy(&field).into_owned());
            return Ok(Some(fields));
        }
        *line_no += 1;
        text.push_str(&String::from_utf8_lossy(&line));
        let mut i = 0;
        while i < line.len() {
            let b = line[i];
            if quoted {
                if b == b'"' {
                    if line.get(i + 1) == Some(&b'"') {
                        field.push(b'"');
                        i += 1;
                    } else {
                        quoted = false;
                    }
                } else {
                    field.push(b);
                }
            } else if b == b'"' {
                quoted = true;
            } else if b == sep {
                fields.push(String::from_utf8_lossy(&field).into_owned());
                field.clear();
            } else if b == b'\n' || (b == b'\r' && line.get(i + 1) == Some(&b'\n')) {
                fields.push(String::from_utf8_lossy(&field).into_owned());
                return Ok(Some(fields));
            } else {
                field.push(b);
            }
            i += 1;
        }
        if !quoted {
            fields.push(String::from_utf8_lossy(&field).into_owned());
            return Ok(Some(fields));
        }
    }
}

/// Reads a dump from `input` (named `shown` in errors) into `sink`.
pub fn read_dump(
    input: impl BufRead,
    shown: &str,
    url_table: &str,
    log_table: &str,
    sink: &mut dyn Sink,
) -> Result<(), SourceError> {
    let mut statements = Statements::new(input);
    let mut url_columns: Vec<String> = URL_COLUMNS.iter().map(|c| c.to_string()).collect();
    let mut log_columns: Vec<String> = LOG_COLUMNS.iter().map(|c| c.to_string()).collect();
    let mut saw_url_table = false;
    let format = |line: u64, problem: String| SourceError::Format {
        place: format!("{shown}:{line}"),
        problem,
    };
    while let Some((line, stmt)) = statements.next().map_err(|e| match e {
        StatementError::Io(error) => SourceError::Io {
            path: shown.to_owned(),
            error,
        },
        StatementError::Truncated(line) => format(
            line,
            "the dump ends inside the statement begun here: it is truncated; nothing was imported"
                .into(),
        ),
        StatementError::NotUtf8(line) => format(line, "not UTF-8".into()),
    })? {
        let text = stmt.trim_start();
        if let Some((table, columns)) = create_table(text) {
            if table == url_table {
                saw_url_table = true;
                url_columns = columns;
            } else if table == log_table {
                log_columns = columns;
            }
            continue;
        }
        let Some(insert) = Insert::parse(text) else {
            continue;
        };
        let is_url = insert.table == url_table;
        if !is_url && insert.table != log_table {
            continue;
        }
        saw_url_table |= is_url;
        let columns = match (&insert.columns, is_url) {
            (Some(c), _) => c.clone(),
            (None, true) => url_columns.clone(),
            (None, false) => log_columns.clone(),
        };
        let mut rows = Tuples::new(insert.values);
        while let Some(row) = rows.next_row().map_err(|p| format(line, p))? {
            let row = Row {
                columns: &columns,
                values: &row,
            };
            if is_url {
                sink.link(url_row(&row).map_err(|p| format(line, p))?)?;
            } else {
                sink.visit(log_row(&row).map_err(|p| format(line, p))?)?;
            }
        }
    }
    if statements.dump_header && !statements.dump_completed {
        return Err(format(
            statements.line,
            "the dump has no closing `-- Dump completed` line: it is truncated; nothing was imported"
                .into(),
        ));
    }
    if !saw_url_table {
        return Err(SourceError::Format {
            place: shown.to_owned(),
            problem: format!(
                "no table {url_table} in the dump (a YOURLS dump has it; --table-prefix names another prefix)"
            ),
        });
    }
    Ok(())
}

/// One row of values by its table's column names.
struct Row<'a> {
    columns: &'a [String],
    values: &'a [Option<String>],
}

impl Row<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.columns
            .iter()
            .position(|c| c == name)
            .and_then(|i| self.values.get(i))
            .and_then(|v| v.as_deref())
    }
}

fn url_row(row: &Row<'_>) -> Result<SourceLink, String> {
    let get = |n| row.get(n);
    let code = get("keyword").ok_or("a yourls_url row without a keyword")?;
    let url = get("url").ok_or("a yourls_url row without a url")?;
    Ok(SourceLink {
        code: code.to_owned(),
        url: url.to_owned(),
        title: get("title").map(str::to_owned),
        created: get("timestamp").and_then(sql_time),
        ..SourceLink::default()
    })
}

fn log_row(row: &Row<'_>) -> Result<SourceVisit, String> {
    let get = |n| row.get(n);
    let code = get("shorturl").ok_or("a yourls_log row without a shorturl")?;
    let time = get("click_time")
        .and_then(sql_time)
        .ok_or("a yourls_log row without a valid click_time")?;
    let id = get("click_id").unwrap_or_default();
    Ok(SourceVisit {
        code: code.to_owned(),
        domain: None,
        time,
        referrer: get("referrer")
            .filter(|r| !r.is_empty() && *r != "direct")
            .map(str::to_owned),
        user_agent: get("user_agent")
            .filter(|u| !u.is_empty())
            .map(str::to_owned),
        address: get("ip_address").and_then(|a| a.trim().parse().ok()),
        country: get("country_code")
            .filter(|c| c.len() == 2)
            .map(str::to_owned),
        source_id: if id.is_empty() {
            format!("{code} {time}")
        } else {
            id.to_owned()
        },
    })
}

/// `2019-03-04 05:06:07` (MySQL's DATETIME and TIMESTAMP), as UTC.
fn sql_time(s: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(s.trim(), "%Y-%m-%d %H:%M:%S")
        .ok()
        .map(|t| t.and_utc())
}

/// `CREATE TABLE `name` (`col` ..., ...)`: the table and its column names.
fn create_table(stmt: &str) -> Option<(String, Vec<String>)> {
    let rest = strip_word(stmt, "CREATE")?;
    let rest = strip_word(rest, "TABLE")?;
    let rest = strip_word(rest, "IF")
        .and_then(|r| strip_word(r, "NOT"))
        .and_then(|r| strip_word(r, "EXISTS"))
        .unwrap_or(rest);
    let (table, rest) = identifier(rest)?;
    let body = rest.trim_start().strip_prefix('(')?;
    let columns = body
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let name = l.strip_prefix('`')?;
            Some(name[..name.find('`')?].to_owned())
        })
        .collect();
    Some((table, columns))
}

/// An `INSERT [IGNORE] INTO t [(cols)] VALUES ...` statement's parts.
struct Insert<'a> {
    table: String,
    columns: Option<Vec<String>>,
    values: &'a str,
}

impl<'a> Insert<'a> {
    fn parse(stmt: &'a str) -> Option<Self> {
        let rest = strip_word(stmt, "INSERT").or_else(|| strip_word(stmt, "REPLACE"))?;
        let rest = strip_word(rest, "IGNORE").unwrap_or(rest);
        let rest = strip_word(rest, "INTO")?;
        let (table, rest) = identifier(rest)?;
        let rest = rest.trim_start();
        let (columns, rest) = match rest.strip_prefix('(') {
            Some(list) => {
                let end = list.find(')')?;
                let cols = list[..end]
                    .split(',')
                    .map(|c| c.trim().trim_matches('`').to_owned())
                    .collect();
                (Some(cols), &list[end + 1..])
            }
            None => (None, rest),
        };
        let values = strip_word(rest, "VALUES").or_else(|| strip_word(rest, "VALUE"))?;
        Some(Self {
            table,
            columns,
            values,
        })
    }
}

/// `rest` after `word` (any case) and the blanks around it.
fn strip_word<'a>(s: &'a str, word: &str) -> Option<&'a str> {
    let s = s.trim_start();
    let head = s.get(..word.len())?;
    if !head.eq_ignore_ascii_case(word) {
        return None;
    }
    let rest = &s[word.len()..];
    match rest.chars().next() {
        Some(c) if c.is_alphanumeric() || c == '_' => None,
        _ => Some(rest.trim_start()),
    }
}

/// A table name, backquoted or bare (a `db`.`table` name by its table).
fn identifier(s: &str) -> Option<(String, &str)> {
    let s = s.trim_start();
    let (name, rest) = if let Some(q) = s.strip_prefix('`') {
        let end = q.find('`')?;
        (q[..end].to_owned(), &q[end + 1..])
    } else {
        let end = s
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(s.len());
        (s[..end].to_owned(), &s[end..])
    };
    if name.is_empty() {
        return None;
    }
    match rest.strip_prefix('.') {
        Some(rest) => identifier(rest),
        None => Some((name, rest)),
    }
}

/// The rows of a VALUES list: `(v, ...), (v, ...)`, each value `NULL`, a
/// bare number or a quoted string with MySQL's escapes.
struct Tuples<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Tuples<'a> {
    fn new(values: &'a str) -> Self {
        Self {
            s: values.as_bytes(),
            at: 0,
        }
    }

    fn skip_blank(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn next_row(&mut self) -> Result<Option<Vec<Option<String>>>, String> {
        self.skip_blank();
        if self.s.get(self.at) == Some(&b',') {
            self.at += 1;
            self.skip_blank();
        }
        match self.s.get(self.at) {
            None => return Ok(None),
            Some(b'(') => self.at += 1,
            Some(_) => return Err("a VALUES list that is not (...), (...)".into()),
        }
        let mut row = Vec::new();
        loop {
            self.skip_blank();
            row.push(self.value()?);
            self.skip_blank();
            match self.s.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b')') => {
                    self.at += 1;
                    return Ok(Some(row));
                }
                _ => return Err("a row of VALUES that does not end in ')'".into()),
            }
        }
    }

    fn value(&mut self) -> Result<Option<String>, String> {
        let quote = match self.s.get(self.at) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => {
                let start = self.at;
                while self.at < self.s.len() && !matches!(self.s[self.at], b',' | b')') {
                    self.at += 1;
                }
                let bare = String::from_utf8_lossy(&self.s[start..self.at])
                    .trim()
                    .to_owned();
                return Ok((!bare.eq_ignore_ascii_case("NULL")).then_some(bare));
            }
        };
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let Some(&b) = self.s.get(self.at) else {
                return Err("a string that does not end".into());
            };
            self.at += 1;
            match b {
                b'\\' => {
                    let Some(&e) = self.s.get(self.at) else {
                        return Err("a string that does not end".into());
                    };
                    self.at += 1;
                    let byte = match e {
                        b'0' => 0,
                        b'b' => 8,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'Z' => 26,
                        // `\%` and `\_` keep their backslash in MySQL.
                        b'%' | b'_' => {
                            out.push(b'\\');
                            e
                        }
                        other => other,
                    };
                    out.push(byte);
                }
                b if b == quote => {
                    if self.s.get(self.at) == Some(&quote) {
                        self.at += 1;
                        out.push(quote);
                    } else {
                        break;
                    }
                }
                b => out.push(b),
            }
        }
        String::from_utf8(out)
            .map(Some)
            .map_err(|_| "a string that is not UTF-8".into())
    }
}

enum StatementError {
    Io(std::io::Error),
    /// The input ended inside the statement begun on this line.
    Truncated(u64),
    NotUtf8(u64),
}

/// A dump split into statements at each `;` outside strings and comments,
/// comments dropped.
struct Statements<R> {
    input: R,
    /// The line the reader is on.
    line: u64,
    /// The file begins as mysqldump's and MariaDB's do (`-- MySQL dump`).
    dump_header: bool,
    dump_completed: bool,
    started: bool,
}

impl<R: BufRead> Statements<R> {
    fn new(input: R) -> Self {
        Self {
            input,
            line: 1,
            dump_header: false,
            dump_completed: false,
            started: false,
        }
    }

    /// The next statement and the line it begins on.
    fn next(&mut self) -> Result<Option<(u64, String)>, StatementError> {
        let mut stmt: Vec<u8> = Vec::new();
        let mut begun: Option<u64> = None;
        let mut quote: Option<u8> = None;
        let mut escaped = false;
        let mut line_buf = Vec::new();
        loop {
            line_buf.clear();
            let n = self
                .input
                .read_until(b'\n', &mut line_buf)
                .map_err(StatementError::Io)?;
            if n == 0 {
                let blank = stmt.iter().all(u8::is_ascii_whitespace);
                return match begun {
                    Some(line) if !blank || quote.is_some() => Err(StatementError::Truncated(line)),
                    _ => Ok(None),
                };
            }
            let this_line = self.line;
            self.line += 1;
            if quote.is_none() && stmt.iter().all(u8::is_ascii_whitespace) {
                let trimmed = line_buf.trim_ascii_start();
                if trimmed.starts_with(b"--") || trimmed.starts_with(b"#") {
                    if !self.started
                        && (trimmed.starts_with(b"-- MySQL dump")
                            || trimmed.starts_with(b"-- MariaDB dump"))
                    {
                        self.dump_header = true;
                    }
                    if trimmed.starts_with(b"-- Dump completed") {
                        self.dump_completed = true;
                    }
                    self.started = true;
                    continue;
                }
                if trimmed.starts_with(b"/*") && line_buf.trim_ascii_end().ends_with(b"*/;") {
                    // mysqldump's `/*!40101 SET ... */;` lines.
                    self.started = true;
                    continue;
                }
            }
            self.started = true;
            for &b in &line_buf {
                if begun.is_none() && !b.is_ascii_whitespace() {
                    begun = Some(this_line);
                }
                match quote {
                    Some(q) => {
                        if escaped {
                            escaped = false;
                        } else if b == b'\\' {
                            escaped = true;
                        } else if b == q {
                            quote = None;
                        }
                        stmt.push(b);
                    }
                    None => match b {
                        b'\'' | b'"' | b'`' => {
                            quote = Some(b);
                            stmt.push(b);
                        }
                        b';' => {
                            let line = begun.unwrap_or(this_line);
                            // The rest of this line is read with the next
                            // statement: mysqldump ends each at a line end.
                            return String::from_utf8(stmt)
                                .map(|s| Some((line, s)))
                                .map_err(|_| StatementError::NotUtf8(line));
                        }
                        _ => stmt.push(b),
                    },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Kept {
        links: Vec<SourceLink>,
        visits: Vec<SourceVisit>,
    }

    impl Sink for Kept {
        fn link(&mut self, link: SourceLink) -> Result<(), SourceError> {
            self.links.push(link);
            Ok(())
        }
        fn visit(&mut self, visit: SourceVisit) -> Result<(), SourceError> {
            self.visits.push(visit);
            Ok(())
        }
    }

    fn read(dump: &str) -> Result<Kept, SourceError> {
        let mut kept = Kept::default();
        read_dump(
            dump.as_bytes(),
            "dump.sql",
            "yourls_url",
            "yourls_log",
            &mut kept,
        )?;
        Ok(kept)
    }

    const DUMP: &str = "-- MySQL dump 10.13  Distrib 8.0.36\n\
/*!40101 SET NAMES utf8mb4 */;\n\
DROP TABLE IF EXISTS `yourls_log`;\n\
CREATE TABLE `yourls_log` (\n  `click_id` int NOT NULL AUTO_INCREMENT,\n  `click_time` datetime NOT NULL,\n  `shorturl` varchar(100) NOT NULL,\n  `referrer` varchar(200) NOT NULL,\n  `user_agent` varchar(255) NOT NULL,\n  `ip_address` varchar(41) NOT NULL,\n  `country_code` char(2) NOT NULL,\n  PRIMARY KEY (`click_id`)\n) ENGINE=InnoDB;\n\
INSERT INTO `yourls_log` VALUES (1,'2019-05-01 10:00:00','ABC','direct','Mozilla/5.0 (X; \\'q\\')','203.0.113.7','IE'),(2,'2019-05-02 11:00:00','ABC','https://ref.example/a;b','','::1','');\n\
CREATE TABLE `yourls_url` (\n  `keyword` varchar(100) NOT NULL DEFAULT '',\n  `url` text NOT NULL,\n  `title` text,\n  `timestamp` timestamp NOT NULL,\n  `ip` varchar(41) NOT NULL,\n  `clicks` int unsigned NOT NULL\n);\n\
INSERT INTO `yourls_url` VALUES ('ABC','https://e.example/ü#frag','It''s a \\\"title\\\"','2018-01-02 03:04:05','1.2.3.4',2),('x.y','https://e.example/',NULL,'2018-01-02 03:04:05','1.2.3.4',0);\n\
-- Dump completed on 2026-11-28 12:00:00\n";

    #[test]
    fn a_mysqldump_is_read_with_its_escapes() {
        let kept = read(DUMP).map_err(|e| e.to_string()).expect("read");
        assert_eq!(kept.links.len(), 2);
        let l = &kept.links[0];
        assert_eq!(l.code, "ABC");
        assert_eq!(l.url, "https://e.example/ü#frag");
        assert_eq!(l.title.as_deref(), Some("It's a \"title\""));
        assert_eq!(
            l.created.map(|t| t.to_rfc3339()),
            Some("2018-01-02T03:04:05+00:00".into())
        );
        assert_eq!(kept.links[1].code, "x.y");
        assert_eq!(kept.links[1].title, None);
        assert_eq!(kept.visits.len(), 2);
        let v = &kept.visits[0];
        assert_eq!(v.source_id, "1");
        assert_eq!(v.referrer, None);
        assert_eq!(v.user_agent.as_deref(), Some("Mozilla/5.0 (X; 'q')"));
        assert_eq!(v.country.as_deref(), Some("IE"));
        assert_eq!(
            kept.visits[1].referrer.as_deref(),
            Some("https://ref.example/a;b")
        );
        assert_eq!(kept.visits[1].user_agent, None);
    }

    #[test]
    fn csv_exports_of_both_tables_are_read() {
        let urls = "keyword,url,title,timestamp,ip,clicks\n\
ABC,\"https://e.example/a,b#f\",\"Say \"\"hi\"\"\nthere\",2018-01-02 03:04:05,1.2.3.4,2\n\
x.y,https://e.example/,NULL,2018-01-02 03:04:05,1.2.3.4,0\n";
        let log = "click_id;click_time;shorturl;referrer;user_agent;ip_address;country_code\r\n\
1;2019-05-01 10:00:00;ABC;direct;Mozilla/5.0;203.0.113.7;IE\r\n";
        let mut kept = Kept::default();
        read_csv(urls.as_bytes(), "u.csv", &["keyword", "url"], |r| {
            kept.links.push(url_row(r).map_err(unplaced)?);
            Ok(())
        })
        .map_err(|e| e.to_string())
        .expect("urls");
        read_csv(log.as_bytes(), "l.csv", &["shorturl", "click_time"], |r| {
            kept.visits.push(log_row(r).map_err(unplaced)?);
            Ok(())
        })
        .map_err(|e| e.to_string())
        .expect("log");
        assert_eq!(kept.links[0].url, "https://e.example/a,b#f");
        assert_eq!(kept.links[0].title.as_deref(), Some("Say \"hi\"\nthere"));
        assert_eq!(kept.links[1].title, None);
        assert_eq!(kept.visits[0].source_id, "1");
        assert_eq!(kept.visits[0].address, "203.0.113.7".parse().ok());
        let e = read_csv("url\nx\n".as_bytes(), "u.csv", &["keyword", "url"], |_| {
            Ok(())
        })
        .expect_err("no keyword")
        .to_string();
        assert!(e.contains("no column keyword"), "{e}");
        let e = read_csv(&urls.as_bytes()[..60], "u.csv", &["keyword", "url"], |_| {
            Ok(())
        })
        .expect_err("cut")
        .to_string();
        assert!(e.contains("truncated"), "{e}");
    }

    #[test]
    fn a_truncated_dump_is_refused() {
        let cut = &DUMP[..DUMP.find("('x.y'").expect("row")];
        let e = read(cut).err().expect("truncated").to_string();
        assert!(e.contains("truncated"), "{e}");
        let no_end = &DUMP[..DUMP.find("-- Dump completed").expect("end")];
        let e = read(no_end).err().expect("truncated").to_string();
        assert!(e.contains("Dump completed"), "{e}");
    }

    #[test]
    fn a_column_list_and_another_prefix_are_read() {
        let dump = "INSERT INTO `t_url` (`url`, `keyword`) VALUES ('https://e.example/','k');\n";
        let mut kept = Kept::default();
        read_dump(dump.as_bytes(), "d", "t_url", "t_log", &mut kept)
            .map_err(|e| e.to_string())
            .expect("read");
        assert_eq!(kept.links[0].code, "k");
        let e = read(dump).err().expect("no table").to_string();
        assert!(e.contains("--table-prefix"), "{e}");
    }
}

//! Shlink's CSV export of short URLs (`--from shlink-csv`): the web client's
//! "Export" button, `short_urls.csv`.
//!
//! Written against shlinkio/shlink-web-component v0.19.2 (f790206),
//! `ExportShortUrlsBtn.tsx` and `ReportExporter.ts`: json2csv's default
//! output of `createdAt, domain, shortCode, shortUrl, longUrl, title, tags,
//! visits`, every string quoted, tags joined with `|`. Quirks: `shortCode`
//! is the short URL's path, so a code with characters a URL path escapes
//! arrives percent-encoded (decoded here, back to Shlink's own code); the
//! domain is the short URL's host even for Shlink's default domain; there
//! are no validity dates, visit limits or visits one by one, only their
//! number, which becomes the link's imported total. The shlink-importer's
//! own CSV columns (`longUrl`, `shortCode`, `domain`, `title`, `tags`) read
//! the same way.

use std::io::BufRead;
use std::path::PathBuf;

use chrono::{DateTime, Utc};

use super::csv_rows::{Header, Row, Rows};
use super::source::{LinksFile, SourceError, SourceLink};

/// Reads links from `input`; `place` names it in errors.
pub fn read_links(
    input: impl BufRead,
    place: &str,
    each: &mut dyn FnMut(SourceLink) -> Result<(), SourceError>,
) -> Result<(), SourceError> {
    let mut rows = Rows::new(input, place);
    let Some(head) = rows.next_row()? else {
        return Err(SourceError::Format {
            place: place.into(),
            problem: "empty file: Shlink's export starts with a header line".into(),
        });
    };
    let header = Header::new(&head);
    let columns = Columns {
        code: header.find(&["shortCode"]),
        short_url: header.find(&["shortUrl"]),
        url: header
            .find(&["longUrl"])
            .ok_or_else(|| SourceError::Format {
                place: format!("{place} line {}", head.line),
                problem: "no longUrl column: this is not Shlink's CSV export of short URLs".into(),
            })?,
        domain: header.find(&["domain"]),
        title: header.find(&["title"]),
        tags: header.find(&["tags"]),
        created: header.find(&["createdAt", "dateCreated"]),
        visits: header.find(&["visits", "visitsCount"]),
    };
    if columns.code.is_none() && columns.short_url.is_none() {
        return Err(SourceError::Format {
            place: format!("{place} line {}", head.line),
            problem: "no shortCode or shortUrl column: the codes are missing".into(),
        });
    }
    while let Some(row) = rows.next_row()? {
        each(columns.link(&row).map_err(|problem| SourceError::Format {
            place: format!("{place} line {}", row.line),
            problem,
        })?)?;
    }
    Ok(())
}

struct Columns {
    code: Option<usize>,
    short_url: Option<usize>,
    url: usize,
    domain: Option<usize>,
    title: Option<usize>,
    tags: Option<usize>,
    created: Option<usize>,
    visits: Option<usize>,
}

impl Columns {
    fn link(&self, row: &Row) -> Result<SourceLink, String> {
        let short_url = row.non_empty(self.short_url).map(split_short_url);
        let code = match row.non_empty(self.code) {
            Some(code) => code.to_owned(),
            None => short_url
                .as_ref()
                .map(|(_, path)| path.clone())
                .filter(|p| !p.is_empty())
                .ok_or("no short code")?,
        };
        let url = row.non_empty(Some(self.url)).ok_or("no longUrl")?;
        let domain = row
            .non_empty(self.domain)
            .map(str::to_owned)
            .or_else(|| short_url.map(|(host, _)| host).filter(|h| !h.is_empty()));
        let created = match row.non_empty(self.created) {
            None => None,
            Some(t) => Some(
                DateTime::parse_from_rfc3339(t)
                    .map_err(|_| format!("createdAt {t:?} is not an ISO 8601 time"))?
                    .with_timezone(&Utc),
            ),
        };
        let total_clicks = match row.non_empty(self.visits) {
            None => None,
            Some(n) => Some(
                n.parse::<u64>()
                    .map_err(|_| format!("visits {n:?} is not a count"))?,
            ),
        };
        Ok(SourceLink {
            code: percent_decoded(&code),
            domain,
            url: url.to_owned(),
            title: row.non_empty(self.title).map(str::to_owned),
            tags: row
                .non_empty(self.tags)
                .map(|t| {
                    let sep = if t.contains('|') { '|' } else { ',' };
                    t.split(sep)
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            created,
            total_clicks,
            ..SourceLink::default()
        })
    }
}

/// `https://host/path` as (host, path without its slash).
fn split_short_url(url: &str) -> (String, String) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let path = path.split(['?', '#']).next().unwrap_or("");
    (host.to_ascii_lowercase(), percent_decoded(path))
}

/// `%XX` escapes decoded, when they decode to UTF-8; the text as it is
/// otherwise.
pub fn percent_decoded(text: &str) -> String {
    if !text.contains('%') {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// The export file at `path` as a source: its links read by [`read_links`].
pub fn source(path: impl Into<PathBuf>) -> LinksFile {
    LinksFile::new("shlink-csv", path, |input, place, each| {
        read_links(input, place, each)
    })
}

//! Dub's CSV export of links (`--from dub`): the Links page's "Export".
//!
//! Written against dubinc/dub at 1de955f (August 2026):
//! `app/api/links/export/route.ts`, `formatLinksForExport` and
//! `exportLinksColumns` (`lib/zod/schemas/links.ts`): the header is the
//! chosen columns' labels in a fixed order, `Short link`, `Destination
//! URL`, `Clicks`, `Leads`, `Conversions`, `Revenue`, `Created at`, `Link
//! ID`, `Updated at`, `Tags`, `Archived` (the first three and `Created at`
//! by default), written by json-2-csv. Quirks: there is no key, domain,
//! title or expiry column: the key and domain are the short link's
//! (`https://{domain}/{key}`, the key in Unicode, not percent-encoded; the
//! domain's root, key `_root`, has no key and is skipped); tags are joined
//! with `, `; `Archived` is `Yes`/`No`; a text starting with `=`, `+`, `-`,
//! `@` is written with a `'` before it against spreadsheet formulas, taken
//! off here.

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
            problem: "empty file: Dub's export starts with a header line".into(),
        });
    };
    let header = Header::new(&head);
    let missing = |what: &str| SourceError::Format {
        place: format!("{place} line {}", head.line),
        problem: format!("no {what} column: this is not Dub's CSV export of links"),
    };
    let columns = Columns {
        link: header
            .find(&["Short link", "shortLink", "link"])
            .ok_or_else(|| missing("Short link"))?,
        url: header
            .find(&["Destination URL", "url"])
            .ok_or_else(|| missing("Destination URL"))?,
        clicks: header.find(&["Clicks"]),
        created: header.find(&["Created at", "createdAt"]),
        tags: header.find(&["Tags"]),
        archived: header.find(&["Archived"]),
    };
    while let Some(row) = rows.next_row()? {
        let link = columns.link(&row).map_err(|problem| SourceError::Format {
            place: format!("{place} line {}", row.line),
            problem,
        })?;
        if let Some(link) = link {
            each(link)?;
        }
    }
    Ok(())
}

struct Columns {
    link: usize,
    url: usize,
    clicks: Option<usize>,
    created: Option<usize>,
    tags: Option<usize>,
    archived: Option<usize>,
}

impl Columns {
    /// `None` for a domain's root link, which has no key to keep.
    fn link(&self, row: &Row) -> Result<Option<SourceLink>, String> {
        let short = row.non_empty(Some(self.link)).ok_or("no short link")?;
        let rest = short.split_once("://").map_or(short, |(_, r)| r);
        let (domain, key) = rest.split_once('/').unwrap_or((rest, ""));
        if key.is_empty() || key == "_root" {
            return Ok(None);
        }
        let url = row
            .non_empty(Some(self.url))
            .map(unformula)
            .ok_or("no destination URL")?;
        let created = match row.non_empty(self.created) {
            None => None,
            Some(t) => Some(
                DateTime::parse_from_rfc3339(t)
                    .map_err(|_| format!("Created at {t:?} is not an ISO 8601 time"))?
                    .with_timezone(&Utc),
            ),
        };
        let clicks = match row.non_empty(self.clicks) {
            None => 0,
            Some(n) => n
                .parse::<u64>()
                .map_err(|_| format!("Clicks {n:?} is not a count"))?,
        };
        Ok(Some(SourceLink {
            code: key.to_owned(),
            domain: Some(domain.to_ascii_lowercase()),
            url: url.to_owned(),
            tags: row
                .non_empty(self.tags)
                .map(|t| {
                    unformula(t)
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            created,
            inactive: row.non_empty(self.archived) == Some("Yes"),
            total_clicks: Some(clicks),
            ..SourceLink::default()
        }))
    }
}

/// The text without the `'` Dub puts before one a spreadsheet would read as
/// a formula.
fn unformula(text: &str) -> &str {
    match text.strip_prefix('\'') {
        Some(rest) if rest.starts_with(['=', '+', '-', '@', '\t', '\r', '\n']) => rest,
        _ => text,
    }
}

/// The export file at `path` as a source: its links read by [`read_links`].
pub fn source(path: impl Into<PathBuf>) -> LinksFile {
    LinksFile::new("dub", path, |input, place, each| {
        read_links(input, place, each)
    })
}

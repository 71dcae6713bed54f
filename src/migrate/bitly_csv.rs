//! Bitly's CSV export of links (`--from bitly`): the web app's "Export" of
//! the Links page.
//!
//! Bitly documents no header for this file (its help centre shows the
//! button, not the columns), so the columns are the ones a migration guide
//! that reads real exports names: URLR/urlr-docs at 1034cf7,
//! `migration/bitly.md` ("Link", "Custom Link", "Destination URL"), and the
//! bitlink fields of Bitly's API v4 under their display names ("Title",
//! "Date Created", "Tags", "Clicks"/"Engagements", "Archived"). Columns are
//! found by name, case, spaces and `_` aside, so the API's own names
//! (`link`, `custom_bitlinks`, `long_url`, `created_at`) read too. A row
//! with a custom link becomes one link a custom back-half (the clicks on
//! the first), one without keys its `bit.ly` back-half under no domain.

use std::io::BufRead;
use std::path::PathBuf;

use chrono::{NaiveDate, NaiveDateTime, Utc};

use super::bitly::{bitly_time, split_bitlink};
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
            problem: "empty file: Bitly's export starts with a header line".into(),
        });
    };
    let header = Header::new(&head);
    let at_head = || format!("{place} line {}", head.line);
    let columns = Columns {
        link: header.find(&["Link", "Bitlink", "Short link", "Short URL", "id"]),
        custom: header.find(&["Custom Link", "Custom Links", "custom_bitlinks", "Custom Bitlink"]),
        url: header
            .find(&["Destination URL", "Long URL", "long_url", "Original URL"])
            .ok_or_else(|| SourceError::Format {
                place: at_head(),
                problem: "no destination column (Destination URL or long_url): this is not Bitly's CSV export of links".into(),
            })?,
        title: header.find(&["Title"]),
        created: header.find(&["Date Created", "Created", "created_at", "Created Date"]),
        tags: header.find(&["Tags"]),
        clicks: header.find(&["Clicks", "Engagements", "Total Clicks", "total_clicks"]),
        archived: header.find(&["Archived", "Hidden"]),
    };
    if columns.link.is_none() && columns.custom.is_none() {
        return Err(SourceError::Format {
            place: at_head(),
            problem: "no Link or Custom Link column: the back-halves are missing".into(),
        });
    }
    while let Some(row) = rows.next_row()? {
        for link in columns.links(&row).map_err(|problem| SourceError::Format {
            place: format!("{place} line {}", row.line),
            problem,
        })? {
            each(link)?;
        }
    }
    Ok(())
}

struct Columns {
    link: Option<usize>,
    custom: Option<usize>,
    url: usize,
    title: Option<usize>,
    created: Option<usize>,
    tags: Option<usize>,
    clicks: Option<usize>,
    archived: Option<usize>,
}

impl Columns {
    fn links(&self, row: &Row) -> Result<Vec<SourceLink>, String> {
        let url = row.non_empty(Some(self.url)).ok_or("no destination URL")?;
        let customs: Vec<&str> = row
            .non_empty(self.custom)
            .map(|c| {
                c.split([',', ' ', '|', '\n'])
                    .map(|s| s.trim_matches(['[', ']', '"', '\'']))
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let shorts = if customs.is_empty() {
            vec![
                row.non_empty(self.link)
                    .ok_or("no link and no custom link")?,
            ]
        } else {
            customs
        };
        let created = match row.non_empty(self.created) {
            None => None,
            Some(t) => {
                Some(csv_time(t).ok_or_else(|| format!("created date {t:?} is not a time"))?)
            }
        };
        let clicks = match row.non_empty(self.clicks) {
            None => 0,
            Some(n) => n
                .replace(',', "")
                .parse::<u64>()
                .map_err(|_| format!("clicks {n:?} is not a count"))?,
        };
        let archived = row
            .non_empty(self.archived)
            .is_some_and(|a| matches!(a.to_ascii_lowercase().as_str(), "true" | "yes" | "1"));
        let tags: Vec<String> = row
            .non_empty(self.tags)
            .map(|t| {
                t.split([',', '|'])
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Ok(shorts
            .into_iter()
            .enumerate()
            .map(|(i, short)| {
                let (domain, code) = split_bitlink(short);
                SourceLink {
                    code,
                    domain,
                    url: url.to_owned(),
                    title: row.non_empty(self.title).map(str::to_owned),
                    tags: tags.clone(),
                    created,
                    inactive: archived,
                    total_clicks: Some(if i == 0 { clicks } else { 0 }),
                    ..SourceLink::default()
                }
            })
            .filter(|l| !l.code.is_empty())
            .collect())
    }
}

/// Bitly's API form, RFC 3339, or a spreadsheet's `YYYY-MM-DD hh:mm:ss` /
/// `YYYY-MM-DD`, read as UTC.
fn csv_time(text: &str) -> Option<chrono::DateTime<Utc>> {
    bitly_time(text)
        .or_else(|| {
            ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"]
                .iter()
                .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
                .map(|t| t.and_utc())
        })
        .or_else(|| {
            NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|t| t.and_utc())
        })
}

/// The export file at `path` as a source: its links read by [`read_links`].
pub fn source(path: impl Into<PathBuf>) -> LinksFile {
    LinksFile::new("bitly", path, |input, place, each| {
        read_links(input, place, each)
    })
}

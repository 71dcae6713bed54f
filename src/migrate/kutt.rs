//! Kutt's API v2 (`--from kutt`): the key's user's links, with their visit
//! counts as imported totals.
//!
//! Written against Kutt v3.2.3 (thedevs-network/kutt at fc832d7):
//! `GET /api/v2/links?limit=&skip=` with `X-API-KEY` answers `{total, limit,
//! skip, data}` (`links.handler.js` `get`), each link `sanitize.link`
//! (`utils.js`): `address` (the code), `target`, `description`,
//! `expire_in`, `password` (only whether one is set), `banned`,
//! `visit_count`, `created_at`, `domain` (null for Kutt's default domain).
//! Quirks: `limit` is capped at 50 a page; `expire_in` is not passed through
//! `parseDatetime`, so on SQLite it is `YYYY-MM-DD hh:mm:ss` in UTC without
//! a zone, on PostgreSQL an ISO time (both read); Kutt keeps no visits one
//! by one that its API shows, only the count.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::Value;

use super::api::{Api, Retries};
use super::source::{LeftOut, Sink, Source, SourceError, SourceLink};

/// Kutt's largest page.
const PAGE: u64 = 50;

/// One page: its links and Kutt's total of links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinksPage {
    pub links: Vec<SourceLink>,
    pub total: u64,
}

/// Reads `{"total": N, "data": [...]}`.
pub fn parse_links(body: &Value, now: DateTime<Utc>) -> Result<LinksPage, String> {
    let data = body
        .get("data")
        .and_then(Value::as_array)
        .ok_or("no \"data\" list in the answer")?;
    let total = body
        .get("total")
        .and_then(Value::as_u64)
        .ok_or("no \"total\" in the answer")?;
    let links = data
        .iter()
        .enumerate()
        .map(|(i, v)| link(v, now).map_err(|e| format!("link {}: {e}", i + 1)))
        .collect::<Result<_, _>>()?;
    Ok(LinksPage { links, total })
}

/// One Kutt link as [`SourceLink`].
pub fn link(v: &Value, now: DateTime<Utc>) -> Result<SourceLink, String> {
    let code = text(v, "address").ok_or("no address")?;
    let url = text(v, "target").ok_or_else(|| format!("{code}: no target"))?;
    let expires = match text(v, "expire_in") {
        None => None,
        Some(t) => {
            Some(kutt_time(t).ok_or_else(|| format!("{code}: expire_in {t:?} is not a time"))?)
        }
    };
    let mut link = SourceLink {
        code: code.to_owned(),
        domain: text(v, "domain").map(str::to_owned),
        url: url.to_owned(),
        notes: text(v, "description").map(str::to_owned),
        created: text(v, "created_at").and_then(kutt_time),
        expires,
        inactive: expires.is_some_and(|e| e <= now),
        total_clicks: Some(v.get("visit_count").and_then(count).unwrap_or(0)),
        ..SourceLink::default()
    };
    if v.get("password").and_then(Value::as_bool) == Some(true) {
        // Served without its password the destination would open to anyone
        // holding the tag: kept, but inactive until its owner decides.
        link.inactive = true;
        link.left_out.push(LeftOut {
            what: "password".into(),
            why: "qrtag has no password-protected links: imported inactive, so the destination is not opened to everyone".into(),
        });
    }
    if v.get("banned").and_then(Value::as_bool) == Some(true) {
        link.inactive = true;
        link.left_out.push(LeftOut {
            what: "banned".into(),
            why: "banned by Kutt's admin: imported inactive".into(),
        });
    }
    Ok(link)
}

/// `visit_count` as a number, or as `toLocaleString` text (`"1,234"`), which
/// Kutt's HTML views send.
fn count(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_str()
            .and_then(|s| s.replace(',', "").trim().parse().ok())
    })
}

/// An ISO time, or SQLite's `YYYY-MM-DD hh:mm:ss` read as UTC (Kutt writes
/// UTC there, `dateToUTC`).
pub fn kutt_time(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
    .map(|t| t.and_utc())
}

fn text<'a>(v: &'a Value, name: &str) -> Option<&'a str> {
    v.get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A running Kutt's API.
pub struct KuttApi {
    api: Api,
}

impl KuttApi {
    /// `base_url`: where Kutt answers (`https://kutt.example`); `api_key`
    /// from Kutt's settings page.
    pub fn new(base_url: &str, api_key: &str) -> Result<Self, SourceError> {
        Self::with_retries(base_url, api_key, Retries::default())
    }

    pub fn with_retries(
        base_url: &str,
        api_key: &str,
        retries: Retries,
    ) -> Result<Self, SourceError> {
        Ok(Self {
            api: Api::new(base_url, "x-api-key", api_key, retries)?,
        })
    }
}

#[async_trait::async_trait]
impl Source for KuttApi {
    fn name(&self) -> &'static str {
        "kutt"
    }

    async fn read(&mut self, sink: &mut dyn Sink) -> Result<(), SourceError> {
        let now = Utc::now();
        let mut skip = 0u64;
        loop {
            let path = format!("/api/v2/links?limit={PAGE}&skip={skip}");
            let body = self.api.get_json(&path).await?;
            let page = parse_links(&body, now)
                .map_err(|e| SourceError::Api(format!("{}{path}: {e}", self.api.base())))?;
            let read = page.links.len() as u64;
            for link in page.links {
                sink.link(link)?;
            }
            skip += read;
            if read == 0 || skip >= page.total {
                return Ok(());
            }
        }
    }
}

//! Shlink's REST API v3 (`--from shlink`): every short URL, then every visit
//! of each, oldest first.
//!
//! Written against Shlink v5.0.2 (shlinkio/shlink at 59c62a2c): a short URL
//! is `ShortUrl::toArray` (`shortCode`, `longUrl`, `dateCreated`, `tags`,
//! `meta.validSince/validUntil/maxVisits`, `domain`, `title`, `crawlable`,
//! `forwardQuery`, `visitsSummary.total`, `hasRedirectRules`), a visit
//! `Visit::jsonSerialize` (`referer`, `date`, `userAgent`, `visitLocation`,
//! `potentialBot`, `visitedUrl`); the paging (`page`, `itemsPerPage`,
//! `pagination.pagesCount`) and the newest-first visit order as
//! shlinkio/shlink-importer v5.7.0 reads them. Shlink v2 answers
//! `visitsCount` instead of `visitsSummary`, read too.
//!
//! Parsing is pure ([`parse_short_urls`], [`parse_visits`], [`VisitIds`]);
//! [`ShlinkApi`] only asks for the pages.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::api::{Api, Retries, encode};
use super::source::{LeftOut, Sink, Source, SourceError, SourceLink, SourceVisit};

/// Short URLs asked for a page (Shlink's importer asks 50).
const SHORT_URLS_PER_PAGE: u32 = 50;
/// Visits asked for a page (Shlink's importer asks 300).
const VISITS_PER_PAGE: u32 = 300;

/// One page of short URLs: each link with its visit count, and how many
/// pages there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShortUrlsPage {
    pub links: Vec<(SourceLink, u64)>,
    pub pages: u64,
}

/// Reads `{"shortUrls": {"data": [...], "pagination": {...}}}`; `now`
/// decides what is past its validity.
pub fn parse_short_urls(body: &Value, now: DateTime<Utc>) -> Result<ShortUrlsPage, String> {
    let list = body
        .get("shortUrls")
        .ok_or("no \"shortUrls\" in the answer")?;
    let data = list
        .get("data")
        .and_then(Value::as_array)
        .ok_or("no \"shortUrls.data\" list in the answer")?;
    let links = data
        .iter()
        .enumerate()
        .map(|(i, v)| short_url(v, now).map_err(|e| format!("short URL {}: {e}", i + 1)))
        .collect::<Result<_, _>>()?;
    Ok(ShortUrlsPage {
        links,
        pages: pages_count(list),
    })
}

fn pages_count(list: &Value) -> u64 {
    list.pointer("/pagination/pagesCount")
        .and_then(Value::as_u64)
        .unwrap_or(1)
}

/// One short URL as [`SourceLink`], with its visit count.
pub fn short_url(v: &Value, now: DateTime<Utc>) -> Result<(SourceLink, u64), String> {
    let code = text(v, "shortCode").ok_or("no shortCode")?;
    let url = text(v, "longUrl").ok_or_else(|| format!("{code}: no longUrl"))?;
    let visits = v
        .pointer("/visitsSummary/total")
        .or_else(|| v.get("visitsCount"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let meta = v.get("meta");
    let since = meta.and_then(|m| time(m, "validSince"));
    let until = meta.and_then(|m| time(m, "validUntil"));
    let max_visits = meta
        .and_then(|m| m.get("maxVisits"))
        .and_then(Value::as_u64);
    let mut link = SourceLink {
        code: code.to_owned(),
        domain: text(v, "domain").map(str::to_owned),
        url: url.to_owned(),
        title: text(v, "title").map(str::to_owned),
        tags: v
            .get("tags")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        created: time(v, "dateCreated"),
        expires: until,
        inactive: until.is_some_and(|u| u <= now),
        ..SourceLink::default()
    };
    if let Some(since) = since.filter(|s| *s > now) {
        link.inactive = true;
        link.left_out.push(LeftOut {
            what: "validSince".into(),
            why: format!(
                "qrtag has no start date: imported inactive, to be made active from {}",
                since.to_rfc3339()
            ),
        });
    }
    if let Some(max) = max_visits {
        let reached = visits >= max;
        link.inactive |= reached;
        link.left_out.push(LeftOut {
            what: "maxVisits".into(),
            why: if reached {
                format!("qrtag has no visit limit; its {max} visits are used up, so it is imported inactive")
            } else {
                format!("qrtag has no visit limit ({visits} of {max} used): it will answer every scan")
            },
        });
    }
    if v.get("crawlable").and_then(Value::as_bool) == Some(false) {
        link.left_out.push(LeftOut {
            what: "crawlable".into(),
            why: "qrtag serves no robots.txt, so crawlers are not asked to skip it".into(),
        });
    }
    if v.get("forwardQuery").and_then(Value::as_bool) == Some(false) {
        link.left_out.push(LeftOut {
            what: "forwardQuery".into(),
            why: "qrtag passes a scan's query on to the destination".into(),
        });
    }
    if v.get("hasRedirectRules").and_then(Value::as_bool) == Some(true) {
        link.left_out.push(LeftOut {
            what: "redirectRules".into(),
            why: "not read: set the link's rules again with qrtag's smart tags".into(),
        });
    }
    Ok((link, visits))
}

/// One page of visits, newest first as Shlink answers, and the page count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisitsPage {
    pub visits: Vec<RawVisit>,
    pub pages: u64,
}

/// A visit as Shlink has it, before it gets its [`VisitIds`] identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawVisit {
    pub time: DateTime<Utc>,
    pub referrer: Option<String>,
    pub user_agent: Option<String>,
    pub country: Option<String>,
    pub visited_url: Option<String>,
}

/// Reads `{"visits": {"data": [...], "pagination": {...}}}`.
pub fn parse_visits(body: &Value) -> Result<VisitsPage, String> {
    let list = body.get("visits").ok_or("no \"visits\" in the answer")?;
    let data = list
        .get("data")
        .and_then(Value::as_array)
        .ok_or("no \"visits.data\" list in the answer")?;
    let visits = data
        .iter()
        .enumerate()
        .map(|(i, v)| {
            Ok(RawVisit {
                time: time(v, "date").ok_or_else(|| format!("visit {}: no date", i + 1))?,
                referrer: text(v, "referer").map(str::to_owned),
                user_agent: text(v, "userAgent").map(str::to_owned),
                country: v
                    .get("visitLocation")
                    .and_then(|l| text(l, "countryCode"))
                    .filter(|c| c.len() == 2 && c.bytes().all(|b| b.is_ascii_alphabetic()))
                    .map(str::to_ascii_uppercase),
                visited_url: text(v, "visitedUrl").map(str::to_owned),
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(VisitsPage {
        visits,
        pages: pages_count(list),
    })
}

/// Gives each visit of one link a `source_id` that a second run gives it
/// again: Shlink's API shows no visit id, so the id is a hash of the link and
/// the visit's fields, numbered among identical visits of the same second.
/// Fed oldest first, a visit keeps its number when newer ones arrive.
pub struct VisitIds {
    link: String,
    second: Option<DateTime<Utc>>,
    seen: HashMap<[u8; 8], u32>,
}

impl VisitIds {
    pub fn new(code: &str, domain: Option<&str>) -> Self {
        Self {
            link: format!("{}/{}", domain.unwrap_or(""), code),
            second: None,
            seen: HashMap::new(),
        }
    }

    /// `raw` as a [`SourceVisit`] of `code`, with its identity.
    pub fn visit(&mut self, code: &str, domain: Option<&str>, raw: RawVisit) -> SourceVisit {
        if self.second != Some(raw.time) {
            self.second = Some(raw.time);
            self.seen.clear();
        }
        let mut hash = Sha256::new();
        for part in [
            self.link.as_str(),
            &raw.time.to_rfc3339(),
            raw.referrer.as_deref().unwrap_or(""),
            raw.user_agent.as_deref().unwrap_or(""),
            raw.country.as_deref().unwrap_or(""),
            raw.visited_url.as_deref().unwrap_or(""),
        ] {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        let digest = hash.finalize();
        let mut key = [0u8; 8];
        key.copy_from_slice(&digest[..8]);
        let n = self.seen.entry(key).or_insert(0);
        let source_id = format!(
            "shlink:{}:{}",
            key.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            n
        );
        *n += 1;
        SourceVisit {
            code: code.to_owned(),
            domain: domain.map(str::to_owned),
            time: raw.time,
            referrer: raw.referrer,
            user_agent: raw.user_agent,
            address: None,
            country: raw.country,
            source_id,
        }
    }
}

/// A string field, `None` when absent, null or empty.
fn text<'a>(v: &'a Value, name: &str) -> Option<&'a str> {
    v.get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// An ATOM (RFC 3339) time field.
fn time(v: &Value, name: &str) -> Option<DateTime<Utc>> {
    text(v, name)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// A running Shlink's REST API.
pub struct ShlinkApi {
    api: Api,
}

impl ShlinkApi {
    /// `base_url`: where Shlink answers (`https://s.example`), `api_key` an
    /// API key of it (`shlink api-key:generate`).
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

    async fn page(&self, path: &str) -> Result<Value, SourceError> {
        self.api.get_json(path).await
    }

    async fn visits(&self, link: &SourceLink, sink: &mut dyn Sink) -> Result<(), SourceError> {
        let domain = link
            .domain
            .as_deref()
            .map(|d| format!("&domain={}", encode(d)))
            .unwrap_or_default();
        let path = |page: u64| {
            format!(
                "/rest/v3/short-urls/{}/visits?page={page}&itemsPerPage={VISITS_PER_PAGE}{domain}",
                encode(&link.code)
            )
        };
        let bad = |page: u64, e: String| {
            SourceError::Api(format!("{}{}: {e}", self.api.base(), path(page)))
        };
        let first = parse_visits(&self.page(&path(1)).await?).map_err(|e| bad(1, e))?;
        let mut ids = VisitIds::new(&link.code, link.domain.as_deref());
        // Newest first: the last page holds the oldest visits.
        for page in (2..=first.pages).rev() {
            let visits = parse_visits(&self.page(&path(page)).await?).map_err(|e| bad(page, e))?;
            for raw in visits.visits.into_iter().rev() {
                sink.visit(ids.visit(&link.code, link.domain.as_deref(), raw))?;
            }
        }
        for raw in first.visits.into_iter().rev() {
            sink.visit(ids.visit(&link.code, link.domain.as_deref(), raw))?;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Source for ShlinkApi {
    fn name(&self) -> &'static str {
        "shlink"
    }

    async fn read(&mut self, sink: &mut dyn Sink) -> Result<(), SourceError> {
        let now = Utc::now();
        let mut page = 1;
        loop {
            let path =
                format!("/rest/v3/short-urls?page={page}&itemsPerPage={SHORT_URLS_PER_PAGE}");
            let body = self.page(&path).await?;
            let parsed = parse_short_urls(&body, now)
                .map_err(|e| SourceError::Api(format!("{}{path}: {e}", self.api.base())))?;
            for (link, visits) in parsed.links {
                sink.link(link.clone())?;
                if visits > 0 {
                    self.visits(&link, sink).await?;
                }
            }
            if page >= parsed.pages {
                return Ok(());
            }
            page += 1;
        }
    }
}

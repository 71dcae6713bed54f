//! Bitly's API v4 (`--from bitly-api`): a group's bitlinks, each custom
//! back-half a key, with each bitlink's clicks as an imported total.
//!
//! Written against Bitly's API v4 as its OpenAPI document (dev.bitly.com,
//! v4) and shlinkio/shlink-importer v5.7.0 (`BitlyApiImporter.php`) read
//! it: `GET /v4/groups/{group_guid}/bitlinks?archived=both` answers `links`
//! (`id` `bit.ly/abc`, `link`, `custom_bitlinks`, `long_url`, `title`,
//! `archived`, `created_at`, `tags`, `expiration_at`) and `pagination`
//! (`next` a full URL, `search_after`, empty on the last page);
//! `GET /v4/bitlinks/{id}/clicks/summary?unit=day&units=-1` answers
//! `total_clicks`. Without a group every group of `GET /v4/groups` is read.
//! Quirks: times are `2019-08-27T15:55:20+0000` (no colon in the offset);
//! a bitlink on `bit.ly` itself is imported under no domain (`bit.ly` cannot
//! point at qrtag, but the key is kept); a bitlink with several custom
//! back-halves becomes one link a back-half, the clicks (Bitly counts them
//! for the bitlink) on the first and 0 on the others.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::api::{Api, Retries, encode};
use super::source::{Sink, Source, SourceError, SourceLink};

/// Bitly's own API.
pub const BITLY_API: &str = "https://api-ssl.bitly.com/v4";

/// Bitlinks asked for a page (Bitly's largest is 100).
const PAGE: u32 = 100;

/// One page of bitlinks: the links of each bitlink with its id (for its
/// clicks), and the query of the next page, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BitlinksPage {
    pub bitlinks: Vec<(String, Vec<SourceLink>)>,
    pub next: Option<String>,
}

/// Reads `{"links": [...], "pagination": {...}}`.
pub fn parse_bitlinks(body: &Value, now: DateTime<Utc>) -> Result<BitlinksPage, String> {
    let links = body
        .get("links")
        .and_then(Value::as_array)
        .ok_or("no \"links\" list in the answer")?;
    let bitlinks = links
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            bitlink(v, now)
                .map_err(|e| format!("bitlink {}: {e}", i + 1))
                .transpose()
        })
        .collect::<Result<_, _>>()?;
    let pagination = body.get("pagination");
    let next = pagination
        .and_then(|p| text(p, "search_after"))
        .map(|s| format!("search_after={}", encode(s)))
        .or_else(|| {
            pagination
                .and_then(|p| text(p, "next"))
                .and_then(|n| n.split_once('?').map(|(_, q)| q.to_owned()))
        });
    Ok(BitlinksPage { bitlinks, next })
}

/// One bitlink: its id and a [`SourceLink`] for each of its custom
/// back-halves (or its own link when it has none); `None` for a bitlink
/// with no long URL (Bitly keeps some, the importer skips them).
pub fn bitlink(v: &Value, now: DateTime<Utc>) -> Result<Option<(String, Vec<SourceLink>)>, String> {
    let Some(url) = text(v, "long_url") else {
        return Ok(None);
    };
    let own = text(v, "link")
        .or_else(|| text(v, "id"))
        .ok_or("no link or id")?;
    let id = text(v, "id")
        .map(str::to_owned)
        .unwrap_or_else(|| strip_scheme(own).to_owned());
    let customs: Vec<&str> = v
        .get("custom_bitlinks")
        .and_then(Value::as_array)
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let expires = text(v, "expiration_at").and_then(bitly_time);
    let template = SourceLink {
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
        created: text(v, "created_at").and_then(bitly_time),
        expires,
        inactive: v.get("archived").and_then(Value::as_bool) == Some(true)
            || expires.is_some_and(|e| e <= now),
        ..SourceLink::default()
    };
    let shorts = if customs.is_empty() {
        vec![own]
    } else {
        customs
    };
    let links = shorts
        .into_iter()
        .map(|short| {
            let (domain, code) = split_bitlink(short);
            SourceLink {
                code,
                domain,
                ..template.clone()
            }
        })
        .filter(|l| !l.code.is_empty())
        .collect();
    Ok(Some((id, links)))
}

/// `https://brand.co/spring` as (`Some("brand.co")`, `spring`); a bitlink
/// on `bit.ly` has no domain of the user's.
pub fn split_bitlink(short: &str) -> (Option<String>, String) {
    let rest = strip_scheme(short);
    let (host, code) = rest.split_once('/').unwrap_or((rest, ""));
    let host = host.to_ascii_lowercase();
    let code = code.split(['?', '#']).next().unwrap_or("").to_owned();
    let domain = (host != "bit.ly" && !host.is_empty()).then_some(host);
    (domain, code)
}

fn strip_scheme(url: &str) -> &str {
    url.split_once("://").map_or(url, |(_, r)| r)
}

/// Bitly's `2019-08-27T15:55:20+0000`, or RFC 3339.
pub fn bitly_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%z")
        .or_else(|_| DateTime::parse_from_rfc3339(text))
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `total_clicks` of a clicks summary.
pub fn parse_clicks(body: &Value) -> Result<u64, String> {
    body.get("total_clicks")
        .and_then(Value::as_u64)
        .ok_or_else(|| "no \"total_clicks\" in the answer".into())
}

fn text<'a>(v: &'a Value, name: &str) -> Option<&'a str> {
    v.get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A Bitly account through its API.
pub struct BitlyApi {
    api: Api,
    group: Option<String>,
}

impl BitlyApi {
    /// `token`: a Bitly access token; `group_guid`: the group to read, or
    /// every group of the account.
    pub fn new(token: &str, group_guid: Option<&str>) -> Result<Self, SourceError> {
        Self::with_base(BITLY_API, token, group_guid, Retries::default())
    }

    /// The same against another base URL (a test's server).
    pub fn with_base(
        base_url: &str,
        token: &str,
        group_guid: Option<&str>,
        retries: Retries,
    ) -> Result<Self, SourceError> {
        Ok(Self {
            api: Api::new(
                base_url,
                "authorization",
                &format!("Bearer {token}"),
                retries,
            )?,
            group: group_guid.map(str::to_owned),
        })
    }

    fn bad(&self, path: &str, e: String) -> SourceError {
        SourceError::Api(format!("{}{path}: {e}", self.api.base()))
    }

    async fn groups(&self) -> Result<Vec<String>, SourceError> {
        if let Some(g) = &self.group {
            return Ok(vec![g.clone()]);
        }
        let body = self.api.get_json("/groups").await?;
        body.get("groups")
            .and_then(Value::as_array)
            .map(|g| {
                g.iter()
                    .filter_map(|g| text(g, "guid").map(str::to_owned))
                    .collect()
            })
            .ok_or_else(|| self.bad("/groups", "no \"groups\" list in the answer".into()))
    }

    async fn clicks(&self, id: &str) -> Result<u64, SourceError> {
        let id: Vec<String> = id.split('/').map(encode).collect();
        let path = format!(
            "/bitlinks/{}/clicks/summary?unit=day&units=-1",
            id.join("/")
        );
        let body = self.api.get_json(&path).await?;
        parse_clicks(&body).map_err(|e| self.bad(&path, e))
    }
}

#[async_trait::async_trait]
impl Source for BitlyApi {
    fn name(&self) -> &'static str {
        "bitly-api"
    }

    async fn read(&mut self, sink: &mut dyn Sink) -> Result<(), SourceError> {
        let now = Utc::now();
        for group in self.groups().await? {
            let first = format!(
                "/groups/{}/bitlinks?size={PAGE}&archived=both",
                encode(&group)
            );
            let mut path = first.clone();
            loop {
                let body = self.api.get_json(&path).await?;
                let page = parse_bitlinks(&body, now).map_err(|e| self.bad(&path, e))?;
                for (id, links) in page.bitlinks {
                    let clicks = self.clicks(&id).await?;
                    for (i, mut link) in links.into_iter().enumerate() {
                        link.total_clicks = Some(if i == 0 { clicks } else { 0 });
                        sink.link(link)?;
                    }
                }
                match page.next {
                    // A `next` that repeats the page would loop for ever.
                    Some(next) if format!("{first}&{next}") != path => {
                        path = format!("{first}&{next}");
                    }
                    _ => break,
                }
            }
        }
        Ok(())
    }
}

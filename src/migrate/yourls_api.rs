//! YOURLS through its API, where no export of the database is at hand:
//! `yourls-api.php?action=stats&filter=last&start=S&limit=N&format=json`,
//! page after page, with a signature token or a user and password.
//!
//! Written against YOURLS 1.10.5-dev (github:YOURLS/YOURLS at b8c7882):
//! `yourls_api_action_stats` passes `filter`, `limit` and `start` to
//! `yourls_get_stats`, which answers `links.link_1..` (shorturl, url,
//! title, timestamp, ip, clicks) and `stats.total_links`. The API lists no
//! single visit (the log table has no action), so a link's `clicks` come
//! over as its imported total.

use std::time::Duration;

use serde_json::Value;

use super::source::{Sink, Source, SourceError, SourceLink};
use crate::values::secret::Secret;

/// Links asked for a page.
const PAGE: u64 = 1000;
/// Attempts at one page before the import stops.
const ATTEMPTS: u32 = 4;
/// The longest Retry-After waited for.
const MAX_WAIT: Duration = Duration::from_secs(30);

pub struct Api {
    /// `https://sho.rt/yourls-api.php`, or the site it is at.
    endpoint: String,
    auth: Vec<(&'static str, String)>,
}

impl Api {
    /// `key` is the signature token, or `USER:PASSWORD`.
    pub fn new(url: &str, key: Option<&Secret>) -> Self {
        let url = url.trim_end_matches('/');
        let endpoint = if url.ends_with(".php") {
            url.to_owned()
        } else {
            format!("{url}/yourls-api.php")
        };
        let auth = match key.map(Secret::expose) {
            Some(k) => match k.split_once(':') {
                Some((user, pass)) => {
                    vec![("username", user.to_owned()), ("password", pass.to_owned())]
                }
                None => vec![("signature", k.to_owned())],
            },
            None => Vec::new(),
        };
        Self { endpoint, auth }
    }

    async fn page(&self, client: &reqwest::Client, start: u64) -> Result<Value, SourceError> {
        let mut tried = 0;
        loop {
            tried += 1;
            let mut query: Vec<(&str, String)> = vec![
                ("action", "stats".into()),
                ("filter", "last".into()),
                ("start", start.to_string()),
                ("limit", PAGE.to_string()),
                ("format", "json".into()),
            ];
            query.extend(self.auth.iter().cloned());
            let answer = client.get(&self.endpoint).query(&query).send().await;
            let retry = match answer {
                Ok(r) if r.status().is_success() => {
                    return r.json::<Value>().await.map_err(|e| {
                        SourceError::Api(format!(
                            "{}: the page from {start} is not the API's JSON ({e})",
                            self.endpoint
                        ))
                    });
                }
                Ok(r) if r.status() == 401 || r.status() == 403 => {
                    let why = r
                        .json::<Value>()
                        .await
                        .ok()
                        .and_then(|v| v["message"].as_str().map(str::to_owned))
                        .unwrap_or_default();
                    return Err(SourceError::Api(format!(
                        "{}: the YOURLS API refused the key ({why}); give --source-key the signature token or USER:PASSWORD",
                        self.endpoint
                    )));
                }
                Ok(r) if r.status() == 429 || r.status().is_server_error() => {
                    let wait = r
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map_or(Duration::from_millis(500), Duration::from_secs)
                        .min(MAX_WAIT);
                    (format!("answered {}", r.status()), wait)
                }
                Ok(r) => {
                    return Err(SourceError::Api(format!(
                        "{}: the page from {start} answered {}",
                        self.endpoint,
                        r.status()
                    )));
                }
                Err(e) => (format!("no answer ({e})"), Duration::from_millis(500)),
            };
            if tried >= ATTEMPTS {
                return Err(SourceError::Api(format!(
                    "{}: the page from {start} {} {ATTEMPTS} times; nothing was imported",
                    self.endpoint, retry.0
                )));
            }
            tokio::time::sleep(retry.1).await;
        }
    }
}

/// The keyword of a YOURLS short URL: its last path segment (keywords hold
/// no `/`).
fn keyword(shorturl: &str) -> &str {
    let path = shorturl.split(['?', '#']).next().unwrap_or_default();
    path.rsplit('/').next().unwrap_or(path)
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[async_trait::async_trait]
impl Source for Api {
    fn name(&self) -> &'static str {
        "yourls-api"
    }

    async fn read(&mut self, sink: &mut dyn Sink) -> Result<(), SourceError> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| SourceError::Api(format!("the HTTP client: {e}")))?;
        let mut start = 0;
        loop {
            let page = self.page(&client, start).await?;
            let links = match &page["links"] {
                Value::Object(m) => m.values().cloned().collect::<Vec<_>>(),
                Value::Array(a) => a.clone(),
                _ => Vec::new(),
            };
            let count = links.len() as u64;
            for l in links {
                let shorturl = text(&l["shorturl"]).unwrap_or_default();
                let url = text(&l["url"]).ok_or_else(|| {
                    SourceError::Api(format!(
                        "{}: a link without a url ({shorturl})",
                        self.endpoint
                    ))
                })?;
                sink.link(SourceLink {
                    code: keyword(&shorturl).to_owned(),
                    url,
                    title: text(&l["title"]).filter(|t| !t.is_empty()),
                    created: text(&l["timestamp"]).and_then(|t| {
                        chrono::NaiveDateTime::parse_from_str(&t, "%Y-%m-%d %H:%M:%S")
                            .ok()
                            .map(|t| t.and_utc())
                    }),
                    total_clicks: text(&l["clicks"]).and_then(|c| c.parse().ok()),
                    ..SourceLink::default()
                })?;
            }
            let total = text(&page["stats"]["total_links"]).and_then(|t| t.parse::<u64>().ok());
            start += count;
            if count < PAGE || total.is_some_and(|t| start >= t) {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keyword_is_the_short_urls_last_segment() {
        assert_eq!(keyword("https://sho.rt/ABC-x_1"), "ABC-x_1");
        assert_eq!(keyword("https://sho.rt/dir/abc?x=1"), "abc");
    }

    #[test]
    fn the_key_is_a_token_or_a_user_and_password() {
        let token: Secret = "abc123".parse().expect("secret");
        assert_eq!(
            Api::new("https://sho.rt/", Some(&token)).auth[0].0,
            "signature"
        );
        let pair: Secret = "me:pw".parse().expect("secret");
        let api = Api::new("https://sho.rt/yourls-api.php", Some(&pair));
        assert_eq!(api.endpoint, "https://sho.rt/yourls-api.php");
        assert_eq!(api.auth[1], ("password", "pw".to_owned()));
    }
}

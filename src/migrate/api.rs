//! The thin HTTP shell the API readers (Shlink, Kutt, Bitly) share: one GET
//! of a JSON page, with the waits and retries a long import needs so that a
//! rate limit or a passing failure halfway through does not end it, and one
//! clear line when it must end.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::source::SourceError;

/// How hard a page is tried before the import gives up on it.
#[derive(Debug, Clone, Copy)]
pub struct Retries {
    /// Answers of 5xx or no answer at all, retried this many times.
    pub failures: u32,
    /// 429 answers waited out this many times.
    pub rate_limits: u32,
    /// The longest `Retry-After` waited: a source asking for more is an
    /// error naming the wait, not an import that hangs for an hour.
    pub longest_wait: Duration,
    /// The wait before the first retry of a failure, doubled each time.
    pub backoff: Duration,
    /// One request's time limit.
    pub timeout: Duration,
}

impl Default for Retries {
    fn default() -> Self {
        Self {
            failures: 3,
            rate_limits: 10,
            longest_wait: Duration::from_secs(120),
            backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(60),
        }
    }
}

/// A source's API at `base` (no trailing slash), every request carrying
/// the API key or bearer token header.
pub struct Api {
    client: reqwest::Client,
    base: String,
    headers: HeaderMap,
    /// The header that carried the key, named when the key is refused.
    key_name: String,
    retries: Retries,
}

impl Api {
    /// `key_header` (lower case) carries `key_value` in every request; a
    /// refused key is named by its header, its value never part of an error.
    pub fn new(
        base: &str,
        key_header: &'static str,
        key_value: &str,
        retries: Retries,
    ) -> Result<Self, SourceError> {
        let mut headers = HeaderMap::new();
        let value = HeaderValue::from_str(key_value).map_err(|_| {
            SourceError::Api(format!(
                "the {key_header} value holds characters an HTTP header cannot carry"
            ))
        })?;
        let mut value = value;
        value.set_sensitive(true);
        headers.insert(HeaderName::from_static(key_header), value);
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        let client = reqwest::Client::builder()
            .timeout(retries.timeout)
            .build()
            .map_err(|e| SourceError::Api(format!("cannot start an HTTP client: {e}")))?;
        Ok(Self {
            client,
            base: base.trim_end_matches('/').to_owned(),
            headers,
            key_name: key_header.to_owned(),
            retries,
        })
    }

    /// The base URL requests are made under.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// GETs `path_and_query` (starting with `/`) as JSON. A refused key (401,
    /// 403) ends at once; 429 waits its `Retry-After`; a 5xx or a failed
    /// connection is retried; anything else, or the last failure, is one
    /// `SourceError::Api` line naming the URL.
    pub async fn get_json(&self, path_and_query: &str) -> Result<serde_json::Value, SourceError> {
        let url = format!("{}{}", self.base, path_and_query);
        let mut failures = 0;
        let mut rate_limits = 0;
        let mut backoff = self.retries.backoff;
        loop {
            let sent = self
                .client
                .get(&url)
                .headers(self.headers.clone())
                .send()
                .await;
            let problem = match sent {
                Ok(answer) => {
                    let status = answer.status();
                    if status.is_success() {
                        let body = answer.bytes().await;
                        match body {
                            Ok(body) => {
                                return serde_json::from_slice(&body).map_err(|e| {
                                    SourceError::Api(format!(
                                        "GET {url}: the answer is not the JSON expected ({e})"
                                    ))
                                });
                            }
                            Err(e) => format!("the answer broke off ({e})"),
                        }
                    } else if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN
                    {
                        return Err(SourceError::Api(format!(
                            "GET {url}: the source refused the key given as {} (HTTP {})",
                            self.key_name,
                            status.as_u16()
                        )));
                    } else if status == StatusCode::TOO_MANY_REQUESTS {
                        let wait = retry_after(answer.headers()).unwrap_or(backoff);
                        if wait > self.retries.longest_wait {
                            return Err(SourceError::Api(format!(
                                "GET {url}: rate-limited, and asked to wait {} s (more than {} s); run the import again later",
                                wait.as_secs(),
                                self.retries.longest_wait.as_secs()
                            )));
                        }
                        rate_limits += 1;
                        if rate_limits > self.retries.rate_limits {
                            return Err(SourceError::Api(format!(
                                "GET {url}: still rate-limited (HTTP 429) after {} waits",
                                self.retries.rate_limits
                            )));
                        }
                        tokio::time::sleep(wait).await;
                        continue;
                    } else if status.is_server_error() {
                        format!("HTTP {}", status.as_u16())
                    } else {
                        return Err(SourceError::Api(format!(
                            "GET {url}: HTTP {}{}",
                            status.as_u16(),
                            short_body(answer).await
                        )));
                    }
                }
                Err(e) => format!("no answer ({})", without_url(&e)),
            };
            failures += 1;
            if failures > self.retries.failures {
                return Err(SourceError::Api(format!(
                    "GET {url}: {problem}, {} times; nothing more was read",
                    failures
                )));
            }
            tokio::time::sleep(backoff).await;
            backoff *= 2;
        }
    }
}

/// `Retry-After` in seconds (the HTTP-date form is read as "a second").
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    match value.trim().parse::<u64>() {
        Ok(s) => Some(Duration::from_secs(s)),
        Err(_) => Some(Duration::from_secs(1)),
    }
}

/// The start of an error answer's body, for the user to see what the source
/// said (`{"error": "..."}`), on one line.
async fn short_body(answer: reqwest::Response) -> String {
    let Ok(bytes) = answer.bytes().await else {
        return String::new();
    };
    let text: String = String::from_utf8_lossy(&bytes)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    let text = text.trim();
    if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    }
}

fn without_url(e: &reqwest::Error) -> String {
    let mut e = e.to_string();
    if let Some(i) = e.find(" for url (") {
        e.truncate(i);
    }
    e
}

/// Percent-encodes a path segment or query value (everything but RFC 3986's
/// unreserved characters), so a code with `/`, `?` or unicode is asked for
/// as itself.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

//! ClickHouse's HTTP interface, the one way qrtag speaks to it: a
//! statement in the body, the answer's text back, ClickHouse's own error
//! text kept (first line) so the operator reads what the server said.

use std::time::Duration;

use super::url::ClickHouseUrl;

#[derive(Debug, thiserror::Error)]
pub enum ClickHouseError {
    #[error("cannot reach ClickHouse at {url}: {cause}")]
    Unreachable { url: String, cause: String },
    #[error("ClickHouse at {url} refused the user {user:?}: {said}")]
    Credentials {
        url: String,
        user: String,
        said: String,
    },
    #[error("ClickHouse at {url} answered {status}: {said}")]
    Refused {
        url: String,
        status: u16,
        said: String,
    },
    #[error("ClickHouse at {url} answered {answer:?}, which is not what was asked")]
    Unexpected { url: String, answer: String },
}

impl ClickHouseError {
    /// True when the server is there and said no for a reason a retry
    /// will not change (a statement, credentials): not worth a back-off.
    pub fn is_refusal(&self) -> bool {
        matches!(self, Self::Credentials { .. } | Self::Refused { .. })
    }
}

/// ClickHouse's codes for a user it does not admit (unknown user, wrong
/// password, address not allowed): `Code: 192`, `193`, `195`.
fn is_credentials(said: &str) -> bool {
    ["Code: 192,", "Code: 193,", "Code: 195,", "Code: 516,"]
        .iter()
        .any(|c| said.starts_with(c))
}

#[derive(Clone)]
pub struct Client {
    url: ClickHouseUrl,
    http: reqwest::Client,
    timeout: Duration,
    /// The user may not set `max_execution_time` (a `readonly = 1`
    /// profile): reads go without it, once ClickHouse has said so.
    no_limit: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// ClickHouse's code for a setting a read-only user may not change.
const READONLY_SETTING: &str = "Code: 164,";

impl Client {
    pub fn new(url: ClickHouseUrl, timeout: Duration) -> Self {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .build()
            .unwrap_or_default();
        Client {
            url,
            http,
            timeout,
            no_limit: Default::default(),
        }
    }

    pub fn url(&self) -> &ClickHouseUrl {
        &self.url
    }

    /// An answer of this server that is not of the shape asked for.
    pub fn unexpected(&self, answer: String) -> ClickHouseError {
        ClickHouseError::Unexpected {
            url: self.url.to_string(),
            answer,
        }
    }

    /// Runs `sql` (with `body` after it, for an `INSERT … FORMAT`), in the
    /// URL's database when `in_database`; the answer's text.
    pub async fn run(
        &self,
        sql: &str,
        body: Option<Vec<u8>>,
        in_database: bool,
    ) -> Result<String, ClickHouseError> {
        use std::sync::atomic::Ordering::Relaxed;
        let limit = in_database && body.is_none() && !self.no_limit.load(Relaxed);
        if !limit {
            return self.send(sql, body, in_database, false).await;
        }
        match self.send(sql, None, in_database, true).await {
            Err(ClickHouseError::Refused { said, .. }) if said.starts_with(READONLY_SETTING) => {
                self.no_limit.store(true, Relaxed);
                self.send(sql, None, in_database, false).await
            }
            other => other,
        }
    }

    async fn send(
        &self,
        sql: &str,
        body: Option<Vec<u8>>,
        in_database: bool,
        limit: bool,
    ) -> Result<String, ClickHouseError> {
        let mut endpoint = self.url.endpoint.clone();
        {
            let mut q = endpoint.query_pairs_mut();
            if in_database {
                q.append_pair("database", &self.url.database);
            }
            // A read ClickHouse stops when we stop waiting for it, so a
            // page reloaded while a slow query runs does not pile up
            // queries on the server (`max_execution_time`, whole seconds;
            // not for a read-only user, who may not set it).
            if limit {
                let secs = self.timeout.as_secs_f64().ceil().max(1.0) as u64;
                q.append_pair("max_execution_time", &secs.to_string());
            }
            if body.is_some() {
                q.append_pair("query", sql);
                // Into a cluster's `Distributed` table, answered once the
                // shards hold the rows, not once the node we speak to has
                // queued them: a row counted as sent is stored (a setting
                // other tables ignore).
                q.append_pair("insert_distributed_sync", "1");
            }
        }
        let shown = self.url.to_string();
        let payload = match body {
            Some(b) => b,
            None => sql.as_bytes().to_vec(),
        };
        let mut req = self.http.post(endpoint).body(payload);
        if let Some(user) = &self.url.user {
            req = req.basic_auth(user, self.url.password.as_ref().map(|p| p.expose()));
        }
        let resp = req.send().await.map_err(|e| ClickHouseError::Unreachable {
            url: shown.clone(),
            cause: cause_of(&e),
        })?;
        let status = resp.status().as_u16();
        let text = resp
            .text()
            .await
            .map_err(|e| ClickHouseError::Unreachable {
                url: shown.clone(),
                cause: cause_of(&e),
            })?;
        if status == 200 {
            return Ok(text);
        }
        let said = first_line(&text);
        if is_credentials(&said) {
            return Err(ClickHouseError::Credentials {
                url: shown,
                user: self.url.user.clone().unwrap_or_else(|| "default".into()),
                said,
            });
        }
        Err(ClickHouseError::Refused {
            url: shown,
            status,
            said,
        })
    }

    /// A statement outside any database (`CREATE DATABASE`, `version()`).
    pub async fn query_server(&self, sql: &str) -> Result<String, ClickHouseError> {
        self.run(sql, None, false).await
    }

    pub async fn query(&self, sql: &str) -> Result<String, ClickHouseError> {
        self.run(sql, None, true).await
    }

    /// The answers of `first` and, if there is one, `then` (empty if not),
    /// asked at once: a read of the states beside one of the plain counts
    /// rolled from them, whose answers are added up.
    pub async fn query_both(
        &self,
        first: &str,
        then: Option<&str>,
    ) -> Result<(String, String), ClickHouseError> {
        let then = async {
            match then {
                Some(sql) => self.query(sql).await,
                None => Ok(String::new()),
            }
        };
        let (a, b) = tokio::join!(self.query(first), then);
        Ok((a?, b?))
    }

    /// `INSERT INTO table FORMAT JSONEachRow` with `rows`, one JSON object a line.
    pub async fn insert_json_rows(
        &self,
        table: &str,
        rows: Vec<u8>,
    ) -> Result<(), ClickHouseError> {
        self.run(
            &format!("INSERT INTO {table} FORMAT JSONEachRow"),
            Some(rows),
            true,
        )
        .await
        .map(drop)
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    // ClickHouse repeats itself: "…, e.what() = DB::Exception".
    let line = line.split(", e.what() = ").next().unwrap_or(line);
    line.chars().take(400).collect()
}

fn cause_of(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s = format!("{s}: {t}");
        }
        src = c.source();
    }
    s
}

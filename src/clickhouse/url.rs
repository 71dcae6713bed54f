//! Where a ClickHouse server is and whom to be there, parsed once at the
//! edge so nothing later meets a half-valid address.
//!
//! `clickhouse://` speaks plain HTTP (ClickHouse's HTTP interface, port 8123
//! by default) and `clickhouses://` HTTPS (8443): the native TCP protocol is
//! never used, so one spelling names one interface. `http(s)://` are
//! accepted as they are written. The path is the database (default
//! `qrtag`); user and password may come in the URL.

use std::fmt;

use crate::values::secret::Secret;

/// The database when the URL names none.
pub const DEFAULT_DATABASE: &str = "qrtag";

#[derive(Clone, PartialEq, Eq)]
pub struct ClickHouseUrl {
    /// `http(s)://host:port/`, nothing after the host.
    pub endpoint: url::Url,
    pub database: String,
    pub user: Option<String>,
    pub password: Option<Secret>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadClickHouseUrl {
    #[error("{0:?} is not a URL (expected clickhouse://[USER[:PASSWORD]@]HOST[:PORT][/DATABASE])")]
    NotUrl(String),
    #[error("{0:?}: the scheme must be clickhouse, clickhouses, http or https")]
    Scheme(String),
    #[error("{0:?} names no host")]
    NoHost(String),
    #[error("{0:?}: a database name is letters, digits and _, not starting with a digit")]
    Database(String),
    #[error("{0:?}: nothing may follow the database (no query, fragment or further path)")]
    Trailing(String),
}

impl ClickHouseUrl {
    pub fn parse(text: &str) -> Result<Self, BadClickHouseUrl> {
        let shown = redacted(text);
        let url = url::Url::parse(text).map_err(|_| BadClickHouseUrl::NotUrl(shown.clone()))?;
        let (scheme, port) = match url.scheme() {
            "clickhouse" | "http" => ("http", 8123),
            "clickhouses" | "https" => ("https", 8443),
            _ => return Err(BadClickHouseUrl::Scheme(shown)),
        };
        let host = match url.host_str() {
            Some(h) if !h.is_empty() => h.to_owned(),
            _ => return Err(BadClickHouseUrl::NoHost(shown)),
        };
        if url.query().is_some() || url.fragment().is_some() {
            return Err(BadClickHouseUrl::Trailing(shown));
        }
        let path = url.path().trim_matches('/');
        if path.contains('/') {
            return Err(BadClickHouseUrl::Trailing(shown));
        }
        let database = if path.is_empty() {
            DEFAULT_DATABASE.to_owned()
        } else {
            path.to_owned()
        };
        if !is_identifier(&database) {
            return Err(BadClickHouseUrl::Database(shown));
        }
        let port = url.port().unwrap_or(port);
        let endpoint = url::Url::parse(&format!("{scheme}://{host}:{port}/"))
            .map_err(|_| BadClickHouseUrl::NotUrl(shown.clone()))?;
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        let user = Some(decode(url.username())).filter(|u| !u.is_empty());
        let password = url.password().map(|p| Secret::new(decode(p)));
        Ok(ClickHouseUrl {
            endpoint,
            database,
            user,
            password,
        })
    }
}

/// An identifier ClickHouse takes unquoted, so the schema's statements
/// never quote what a user typed.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s.len() <= 64
}

/// The URL as an error may show it: a password never reaches a message.
fn redacted(text: &str) -> String {
    match url::Url::parse(text) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => text.to_owned(),
    }
}

impl fmt::Display for ClickHouseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.endpoint, self.database)
    }
}

impl fmt::Debug for ClickHouseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClickHouseUrl({self}, user {:?})", self.user)
    }
}

impl std::str::FromStr for ClickHouseUrl {
    type Err = BadClickHouseUrl;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ClickHouseUrl::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spellings_an_operator_writes() {
        let u = ClickHouseUrl::parse("clickhouse://qrtag:p%40ss@ch.internal/scans").unwrap();
        assert_eq!(u.endpoint.as_str(), "http://ch.internal:8123/");
        assert_eq!(u.database, "scans");
        assert_eq!(u.user.as_deref(), Some("qrtag"));
        assert_eq!(u.password.as_ref().map(Secret::expose), Some("p@ss"));
        let u = ClickHouseUrl::parse("clickhouses://ch:9443").unwrap();
        assert_eq!(u.endpoint.as_str(), "https://ch:9443/");
        assert_eq!(u.database, DEFAULT_DATABASE);
        assert_eq!(u.user, None);
        let u = ClickHouseUrl::parse("http://127.0.0.1:18123/db_1/").unwrap();
        assert_eq!(u.endpoint.as_str(), "http://127.0.0.1:18123/");
        assert_eq!(u.database, "db_1");
    }

    #[test]
    fn what_is_not_one_is_named_without_its_password() {
        for (text, want) in [
            ("ch.internal:8123", "scheme"),
            ("not a url", "not a URL"),
            ("mysql://h/db", "scheme"),
            ("clickhouse://h/a-b", "database name"),
            ("clickhouse://h/db?x=1", "nothing may follow"),
            ("clickhouse://h/db/t", "nothing may follow"),
        ] {
            let e = ClickHouseUrl::parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
        let e = ClickHouseUrl::parse("mysql://u:hunter2@h/db")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("hunter2"), "{e}");
        assert!(
            !format!(
                "{:?}",
                ClickHouseUrl::parse("clickhouse://u:hunter2@h").unwrap()
            )
            .contains("hunter2")
        );
    }
}

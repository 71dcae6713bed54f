//! Where a CouchDB server is, which database, and whom to be there: the
//! values the CouchDB store and the commands that set it up share.

use std::fmt;

use super::secret::Secret;

/// HTTP basic credentials for CouchDB.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub user: String,
    pub password: Option<Secret>,
}

/// The root of a CouchDB server, e.g. `http://127.0.0.1:5984`.
///
/// Credentials in the URL are refused rather than stripped: a URL is printed
/// in errors and logs, so the only safe URL is one that never held a secret.
/// A path prefix (a CouchDB behind a reverse proxy under `/couch/`) is refused
/// too, because every request path is built from the server root.
#[derive(Clone, PartialEq, Eq)]
pub struct CouchUrl(url::Url);

/// Why a CouchDB URL or database name was refused. The messages never repeat
/// the URL, since a refused one may hold a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidCouchSettings {
    #[error("the CouchDB URL must be an http(s) server root like http://127.0.0.1:5984")]
    BadUrl,
    #[error(
        "put CouchDB credentials in --couchdb-user and --couchdb-password (or QRTAG_COUCHDB_USER and QRTAG_COUCHDB_PASSWORD), not in the URL"
    )]
    CredentialsInUrl,
    #[error(
        "the CouchDB URL must be the server root, without a path, query or fragment (a path prefix is not supported)"
    )]
    PathPrefix,
    #[error(
        "a CouchDB database name starts with a lowercase letter and continues with a-z, 0-9 and _$()+-/, at most 238 characters: {0:?}"
    )]
    BadDbName(String),
}

impl CouchUrl {
    pub fn parse(s: &str) -> Result<Self, InvalidCouchSettings> {
        let u = url::Url::parse(s).map_err(|_| InvalidCouchSettings::BadUrl)?;
        if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none_or(str::is_empty) {
            return Err(InvalidCouchSettings::BadUrl);
        }
        if !u.username().is_empty() || u.password().is_some() {
            return Err(InvalidCouchSettings::CredentialsInUrl);
        }
        if u.path() != "/" || u.query().is_some() || u.fragment().is_some() {
            return Err(InvalidCouchSettings::PathPrefix);
        }
        Ok(Self(u))
    }

    pub fn as_url(&self) -> &url::Url {
        &self.0
    }

    /// The origin, for messages: `http://127.0.0.1:5984`.
    pub fn origin(&self) -> String {
        self.0.origin().ascii_serialization()
    }
}

impl fmt::Display for CouchUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin())
    }
}

impl fmt::Debug for CouchUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CouchUrl({})", self.origin())
    }
}

/// A database name CouchDB accepts. Checked up front so that a typo is a
/// one-line usage error rather than an HTTP 400 at the first request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CouchDbName(String);

impl CouchDbName {
    pub fn parse(s: &str) -> Result<Self, InvalidCouchSettings> {
        let mut bytes = s.bytes();
        let valid = s.len() <= 238
            && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
            && bytes
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_$()+-/".contains(&b));
        if valid {
            Ok(Self(s.to_owned()))
        } else {
            Err(InvalidCouchSettings::BadDbName(s.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for CouchDbName {
    type Err = InvalidCouchSettings;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for CouchDbName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn couch_url_is_a_server_root_without_credentials() {
        let u = CouchUrl::parse("http://127.0.0.1:5984/").expect("valid");
        assert_eq!(u.to_string(), "http://127.0.0.1:5984");
        assert!(CouchUrl::parse("https://couch.example").is_ok());
        let cases = [
            ("127.0.0.1:5984", InvalidCouchSettings::BadUrl),
            ("ftp://couch.example", InvalidCouchSettings::BadUrl),
            ("mailto:a@b.example", InvalidCouchSettings::BadUrl),
            (
                "http://admin:hunter2@couch.example",
                InvalidCouchSettings::CredentialsInUrl,
            ),
            (
                "http://admin@couch.example",
                InvalidCouchSettings::CredentialsInUrl,
            ),
            (
                "http://couch.example/couch/",
                InvalidCouchSettings::PathPrefix,
            ),
            (
                "http://couch.example/?x=1",
                InvalidCouchSettings::PathPrefix,
            ),
        ];
        for (s, want) in cases {
            assert_eq!(CouchUrl::parse(s), Err(want), "{s}");
        }
        let msg = CouchUrl::parse("http://admin:hunter2@couch.example")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            !msg.contains("hunter2"),
            "error repeats the password: {msg}"
        );
    }

    #[test]
    fn couch_db_names() {
        for ok in ["links", "a", "qr_tags$(1)+-/x"] {
            assert!(CouchDbName::parse(ok).is_ok(), "{ok:?} rejected");
        }
        for bad in [
            "",
            "Links",
            "_users",
            "1links",
            "links.db",
            &"a".repeat(239),
        ] {
            assert!(CouchDbName::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}

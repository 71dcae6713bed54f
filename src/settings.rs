//! Everything the service is started with, already validated: the CLI and the
//! tests both build a [`Settings`] and hand it to
//! [`Application::build`](crate::startup::Application::build).

use std::fmt;
use std::path::PathBuf;

pub use crate::access_log::{AccessLogTarget, WriterOptions};
use crate::tracking_cookie::CookieName;

/// The origin that short URLs are printed with, e.g. `https://0x1f.ie`.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicUrl {
    /// ASCII-serialized origin, no trailing slash.
    origin: String,
    https: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the public URL must be an http(s) origin with nothing after the host, like https://0x1f.ie: {0:?}"
)]
pub struct InvalidPublicUrl(pub String);

impl PublicUrl {
    pub fn parse(s: &str) -> Result<Self, InvalidPublicUrl> {
        let bad = || InvalidPublicUrl(s.to_owned());
        let u = url::Url::parse(s).map_err(|_| bad())?;
        let plain_origin = matches!(u.scheme(), "http" | "https")
            && u.host_str().is_some()
            && u.username().is_empty()
            && u.password().is_none()
            && u.path() == "/"
            && u.query().is_none()
            && u.fragment().is_none();
        if !plain_origin {
            return Err(bad());
        }
        Ok(Self {
            origin: u.origin().ascii_serialization(),
            https: u.scheme() == "https",
        })
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub fn is_https(&self) -> bool {
        self.https
    }

    /// The short URL for `key`: what is printed on the tag.
    pub fn short_url(&self, key: &str) -> String {
        format!("{}/{}", self.origin, key)
    }
}

impl std::str::FromStr for PublicUrl {
    type Err = InvalidPublicUrl;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin)
    }
}

impl fmt::Debug for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicUrl({})", self.origin)
    }
}

/// Which store holds the links.
#[derive(Debug, Clone)]
pub enum StoreSettings {
    /// The embedded SQLite file.
    Sqlite { path: PathBuf },
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// Public listener: every path is a redirect request. Port 0 picks a free port.
    pub listen: String,
    /// Admin listener: health, readiness (and later API, QR, metrics). Never public by default.
    pub admin_listen: String,
    pub public_url: PublicUrl,
    pub store: StoreSettings,
    /// Worker threads of the public listener; `None` means one per core.
    pub workers: Option<usize>,
    /// Where the public listener's access log goes.
    pub access_log: AccessLogTarget,
    pub access_log_options: WriterOptions,
    /// The tracking cookie; `None` turns tracking off (the log shows `-`).
    pub tracking: Option<TrackingSettings>,
    /// Proxies whose `X-Forwarded-For` is believed; see [`crate::client_ip`].
    pub trusted_proxies: Vec<ipnet::IpNet>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TrackingSettings {
    pub cookie_name: CookieName,
}

impl Settings {
    /// Settings for a local run on the embedded store at `db`. The access log
    /// goes beside the database (not into the working directory), so tests
    /// that use a temporary database leave nothing behind.
    pub fn local(db: PathBuf) -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            admin_listen: "127.0.0.1:8081".into(),
            public_url: PublicUrl {
                origin: "http://127.0.0.1:8080".into(),
                https: false,
            },
            access_log: AccessLogTarget::Path(db.with_file_name("access.log")),
            access_log_options: WriterOptions::default(),
            store: StoreSettings::Sqlite { path: db },
            workers: None,
            tracking: Some(TrackingSettings::default()),
            trusted_proxies: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_url_is_an_origin() {
        let p = PublicUrl::parse("https://0x1f.ie").expect("valid");
        assert_eq!(p.short_url("H83if"), "https://0x1f.ie/H83if");
        assert!(p.is_https());
        assert_eq!(
            PublicUrl::parse("HTTPS://Bücher.example:443/").map(|p| p.origin().to_owned()),
            Ok("https://xn--bcher-kva.example".into())
        );
        for bad in [
            "0x1f.ie",
            "ftp://a.example",
            "https://a.example/x",
            "https://a.example/?q",
            "https://u@a.example",
        ] {
            assert!(PublicUrl::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}

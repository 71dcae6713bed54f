//! Several domains on the public listener (issue 36): one [`Site`] per
//! configured domain, picked per request by its `Host`.
//!
//! The pick is a pure function of the header bytes ([`route`]), so every
//! shape of `Host` and `X-Forwarded-Host` is tested without a socket. A
//! configuration without domains has one site and no host: the pick then
//! reads no header at all, so a single-domain service pays nothing for it.

use std::sync::Arc;

use actix_web::http::header::HeaderValue;

use crate::access_log::AccessLog;
use crate::server::dead_tag::DeadTagPage;
use crate::snapshot::Snapshot;
use crate::store::live_url::LiveUrl;
use crate::tracking::cookie::TrackingCookie;
use crate::values::host::{Host, name_of};

/// What a request for a host of no configured domain gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum UnknownHost {
    /// 404 with a short plain body, logged in the default domain's access
    /// log with [`UNKNOWN_HOST_LOGGED`] and counted on `/metrics`.
    #[default]
    NotFound,
    /// The default domain's answer, as if it had been asked.
    Default,
}

/// The status an unknown host's request is logged with, though it is
/// answered 404: 421 Misdirected Request says what happened, and keeps
/// those lines out of the default domain's counts of unknown keys.
pub const UNKNOWN_HOST_LOGGED: u16 = 421;

impl std::str::FromStr for UnknownHost {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "404" => Ok(Self::NotFound),
            "default" => Ok(Self::Default),
            _ => Err(format!("`{s}`: give 404 or default")),
        }
    }
}

/// One domain as the public listener serves it: what a single-domain
/// server held before issue 36.
pub struct Site {
    /// `None` only for the default site of a configuration without domains.
    pub host: Option<Host>,
    pub snapshot: Arc<Snapshot>,
    /// The current public URL, read once per answer.
    pub public_url: LiveUrl,
    pub access_log: AccessLog,
    /// `None` when tracking is off.
    pub tracking: Option<TrackingCookie>,
    /// What a browser gets for a key that leads nowhere.
    pub dead_tag: DeadTagPage,
    /// Where `/` sends a browser, ready as a `Location`.
    pub root: Option<HeaderValue>,
}

/// The sites of the public listener, the default one first.
pub struct Sites {
    sites: Box<[Site]>,
    unknown: UnknownHost,
}

/// Which site answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Site(usize),
    /// No configured domain (and [`UnknownHost::NotFound`]).
    Unknown,
}

impl Sites {
    /// `default` first, then the others; their hosts are distinct (the
    /// configuration was checked).
    pub fn new(default: Site, others: Vec<Site>, unknown: UnknownHost) -> Self {
        let sites = std::iter::once(default).chain(others).collect();
        Self { sites, unknown }
    }

    pub fn default_site(&self) -> &Site {
        &self.sites[0]
    }

    pub fn get(&self, i: usize) -> Option<&Site> {
        self.sites.get(i)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Site> {
        self.sites.iter()
    }

    /// Whether a request's host is looked at: more than the one site of a
    /// configuration without domains.
    pub fn routes(&self) -> bool {
        self.sites.len() > 1 || self.sites[0].host.is_some()
    }

    /// The site for a request whose host is `host` (the `Host` header, or
    /// the authority of an absolute-form target) and, from a trusted
    /// proxy only, `forwarded` (its `X-Forwarded-Host` values).
    pub fn route<'a>(
        &self,
        host: Option<&[u8]>,
        forwarded: impl FnOnce() -> Option<&'a [u8]>,
    ) -> Route {
        if !self.routes() {
            return Route::Site(0);
        }
        route(&self.sites, host, forwarded, self.unknown)
    }
}

/// [`Sites::route`]'s decision. A proxy's `X-Forwarded-Host` names the
/// host the client asked it for, and wins over the `Host` the proxy sent
/// (often its upstream's name); of a list, the right-most entry, the one
/// the nearest (trusted) proxy wrote.
pub fn route<'a>(
    sites: &[Site],
    host: Option<&[u8]>,
    forwarded: impl FnOnce() -> Option<&'a [u8]>,
    unknown: UnknownHost,
) -> Route {
    let asked = forwarded()
        .and_then(|v| v.rsplit(|&b| b == b',').next())
        .map(<[u8]>::trim_ascii)
        .filter(|v| !v.is_empty())
        .or(host);
    // The port and a trailing dot cut off once, then a byte compare a site
    // (the length first): no allocation, a few comparisons for a few sites.
    let found = asked.map(name_of).and_then(|name| {
        sites.iter().position(|s| {
            s.host
                .as_ref()
                .is_some_and(|h| name.eq_ignore_ascii_case(h.as_str().as_bytes()))
        })
    });
    match (found, unknown) {
        (Some(i), _) => Route::Site(i),
        (None, UnknownHost::Default) => Route::Site(0),
        (None, UnknownHost::NotFound) => Route::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(host: Option<&str>) -> Site {
        let public_url =
            crate::values::public_url::PublicUrl::parse("https://x.example").expect("url");
        Site {
            host: host.map(|h| Host::parse(h).expect("host")),
            snapshot: Snapshot::new(),
            public_url: LiveUrl::new(public_url),
            access_log: AccessLog::open(
                &crate::access_log::AccessLogTarget::Path("/dev/null".into()),
                crate::access_log::WriterOptions::default(),
            )
            .expect("a log to nowhere"),
            tracking: None,
            dead_tag: DeadTagPage::default(),
            root: None,
        }
    }

    fn three(unknown: UnknownHost) -> Sites {
        Sites::new(
            site(Some("a.example")),
            vec![site(Some("b.example")), site(Some("c.example"))],
            unknown,
        )
    }

    #[test]
    fn one_site_without_a_host_reads_no_header() {
        let sites = Sites::new(site(None), Vec::new(), UnknownHost::NotFound);
        let never = || -> Option<&[u8]> { panic!("no header is read") };
        assert_eq!(sites.route(Some(b"anything"), never), Route::Site(0));
        assert_eq!(sites.route(None, || None), Route::Site(0));
    }

    #[test]
    fn the_host_picks_the_site() {
        let sites = three(UnknownHost::NotFound);
        assert_eq!(sites.route(Some(b"a.example"), || None), Route::Site(0));
        assert_eq!(
            sites.route(Some(b"B.example:8080"), || None),
            Route::Site(1)
        );
        assert_eq!(sites.route(Some(b"c.example."), || None), Route::Site(2));
        assert_eq!(sites.route(Some(b"d.example"), || None), Route::Unknown);
        assert_eq!(sites.route(None, || None), Route::Unknown);
        let lenient = three(UnknownHost::Default);
        assert_eq!(lenient.route(Some(b"d.example"), || None), Route::Site(0));
    }

    #[test]
    fn a_forwarded_host_wins_and_its_last_entry_counts() {
        let sites = three(UnknownHost::NotFound);
        assert_eq!(
            sites.route(Some(b"a.example"), || Some(&b"c.example"[..])),
            Route::Site(2)
        );
        assert_eq!(
            sites.route(Some(b"a.example"), || Some(&b"c.example, b.example"[..])),
            Route::Site(1)
        );
        assert_eq!(
            sites.route(Some(b"a.example"), || Some(&b"  "[..])),
            Route::Site(0),
            "an empty value is no value"
        );
        assert_eq!(
            sites.route(Some(b"a.example"), || Some(&b"evil.example"[..])),
            Route::Unknown
        );
    }

    #[test]
    fn unknown_host_is_404_or_default() {
        assert_eq!("404".parse(), Ok(UnknownHost::NotFound));
        assert_eq!("default".parse(), Ok(UnknownHost::Default));
        assert!("yes".parse::<UnknownHost>().is_err());
    }
}

//! A scan as a link's rules see it (issue 34): the redirect handler's
//! [`ScanFacts`], read from the request only when a rule asks, so a link
//! whose rules are about time reads no header, and only a `country` rule
//! looks the address up in the GeoIP database.
//!
//! One value serves every hop of a request: each link reached through an
//! internal redirect chooses with the same facts ([`RequestFacts::choose`]),
//! and what the links read is gathered for the answer's `Vary`.
//!
//! The split's scanner is the tracking ID when tracking is on and the
//! browser did not ask otherwise (`Sec-GPC: 1`): the one it presented, or a
//! new one minted here and handed back ([`RequestFacts::minted`]) for the
//! `Set-Cookie`, so a first scan keeps its variant on the next. Without an
//! ID, the client address and the User-Agent.

use std::cell::OnceCell;
use std::net::IpAddr;

use actix_web::HttpRequest;
use actix_web::http::header::{self, HeaderValue};

use crate::link::rules::{Reads, Rules, ScanFacts, split};
use crate::stats::dimensions::place::GeoDb;
use crate::tracking::cookie::{Presented, TrackingCookie};
use crate::tracking::id::TrackingId;

/// What the facts are read from, besides the request.
pub struct FactSources<'s> {
    /// The tracking cookie, `None` when tracking is off or the browser sent
    /// `Sec-GPC: 1`: then the split reads the address and User-Agent.
    pub tracking: Option<&'s TrackingCookie>,
    /// `serve --geoip-db`; without it no `country` rule holds.
    pub geoip: Option<&'s GeoDb>,
    /// The client's address (behind a trusted proxy, the client's), worked
    /// out only when a rule needs it.
    pub client_ip: &'s dyn Fn() -> Option<IpAddr>,
    /// The request's arrival, for a minted ID's time.
    pub now_ms: i64,
}

/// The facts of one request, each read at most once.
pub struct RequestFacts<'r, 's> {
    req: &'r HttpRequest,
    sources: FactSources<'s>,
    user_agent: OnceCell<&'r [u8]>,
    accept_language: OnceCell<&'r [u8]>,
    country: Option<Option<[u8; 2]>>,
    /// Who the split reads: the tracking ID's text, or `address UA`.
    scanner: Option<Vec<u8>>,
    minted: Option<TrackingId>,
    /// The link whose rules are being tested (the split's bucket is per link).
    key: String,
    reads: Reads,
}

impl<'r, 's> RequestFacts<'r, 's> {
    pub fn new(req: &'r HttpRequest, sources: FactSources<'s>) -> Self {
        Self {
            req,
            sources,
            user_agent: OnceCell::new(),
            accept_language: OnceCell::new(),
            country: None,
            scanner: None,
            minted: None,
            key: String::new(),
            reads: Reads::NONE,
        }
    }

    /// The destination `key`'s `rules` give this scan at `now_ms`, or
    /// `None` for the link's `url`; remembers what they read, for `Vary`.
    pub fn choose<'t>(&mut self, key: &str, rules: &'t Rules, now_ms: i64) -> Option<&'t str> {
        self.choose_rule(key, rules, now_ms)
            .and_then(|i| rules.url(i))
            .map(|d| d.as_str())
    }

    /// [`RequestFacts::choose`] as the rule's index, for what the rules
    /// know of it beyond its text ([`Rules::is_plain`]).
    pub fn choose_rule(&mut self, key: &str, rules: &Rules, now_ms: i64) -> Option<usize> {
        self.reads = self.reads | rules.reads();
        // Only a split reads the key: no copy of it for other rules.
        if rules.reads().contains(Reads::SPLIT) {
            key.clone_into(&mut self.key);
        }
        rules.choose(self, now_ms)
    }

    /// What the rules of every link chosen with read, together.
    pub fn reads(&self) -> Reads {
        self.reads
    }

    /// The tracking ID minted for a scan without one, which the split used:
    /// the one the response's `Set-Cookie` must carry.
    pub fn minted(&self) -> Option<TrackingId> {
        self.minted
    }

    fn header(&self, name: header::HeaderName) -> &'r [u8] {
        self.req
            .headers()
            .get(name)
            .map_or(&[][..], HeaderValue::as_bytes)
    }

    fn scanner(&mut self) -> &[u8] {
        if self.scanner.is_none() {
            let who = match self.sources.tracking {
                Some(cookie) => {
                    let cookies = self
                        .req
                        .headers()
                        .get_all(header::COOKIE)
                        .map(HeaderValue::as_bytes);
                    let id = match cookie.find(cookies) {
                        Presented::Valid(id) => id,
                        Presented::Absent | Presented::Invalid => {
                            let id = TrackingId::generate_now(self.sources.now_ms);
                            self.minted = Some(id);
                            id
                        }
                    };
                    id.as_bytes().to_vec()
                }
                None => {
                    let ip = (self.sources.client_ip)()
                        .map(|ip| ip.to_string())
                        .unwrap_or_default();
                    let mut who = ip.into_bytes();
                    who.push(b' ');
                    who.extend_from_slice(self.user_agent());
                    who
                }
            };
            self.scanner = Some(who);
        }
        self.scanner.as_deref().unwrap_or_default()
    }
}

impl ScanFacts for RequestFacts<'_, '_> {
    fn user_agent(&self) -> &[u8] {
        self.user_agent
            .get_or_init(|| self.header(header::USER_AGENT))
    }

    fn accept_language(&self) -> &[u8] {
        self.accept_language
            .get_or_init(|| self.header(header::ACCEPT_LANGUAGE))
    }

    fn country(&mut self) -> Option<[u8; 2]> {
        if self.country.is_none() {
            let found = self.sources.geoip.and_then(|db| {
                let ip = (self.sources.client_ip)()?;
                let place = db.place(ip);
                <[u8; 2]>::try_from(place.country.as_bytes())
                    .ok()
                    .filter(|c| c.iter().all(u8::is_ascii_uppercase))
            });
            self.country = Some(found);
        }
        self.country.flatten()
    }

    fn split_bucket(&mut self) -> u8 {
        let key = std::mem::take(&mut self.key);
        let bucket = split::bucket(&key, self.scanner());
        self.key = key;
        bucket
    }
}

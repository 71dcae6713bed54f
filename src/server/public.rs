//! The public listener: every path is a redirect request.
//!
//! This is the hot path. It reads the snapshot (no lock, no store), runs the
//! pure policy, and writes three headers. One catch-all service instead of a
//! route table, because route matching costs a few percent per request and
//! every path here means the same thing.
//!
//! [`handle`] wraps the decision ([`answer`]) with what every response gets,
//! whatever the decision was: the tracking cookie and an access log line.

use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};

use crate::access_log::{AccessLog, Record};
use crate::link::rules::VARY_VALUES;
use crate::metrics::RequestMetrics;
use crate::redirect::policy::{self, Decision};
use crate::server::header_value;
use crate::server::request_heads::HeadFields;
use crate::server::request_line::{Answered, LogOwnAnswer};
use crate::server::scan_facts::{FactSources, RequestFacts};
use crate::server::sites::{Route, Site, Sites, UNKNOWN_HOST_LOGGED};
use crate::tracking::client_ip::{ClientIpMode, client_ip, is_trusted_proxy};
use crate::tracking::id::TrackingId;
use crate::values::public_url::PublicUrl;

/// What the public handler shares across requests.
pub struct PublicState {
    /// Issue 36: each domain's links, public URL, access log, tracking
    /// cookie, dead-tag page and root redirect; one site without domains.
    pub sites: Sites,
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// How much of the client's address reaches the log.
    pub client_ip_mode: ClientIpMode,
    /// Counts and times every answer; atomics only (see [`RequestMetrics`]).
    pub metrics: Arc<RequestMetrics>,
    /// Issue 34: `serve --geoip-db`, for `country` rules; opened once.
    pub geoip: Option<crate::stats::dimensions::place::GeoDb>,
}

const NO_STORE: HeaderValue = HeaderValue::from_static("private, no-store");

pub async fn handle(req: HttpRequest, state: web::Data<PublicState>) -> HttpResponse {
    let started = std::time::Instant::now();
    let arrived = Utc::now();
    if let Some(answered) = req.conn_data::<Answered>() {
        answered.note();
    }
    let seen = Seen::of(req.headers());
    // Issue 36: the domain asked for; without domains no header is read.
    let route = state.sites.route(
        req.uri()
            .host()
            .map(str::as_bytes)
            .or_else(|| seen.host.map(HeaderValue::as_bytes)),
        || {
            let peer = req.peer_addr()?.ip();
            is_trusted_proxy(peer, &state.trusted_proxies)
                .then_some(seen.forwarded_host?.as_bytes())
        },
    );
    let site = match route {
        Route::Site(i) => state.sites.get(i),
        Route::Unknown => None,
    };
    let Some(site) = site else {
        return unknown_host(&req, &seen, &state, arrived, started);
    };
    let Answer {
        mut res,
        key,
        minted,
    } = answer_scan(&req, &state, site, arrived);
    // The invitation is the one stored with the link the client asked for,
    // never one in the request's query: the query is merged into the
    // `Location`, so reading it there would serve whatever JSON a crafted
    // URL carries from this origin (issue 19, item 7).
    if res.status() == StatusCode::FOUND
        && req.method() == Method::GET
        && seen.accept
        && super::accept::accepts(req.headers(), "application/json")
        && let Some(key) = key
        && let Some(invitation) = site
            .snapshot
            .load()
            .live_url(&key, arrived.timestamp_millis())
            .and_then(crate::didcomm::oob::invitation_in)
    {
        res = invitation_response(&invitation);
    }
    // A browser saying "do not sell or share" (Global Privacy Control) gets
    // no cookie and its line no ID; the scan still counts.
    let tracking = site
        .tracking
        .as_ref()
        .filter(|_| !asks_no_tracking(seen.sec_gpc))
        .map(|cookie| {
            let cookies = seen
                .cookie
                .then(|| req.headers().get_all(header::COOKIE))
                .into_iter()
                .flatten();
            let mut value = Vec::with_capacity(cookie.set_cookie_len());
            let id = match minted {
                // Issue 34: the ID a split chose with for a scan without one.
                Some(id) => {
                    cookie.write_set_cookie(&id, &mut value);
                    id
                }
                None => cookie.respond(
                    cookies.map(HeaderValue::as_bytes),
                    arrived.timestamp_millis(),
                    &mut value,
                ),
            };
            // A token name and an alphanumeric ID always make a valid value.
            if let Some(value) = header_value::printable(value) {
                res.headers_mut().append(header::SET_COOKIE, value);
            }
            id
        });
    log_request(
        &req,
        &seen,
        &state,
        &site.access_log,
        arrived,
        tracking.as_ref(),
        &res,
        res.status().as_u16(),
    );
    state
        .metrics
        .record(req.method(), res.status(), started.elapsed());
    // `own_answer` tells actix's answers from ours by this.
    debug_assert!(
        !(res.status().is_client_error() || res.status().is_server_error())
            || !matches!(
                actix_web::body::MessageBody::size(res.body()),
                actix_web::body::BodySize::Sized(0) | actix_web::body::BodySize::None
            ),
        "an error answer of the handler must have a body"
    );
    res
}

/// `Sec-GPC: 1`, the Global Privacy Control signal: the only value the
/// specification defines; anything else is no signal.
fn asks_no_tracking(sec_gpc: Option<&HeaderValue>) -> bool {
    sec_gpc.is_some_and(|v| v.as_bytes().trim_ascii() == b"1")
}

/// A constant name: a `&str` would be parsed into one on every request.
const SEC_GPC: header::HeaderName = header::HeaderName::from_static("sec-gpc");
/// Issue 36: the host a trusted proxy was asked for.
const X_FORWARDED_HOST: header::HeaderName = header::HeaderName::from_static("x-forwarded-host");

/// The request headers the handler reads, found in one pass over the few a
/// request has instead of a hash lookup for each of five names (about 100
/// instructions apiece; issue 24). Single values are the first of their
/// name, as `HeaderMap::get` gives; for the lists (`Accept`, `Cookie`) only
/// whether there are any, so the lookup is made only then.
#[derive(Default)]
struct Seen<'a> {
    user_agent: Option<&'a HeaderValue>,
    referer: Option<&'a HeaderValue>,
    sec_gpc: Option<&'a HeaderValue>,
    accept: bool,
    cookie: bool,
    /// Issue 36: the first `Host`, and the last `X-Forwarded-Host` (the
    /// nearest proxy's), read only when there are domains to pick from.
    host: Option<&'a HeaderValue>,
    forwarded_host: Option<&'a HeaderValue>,
}

impl<'a> Seen<'a> {
    fn of(headers: &'a header::HeaderMap) -> Self {
        let mut seen = Self::default();
        for (name, value) in headers.iter() {
            if name == header::USER_AGENT {
                seen.user_agent.get_or_insert(value);
            } else if name == header::REFERER {
                seen.referer.get_or_insert(value);
            } else if name == header::COOKIE {
                seen.cookie = true;
            } else if name == header::ACCEPT {
                seen.accept = true;
            } else if name == SEC_GPC {
                seen.sec_gpc.get_or_insert(value);
            } else if name == header::HOST {
                seen.host.get_or_insert(value);
            } else if name == X_FORWARDED_HOST {
                seen.forwarded_host = Some(value);
            }
        }
        seen
    }
}

/// The invitation itself instead of the redirect (DIDComm out-of-band short
/// URLs): 200 with its JSON, never cached.
fn invitation_response(invitation: &serde_json::Value) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, NO_STORE))
        .insert_header((
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .content_type("application/json")
        .body(invitation.to_string())
}

/// The target as the log writes it: path and query as received, or for
/// `CONNECT host:443` (authority form, no path) the authority as sent, less
/// any credentials.
fn logged_target(uri: &actix_web::http::Uri) -> &str {
    match (uri.path_and_query(), uri.authority()) {
        (Some(pq), _) => pq.as_str(),
        (None, Some(authority)) => authority
            .as_str()
            .rsplit_once('@')
            .map_or(authority.as_str(), |(_, host)| host),
        (None, None) => "/",
    }
}

/// Marks a dead link's fallback redirect for [`log_request`], which writes
/// it so `qrtag stats` counts the scan apart (issue 33).
#[derive(Debug, Clone, Copy)]
struct FallbackAnswer;

/// `status` is the answer's, except for a host of no domain (issue 36),
/// which is logged as [`UNKNOWN_HOST_LOGGED`].
#[allow(clippy::too_many_arguments)]
fn log_request(
    req: &HttpRequest,
    seen: &Seen<'_>,
    state: &PublicState,
    log: &AccessLog,
    arrived: DateTime<Utc>,
    tracking: Option<&TrackingId>,
    res: &HttpResponse,
    status: u16,
) {
    let headers = req.headers();
    let uri = req.uri();
    // The path and query that were resolved, as received: for the
    // absolute-form (`GET http://u:pw@host/H83if`, from proxies) that is
    // `/H83if`, so credentials never reach the log and `qrtag stats` counts
    // the key. Raw non-ASCII bytes arrive here already written `%XX` by
    // `server::request_line`, exactly as the target encoding would write them.
    let target = logged_target(uri);
    log.append_record(&Record {
        time: arrived,
        client_ip: client_address(
            req.peer_addr(),
            // Looked up only behind a trusted proxy: a lookup a request.
            || {
                headers
                    .get_all(header::X_FORWARDED_FOR)
                    .map(HeaderValue::as_bytes)
            },
            &state.trusted_proxies,
            state.client_ip_mode,
        ),
        tracking,
        user_agent: seen.user_agent.map(HeaderValue::as_bytes),
        target: target.as_bytes(),
        status,
        location: res
            .headers()
            .get(header::LOCATION)
            .and_then(header_value::to_str),
        fallback: res.extensions().contains::<FallbackAnswer>(),
        method: req.method().as_str(),
        referer: seen.referer.map(HeaderValue::as_bytes),
    });
}

/// The client's address as the log keeps it (`mode`): the peer, or behind
/// a trusted proxy the nearest untrusted `X-Forwarded-For` hop.
fn client_address<'a, I: Iterator<Item = &'a [u8]>>(
    peer: Option<SocketAddr>,
    forwarded: impl FnOnce() -> I,
    trusted_proxies: &[ipnet::IpNet],
    mode: ClientIpMode,
) -> Option<IpAddr> {
    if mode == ClientIpMode::None {
        return None;
    }
    // Only a listener on a Unix socket has no peer address; the public one is TCP.
    let peer = peer.map_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED), |a| a.ip());
    let ip = if trusted_proxies.is_empty() {
        peer.to_canonical()
    } else {
        let forwarded: Vec<&[u8]> = forwarded().collect();
        client_ip(peer, &forwarded, trusted_proxies)
    };
    mode.logged(ip)
}

/// The line for an answer actix gave on its own (a 400 for a head it cannot
/// parse, 431, 408), which no handler saw: what could be read of the request,
/// `-` for the rest. No cookie was read or set, so no tracking ID.
pub fn own_answer_logger(
    access_log: AccessLog,
    trusted_proxies: Vec<ipnet::IpNet>,
    mode: ClientIpMode,
) -> LogOwnAnswer {
    Arc::new(move |status, fields: &HeadFields<'_>, peer| {
        access_log.append_record(&Record {
            time: Utc::now(),
            client_ip: client_address(
                peer,
                || fields.forwarded_for.iter().copied(),
                &trusted_proxies,
                mode,
            ),
            tracking: None,
            user_agent: fields.user_agent,
            // Empty fields are logged as `-`.
            target: fields.target.as_deref().unwrap_or_default(),
            status,
            location: None,
            fallback: false,
            method: fields
                .method
                .and_then(|m| std::str::from_utf8(m).ok())
                .unwrap_or_default(),
            referer: fields.referer,
        });
    })
}

/// The response for `req`, before the cookie and the log line, and for a
/// redirect the key the client asked for (borrowed from the request in the
/// common case: it is needed only for the rare JSON invitation). `now` is the arrival time, also
/// logged: one clock read serves both, and the line shows the time the
/// link's expiry was judged at.
pub fn answer<'a>(
    req: &'a HttpRequest,
    state: &PublicState,
    site: &Site,
    now: DateTime<Utc>,
) -> (HttpResponse, Option<Cow<'a, str>>) {
    let a = answer_scan(req, state, site, now);
    (a.res, a.key)
}

/// [`answer`]'s response and key, with the tracking ID a link's split
/// minted for a scan that had none (issue 34): the cookie must carry it.
pub struct Answer<'a> {
    pub res: HttpResponse,
    pub key: Option<Cow<'a, str>>,
    pub minted: Option<TrackingId>,
}

impl<'a> Answer<'a> {
    fn of(res: HttpResponse, key: Option<Cow<'a, str>>) -> Self {
        Self {
            res,
            key,
            minted: None,
        }
    }
}

/// [`answer`], with what the handler needs beyond it.
pub fn answer_scan<'a>(
    req: &'a HttpRequest,
    state: &PublicState,
    site: &Site,
    now: DateTime<Utc>,
) -> Answer<'a> {
    let method = req.method();
    if method != Method::GET && method != Method::HEAD {
        let res = HttpResponse::build(StatusCode::NOT_IMPLEMENTED)
            .insert_header((header::ALLOW, HeaderValue::from_static("GET, HEAD")))
            .content_type("text/plain; charset=utf-8")
            .body("method not implemented: use GET or HEAD\n");
        return Answer::of(res, None);
    }
    // Issue 36: a domain's `/` leads to the brand's own site.
    if let Some(root) = &site.root
        && req.uri().path() == "/"
    {
        return Answer::of(root_redirect(root), None);
    }
    // Before the first table is in, every key would look unknown; a 404
    // could be cached by the scanning phone, a 503 is retried.
    if !site.snapshot.is_loaded() {
        return Answer::of(links_loading(), None);
    }
    let now_ms = now.timestamp_millis();
    let table = site.snapshot.load();
    let public_url = site.public_url.load();
    let uri = req.uri();
    // The common scan, `/KEY` with no query, has its answer precomputed.
    if uri.query().is_none()
        && let Some(key) = uri.path().strip_prefix('/')
        && let Some(location) = table.direct_location(key, now_ms, public_url.origin())
    {
        let res = redirect(location.to_owned(), key, &public_url);
        return Answer::of(res, Some(Cow::Borrowed(key)));
    }
    // Issue 34: a link with rules (never on the direct path) chooses its
    // destination with the scan's facts, at every hop, before the resolver
    // treats it as it treats `url`. Made only when a link has rules.
    let client_ip = || {
        client_address(
            req.peer_addr(),
            || {
                req.headers()
                    .get_all(header::X_FORWARDED_FOR)
                    .map(HeaderValue::as_bytes)
            },
            &state.trusted_proxies,
            ClientIpMode::Full,
        )
    };
    let new_facts = || {
        RefCell::new(RequestFacts::new(
            req,
            FactSources {
                tracking: site
                    .tracking
                    .as_ref()
                    .filter(|_| !asks_no_tracking(req.headers().get(SEC_GPC))),
                geoip: state.geoip.as_ref(),
                client_ip: &client_ip,
                now_ms,
            },
        ))
    };
    let facts: OnceCell<RefCell<RequestFacts<'_, '_>>> = OnceCell::new();
    // Issue 34: `/KEY` of a link with rules whose chosen destination is a
    // plain URL is answered with it, as the direct path answers a link
    // without rules: the resolver would give the same (the policy's
    // `plain_direct_location`), at several times the cost.
    if uri.query().is_none()
        && let Some(key) = uri.path().strip_prefix('/')
        && let Some(link) = table.get(key).filter(|l| l.is_live_at(now_ms))
        && let Some(rules) = link.rules
    {
        let cell = facts.get_or_init(&new_facts);
        let chosen = cell.borrow_mut().choose_rule(key, rules, now_ms);
        // A rule's destination was judged plain or not when the link was
        // loaded, and so was the link's `url`.
        let (value, plain) = match chosen.and_then(|i| rules.url(i).map(|d| (d, i))) {
            Some((d, i)) => (d.as_str(), rules.is_plain(i)),
            None => (link.url, rules.url_is_direct()),
        };
        if let Some(location) = policy::judged_direct_location(key, value, plain)
            .filter(|l| !policy::is_on_public_origin(l, public_url.origin()))
        {
            let mut res = redirect(location.to_owned(), key, &public_url);
            let minted = with_vary(&mut res, &cell.borrow());
            return Answer {
                res,
                key: Some(Cow::Borrowed(key)),
                minted,
            };
        }
    }
    let decision = policy::decide(public_url.origin(), uri.path(), uri.query(), |key| {
        let link = table.get(key).filter(|l| l.is_live_at(now_ms))?;
        let Some(rules) = link.rules else {
            return Some(link.url);
        };
        let facts = facts.get_or_init(&new_facts);
        let chosen = facts.borrow_mut().choose(key, rules, now_ms);
        Some(chosen.unwrap_or(link.url))
    });
    let key = match &decision {
        Decision::Redirect { key, .. } => Some(Cow::Owned(key.clone())),
        _ => None,
    };
    let mut res = respond(decision, &public_url, uri.path());
    let minted = facts
        .into_inner()
        .and_then(|facts| with_vary(&mut res, &facts.into_inner()));
    if res.status() == StatusCode::NOT_FOUND {
        // A dead link with a fallback sends its scans there (issue 33):
        // asked only here, so a live scan does no more work than before.
        let asked = uri.path().strip_prefix('/').unwrap_or_default();
        if let Some(fallback) = table.fallback_at(asked, now_ms) {
            let mut res = redirect(fallback.to_owned(), asked, &public_url);
            // For the log line: counted apart from live scans.
            res.extensions_mut().insert(FallbackAnswer);
            return Answer::of(res, Some(Cow::Borrowed(asked)));
        }
        res = dead_tag(req, site, uri.path());
    }
    Answer { res, key, minted }
}

/// Issue 34: the `Vary` of an answer chosen by rules (never cached for
/// another person: it depends on these headers); the tracking ID the split
/// minted, for the cookie.
fn with_vary(res: &mut HttpResponse, facts: &RequestFacts<'_, '_>) -> Option<TrackingId> {
    if let Some(vary) = facts.reads().vary_index().and_then(|i| VARY.get(i)) {
        res.headers_mut().append(header::VARY, vary.clone());
    }
    facts.minted()
}

/// Issue 34: each `Vary` value as a header, checked once at compile time
/// (`HeaderValue::from_static` at run time checked every byte, per scan).
static VARY: [HeaderValue; VARY_VALUES.len()] = [
    HeaderValue::from_static(VARY_VALUES[0]),
    HeaderValue::from_static(VARY_VALUES[1]),
    HeaderValue::from_static(VARY_VALUES[2]),
    HeaderValue::from_static(VARY_VALUES[3]),
    HeaderValue::from_static(VARY_VALUES[4]),
];

/// The 404 for a key that leads nowhere: the dead-tag page for a browser,
/// the one plain body for everyone else; either way `Vary: Accept`, since
/// the answer depends on it.
fn dead_tag(req: &HttpRequest, site: &Site, path: &str) -> HttpResponse {
    let mut res = if super::accept::prefers_html(req.headers()) {
        HttpResponse::build(StatusCode::NOT_FOUND)
            .insert_header((header::CACHE_CONTROL, NO_STORE))
            .insert_header((
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(
                    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
                     base-uri 'none'; form-action 'none'",
                ),
            ))
            .insert_header((
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ))
            .content_type("text/html; charset=utf-8")
            .body(site.dead_tag.render(path))
    } else {
        not_found()
    };
    res.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("accept"));
    res
}

/// The answer for any request about a link before the first table is
/// published, on either listener: every key would look unknown, and a 404
/// could be cached (by a phone, or a print run's script), a 503 is retried.
pub fn links_loading() -> HttpResponse {
    HttpResponse::build(StatusCode::SERVICE_UNAVAILABLE)
        .insert_header((header::RETRY_AFTER, HeaderValue::from_static("1")))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .content_type("text/plain; charset=utf-8")
        .body("starting: links are loading, retry in a second\n")
}

fn respond(decision: Decision, public_url: &PublicUrl, path: &str) -> HttpResponse {
    match decision {
        Decision::Redirect { location, key } => redirect(location, &key, public_url),
        Decision::NotFound => not_found(),
        Decision::Broken(err) => {
            tracing::warn!(
                path,
                error = %err,
                "a scan's chain of links cannot be resolved (answered 404); `qrtag show` its keys"
            );
            not_found()
        }
        Decision::BadRequest(why) => HttpResponse::build(StatusCode::BAD_REQUEST)
            .insert_header((header::CACHE_CONTROL, NO_STORE))
            .content_type("text/plain; charset=utf-8")
            .body(format!("bad request: {why}\n")),
    }
}

fn redirect(location: String, key: &str, public_url: &PublicUrl) -> HttpResponse {
    let (Some(location), Some(link)) = (
        header_value::printable(location.into_bytes()),
        header_value::printable(shortlink(public_url, key)),
    ) else {
        // Resolved URLs and keys are ASCII by construction; refuse rather
        // than send a broken header if that ever changes.
        return not_found();
    };
    // Into the map directly: the builder's checks cost about 60 instructions
    // a header, for the same map and the same bytes on the wire.
    let mut res = HttpResponse::new(StatusCode::FOUND);
    let headers = res.headers_mut();
    headers.insert(header::LOCATION, location);
    headers.insert(header::CACHE_CONTROL, NO_STORE);
    headers.insert(header::LINK, link);
    res
}

/// The `Link` value naming the short URL, `<https://0x1f.ie/H83if>;
/// rel="shortlink"`: written in place, as two `format!` calls cost 1,760
/// instructions a redirect.
fn shortlink(public_url: &PublicUrl, key: &str) -> Vec<u8> {
    const REL: &[u8] = b">; rel=\"shortlink\"";
    let origin = public_url.origin().as_bytes();
    let mut link = Vec::with_capacity(1 + origin.len() + 1 + key.len() + REL.len());
    link.push(b'<');
    link.extend_from_slice(origin);
    link.push(b'/');
    link.extend_from_slice(key.as_bytes());
    link.extend_from_slice(REL);
    link
}

/// One answer for unknown, inactive and expired keys. Not cacheable, so a tag
/// scanned before it went live works on the next scan.
fn not_found() -> HttpResponse {
    HttpResponse::build(StatusCode::NOT_FOUND)
        .insert_header((header::CACHE_CONTROL, NO_STORE))
        .content_type("text/plain; charset=utf-8")
        .body("not found\n")
}

// Issue 36: several domains. ------------------------------------------------

/// A request for a host of no configured domain: 404 with a short plain
/// body, logged in the default domain's access log as
/// [`UNKNOWN_HOST_LOGGED`] (so no domain's counts take it for a scan of
/// theirs) and counted apart on `/metrics`. No cookie: it is no domain's.
fn unknown_host(
    req: &HttpRequest,
    seen: &Seen<'_>,
    state: &PublicState,
    arrived: DateTime<Utc>,
    started: std::time::Instant,
) -> HttpResponse {
    let res = HttpResponse::build(StatusCode::NOT_FOUND)
        .insert_header((header::CACHE_CONTROL, NO_STORE))
        .content_type("text/plain; charset=utf-8")
        .body("not found: no such domain here\n");
    let log = &state.sites.default_site().access_log;
    log_request(
        req,
        seen,
        state,
        log,
        arrived,
        None,
        &res,
        UNKNOWN_HOST_LOGGED,
    );
    state
        .metrics
        .record(req.method(), res.status(), started.elapsed());
    state.metrics.record_unknown_host();
    res
}

/// A domain's `/`: to its root URL, never cached (it may change).
fn root_redirect(root: &HeaderValue) -> HttpResponse {
    let mut res = HttpResponse::new(StatusCode::FOUND);
    let headers = res.headers_mut();
    headers.insert(header::LOCATION, root.clone());
    headers.insert(header::CACHE_CONTROL, NO_STORE);
    res
}

//! What every console handler shares: the session cookie, the login and
//! CSRF gates, form bodies, and turning a failed write into a page that
//! says why.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpMessage as _, HttpRequest, HttpResponse, web};
use cookie::{Cookie, SameSite};
use maud::Markup;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::ConsoleState;
use super::csrf::ANONYMOUS_LIFETIME;
use super::device::{self, DeviceId};
use super::limiter::Client;
use super::pages::{self, BASE, Viewer};
use super::session::{COOKIE, Current, IDLE, User};
use super::shown;
use crate::links::LinkError;
use crate::store::StoreError;

const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");

pub fn html(status: StatusCode, markup: Markup) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, NO_STORE))
        .body(markup.into_string())
}

/// An answer whose URL carries a secret (a setup or invitation token) or
/// whose page shows one (an invitation link): no `Referer` leaves it (the
/// console's default is `same-origin`; a header already set is not
/// replaced by it).
pub fn private(mut res: HttpResponse) -> HttpResponse {
    res.headers_mut().insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    res
}

/// A short plain answer, one line.
pub fn plain(status: StatusCode, message: &str) -> HttpResponse {
    let mut body = message.trim_end().to_owned();
    body.push('\n');
    HttpResponse::build(status)
        .content_type("text/plain; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, NO_STORE))
        .body(body)
}

/// Post/redirect/get: a 303 to a page, so a reload never posts again.
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, NO_STORE))
        .finish()
}

/// The session ID the browser sent, if any.
pub fn session_id(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == COOKIE)
        .map(|c| c.value().to_owned())
}

/// The browser's session: a live logged-in one, or an anonymous one from a
/// signed cookie this process issued and that has not expired.
pub fn current(req: &HttpRequest, state: &ConsoleState) -> Option<Current> {
    let id = session_id(req)?;
    if let Some(pass) = state.signer.verify(&id, SystemTime::now()) {
        return Some(Current {
            id: pass.cookie,
            csrf: pass.csrf,
            user: None,
        });
    }
    state.sessions.get(&id)
}

/// `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's
/// page sends it), `Secure` when the console is served over https.
pub fn session_cookie(id: &str, secure: bool) -> String {
    cookie_for(id, IDLE, secure)
}

fn cookie_for(value: &str, lifetime: Duration, secure: bool) -> String {
    Cookie::build((COOKIE, value.to_owned()))
        .path(BASE)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(secure)
        .max_age(cookie::time::Duration::seconds(
            i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX),
        ))
        .build()
        .to_string()
}

pub fn clear_cookie(secure: bool) -> String {
    Cookie::build((COOKIE, ""))
        .path(BASE)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(secure)
        .max_age(cookie::time::Duration::ZERO)
        .build()
        .to_string()
}

/// The answer a gate gives instead of letting a request through (boxed:
/// an `HttpResponse` is large to carry in every `Result`).
pub type Refusal = Box<HttpResponse>;

/// A page for someone not logged in (the login and setup forms), in the
/// browser's session or under a new signed anonymous cookie whose CSRF
/// token the form's POST must bring back; `page` renders it from that
/// token. Nothing is stored for the visitor.
pub fn anonymous_page(
    req: &HttpRequest,
    state: &ConsoleState,
    status: StatusCode,
    page: impl FnOnce(&str) -> Markup,
) -> HttpResponse {
    if let Some(s) = current(req, state) {
        return html(status, page(&s.csrf));
    }
    let pass = state.signer.issue(SystemTime::now());
    with_cookie(
        html(status, page(&pass.csrf)),
        &cookie_for(&pass.cookie, ANONYMOUS_LIFETIME, state.secure_cookie),
    )
}

/// A password or setup attempt counted against a client (its device, or
/// its address), to be given back with [`Attempt::give_back`] when it
/// turns out right or is never checked.
#[must_use]
pub struct Attempt(Client);

impl Attempt {
    pub fn give_back(self, state: &ConsoleState) {
        state.limiter.give_back(self.0, std::time::Instant::now());
    }
}

/// The client's address: the peer, or behind a `--trusted-proxy` the
/// nearest untrusted `X-Forwarded-For` hop, as the public listener logs it
/// (so a TLS proxy in front of the console does not make every visitor one
/// address).
pub fn client_address(req: &HttpRequest, state: &ConsoleState) -> IpAddr {
    // Without a peer address (not on TCP) every such client shares one slot.
    let peer = req
        .peer_addr()
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    if state.trusted_proxies.is_empty() {
        return peer.to_canonical();
    }
    let forwarded: Vec<&[u8]> = req
        .headers()
        .get_all(header::X_FORWARDED_FOR)
        .map(HeaderValue::as_bytes)
        .collect();
    crate::tracking::client_ip::client_ip(peer, &forwarded, &state.trusted_proxies)
}

/// The device a browser's device cookie names for logins as `user`.
fn device(req: &HttpRequest, state: &ConsoleState, user: &str) -> Option<DeviceId> {
    let now = SystemTime::now();
    req.headers()
        .get_all(header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .filter(|c| c.name() == device::COOKIE)
        .find_map(|c| state.devices.verify(c.value(), user, now))
}

/// The device cookie a browser gets when it logs in as `user`.
pub fn device_cookie(state: &ConsoleState, user: &str) -> String {
    Cookie::build((device::COOKIE, state.devices.issue(user, SystemTime::now())))
        .path(BASE)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(state.secure_cookie)
        .max_age(cookie::time::Duration::seconds(
            i64::try_from(device::LIFETIME.as_secs()).unwrap_or(i64::MAX),
        ))
        .build()
        .to_string()
}

/// Counts a password or setup attempt against the client: the device its
/// cookie names for logins as `user`, or else its address (a 429 with
/// `Retry-After` when over the limit).
pub fn attempt(
    req: &HttpRequest,
    state: &ConsoleState,
    user: Option<&str>,
) -> Result<Attempt, Refusal> {
    let client = match user.and_then(|user| device(req, state, user)) {
        Some(id) => Client::Device(id),
        None => Client::from(client_address(req, state)),
    };
    state
        .limiter
        .attempt(client, std::time::Instant::now())
        .map(|()| Attempt(client))
        .map_err(|wait| {
            Box::new(
                HttpResponse::TooManyRequests()
                    .insert_header((header::RETRY_AFTER, wait.to_string()))
                    .content_type("text/plain; charset=utf-8")
                    .body("too many login attempts; wait and try again\n"),
            )
        })
}

/// The answer to an attempt the password check's gate had no room for
/// ([`super::check_gate`]): come back in a second.
pub fn busy(message: &str) -> HttpResponse {
    let mut res = plain(StatusCode::SERVICE_UNAVAILABLE, message);
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    res
}

/// Logs `user` in under a new session ID (so an ID planted before is
/// worth nothing), ends the session the form came from, gives the browser
/// a new device cookie for that user, and goes to the list.
pub fn log_in(state: &ConsoleState, before: &Current, user: User) -> HttpResponse {
    log_in_from(state, before, user, super::session::Origin::default())
}

/// Issue 35 (i35-users): where a login comes from, kept with its session
/// for the person's list of their sessions; `mark` is the user's session
/// counter at login (embedded store).
pub fn origin(
    req: &HttpRequest,
    state: &ConsoleState,
    mark: Option<i64>,
) -> super::session::Origin {
    let agent = req
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mut end = agent.len().min(super::session::AGENT_MAX);
    while !agent.is_char_boundary(end) {
        end -= 1;
    }
    super::session::Origin {
        started: Some(SystemTime::now()),
        address: Some(client_address(req, state)),
        agent: agent[..end].to_owned(),
        mark,
    }
}

/// [`log_in`], the session keeping `origin`.
pub fn log_in_from(
    state: &ConsoleState,
    before: &Current,
    user: User,
    origin: super::session::Origin,
) -> HttpResponse {
    state.sessions.end(&before.id);
    let device = device_cookie(state, &user.name);
    match state.sessions.start_from(user, origin) {
        Some(logged_in) => with_cookie(
            with_cookie(
                see_other(&format!("{BASE}/links")),
                &session_cookie(&logged_in.id, state.secure_cookie),
            ),
            &device,
        ),
        None => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many sessions; try again later",
        ),
    }
}

/// A logged-in request: its session and user, or the way to the login.
/// Issue 36: the user on the domain the request shows ([`shown`]).
pub fn logged_in(req: &HttpRequest, state: &ConsoleState) -> Result<(Current, User), Refusal> {
    let session = current(req, state).ok_or_else(|| Box::new(see_other(&login_path())))?;
    match session.user.clone() {
        Some(mut user) => {
            show_domain(req, state, &mut user, None)?;
            Ok((session, user))
        }
        None => Err(Box::new(see_other(&login_path()))),
    }
}

/// Issue 36: points `user` at the domain the request names (`?domain=`,
/// else the form's field, else the cookie), and notes it for the answer's
/// cookie; a domain named that is not served, or not the user's, is the
/// 404 of a page that does not exist.
fn show_domain(
    req: &HttpRequest,
    state: &ConsoleState,
    user: &mut User,
    form: Option<&Form>,
) -> Result<(), Refusal> {
    let named = form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(name, _)| name == shown::FIELD)
        .map(|(_, value)| value.into_owned())
        .or_else(|| form.and_then(|f| f.get(shown::FIELD)).map(str::to_owned))
        .filter(|v| !v.is_empty());
    let remembered = cookie(req, shown::COOKIE);
    let asked = match (&named, &remembered) {
        (Some(host), _) => shown::Asked::Named(host),
        (None, Some(host)) => shown::Asked::Remembered(host),
        (None, None) => shown::Asked::Nothing,
    };
    let domains = state.domains();
    let not_found = || Box::new(plain(StatusCode::NOT_FOUND, "no such page"));
    let at = shown::choose(domains, &user.access, asked).map_err(|_| not_found())?;
    let (Some(domain), Some(store)) = (domains.all().get(at), user.access.store(at)) else {
        return Err(not_found());
    };
    user.domain = Arc::clone(domain);
    user.store = Arc::clone(store);
    user.switcher = shown::Switcher::of(
        domains,
        &user.access,
        at,
        (
            req.method() == actix_web::http::Method::GET,
            req.path(),
            req.query_string(),
        ),
        &format!("{BASE}/links"),
    )
    .map(Arc::new);
    let remembered = remembered.is_some_and(|r| domains.position(Some(&r)).ok() == Some(at));
    req.extensions_mut().insert(shown::Shown {
        domain: Arc::clone(domain),
        remembered,
    });
    Ok(())
}

/// A cookie's value, by name.
fn cookie(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .map(|c| c.value().to_owned())
}

/// Issue 36: the cookie remembering the domain shown last (no secret:
/// readable by the console's pages only, like the session's).
pub fn domain_cookie(host: &str, secure: bool) -> String {
    Cookie::build((shown::COOKIE, host.to_owned()))
        .path(BASE)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(secure)
        .max_age(cookie::time::Duration::days(365))
        .build()
        .to_string()
}

pub fn login_path() -> String {
    format!("{BASE}/login")
}

pub fn viewer<'a>(session: &'a Current, user: &'a User) -> Viewer<'a> {
    Viewer {
        name: &user.name,
        can_edit: user.role.may_edit(),
        csrf: &session.csrf,
        role: user.role,
        domain: user
            .access
            .several()
            .then(|| user.domain.host.as_ref().map(|h| h.as_str()))
            .flatten(),
        switcher: user.switcher.as_deref(),
    }
}

/// A form body's fields, the first of each name.
pub struct Form(Vec<(String, String)>);

impl Form {
    pub fn parse(body: &[u8]) -> Self {
        Self(form_urlencoded::parse(body).into_owned().collect())
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A field with surrounding blanks removed; `None` when empty.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.get(name).map(str::trim).filter(|s| !s.is_empty())
    }

    /// Every field as sent, in order (a bulk action's ticked keys repeat
    /// one name).
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }
}

/// A POST's gate: a live session and its CSRF token in the form, or a 403
/// with one line before anything else is read or written.
pub fn checked_form(
    req: &HttpRequest,
    state: &ConsoleState,
    body: &web::Bytes,
) -> Result<(Current, Form), Refusal> {
    let form = Form::parse(body);
    match current(req, state) {
        Some(session) if super::csrf::matches(&session.csrf, form.get(super::csrf::FIELD)) => {
            Ok((session, form))
        }
        _ => Err(Box::new(plain(StatusCode::FORBIDDEN, super::csrf::REFUSED))),
    }
}

/// A POST of a password or setup form: the CSRF gate, then the attempt
/// counted against the client (`user` as for [`attempt`], given the form).
pub fn checked_attempt(
    req: &HttpRequest,
    state: &ConsoleState,
    body: &web::Bytes,
    user: impl FnOnce(&Form) -> Option<String>,
) -> Result<(Current, Form, Attempt), Refusal> {
    let (session, form) = checked_form(req, state, body)?;
    let user = user(&form);
    let attempt = attempt(req, state, user.as_deref())?;
    Ok((session, form, attempt))
}

/// A POST that needs a logged-in user as well.
pub fn checked_write(
    req: &HttpRequest,
    state: &ConsoleState,
    body: &web::Bytes,
) -> Result<(Current, User, Form), Refusal> {
    let (session, form) = checked_form(req, state, body)?;
    match session.user.clone() {
        Some(mut user) => {
            show_domain(req, state, &mut user, Some(&form))?;
            Ok((session, user, form))
        }
        None => Err(Box::new(plain(StatusCode::FORBIDDEN, "log in first"))),
    }
}

/// A page saying why a request was not done.
pub fn problem(
    session: &Current,
    user: &User,
    status: StatusCode,
    message: &str,
    back: &str,
) -> HttpResponse {
    html(
        status,
        pages::problem(Some(&viewer(session, user)), message, back),
    )
}

/// How a failed write reads to the person who tried it, and its status.
/// A CLI sentence as a page says it: capital first, full stop last.
fn capitalised(s: &str) -> String {
    let mut chars = s.chars();
    let first = chars.next().map(|c| c.to_uppercase().collect::<String>());
    format!("{}{}.", first.unwrap_or_default(), chars.as_str())
}

pub fn write_failure(err: &LinkError) -> (StatusCode, String) {
    match err {
        LinkError::KeyTaken(k) => (
            StatusCode::CONFLICT,
            format!(
                "The key {k} is already taken: choose another, or leave it empty for a random one."
            ),
        ),
        LinkError::NotFound(k) => (StatusCode::NOT_FOUND, format!("There is no link {k}.")),
        LinkError::TakesOver { key, parent } => (
            StatusCode::CONFLICT,
            format!(
                "The key {key} would change where /{key} leads: it now reaches the link {parent} with the rest of the path appended. Choose a key outside {parent}/."
            ),
        ),
        e @ LinkError::Deleted { .. } => (StatusCode::CONFLICT, capitalised(&e.to_string())),
        LinkError::TooManyConflicts(_) => (
            StatusCode::CONFLICT,
            "Someone else keeps changing this link: reload and try again.".into(),
        ),
        LinkError::Store(StoreError::Refused {
            status: 401 | 403,
            detail,
        }) => (
            StatusCode::FORBIDDEN,
            format!("CouchDB refused this change for your account: {detail}"),
        ),
        LinkError::Store(StoreError::Refused { status, detail }) => (
            StatusCode::BAD_REQUEST,
            format!("CouchDB refused this change ({status}): {detail}"),
        ),
        LinkError::Store(e) => {
            tracing::warn!(error = %e, "a console write failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "The link store did not take the change; try again in a moment.".into(),
            )
        }
    }
}

/// The page of one link.
pub fn link_path(key: &str) -> String {
    format!("{BASE}/link?key={}", pages::q(key))
}

/// Adds a `Set-Cookie` to an answer.
pub fn with_cookie(mut res: HttpResponse, cookie: &str) -> HttpResponse {
    if let Ok(v) = header::HeaderValue::from_str(cookie) {
        res.headers_mut().append(header::SET_COOKIE, v);
    }
    res
}

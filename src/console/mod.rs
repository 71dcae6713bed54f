//! The web console on the admin listener (`qrtag serve --console`): links,
//! tags, print sheets and scans for people who do not use the command line.
//!
//! Server-rendered HTML ([`pages`]), forms and links only, so it works
//! without JavaScript. Every write goes through [`crate::links`], the CLI's
//! code path, as the logged-in user's store ([`auth`]); every read of the
//! list comes from the snapshot the redirect path serves ([`key_order`],
//! [`list`]); scan numbers come only through [`scans::ScanCounts`], and the
//! console never reads the access log.

use std::sync::Arc;

use actix_web::HttpMessage as _;
use actix_web::dev::Service as _;
use actix_web::middleware::DefaultHeaders;
use actix_web::{HttpResponse, web};
use futures_util::future::Either;

pub mod auth;
pub mod bulk;
pub mod check_gate;
pub mod csrf;
pub mod device;
mod gate;
mod handlers;
pub mod http;
pub mod key_order;
pub mod limiter;
pub mod list;
pub mod list_index;
pub mod pages;
pub mod password;
pub mod per_page;
pub mod scans;
pub mod scans_from;
pub mod search;
pub mod session;
pub mod setup;
pub mod trigrams;

// Issue 35 (i35-users): accounts on the embedded store.
pub mod invitation;
pub mod user_sync;
// Issue 35 (i35-timeline): the link page's history.
pub mod history;

// Issue 34: the link page's rule editor and tester.
pub mod rights;
pub mod rule_form;
pub mod rule_tester;
// Issue 36: every domain as the surfaces see it.
pub mod domains;
pub mod shown;

pub use handlers::links::PAGE_SIZE;

/// The console's options (`serve --console`, `--time-zone`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsoleSettings {
    /// Mark the session cookie `Secure`: the console is reached over https
    /// (a TLS proxy in front of the admin listener). The public URL cannot
    /// tell: the console is usually reached over plain http on loopback or a
    /// tunnel even when the tags say https, and a `Secure` cookie over http
    /// would never come back.
    pub secure_cookie: bool,
    /// Where a bare expiry date ends (`--time-zone`).
    pub time_zone: chrono_tz::Tz,
    /// The console's address as people reach it (`--console-url`), for
    /// invitation links; `None`: as the admin's browser reached it.
    pub console_url: Option<url::Url>,
}

/// No inline script or style, nothing from elsewhere, never in a frame.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; img-src 'self' data:; \
     style-src 'self'; script-src 'self'; form-action 'self'; base-uri 'none'; \
     frame-ancestors 'none'";

/// Issue 36: what a page shows of a domain (its snapshot, public URL, key
/// order and scan counts) is the request's [`domains::Domain`], on the
/// logged-in [`session::User`] (`user.domain`, chosen by [`shown`]).
pub struct ConsoleState {
    pub uppercase_prefix: bool,
    pub accounts: auth::Accounts,
    pub sessions: session::Sessions,
    /// Signs the anonymous cookies of the login and setup forms.
    pub signer: csrf::Signer,
    pub limiter: limiter::LoginLimiter,
    /// Signs and checks the device cookies of browsers that logged in before.
    pub devices: device::DeviceKeys,
    /// Proxies whose `X-Forwarded-For` names the client (`--trusted-proxy`).
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Whether the session cookie is `Secure` (the console is reached over https).
    pub secure_cookie: bool,
    /// The first-run setup link; closed unless startup found no password.
    pub setup: setup::SetupLink,
    /// Where a bare expiry date ends (`--time-zone`).
    pub time_zone: chrono_tz::Tz,
    /// Downloads render through the admin listener's gate
    /// ([`crate::print::tag_image::RenderGate`]), set at startup.
    pub renders: crate::print::tag_image::RenderGate,
    /// Issue 34: whether the server has a GeoIP database, which a rule on
    /// the country needs (`link::rules::Capabilities::geoip`).
    pub geoip: bool,
    /// Issue 35: where the console's audit entries go (logins, failed
    /// logins, logouts, bulk actions, the password set): the service's
    /// store, set at startup, since a failed login has no user's to use.
    pub audit: Option<Arc<dyn crate::store::LinkStore>>,
    /// Where invitation links point ([`ConsoleSettings::console_url`]).
    pub console_url: Option<url::Url>,
}

impl ConsoleState {
    pub fn new(uppercase_prefix: bool, accounts: auth::Accounts, secure_cookie: bool) -> Self {
        Self {
            uppercase_prefix,
            accounts,
            sessions: session::Sessions::default(),
            signer: csrf::Signer::default(),
            limiter: limiter::LoginLimiter::default(),
            devices: device::DeviceKeys::per_process(),
            trusted_proxies: Vec::new(),
            secure_cookie,
            setup: setup::SetupLink::default(),
            time_zone: chrono_tz::Tz::UTC,
            renders: crate::print::tag_image::RenderGate::for_cores(),
            geoip: false,
            audit: None,
            console_url: None,
        }
    }

    /// Issue 36: every domain, the default first.
    pub fn domains(&self) -> &Arc<domains::Domains> {
        self.accounts.domains()
    }

    /// Issue 35: keeps an audit entry of something done through the
    /// console; never fails (see [`crate::store::audit::record`]).
    pub async fn record(
        &self,
        actor: crate::values::actor::Actor,
        event: crate::values::audit::Event,
    ) {
        use crate::values::audit::Surface;
        match &self.audit {
            Some(store) => {
                crate::store::audit::record(&**store, actor, Surface::Console, event).await;
            }
            None => tracing::debug!(event = event.kind(), "no audit log to record in"),
        }
    }

    /// At startup: when logins are by the console password and none is set,
    /// opens the one-time setup link and returns it for `serve` to print
    /// (`admin` is the admin listener's bound address).
    pub async fn offer_setup(
        &self,
        admin: std::net::SocketAddr,
    ) -> Result<Option<String>, crate::store::StoreError> {
        if !self.accounts.password_missing().await? {
            return Ok(None);
        }
        let token = session::random_token();
        let url = setup::url(admin, &token);
        self.setup.offer(token);
        Ok(Some(url))
    }
}

/// Everything under `/console`, with the security headers on every answer.
pub fn configure(cfg: &mut web::ServiceConfig, state: web::Data<ConsoleState>) {
    use handlers::{auth, bulk, dashboard, link, link_rules, links, setup, sheet};
    let headers = DefaultHeaders::new()
        .add(("Content-Security-Policy", CONTENT_SECURITY_POLICY))
        .add(("X-Content-Type-Options", "nosniff"))
        .add(("Referrer-Policy", "same-origin"))
        .add(("X-Frame-Options", "DENY"));
    // Issue 35: the POST routes come from `rights::Post`, and the gate in
    // front of them refuses a role below a form's need (and any POST the
    // table does not name) before a handler reads the body.
    let gate_state = state.clone();
    let secure = state.secure_cookie;
    let mut scope = web::scope(pages::BASE)
        .app_data(state)
        // Issue 36: a page that named its domain (`?domain=`, a form's
        // field) is remembered for the next page opened without one.
        .wrap_fn(move |req, srv| {
            let answer = srv.call(req);
            async move {
                let mut res = answer.await?;
                let cookie = res
                    .request()
                    .extensions()
                    .get::<shown::Shown>()
                    .filter(|s| !s.remembered)
                    .and_then(|s| s.domain.host.as_ref().map(|h| h.to_string()))
                    .map(|host| http::domain_cookie(&host, secure));
                if let Some(cookie) = cookie
                    && let Ok(value) = actix_web::http::header::HeaderValue::from_str(&cookie)
                {
                    res.headers_mut()
                        .append(actix_web::http::header::SET_COOKIE, value);
                }
                Ok(res)
            }
        })
        .wrap_fn(move |req, srv| match gate::refusal(&req, &gate_state) {
            Some(res) => Either::Left(std::future::ready(Ok(req.into_response(res)))),
            None => Either::Right(srv.call(req)),
        })
        .wrap(headers)
        .route("", web::get().to(to_links))
        .route("/", web::get().to(to_links))
        .route("/login", web::get().to(auth::form))
        // Issue 35: the audit log, for admins.
        .route("/audit", web::get().to(handlers::audit::page))
        .route("/setup", web::get().to(setup::form))
        .route("/links", web::get().to(links::list))
        .route("/link", web::get().to(link::page))
        .route("/link/download", web::get().to(link::download))
        .route("/link/pdf", web::get().to(link::pdf))
        .route("/link/breakdowns.csv", web::get().to(link::breakdowns_csv))
        // Issue 34: the rule tester.
        .route("/link/try", web::get().to(link_rules::try_scan))
        .route("/sheet", web::get().to(sheet::page))
        .route("/sheet/download", web::get().to(sheet::download))
        .route("/sheet/pdf", web::get().to(sheet::pdf))
        .route("/dashboard", web::get().to(dashboard::page))
        // Issue 35 (i35-users): invitations, one's own sessions, users.
        .route(invitation::PATH, web::get().to(handlers::invite::form))
        .route("/account", web::get().to(handlers::account::page))
        .route("/users", web::get().to(handlers::users::page))
        .route(
            "/dashboard/breakdowns.csv",
            web::get().to(dashboard::breakdowns_csv),
        )
        .route(
            pages::stylesheet::PATH,
            web::get().to(pages::stylesheet::serve),
        );
    for post in rights::Post::ALL {
        use rights::Post as P;
        let handler = match post {
            P::Login => web::post().to(auth::login),
            P::Logout => web::post().to(auth::logout),
            P::Setup => web::post().to(setup::set),
            P::Create => web::post().to(links::create),
            P::Bulk => web::post().to(bulk::act),
            P::Destination => web::post().to(link::destination),
            P::State => web::post().to(link::set_state),
            P::Expiry => web::post().to(link::expiry),
            P::Notes => web::post().to(link::notes),
            P::Fallback => web::post().to(link::fallback),
            P::Title => web::post().to(link::title),
            P::Delete => web::post().to(link::delete),
            // Issue 34: the rule editor.
            P::RulesAdd => web::post().to(link_rules::add),
            P::RulesRemove => web::post().to(link_rules::remove),
            P::RulesMove => web::post().to(link_rules::move_rule),
            P::Sheet => web::post().to(sheet::create),
            // Issue 35 (i35-users).
            P::Invite => web::post().to(handlers::invite::accept),
            P::LogoutEverywhere => web::post().to(handlers::account::everywhere),
            P::UsersInvite => web::post().to(handlers::users::invite),
            P::UsersRole => web::post().to(handlers::users::role),
            P::UsersRemove => web::post().to(handlers::users::remove),
            P::UsersReset => web::post().to(handlers::users::reset),
            // Issue 35 (i35-timeline).
            P::Revert => web::post().to(handlers::link_history::revert),
        };
        scope = scope.route(post.path(), handler);
    }
    cfg.service(scope.default_service(web::to(not_found)));
}

async fn to_links() -> HttpResponse {
    http::see_other(&format!("{}/links", pages::BASE))
}

async fn not_found() -> HttpResponse {
    http::plain(actix_web::http::StatusCode::NOT_FOUND, "no such page")
}

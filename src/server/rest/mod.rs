//! The REST API, `/api/v1` on the API listener (`--api-listen`, beside
//! DIDComm): JSON in and out, bearer API keys ([`auth`]), RFC 9457 problem
//! details for every refusal ([`problem`]), and the OpenAPI 3.1 document
//! written by `utoipa` from the handlers' own types ([`openapi`]).
//!
//! A thin shell: every write goes through [`crate::links`], the one set of
//! rules the CLI, the console and DIDComm write with.

// A refusal is the answer itself, built once for a request that fails:
// boxing it would only move it.
#![allow(clippy::result_large_err)]

pub mod auth;
// Issue 36: the domain a request acts on.
pub mod domain;
pub mod enforced;
// Issue 35: a link's history and revert.
pub mod history;
pub mod links;
pub mod needs;
pub mod openapi;
pub mod print;
pub mod problem;
pub mod rules;
pub mod scans;
pub mod strangers;

use std::sync::Arc;

use actix_web::http::header::{self, HeaderMap};
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use crate::link;
use crate::print::tag_image::RenderGate;
use crate::store::LinkStore;
use crate::values::link_key::LinkKey;
use problem::Kind;

/// The largest request body: a bulk create of [`MAX_BULK`] links
/// with long notes fits, and a body over it is refused before it is read
/// whole.
pub const MAX_BODY: usize = 4 << 20;

pub struct RestState {
    pub store: Arc<dyn LinkStore>,
    /// The current public URL ([`LiveUrl`]), read once per answer.
    pub public_url: crate::store::live_url::LiveUrl,
    pub uppercase_prefix: bool,
    pub gate: RenderGate,
    /// Issue 36: shared by every domain's state, as the keys are.
    pub limiter: Arc<auth::RateLimiter>,
    /// Requests without a valid key, per client address.
    pub strangers: Arc<strangers::StrangerLimiter>,
    /// Issue 36: where API keys are read and audit entries written: the
    /// service's (the default domain's) store, whichever domain a
    /// request acts on.
    pub keys: Arc<dyn LinkStore>,
    /// What lists read, as the console's list does.
    pub snapshot: Arc<crate::snapshot::Snapshot>,
    /// The sorted keys, kept by [`crate::console::key_order::keep_following`].
    pub order: Arc<std::sync::Mutex<crate::console::key_order::KeyOrder>>,
    /// The console's scan counts ([`crate::console::scans::NoScanCounts`]
    /// when this node runs no scan index).
    pub scans: Arc<dyn crate::console::scans::ScanCounts>,
    /// What a link's rules may ask of this server (issue 34): a `country`
    /// rule only with a GeoIP database.
    pub rule_capabilities: crate::link::rules::Capabilities,
    /// Issue 38: `--scans-from`, where a link's scans are read instead
    /// of `scans`.
    pub scans_from: Option<crate::clickhouse::read::DomainScans>,
}

/// The methods each fixed path takes, as the document declares them: a
/// resource answers any other with a 405 naming these (RFC 9110
/// §15.5.6). `links/{key}` and the paths below it are
/// [`links::tail_methods`]'s.
pub const FIXED_PATHS: [(&str, &str); 5] = [
    ("/openapi.json", "GET"),
    ("/links", "GET, POST"),
    ("/links/bulk", "POST"),
    ("/print.pdf", "POST"),
    ("/scans", "GET"),
];

/// The answer to a method the path does not take.
fn only(allow: &'static str) -> actix_web::Route {
    web::to(move |req: HttpRequest| async move { problem::not_allowed(req.method(), allow) })
}

/// Every path is one resource, so a method it does not take is a 405
/// with `Allow`, never a fall-through to another path: `GET
/// /links/bulk` is the bulk path's 405, not the link keyed `bulk`
/// (OpenAPI matches a concrete path before a templated one).
pub fn routes(cfg: &mut web::ServiceConfig) {
    let allow = |path: &str| {
        FIXED_PATHS
            .iter()
            .find(|(p, _)| *p == path)
            .map_or("GET", |(_, allow)| *allow)
    };
    cfg.service(
        web::resource("/openapi.json")
            .get(openapi::serve)
            .default_service(only(allow("/openapi.json"))),
    )
    .service(
        web::resource("/links")
            .get(links::list)
            .post(links::create)
            .default_service(only(allow("/links"))),
    )
    .service(
        web::resource("/links/bulk")
            .post(links::bulk)
            .default_service(only(allow("/links/bulk"))),
    )
    .service(
        web::resource("/print.pdf")
            .post(print::sheet)
            .default_service(only(allow("/print.pdf"))),
    )
    .service(
        web::resource("/scans")
            .get(scans::all)
            .default_service(only(allow("/scans"))),
    )
    // Issue 35: a link's history and revert, before the paths below a
    // key (a key whose last part is `history` or `revert` has its own
    // paths as `/scans` does).
    .service(
        web::resource("/links/{key:.*}/history")
            .get(history::link_history)
            .default_service(only("GET")),
    )
    .service(
        web::resource("/links/{key:.*}/revert")
            .post(history::revert)
            .default_service(only("POST")),
    )
    .service(
        web::resource("/links/{tail:.*}")
            .get(links::get)
            .patch(links::edit)
            .default_service(web::to(|req: HttpRequest| async move {
                problem::not_allowed(req.method(), links::tail_methods(&links::tail(&req)))
            })),
    )
    .default_service(web::to(|| async {
        problem::respond(Kind::NotFound, "no such resource: see /api/v1/openapi.json")
    }));
}

/// The key the request acts with, counted against its rate limit; an
/// address past its refusals this second is answered before the key is
/// read ([`strangers`]).
pub async fn admit(
    req: &HttpRequest,
    state: &RestState,
    need: crate::values::role::Role,
) -> Result<auth::Caller, HttpResponse> {
    let net = state.strangers.network_of(req);
    state.strangers.check(net)?;
    let caller = match auth::caller(req.headers(), state.keys.as_ref(), need).await {
        Ok(caller) => caller,
        Err(res) => {
            if res.status() == actix_web::http::StatusCode::UNAUTHORIZED {
                state.strangers.refused(net);
            }
            return Err(res);
        }
    };
    state.limiter.admit(&caller.id)?;
    // Issue 36: a domain the server does not serve, to a caller whose
    // key is good.
    domain::refuse_unknown(req)?;
    Ok(caller)
}

/// Reads a JSON object of at most [`MAX_BODY`] bytes into `T`: 413 past
/// the cap, 400 naming what is wrong with the JSON.
pub async fn json_body<T: DeserializeOwned>(
    headers: &HeaderMap,
    mut payload: web::Payload,
) -> Result<T, HttpResponse> {
    let media = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    if media.as_deref().is_some_and(|m| m != "application/json") {
        return Err(problem::respond(
            Kind::BadRequest,
            "send the body as application/json",
        ));
    }
    let too_large = || {
        problem::respond(
            Kind::PayloadTooLarge,
            format!("the body is over {MAX_BODY} bytes"),
        )
    };
    if headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|n| n > MAX_BODY)
    {
        return Err(too_large());
    }
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk
            .map_err(|e| problem::respond(Kind::BadRequest, format!("reading the body: {e}")))?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    // Every body is an object; serde would also read a struct from an
    // array of its fields in order, which the document does not allow.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(problem::respond(
            Kind::BadRequest,
            "the JSON body: expected an object",
        ));
    }
    serde_json::from_slice(&body)
        .map_err(|e| problem::respond(Kind::BadRequest, format!("the JSON body: {e}")))
}

/// The most links one bulk create takes (and keys one print request names).
pub const MAX_BULK: usize = 1000;

/// One live link as the API shows it, or the problem answer for a missing
/// one; shared by the links, print and scans handlers.
pub(super) async fn read(
    state: &RestState,
    key: &LinkKey,
) -> Result<links::LinkView, HttpResponse> {
    match state.store.get(key).await {
        Ok(Some(stored)) if !link::is_tombstone(&stored.doc) => {
            Ok(links::view(state, key, &stored.doc, stored.rev))
        }
        Ok(_) => Err(problem::respond(
            Kind::NotFound,
            format!("no link with key {key}"),
        )),
        Err(e) => Err(problem::from_link_error(&crate::links::LinkError::Store(e))),
    }
}

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
pub mod links;
pub mod openapi;
pub mod print;
pub mod problem;
pub mod scans;
pub mod strangers;

use std::sync::Arc;

use actix_web::http::header::{self, HeaderMap};
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use crate::qr_image::RenderGate;
use crate::store::LinkStore;
use problem::Kind;

/// The largest request body: a bulk create of [`links::MAX_BULK`] links
/// with long notes fits, and a body over it is refused before it is read
/// whole.
pub const MAX_BODY: usize = 4 << 20;

pub struct RestState {
    pub store: Arc<dyn LinkStore>,
    /// The current public URL ([`LiveUrl`]), read once per answer.
    pub public_url: crate::live_url::LiveUrl,
    pub uppercase_prefix: bool,
    pub gate: RenderGate,
    pub limiter: auth::RateLimiter,
    /// Requests without a valid key, per client address.
    pub strangers: strangers::StrangerLimiter,
    /// What lists read, as the console's list does.
    pub snapshot: Arc<crate::snapshot::Snapshot>,
    /// The sorted keys, kept by [`crate::console::key_order::keep_following`].
    pub order: Arc<std::sync::Mutex<crate::console::key_order::KeyOrder>>,
    /// The console's scan counts ([`crate::console::scans::NoScanCounts`]
    /// when this node runs no scan index).
    pub scans: Arc<dyn crate::console::scans::ScanCounts>,
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/openapi.json", web::get().to(openapi::serve))
        .route("/links", web::post().to(links::create))
        .route("/links", web::get().to(links::list))
        .route("/links/bulk", web::post().to(links::bulk))
        .route("/print.pdf", web::post().to(print::sheet))
        .route("/scans", web::get().to(scans::all))
        .route("/links/{tail:.*}", web::get().to(links::get))
        .route("/links/{tail:.*}", web::patch().to(links::edit))
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
    write: bool,
) -> Result<auth::Caller, HttpResponse> {
    let net = state.strangers.network_of(req);
    state.strangers.check(net)?;
    let caller = match auth::caller(req.headers(), state.store.as_ref(), write).await {
        Ok(caller) => caller,
        Err(res) => {
            if res.status() == actix_web::http::StatusCode::UNAUTHORIZED {
                state.strangers.refused(net);
            }
            return Err(res);
        }
    };
    state.limiter.admit(&caller.id)?;
    Ok(caller)
}

/// Reads a JSON body of at most [`MAX_BODY`] bytes into `T`: 413 past
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
    serde_json::from_slice(&body)
        .map_err(|e| problem::respond(Kind::BadRequest, format!("the JSON body: {e}")))
}

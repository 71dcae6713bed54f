//! The public listener: every path is a redirect request.
//!
//! This is the hot path. It reads the snapshot (no lock, no store), runs the
//! pure policy, and writes three headers. One catch-all service instead of a
//! route table, because route matching costs a few percent per request and
//! every path here means the same thing.

use std::sync::Arc;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};

use crate::redirect_policy::{self, Decision};
use crate::settings::PublicUrl;
use crate::snapshot::Snapshot;

/// What the public handler shares across requests.
pub struct PublicState {
    pub snapshot: Arc<Snapshot>,
    pub public_url: PublicUrl,
}

const NO_STORE: HeaderValue = HeaderValue::from_static("private, no-store");

pub async fn handle(req: HttpRequest, state: web::Data<PublicState>) -> HttpResponse {
    let method = req.method();
    if method != Method::GET && method != Method::HEAD {
        return HttpResponse::build(StatusCode::NOT_IMPLEMENTED)
            .insert_header((header::ALLOW, HeaderValue::from_static("GET, HEAD")))
            .content_type("text/plain; charset=utf-8")
            .body("method not implemented: use GET or HEAD\n");
    }
    let now_ms = chrono::Utc::now().timestamp_millis();
    let table = state.snapshot.load();
    let uri = req.uri();
    let decision =
        redirect_policy::decide(state.public_url.origin(), uri.path(), uri.query(), |key| {
            table.live_url(key, now_ms)
        });
    respond(decision, &state.public_url)
}

fn respond(decision: Decision, public_url: &PublicUrl) -> HttpResponse {
    match decision {
        Decision::Redirect { location, key } => {
            let (Ok(location), Ok(link)) = (
                HeaderValue::try_from(location),
                HeaderValue::try_from(format!(
                    "<{}>; rel=\"shortlink\"",
                    public_url.short_url(&key)
                )),
            ) else {
                // Resolved URLs and keys are ASCII by construction; refuse
                // rather than send a broken header if that ever changes.
                return not_found();
            };
            HttpResponse::build(StatusCode::FOUND)
                .insert_header((header::LOCATION, location))
                .insert_header((header::CACHE_CONTROL, NO_STORE))
                .insert_header((header::LINK, link))
                .finish()
        }
        Decision::NotFound => not_found(),
        Decision::Broken(err) => {
            tracing::warn!(error = %err, "a link's rules could not be resolved");
            not_found()
        }
        Decision::BadRequest(why) => HttpResponse::build(StatusCode::BAD_REQUEST)
            .insert_header((header::CACHE_CONTROL, NO_STORE))
            .content_type("text/plain; charset=utf-8")
            .body(format!("bad request: {why}\n")),
    }
}

/// One answer for unknown, inactive and expired keys. Not cacheable, so a tag
/// scanned before it went live works on the next scan.
fn not_found() -> HttpResponse {
    HttpResponse::build(StatusCode::NOT_FOUND)
        .insert_header((header::CACHE_CONTROL, NO_STORE))
        .content_type("text/plain; charset=utf-8")
        .body("not found\n")
}

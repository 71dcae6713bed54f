//! A link's history and one step back over the REST API (issue 35):
//! `GET /api/v1/links/{key}/history` and `POST /api/v1/links/{key}/revert`
//! with `{"to": N}`, `If-Match` honoured as the other writes do. The same
//! read and revert as `qrtag history`/`qrtag revert` (`links::history`).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::links::{self, IfMatch, with_etag, write_body};
use super::problem::{self, Kind};
use super::{admit, read};
use crate::link::history::{Entry, KEEP, RevertError};
use crate::links::LinkError;
use crate::links::history::{self as history, RevertFailed};
use crate::store::StoreError;
use crate::values::link_key::LinkKey;

/// A link's kept history, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryView {
    pub key: String,
    /// How many older entries were dropped: a link keeps its last `kept`.
    pub dropped: u64,
    pub kept: u64,
    pub entries: Vec<EntryView>,
}

/// One write to the link.
#[derive(Debug, Serialize, ToSchema)]
pub struct EntryView {
    /// 1 for the link's first write, one more for each after it.
    pub n: u64,
    /// When, RFC 3339 UTC.
    pub at: String,
    /// Who, as tagged JSON: `{"kind": "console", "user": "ann"}`,
    /// `api_key` (`key`, `user`), `didcomm` (`did`), `cli` (`os_user`,
    /// `host`), `outside` (`rev`).
    #[schema(value_type = Object)]
    pub actor: Value,
    /// Who, as a person reads it: "ann (console)".
    pub who: String,
    /// The surface: cli, edit, console, api, didcomm, import.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// The revision written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    /// create, edit or delete.
    pub kind: String,
    pub changes: Vec<ChangeView>,
    /// For a revert, the entry whose state it went back to (its `n`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub reverted_to: Option<u64>,
}

/// One field's value before and after (`null`: absent).
#[derive(Debug, Serialize, ToSchema)]
pub struct ChangeView {
    /// url, rules, inactive, expires, title, notes, fallback_url, deleted.
    pub field: String,
    /// Any JSON value: text, a boolean, the rules' array.
    pub before: Option<Value>,
    /// As `before`.
    pub after: Option<Value>,
}

impl From<&Entry> for EntryView {
    fn from(e: &Entry) -> Self {
        let kind = serde_json::to_value(e.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        Self {
            n: e.n,
            at: e.at.clone(),
            actor: serde_json::to_value(&e.actor).unwrap_or(Value::Null),
            who: e.actor.to_string(),
            via: e.via.map(|v| v.as_str().to_owned()),
            rev: e.rev.clone(),
            kind,
            changes: e
                .changes
                .iter()
                .map(|c| ChangeView {
                    field: c.field.as_str().to_owned(),
                    before: c.before.clone(),
                    after: c.after.clone(),
                })
                .collect(),
            reverted_to: e.reverted_to,
        }
    }
}

/// The body of a revert.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Revert {
    /// The entry whose state the link goes back to (its `n`).
    #[schema(value_type = i64, minimum = 1)]
    pub to: serde_json::Number,
}

impl Revert {
    /// The entry's number: an integer of 1 or more, written as JSON
    /// writes one (`3` or `3.0`, which JSON Schema counts as an integer).
    fn entry(&self) -> Option<u64> {
        let n = &self.to;
        n.as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 1.0 && *f <= i64::MAX as f64)
                    .map(|f| f as u64)
            })
            .filter(|n| (1..=i64::MAX as u64).contains(n))
    }
}

/// The key below `links/` before `/history` or `/revert`, a `/` of it
/// written `%2F` or not.
fn key_of(req: &HttpRequest) -> Result<LinkKey, HttpResponse> {
    let raw = req
        .match_info()
        .get("key")
        .unwrap_or_default()
        .replace("%2F", "/")
        .replace("%2f", "/");
    LinkKey::parse(&raw).map_err(|_| problem::respond(Kind::NotFound, format!("no link {raw:?}")))
}

#[utoipa::path(
    get, path = "/api/v1/links/{key}/history", tag = "links",
    params(("key" = String, Path, description = "The link's key", example = "spring")),
    responses(
        (status = 200, body = HistoryView),
        (status = 401, body = problem::Problem, content_type = "application/problem+json"),
        (status = 404, body = problem::Problem, content_type = "application/problem+json"),
        (status = 429, body = problem::Problem, content_type = "application/problem+json"),
        (status = 503, body = problem::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn link_history(req: HttpRequest, state: super::domain::InDomain) -> HttpResponse {
    if let Err(res) = admit(&req, &state, super::needs::READ).await {
        return res;
    }
    let key = match key_of(&req) {
        Ok(key) => key,
        Err(res) => return res,
    };
    match history::read(state.store.as_ref(), &key).await {
        Ok(h) => HttpResponse::Ok().json(HistoryView {
            key: key.to_string(),
            dropped: h.dropped(),
            kept: KEEP,
            entries: h.entries.iter().map(EntryView::from).collect(),
        }),
        Err(e) => problem::from_link_error(&e),
    }
}

#[utoipa::path(
    post, path = "/api/v1/links/{key}/revert", tag = "links",
    params(
        ("key" = String, Path, description = "The link's key", example = "spring"),
        ("If-Match" = Option<String>, Header, description = "Only if the link is still at this revision (its ETag)"),
    ),
    request_body = Revert,
    responses(
        (status = 200, body = links::LinkView, headers(("ETag" = String)),
            description = "The link as it is after the revert (itself a history entry)"),
        (status = 400, body = problem::Problem, content_type = "application/problem+json"),
        (status = 401, body = problem::Problem, content_type = "application/problem+json"),
        (status = 403, body = problem::Problem, content_type = "application/problem+json"),
        (status = 404, body = problem::Problem, content_type = "application/problem+json",
            description = "No such link, or no such entry in its history"),
        (status = 409, body = problem::Problem, content_type = "application/problem+json",
            description = "The link is deleted, or the entry deleted it"),
        (status = 412, body = problem::Problem, content_type = "application/problem+json"),
        (status = 413, body = problem::Problem, content_type = "application/problem+json"),
        (status = 429, body = problem::Problem, content_type = "application/problem+json"),
        (status = 503, body = problem::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn revert(
    req: HttpRequest,
    payload: web::Payload,
    state: super::domain::InDomain,
) -> HttpResponse {
    let (body, author): (Revert, _) = match write_body(&req, payload, &state).await {
        Ok(ok) => ok,
        Err(res) => return res,
    };
    let Some(to) = body.entry() else {
        return problem::respond(
            Kind::BadRequest,
            format!("to: {} is no entry number (1 or more)", body.to),
        );
    };
    let key = match key_of(&req) {
        Ok(key) => key,
        Err(res) => return res,
    };
    let store = state.store.as_ref();
    let if_match = req
        .headers()
        .get(header::IF_MATCH)
        .map(|v| IfMatch::parse(&String::from_utf8_lossy(v.as_bytes())))
        .filter(|m| *m != IfMatch::Any);
    // The listed revisions are compared with the one read; the revert is
    // then made at that revision only, so a write in between is a 412 too.
    let at = match &if_match {
        None => None,
        Some(listed) => match store.get(&key).await {
            Ok(Some(stored)) if listed.matches(&stored.rev) => Some(stored.rev),
            Ok(Some(_)) => return precondition_failed(&key),
            Ok(None) => return problem::from_link_error(&LinkError::NotFound(key)),
            Err(e) => return problem::from_link_error(&e.into()),
        },
    };
    match history::revert(store, &author, &key, to, at.as_deref()).await {
        Ok(_) => match read(&state, &key).await {
            Ok(view) => {
                let rev = view.rev.clone();
                with_etag(HttpResponse::Ok().json(view), &rev)
            }
            Err(res) => res,
        },
        Err(RevertFailed::Revert(
            e @ (RevertError::NoEntry { .. }
            | RevertError::NoHistory { .. }
            | RevertError::Dropped { .. }),
        )) => problem::respond(Kind::NotFound, e),
        Err(RevertFailed::Revert(e)) => problem::respond(Kind::Conflict, e),
        Err(RevertFailed::Link(LinkError::Store(StoreError::Conflict(_)))) if at.is_some() => {
            precondition_failed(&key)
        }
        Err(RevertFailed::Link(e)) => problem::from_link_error(&e),
    }
}

fn precondition_failed(key: &LinkKey) -> HttpResponse {
    problem::respond(
        Kind::PreconditionFailed,
        format!("the link {key} changed since that revision: read it again"),
    )
}

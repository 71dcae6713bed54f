//! RFC 9457 problem details: every refusal of `/api/v1` is
//! `application/problem+json` with a `type` URI that never changes, so a
//! client tells errors apart by it and not by the wording of `detail`.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use serde::Serialize;
use utoipa::ToSchema;

use crate::links::LinkError;

pub const MEDIA_TYPE: &str = "application/problem+json";

/// The kinds of refusal; each is one stable `type` URI and one status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    BadRequest,
    InvalidUrl,
    RefusedDestination,
    KeyTaken,
    NotFound,
    /// A method the path does not take (the answer names the ones it does).
    MethodNotAllowed,
    Conflict,
    PreconditionFailed,
    RateLimited,
    Unauthorized,
    Forbidden,
    PayloadTooLarge,
    /// A tag no QR code or layout can hold (a key too long for any code).
    Unprintable,
    Unavailable,
}

impl Kind {
    pub fn slug(self) -> &'static str {
        match self {
            Kind::BadRequest => "bad-request",
            Kind::InvalidUrl => "invalid-url",
            Kind::RefusedDestination => "refused-destination",
            Kind::KeyTaken => "key-taken",
            Kind::NotFound => "not-found",
            Kind::MethodNotAllowed => "method-not-allowed",
            Kind::Conflict => "conflict",
            Kind::PreconditionFailed => "precondition-failed",
            Kind::RateLimited => "rate-limited",
            Kind::Unauthorized => "unauthorized",
            Kind::Forbidden => "forbidden",
            Kind::PayloadTooLarge => "payload-too-large",
            Kind::Unprintable => "unprintable",
            Kind::Unavailable => "unavailable",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Kind::BadRequest | Kind::InvalidUrl => StatusCode::BAD_REQUEST,
            Kind::RefusedDestination => StatusCode::UNPROCESSABLE_ENTITY,
            Kind::KeyTaken | Kind::Conflict => StatusCode::CONFLICT,
            Kind::NotFound => StatusCode::NOT_FOUND,
            Kind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Kind::PreconditionFailed => StatusCode::PRECONDITION_FAILED,
            Kind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Kind::Unauthorized => StatusCode::UNAUTHORIZED,
            Kind::Forbidden => StatusCode::FORBIDDEN,
            Kind::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Kind::Unprintable => StatusCode::UNPROCESSABLE_ENTITY,
            Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Kind::BadRequest => "Bad request",
            Kind::InvalidUrl => "Invalid destination URL",
            Kind::RefusedDestination => "Destination refused",
            Kind::KeyTaken => "Key taken",
            Kind::NotFound => "Not found",
            Kind::MethodNotAllowed => "Method not allowed",
            Kind::Conflict => "Conflict",
            Kind::PreconditionFailed => "Precondition failed",
            Kind::RateLimited => "Rate limited",
            Kind::Unauthorized => "Unauthorized",
            Kind::Forbidden => "Forbidden",
            Kind::PayloadTooLarge => "Payload too large",
            Kind::Unprintable => "Cannot be printed",
            Kind::Unavailable => "Store unavailable",
        }
    }
}

/// The body of every refusal.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// `urn:qrtag:problem:NAME`, stable across versions.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
}

impl Problem {
    pub fn new(kind: Kind, detail: impl std::fmt::Display) -> Self {
        Self {
            kind: format!("urn:qrtag:problem:{}", kind.slug()),
            title: kind.title().to_owned(),
            status: kind.status().as_u16(),
            detail: detail.to_string(),
        }
    }
}

/// The answer for `kind`.
pub fn respond(kind: Kind, detail: impl std::fmt::Display) -> HttpResponse {
    let mut res = HttpResponse::build(kind.status())
        .content_type(MEDIA_TYPE)
        .json(Problem::new(kind, detail));
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
    if kind == Kind::Unauthorized {
        res.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"qrtag\""),
        );
    }
    res
}

/// 405 for a method `allow` does not list (RFC 9110 §15.5.6: the
/// `Allow` header names the methods the path takes, as the document
/// declares them).
pub fn not_allowed(method: &actix_web::http::Method, allow: &'static str) -> HttpResponse {
    let mut res = respond(
        Kind::MethodNotAllowed,
        format!("{method} is not a method of this path: it takes {allow}"),
    );
    res.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    res
}

/// A failed write of [`links`](crate::links), said as the API says it.
pub fn from_link_error(e: &LinkError) -> HttpResponse {
    match e {
        LinkError::KeyTaken(_) | LinkError::Deleted { .. } | LinkError::TakesOver { .. } => {
            respond(Kind::KeyTaken, e)
        }
        LinkError::NotFound(_) => respond(Kind::NotFound, e),
        LinkError::TooManyConflicts(_) => respond(Kind::Conflict, e),
        // CouchDB's validation refuses an account without the editor or
        // admin role with this reason (assets/couchdb/validate_doc_update.js): the
        // server's setup, not the client's link.
        LinkError::Store(crate::store::StoreError::Refused {
            status: 403,
            detail,
        }) if detail.contains("may change links") => {
            tracing::warn!(
                error = %e,
                "the API listener's CouchDB account may not write links: give --api-couchdb-user \
                 an account with the qrtag_editor role"
            );
            respond(
                Kind::Unavailable,
                "this server may not write links at the moment; try again later",
            )
        }
        LinkError::Store(crate::store::StoreError::Refused { status: 403, .. }) => {
            respond(Kind::RefusedDestination, e)
        }
        LinkError::Store(_) => {
            tracing::warn!(error = %e, "API request could not reach the link store");
            respond(
                Kind::Unavailable,
                "the link store is unavailable or refused the write; try again later",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_type() {
        let kinds = [
            Kind::BadRequest,
            Kind::InvalidUrl,
            Kind::RefusedDestination,
            Kind::KeyTaken,
            Kind::NotFound,
            Kind::MethodNotAllowed,
            Kind::Conflict,
            Kind::PreconditionFailed,
            Kind::RateLimited,
            Kind::Unauthorized,
            Kind::Forbidden,
            Kind::PayloadTooLarge,
            Kind::Unprintable,
            Kind::Unavailable,
        ];
        let slugs: std::collections::HashSet<_> = kinds.iter().map(|k| k.slug()).collect();
        assert_eq!(slugs.len(), kinds.len());
        for k in kinds {
            assert!(
                k.status().is_client_error() || k == Kind::Unavailable,
                "{k:?}"
            );
        }
    }
}

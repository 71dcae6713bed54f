//! How a tag image or PDF, or a render that gave none, is answered over
//! HTTP: the admin listener's `/qr/`, the REST API and the console answer
//! alike, so one place says which refusal is the client's (4xx) and which
//! the server's.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};

use super::tag_image::RenderError;
use super::{PrintError, Spelling};
use crate::qr::QrError;

/// A PDF as the admin listener and the REST API answer it.
pub fn pdf_response(body: Vec<u8>, cache: HeaderValue) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/pdf")
        .insert_header((header::CACHE_CONTROL, cache))
        .body(body)
}

/// The answer to a render that gave no image, for `/qr/` and the console's
/// downloads alike: a busy gate is 503 with `Retry-After`, an image over the
/// bound a 400 naming it, a key no QR code holds a 422.
pub fn refused(e: &RenderError) -> HttpResponse {
    let (status, message) = refusal(e);
    let mut res = HttpResponse::build(status)
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .content_type("text/plain; charset=utf-8")
        .body(format!("{message}\n"));
    if status == StatusCode::SERVICE_UNAVAILABLE {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    res
}

/// The status and the one line for a render that gave nothing: what
/// [`refused`] answers in plain text and the REST API as a problem.
pub fn refusal(e: &RenderError) -> (StatusCode, String) {
    match e {
        RenderError::Busy => (StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        RenderError::Qr(QrError::TooLarge { .. }) => {
            (StatusCode::BAD_REQUEST, format!("bad scale: {e}"))
        }
        RenderError::Qr(QrError::DataTooLong { .. })
        | RenderError::Print(PrintError::Qr(QrError::DataTooLong { .. })) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "this key is too long for a QR code".to_owned(),
        ),
        RenderError::NoLogo => (StatusCode::BAD_REQUEST, e.to_string()),
        // A logo the code does not read back with: the request's to change.
        RenderError::Qr(QrError::Unreadable(why)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("the branded code does not read back: {why}")
                .replace("--logo-size", "logo-size"),
        ),
        RenderError::Print(p) if p.is_usage() => {
            (StatusCode::BAD_REQUEST, p.message(Spelling::Param))
        }
        // A logo the code does not read back with: the request's to change.
        RenderError::Print(PrintError::Brand(b)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            b.to_string().replace("--logo-size", "logo-size"),
        ),
        RenderError::Qr(_) | RenderError::Aborted(_) | RenderError::Print(_) => {
            tracing::error!(error = %e, "rendering failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "rendering failed".to_owned(),
            )
        }
    }
}

//! The console's role gate (issue 35): in front of every handler, so a
//! forged POST (a viewer's repoint, an editor's delete) is a 403 with one
//! line and nothing read or written, whichever page would have hidden its
//! form. What each form needs is [`super::rights`]'s table.

use actix_web::HttpResponse;
use actix_web::dev::ServiceRequest;
use actix_web::http::{Method, StatusCode};

use super::ConsoleState;
use super::http::{current, plain};
use super::pages::BASE;
use super::rights::{self, Post};

/// The answer instead of the handler's, or `None` to let the request in.
/// Only a logged-in session's role is judged here: without one, the
/// handler's own gates (CSRF, "log in first") answer as before.
pub fn refusal(req: &ServiceRequest, state: &ConsoleState) -> Option<HttpResponse> {
    if req.method() != Method::POST {
        return None;
    }
    let path = req.path().strip_prefix(BASE).unwrap_or_default();
    let Some(post) = Post::at(path) else {
        // Not a form of the table: no handler would take it anyway.
        return Some(plain(StatusCode::NOT_FOUND, "no such page"));
    };
    let need = post.needs()?;
    let user = current(req.request(), state)?.user?;
    rights::check(user.role, need)
        .err()
        .map(|why| plain(StatusCode::FORBIDDEN, &why))
}

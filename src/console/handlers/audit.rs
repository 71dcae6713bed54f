//! Issue 35: `GET /console/audit`, the audit log for admins (an editor or
//! a viewer gets 403), read with the admin's own store.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};

use crate::console::ConsoleState;
use crate::console::http::{html, logged_in, plain, viewer};
use crate::console::pages;
use crate::values::audit::AuditQuery;

/// Entries a page.
pub const PAGE_SIZE: usize = 50;

/// The longest `before` taken: an entry's ID is 33 characters.
const MAX_BOUND: usize = 64;

pub async fn page(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    if !user.role.may_administer() {
        return plain(
            StatusCode::FORBIDDEN,
            "The audit log is for admins: your role does not show it.",
        );
    }
    let before = form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(name, _)| name == "before")
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty());
    if before.as_ref().is_some_and(|b| b.len() > MAX_BOUND) {
        return plain(
            StatusCode::BAD_REQUEST,
            "before= is not an audit entry's ID.",
        );
    }
    let query = AuditQuery {
        since: None,
        before: before.clone(),
        limit: PAGE_SIZE + 1,
    };
    let mut entries = match user
        .access
        .store(0)
        .unwrap_or(&user.store)
        .audit(&query)
        .await
    {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!(error = %e, "the audit log could not be read");
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "The audit log cannot be read now; try again shortly.",
            );
        }
    };
    let more = entries.len() > PAGE_SIZE;
    entries.truncate(PAGE_SIZE);
    let older = more.then(|| entries.last().map(|e| e.id.clone())).flatten();
    html(
        StatusCode::OK,
        pages::audit::page(
            &viewer(&session, &user),
            &entries,
            older.as_deref(),
            before.is_some(),
        ),
    )
}

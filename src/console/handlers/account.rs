//! Issue 35 (i35-users): `GET /console/account` (the person's sessions on
//! this server) and `POST /console/account/logout-everywhere`.
//!
//! On the embedded store "everywhere" is every node: the user's session
//! counter is bumped in the database, and each node's sync
//! (`console::user_sync`) ends their sessions within a second; this node's
//! end at once. On CouchDB, whose sessions have no counter, it is this
//! node's sessions.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};

use crate::console::ConsoleState;
use crate::console::http::{self, checked_write, clear_cookie, html, logged_in, see_other, viewer};
use crate::console::pages;
use crate::console::pages::account::Reach;

pub async fn page(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let sessions = state.sessions.of_user(&user.name, &session.id);
    let reach = match state.accounts.password_db() {
        Some(_) => Reach::EveryServer,
        None => Reach::ThisServer,
    };
    html(
        StatusCode::OK,
        pages::account::page(&viewer(&session, &user), user.role, &sessions, reach),
    )
}

pub async fn everywhere(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let (_session, user, _form) = match checked_write(&req, &state, &body) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    if let Some(db) = state.accounts.password_db()
        && let Err(e) = db.end_sessions(&user.name).await
    {
        tracing::warn!(error = %e, "console: could not end a user's sessions everywhere");
        return http::plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the sessions could not be ended now; try again",
        );
    }
    let sessions = state.sessions.end_user(&user.name);
    let event = crate::values::audit::Event::LogoutEverywhere {
        user: user.name.clone(),
        sessions,
    };
    let actor = crate::values::actor::Actor::Console {
        user: user.name.clone(),
    };
    state.record(actor, event).await;
    http::with_cookie(
        see_other(&http::login_path()),
        &clear_cookie(state.secure_cookie),
    )
}

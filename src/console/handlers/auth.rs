//! Logging in and out.

use std::time::Instant;

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};

use crate::console::ConsoleState;
use crate::console::auth::LoginError;
use crate::console::http::{
    self, checked_form, clear_cookie, html, plain, see_other, session_cookie, with_cookie,
};
use crate::console::pages::{self, BASE};

/// The form, in an anonymous session whose token the POST must bring back.
pub async fn form(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    match http::current(&req, &state) {
        Some(s) if s.user.is_some() => see_other(&format!("{BASE}/links")),
        Some(s) => html(
            StatusCode::OK,
            pages::login::page(&s.csrf, state.accounts.has_user_names(), None),
        ),
        None => match state.sessions.start(None) {
            Some(s) => with_cookie(
                html(
                    StatusCode::OK,
                    pages::login::page(&s.csrf, state.accounts.has_user_names(), None),
                ),
                &session_cookie(&s.id, state.secure_cookie),
            ),
            None => plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many sessions; try again later",
            ),
        },
    }
}

pub async fn login(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let (session, form) = match checked_form(&req, &state, &body) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    // Without a peer address (not on TCP) every such client shares one slot.
    let addr = req
        .peer_addr()
        .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    if let Err(wait) = state.limiter.attempt(addr, Instant::now()) {
        return HttpResponse::TooManyRequests()
            .insert_header((header::RETRY_AFTER, wait.to_string()))
            .content_type("text/plain; charset=utf-8")
            .body("too many login attempts; wait and try again\n");
    }
    let user = form.get("user").unwrap_or_default().trim();
    let password = form.get("password").unwrap_or_default();
    let ask_name = state.accounts.has_user_names();
    match state.accounts.login(user, password).await {
        Ok(user) => {
            // A new ID at login, so an ID planted before it is worth nothing.
            state.sessions.end(&session.id);
            let Some(logged_in) = state.sessions.start(Some(user)) else {
                return plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many sessions; try again later",
                );
            };
            with_cookie(
                see_other(&format!("{BASE}/links")),
                &session_cookie(&logged_in.id, state.secure_cookie),
            )
        }
        Err(e) => {
            let status = match e {
                LoginError::Wrong => StatusCode::UNAUTHORIZED,
                LoginError::NoPassword | LoginError::Unavailable(_) => {
                    StatusCode::SERVICE_UNAVAILABLE
                }
            };
            if let LoginError::Unavailable(why) = &e {
                tracing::warn!(reason = %why, "console login could not be checked");
            }
            html(
                status,
                pages::login::page(&session.csrf, ask_name, Some(&e.to_string())),
            )
        }
    }
}

pub async fn logout(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let (session, _) = match checked_form(&req, &state, &body) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    state.sessions.end(&session.id);
    with_cookie(
        see_other(&http::login_path()),
        &clear_cookie(state.secure_cookie),
    )
}

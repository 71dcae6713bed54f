//! Issue 35 (i35-users): the invitation page. `GET /console/invite?token=T`
//! (the link `qrtag user add` or the users page gave) shows the form,
//! `POST /console/invite` sets the password, spends the invitation and logs
//! the person in. Attempts go through the login limiter as the setup
//! link's do (a wrong token is a guess); the answers carry
//! `Referrer-Policy: no-referrer`, so the token goes nowhere else.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};

use crate::console::ConsoleState;
use crate::console::http::{self, Form, anonymous_page, html, private};
use crate::console::invitation::{TOKEN_FIELD, token_hash};
use crate::console::pages;
use crate::console::password;
use crate::console::setup::check_passwords;
use crate::store::sqlite::users::UserError;
use crate::values::actor::Actor;
use crate::values::audit::Event;

pub async fn form(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let Some(db) = state.accounts.password_db() else {
        return no_invitations();
    };
    let attempt = match http::attempt(&req, &state, None) {
        Ok(attempt) => attempt,
        Err(refused) => return *refused,
    };
    let query = Form::parse(req.query_string().as_bytes());
    let token = query.get(TOKEN_FIELD).unwrap_or_default();
    let name = match db.invitation(&token_hash(token)).await {
        Ok(name) => name,
        Err(e) => return refusal(&e),
    };
    attempt.give_back(&state);
    private(anonymous_page(&req, &state, StatusCode::OK, |csrf| {
        pages::invite::page(csrf, token, &name, None)
    }))
}

pub async fn accept(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let Some(db) = state.accounts.password_db() else {
        return no_invitations();
    };
    let (session, form, attempt) = match http::checked_attempt(&req, &state, &body, |_| None) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let token = form.get(TOKEN_FIELD).unwrap_or_default();
    let hashed_token = token_hash(token);
    let name = match db.invitation(&hashed_token).await {
        Ok(name) => name,
        Err(e) => return refusal(&e),
    };
    // The right token: a typo in the passwords is not a guess.
    attempt.give_back(&state);
    let chosen = form.get("password").unwrap_or_default();
    let again = form.get("again").unwrap_or_default();
    if let Err(e) = check_passwords(chosen, again) {
        let page = pages::invite::page(&session.csrf, token, &name, Some(&e.to_string()));
        return private(html(StatusCode::BAD_REQUEST, page));
    }
    let phc = match password::hash_off_workers(chosen).await {
        Ok(phc) => phc,
        Err(password::PasswordError::Busy(busy)) => return http::busy(&busy.to_string()),
        Err(e) => return unavailable(&e),
    };
    // Checked again with the write: used or expired meanwhile is refused.
    let (name, role, mark) = match db.accept_invitation(&hashed_token, &phc).await {
        Ok(accepted) => accepted,
        Err(e) => return refusal(&e),
    };
    tracing::info!(user = %name, "console: an invitation was accepted");
    let actor = Actor::Console { user: name.clone() };
    let accepted = Event::InvitationAccepted { user: name.clone() };
    state.record(actor.clone(), accepted).await;
    // Issue 36: the domains an admin gave them.
    let only = match db.account(&name).await {
        Ok(account) => account.and_then(|a| a.domains),
        Err(e) => return unavailable(&e),
    };
    let Some(user) = state.accounts.embedded_user(&name, role, only.as_deref()) else {
        return no_invitations();
    };
    // The person is logged in with the password just chosen: a login.
    let login = Event::Login {
        address: Some(http::client_address(&req, &state).to_string()),
    };
    state.record(actor, login).await;
    let origin = http::origin(&req, &state, Some(mark));
    http::log_in_from(&state, &session, user, origin)
}

/// A used, expired or unknown invitation: a 403 page saying which, and
/// what to do; a store away is a 503.
fn refusal(e: &UserError) -> HttpResponse {
    if let UserError::Store(e) = e {
        return unavailable(e);
    }
    private(html(
        StatusCode::FORBIDDEN,
        pages::problem(None, &e.to_string(), &http::login_path()),
    ))
}

fn unavailable(e: &dyn std::fmt::Display) -> HttpResponse {
    tracing::warn!(error = %e, "console invitation could not be read or used");
    http::plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "the invitation could not be read or used now; try again",
    )
}

/// CouchDB's accounts are CouchDB's to make: the page does not exist.
fn no_invitations() -> HttpResponse {
    http::plain(StatusCode::NOT_FOUND, "no such page")
}

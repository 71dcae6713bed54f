//! The first-run setup page: `GET /console/setup?token=T` (the link `qrtag
//! serve --console` printed) shows the form, `POST /console/setup` stores
//! the password, spends the token and logs the person in.
//!
//! Every request checks the `meta` row as well as the token, so a password
//! set meanwhile by `qrtag console-password` (another process) closes the
//! link; and the store writes the hash only if no password exists, so the
//! page never replaces one. The answers carry `Referrer-Policy: no-referrer`:
//! the token in the URL goes nowhere else.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};

use crate::console::ConsoleState;
use crate::console::http::{self, Form, anonymous_page, html, private};
use crate::console::pages;
use crate::console::password;
use crate::console::setup::{SetupError, TOKEN_FIELD, check_passwords};
use crate::store::sqlite::SqliteStore;

pub async fn form(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let Some(db) = state.accounts.password_db() else {
        return no_setup();
    };
    let attempt = match http::attempt(&req, &state, None) {
        Ok(attempt) => attempt,
        Err(refused) => return *refused,
    };
    let query = Form::parse(req.query_string().as_bytes());
    let token = query.get(TOKEN_FIELD);
    if let Err(refused) = still_open(&state, db, token).await {
        return *refused;
    }
    // The right token: not a guess.
    attempt.give_back(&state);
    let token = token.unwrap_or_default();
    private(anonymous_page(&req, &state, StatusCode::OK, |csrf| {
        pages::setup::page(csrf, token, None)
    }))
}

pub async fn set(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let Some(db) = state.accounts.password_db() else {
        return no_setup();
    };
    let (session, form, attempt) = match http::checked_attempt(&req, &state, &body, |_| None) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let token = form.get(TOKEN_FIELD);
    if let Err(refused) = still_open(&state, db, token).await {
        return *refused;
    }
    // The right token: a typo in the passwords is not a guess.
    attempt.give_back(&state);
    let chosen = form.get("password").unwrap_or_default();
    let again = form.get("again").unwrap_or_default();
    if let Err(e) = check_passwords(chosen, again) {
        let page = pages::setup::page(
            &session.csrf,
            token.unwrap_or_default(),
            Some(&e.to_string()),
        );
        return private(html(StatusCode::BAD_REQUEST, page));
    }
    match password::set_first(db, chosen).await {
        Ok(true) => {}
        // `qrtag console-password` got there between the check and now.
        Ok(false) => {
            state.setup.close();
            return refusal(&SetupError::Closed);
        }
        Err(password::PasswordError::Busy(busy)) => return http::busy(&busy.to_string()),
        Err(e) => return unavailable(&e),
    }
    // The password is set, so the link is dead whatever this says.
    let _ = state.setup.consume(token);
    state.setup.close();
    tracing::info!("console password set through the first-run setup link");
    // Issue 35: which setting, never its value; by whoever held the link.
    let actor = crate::values::actor::Actor::Anonymous {
        address: http::client_address(&req, &state).to_string(),
    };
    let event = crate::values::audit::Event::SettingsChanged {
        setting: "console_password".into(),
    };
    state.record(actor, event).await;
    // Issue 35: the session is held to the new admin's counter like a login's.
    let mark = match db.account(crate::console::auth::PASSWORD_USER).await {
        Ok(account) => account.map(|a| a.sessions),
        Err(e) => return unavailable(&e),
    };
    match state.accounts.password_user() {
        Some(user) => {
            let origin = http::origin(&req, &state, mark);
            http::log_in_from(&state, &session, user, origin)
        }
        None => no_setup(),
    }
}

/// Whether the link may still be used: the token is the pending one and no
/// password has been set by anyone (which closes the link for good).
async fn still_open(
    state: &ConsoleState,
    db: &SqliteStore,
    token: Option<&str>,
) -> Result<(), http::Refusal> {
    state
        .setup
        .check(token)
        .map_err(|e| Box::new(refusal(&e)))?;
    match password::is_set(db).await {
        Ok(false) => Ok(()),
        Ok(true) => {
            state.setup.close();
            Err(Box::new(refusal(&SetupError::Closed)))
        }
        Err(e) => Err(Box::new(unavailable(&e))),
    }
}

/// A 403 page that says where the setup link is, or to log in.
fn refusal(e: &SetupError) -> HttpResponse {
    let back = http::login_path();
    private(html(
        StatusCode::FORBIDDEN,
        pages::problem(None, &e.to_string(), &back),
    ))
}

fn unavailable(e: &dyn std::fmt::Display) -> HttpResponse {
    tracing::warn!(error = %e, "console setup could not read or write the password");
    http::plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "the console password could not be read or stored now; try again",
    )
}

/// CouchDB's accounts need no setup: the page does not exist.
fn no_setup() -> HttpResponse {
    http::plain(StatusCode::NOT_FOUND, "no such page")
}

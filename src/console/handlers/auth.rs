//! Logging in and out.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};

use crate::console::ConsoleState;
use crate::console::auth::LoginError;
use crate::console::http::{self, anonymous_page, checked_form, clear_cookie, html, see_other};
use crate::console::pages::{self, BASE};
use crate::values::actor::Actor;
use crate::values::audit::Event;

/// The form, in an anonymous session whose token the POST must bring back;
/// before any password is set it says how to set one.
pub async fn form(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    if http::current(&req, &state).is_some_and(|s| s.user.is_some()) {
        return see_other(&format!("{BASE}/links"));
    }
    let first_run = state.accounts.password_missing().await.unwrap_or(false);
    let ask_name = state.accounts.has_user_names();
    anonymous_page(&req, &state, StatusCode::OK, |csrf| {
        pages::login::page(csrf, ask_name, None, first_run, state.accounts.is_couch())
    })
}

pub async fn login(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let accounts = &state.accounts;
    let (session, form, attempt) = match http::checked_attempt(&req, &state, &body, |form| {
        let typed = form.get("user").unwrap_or_default().trim();
        Some(accounts.login_name(typed).into_owned())
    }) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let user = form.get("user").unwrap_or_default().trim();
    let password = form.get("password").unwrap_or_default();
    let ask_name = state.accounts.has_user_names();
    // Issue 35: logins and failed logins go into the audit log.
    let address = http::client_address(&req, &state).to_string();
    match state.accounts.login(user, password).await {
        Ok(logged_in) => {
            attempt.give_back(&state);
            let actor = Actor::Console {
                user: logged_in.user.name.clone(),
            };
            let event = Event::Login {
                address: Some(address),
            };
            state.record(actor, event).await;
            let origin = http::origin(&req, &state, logged_in.mark);
            http::log_in_from(&state, &session, logged_in.user, origin)
        }
        Err(LoginError::Busy(busy)) => {
            // Never checked: not a guess.
            attempt.give_back(&state);
            http::busy(&busy.to_string())
        }
        Err(e) => {
            let status = match e {
                LoginError::Wrong | LoginError::WrongPassword => StatusCode::UNAUTHORIZED,
                // Issue 36: the password was right; not a guess.
                LoginError::NoDomain => {
                    attempt.give_back(&state);
                    StatusCode::FORBIDDEN
                }
                LoginError::NoPassword | LoginError::Unavailable(_) | LoginError::Busy(_) => {
                    StatusCode::SERVICE_UNAVAILABLE
                }
            };
            if let LoginError::Unavailable(why) = &e {
                tracing::warn!(reason = %why, "console login could not be checked");
            }
            if matches!(e, LoginError::Wrong | LoginError::WrongPassword) {
                let event = Event::failed_login(user, address.clone());
                state.record(Actor::Anonymous { address }, event).await;
            }
            // No password yet: the first-run hint says it all, and more.
            let first_run = matches!(e, LoginError::NoPassword);
            let problem = (!first_run).then(|| e.to_string());
            html(
                status,
                pages::login::page(
                    &session.csrf,
                    ask_name,
                    problem.as_deref(),
                    first_run,
                    state.accounts.is_couch(),
                ),
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
    if let Some(user) = &session.user {
        let actor = Actor::Console {
            user: user.name.clone(),
        };
        state.record(actor, Event::Logout).await;
    }
    http::with_cookie(
        see_other(&http::login_path()),
        &clear_cookie(state.secure_cookie),
    )
}

//! Issue 35 (i35-users): the admins' users page, `GET /console/users`, and
//! its forms: invite, role, reset, remove (`POST /console/users/…`). Only
//! an admin gets the page or may post its forms (403 otherwise); CouchDB's
//! accounts are CouchDB's (404). The rules that span users (a name taken,
//! the last admin) are the store's, as for `qrtag user`.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;

use crate::console::ConsoleState;
use crate::console::http::{self, checked_write, html, logged_in, see_other, viewer};
use crate::console::invitation::{self, NewInvitation};
use crate::console::pages;
use crate::console::session::{Current, User};
use crate::store::sqlite::SqliteStore;
use crate::store::sqlite::users::UserError;
use crate::values::actor::Actor;
use crate::values::audit::Event;
use crate::values::role::Role;
use crate::values::user_name::UserName;

fn users_path() -> String {
    format!("{}/users", pages::BASE)
}

fn not_admin() -> HttpResponse {
    http::plain(StatusCode::FORBIDDEN, "only an admin manages users")
}

fn no_users() -> HttpResponse {
    http::plain(
        StatusCode::NOT_FOUND,
        "users are CouchDB accounts here: manage them in CouchDB",
    )
}

pub async fn page(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let Some(db) = state.accounts.password_db() else {
        return no_users();
    };
    if !user.role.may_administer() {
        return not_admin();
    }
    listing(&session, &user, db, StatusCode::OK, None).await
}

async fn listing(
    session: &Current,
    user: &User,
    db: &SqliteStore,
    status: StatusCode,
    problem: Option<&str>,
) -> HttpResponse {
    match db.users().await {
        Ok(users) => html(
            status,
            pages::users::page(&viewer(session, user), &users, problem),
        ),
        Err(e) => unavailable(&e),
    }
}

fn unavailable(e: &dyn std::fmt::Display) -> HttpResponse {
    tracing::warn!(error = %e, "console: the users could not be read or changed");
    http::plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "the users could not be read or changed now; try again",
    )
}

/// An admin's POST of one of the page's forms: its session, user, store
/// and form, or the answer.
async fn admin_post(
    req: &HttpRequest,
    state: &ConsoleState,
    body: &web::Bytes,
) -> Result<(Current, User, SqliteStore, http::Form), http::Refusal> {
    let (session, user, form) = checked_write(req, state, body)?;
    let Some(db) = state.accounts.password_db() else {
        return Err(Box::new(no_users()));
    };
    if !user.role.may_administer() {
        return Err(Box::new(not_admin()));
    }
    Ok((session, user, db.clone(), form))
}

/// The page again with the refusal said above it: 400 for what was typed,
/// 409 for what the users are (taken, last admin), 404 for an unknown user.
async fn refused(session: &Current, user: &User, db: &SqliteStore, e: &UserError) -> HttpResponse {
    let status = match e {
        UserError::Store(e) => return unavailable(e),
        UserError::Unknown(_) => StatusCode::NOT_FOUND,
        UserError::Taken(_) | UserError::LastAdmin(_) => StatusCode::CONFLICT,
        _ => StatusCode::BAD_REQUEST,
    };
    listing(session, user, db, status, Some(&e.to_string())).await
}

fn parsed(form: &http::Form) -> Result<(UserName, Option<Role>), String> {
    let name = UserName::parse(form.text("name").unwrap_or_default()).map_err(|e| e.to_string())?;
    let role = form
        .get("role")
        .map(Role::parse)
        .transpose()
        .map_err(|e| e.to_string())?;
    Ok((name, role))
}

/// Where invitation links point: the console as this browser reached it.
fn origin(req: &HttpRequest) -> String {
    let info = req.connection_info();
    format!("{}://{}", info.scheme(), info.host())
}

pub async fn invite(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let (session, user, db, form) = match admin_post(&req, &state, &body).await {
        Ok(ok) => ok,
        Err(refusal) => return *refusal,
    };
    let (name, role) = match parsed(&form) {
        Ok((name, Some(role))) => (name, role),
        Ok((_, None)) => {
            let msg = "choose a role: viewer, editor or admin";
            return listing(&session, &user, &db, StatusCode::BAD_REQUEST, Some(msg)).await;
        }
        Err(msg) => {
            return listing(&session, &user, &db, StatusCode::BAD_REQUEST, Some(&msg)).await;
        }
    };
    let new = NewInvitation::generate(Utc::now());
    if let Err(e) = db.add_user(&name, role, &new.record).await {
        return refused(&session, &user, &db, &e).await;
    }
    let event = Event::UserInvited {
        user: name.to_string(),
        role,
    };
    state.record(actor(&user), event).await;
    link_answer(&req, &session, &user, name.as_str(), &new)
}

fn link_answer(
    req: &HttpRequest,
    session: &Current,
    user: &User,
    name: &str,
    new: &NewInvitation,
) -> HttpResponse {
    let link = invitation::url(&origin(req), &new.token);
    let expires = crate::values::timestamp::time_text(new.record.expires_at);
    let mut res = html(
        StatusCode::OK,
        pages::users::link_page(&viewer(session, user), name, &link, &expires),
    );
    res.headers_mut().insert(
        actix_web::http::header::REFERRER_POLICY,
        actix_web::http::header::HeaderValue::from_static("no-referrer"),
    );
    res
}

pub async fn role(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let (session, user, db, form) = match admin_post(&req, &state, &body).await {
        Ok(ok) => ok,
        Err(refusal) => return *refusal,
    };
    let (name, role) = match parsed(&form) {
        Ok((name, Some(role))) => (name, role),
        Ok((_, None)) => {
            let msg = "choose a role: viewer, editor or admin";
            return listing(&session, &user, &db, StatusCode::BAD_REQUEST, Some(msg)).await;
        }
        Err(msg) => {
            return listing(&session, &user, &db, StatusCode::BAD_REQUEST, Some(&msg)).await;
        }
    };
    match db.set_role(name.as_str(), role).await {
        Ok(old) => {
            let event = Event::RoleChanged {
                user: name.to_string(),
                from: old,
                to: role,
            };
            state.record(actor(&user), event).await;
            see_other(&users_path())
        }
        Err(e) => refused(&session, &user, &db, &e).await,
    }
}

pub async fn reset(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let (session, user, db, form) = match admin_post(&req, &state, &body).await {
        Ok(ok) => ok,
        Err(refusal) => return *refusal,
    };
    let name = match parsed(&form) {
        Ok((name, _)) => name,
        Err(msg) => {
            return listing(&session, &user, &db, StatusCode::BAD_REQUEST, Some(&msg)).await;
        }
    };
    let new = NewInvitation::generate(Utc::now());
    if let Err(e) = db.reset_user(name.as_str(), &new.record).await {
        return refused(&session, &user, &db, &e).await;
    }
    let event = Event::InvitationReset {
        user: name.to_string(),
    };
    state.record(actor(&user), event).await;
    state.sessions.end_user(name.as_str());
    link_answer(&req, &session, &user, name.as_str(), &new)
}

pub async fn remove(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let (session, user, db, form) = match admin_post(&req, &state, &body).await {
        Ok(ok) => ok,
        Err(refusal) => return *refusal,
    };
    let name = match parsed(&form) {
        Ok((name, _)) => name,
        Err(msg) => {
            return listing(&session, &user, &db, StatusCode::BAD_REQUEST, Some(&msg)).await;
        }
    };
    match db.remove_user(name.as_str()).await {
        Ok(()) => {
            let event = Event::UserRemoved {
                user: name.to_string(),
            };
            state.record(actor(&user), event).await;
            state.sessions.end_user(name.as_str());
            see_other(&users_path())
        }
        Err(e) => refused(&session, &user, &db, &e).await,
    }
}

/// The admin acting on the users page, as the audit log names them.
fn actor(user: &User) -> Actor {
    Actor::Console {
        user: user.name.clone(),
    }
}

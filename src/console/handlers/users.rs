//! Issue 35 (i35-users): the admins' users page, `GET /console/users`, and
//! its forms: invite, role, reset, remove (`POST /console/users/…`). Only
//! an admin gets the page or may post its forms (403 otherwise); CouchDB's
//! accounts are CouchDB's (404). The rules that span users (a name taken,
//! the last admin) are the store's, as for `qrtag user`.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;

use crate::console::ConsoleState;
use crate::console::http::{self, checked_write, html, logged_in, private, see_other, viewer};
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
    if !user.role.may_administer() {
        return not_admin();
    }
    let Some(db) = state.accounts.password_db() else {
        // The nav's Users link leads here on CouchDB too: say where the
        // people are managed and how their roles map.
        return html(
            StatusCode::OK,
            pages::users::on_couchdb(&viewer(&session, &user)),
        );
    };
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

/// The form's user name, or the page again with a 400 saying what is
/// wrong with it.
async fn named(
    session: &Current,
    user: &User,
    db: &SqliteStore,
    form: &http::Form,
) -> Result<UserName, HttpResponse> {
    match UserName::parse(form.text("name").unwrap_or_default()) {
        Ok(name) => Ok(name),
        Err(e) => Err(bad_form(session, user, db, &e.to_string()).await),
    }
}

/// The form's user name and role, or the page again with a 400.
async fn named_with_role(
    session: &Current,
    user: &User,
    db: &SqliteStore,
    form: &http::Form,
) -> Result<(UserName, Role), HttpResponse> {
    let name = named(session, user, db, form).await?;
    let role = match form.get("role").map(Role::parse) {
        Some(Ok(role)) => role,
        Some(Err(e)) => return Err(bad_form(session, user, db, &e.to_string()).await),
        None => {
            let msg = "choose a role: viewer, editor or admin";
            return Err(bad_form(session, user, db, msg).await);
        }
    };
    Ok((name, role))
}

async fn bad_form(session: &Current, user: &User, db: &SqliteStore, msg: &str) -> HttpResponse {
    listing(session, user, db, StatusCode::BAD_REQUEST, Some(msg)).await
}

/// The console as this browser reached it, where invitation links point
/// unless `--console-url` says otherwise.
fn reached(req: &HttpRequest) -> String {
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
    let (name, role) = match named_with_role(&session, &user, &db, &form).await {
        Ok(ok) => ok,
        Err(res) => return res,
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
    link_answer(&req, &state, &session, &user, name.as_str(), &new)
}

fn link_answer(
    req: &HttpRequest,
    state: &ConsoleState,
    session: &Current,
    user: &User,
    name: &str,
    new: &NewInvitation,
) -> HttpResponse {
    let link = invitation::link(state.console_url.as_ref(), || reached(req), &new.token);
    let expires = crate::values::timestamp::time_text(new.record.expires_at);
    private(html(
        StatusCode::OK,
        pages::users::link_page(&viewer(session, user), name, &link, &expires),
    ))
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
    let (name, role) = match named_with_role(&session, &user, &db, &form).await {
        Ok(ok) => ok,
        Err(res) => return res,
    };
    // Issue 36: the user's domains, when the form gives them.
    let domains = match form.get("domains").map(|t| served_domains(&state, t)) {
        None => None,
        Some(Ok(d)) => Some(d),
        Some(Err(msg)) => return bad_form(&session, &user, &db, &msg).await,
    };
    match db.set_role(name.as_str(), role).await {
        Ok(old) => {
            let event = Event::RoleChanged {
                user: name.to_string(),
                from: old,
                to: role,
            };
            state.record(actor(&user), event).await;
        }
        Err(e) => return refused(&session, &user, &db, &e).await,
    }
    if let Some(domains) = domains {
        let now = match db.account(name.as_str()).await {
            Ok(account) => account.and_then(|a| a.domains),
            Err(e) => return unavailable(&e),
        };
        if now != domains
            && let Err(e) = db.set_domains(name.as_str(), domains.as_deref()).await
        {
            return refused(&session, &user, &db, &e).await;
        }
    }
    see_other(&users_path())
}

/// Issue 36: the users page's domains field (hosts separated by blanks
/// or commas; empty: every domain), each a domain the service serves,
/// named as the service names it.
fn served_domains(state: &ConsoleState, text: &str) -> Result<Option<Vec<String>>, String> {
    let domains = state.domains();
    let mut out: Vec<String> = Vec::new();
    for host in text.split([' ', ',', '\t']).filter(|h| !h.is_empty()) {
        let at = domains.position(Some(host)).map_err(|e| e.to_string())?;
        let name = domains.all().get(at).map(|d| d.name()).unwrap_or_default();
        if !out.contains(&name) {
            out.push(name);
        }
    }
    Ok((!out.is_empty()).then_some(out))
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
    let name = match named(&session, &user, &db, &form).await {
        Ok(name) => name,
        Err(res) => return res,
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
    link_answer(&req, &state, &session, &user, name.as_str(), &new)
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
    let name = match named(&session, &user, &db, &form).await {
        Ok(name) => name,
        Err(res) => return res,
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

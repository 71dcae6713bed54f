//! A link's rules on its page (issue 34): add, remove and move a rule, and
//! the "what would this scan get" tester.
//!
//! Every edit makes the checks every surface makes before saving rules:
//! the core's parse ([`Rules::from_json`], with this server's GeoIP
//! capability for the new rule; the rules already stored are taken as
//! stored), no destination at the link's own short URL
//! ([`Rules::check_loops`]) on the public URL the server answers on, then
//! [`links::update_at`] at the revision the new list was computed from, so
//! a rule is never added to, or removed from, a list it was not checked
//! against: someone else's write in between is read again and the edit
//! computed again. The page after a save warns of a broken chain as it
//! does after a `url` edit.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::Value;

use super::link::{PageRefusal, Shown, render};
use crate::console::ConsoleState;
use crate::console::http::{
    Form, checked_write, link_path, logged_in, plain, problem, see_other, write_failure,
};
use crate::console::rule_form::{Fault, RuleForm, fault_of};
use crate::console::rule_tester::Described;
use crate::console::session::{Current, User};
use crate::link::rules::{Capabilities, Rules};
use crate::links::{self, LinkError};
use crate::store::StoreError;
use crate::values::link_key::LinkKey;

/// Reads again and recomputes after a conflicting write this many times.
const ATTEMPTS: usize = 5;

/// Why a rule edit was not saved.
enum Not {
    /// The add form's field at fault.
    Field(Fault),
    /// The list as shown is not the list stored (remove, move).
    List(String),
    /// The store's refusal.
    Write(LinkError),
}

/// The stored rules as JSON objects, for an edit to change; a stored list
/// the core does not accept cannot be edited here (it would be kept).
fn stored_items(doc: &crate::link::Document) -> Result<Vec<Value>, Not> {
    let rules = Rules::from_stored(doc).map_err(|e| {
        Not::List(format!(
            "The stored rules are not valid ({e}); fix them with qrtag rule or the REST API first."
        ))
    })?;
    Ok(match rules.to_json() {
        Value::Array(items) => items,
        _ => Vec::new(),
    })
}

/// The shape of every rule edit: the gate, the key, the new list computed
/// from the stored one by `change`, the checks, the write at that revision.
async fn edit(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
    change: impl Fn(&Form, Vec<Value>) -> Result<Vec<Value>, Not>,
) -> HttpResponse {
    let (session, user, form) = match checked_write(&req, &state, &body) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let key = match form.text("key").map(LinkKey::parse) {
        Some(Ok(key)) => key,
        Some(Err(e)) => return plain(StatusCode::BAD_REQUEST, &format!("bad key: {e}")),
        None => return plain(StatusCode::BAD_REQUEST, "no key given"),
    };
    let back = link_path(key.as_str());
    let origin = user.domain.public_url.load().origin().to_owned();
    let mut outcome = Err(Not::Write(LinkError::TooManyConflicts(key.to_string())));
    for _ in 0..ATTEMPTS {
        outcome = save(&user, &key, &origin, &form, &change).await;
        if !matches!(
            outcome,
            Err(Not::Write(LinkError::Store(StoreError::Conflict(_))))
        ) {
            break;
        }
    }
    let typed = RuleForm::read(&form);
    let (status, fault, msg) = match outcome {
        Ok(()) => return see_other(&format!("{back}#rules")),
        Err(Not::Write(e @ (LinkError::NotFound(_) | LinkError::Deleted { .. }))) => {
            let (status, msg) = write_failure(&e);
            return problem(&session, &user, status, &msg, &back);
        }
        Err(Not::Write(e)) => {
            let (status, msg) = write_failure(&e);
            (status, None, msg)
        }
        Err(Not::List(msg)) => (StatusCode::CONFLICT, None, msg),
        Err(Not::Field(f)) => (StatusCode::BAD_REQUEST, Some(f), String::new()),
    };
    let refusal = match &fault {
        Some(f) => PageRefusal::Rule(&typed, f),
        None => PageRefusal::Rules(&msg),
    };
    again(&state, &session, &user, &key, status, refusal).await
}

async fn again(
    state: &ConsoleState,
    session: &Current,
    user: &User,
    key: &LinkKey,
    status: StatusCode,
    refusal: PageRefusal<'_>,
) -> HttpResponse {
    render(
        state,
        session,
        user,
        key,
        Shown::default(),
        status,
        Some(refusal),
    )
    .await
}

/// One attempt: read, compute, check, write at the revision read.
async fn save(
    user: &User,
    key: &LinkKey,
    origin: &str,
    form: &Form,
    change: &impl Fn(&Form, Vec<Value>) -> Result<Vec<Value>, Not>,
) -> Result<(), Not> {
    let stored = match user.store.get(key).await {
        Ok(Some(stored)) => stored,
        Ok(None) => return Err(Not::Write(LinkError::NotFound(key.clone()))),
        Err(e) => return Err(Not::Write(e.into())),
    };
    if let Some(e) = links::deleted(key, &stored.doc) {
        return Err(Not::Write(e));
    }
    let items = change(form, stored_items(&stored.doc)?)?;
    // Every rule was checked when it was saved or just now with this
    // server's capability: the list as a whole is checked for its length.
    let rules = Rules::from_json(&Value::Array(items), &Capabilities { geoip: true })
        .map_err(|e| Not::Field(fault_of(&e)))?;
    rules.check_loops(key.as_str(), origin).map_err(|e| {
        Not::Field(Fault {
            field: "url",
            message: format!(
                "Destination: {} is the link {}'s own short URL: a scan this rule answers would come back to it for ever.",
                e.url, e.key
            ),
        })
    })?;
    links::update_at(user.store.as_ref(), &user.author(), key, &stored.rev, |d| {
        rules.write_to(d)
    })
    .await
    .map(|_| ())
    .map_err(Not::Write)
}

/// Adds the form's rule after the others.
pub async fn add(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let zone = state.time_zone;
    let caps = Capabilities { geoip: state.geoip };
    edit(req, state, body, move |form, mut items| {
        let rule = RuleForm::read(form).to_json(zone).map_err(Not::Field)?;
        // The new rule alone, with what this server can answer.
        Rules::from_json(&Value::Array(vec![rule.clone()]), &caps)
            .map_err(|e| Not::Field(fault_of(&e)))?;
        items.push(rule);
        Ok(items)
    })
    .await
}

/// The rule a remove or move names (its place from 1, as the page numbers
/// rules), if it is still the one the page showed (`was`).
fn named(form: &Form, items: &[Value]) -> Result<usize, Not> {
    let changed = || {
        Not::List(
            "The rules changed since this page was shown: nothing was done; look again and retry."
                .into(),
        )
    };
    let index = form
        .text("index")
        .and_then(|i| i.parse::<usize>().ok())
        .and_then(|i| i.checked_sub(1))
        .ok_or_else(changed)?;
    let was: Value = form
        .get("was")
        .and_then(|w| serde_json::from_str(w).ok())
        .ok_or_else(changed)?;
    match items.get(index) {
        Some(item) if *item == was => Ok(index),
        _ => Err(changed()),
    }
}

pub async fn remove(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    edit(req, state, body, |form, mut items| {
        let index = named(form, &items)?;
        items.remove(index);
        Ok(items)
    })
    .await
}

/// Moves a rule one place up or down (`to`).
pub async fn move_rule(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    edit(req, state, body, |form, mut items| {
        let index = named(form, &items)?;
        let other = match form.get("to") {
            Some("up") => index.checked_sub(1),
            Some("down") => Some(index + 1).filter(|&i| i < items.len()),
            _ => None,
        }
        .ok_or_else(|| Not::List("A rule moves up or down, one place within the list.".into()))?;
        items.swap(index, other);
        Ok(items)
    })
    .await
}

/// The tester: the link's page with the answer for the scan described.
pub async fn try_scan(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let query = req.query_string();
    let key = form_urlencoded::parse(query.as_bytes())
        .find(|(n, _)| n == "key")
        .map(|(_, v)| LinkKey::parse(&v));
    let key = match key {
        Some(Ok(key)) => key,
        Some(Err(e)) => return plain(StatusCode::BAD_REQUEST, &format!("bad key: {e}")),
        None => return plain(StatusCode::BAD_REQUEST, "no key given"),
    };
    let Some(described) = Described::from_query(query) else {
        return plain(StatusCode::BAD_REQUEST, "no device given");
    };
    let shown = super::link::shown_trying(described);
    render(&state, &session, &user, &key, shown, StatusCode::OK, None).await
}

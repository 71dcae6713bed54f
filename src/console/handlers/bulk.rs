//! `POST /console/links/bulk`: one action on the links ticked in the list,
//! or on every link its filter matches (resolved now, from the snapshot
//! the list reads). The whole form is checked, and every ticked link found,
//! before anything is written; a mistake is the list again with the message
//! beside its field and the rows still ticked. Writes go link by link
//! through [`links::bulk::edit`] as the logged-in user, so each is stamped
//! like a single edit and refused by the store like one; the answer is a
//! report of what happened to each link.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use futures_util::stream::{self, StreamExt};

use crate::console::ConsoleState;
use crate::console::bulk::{self, Action, BAR, MAX_BULK, PRINT_FIELDS, Scope};
use crate::console::http::{Form, checked_write, html, plain, viewer, write_failure};
use crate::console::list::Query;
use crate::console::pages::bulk::{Bar, Outcome};
use crate::console::pages::links::CreateForm;
use crate::console::pages::{self, Refused};
use crate::console::session::{Current, User};
use crate::link::{self, Document};
use crate::links::{self, LinkError};
use crate::values::link_key::LinkKey;

/// Links edited at once, reported in the order sent: each write waits
/// until the snapshot serves it, and with several under way one
/// publication serves several, while the store still orders the writes
/// themselves (SQLite one at a time).
const IN_FLIGHT: usize = 8;

/// The list's query as the form carries it (`q`, `by`, `sort`, `state`).
fn list_query(form: &Form) -> Result<Query, String> {
    let text = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            form.pairs()
                .iter()
                .filter(|(n, _)| matches!(n.as_str(), "q" | "by" | "sort" | "state")),
        )
        .finish();
    super::links::query_from(&text)
}

/// Every ticked link must be a link: a deleted or unknown key (a stale
/// page, a hand-made form) stops the whole action before any write.
async fn check_ticked(user: &User, keys: &[LinkKey]) -> Result<(), (StatusCode, String)> {
    let table = user.domain.snapshot.load();
    for key in keys {
        if table.get(key.as_str()).is_some() {
            continue;
        }
        // Not served: deleted, unknown, or written a moment ago.
        let fault = match links::get(user.store.as_ref(), key).await {
            Ok(doc) => match links::deleted(key, &doc) {
                Some(e) => write_failure(&e),
                None => continue,
            },
            Err(e) => write_failure(&e),
        };
        let (status, msg) = fault;
        let status = if status.is_server_error() {
            status
        } else {
            StatusCode::BAD_REQUEST
        };
        return Err((status, format!("{msg} Untick {key}; nothing was changed.")));
    }
    Ok(())
}

pub async fn act(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let (session, user, form) = match checked_write(&req, &state, &body) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let query = match list_query(&form) {
        Ok(query) => query,
        Err(msg) => return plain(StatusCode::BAD_REQUEST, &msg),
    };
    let again = Again {
        state: &state,
        session: &session,
        user: &user,
        query: &query,
        form: &form,
    };
    let request = match bulk::parse(form.pairs(), Utc::now(), state.time_zone) {
        Ok(request) => request,
        Err(r) => {
            return again
                .refused(StatusCode::BAD_REQUEST, r.field, &r.message)
                .await;
        }
    };
    // Issue 35: printing is a viewer's, an edit an editor's, deleting an
    // admin's; checked before any link is looked at.
    if let Err(why) =
        crate::console::rights::check(user.role, crate::console::rights::bulk(&request.action))
    {
        return plain(StatusCode::FORBIDDEN, &why);
    }
    let keys = match request.scope {
        Scope::Ticked(keys) => match check_ticked(&user, &keys).await {
            Ok(()) => keys,
            Err((status, msg)) => return again.refused(status, BAR, &msg).await,
        },
        Scope::Matching => match super::matching::rows(&user.domain, &query).await {
            None => {
                let msg = "Scan counts are not available yet, so links cannot be chosen by them; nothing was changed.";
                return again
                    .refused(StatusCode::SERVICE_UNAVAILABLE, BAR, msg)
                    .await;
            }
            Some(rows) if rows.len() > MAX_BULK => {
                let msg = format!(
                    "More than {MAX_BULK} links match this list: one action takes at most {MAX_BULK}. Narrow the search or the filter; nothing was changed."
                );
                return again.refused(StatusCode::BAD_REQUEST, BAR, &msg).await;
            }
            Some(rows) if rows.is_empty() => {
                let msg = "No link matches this list; nothing was changed.";
                return again.refused(StatusCode::BAD_REQUEST, BAR, msg).await;
            }
            Some(rows) => rows
                .iter()
                .filter_map(|r| LinkKey::parse(&r.key).ok())
                .collect(),
        },
    };
    let label = request.action.label();
    let change: Box<dyn Fn(&mut Document)> = match request.action {
        Action::Print(options) => return print(&again, &options, keys).await,
        Action::Csv => return csv(&again, &keys).await,
        Action::Delete { confirmed: false } => {
            let table = user.domain.snapshot.load();
            let rows: Vec<(String, String)> = keys
                .iter()
                .map(|k| {
                    let url = table.get(k.as_str()).map(|l| l.url.to_owned());
                    (k.to_string(), url.unwrap_or_default())
                })
                .collect();
            let page = pages::bulk::confirm_delete(&viewer(&session, &user), &rows);
            return html(StatusCode::OK, page);
        }
        Action::Delete { confirmed: true } => Box::new(|d| link::set_deleted(d, Utc::now())),
        Action::Enable => Box::new(|d| link::set_inactive(d, false)),
        Action::Disable => Box::new(|d| link::set_inactive(d, true)),
        Action::Repoint(url) => Box::new(move |d| link::set_url(d, &url)),
        Action::Expire(at) => Box::new(move |d| link::set_expires(d, Some(at))),
        Action::NoExpiry => Box::new(|d| link::set_expires(d, None)),
    };
    let author = user.author();
    let (store, change, author) = (user.store.as_ref(), &change, &author);
    let rows: Vec<(String, Outcome)> = stream::iter(keys)
        .map(|key| async move {
            let outcome = match links::bulk::edit(store, author, &key, |d| change(d)).await {
                links::bulk::Outcome::Done => Outcome::Done,
                links::bulk::Outcome::Unchanged => Outcome::Unchanged,
                links::bulk::Outcome::Refused(e) => Outcome::Refused(write_failure(&e).1),
            };
            (key.to_string(), outcome)
        })
        .buffered(IN_FLIGHT)
        .collect()
        .await;
    tracing::info!(
        user = %user.name,
        action = %label,
        links = rows.len(),
        "console bulk action"
    );
    // Issue 35: the links it changed, into the audit log.
    let changed: Vec<&str> = rows
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Done))
        .map(|(k, _)| k.as_str())
        .collect();
    let actor = crate::values::actor::Actor::Console {
        user: user.name.clone(),
    };
    let event = crate::values::audit::Event::bulk(&label, &changed);
    state.record(actor, event).await;
    html(
        StatusCode::OK,
        pages::bulk::report(&viewer(&session, &user), &label, &rows),
    )
}

/// What the list needs to come back with a refused bulk form.
struct Again<'a> {
    state: &'a web::Data<ConsoleState>,
    session: &'a Current,
    user: &'a User,
    query: &'a Query,
    form: &'a Form,
}

impl Again<'_> {
    /// The list again, its rows still ticked and the fields as typed, with
    /// `message` beside `field`.
    async fn refused(&self, status: StatusCode, field: &str, message: &str) -> HttpResponse {
        let ticked: Vec<String> = self
            .form
            .pairs()
            .iter()
            .filter(|(n, _)| n == "key")
            .map(|(_, v)| v.clone())
            .collect();
        let bar = Bar {
            ticked: &ticked,
            typed: self.form.pairs(),
            refused: Some(Refused {
                field: Some(field),
                message,
            }),
            ..Bar::default()
        };
        super::links::list_page(
            self.state,
            self.session,
            self.user,
            (self.query.clone(), Default::default()),
            status,
            CreateForm::default(),
            bar,
        )
        .await
    }
}

/// One PDF of the links' tags, through the print path the other PDF forms
/// take; a refused option is the bar's field.
async fn print(
    again: &Again<'_>,
    options: &crate::print::PrintOptions,
    keys: Vec<LinkKey>,
) -> HttpResponse {
    use super::pdf::{self as make, Refused as Not};
    let made = match make::with_notes(again.user, options, keys).await {
        Ok(keys) => make::render(again.state, again.user, options, &keys, "qrtag-links.pdf").await,
        Err(not) => Err(not),
    };
    match made {
        Ok(pdf) => pdf,
        Err(Not::Answer(res)) => *res,
        Err(Not::Form { field, message }) => {
            let field = field
                .and_then(|f| PRINT_FIELDS.into_iter().find(|p| *p == f))
                .unwrap_or(BAR);
            again
                .refused(StatusCode::BAD_REQUEST, field, &message)
                .await
        }
    }
}

/// The links as `qrtag export --format csv` writes them, as the user's
/// store has them now, so the file goes back in with `qrtag import`.
async fn csv(again: &Again<'_>, keys: &[LinkKey]) -> HttpResponse {
    use crate::transfer::export;
    let docs = match again.user.store.get_all(keys).await {
        Ok(docs) => docs,
        Err(e) => {
            let (status, msg) = write_failure(&LinkError::Store(e));
            return again.refused(status, BAR, &msg).await;
        }
    };
    let mut out = Vec::new();
    // Writing into memory cannot fail.
    let _ = export::write_csv_header(&mut out);
    for (key, stored) in keys.iter().zip(docs) {
        match stored {
            Some(s) if !link::is_tombstone(&s.doc) => {
                let _ = export::write_csv(&mut out, key.as_str(), &s.doc);
            }
            // Deleted since the form was sent: not a link any more.
            _ => {}
        }
    }
    super::csv_file(
        "qrtag-links.csv",
        String::from_utf8_lossy(&out).into_owned(),
    )
}

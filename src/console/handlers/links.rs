//! The links list and creating a link.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;

use crate::console::ConsoleState;
use crate::console::http::{
    Form, checked_write, html, link_path, logged_in, plain, viewer, write_failure,
};
use crate::console::list::{self, By, Cursor, Query, Sort, StateFilter};
use crate::console::pages::bulk::{Bar, Matching};
use crate::console::pages::{self, Refused, links::CreateForm};
use crate::console::per_page::PerPage;
use crate::console::session::{Current, User};
use crate::link::{self, Link, Notes, Title};
use crate::links::{self, LinkError};
use crate::values::destination::Destination;
use crate::values::expiry::parse_future;
use crate::values::link_key::LinkKey;

/// Rows a page shows when the address does not say (issue 33: a hundred).
pub const PAGE_SIZE: usize = crate::console::per_page::DEFAULT;

/// Days of scans the list shows per link.
const SCAN_DAYS: i64 = 30;

/// The list's query: text, where to search, order, state and cursor, all
/// query parameters so a sorted, filtered page is an address to keep. An
/// order or state the console does not know is the client's mistake.
pub(super) fn query_from(query_string: &str) -> Result<Query, String> {
    let mut query = Query::default();
    for (name, value) in form_urlencoded::parse(query_string.as_bytes()) {
        match &*name {
            "q" => query.text = value.trim().to_owned(),
            "by" if value == "url" => query.by = By::Url,
            "by" if value == "any" => query.by = By::Any,
            "sort" => {
                query.sort = Sort::parse(&value).ok_or_else(|| {
                    format!(
                        "bad sort: `{value}`; one of {}",
                        names(Sort::ALL.map(Sort::name))
                    )
                })?;
            }
            "state" => {
                query.state = StateFilter::parse(&value).ok_or_else(|| {
                    format!(
                        "bad state: `{value}`; one of {}",
                        names(StateFilter::ALL.map(StateFilter::name))
                    )
                })?;
            }
            "after" if !value.is_empty() => query.cursor = Cursor::After(value.into_owned()),
            "before" if !value.is_empty() => query.cursor = Cursor::Before(value.into_owned()),
            _ => {}
        }
    }
    Ok(query)
}

/// Issue 33: the rows a page shows (`per`), kept apart from [`Query`],
/// which says which rows; a size the list does not offer is the client's
/// mistake.
pub(super) fn per_from(query_string: &str) -> Result<PerPage, String> {
    let mut per = PerPage::default();
    for (name, value) in form_urlencoded::parse(query_string.as_bytes()) {
        if name == "per" {
            per = PerPage::parse(&value)?;
        }
    }
    Ok(per)
}

fn names<const N: usize>(names: [&str; N]) -> String {
    names.join(", ")
}

pub async fn list(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let query = match query_from(req.query_string()) {
        Ok(query) => query,
        Err(msg) => return plain(StatusCode::BAD_REQUEST, &msg),
    };
    let per = match per_from(req.query_string()) {
        Ok(per) => per,
        Err(msg) => return plain(StatusCode::BAD_REQUEST, &msg),
    };
    list_page(
        &state,
        &session,
        &user,
        (query, per),
        StatusCode::OK,
        CreateForm::default(),
        Bar::default(),
    )
    .await
}

/// The list page for `query`, with the create form and the bulk actions'
/// bar as given (empty, or refused and filled in again).
pub(super) async fn list_page(
    state: &web::Data<ConsoleState>,
    session: &Current,
    user: &User,
    (query, per): (Query, PerPage),
    status: StatusCode,
    create: CreateForm<'_>,
    bulk: Bar<'_>,
) -> HttpResponse {
    let size = per.rows();
    // Off the admin listener's one worker: a search in a time order reads
    // every link's text, and a page asked for before
    // `key_order::keep_following` has built the orders after a start builds
    // them itself.
    let work = {
        let domain = std::sync::Arc::clone(&user.domain);
        let query = query.clone();
        move || {
            super::matching::with_list(&domain, query.state, |table, keys, at| {
                (list::page(keys, table, &query, size, at), table.len())
            })
        }
    };
    let (page, total) = match web::block(work).await {
        Ok(Some((page, total))) => (Some(page), total),
        Ok(None) => (None, user.domain.snapshot.load().len()),
        Err(e) => {
            tracing::error!(error = %e, "listing links did not finish");
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "the list is not available; try again",
            );
        }
    };
    let filter_unavailable = page.is_none();
    let page = page.unwrap_or_default();
    // "All N matching" (issue 33): a one-page list counts its rows, a
    // longer one up to one past what a bulk action takes.
    let bulk = Bar {
        matching: if page.prev.is_none() && page.next.is_none() {
            Matching::Exactly(page.rows.len())
        } else {
            super::matching::count(&user.domain, &query).await
        },
        ..bulk
    };
    let since = (Utc::now() - chrono::Duration::days(SCAN_DAYS - 1)).date_naive();
    let keys: Vec<&str> = page.rows.iter().map(|r| r.key.as_str()).collect();
    // Issue 38: asked of ClickHouse first with --scans-from.
    let counts = crate::console::scans_from::for_list(&user.domain.scans, &keys, since).await;
    let scans = counts.scans.scans_since(&keys, since);
    let public_url = user.domain.public_url.get();
    let short_url = |k: &str| public_url.short_url(k);
    let tag_text =
        |k: &str| crate::qr::short_url_text(public_url.origin(), k, state.uppercase_prefix);
    let view = pages::links::View {
        viewer: viewer(session, user),
        total,
        query: &query,
        per,
        page: &page,
        scans,
        filter_unavailable,
        short_url: &short_url,
        tag_text: &tag_text,
        now: Utc::now(),
        create,
        bulk,
        // Issue 38.
        scans_away: counts.away,
    };
    html(status, pages::links::page(&view))
}

pub async fn create(
    req: HttpRequest,
    state: web::Data<ConsoleState>,
    body: web::Bytes,
) -> HttpResponse {
    let (session, user, form) = match checked_write(&req, &state, &body) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let (status, field, msg) = match create_link(&state, &user, &form).await {
        Ok(key) => return crate::console::http::see_other(&link_path(key.as_str())),
        Err(refused) => refused,
    };
    // The list again with what was typed, the field at fault marked.
    let typed = |name: &str| form.get(name).unwrap_or_default();
    let create = CreateForm {
        url: typed("url"),
        key: typed("key"),
        expires: typed("expires"),
        notes: typed("notes"),
        title: typed("title"),
        refused: Some(Refused {
            field,
            message: &msg,
        }),
    };
    list_page(
        &state,
        &session,
        &user,
        (Query::default(), PerPage::default()),
        status,
        create,
        Bar::default(),
    )
    .await
}

/// A refused form: the status, the field at fault (`None`: no one field's
/// fault), and the message.
type Refusal = (StatusCode, Option<&'static str>, String);

/// The create form's fields checked, then the write.
async fn create_link(state: &ConsoleState, user: &User, form: &Form) -> Result<LinkKey, Refusal> {
    let bad = |field, msg: String| (StatusCode::BAD_REQUEST, Some(field), msg);
    let url = match form.text("url").map(Destination::parse) {
        Some(Ok(url)) => url,
        Some(Err(e)) => return Err(bad("url", format!("Destination: {e}"))),
        None => return Err(bad("url", "Give a destination.".into())),
    };
    let key = match form.text("key").map(LinkKey::parse) {
        Some(Ok(key)) => Some(key),
        Some(Err(e)) => return Err(bad("key", format!("Key: {e}"))),
        None => None,
    };
    let expires = match form
        .text("expires")
        .map(|s| parse_future(s, Utc::now(), state.time_zone))
    {
        Some(Ok(e)) => e,
        Some(Err(e)) => return Err(bad("expires", format!("Expires: {e}"))),
        None => None,
    };
    let notes = Notes::parse(form.get("notes").unwrap_or_default())
        .map_err(|e| bad("notes", format!("Notes: {e}.")))?;
    let title = Title::parse(form.get("title").unwrap_or_default())
        .map_err(|e| bad("title", format!("Title: {e}.")))?;
    let mut doc = Link::new_document(&url, false);
    link::set_expires(&mut doc, expires);
    link::set_notes(&mut doc, &notes);
    link::set_title(&mut doc, &title);
    links::create_document(user.store.as_ref(), &user.author(), &doc, key.as_ref())
        .await
        .map_err(|e| {
            let (status, msg) = write_failure(&e);
            let field =
                matches!(e, LinkError::KeyTaken(_) | LinkError::TakesOver { .. }).then_some("key");
            (status, field, msg)
        })
}

//! The links list and creating a link.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;

use crate::console::ConsoleState;
use crate::console::http::{
    checked_write, html, link_path, logged_in, plain, problem, viewer, write_failure,
};
use crate::console::list::{self, By, Cursor, Query};
use crate::console::pages::{self, BASE};
use crate::destination::Destination;
use crate::expiry::parse_future;
use crate::link::{self, Link, Notes};
use crate::link_key::LinkKey;
use crate::links;

/// Rows a page shows.
pub const PAGE_SIZE: usize = 50;

/// Days of scans the list shows per link.
const SCAN_DAYS: i64 = 30;

fn query_from(req: &HttpRequest) -> Query {
    let mut query = Query::default();
    for (name, value) in form_urlencoded::parse(req.query_string().as_bytes()) {
        match &*name {
            "q" => query.text = value.trim().to_owned(),
            "by" if value == "url" => query.by = By::Url,
            "after" if !value.is_empty() => query.cursor = Cursor::After(value.into_owned()),
            "before" if !value.is_empty() => query.cursor = Cursor::Before(value.into_owned()),
            _ => {}
        }
    }
    query
}

pub async fn list(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let query = query_from(&req);
    // Off the admin listener's one worker: a destination search scans every
    // link, and a page asked for before `key_order::keep_following` has
    // sorted the keys after a start sorts them itself.
    let work = {
        let state = state.clone().into_inner();
        let query = query.clone();
        move || {
            let table = Arc::clone(&state.snapshot.load());
            let mut order = state.order.lock().unwrap_or_else(|p| p.into_inner());
            let keys = order.follow(&table);
            (list::page(keys, &table, &query, PAGE_SIZE), table.len())
        }
    };
    let (page, total) = match web::block(work).await {
        Ok(done) => done,
        Err(e) => {
            tracing::error!(error = %e, "listing links did not finish");
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "the list is not available; try again",
            );
        }
    };
    let since = (Utc::now() - chrono::Duration::days(SCAN_DAYS - 1)).date_naive();
    let keys: Vec<&str> = page.rows.iter().map(|r| r.key.as_str()).collect();
    let scans = state.scans.scans_since(&keys, since);
    let short_url = |k: &str| state.public_url.short_url(k);
    let view = pages::links::View {
        viewer: viewer(&session, &user),
        total,
        query: &query,
        page: &page,
        scans,
        short_url: &short_url,
        now: Utc::now(),
    };
    html(StatusCode::OK, pages::links::page(&view))
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
    let back = format!("{BASE}/links");
    let bad = |msg: String| problem(&session, &user, StatusCode::BAD_REQUEST, &msg, &back);
    let url = match form.text("url").map(Destination::parse) {
        Some(Ok(url)) => url,
        Some(Err(e)) => return bad(format!("Destination: {e}")),
        None => return bad("Give a destination.".into()),
    };
    let key = match form.text("key").map(LinkKey::parse) {
        Some(Ok(key)) => Some(key),
        Some(Err(e)) => return bad(format!("Key: {e}")),
        None => None,
    };
    let expires = match form
        .text("expires")
        .map(|s| parse_future(s, Utc::now(), state.time_zone))
    {
        Some(Ok(e)) => e,
        Some(Err(e)) => return bad(format!("Expires: {e}")),
        None => None,
    };
    let notes = match Notes::parse(form.get("notes").unwrap_or_default()) {
        Ok(notes) => notes,
        Err(e) => return bad(format!("Notes: {e}.")),
    };
    let mut doc = Link::new_document(&url, false);
    link::set_expires(&mut doc, expires);
    link::set_notes(&mut doc, &notes);
    match links::create_document(user.store.as_ref(), &doc, key.as_ref()).await {
        Ok(key) => crate::console::http::see_other(&link_path(key.as_str())),
        Err(e) => {
            let (status, msg) = write_failure(&e);
            problem(&session, &user, status, &msg, &back)
        }
    }
}

//! The console's request handlers, by page.

pub mod audit;
pub mod auth;
pub mod bulk;
pub mod dashboard;
pub mod link;
pub mod link_rules;
pub mod links;
pub mod matching;
pub mod pdf;
pub mod setup;
pub mod sheet;
// Issue 35 (i35-users).
pub mod account;
pub mod invite;
pub mod users;
// Issue 35 (i35-timeline).
pub mod link_history;

use actix_web::HttpResponse;
use actix_web::http::header;

use crate::console::pages::chart::Period;

/// The `days` parameter of a page's query (the period picker's links): the
/// default period without one.
pub fn period(query: &str) -> Result<Period, String> {
    let mut period = Period::default();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if name == "days" {
            period = Period::parse(&value)?;
        }
    }
    Ok(period)
}

/// A CSV download named `name`.
pub fn csv_file(name: &str, body: String) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/csv; charset=utf-8")
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}\""),
        ))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(body)
}

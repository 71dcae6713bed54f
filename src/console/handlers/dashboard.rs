//! The dashboard.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;

use crate::console::ConsoleState;
use crate::console::http::{html, logged_in, problem, viewer};
use crate::console::pages;
use crate::console::pages::chart::Period;

/// How many busiest links.
const TOP: usize = 10;

pub async fn page(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let period = match period(req.query_string()) {
        Ok(p) => p,
        Err(msg) => {
            let back = format!("{}/dashboard", pages::BASE);
            return problem(&session, &user, StatusCode::BAD_REQUEST, &msg, &back);
        }
    };
    let since = period.since(Utc::now().date_naive());
    // Off the admin listener's worker: ranking every key takes tens of
    // milliseconds at a million, and `/readyz` and `/metrics` share it.
    let scans = Arc::clone(&state.scans);
    let numbers = web::block(move || (scans.top_keys(since, TOP), scans.daily_totals(since))).await;
    let (top, daily) = match numbers {
        Ok(numbers) => numbers,
        Err(e) => {
            tracing::error!(error = %e, "counting the dashboard's scans did not finish");
            (None, None)
        }
    };
    // A key with scans was a link when it was counted; one deleted since
    // is shown as such, not linked to a page that would say it is unknown.
    let table = state.snapshot.load();
    let top = top.map(|top| {
        top.into_iter()
            .map(|(key, n)| {
                let is_link = table.get(&key).is_some();
                (key, n, is_link)
            })
            .collect()
    });
    let view = pages::dashboard::View {
        viewer: viewer(&session, &user),
        period,
        top,
        daily,
    };
    html(StatusCode::OK, pages::dashboard::page(&view))
}

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

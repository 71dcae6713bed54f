//! The dashboard.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;

use crate::console::ConsoleState;
use crate::console::http::{html, logged_in, plain, problem, viewer};
use crate::console::pages;

/// How many busiest links.
const TOP: usize = 10;

pub async fn page(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let (session, user) = match logged_in(&req, &state) {
        Ok(ok) => ok,
        Err(to_login) => return *to_login,
    };
    let period = match super::period(req.query_string()) {
        Ok(p) => p,
        Err(msg) => {
            let back = format!("{}/dashboard", pages::BASE);
            return problem(&session, &user, StatusCode::BAD_REQUEST, &msg, &back);
        }
    };
    let today = Utc::now().date_naive();
    let since = period.since(today);
    // Off the admin listener's worker: ranking every key takes tens of
    // milliseconds at a million, and `/readyz` and `/metrics` share it.
    // Issue 38: asked of ClickHouse first with --scans-from.
    let counts = crate::console::scans_from::for_dashboard(&user.domain.scans, since, TOP).await;
    let scans = Arc::clone(&counts.scans);
    let numbers = web::block(move || {
        (
            scans.top_keys(since, TOP),
            scans.daily_totals(since),
            scans.day_shares(since, today),
            scans.fallback_since(since),
        )
    })
    .await;
    let (top, daily, shares, fallback) = match numbers {
        Ok(numbers) => numbers,
        Err(e) => {
            tracing::error!(error = %e, "counting the dashboard's scans did not finish");
            (None, None, None, None)
        }
    };
    // Issue 33: the busiest links' fallback answers, of all time.
    let top_fallback = top.as_ref().and_then(|top| {
        let keys: Vec<&str> = top.iter().map(|(k, _)| k.as_str()).collect();
        counts.scans.fallback_of(&keys)
    });
    // A key with scans was a link when it was counted; one deleted since
    // is shown as such, not linked to a page that would say it is unknown.
    let table = user.domain.snapshot.load();
    let top = top.map(|top| {
        top.into_iter()
            .enumerate()
            .map(|(i, (key, scans))| {
                let link = table.get(&key);
                let title = table.texts(&key).and_then(|t| t.title).map(str::to_owned);
                pages::dashboard::Busiest {
                    is_link: link.is_some(),
                    url: link.map(|l| l.url.to_owned()),
                    title,
                    scans,
                    key,
                    fallback: top_fallback.as_ref().and_then(|f| f.get(i).copied()),
                }
            })
            .collect()
    });
    let view = pages::dashboard::View {
        viewer: viewer(&session, &user),
        period,
        top,
        daily,
        shares,
        fallback,
        // Issue 38.
        scans_away: counts.away,
    };
    html(StatusCode::OK, pages::dashboard::page(&view))
}

/// The dashboard's breakdowns over the period picked, as CSV.
pub async fn breakdowns_csv(req: HttpRequest, state: web::Data<ConsoleState>) -> HttpResponse {
    let user = match logged_in(&req, &state) {
        Ok((_, user)) => user,
        Err(to_login) => return *to_login,
    };
    let period = match super::period(req.query_string()) {
        Ok(p) => p,
        Err(msg) => return plain(StatusCode::BAD_REQUEST, &msg),
    };
    let today = Utc::now().date_naive();
    let since = period.since(today);
    // Issue 38: asked of ClickHouse first with --scans-from.
    let counts = crate::console::scans_from::for_dashboard(&user.domain.scans, since, TOP).await;
    let scans = Arc::clone(&counts.scans);
    let numbers = web::block(move || (scans.day_shares(since, today), scans.fallback_since(since)));
    match numbers.await {
        Ok((Some(shares), fallback)) => super::csv_file(
            &format!("scans-{}-days-breakdowns.csv", period.days()),
            pages::breakdowns::with_fallback(
                pages::breakdowns::csv(&shares),
                fallback.unwrap_or_default(),
            ),
        ),
        _ => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "breakdowns are not available (the scan index is still reading the log, or keeps none)",
        ),
    }
}

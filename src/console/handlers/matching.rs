//! Which links the list's filter matches, for bulk actions (issue 33):
//! counted for the list's "all N matching", resolved when a bulk form is
//! sent, at most one past [`MAX_BULK`].

use std::sync::Arc;

use actix_web::web;
use chrono::Utc;

use crate::console::ConsoleState;
use crate::console::bulk::MAX_BULK;
use crate::console::list::{self, At, Query, Row, StateFilter};
use crate::console::pages::bulk::Matching;

/// The first `limit` links `query` matches; `None` when it filters by
/// scans and scan numbers are not available.
fn matching_rows(state: &ConsoleState, query: &Query, limit: usize) -> Option<Vec<Row>> {
    let table = Arc::clone(&state.snapshot.load());
    let mut order = state.order.lock().unwrap_or_else(|p| p.into_inner());
    let keys = order.follow(&table);
    let now_ms = Utc::now().timestamp_millis();
    if query.state == StateFilter::NeverScanned {
        let mut rows = None;
        state.scans.with_all_time(&mut |scans| {
            let at = At {
                now_ms,
                all_time_scans: scans,
            };
            rows = Some(list::matching(keys, &table, query, limit, &at));
        });
        rows
    } else {
        let at = At {
            now_ms,
            all_time_scans: &|_| 0,
        };
        Some(list::matching(keys, &table, query, limit, &at))
    }
}

/// The links `query` matches, up to one past [`MAX_BULK`], off the admin
/// listener's worker (a search in a time order reads every link's text).
pub(super) async fn rows(state: &web::Data<ConsoleState>, query: &Query) -> Option<Vec<Row>> {
    let state = state.clone().into_inner();
    let query = query.clone();
    web::block(move || matching_rows(&state, &query, MAX_BULK + 1))
        .await
        .ok()
        .flatten()
}

/// How many links the list's query matches, for the bar's "all N". With
/// no search and no state filter every link matches, in any order, so the
/// table's size says it without a pass over it.
pub(super) async fn count(state: &web::Data<ConsoleState>, query: &Query) -> Matching {
    if query.text.is_empty() && query.state == StateFilter::All {
        let all = state.snapshot.load().len();
        return if all <= MAX_BULK {
            Matching::Exactly(all)
        } else {
            Matching::MoreThan(MAX_BULK)
        };
    }
    match rows(state, query).await {
        Some(rows) if rows.len() <= MAX_BULK => Matching::Exactly(rows.len()),
        _ => Matching::MoreThan(MAX_BULK),
    }
}

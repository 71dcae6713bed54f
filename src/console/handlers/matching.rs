//! Which links the list's filter matches, for bulk actions (issue 33):
//! counted for the list's "all N matching", resolved when a bulk form is
//! sent, at most one past [`MAX_BULK`].

use std::cell::RefCell;
use std::sync::Arc;

use actix_web::web;
use chrono::Utc;

use crate::console::bulk::MAX_BULK;
use crate::console::domains::Domain;
use crate::console::list::{self, At, Query, Row, StateFilter};
use crate::console::list_index::ListIndex;
use crate::console::pages::bulk::Matching;
use crate::snapshot::LinkTable;

/// Runs `f` on the list's orders brought up to the snapshot, with the
/// time and, for "never scanned", each link's scans of all time; `None`,
/// `f` not run, when those are asked for and not available. Issue 33: a
/// link a lookup found scanned is marked so afterwards
/// ([`crate::console::key_order::KeyOrder::mark_scanned`]), so the next
/// "never scanned" walk passes over it unasked.
pub(super) fn with_list<R>(
    domain: &Domain,
    filter: StateFilter,
    f: impl FnOnce(&LinkTable, &ListIndex, &At<'_>) -> R,
) -> Option<R> {
    let table = Arc::clone(&domain.snapshot.load());
    let mut order = domain.order.lock().unwrap_or_else(|p| p.into_inner());
    let keys = order.follow(&table);
    let now_ms = Utc::now().timestamp_millis();
    if filter != StateFilter::NeverScanned {
        let at = At {
            now_ms,
            all_time_scans: &|_| 0,
        };
        return Some(f(&table, keys, &at));
    }
    let found: RefCell<Vec<String>> = RefCell::new(Vec::new());
    let mut f = Some(f);
    let mut out = None;
    domain.scans.with_all_time(&mut |scans| {
        let noting = |key: &str| {
            let n = scans(key);
            if n > 0 {
                found.borrow_mut().push(key.to_owned());
            }
            n
        };
        let at = At {
            now_ms,
            all_time_scans: &noting,
        };
        if let Some(f) = f.take() {
            out = Some(f(&table, keys, &at));
        }
    });
    order.mark_scanned(found.borrow().iter().map(String::as_str));
    out
}

/// The first `limit` links `query` matches; `None` when it filters by
/// scans and scan numbers are not available.
fn matching_rows(domain: &Domain, query: &Query, limit: usize) -> Option<Vec<Row>> {
    with_list(domain, query.state, |table, keys, at| {
        list::matching(keys, table, query, limit, at)
    })
}

/// How many links `query` matches, up to `limit`, with no rows made
/// ([`list::count`]); `None` as for [`matching_rows`].
fn counted(domain: &Domain, query: &Query, limit: usize) -> Option<usize> {
    with_list(domain, query.state, |_, keys, at| {
        list::count(keys, query, limit, at)
    })
}

/// The links `query` matches, up to one past [`MAX_BULK`], off the admin
/// listener's worker (a search in a time order reads every link's text).
pub(super) async fn rows(domain: &Arc<Domain>, query: &Query) -> Option<Vec<Row>> {
    let domain = Arc::clone(domain);
    let query = query.clone();
    web::block(move || matching_rows(&domain, &query, MAX_BULK + 1))
        .await
        .ok()
        .flatten()
}

/// How many links the list's query matches, for the bar's "all N". With
/// no search and no state filter every link matches, in any order, so the
/// table's size says it without a pass over it.
pub(super) async fn count(domain: &Arc<Domain>, query: &Query) -> Matching {
    if query.text.is_empty() && query.state == StateFilter::All {
        let all = domain.snapshot.load().len();
        return if all <= MAX_BULK {
            Matching::Exactly(all)
        } else {
            Matching::MoreThan(MAX_BULK)
        };
    }
    let counted = {
        let domain = Arc::clone(domain);
        let query = query.clone();
        web::block(move || counted(&domain, &query, MAX_BULK + 1))
            .await
            .ok()
            .flatten()
    };
    match counted {
        Some(n) if n <= MAX_BULK => Matching::Exactly(n),
        _ => Matching::MoreThan(MAX_BULK),
    }
}

//! The links list: search, a page of rows, the pager, and the create form.

use chrono::{DateTime, Utc};
use maud::{Markup, html};

use super::{BASE, Viewer, count, csrf_field, layout, q, state};
use crate::console::list::{By, Page, Query};
use crate::link::MAX_NOTES;

pub struct View<'a> {
    pub viewer: Viewer<'a>,
    pub total: usize,
    pub query: &'a Query,
    pub page: &'a Page,
    /// Scans in the last 30 days, per row; `None` when not available.
    pub scans: Option<Vec<u64>>,
    pub short_url: &'a dyn Fn(&str) -> String,
    pub now: DateTime<Utc>,
}

pub fn page(v: &View<'_>) -> Markup {
    let search = |cursor: &str, key: &str| {
        format!(
            "{BASE}/links?q={}&by={}&{cursor}={}",
            q(&v.query.text),
            by_name(v.query.by),
            q(key)
        )
    };
    layout(
        "Links",
        Some(&v.viewer),
        html! {
            h1 { "Links " small #total data-total=(v.total) { "(" (v.total) ")" } }
            form.search #search method="get" action={ (BASE) "/links" } {
                label for="q" { "Search" }
                input #q type="search" name="q" value=(v.query.text) placeholder="key or destination";
                select #by name="by" {
                    option value="key" selected[v.query.by == By::Key] { "key starts with" }
                    option value="url" selected[v.query.by == By::Url] { "destination contains" }
                }
                button type="submit" { "Search" }
            }
            @if v.page.rows.is_empty() {
                p #empty { "No links match." }
            } @else {
                table #links {
                    thead { tr { th { "QR" } th { "Key" } th { "Destination" } th { "State" } th { "Scans (30 days)" } } }
                    tbody {
                        @for (i, row) in v.page.rows.iter().enumerate() {
                            @let (state_text, state_value) = state(row.inactive, row.expires_ms, v.now);
                            @let scans = v.scans.as_ref().and_then(|s| s.get(i).copied());
                            tr data-key=(row.key) data-state=(state_value) {
                                td.thumb { img src={ "/qr/" (row.key) ".svg?scale=2&margin=1" } alt={ "QR code of " (row.key) } width="64" height="64" loading="lazy"; }
                                td.key { a href={ (BASE) "/link?key=" (q(&row.key)) } { (row.key) } br; small { ((v.short_url)(&row.key)) } }
                                td.url { (row.url) }
                                td.state { (state_text) }
                                td.scans data-scans=(count(scans)) { (count(scans)) }
                            }
                        }
                    }
                }
            }
            nav.pager #pager {
                @if let Some(k) = &v.page.prev { a #prev rel="prev" href=(search("before", k)) { "← Previous" } }
                @if let Some(k) = &v.page.next { a #next rel="next" href=(search("after", k)) { "Next →" } }
            }
            @if v.viewer.can_edit {
                (create_form(v.viewer.csrf))
            }
        },
    )
}

fn by_name(by: By) -> &'static str {
    match by {
        By::Key => "key",
        By::Url => "url",
    }
}

fn create_form(csrf: &str) -> Markup {
    html! {
        h2 { "New link" }
        form.card #create method="post" action={ (BASE) "/links" } {
            (csrf_field(csrf))
            label for="new-url" { "Destination" }
            input #new-url type="text" name="url" required placeholder="https://example.com/poster";
            label for="new-key" { "Key (empty for a random one)" }
            input #new-key type="text" name="key" placeholder="spring-poster";
            label for="new-expires" { "Expires (optional: 30d, 12h, 2w or 2026-12-31T23:59:59Z)" }
            input #new-expires type="text" name="expires";
            label for="new-notes" { "Notes (optional)" }
            textarea #new-notes name="notes" rows="2" maxlength=(MAX_NOTES) {}
            button type="submit" { "Create" }
        }
    }
}

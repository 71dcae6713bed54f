//! The links list: the create form, search and choices, a page of rows, and
//! the pager.

use chrono::{DateTime, Utc};
use maud::{Markup, html};

use super::thumb;
use super::{
    BASE, FormToken, Refused, Viewer, count, csrf_field, fault, field_problem, form_problem,
    layout, q, state, when,
};
use crate::console::list::{By, Page, Query, Sort, StateFilter};
use crate::console::per_page::PerPage;
use crate::link::MAX_NOTES;

pub struct View<'a> {
    pub viewer: Viewer<'a>,
    pub total: usize,
    pub query: &'a Query,
    /// The rows a page shows (issue 33), kept in the pager's links.
    pub per: PerPage,
    pub page: &'a Page,
    /// Scans in the last 30 days, per row; `None` when not available.
    pub scans: Option<Vec<u64>>,
    /// The "never scanned" filter was asked for while scan numbers are not
    /// available: the page says so instead of listing nothing.
    pub filter_unavailable: bool,
    pub short_url: &'a dyn Fn(&str) -> String,
    /// What a key's tag encodes (the short URL, its prefix in capitals when
    /// the server is told so), drawn as the row's thumbnail.
    pub tag_text: &'a dyn Fn(&str) -> String,
    pub now: DateTime<Utc>,
    pub create: CreateForm<'a>,
    /// The bulk actions' bar (issue 33).
    pub bulk: super::bulk::Bar<'a>,
    /// Issue 38: ClickHouse (`--scans-from`) did not answer.
    pub scans_away: bool,
}

/// The create form's values: empty, or what was typed into a form the
/// server refused, with why.
#[derive(Debug, Default, Clone, Copy)]
pub struct CreateForm<'a> {
    pub url: &'a str,
    pub key: &'a str,
    pub expires: &'a str,
    pub notes: &'a str,
    pub title: &'a str,
    pub refused: Option<Refused<'a>>,
}

/// The list's address for `query`'s text and choices and one cursor. The
/// sort, the state and the page size are left out at their defaults, so the
/// plain list's addresses stay as they were.
fn list_href(query: &Query, per: PerPage, cursor: &str, position: &str) -> String {
    let mut href = format!("{BASE}/links?q={}&by={}", q(&query.text), by_name(query.by));
    if query.sort != Sort::default() {
        href.push_str(&format!("&sort={}", query.sort.name()));
    }
    if query.state != StateFilter::default() {
        href.push_str(&format!("&state={}", query.state.name()));
    }
    if !per.is_default() {
        href.push_str(&format!("&per={}", per.rows()));
    }
    href.push_str(&format!("&{cursor}={}", q(position)));
    href
}

fn sort_label(sort: Sort) -> &'static str {
    match sort {
        Sort::Key => "key",
        Sort::Created => "newest first",
        Sort::CreatedOldest => "oldest first",
        Sort::Changed => "last changed first",
        Sort::ChangedOldest => "least recently changed first",
    }
}

fn state_label(state: StateFilter) -> &'static str {
    match state {
        StateFilter::All => "all links",
        StateFilter::Active => "active",
        StateFilter::Inactive => "inactive",
        StateFilter::Expiring => "expiring",
        StateFilter::Expired => "expired",
        StateFilter::NeverScanned => "never scanned",
    }
}

/// A time the shard keeps (seconds), as the pages write times.
fn stamp(secs: Option<u32>) -> String {
    secs.and_then(|s| DateTime::from_timestamp(s.into(), 0))
        .map_or_else(|| "not recorded".to_owned(), when)
}

pub fn page(v: &View<'_>) -> Markup {
    let query = v.query;
    layout(
        "Links",
        Some(&v.viewer),
        html! {
            h1 { "Links " small #total data-total=(v.total) { "(" (v.total) ")" } }
            (super::scans_away(v.scans_away))
            // Above the form, so a refusal shows to a reader too (CouchDB's).
            (form_problem(v.create.refused.as_ref(), v.viewer.can_edit))
            @if v.viewer.can_edit {
                (create_form(v.viewer.token(), &v.create))
            }
            form.search #search method="get" action={ (BASE) "/links" } {
                (super::domain_field(v.viewer.domain))
                label for="q" { "Search" }
                input #q type="search" name="q" value=(query.text) placeholder="a word of the title, notes, key or destination";
                // Issue 33: searching everything is the box's first choice
                // (and the one shown until a search is made); a key prefix
                // stays the plain list's order and its pager's `by`.
                @let any = query.by == By::Any || (query.by == By::Key && query.text.is_empty());
                select #by name="by" aria-label="Search in" {
                    option value="any" selected[any] { "title, notes, key or destination contains" }
                    option value="key" selected[!any && query.by == By::Key] { "key starts with" }
                    option value="url" selected[query.by == By::Url] { "destination contains" }
                }
                span.choice {
                    label for="sort" { "Sort" }
                    select #sort name="sort" {
                        @for s in Sort::ALL {
                            option value=(s.name()) selected[query.sort == s] { (sort_label(s)) }
                        }
                    }
                }
                span.choice {
                    label for="state" { "Show" }
                    select #state name="state" {
                        @for s in StateFilter::ALL {
                            option value=(s.name()) selected[query.state == s] { (state_label(s)) }
                        }
                    }
                }
                span.choice {
                    label for="per" { "Rows" }
                    select #per name="per" {
                        @for p in PerPage::all() {
                            option value=(p.rows()) selected[v.per == p] { (p.rows()) }
                        }
                    }
                }
                button type="submit" { "Search" }
            }
            @if v.filter_unavailable {
                p.muted #empty { "Scan counts of every link are not available (the scan index is still reading the log, or they come from ClickHouse), so links cannot be filtered by them." }
            } @else if v.page.rows.is_empty() {
                p #empty { "No links match." }
            } @else {
                form #bulk method="post" action=(super::bulk::ACTION) {
                (csrf_field(v.viewer.token()))
                table #links {
                    thead { tr { th.pick { "Select" } th { "QR" } th { "Key" } th { "Destination" } th { "State" } th { "Scans (30 days)" } } }
                    tbody {
                        @for (i, row) in v.page.rows.iter().enumerate() {
                            @let (state_text, state_value) = state(row.inactive, row.expires_ms, v.now);
                            @let scans = v.scans.as_ref().and_then(|s| s.get(i).copied());
                            tr data-key=(row.key) data-state=(state_value) data-created=[row.created] data-changed=[row.changed] {
                                (super::bulk::pick(&row.key, &v.bulk))
                                td.thumb { @if let Some(src) = thumb::data_uri(&(v.tag_text)(&row.key)) { img src=(src) alt={ "QR code of " (row.key) } width="64" height="64"; } }
                                td.key {
                                    // Issue 33: the title names the row; the key and short URL under it.
                                    @if let Some(title) = &row.title {
                                        a.title href={ (BASE) "/link?key=" (q(&row.key)) } { (title) }
                                        br; small.key-beside { (row.key) }
                                    } @else {
                                        a href={ (BASE) "/link?key=" (q(&row.key)) } { (row.key) }
                                    }
                                    br; small { ((v.short_url)(&row.key)) }
                                    @if let Some(notes) = &row.notes { br; small.notes-line { (notes) } }
                                }
                                td.url { (row.url) }
                                td.state {
                                    (state_text)
                                    @match query.sort {
                                        Sort::Created | Sort::CreatedOldest => { br; small.when { "created " (stamp(row.created)) } }
                                        Sort::Changed | Sort::ChangedOldest => { br; small.when { "changed " (stamp(row.changed)) } }
                                        Sort::Key => {}
                                    }
                                }
                                td.scans data-scans=(count(scans)) { (count(scans)) }
                            }
                        }
                    }
                }
                (super::bulk::bar(&v.viewer, query, by_name(query.by), &v.bulk))
                }
            }
            nav.pager #pager {
                @if let Some(k) = &v.page.prev { a #prev rel="prev" href=(list_href(query, v.per, "before", k)) { "← Previous" } }
                @if let Some(k) = &v.page.next { a #next rel="next" href=(list_href(query, v.per, "after", k)) { "Next →" } }
            }
        },
    )
}

fn by_name(by: By) -> &'static str {
    match by {
        By::Key => "key",
        By::Url => "url",
        By::Any => "any",
    }
}

/// The create form's title field (issue 33), first: the name is what a
/// person has in mind when making a tag.
fn title_field(f: &CreateForm<'_>) -> Markup {
    let r = f.refused.as_ref();
    let (invalid, class, described) = fault(r, "title", "new-title");
    html! {
        label for="new-title" { "Title (optional: the name lists show, e.g. Spring poster, bus stop)" }
        input #new-title type="text" name="title" value=(f.title) aria-invalid=[invalid] class=[class] aria-describedby=[described];
        (field_problem(r, "title", "new-title"))
    }
}

fn create_form(csrf: FormToken<'_>, f: &CreateForm<'_>) -> Markup {
    let r = f.refused.as_ref();
    let (url_invalid, url_class, url_described) = fault(r, "url", "new-url");
    let (key_invalid, key_class, key_described) = fault(r, "key", "new-key");
    let (exp_invalid, exp_class, exp_described) = fault(r, "expires", "new-expires");
    let (notes_invalid, notes_class, notes_described) = fault(r, "notes", "new-notes");
    html! {
        h2 { "New link" }
        form.card #create method="post" action={ (BASE) "/links" } {
            (csrf_field(csrf))
            (title_field(f))
            label for="new-url" { "Destination" }
            input #new-url type="text" name="url" required placeholder="https://example.com/poster" value=(f.url) aria-invalid=[url_invalid] class=[url_class] aria-describedby=[url_described];
            (field_problem(r, "url", "new-url"))
            label for="new-key" { "Key (empty for a random one)" }
            input #new-key type="text" name="key" placeholder="spring-poster" value=(f.key) aria-invalid=[key_invalid] class=[key_class] aria-describedby=[key_described];
            (field_problem(r, "key", "new-key"))
            label for="new-expires" { "Expires (optional: 30d, 12h, 2w, a date such as 2026-12-31, or 2026-12-31T23:59:59Z)" }
            input #new-expires type="text" name="expires" value=(f.expires) aria-invalid=[exp_invalid] class=[exp_class] aria-describedby=[exp_described];
            (field_problem(r, "expires", "new-expires"))
            label for="new-notes" { "Notes (optional)" }
            textarea #new-notes name="notes" rows="2" maxlength=(MAX_NOTES) aria-invalid=[notes_invalid] class=[notes_class] aria-describedby=[notes_described] { (f.notes) }
            (field_problem(r, "notes", "new-notes"))
            button type="submit" { "Create" }
        }
    }
}

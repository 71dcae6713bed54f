//! The console's HTML, one module per page, as pure functions of what the
//! page shows (no request, no store), so they can be read and tested alone.
//!
//! The markup is for people and for browser tests alike: every form has a
//! `name`d field per value and an `id`, rows and figures carry `data-`
//! attributes with the raw values, and nothing needs JavaScript.

use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, html};

pub mod audit;
pub mod breakdowns;
pub mod bulk;
pub mod chart;
pub mod dashboard;
pub mod destinations;
pub mod link;
pub mod link_rules;
pub mod links;
pub mod login;
pub mod print_form;
pub mod setup;
pub mod sheet;
pub mod stylesheet;
pub mod thumb;
// Issue 35 (i35-users).
pub mod account;
pub mod invite;
pub mod users;
// Issue 35 (i35-timeline).
pub mod link_history;

/// Where the console is mounted on the admin listener.
pub const BASE: &str = "/console";

/// The logged-in user, as the navigation shows them.
pub struct Viewer<'a> {
    pub name: &'a str,
    pub can_edit: bool,
    pub csrf: &'a str,
    /// Issue 35: what the forms shown are for (`can_edit` is
    /// `role.may_edit()`); an editor sees no delete form.
    pub role: crate::values::role::Role,
    /// Issue 36: the domain the page shows, on a service with several
    /// (every form carries it, so its write goes where the page was).
    pub domain: Option<&'a str>,
    /// Issue 36: the domain switcher, on a service with several.
    pub switcher: Option<&'a super::shown::Switcher>,
}

/// What every POST form carries besides its fields: the CSRF token and
/// (issue 36) the domain of the page it is on.
#[derive(Debug, Clone, Copy)]
pub struct FormToken<'a> {
    pub csrf: &'a str,
    pub domain: Option<&'a str>,
}

impl<'a> FormToken<'a> {
    /// A form of no domain (login, setup, an invitation).
    pub fn bare(csrf: &'a str) -> Self {
        Self { csrf, domain: None }
    }
}

impl<'a> Viewer<'a> {
    /// The hidden fields of this page's forms.
    pub fn token(&self) -> FormToken<'a> {
        FormToken {
            csrf: self.csrf,
            domain: self.domain,
        }
    }
}

impl Viewer<'_> {
    /// Whether delete forms are shown: an admin's alone (issue 35).
    pub fn can_delete(&self) -> bool {
        self.role.may_administer()
    }
}

/// Every page: head, navigation (when logged in), content.
pub fn layout(title: &str, viewer: Option<&Viewer<'_>>, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title {
                    (title)
                    @if let Some(s) = viewer.and_then(|v| v.switcher) { " · " (s.current) }
                    " · qrtag"
                }
                link rel="stylesheet" href=(stylesheet::href());
            }
            body {
                // The first Tab on every page: past the navigation to what
                // the page is for, so a keyboard does not walk the header
                // each time (shown only while it has the focus).
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href={ (BASE) "/links" } { "qrtag" }
                    @if let Some(v) = viewer {
                        // Named: the list's pager is a navigation landmark too.
                        nav aria-label="Console" {
                            a href={ (BASE) "/links" } { "Links" }
                            a href={ (BASE) "/sheet" } { "Print sheet" }
                            a href={ (BASE) "/dashboard" } { "Dashboard" }
                            @if v.role.may_administer() {
                                a #nav-users href={ (BASE) "/users" } { "Users" }
                                a href={ (BASE) "/audit" } { "Audit" }
                            }
                        }
                        @if let Some(s) = v.switcher { (switcher(s)) }
                        form.logout #logout method="post" action={ (BASE) "/logout" } {
                            (csrf_field(v.token()))
                            // Issue 35 (i35-users): the name leads to one's sessions.
                            a.user #account-link href={ (BASE) "/account" }
                                data-user=(v.name) data-can-edit=(v.can_edit) data-role=(v.role) {
                                (v.name) @if !v.can_edit { " (read-only)" }
                            }
                            button type="submit" { "Log out" }
                        }
                    }
                }
                main #main { (content) }
            }
        }
    }
}

/// Issue 36: the domain switcher, a GET form (no script: the CSP allows
/// none inline) showing the same page on the domain picked; the console
/// remembers the pick in its cookie. It names the domain the page shows.
fn switcher(s: &super::shown::Switcher) -> Markup {
    html! {
        form.switcher #domain-switcher method="get" action=(s.path) {
            @for (name, value) in &s.query {
                input type="hidden" name=(name) value=(value);
            }
            label for="domain-select" { "Domain" }
            select #domain-select name=(super::shown::FIELD) data-current=(s.current) {
                @for d in &s.domains {
                    option value=(d) selected[*d == s.current] { (d) }
                }
            }
            button type="submit" { "Show" }
        }
    }
}

/// The hidden synchronizer token every form carries, and the page's
/// domain (issue 36).
pub fn csrf_field(token: FormToken<'_>) -> Markup {
    html! {
        input type="hidden" name=(super::csrf::FIELD) value=(token.csrf);
        (domain_field(token.domain))
    }
}

/// Issue 36: a GET form's hidden `domain`, so what it asks for is of the
/// page's domain.
pub fn domain_field(domain: Option<&str>) -> Markup {
    html! {
        @if let Some(d) = domain {
            input type="hidden" name=(super::shown::FIELD) value=(d);
        }
    }
}

/// A page that says what went wrong, with a way back.
pub fn problem(viewer: Option<&Viewer<'_>>, message: &str, back: &str) -> Markup {
    layout(
        "Not done",
        viewer,
        html! {
            h1 { "Not done" }
            p.problem #problem role="alert" { (message) }
            p { a href=(back) { "Back" } }
        },
    )
}

/// A form the server refused, shown again with what was typed: the field at
/// fault (by its `name`) gets the message beside it, `aria-invalid` and the
/// `invalid` class; a fault of no one field (the store is away) is said
/// above the form.
#[derive(Debug, Clone, Copy)]
pub struct Refused<'a> {
    pub field: Option<&'a str>,
    pub message: &'a str,
}

impl Refused<'_> {
    /// Whether the field named `name` is the one at fault.
    pub fn blames(refused: Option<&Refused<'_>>, name: &str) -> bool {
        refused.is_some_and(|r| r.field == Some(name))
    }
}

/// The message beside field `name` (whose element has `id`), if it is at
/// fault; the field points at it with `aria-describedby="ID-problem"`.
pub fn field_problem(refused: Option<&Refused<'_>>, name: &str, id: &str) -> Markup {
    html! {
        @if let Some(r) = refused.filter(|r| r.field == Some(name)) {
            p.problem.field-problem id={ (id) "-problem" } role="alert" { (r.message) }
        }
    }
}

/// The message of a refusal no one field is at fault for, above the form
/// (`#problem`, as on the page that says what went wrong); every refusal
/// when the form is not shown (`form_shown` false: a reader's page), so a
/// message is never lost with its field.
pub fn form_problem(refused: Option<&Refused<'_>>, form_shown: bool) -> Markup {
    html! {
        @if let Some(r) = refused.filter(|r| r.field.is_none() || !form_shown) {
            p.problem #problem role="alert" { (r.message) }
        }
    }
}

/// The attributes of a field that may be at fault: `(aria-invalid, class,
/// aria-describedby)`, each `None` when it is not.
pub fn fault(
    refused: Option<&Refused<'_>>,
    name: &str,
    id: &str,
) -> (Option<&'static str>, Option<&'static str>, Option<String>) {
    if Refused::blames(refused, name) {
        (Some("true"), Some("invalid"), Some(format!("{id}-problem")))
    } else {
        (None, None, None)
    }
}

/// A link's state as a word or two, and as a machine-readable value.
pub fn state(
    inactive: bool,
    expires_ms: Option<i64>,
    now: DateTime<Utc>,
) -> (String, &'static str) {
    let expires = expires_ms.and_then(DateTime::<Utc>::from_timestamp_millis);
    match expires {
        _ if inactive => ("inactive".into(), "inactive"),
        Some(t) if t <= now => (format!("expired {}", when(t)), "expired"),
        Some(t) => (format!("active, expires {}", when(t)), "expires"),
        None => ("active".into(), "active"),
    }
}

pub fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// Issue 38: the one line a page says when `--scans-from`'s ClickHouse
/// did not answer, so its "—" reads as an outage, not as no scans.
pub fn scans_away(away: bool) -> Markup {
    html! {
        @if away {
            p.warning #scans-away role="status" {
                "Scan numbers are unavailable: ClickHouse (--scans-from) did not answer in time. Try again shortly."
            }
        }
    }
}

/// A scan count, or the dash that says it is not available.
pub fn count(n: Option<u64>) -> String {
    n.map_or_else(|| "—".to_owned(), |n| n.to_string())
}

/// A URL query component.
pub fn q(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_read_as_words() {
        let now = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).expect("time");
        let ms = now.timestamp_millis();
        assert_eq!(state(false, None, now).1, "active");
        assert_eq!(state(true, Some(ms + 1000), now).1, "inactive");
        assert_eq!(state(false, Some(ms), now).1, "expired");
        let (text, v) = state(false, Some(ms + 60_000), now);
        assert_eq!(v, "expires");
        assert!(text.starts_with("active, expires 2027-01-15"), "{text}");
        assert_eq!(count(None), "—");
        assert_eq!(q("a b/c&"), "a+b%2Fc%26");
    }

    #[test]
    fn text_is_escaped() {
        let html = problem(None, "<script>x</script>", "/console").into_string();
        assert!(!html.contains("<script>x"), "{html}");
        assert!(html.contains("&lt;script&gt;"));
    }
}

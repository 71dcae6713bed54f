//! Issue 35: the audit log's page, for admins: newest first, a page at a
//! time, each page's last entry the next page's bound (`?before=ID`), so a
//! page stays the same while new entries arrive above it.

use maud::{Markup, html};

use super::{BASE, Viewer, layout};
use crate::values::audit::AuditEntry;

/// `2026-11-28T14:45:27Z` as people read it, `2026-11-28 14:45:27` (the
/// page says the times are UTC); the machine form stays in `datetime`.
fn shown_time(at: &str) -> String {
    at.trim_end_matches('Z').replacen('T', " ", 1)
}

/// `entries` (newest first); `older`: the bound of the next page, when
/// there are more; `paged`: this is not the newest page.
pub fn page(
    viewer: &Viewer<'_>,
    entries: &[AuditEntry],
    older: Option<&str>,
    paged: bool,
) -> Markup {
    layout(
        "Audit log",
        Some(viewer),
        html! {
            h1 { "Audit log" }
            p { "What was done that is not a link edit: logins, API keys, bulk actions, users and settings. Newest first; times in UTC." }
            @if entries.is_empty() {
                p #audit-empty { "No entries." }
            } @else {
                table #audit {
                    thead { tr { th { "When" } th { "Who" } th { "Through" } th { "What" } } }
                    tbody {
                        @for e in entries {
                            tr data-id=(e.id) data-kind=(e.event.kind()) {
                                td { time datetime=(e.at) { (shown_time(&e.at)) } }
                                td { (e.actor.to_string()) }
                                td { (e.surface.as_str()) }
                                td { (e.event.describe()) }
                            }
                        }
                    }
                }
            }
            nav aria-label="Audit log pages" {
                @if paged {
                    a #audit-newest href={ (BASE) "/audit" } { "Newest" }
                    " "
                }
                @if let Some(id) = older {
                    a #audit-older href={ (BASE) "/audit?before=" (id) } { "Older entries" }
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::shown_time;

    #[test]
    fn times_read_as_date_and_time() {
        assert_eq!(shown_time("2026-11-28T14:45:27Z"), "2026-11-28 14:45:27");
    }
}

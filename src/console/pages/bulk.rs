//! Bulk actions on the links list (issue 33): the action bar under the
//! list's ticked rows, the page that asks before deleting, and the report
//! of what an action did to each link. The list page itself is one form
//! (`#bulk`), so ticking rows and pressing an action's button needs no
//! JavaScript.

use maud::{Markup, html};

use super::print_form::{DEFAULT_TEMPLATE, caption_text};
use super::{BASE, Refused, Viewer, csrf_field, fault, field_problem, layout, q};
use crate::console::bulk::{BAR, MAX_BULK};
use crate::console::list::{Query, Sort, StateFilter};
use crate::print::CaptionKind;
use crate::print::stock::STOCK;

/// Where the list's form sends a bulk action.
pub const ACTION: &str = "/console/links/bulk";

/// How many links the list's filter matches, counted up to one past
/// [`MAX_BULK`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matching {
    Exactly(usize),
    /// More than an action takes.
    MoreThan(usize),
}

/// The action bar as shown: the count for "all matching", and after a
/// refusal the rows that were ticked and what was typed, with why.
#[derive(Debug, Clone, Copy)]
pub struct Bar<'a> {
    pub matching: Matching,
    pub ticked: &'a [String],
    /// The refused form's fields, by name.
    pub typed: &'a [(String, String)],
    pub refused: Option<Refused<'a>>,
}

impl Default for Bar<'_> {
    fn default() -> Self {
        Bar {
            matching: Matching::Exactly(0),
            ticked: &[],
            typed: &[],
            refused: None,
        }
    }
}

impl Bar<'_> {
    fn typed(&self, name: &str) -> Option<&str> {
        self.typed
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether `key`'s box is ticked again.
    pub fn is_ticked(&self, key: &str) -> bool {
        self.ticked.iter().any(|k| k == key)
    }
}

/// A row's box: its key is the value the action reads.
pub fn pick(key: &str, bar: &Bar<'_>) -> Markup {
    html! {
        td.pick {
            input type="checkbox" name="key" value=(key) id={ "pick-" (key) } aria-label={ "Select " (key) } checked[bar.is_ticked(key)];
        }
    }
}

/// The action bar: which links (the ticked ones, or all that the list's
/// query matches, carried in hidden fields), each action's button and its
/// own fields. Writes are offered to editors only; a reader may print and
/// download.
pub fn bar(viewer: &Viewer<'_>, query: &Query, by: &str, b: &Bar<'_>) -> Markup {
    let r = b.refused.as_ref();
    let all_matching = b.typed("scope") == Some("matching");
    let attrs = |name: &str| fault(r, name, &format!("bulk-{name}"));
    let (url_inv, url_class, url_desc) = attrs("url");
    let (exp_inv, exp_class, exp_desc) = attrs("expires");
    let (tpl_inv, tpl_class, tpl_desc) = attrs("template");
    let (skip_inv, skip_class, skip_desc) = attrs("skip");
    let (cap_inv, cap_class, cap_desc) = attrs("caption");
    let template = b.typed("template").unwrap_or(DEFAULT_TEMPLATE);
    let caption = b.typed("caption").unwrap_or(CaptionKind::Url.name());
    html! {
        fieldset.card.bulk #bulk-actions {
            legend { "With the ticked links" }
            // Enter in a text field presses a form's first button: this
            // one is disabled, so Enter does nothing rather than print or
            // repoint by surprise.
            button type="submit" disabled hidden aria-hidden="true" tabindex="-1" { "Nothing" }
            input type="hidden" name="q" value=(query.text);
            input type="hidden" name="by" value=(by);
            @if query.sort != Sort::default() { input type="hidden" name="sort" value=(query.sort.name()); }
            @if query.state != StateFilter::default() { input type="hidden" name="state" value=(query.state.name()); }
            (field_problem(r, BAR, BAR))
            div.scope {
                label.choice for="scope-ticked" {
                    input #scope-ticked type="radio" name="scope" value="ticked" checked[!all_matching];
                    " The links ticked above"
                }
                @match b.matching {
                    Matching::Exactly(n) => label.choice for="scope-matching" {
                        input #scope-matching type="radio" name="scope" value="matching" checked[all_matching] data-matching=(n);
                        " All " (n) " links this list matches"
                    },
                    Matching::MoreThan(cap) => label.choice.muted for="scope-matching" {
                        input #scope-matching type="radio" name="scope" value="matching" disabled data-matching="more";
                        " All links this list matches: more than " (cap) " (one action takes at most " (MAX_BULK) "; narrow the search)"
                    },
                }
            }
            div.act #bulk-print {
                label for="bulk-template" { "Label stock" }
                select #bulk-template name="template" aria-invalid=[tpl_inv] class=[tpl_class] aria-describedby=[tpl_desc] {
                    @for s in STOCK {
                        option value=(s.name) selected[s.name.eq_ignore_ascii_case(template)] { (s.name) " — " (s.description) }
                    }
                }
                (field_problem(r, "template", "bulk-template"))
                label for="bulk-skip" { "Labels already used on the first sheet" }
                input #bulk-skip type="number" name="skip" min="0" value=(b.typed("skip").unwrap_or("0")) aria-invalid=[skip_inv] class=[skip_class] aria-describedby=[skip_desc];
                (field_problem(r, "skip", "bulk-skip"))
                label for="bulk-caption" { "Caption" }
                select #bulk-caption name="caption" aria-invalid=[cap_inv] class=[cap_class] aria-describedby=[cap_desc] {
                    @for k in CaptionKind::ALL {
                        option value=(k.name()) selected[k.name() == caption] { (caption_text(k)) }
                    }
                }
                (field_problem(r, "caption", "bulk-caption"))
                div.buttons {
                    button type="submit" name="action" value="print" { "Print as one PDF" }
                    button type="submit" name="action" value="csv" { "Download CSV" }
                }
            }
            @if viewer.can_edit {
                div.act.buttons #bulk-state {
                    button type="submit" name="action" value="enable" { "Enable" }
                    button type="submit" name="action" value="disable" { "Disable" }
                }
                div.act #bulk-repoint {
                    label for="bulk-url" { "New destination" }
                    input #bulk-url type="text" name="url" placeholder="https://example.com/after-the-event" value=[b.typed("url")] aria-invalid=[url_inv] class=[url_class] aria-describedby=[url_desc];
                    (field_problem(r, "url", "bulk-url"))
                    div.buttons { button type="submit" name="action" value="repoint" { "Repoint" } }
                }
                div.act #bulk-expiry {
                    label for="bulk-expires" { "Expires (30d, 12h, 2w, a date such as 2026-12-31)" }
                    input #bulk-expires type="text" name="expires" value=[b.typed("expires")] aria-invalid=[exp_inv] class=[exp_class] aria-describedby=[exp_desc];
                    (field_problem(r, "expires", "bulk-expires"))
                    div.buttons {
                        button type="submit" name="action" value="expire" { "Set expiry" }
                        button type="submit" name="action" value="never" { "Clear expiry" }
                    }
                }
                // Issue 35: an admin's alone.
                @if viewer.can_delete() {
                    div.act.buttons #bulk-delete {
                        button.danger type="submit" name="action" value="delete" { "Delete…" }
                    }
                }
            }
        }
    }
}

/// The page that asks before deleting: every link that would go, and the
/// one button that deletes exactly those.
pub fn confirm_delete(viewer: &Viewer<'_>, rows: &[(String, String)]) -> Markup {
    layout(
        "Delete links?",
        Some(viewer),
        html! {
            h1 { "Delete " (rows.len()) " links?" }
            p.warning { "Deleting is for good: a deleted link's tag answers “not found”, and its key is never used again." }
            form.card #confirm-delete method="post" action=(ACTION) {
                (csrf_field(viewer.token()))
                input type="hidden" name="scope" value="ticked";
                input type="hidden" name="confirm" value="yes";
                ul #to-delete {
                    @for (key, url) in rows {
                        li data-key=(key) {
                            input type="hidden" name="key" value=(key);
                            strong { (key) } " → " (url)
                        }
                    }
                }
                button.danger type="submit" name="action" value="delete" { "Delete these " (rows.len()) " links" }
            }
            p { a href={ (BASE) "/links" } { "Back to the list, deleting nothing" } }
        },
    )
}

/// What an action did to one link.
pub enum Outcome {
    Done,
    Unchanged,
    Refused(String),
}

/// The report of an action: a row per link, what happened to it.
pub fn report(viewer: &Viewer<'_>, action: &str, rows: &[(String, Outcome)]) -> Markup {
    let tally = |want: fn(&Outcome) -> bool| rows.iter().filter(|(_, o)| want(o)).count();
    let done = tally(|o| matches!(o, Outcome::Done));
    let unchanged = tally(|o| matches!(o, Outcome::Unchanged));
    let refused = tally(|o| matches!(o, Outcome::Refused(_)));
    layout(
        "Done",
        Some(viewer),
        html! {
            h1 { (action) ": " (rows.len()) " links" }
            p #bulk-summary data-done=(done) data-unchanged=(unchanged) data-refused=(refused) {
                (done) " changed, " (unchanged) " already so, " (refused) " refused."
            }
            table #bulk-report {
                thead { tr { th { "Link" } th { "What happened" } } }
                tbody {
                    @for (key, outcome) in rows {
                        @let (value, text) = match outcome {
                            Outcome::Done => ("done", "Done"),
                            Outcome::Unchanged => ("unchanged", "Unchanged: it was so already"),
                            Outcome::Refused(_) => ("refused", "Refused: "),
                        };
                        tr data-key=(key) data-outcome=(value) {
                            td { a href={ (BASE) "/link?key=" (q(key)) } { (key) } }
                            td class=(value) {
                                (text)
                                @if let Outcome::Refused(why) = outcome { (why) }
                            }
                        }
                    }
                }
            }
            p { a href={ (BASE) "/links" } { "Back to the list" } }
        },
    )
}

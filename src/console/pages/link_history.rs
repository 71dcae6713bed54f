//! The link page's history (issue 35): a timeline of the link's kept
//! entries, newest first, since "what did it point at before, and who
//! changed it" is asked right after something went wrong; and on each
//! earlier entry a Revert form for those who may edit (no JavaScript: a
//! POST with the page's revision, so a revert never lands on a state the
//! person did not see).

use chrono::DateTime;
use chrono_tz::Tz;
use maud::{Markup, html};
use serde_json::Value;

use super::{BASE, csrf_field};
use crate::link::history::{Entry, History, KEEP, Kind};

/// How many characters of a value the timeline shows; the whole value is
/// in the cell's `title`.
const SHOWN_CHARS: usize = 60;

/// What the store can say about the link's past.
pub enum Kept<'a> {
    Entries(&'a History),
    /// The store did not answer.
    Unreadable,
}

pub struct Section<'a> {
    pub key: &'a str,
    pub kept: Kept<'a>,
    /// Whether Revert forms are shown: editors and admins, a live link.
    pub can_revert: bool,
    pub csrf: super::FormToken<'a>,
    /// The revision the page was made from, which a revert is made at.
    pub rev: Option<&'a str>,
    pub zone: Tz,
    /// A revert the server refused, said above the timeline.
    pub problem: Option<&'a str>,
}

pub fn section(s: &Section<'_>) -> Markup {
    html! {
        section #history aria-labelledby="history-heading" {
            h2 #history-heading { "History" }
            @if let Some(problem) = s.problem {
                p.problem #history-problem role="alert" { (problem) }
            }
            @match s.kept {
                Kept::Unreadable => p.warning #history-none data-kept="unknown" {
                    "The history cannot be read now (see the server's log); try again."
                },
                Kept::Entries(h) if h.entries.is_empty() => p.muted #history-none data-kept="true" {
                    "No changes recorded yet."
                },
                Kept::Entries(h) => (timeline(s, h)),
            }
        }
    }
}

fn timeline(s: &Section<'_>, h: &History) -> Markup {
    let newest = h.entries.last().map(|e| e.n);
    html! {
        ol.timeline #timeline {
            @for e in h.entries.iter().rev() {
                li.entry id={ "entry-" (e.n) } data-n=(e.n) data-kind=(kind(e.kind)) data-reverted-to=[e.reverted_to] {
                    p.entry-head {
                        strong { "#" (e.n) } " "
                        time datetime=(e.at) { (local(&e.at, s.zone)) } " · "
                        span.who { (e.actor) }
                        @if let Some(via) = e.via {
                            " " span.via data-via=(via.as_str()) { "via " (via.words()) }
                        }
                        " · " (e.summary())
                    }
                    @if !e.changes.is_empty() {
                        ul.changes {
                            @for c in &e.changes {
                                li data-field=(c.field.as_str()) {
                                    code { (c.field.as_str()) } ": "
                                    (value(c.before.as_ref())) " → " (value(c.after.as_ref()))
                                }
                            }
                        }
                    }
                    @if let Some(rev) = s.rev.filter(|_| revertible(s, e, newest)) {
                        form.revert method="post" action={ (BASE) "/link/revert#history" } {
                            (csrf_field(s.csrf))
                            input type="hidden" name="key" value=(s.key);
                            input type="hidden" name="to" value=(e.n);
                            input type="hidden" name="rev" value=(rev);
                            button type="submit" { "Revert to #" (e.n) }
                        }
                    }
                }
            }
        }
        @if h.dropped() > 0 {
            p.muted #history-dropped data-dropped=(h.dropped()) {
                (h.dropped()) " older entries were dropped: a link keeps its last " (KEEP) " entries."
            }
        }
    }
}

/// Whether `e` gets a Revert form: an earlier entry (the newest is how the
/// link is now) that did not delete the link.
fn revertible(s: &Section<'_>, e: &Entry, newest: Option<u64>) -> bool {
    s.can_revert && Some(e.n) != newest && e.kind != Kind::Delete
}

fn kind(k: Kind) -> &'static str {
    match k {
        Kind::Create => "created",
        Kind::Edit => "edited",
        Kind::Delete => "deleted",
    }
}

/// An entry's time in the console's zone, or as stored when it is not one.
fn local(at: &str, zone: Tz) -> String {
    DateTime::parse_from_rfc3339(at).map_or_else(
        |_| at.to_owned(),
        |t| {
            t.with_timezone(&zone)
                .format("%Y-%m-%d %H:%M %Z")
                .to_string()
        },
    )
}

/// A field's value, shortened past [`SHOWN_CHARS`] with the whole in its
/// `title`; an absent one said as such.
fn value(v: Option<&Value>) -> Markup {
    let Some(v) = v else {
        return html! { span.absent { "(none)" } };
    };
    let full = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let short = shortened(&full);
    html! {
        @if short.len() < full.len() {
            span.value title=(full) { (short) }
        } @else {
            span.value { (full) }
        }
    }
}

fn shortened(s: &str) -> String {
    match s.char_indices().nth(SHOWN_CHARS) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_shortened_on_characters_and_kept_whole_in_the_title() {
        let long = "é".repeat(SHOWN_CHARS + 5);
        let html = value(Some(&Value::String(long.clone()))).into_string();
        assert!(html.contains(&format!(r#"title="{long}""#)), "{html}");
        assert!(
            html.contains(&format!("{}…", "é".repeat(SHOWN_CHARS))),
            "{html}"
        );
        let short = value(Some(&Value::Bool(true))).into_string();
        assert!(
            !short.contains("title") && short.contains("true"),
            "{short}"
        );
        assert!(value(None).into_string().contains("(none)"));
    }

    #[test]
    fn times_are_in_the_consoles_zone() {
        assert_eq!(
            local("2026-06-01T12:00:00Z", chrono_tz::Europe::Dublin),
            "2026-06-01 13:00 IST"
        );
        assert_eq!(local("yesterday", Tz::UTC), "yesterday");
    }
}

//! One link: first what it is and whether it is scanned (the question
//! people open it with, issue 33), then its edits, its tag at print size
//! with downloads, printing, and its scans in detail, each a section the
//! page's own links jump to (no JavaScript).

use chrono::{DateTime, NaiveDate, Utc};
use maud::{Markup, html};

use super::chart::Period;
use super::print_form;
use super::{
    BASE, Refused, Viewer, csrf_field, fault, field_problem, form_problem, layout, q, state,
};
use crate::console::scans::{KeyScans, Shares};
use crate::link::MAX_NOTES;
use crate::print::tag_image::{ImageFormat, ImageSpec};
use crate::qr::EcLevel;
use crate::scan_index::breakdowns::OTHER;
use crate::stats::dimensions::Dimension;

pub struct View<'a> {
    pub viewer: Viewer<'a>,
    pub key: &'a str,
    pub short_url: String,
    pub url: &'a str,
    pub inactive: bool,
    pub expires: Option<DateTime<Utc>>,
    pub notes: Option<&'a str>,
    /// The link's title (issue 33): the page's heading, the key beside it.
    pub title: Option<&'a str>,
    /// The store did not answer: the page shows the snapshot's copy, which
    /// has no notes, so the notes cannot be edited from it.
    pub store_away: bool,
    /// Why a scan of this key answers 404 although the link is live (a loop
    /// of internal redirects), as [`crate::links::chain::BrokenChain::warning`] says it.
    pub chain_warning: Option<&'a str>,
    /// CouchDB stored a recent write with fewer copies than n (HTTP 202),
    /// as [`crate::store::ClusterStats::recent_fewer_copies`] says it.
    pub copies_warning: Option<&'a str>,
    pub spec: ImageSpec,
    /// What the tag encodes, drawn small on the first screen
    /// ([`super::thumb`]: in the page, so it shows whatever the renders do).
    pub tag_text: String,
    /// When the link was made and last written (`created_at`,
    /// `changed_at`; `None`: not recorded, or the store did not answer).
    pub created: Option<DateTime<Utc>>,
    pub changed: Option<DateTime<Utc>>,
    /// By which surface each was written (`created_via`, `changed_via`;
    /// `None` for a link from before qrtag recorded it: then nothing is said).
    pub created_via: Option<crate::link::Via>,
    pub changed_via: Option<crate::link::Via>,
    /// Scans in the last 7, 30 and 365 days ([`recent`]).
    pub recent: Option<[u64; 3]>,
    /// The scan chart's period (the picker's `days`).
    pub period: Period,
    pub scans: Option<KeyScans>,
    /// The breakdowns of the key's scans, of all time.
    pub shares: Option<Shares>,
    pub now: DateTime<Utc>,
    /// A deleted link's tombstone, and when it was deleted (`None` inside
    /// for a hand-made `deleted_at` that is not a time).
    pub deleted: Option<Option<DateTime<Utc>>>,
    /// An edit the server refused: why, and what was typed into its field
    /// (`url`, `expires` or `notes`), shown instead of the stored value.
    pub refused: Option<(Refused<'a>, &'a str)>,
    /// A PDF form the server refused.
    pub pdf: Option<&'a super::print_form::Refusal<'a>>,
    /// Where scans go while the link is disabled or expired (issue 33).
    pub fallback: Option<&'a str>,
    /// Issue 34: the rules, their editor and the tester.
    pub rules: super::link_rules::Section<'a>,
    // Issue 34, scans per destination: the rows of the link's
    // "Scans per destination" table (`None`: not counted yet).
    pub destinations: Option<Vec<super::destinations::Row>>,
    /// Issue 35 (i35-timeline): the history timeline and its Revert forms.
    pub history: super::link_history::Section<'a>,
    /// Issue 37: the clicks another shortener counted before the move.
    pub imported_clicks: Option<u64>,
    /// Issue 38: ClickHouse (`--scans-from`) did not answer.
    pub scans_away: bool,
}

/// The QR parameters as a query string (without the format).
fn params(spec: &ImageSpec) -> String {
    let mut p = format!(
        "ec={}&scale={}&margin={}",
        spec.ec,
        spec.options.scale(),
        spec.options.margin()
    );
    if let Some(palette) = spec.palette {
        // `#` as `%23`: the colours' CSS hex.
        let hex = |c: crate::qr::brand::Colour| c.to_string().replace('#', "%23");
        p.push_str(&format!(
            "&dark={}&light={}",
            hex(palette.dark()),
            hex(palette.light())
        ));
    }
    if let Some(percent) = spec.logo {
        p.push_str(&format!("&logo=true&logo-size={percent}"));
    }
    p
}

pub fn page(v: &View<'_>) -> Markup {
    if let Some(on) = v.deleted {
        return deleted_page(v, on);
    }
    let (state_text, state_value) =
        state(v.inactive, v.expires.map(|t| t.timestamp_millis()), v.now);
    let key_q = q(v.key);
    let spec = &v.spec;
    let pdf_action = format!("{BASE}/link/pdf");
    // Issue 36: the image, downloads and GET forms of the page's domain.
    let on_domain = v
        .viewer
        .domain
        .map(|d| format!("&{}={}", crate::console::shown::FIELD, q(d)))
        .unwrap_or_default();
    let download = |format: ImageFormat| {
        format!(
            "{BASE}/link/download?key={key_q}&format={format}&{}{on_domain}",
            params(spec)
        )
    };
    let hidden: Vec<(&str, &str)> = std::iter::once(("key", v.key))
        .chain(v.viewer.domain.map(|d| (crate::console::shown::FIELD, d)))
        .collect();
    layout(
        v.key,
        Some(&v.viewer),
        html! {
            (heading(v))
            p.short { a #short-url href=(v.short_url) { (v.short_url) } }
            @if let Some(warning) = v.chain_warning {
                p.warning #chain-warning role="alert" { strong { "Warning: " } (warning) }
            }
            @if let Some(warning) = v.copies_warning {
                p.warning #fewer-copies role="status" { strong { "Warning: " } (warning) }
            }
            @if v.store_away {
                p.warning #store-away role="status" {
                    "The link store did not give this link (see the server's log): this is the copy scans are served from, without its notes. Changes may fail until the store answers."
                }
            }
            (form_problem(v.refused.as_ref().map(|(r, _)| r), v.viewer.can_edit))
            // Issue 34: what a scan gets now and what changes next.
            (super::link_rules::now_line(&v.rules))
            // The first screen: what the link is, and whether it is scanned.
            div.glance #glance {
                section.about #about aria-label="The link" {
                    @if let Some(src) = super::thumb::data_uri(&v.tag_text) {
                        img.glance-tag #glance-tag src=(src) alt={ "QR code of " (v.short_url) } width="120" height="120";
                    }
                    dl.facts {
                        dt { "Destination" } dd #destination data-url=(v.url) { (v.url) }
                        dt { "State" } dd #state data-state=(state_value) { (state_text) }
                        @if let Some(notes) = v.notes { dt { "Notes" } dd.notes #notes { (notes) } }
                        (fallback_fact(v))
                        dt { "Created" } dd #created data-at=[v.created.map(|t| t.to_rfc3339())] { (stamp(v.created)) (via(v.created_via)) }
                        dt { "Last changed" } dd #changed data-at=[v.changed.map(|t| t.to_rfc3339())] { (stamp(v.changed)) (via(v.changed_via)) }
                    }
                }
                section.scans-summary #scans-summary aria-labelledby="scans-heading" {
                    h2 #scans-heading { "Scans" }
                    (scans(v))
                    (imported_clicks(v))
                }
            }
            nav.sections #sections aria-label="On this page" {
                @if v.viewer.can_edit { a href="#edit" { "Edit" } }
                a href="#rules" { "Rules" }
                a href="#history" { "History" }
                a href="#qr" { "QR code" }
                a href="#print" { "Print" }
                a href="#details" { "Scans in detail" }
            }
            @if v.viewer.can_edit {
                section #edit aria-labelledby="edit-heading" {
                    h2 #edit-heading { "Edit" }
                    (edit_forms(v))
                    (fallback_form(v))
                }
            }
            // Issue 34: the rules, after the scans summary and the edits
            // (a keyboard reaches the destination's field first).
            (super::link_rules::section(&v.rules))
            // Issue 35 (i35-timeline): who changed what, and one click
            // back, right below the edits a wrong one came from.
            (super::link_history::section(&v.history))
            section #qr aria-labelledby="qr-heading" {
            h2 #qr-heading { "QR code" }
            form.card.qr-options #qr-options method="get" action={ (BASE) "/link" } {
                input type="hidden" name="key" value=(v.key);
                (super::domain_field(v.viewer.domain))
                label for="format" { "Format" }
                select #format name="format" {
                    @for f in [ImageFormat::Png, ImageFormat::Svg] {
                        option value=(f) selected[spec.format == f] { (f.extension().to_uppercase()) }
                    }
                }
                label for="ec" { "Error correction" }
                select #ec name="ec" {
                    @for ec in EcLevel::ALL {
                        option value=(ec) selected[spec.ec == ec] { (ec) }
                    }
                }
                label for="scale" { "Pixels per module (2–64)" }
                input #scale type="number" name="scale" min="2" max="64" value=(spec.options.scale());
                label for="margin" { "Quiet zone in modules (0–16)" }
                input #margin type="number" name="margin" min="0" max="16" value=(spec.options.margin());
                label for="dark" { "Code colour (#1e3a8a; empty: black)" }
                input #dark type="text" name="dark" value=[spec.palette.map(|p| p.dark().to_string())] placeholder="#000";
                label for="light" { "Background colour (empty: white)" }
                input #light type="text" name="light" value=[spec.palette.map(|p| p.light().to_string())] placeholder="#fff";
                label.choice for="logo" {
                    input #logo type="checkbox" name="logo" value="true" checked[spec.logo.is_some()];
                    " The server's logo in the centre"
                }
                button type="submit" { "Show" }
            }
            figure.tag {
                img #tag src={ "/qr/" (v.key) "." (spec.format) "?" (params(spec)) (on_domain) } alt={ "QR code of " (v.short_url) };
            }
            p.downloads {
                a.button #download-png href=(download(ImageFormat::Png)) download { "Download PNG" }
                " "
                a.button #download-svg href=(download(ImageFormat::Svg)) download { "Download SVG" }
            }
            }
            section #print aria-labelledby="print-heading" {
            h2 #print-heading { "Print (PDF)" }
            p { "A label on a sheet of labels, at the position of the next free one, or a poster: the file " code { "qrtag print" } " writes." }
            h3 { "A label on a sheet" }
            (print_form::form(print_form::Kind::Label, &pdf_action, &hidden, v.pdf))
            h3 { "A poster" }
            (print_form::form(print_form::Kind::Poster, &pdf_action, &hidden, v.pdf))
            }
            section #details aria-labelledby="details-heading" {
            h2 #details-heading { "Scans in detail" }
            @if let Some(s) = &v.scans {
                dl #requests.facts {
                    dt { "HEAD requests" } dd { (s.head) }
                    dt { "Bot requests" } dd { (s.bots) }
                    dt { "404s" } dd { (s.not_found) }
                }
            }
            h3 { "Where and when, of all time" }
            (super::breakdowns::section(
                v.shares.as_ref(),
                "of all time (the period above does not apply)",
                &format!("{BASE}/link/breakdowns.csv?key={key_q}"),
            ))
            // Issue 34: scans per destination, and the rule each belongs to.
            (super::destinations::section(v.destinations.as_deref()))
            }
        },
    )
}

/// A time as the pages write it, or that it was not recorded (a link made
/// before qrtag stamped its documents, or written by hand).
fn stamp(t: Option<DateTime<Utc>>) -> String {
    t.map_or_else(|| "not recorded".to_owned(), super::when)
}

/// " via the console" after a time, in words a person reads; nothing when
/// the document does not say.
fn via(v: Option<crate::link::Via>) -> Markup {
    html! {
        @if let Some(v) = v {
            " " span.via data-via=(v.as_str()) { "via " (v.words()) }
        }
    }
}

/// The heading: the title when the link has one, with its key beside it
/// (people know a tag by its name; the key is what the tag encodes), or
/// the key alone.
fn heading(v: &View<'_>) -> Markup {
    html! {
        h1 #key data-key=(v.key) data-title=[v.title] {
            @if let Some(title) = v.title {
                span #title { (title) } " " small.key-beside { (v.key) }
            } @else {
                (v.key)
            }
        }
    }
}

/// The title's edit form (issue 33).
fn title_form(v: &View<'_>) -> Markup {
    field_form(
        v,
        &FieldForm {
            form: "edit-title",
            action: "/link/title",
            name: "title",
            id: "title-text",
            label: "Title (one line, the name lists show; empty to remove it)",
            // No `maxlength`: a browser counts UTF-16 units, so 200 emoji
            // (200 characters, the limit) would be cut at 100; the server
            // says it beside the field instead.
            control: Control::Input {
                kind: "text",
                required: false,
            },
            submit: "Save title",
        },
        v.title,
    )
}

/// A form that edits one field of the link: the field with its label and
/// current value, the server's refusal beside it, and a submit. The
/// destination, expiry, notes, title and fallback forms are all this
/// shape, so a change to how a refused field is shown (what was typed,
/// `aria-invalid`, the message it is described by) is made once.
struct FieldForm {
    /// The form's `id`.
    form: &'static str,
    /// Where it posts, below [`BASE`].
    action: &'static str,
    /// The field's `name`, as a refusal names it.
    name: &'static str,
    /// The field's `id`, which its label and its problem hang on.
    id: &'static str,
    label: &'static str,
    control: Control,
    /// The button's words.
    submit: &'static str,
}

/// How a [`FieldForm`]'s value is typed.
enum Control {
    /// One line; `required` where an empty value is no edit at all.
    Input { kind: &'static str, required: bool },
    /// Several lines, at most `max` characters.
    Textarea { rows: u32, max: usize },
}

/// `f` for the link in `v`, holding `stored`, or what was typed when the
/// server refused this very field (so nothing typed is lost).
fn field_form(v: &View<'_>, f: &FieldForm, stored: Option<&str>) -> Markup {
    let r = v.refused.as_ref().map(|(r, _)| r);
    let shown = match v.refused {
        Some((r, typed)) if r.field == Some(f.name) => Some(typed),
        _ => stored,
    };
    let (invalid, class, described) = fault(r, f.name, f.id);
    html! {
        form.card id=(f.form) method="post" action={ (BASE) (f.action) } {
            (csrf_field(v.viewer.token()))
            input type="hidden" name="key" value=(v.key);
            label for=(f.id) { (f.label) }
            @match f.control {
                Control::Input { kind, required } => {
                    input id=(f.id) type=(kind) name=(f.name) value=[shown] required[required] aria-invalid=[invalid] class=[class] aria-describedby=[described];
                }
                Control::Textarea { rows, max } => {
                    textarea id=(f.id) name=(f.name) rows=(rows) maxlength=(max) aria-invalid=[invalid] class=[class] aria-describedby=[described] { (shown.unwrap_or_default()) }
                }
            }
            (field_problem(r, f.name, f.id))
            button type="submit" { (f.submit) }
        }
    }
}

/// A tombstone's page: what the key was and when it was deleted, with no
/// edits and no tag (the key is never used again).
fn deleted_page(v: &View<'_>, on: Option<DateTime<Utc>>) -> Markup {
    let when = on.map(super::when);
    layout(
        v.key,
        Some(&v.viewer),
        html! {
            (heading(v))
            p.warning #deleted role="status" data-deleted-at=[when.as_deref()] {
                "This link was deleted"
                @if let Some(when) = &when { " on " (when) }
                ": scans of " (v.short_url) " answer 404, and the key is kept so that it is never used again."
            }
            dl.facts {
                dt { "Destination before deletion" } dd #destination data-url=(v.url) { (v.url) }
                dt { "State" } dd #state data-state="deleted" { "deleted" }
                @if let Some(notes) = v.notes { dt { "Notes" } dd.notes #notes { (notes) } }
            }
            // Issue 35 (i35-timeline): what the link was, and who deleted it.
            (super::link_history::section(&v.history))
        },
    )
}

// --- The fallback (issue 33) ---

/// Where a dead link's scans go, beside its state: whether they go there
/// now is what a person wants to know.
fn fallback_fact(v: &View<'_>) -> Markup {
    let Some(fallback) = v.fallback else {
        return html! {};
    };
    let live = !v.inactive && v.expires.is_none_or(|e| v.now < e);
    html! {
        dt { "Fallback" }
        dd #fallback data-url=(fallback) {
            (fallback)
            @if live { " (used once the link is disabled or expired)" }
            @else { " (scans go here now)" }
        }
    }
}

/// The fallback's own form, beside the others.
fn fallback_form(v: &View<'_>) -> Markup {
    field_form(
        v,
        &FieldForm {
            form: "edit-fallback",
            action: "/link/fallback",
            name: "fallback_url",
            id: "fallback-url",
            label: "Fallback: where scans go while the link is disabled or expired, instead of a 404 (an https:// address; empty to remove it)",
            control: Control::Input {
                kind: "url",
                required: false,
            },
            submit: "Save fallback",
        },
        v.fallback,
    )
}

fn edit_forms(v: &View<'_>) -> Markup {
    let csrf = v.viewer.token();
    let expires = v
        .expires
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    let destination = FieldForm {
        form: "edit-destination",
        action: "/link/destination",
        name: "url",
        id: "url",
        label: "New destination",
        control: Control::Input {
            kind: "text",
            required: true,
        },
        submit: "Save destination",
    };
    let expiry = FieldForm {
        form: "edit-expiry",
        action: "/link/expiry",
        name: "expires",
        id: "expires",
        label: "Expires (30d, 12h, 2w, a date such as 2026-12-31, 2026-12-31T23:59:59Z, or never)",
        control: Control::Input {
            kind: "text",
            required: false,
        },
        submit: "Set expiry",
    };
    let notes = FieldForm {
        form: "edit-notes",
        action: "/link/notes",
        name: "notes",
        id: "notes-text",
        label: "Notes (empty to remove them)",
        control: Control::Textarea {
            rows: 3,
            max: MAX_NOTES,
        },
        submit: "Save notes",
    };
    html! {
        (field_form(v, &destination, Some(v.url)))
        form.card #edit-state method="post" action={ (BASE) "/link/state" } {
            (csrf_field(csrf))
            input type="hidden" name="key" value=(v.key);
            @if v.inactive {
                input type="hidden" name="active" value="true";
                button type="submit" { "Enable" }
            } @else {
                input type="hidden" name="active" value="false";
                button type="submit" { "Disable" }
            }
        }
        (field_form(v, &expiry, expires.as_deref()))
        @if !v.store_away {
            (field_form(v, &notes, v.notes))
        }
        // Hidden with the store away, as the notes are: the page then shows
        // the snapshot's copy, not the stored title to edit.
        @if !v.store_away {
            (title_form(v))
        }
        @if v.expires.is_some() {
            form.card #clear-expiry method="post" action={ (BASE) "/link/expiry" } {
                (csrf_field(csrf))
                input type="hidden" name="key" value=(v.key);
                input type="hidden" name="expires" value="never";
                button type="submit" { "Never expire" }
            }
        }
        // Deleting is for good, so it takes a second step: the box must be
        // ticked (the server checks it; `required` only saves a round trip).
        // Issue 35: an admin's alone.
        @if v.viewer.can_delete() {
        form.card #delete-link method="post" action={ (BASE) "/link/delete" } {
            (csrf_field(csrf))
            input type="hidden" name="key" value=(v.key);
            label for="confirm-delete" {
                input #confirm-delete type="checkbox" name="confirm" value="yes" required;
                " Delete " (v.key) " for good: scans answer 404 and the key is never used again"
            }
            button.danger type="submit" { "Delete link" }
        }
        }
    }
}

/// The first screen's scans: the last 7, 30 and 365 days and all time,
/// the chart of the period picked, and where most scans come from.
/// Issue 37: the old shortener's total, said apart from qrtag's scans,
/// which it is no part of.
fn imported_clicks(v: &View<'_>) -> Markup {
    html! {
        @if let Some(n) = v.imported_clicks {
            p #imported-clicks data-imported=(n) {
                "Before the move: " (n) " clicks counted by the old shortener (not in the scans above)."
            }
        }
    }
}

fn scans(v: &View<'_>) -> Markup {
    let Some(s) = &v.scans else {
        return html! {
            (super::scans_away(v.scans_away))
            p #scans.muted data-available="false" { "Scan counts not available." }
        };
    };
    let recent = v.recent.unwrap_or_default();
    html! {
        dl #scans.counts data-available="true" {
            @for (days, n) in [7, 30, 365].into_iter().zip(recent) {
                div { dt { "Last " (days) " days" } dd data-last=(days) { (n) } }
            }
            div { dt { "All time" } dd data-scans=(s.scans) { (s.scans) } }
            div { dt { "Unique scanners" } dd data-unique=(s.unique_scanners) { (s.unique_scanners) } }
            // Issue 33: scans a dead link sent to its fallback, apart.
            @if v.fallback.is_some() || s.fallback > 0 {
                div { dt { "Sent to the fallback" } dd data-fallback=(s.fallback) { (s.fallback) } }
            }
        }
        (super::chart::picker(v.period, |days| format!("{BASE}/link?key={}&days={days}", q(v.key))))
        (super::chart::chart("daily", "Scans", v.period, &s.daily))
        dl #top.facts {
            @for (dim, what) in [(Dimension::Device, "Top device"), (Dimension::Country, "Top country"), (Dimension::Referrer, "Top source")] {
                dt { (what) }
                (top_cell(v.shares.as_ref(), dim))
            }
        }
    }
}

/// A breakdown's busiest value, its share, or why there is none.
fn top_cell(shares: Option<&Shares>, dim: Dimension) -> Markup {
    match shares.map(|s| (s.get(dim).is_some(), top(s, dim))) {
        Some((_, Some((value, share)))) => html! {
            dd data-top=(dim.name()) data-value=(value) { (shown_value(dim, value)) " " span.muted { "(" (share) "%)" } }
        },
        Some((false, None)) if dim == Dimension::Country => html! {
            dd.muted data-top=(dim.name()) { "not kept (" code { "serve --geoip-db" } ")" }
        },
        _ => html! { dd.muted data-top=(dim.name()) { "—" } },
    }
}

/// The busiest value of a breakdown (not the index's own "other" bucket)
/// and its share of the breakdown's scans in whole percent; `None` with no
/// scans or no such breakdown kept.
pub fn top(shares: &Shares, dim: Dimension) -> Option<(&str, u64)> {
    let rows = &shares.get(dim)?.rows;
    let all: u64 = rows.iter().map(|(_, n)| n).sum();
    let (value, n) = rows
        .iter()
        .filter(|(v, n)| v != OTHER && *n > 0)
        .max_by_key(|(_, n)| *n)?;
    Some((value.as_str(), (n * 100 + all / 2) / all))
}

/// A breakdown's value in words where the index's is a code.
fn shown_value(dim: Dimension, value: &str) -> &str {
    match (dim, value) {
        (Dimension::Referrer, crate::stats::dimensions::referrer::NONE) => {
            "none (scanned or typed)"
        }
        _ => value,
    }
}

/// Scans in the last 7, 30 and 365 days (today included) from a key's
/// scans per day.
pub fn recent(daily: &[(NaiveDate, u64)], today: NaiveDate) -> [u64; 3] {
    [7u64, 30, 365].map(|days| {
        let first = today - chrono::Days::new(days - 1);
        daily
            .iter()
            .filter(|(d, _)| *d >= first && *d <= today)
            .map(|(_, n)| n)
            .sum()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_scans_count_whole_days_back_from_today() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 28).expect("date");
        let back = |d: u64| today - chrono::Days::new(d);
        let daily = [
            (back(400), 1000),
            (back(364), 100),
            (back(29), 10),
            (back(6), 1),
            (today, 2),
        ];
        assert_eq!(recent(&daily, today), [3, 13, 113]);
        assert_eq!(recent(&[], today), [0, 0, 0]);
    }

    #[test]
    fn the_top_value_is_never_the_other_bucket() {
        let shares = Shares {
            dimensions: vec![crate::console::scans::Share {
                dimension: Dimension::Device,
                rows: vec![
                    (OTHER.into(), 50),
                    ("phone".into(), 30),
                    ("desktop".into(), 20),
                ],
            }],
            heat: Default::default(),
            time_zone: chrono_tz::Tz::UTC,
        };
        assert_eq!(top(&shares, Dimension::Device), Some(("phone", 30)));
        assert_eq!(top(&shares, Dimension::Country), None);
    }
}

//! The link document: `{"url": ..., "inactive": false, "expires": ...}`.
//!
//! Documents are edited by people (in Fauxton, with curl), so the service reads
//! them defensively: [`Link::from_document`] is the one place that decides
//! whether a stored document is a usable link, and the raw JSON object is kept
//! beside it so that rewriting a document never drops fields qrtag does not own.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::values::destination::{Destination, InvalidDestination};
use crate::values::timestamp::time_text;

pub mod fallback_loop;
pub mod key_suggest;
// Issue 37: the imported total of clicks.
pub mod imported;
pub mod natural_order;
// Issue 34: smart tags, the rules that choose a scan's destination.
pub mod rules;
mod stored;
pub use stored::{PlainLink, StoredFields};
// Issue 33: the link's title.
mod title;
pub use title::{BadTitle, MAX_TITLE, Title, check_title, set_title, title};
mod via;
pub use via::{VIA_FIELDS, Via, changed_via, check_via, created_via};
// Issue 35: who wrote a link, and its history.
mod author;
pub use author::{ACTOR_FIELD, Author, REVERTED_FIELD, changed_actor, reverted_to, stamp_actor};
pub mod history;

/// A link document's fields as stored (CouchDB's `_id` and `_rev` excluded).
pub type Document = Map<String, Value>;

/// The parsed, valid view of a link document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub url: Destination,
    pub inactive: bool,
    pub expires: Option<DateTime<Utc>>,
    /// Where scans go while the link is inactive or expired (issue 33):
    /// always absolute ([`Destination::parse_absolute`]).
    pub fallback: Option<Destination>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidLink {
    #[error("no \"url\" string")]
    MissingUrl,
    #[error("bad \"url\": {0}")]
    BadUrl(#[from] InvalidDestination),
    #[error("\"inactive\" must be true or false")]
    BadInactive,
    #[error("\"expires\" must be an RFC 3339 time, e.g. 2026-12-31T23:59:59Z")]
    BadExpires,
    #[error("\"{0}\" must be an RFC 3339 time, e.g. 2026-12-31T23:59:59Z")]
    BadTime(&'static str),
    #[error("\"{0}\" must be a string")]
    NotText(&'static str),
    #[error("\"{0}\" must be one of cli, edit, console, api, didcomm, import")]
    BadVia(&'static str),
    #[error("bad \"fallback_url\": {0}")]
    BadFallback(InvalidDestination),
    #[error("\"{field}\" may be at most {limit} {unit}")]
    TooLong {
        field: &'static str,
        limit: usize,
        unit: &'static str,
    },
}

impl Link {
    pub fn from_document(doc: &Document) -> Result<Self, InvalidLink> {
        let url = match doc.get("url") {
            Some(Value::String(s)) => Destination::parse(s)?,
            _ => return Err(InvalidLink::MissingUrl),
        };
        let inactive = match doc.get("inactive") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(InvalidLink::BadInactive),
        };
        let expires = match doc.get("expires") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(parse_expires(s)?),
            Some(_) => return Err(InvalidLink::BadExpires),
        };
        let fallback = fallback_url(doc)?;
        Ok(Self::from_parts(url, inactive, is_tombstone(doc), expires).with_fallback(fallback))
    }

    /// The link with its fallback, which [`Link::from_parts`] leaves out.
    fn with_fallback(self, fallback: Option<Destination>) -> Self {
        Self { fallback, ..self }
    }

    /// The link from its checked fields (shared with [`StoredFields`], which
    /// reads them from the JSON text).
    fn from_parts(
        url: Destination,
        inactive: bool,
        tombstone: bool,
        expires: Option<DateTime<Utc>>,
    ) -> Self {
        Self {
            url,
            inactive: Self::is_inactive(inactive, tombstone),
            expires,
            fallback: None,
        }
    }

    /// Whether a link with these fields is inactive. A tombstone is never
    /// live, whatever its `inactive` says (a hand edit could clear that;
    /// `deleted_at` is what makes it a tombstone).
    fn is_inactive(inactive: bool, tombstone: bool) -> bool {
        inactive || tombstone
    }

    /// A fresh document for a new link.
    pub fn new_document(url: &Destination, inactive: bool) -> Document {
        let mut doc = Document::new();
        doc.insert("url".into(), Value::String(url.as_str().to_owned()));
        doc.insert("inactive".into(), Value::Bool(inactive));
        doc
    }

    /// Whether the link redirects at `now`: active and not past its expiry.
    pub fn is_live_at(&self, now: DateTime<Utc>) -> bool {
        !self.inactive && self.expires.is_none_or(|e| now < e)
    }
}

pub fn parse_expires(s: &str) -> Result<DateTime<Utc>, InvalidLink> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| InvalidLink::BadExpires)
}

/// A time field of the document, `None` when absent or not an RFC 3339 time.
fn time_field(doc: &Document, name: &str) -> Option<DateTime<Utc>> {
    doc.get(name)
        .and_then(Value::as_str)
        .and_then(|s| parse_expires(s).ok())
}

/// When the link was created (set once, by the write that created it).
pub fn created_at(doc: &Document) -> Option<DateTime<Utc>> {
    time_field(doc, "created_at")
}

/// When qrtag last wrote the document (any edit, the creation, the deletion).
pub fn changed_at(doc: &Document) -> Option<DateTime<Utc>> {
    time_field(doc, "changed_at")
}

/// When the link was deleted, for a tombstone.
pub fn deleted_at(doc: &Document) -> Option<DateTime<Utc>> {
    time_field(doc, "deleted_at")
}

/// Whether the document is a deleted link's tombstone: any `deleted_at` at
/// all, even one that is not a time, so a hand-made value never revives it.
pub fn is_tombstone(doc: &Document) -> bool {
    doc.get("deleted_at").is_some_and(|v| !v.is_null())
}

/// The time fields besides `expires`, as `assets/couchdb/validate_doc_update.js`
/// checks them: RFC 3339 strings when present.
pub const TIME_FIELDS: [&str; 4] = ["created_at", "changed_at", "deleted_at", "invalidated_at"];

/// Whether every time field is absent, null or an RFC 3339 time: what
/// CouchDB's validation asks, so an import is refused before the store would.
pub fn check_times(doc: &Document) -> Result<(), InvalidLink> {
    for name in TIME_FIELDS {
        match doc.get(name) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if parse_expires(s).is_ok() => {}
            Some(_) => return Err(InvalidLink::BadTime(name)),
        }
    }
    Ok(())
}

/// The fields a DIDComm link records as text (who asked, the goal code,
/// the request's thread, who invalidated it), which CouchDB's validation
/// holds to strings.
pub const TEXT_FIELDS: [&str; 4] = ["created_by", "goal_code", "thid", "invalidated_by"];

/// Longest text field, in bytes: a `did:peer:2` with its keys and service
/// endpoint is well under 1 KB, and a field over this is no DID or thread
/// id but a way to grow every document (issue 30).
pub const MAX_TEXT: usize = 4096;

/// Whether every text field is absent, null or a string of at most
/// [`MAX_TEXT`] bytes, the notes at most [`MAX_NOTES`] characters and the
/// title a string of at most [`MAX_TITLE`] ([`check_title`]):
/// what CouchDB's validation asks, so an import is refused before the
/// store would (and `import --new-database`, which writes while no
/// validation runs, lets in nothing the validation would refuse).
pub fn check_texts(doc: &Document) -> Result<(), InvalidLink> {
    for name in TEXT_FIELDS {
        match doc.get(name) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.len() > MAX_TEXT => {
                return Err(InvalidLink::TooLong {
                    field: name,
                    limit: MAX_TEXT,
                    unit: "bytes",
                });
            }
            Some(Value::String(_)) => {}
            Some(_) => return Err(InvalidLink::NotText(name)),
        }
    }
    if notes(doc).is_some_and(|n| n.chars().count() > MAX_NOTES) {
        return Err(InvalidLink::TooLong {
            field: "notes",
            limit: MAX_NOTES,
            unit: "characters",
        });
    }
    check_title(doc)?;
    check_via(doc)?;
    Ok(())
}

/// Why a deleted key is not used again, in one wording for every command.
pub fn deleted_message(key: &impl std::fmt::Display, on: Option<DateTime<Utc>>) -> String {
    let on = on
        .map(|t| format!(" on {}", t.format("%Y-%m-%d")))
        .unwrap_or_default();
    format!(
        "key {key} was deleted{on}; a deleted key is never reused, so a printed tag can't lead somewhere else"
    )
}

/// Stamps a new document: `created_at` unless it has one (DIDComm and an
/// import bring their own), `created_via` unless it has one (an import of
/// an export keeps its surface), and `changed_at`/`changed_via`.
pub fn stamp_created(doc: &mut Document, now: DateTime<Utc>, author: &Author) {
    let via = author.via;
    if doc.get("created_at").is_none_or(Value::is_null) {
        doc.insert("created_at".into(), Value::String(time_text(now)));
    }
    if doc.get("created_via").is_none_or(Value::is_null) {
        via::set_via(doc, "created_via", via);
    }
    stamp_changed(doc, now, author);
}

/// Stamps a write: `changed_at` is now, `changed_via` the surface and
/// `changed_actor` who (issue 35), always together, so they never disagree;
/// `reverted_to` only on a revert's write.
pub fn stamp_changed(doc: &mut Document, now: DateTime<Utc>, author: &Author) {
    doc.insert("changed_at".into(), Value::String(time_text(now)));
    via::set_via(doc, "changed_via", author.via);
    author::set_actor(doc, &author.actor);
    author::set_reverted(doc, author);
}

/// Turns the document into a tombstone: `deleted_at`, `inactive: true`;
/// the destination and every other field stay, to show what the key was.
pub fn set_deleted(doc: &mut Document, now: DateTime<Utc>) {
    set_inactive(doc, true);
    doc.insert("deleted_at".into(), Value::String(time_text(now)));
}

/// Field edits the commands make; each touches only the field it owns.
pub fn set_url(doc: &mut Document, url: &Destination) {
    doc.insert("url".into(), Value::String(url.as_str().to_owned()));
}

pub fn set_inactive(doc: &mut Document, inactive: bool) {
    doc.insert("inactive".into(), Value::Bool(inactive));
}

/// Longest notes, in characters: a line or two about where a tag hangs,
/// not a document store. CouchDB's validation and an import refuse more
/// ([`check_texts`]); a document that holds more all the same is read as
/// it is.
pub const MAX_NOTES: usize = 2000;

/// A link's `notes` as a person gives them: blanks around them trimmed,
/// line breaks as `\n` (a browser's textarea sends `\r\n`), at most
/// [`MAX_NOTES`] characters. Empty notes are a request to clear the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notes(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("notes may be at most {MAX_NOTES} characters, not {0}")]
pub struct NotesTooLong(pub usize);

impl Notes {
    pub fn parse(s: &str) -> Result<Self, NotesTooLong> {
        let text = lf_line_ends(s.trim());
        match text.chars().count() {
            n if n > MAX_NOTES => Err(NotesTooLong(n)),
            _ => Ok(Self(text)),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Every run of carriage returns before a line feed dropped, in one pass:
/// what replacing `\r\n` by `\n` until none is left gives, so that notes
/// parsed again (a CSV export imported back) are the same notes.
fn lf_line_ends(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut crs = 0;
    for c in s.chars() {
        match c {
            '\r' => crs += 1,
            '\n' => {
                crs = 0;
                out.push('\n');
            }
            c => {
                out.extend(std::iter::repeat_n('\r', crs));
                crs = 0;
                out.push(c);
            }
        }
    }
    out.extend(std::iter::repeat_n('\r', crs));
    out
}

impl std::str::FromStr for Notes {
    type Err = NotesTooLong;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Sets the `notes` field, or removes it for empty notes.
pub fn set_notes(doc: &mut Document, notes: &Notes) {
    if notes.is_empty() {
        doc.shift_remove("notes");
    } else {
        doc.insert("notes".into(), Value::String(notes.0.clone()));
    }
}

/// The `notes` field as text: a string as it is, anything else someone
/// stored there by hand as its JSON.
pub fn notes(doc: &Document) -> Option<std::borrow::Cow<'_, str>> {
    match doc.get("notes")? {
        Value::Null => None,
        Value::String(s) => Some(s.as_str().into()),
        other => Some(other.to_string().into()),
    }
}

// --- The fallback destination (issue 33) ---

/// The document's `fallback_url`: absent or null is none; anything but an
/// absolute http(s) URL makes the document no valid link, as a bad `url`
/// does, so what is stored is always what a scan of the dead link gets.
pub fn fallback_url(doc: &Document) -> Result<Option<Destination>, InvalidLink> {
    match doc.get(FALLBACK_URL) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Destination::parse_absolute(s)
            .map(Some)
            .map_err(InvalidLink::BadFallback),
        Some(_) => Err(InvalidLink::NotText(FALLBACK_URL)),
    }
}

/// The field's name, as the stores, the CSV column and the APIs spell it.
pub const FALLBACK_URL: &str = "fallback_url";

/// Sets the `fallback_url` field, or removes it for `None`.
pub fn set_fallback_url(doc: &mut Document, fallback: Option<&Destination>) {
    match fallback {
        Some(d) => doc.insert(FALLBACK_URL.into(), Value::String(d.as_str().to_owned())),
        None => doc.shift_remove(FALLBACK_URL),
    };
}

/// Where a scan of this link goes when it is not live at `now`: its
/// fallback, or nowhere (a 404).
pub fn fallback_at(link: &Link, now: DateTime<Utc>) -> Option<&Destination> {
    link.fallback.as_ref().filter(|_| !link.is_live_at(now))
}

pub fn set_expires(doc: &mut Document, expires: Option<DateTime<Utc>>) {
    match expires {
        Some(t) => doc.insert("expires".into(), Value::String(time_text(t))),
        None => doc.shift_remove("expires"),
    };
}

/// A document from a JSON object literal, for tests across the crate.
#[cfg(test)]
pub(crate) fn test_document(v: Value) -> Document {
    match v {
        Value::Object(m) => m,
        _ => Document::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use super::test_document as doc;

    #[test]
    fn the_couchdb_validation_checks_the_same_fields() {
        let js = crate::store::couch::setup::VALIDATE_DOC_UPDATE;
        for name in TIME_FIELDS.iter().chain(&TEXT_FIELDS) {
            assert!(
                js.contains(&format!("'{name}'")),
                "{name} not in the validation"
            );
        }
        for (name, cap) in [
            (
                "MAX_DESTINATION",
                crate::values::destination::MAX_DESTINATION,
            ),
            ("MAX_TEXT", MAX_TEXT),
            ("MAX_NOTES", MAX_NOTES),
            ("MAX_TITLE", MAX_TITLE),
        ] {
            assert!(js.contains(&format!("var {name} = {cap};")), "{name}");
        }
        assert!(js.contains(&format!("newDoc.{FALLBACK_URL}")));
        let mut d = doc(json!({"url": "/x", "created_by": "did:peer:2.x", "thid": null}));
        assert_eq!(check_texts(&d), Ok(()));
        d.insert("thid".into(), json!("t".repeat(MAX_TEXT)));
        assert_eq!(check_texts(&d), Ok(()));
        d.insert("thid".into(), json!("t".repeat(MAX_TEXT + 1)));
        assert_eq!(
            check_texts(&d),
            Err(InvalidLink::TooLong {
                field: "thid",
                limit: MAX_TEXT,
                unit: "bytes"
            })
        );
        d.insert("thid".into(), json!("t"));
        d.insert("notes".into(), json!("é".repeat(MAX_NOTES)));
        assert_eq!(check_texts(&d), Ok(()));
        d.insert("notes".into(), json!("é".repeat(MAX_NOTES + 1)));
        assert_eq!(
            check_texts(&d),
            Err(InvalidLink::TooLong {
                field: "notes",
                limit: MAX_NOTES,
                unit: "characters"
            })
        );
        d.shift_remove("notes");
        d.insert("title".into(), json!(7));
        assert_eq!(check_texts(&d), Err(InvalidLink::NotText("title")));
        d.shift_remove("title");
        d.insert("goal_code".into(), json!(5));
        assert_eq!(check_texts(&d), Err(InvalidLink::NotText("goal_code")));
    }

    #[test]
    fn reads_the_outline_document() {
        let l = Link::from_document(&doc(
            json!({"url": "http://innerfunction.com/wp/whelans/?p=14", "inactive": false}),
        ));
        assert!(l.is_ok_and(|l| !l.inactive && l.expires.is_none()));
    }

    #[test]
    fn inactive_defaults_to_false() {
        let l = Link::from_document(&doc(json!({"url": "/x"})));
        assert_eq!(l.map(|l| l.inactive), Ok(false));
    }

    #[test]
    fn rejects_invalid_documents() {
        let cases = [
            (json!({}), InvalidLink::MissingUrl),
            (json!({"url": 3}), InvalidLink::MissingUrl),
            (
                json!({"url": "/x", "inactive": "no"}),
                InvalidLink::BadInactive,
            ),
            (
                json!({"url": "/x", "expires": "tomorrow"}),
                InvalidLink::BadExpires,
            ),
            (json!({"url": "/x", "expires": 5}), InvalidLink::BadExpires),
        ];
        for (d, want) in cases {
            assert_eq!(Link::from_document(&doc(d)), Err(want));
        }
        assert!(matches!(
            Link::from_document(&doc(json!({"url": "javascript:alert(1)"}))),
            Err(InvalidLink::BadUrl(_))
        ));
    }

    #[test]
    fn a_fallback_is_an_absolute_url_and_serves_only_a_dead_link() {
        let d = doc(json!({"url": "/x", "inactive": true,
                           "fallback_url": "https://venue.example/home"}));
        let l = Link::from_document(&d).expect("valid");
        let now = Utc::now();
        assert_eq!(
            fallback_at(&l, now).map(Destination::as_str),
            Some("https://venue.example/home")
        );
        let live = Link {
            inactive: false,
            ..l.clone()
        };
        assert_eq!(fallback_at(&live, now), None, "a live link redirects");
        for (bad, want) in [
            (json!("/H83if"), "not a path"),
            (json!("javascript:alert(1)"), "absolute http(s)"),
            (json!(5), "must be a string"),
        ] {
            let d = doc(json!({"url": "/x", "fallback_url": bad}));
            let err = Link::from_document(&d).expect_err("refused").to_string();
            assert!(err.contains(want), "{err}");
        }
        let mut d = doc(json!({"url": "/x", "tag": 1}));
        let f = Destination::parse_absolute("https://venue.example/").expect("absolute");
        set_fallback_url(&mut d, Some(&f));
        assert_eq!(d.get(FALLBACK_URL), Some(&json!("https://venue.example/")));
        set_fallback_url(&mut d, None);
        assert_eq!(Value::Object(d), json!({"url": "/x", "tag": 1}));
    }

    #[test]
    fn expiry_makes_a_link_dead() {
        let l = Link::from_document(&doc(
            json!({"url": "/x", "expires": "2026-01-01T00:00:00Z"}),
        ))
        .expect("valid");
        let before = parse_expires("2025-12-31T23:59:59Z").expect("time");
        let after = parse_expires("2026-01-01T00:00:00Z").expect("time");
        assert!(l.is_live_at(before));
        assert!(!l.is_live_at(after));
    }

    #[test]
    fn notes_are_trimmed_capped_and_cleared_when_empty() {
        let mut d = doc(json!({"url": "/x", "inactive": false, "tag": 1}));
        let given = Notes::parse("  bus stop,\r\nMain St \n").expect("short");
        set_notes(&mut d, &given);
        assert_eq!(notes(&d).as_deref(), Some("bus stop,\nMain St"));
        assert_eq!(
            Value::Object(d.clone()),
            json!({"url": "/x", "inactive": false, "tag": 1, "notes": "bus stop,\nMain St"})
        );
        set_notes(&mut d, &Notes::parse(" \r\n ").expect("empty"));
        assert_eq!(
            Value::Object(d.clone()),
            json!({"url": "/x", "inactive": false, "tag": 1})
        );
        assert_eq!(notes(&d), None);

        let at_most = "é".repeat(MAX_NOTES);
        assert!(Notes::parse(&at_most).is_ok(), "characters, not bytes");
        assert_eq!(
            Notes::parse(&format!("{at_most}x")),
            Err(NotesTooLong(MAX_NOTES + 1))
        );
        // Parsed again, the same notes (a CSV export imported back).
        for text in ["a\r\r\nb", "a\rb\r", "a\r\n\r\nb", "\r\r\n x \r"] {
            let once = Notes::parse(text).expect("short");
            assert!(!once.as_str().contains("\r\n"), "{text:?}");
            assert_eq!(Notes::parse(once.as_str()), Ok(once.clone()), "{text:?}");
        }
        assert_eq!(
            Notes::parse("a\r\r\nb\rc").expect("short").as_str(),
            "a\nb\rc"
        );
        let hand_made = doc(json!({"url": "/x", "notes": ["a", 1]}));
        assert_eq!(notes(&hand_made).as_deref(), Some(r#"["a",1]"#));
    }

    #[test]
    fn a_tombstone_is_never_live_and_keeps_its_fields() {
        let now = parse_expires("2026-11-25T13:40:00.7Z").expect("time");
        let mut d = doc(json!({"url": "/x", "inactive": false, "tag": 1}));
        stamp_created(&mut d, now, &Author::cli(Via::Cli, "u", "h"));
        assert_eq!(created_at(&d), parse_expires("2026-11-25T13:40:00Z").ok());
        assert_eq!(changed_at(&d), created_at(&d));
        set_deleted(&mut d, now);
        assert!(is_tombstone(&d));
        assert_eq!(deleted_at(&d), created_at(&d));
        assert_eq!(d.get("deleted_at"), Some(&json!("2026-11-25T13:40:00Z")));
        assert_eq!(d.get("tag"), Some(&json!(1)));
        d.insert("inactive".into(), json!(false));
        let l = Link::from_document(&d).expect("still a valid document");
        assert!(!l.is_live_at(now), "deleted_at alone makes it dead");
        d.insert("deleted_at".into(), json!("yesterday"));
        assert!(is_tombstone(&d) && deleted_at(&d).is_none());
    }

    #[test]
    fn created_at_is_kept_changed_at_is_not() {
        let t1 = parse_expires("2026-01-01T00:00:00Z").expect("time");
        let t2 = parse_expires("2026-02-01T00:00:00Z").expect("time");
        let mut d = doc(json!({"url": "/x"}));
        stamp_created(&mut d, t1, &Author::cli(Via::Console, "u", "h"));
        stamp_created(&mut d, t2, &Author::cli(Via::Didcomm, "u", "h"));
        assert_eq!((created_at(&d), changed_at(&d)), (Some(t1), Some(t2)));
        assert_eq!(
            (created_via(&d), changed_via(&d)),
            (Some(Via::Console), Some(Via::Didcomm)),
            "the surface goes with its time"
        );
        stamp_changed(&mut d, t1, &Author::cli(Via::Api, "u", "h"));
        assert_eq!(changed_at(&d), Some(t1));
        assert_eq!(changed_via(&d), Some(Via::Api));
        // An exported document imported keeps the surface that made it.
        let mut brought = doc(json!({"url": "/x", "created_via": "console"}));
        stamp_created(&mut brought, t2, &Author::cli(Via::Import, "u", "h"));
        assert_eq!(created_via(&brought), Some(Via::Console));
        assert_eq!(changed_via(&brought), Some(Via::Import));
    }

    #[test]
    fn times_are_read_when_well_formed_and_absent_otherwise() {
        let d = doc(json!({"url": "/x", "created_at": "2026-11-25T10:00:00Z", "changed_at": 5}));
        assert_eq!(created_at(&d), parse_expires("2026-11-25T10:00:00Z").ok());
        assert_eq!(changed_at(&d), None);
        assert_eq!(created_at(&doc(json!({"url": "/x"}))), None);
    }

    #[test]
    fn edits_keep_unknown_fields() {
        let mut d = doc(json!({"url": "/x", "note": "poster at the bus stop", "inactive": false}));
        set_url(
            &mut d,
            &Destination::parse("https://new.example/").expect("valid"),
        );
        set_inactive(&mut d, true);
        assert_eq!(
            Value::Object(d),
            json!({"url": "https://new.example/", "note": "poster at the bus stop", "inactive": true})
        );
    }
}

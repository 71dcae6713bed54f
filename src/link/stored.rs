//! A stored document's JSON text read for the few fields a link is made of,
//! without building the document: what a full load of a million links does
//! instead of parsing each row into a [`Document`](super::Document) (an
//! ordered map with a string per field) only to look five fields up.
//!
//! Only documents whose known fields have the types a valid link needs are
//! read this way; anything else (a field of another type, a field twice,
//! text that is not one JSON object) is [`None`], and the caller judges the
//! parsed document as before. The verdicts are the same either way: both
//! go through [`Link::from_parts`], and a property test compares them on
//! documents of every shape.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::{InvalidLink, Link, parse_expires};
use crate::values::destination::{Destination, is_plain_absolute};

/// A string field, borrowed from the JSON text when it holds no escapes.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// What [`StoredFields::plain_link`] reads: a link whose destination is
/// borrowed from the document's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainLink<'a> {
    pub url: &'a str,
    pub inactive: bool,
    pub expires: Option<DateTime<Utc>>,
}

/// The fields of a link document; every other field is skipped unread.
#[derive(Debug, Deserialize)]
pub struct StoredFields<'a> {
    #[serde(borrow)]
    url: Option<Text<'a>>,
    inactive: Option<bool>,
    #[serde(borrow)]
    expires: Option<Text<'a>>,
    #[serde(borrow)]
    created_at: Option<Text<'a>>,
    #[serde(borrow)]
    changed_at: Option<Text<'a>>,
    /// Any value but `null` makes the document a tombstone.
    deleted_at: Option<IgnoredAny>,
    /// Where a dead link's scans go (issue 33).
    #[serde(borrow)]
    fallback_url: Option<Text<'a>>,
    /// Issue 33: the texts the console's list shows and searches. Notes or
    /// a title of another type make the read `None`, and the parsed
    /// document is judged (its notes then shown as their JSON).
    #[serde(borrow)]
    title: Option<Text<'a>>,
    #[serde(borrow)]
    notes: Option<Text<'a>>,
    /// Issue 34: a link's rules are read from the parsed document
    /// ([`super::rules::Rules::from_stored`]); here only whether there are
    /// any (`null` is none), so such a row takes the full path.
    rules: Option<IgnoredAny>,
}

impl<'a> StoredFields<'a> {
    /// The fields of `json`, or `None` when it is not a JSON object whose
    /// link fields have the expected types (the caller then parses it whole).
    pub fn read(json: &'a str) -> Option<Self> {
        serde_json::from_str(json).ok()
    }

    fn text<'s>(field: &'s Option<Text<'a>>) -> Option<&'s str> {
        field.as_ref().map(|t| &*t.0)
    }

    /// Issue 34: whether the document has `rules` (not `null`): the caller
    /// then judges the parsed document, which reads them.
    pub fn has_rules(&self) -> bool {
        self.rules.is_some()
    }

    /// As [`super::is_tombstone`] on the document.
    pub fn is_tombstone(&self) -> bool {
        self.deleted_at.is_some()
    }

    /// As [`Link::from_document`] on the document.
    pub fn link(&self) -> Result<Link, InvalidLink> {
        let url = match Self::text(&self.url) {
            Some(s) => Destination::parse(s)?,
            None => return Err(InvalidLink::MissingUrl),
        };
        let expires = match Self::text(&self.expires) {
            Some(s) => Some(parse_expires(s)?),
            None => None,
        };
        let fallback = Self::text(&self.fallback_url)
            .map(Destination::parse_absolute)
            .transpose()
            .map_err(InvalidLink::BadFallback)?;
        Ok(Link::from_parts(
            url,
            self.inactive.unwrap_or(false),
            self.is_tombstone(),
            expires,
        )
        .with_fallback(fallback))
    }

    /// As [`link`](Self::link), for a link whose destination
    /// [`Destination::parse`] takes as written without the URL parser
    /// ([`is_plain_absolute`]): the destination borrowed from the text, not
    /// copied, and judged once (a full load does this for every row, issue
    /// 24). `None` for any other destination: call [`link`](Self::link).
    pub fn plain_link(&self) -> Option<Result<PlainLink<'_>, InvalidLink>> {
        // A link with a fallback is rare: the full path reads it.
        if self.fallback_url.is_some() || self.has_rules() {
            return None;
        }
        let url = Self::text(&self.url).filter(|u| is_plain_absolute(u))?;
        let expires = match Self::text(&self.expires).map(parse_expires) {
            Some(Err(e)) => return Some(Err(e)),
            Some(Ok(t)) => Some(t),
            None => None,
        };
        Some(Ok(PlainLink {
            url,
            inactive: Link::is_inactive(self.inactive.unwrap_or(false), self.is_tombstone()),
            expires,
        }))
    }

    /// As [`super::created_at`] on the document.
    pub fn created_at(&self) -> Option<DateTime<Utc>> {
        Self::text(&self.created_at).and_then(|s| parse_expires(s).ok())
    }

    /// The title and the notes as strings, as [`super::title`] and
    /// [`super::notes`] read a string field.
    pub fn texts(&self) -> (Option<&str>, Option<&str>) {
        (Self::text(&self.title), Self::text(&self.notes))
    }

    /// As [`super::changed_at`] on the document.
    pub fn changed_at(&self) -> Option<DateTime<Utc>> {
        Self::text(&self.changed_at).and_then(|s| parse_expires(s).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{Document, changed_at, created_at, is_tombstone};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// Tombstone, link, creation and change times (seconds).
    type Verdict = (bool, Result<Link, InvalidLink>, Option<i64>, Option<i64>);

    /// What a document's fields say, through the document.
    fn judged(doc: &Document) -> Verdict {
        (
            is_tombstone(doc),
            Link::from_document(doc),
            created_at(doc).map(|t| t.timestamp()),
            changed_at(doc).map(|t| t.timestamp()),
        )
    }

    fn read_judged(json: &str) -> Option<Verdict> {
        let f = StoredFields::read(json)?;
        Some((
            f.is_tombstone(),
            f.link(),
            f.created_at().map(|t| t.timestamp()),
            f.changed_at().map(|t| t.timestamp()),
        ))
    }

    /// Values a field may hold: the right type, valid or not, and others.
    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            Just(json!([1, "a"])),
            Just(json!({"url": "/x"})),
            prop_oneof![
                Just("https://example.com/a?b=c".to_owned()),
                Just("https://Example.com/".to_owned()),
                Just("http://a.example:0443/".to_owned()),
                Just("/docs/page".to_owned()),
                Just("//evil.example".to_owned()),
                Just("/a/../b".to_owned()),
                Just("javascript:alert(1)".to_owned()),
                Just("https://a.example/\u{202e}x".to_owned()),
                Just("2026-12-31T23:59:59Z".to_owned()),
                Just("2026-12-31T23:59:59+02:00".to_owned()),
                Just("2026-13-31T23:59:59Z".to_owned()),
                Just("https://a.example/\"q\"\\u00e9".to_owned()),
                "[ -~]{0,12}",
            ]
            .prop_map(Value::String),
        ]
    }

    fn field() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("url".to_owned()),
            Just("inactive".to_owned()),
            Just("expires".to_owned()),
            Just("created_at".to_owned()),
            Just("changed_at".to_owned()),
            Just("deleted_at".to_owned()),
            Just("notes".to_owned()),
            Just("fallback_url".to_owned()),
            Just("title".to_owned()),
            Just("_rev".to_owned()),
            "[a-z_]{1,8}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Read from the text or from the parsed document, every document
        /// gets the same verdict; the text is read whenever its link
        /// fields have their types, as a stored link's always do.
        #[test]
        fn the_fields_judge_a_document_as_the_document_does(
            fields in prop::collection::vec((field(), value()), 0..8),
            twice in any::<bool>(),
        ) {
            let mut json = String::from("{");
            for (i, (name, value)) in fields.iter().enumerate() {
                if i > 0 {
                    json.push(',');
                }
                json.push_str(&format!("{}:{value}", Value::String(name.clone())));
            }
            // A field written twice: the document keeps the last value.
            if twice && let Some((name, value)) = fields.first() {
                json.push_str(&format!(
                    "{}{}:{value}",
                    if fields.is_empty() { "" } else { "," },
                    Value::String(name.clone())
                ));
            }
            json.push('}');
            let doc: Document = serde_json::from_str(&json).expect("an object");
            if let Some(read) = read_judged(&json) {
                prop_assert_eq!(read, judged(&doc), "{}", json);
                // Issue 33: the texts the list shows, as the document has them.
                let f = StoredFields::read(&json).expect("read");
                let some = |s: Option<&str>| s.filter(|s| !s.is_empty()).map(str::to_owned);
                let (title, notes) = f.texts();
                prop_assert_eq!(some(title), some(crate::link::title(&doc)), "{}", json);
                prop_assert_eq!(some(notes), some(crate::link::notes(&doc).as_deref()), "{}", json);
            }
            // A document of the shape qrtag writes is always read as text.
            let typed = ["url", "expires", "created_at", "changed_at", "fallback_url", "notes", "title"]
                .iter()
                .all(|n| doc.get(*n).is_none_or(|v| v.is_string() || v.is_null()))
                && doc.get("inactive").is_none_or(|v| v.is_boolean() || v.is_null());
            let unique = {
                let mut names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
                if twice && let Some((n, _)) = fields.first() {
                    names.push(n);
                }
                let known = ["url", "inactive", "expires", "created_at", "changed_at", "deleted_at", "fallback_url", "notes", "title"];
                known.iter().all(|k| names.iter().filter(|n| *n == k).count() <= 1)
            };
            if typed && unique {
                prop_assert!(read_judged(&json).is_some(), "{}", json);
            }
        }
    }

    #[test]
    fn text_that_is_no_object_is_left_to_the_document() {
        for json in [
            "",
            "[]",
            "\"url\"",
            "{\"url\":\"/a\"} x",
            "{\"url\":5}",
            "{",
        ] {
            assert!(StoredFields::read(json).is_none(), "{json}");
        }
        let f = StoredFields::read(r#"{"url":"https:\/\/a.example\/x","deleted_at":{"a":1}}"#)
            .expect("read");
        assert!(f.is_tombstone());
        assert_eq!(f.link().expect("valid").url.as_str(), "https://a.example/x");
    }
}

//! The link document: `{"url": ..., "inactive": false, "expires": ...}`.
//!
//! Documents are edited by people (in Fauxton, with curl), so the service reads
//! them defensively: [`Link::from_document`] is the one place that decides
//! whether a stored document is a usable link, and the raw JSON object is kept
//! beside it so that rewriting a document never drops fields qrtag does not own.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::destination::{Destination, InvalidDestination};

/// A link document's fields as stored (CouchDB's `_id` and `_rev` excluded).
pub type Document = Map<String, Value>;

/// The parsed, valid view of a link document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub url: Destination,
    pub inactive: bool,
    pub expires: Option<DateTime<Utc>>,
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
        Ok(Self {
            url,
            inactive,
            expires,
        })
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

/// Field edits the commands make; each touches only the field it owns.
pub fn set_url(doc: &mut Document, url: &Destination) {
    doc.insert("url".into(), Value::String(url.as_str().to_owned()));
}

pub fn set_inactive(doc: &mut Document, inactive: bool) {
    doc.insert("inactive".into(), Value::Bool(inactive));
}

pub fn set_expires(doc: &mut Document, expires: Option<DateTime<Utc>>) {
    match expires {
        Some(t) => doc.insert(
            "expires".into(),
            Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        ),
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

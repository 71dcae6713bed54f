//! A link's `title`: the short name people know a tag by ("Spring poster,
//! bus stop"), shown wherever a link is listed, where a bare key tells a
//! venue's staff nothing (issue 33).
//!
//! One rule for every writer (CLI, console, REST API, CSV import): trimmed,
//! one line, at most [`MAX_TITLE`] characters; empty clears the field. The
//! CouchDB validation and [`check_title`] (an import's JSON lines) keep the
//! part of it a stored document can break: a string within the limit.

use serde_json::Value;

use super::{Document, InvalidLink};

/// Longest title, in characters (Unicode scalar values, as Rust's
/// `chars().count()`): a name for a list row and a label's caption line,
/// not a description (that is what notes are for).
pub const MAX_TITLE: usize = 200;

/// A title as a person gives it, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Title(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadTitle {
    #[error("a title may be at most {MAX_TITLE} characters, not {0}")]
    TooLong(usize),
    /// A line break or another control character: a title is shown on one
    /// line in lists, headings and captions, where it would break the row.
    #[error("a title is one line: no line breaks or control characters")]
    NotOneLine,
}

impl Title {
    pub fn parse(s: &str) -> Result<Self, BadTitle> {
        let text = s.trim();
        if text.chars().any(char::is_control) {
            return Err(BadTitle::NotOneLine);
        }
        match text.chars().count() {
            n if n > MAX_TITLE => Err(BadTitle::TooLong(n)),
            _ => Ok(Self(text.to_owned())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::str::FromStr for Title {
    type Err = BadTitle;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Sets the `title` field, or removes it for an empty title.
pub fn set_title(doc: &mut Document, title: &Title) {
    if title.is_empty() {
        doc.shift_remove("title");
    } else {
        doc.insert("title".into(), Value::String(title.0.clone()));
    }
}

/// The `title` field when it is a non-empty string. Anything else a hand
/// edit left in SQLite (CouchDB's validation refuses it) is no title: the
/// key names the link instead.
pub fn title(doc: &Document) -> Option<&str> {
    match doc.get("title")? {
        Value::String(s) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// What CouchDB's validation asks of the field: absent, null, or a string
/// of at most [`MAX_TITLE`] characters.
pub fn check_title(doc: &Document) -> Result<(), InvalidLink> {
    match doc.get("title") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) if s.chars().count() > MAX_TITLE => Err(InvalidLink::TooLong {
            field: "title",
            limit: MAX_TITLE,
            unit: "characters",
        }),
        Some(Value::String(_)) => Ok(()),
        Some(_) => Err(InvalidLink::NotText("title")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::test_document as doc;
    use serde_json::json;

    #[test]
    fn a_title_is_trimmed_one_line_capped_and_cleared_when_empty() {
        let mut d = doc(json!({"url": "/x", "tag": 1}));
        let t = Title::parse("  Spring poster, bus stop \t").expect("short");
        set_title(&mut d, &t);
        assert_eq!(title(&d), Some("Spring poster, bus stop"));
        set_title(&mut d, &Title::parse("   ").expect("empty"));
        assert_eq!(Value::Object(d.clone()), json!({"url": "/x", "tag": 1}));
        assert_eq!(title(&d), None);

        let emoji = "🎟".repeat(MAX_TITLE);
        assert!(Title::parse(&emoji).is_ok(), "characters, not bytes");
        assert_eq!(
            Title::parse(&format!("{emoji}x")),
            Err(BadTitle::TooLong(MAX_TITLE + 1))
        );
        for bad in [
            "two\nlines",
            "a\rb",
            "tab\tinside",
            "bell\u{7}",
            "c1\u{85}x",
        ] {
            assert_eq!(Title::parse(bad), Err(BadTitle::NotOneLine), "{bad:?}");
        }
        assert_eq!(
            BadTitle::TooLong(201).to_string(),
            "a title may be at most 200 characters, not 201"
        );
    }

    #[test]
    fn a_stored_title_is_a_string_within_the_limit() {
        let mut d = doc(json!({"url": "/x"}));
        assert_eq!(check_title(&d), Ok(()));
        d.insert("title".into(), json!(null));
        assert_eq!(check_title(&d), Ok(()));
        d.insert("title".into(), json!("🎟".repeat(MAX_TITLE)));
        assert_eq!(check_title(&d), Ok(()));
        d.insert("title".into(), json!("é".repeat(MAX_TITLE + 1)));
        assert_eq!(
            check_title(&d),
            Err(InvalidLink::TooLong {
                field: "title",
                limit: MAX_TITLE,
                unit: "characters"
            })
        );
        d.insert("title".into(), json!(["a"]));
        assert_eq!(check_title(&d), Err(InvalidLink::NotText("title")));
        assert_eq!(title(&d), None, "not a string: no title");
    }
}

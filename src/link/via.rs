//! By which surface a link was made and last changed (issue 33): the link
//! page says "Created … via the console", so a team can tell a tag someone
//! set up in the browser from one a script or an agent wrote. The surface is
//! stamped beside its time (`created_via` beside `created_at`,
//! `changed_via` beside `changed_at`) by the same call, so a write from one
//! surface never leaves another's name next to its own time.

use serde_json::Value;

use super::{Document, InvalidLink};

/// The surface a write came through, stored as its [`Via::as_str`] name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Via {
    /// A `qrtag` command (`new`, `set`, `disable`, `delete`, …).
    Cli,
    /// `qrtag edit`: the whole document in `$EDITOR`.
    Edit,
    /// The web console's forms.
    Console,
    /// The REST API under `/api/v1`.
    Api,
    /// DIDComm Shorten URL on the API listener.
    Didcomm,
    /// `qrtag import`, for a document that brought no time of its own.
    Import,
}

/// The fields a write stamps, as `assets/couchdb/validate_doc_update.js`
/// checks them: absent, null or one of [`Via::ALL`]'s names.
pub const VIA_FIELDS: [&str; 2] = ["created_via", "changed_via"];

impl Via {
    /// Every surface, in the order the validation function lists them.
    pub const ALL: [Via; 6] = [
        Via::Cli,
        Via::Edit,
        Via::Console,
        Via::Api,
        Via::Didcomm,
        Via::Import,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Cli => "cli",
            Via::Edit => "edit",
            Via::Console => "console",
            Via::Api => "api",
            Via::Didcomm => "didcomm",
            Via::Import => "import",
        }
    }

    /// A stored name back, `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The surface as a person reads it after "via".
    pub fn words(self) -> &'static str {
        match self {
            Via::Cli => "the command line",
            Via::Edit => "qrtag edit",
            Via::Console => "the console",
            Via::Api => "the REST API",
            Via::Didcomm => "DIDComm",
            Via::Import => "an import",
        }
    }
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `created_via`: `None` for a document from before the field, or one
/// holding something that is not a surface's name.
pub fn created_via(doc: &Document) -> Option<Via> {
    via_field(doc, "created_via")
}

/// `changed_via`, as [`created_via`].
pub fn changed_via(doc: &Document) -> Option<Via> {
    via_field(doc, "changed_via")
}

fn via_field(doc: &Document, name: &str) -> Option<Via> {
    doc.get(name).and_then(Value::as_str).and_then(Via::parse)
}

pub(super) fn set_via(doc: &mut Document, name: &'static str, via: Via) {
    doc.insert(name.into(), Value::String(via.as_str().to_owned()));
}

/// Whether both fields are absent, null or a surface's name: what CouchDB's
/// validation asks, so an import is refused before the store would.
pub fn check_via(doc: &Document) -> Result<(), InvalidLink> {
    for name in VIA_FIELDS {
        match doc.get(name) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if Via::parse(s).is_some() => {}
            Some(_) => return Err(InvalidLink::BadVia(name)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(v: Value) -> Document {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn every_name_parses_back_and_nothing_else_does() {
        for via in Via::ALL {
            assert_eq!(Via::parse(via.as_str()), Some(via));
        }
        for bad in ["", "CLI", "rest", "console ", "web"] {
            assert_eq!(Via::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_check_takes_names_and_null_and_refuses_the_rest() {
        assert!(check_via(&doc(json!({"url": "/x"}))).is_ok());
        let ok = doc(json!({"created_via": "api", "changed_via": null}));
        assert!(check_via(&ok).is_ok());
        for bad in [json!("rest"), json!(5), json!(["cli"]), json!("")] {
            let d = doc(json!({"changed_via": bad}));
            let err = check_via(&d).expect_err("refused");
            assert_eq!(
                err.to_string(),
                "\"changed_via\" must be one of cli, edit, console, api, didcomm, import"
            );
        }
    }
}

//! A link's imported total of clicks (issue 37): what another shortener
//! counted before the move where it kept only a total (Bitly, Dub, Kutt).
//!
//! A field of the link document, `imported_clicks`, so it travels with the
//! link through export, import and CouchDB replication, and is shown apart
//! from the scans qrtag counts (it is no scan of qrtag's, and has no days).
//! The snapshot's redirect table never reads it: a scan costs nothing more.

use serde_json::Value;

use super::Document;

/// The field's name, as the stores, the JSON export and the APIs spell it.
pub const IMPORTED_CLICKS: &str = "imported_clicks";

/// The imported total, when the link has one (a whole number).
pub fn imported_clicks(doc: &Document) -> Option<u64> {
    doc.get(IMPORTED_CLICKS).and_then(Value::as_u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_whole_number_is_a_total() {
        let doc = |v: Value| crate::link::test_document(json!({ IMPORTED_CLICKS: v }));
        assert_eq!(imported_clicks(&doc(json!(42))), Some(42));
        assert_eq!(imported_clicks(&doc(json!("42"))), None);
        assert_eq!(imported_clicks(&doc(json!(-1))), None);
        assert_eq!(imported_clicks(&Document::new()), None);
    }
}

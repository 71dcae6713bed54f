//! The types of the stores' bulk operations, used by `qrtag import` and
//! `qrtag export` (see `crate::transfer`).

use serde_json::Value;

use crate::link::Document;
use crate::values::link_key::LinkKey;

/// A document for a bulk write: its key and its fields serialized once, as
/// the compact JSON object the embedded store keeps, so a million of them
/// fit in memory while a whole file is checked before the first write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkDoc {
    key: LinkKey,
    json: String,
}

impl BulkDoc {
    pub fn new(key: LinkKey, doc: Document) -> Self {
        Self {
            key,
            json: Value::Object(doc).to_string(),
        }
    }

    pub fn key(&self) -> &LinkKey {
        &self.key
    }

    /// Another key for the same fields (an import's drawn key that was
    /// taken, drawn again).
    pub fn set_key(&mut self, key: LinkKey) {
        self.key = key;
    }

    /// The fields as one JSON object (no `_id`).
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The fields again.
    pub fn document(&self) -> Document {
        // Made from a document, so it reads back as one.
        serde_json::from_str(&self.json).unwrap_or_default()
    }
}

/// What a bulk write does with a key that already has a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnExisting {
    /// Leave it and report [`BulkOutcome::Exists`].
    Refuse,
    /// Replace it at its current revision.
    Overwrite,
}

/// What became of one document of a bulk write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BulkOutcome {
    Created,
    Updated,
    /// The key has a document and the write was [`OnExisting::Refuse`].
    Exists,
    /// The store refused this document; why, in its words.
    Refused(String),
}

/// A page of an export: keys and documents, in key order.
pub type ExportPage = Vec<(String, Document)>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bulk_doc_keeps_its_fields_in_order() {
        let Value::Object(doc) = json!({"url": "/a", "z": [1, {"b": 2, "a": 1}], "inactive": true})
        else {
            unreachable!()
        };
        let b = BulkDoc::new(LinkKey::parse("k").expect("key"), doc.clone());
        assert_eq!(
            b.json(),
            r#"{"url":"/a","z":[1,{"b":2,"a":1}],"inactive":true}"#
        );
        assert_eq!(b.document(), doc);
        assert_eq!(b.key().as_str(), "k");
    }
}

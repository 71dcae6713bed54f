//! The export line: `{"_id":KEY,...}`, the key first and then the document's
//! fields in stored order, compact JSON, one document per line.

use std::io::{self, Write};

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::link::Document;

/// A document as one export line (without the newline).
struct Line<'a> {
    key: &'a str,
    doc: &'a Document,
}

impl Serialize for Line<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = self.doc.iter().filter(|(k, _)| k.as_str() != "_id");
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("_id", self.key)?;
        for (k, v) in fields {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Writes one document's line, newline included. A field of the document
/// named `_id` (no qrtag write makes one) is left out: the key is the `_id`.
pub fn write(out: &mut impl Write, key: &str, doc: &Document) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &Line { key, doc })?;
    out.write_all(b"\n")
}

/// One document's line as a string, newline included.
pub fn line(key: &str, doc: &Document) -> String {
    let mut out = Vec::new();
    // Writing JSON of string-keyed values into memory cannot fail.
    let _ = write(&mut out, key, doc);
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::link::test_document as doc;

    #[test]
    fn key_first_then_fields_in_order() {
        let d = doc(
            json!({"url": "/x", "note": "a \"quoted\" note\nwith é", "inactive": false,
                           "nested": {"z": 1, "a": [true, null, 1.5]}}),
        );
        assert_eq!(
            line("docs/api", &d),
            "{\"_id\":\"docs/api\",\"url\":\"/x\",\"note\":\"a \\\"quoted\\\" note\\nwith é\",\
             \"inactive\":false,\"nested\":{\"z\":1,\"a\":[true,null,1.5]}}\n"
        );
    }

    #[test]
    fn a_stray_id_field_does_not_repeat_the_key() {
        let d = doc(json!({"url": "/x", "_id": "other"}));
        assert_eq!(line("k", &d), "{\"_id\":\"k\",\"url\":\"/x\"}\n");
    }
}

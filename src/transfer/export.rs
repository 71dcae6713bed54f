//! The export line: `{"_id":KEY,...}`, the key first and then the document's
//! fields in stored order, compact JSON, one document per line; or a CSV
//! record of the columns the CSV import reads ([`super::parse::COLUMNS`]),
//! so that `import` takes either back.

use std::io::{self, Write};

use serde::ser::{Serialize, SerializeMap, Serializer};

use serde_json::Value;

use super::parse::COLUMNS;
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

/// The CSV header: the import's columns, in its order.
pub fn write_csv_header(out: &mut impl Write) -> io::Result<()> {
    out.write_all(COLUMNS.join(",").as_bytes())?;
    out.write_all(b"\n")
}

/// Writes one document as a CSV record, newline included: the key, then
/// each field of [`COLUMNS`] (empty when absent or null, `true`/`false`
/// for a boolean, the JSON text of any other value, which import then
/// refuses as the JSON import would). Returns the first field the document
/// has that no column holds, for the caller to say.
pub fn write_csv<'d>(
    out: &mut impl Write,
    key: &str,
    doc: &'d Document,
) -> io::Result<Option<&'d str>> {
    write_cell(out, key)?;
    for name in &COLUMNS[1..] {
        out.write_all(b",")?;
        match doc.get(*name) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => write_cell(out, s)?,
            Some(other) => write_cell(out, &other.to_string())?,
        }
    }
    out.write_all(b"\n")?;
    Ok(doc
        .keys()
        .map(String::as_str)
        // Issue 35: who made the last write is a stamp, not a link's field;
        // an import stamps its own.
        .find(|k| *k != "_id" && *k != crate::link::ACTOR_FIELD && !COLUMNS.contains(k)))
}

/// One cell, quoted (RFC 4180: in double quotes, a quote doubled) when it
/// holds a comma, a quote or a line break; as it is otherwise.
fn write_cell(out: &mut impl Write, text: &str) -> io::Result<()> {
    if !text.contains([',', '"', '\n', '\r']) {
        return out.write_all(text.as_bytes());
    }
    out.write_all(b"\"")?;
    out.write_all(text.replace('"', "\"\"").as_bytes())?;
    out.write_all(b"\"")
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

    fn csv(key: &str, d: &Document) -> (String, Option<String>) {
        let mut out = Vec::new();
        let left = write_csv(&mut out, key, d).unwrap().map(str::to_owned);
        (String::from_utf8(out).unwrap(), left)
    }

    #[test]
    fn csv_cells_are_quoted_where_they_must_be() {
        let mut head = Vec::new();
        write_csv_header(&mut head).unwrap();
        assert_eq!(
            head,
            b"key,url,inactive,expires,notes,created_at,changed_at,deleted_at,fallback_url,title,created_via,changed_via,rules\n"
        );
        let d = doc(
            json!({"url": "/a,b", "inactive": true, "notes": "say \"hi\"\r\nthere",
                           "expires": null, "created_at": "2026-01-01T00:00:00Z"}),
        );
        assert_eq!(
            csv("k", &d),
            (
                "k,\"/a,b\",true,,\"say \"\"hi\"\"\r\nthere\",2026-01-01T00:00:00Z,,,,,,,\n"
                    .to_owned(),
                None
            )
        );
        let d = doc(json!({"url": "/x", "inactive": false, "owner": "me", "expires": 5}));
        assert_eq!(
            csv("k", &d),
            (
                "k,/x,false,5,,,,,,,,,\n".to_owned(),
                Some("owner".to_owned())
            )
        );
    }

    proptest::proptest! {
        /// What the CSV export writes, the CSV import reads back into the
        /// same key and document, whatever the notes and times hold.
        #[test]
        fn csv_records_read_back(
            key in "[A-Za-z0-9][A-Za-z0-9_-]{0,8}(/[A-Za-z0-9_-]{1,5})?",
            inactive: bool,
            notes in "[a-z ,\"\r\n\u{e9}]{0,40}",
            created in proptest::option::of(0i64..4_000_000_000),
            fallback in proptest::option::of("https://[a-z]{1,8}\\.example/[a-z,]{0,8}"),
            title in "[a-z ,\"\u{e9}\u{1f39f}]{0,40}",
            rules in proptest::option::of(0usize..3),
        ) {
            let mut fields = serde_json::Map::new();
            fields.insert("url".into(), json!("https://example.com/a,\"b\""));
            fields.insert("inactive".into(), json!(inactive));
            let notes = crate::link::Notes::parse(&notes).unwrap();
            if !notes.as_str().is_empty() {
                fields.insert("notes".into(), json!(notes.as_str()));
            }
            if let Some(t) = created {
                let t = chrono::DateTime::from_timestamp(t, 0).unwrap();
                fields.insert("created_at".into(), json!(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)));
            }
            if let Some(f) = fallback {
                fields.insert("fallback_url".into(), json!(f));
            }
            let title = crate::link::Title::parse(&title).unwrap();
            if !title.is_empty() {
                fields.insert("title".into(), json!(title.as_str()));
            }
            // Issue 34: rules, in the cell as their JSON array.
            if let Some(n) = rules {
                let rules: Vec<Value> = [
                    json!({"url": "https://example.com/a,\"b\"", "os": ["ios"]}),
                    json!({"url": "https://example.com/lunch", "days": ["mon", "fri"],
                           "hours": ["11:00", "15:00"], "tz": "Europe/Dublin"}),
                    json!({"url": "https://example.com/b", "split": [50, 100], "lang": ["pt-BR"]}),
                ][..=n].to_vec();
                fields.insert("rules".into(), Value::Array(rules));
            }
            let d = doc(Value::Object(fields));
            let mut file = Vec::new();
            write_csv_header(&mut file).unwrap();
            proptest::prop_assert_eq!(write_csv(&mut file, &key, &d).unwrap(), None);
            let mut read = Vec::new();
            super::super::parse::read(file.as_slice(), |r| read.push(r)).unwrap();
            proptest::prop_assert_eq!(read.len(), 1);
            let record = read.pop().unwrap().unwrap();
            proptest::prop_assert_eq!(record.key.as_str(), key.as_str());
            proptest::prop_assert_eq!(&record.doc, &d);
        }
    }

    #[test]
    fn a_stray_id_field_does_not_repeat_the_key() {
        let d = doc(json!({"url": "/x", "_id": "other"}));
        assert_eq!(line("k", &d), "{\"_id\":\"k\",\"url\":\"/x\"}\n");
    }
}

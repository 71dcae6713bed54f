use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::transfer::export;

/// Every record and bad line of `input`, as `Ok((line, key, document))` or
/// `Err("line N: message")`.
type Item = Result<(u64, String, Value), String>;

fn read_all(input: &str) -> (Option<Format>, Vec<Item>) {
    let mut out = Vec::new();
    let format = read(input.as_bytes(), |r| {
        out.push(
            r.map(|r| (r.line, r.key.to_string(), Value::Object(r.doc)))
                .map_err(|e| e.to_string()),
        )
    })
    .expect("reading memory cannot fail");
    (format, out)
}

fn one_error(input: &str) -> String {
    let (_, items) = read_all(input);
    let errors: Vec<String> = items.into_iter().filter_map(Result::err).collect();
    assert_eq!(errors.len(), 1, "{input:?}: {errors:?}");
    errors[0].clone()
}

#[test]
fn the_first_non_blank_line_decides_the_format() {
    assert_eq!(Format::detect(b"{\"_id\": \"a\"}"), Format::JsonLines);
    assert_eq!(Format::detect(b"  {"), Format::JsonLines);
    assert_eq!(Format::detect(b"key,url"), Format::Csv);
    assert_eq!(Format::detect(b"[1]"), Format::Csv);
    assert_eq!(read_all("").0, None);
    assert_eq!(read_all("\n  \r\n\t\n").0, None);
    assert_eq!(
        read_all("\n\n{\"_id\":\"a\",\"url\":\"/a\"}\n").0,
        Some(Format::JsonLines)
    );
    assert_eq!(read_all("\nkey,url\n").0, Some(Format::Csv));
}

#[test]
fn json_lines_keep_every_field_in_order_without_id_and_rev() {
    let (_, items) = read_all(concat!(
        "{\"_id\":\"abcde\",\"url\":\"https://a.example/\",\"inactive\":false,\"note\":\"kept\"}\n",
        "\n",
        "{\"url\":\"/x\",\"_id\":\"docs/api\",\"_rev\":\"3-abc\",\"z\":1,\"a\":{\"n\":[1,2]},\"expires\":\"2030-01-01T00:00:00Z\"}\r\n",
        "   \n",
        "  {\"_id\": \"last\", \"url\": \"/l\"}  ",
    ));
    let items: Vec<_> = items.into_iter().map(|r| r.expect("valid")).collect();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0].0, 1);
    assert_eq!(items[0].1, "abcde");
    assert_eq!(
        items[0].2.to_string(),
        r#"{"url":"https://a.example/","inactive":false,"note":"kept"}"#
    );
    assert_eq!((items[1].0, items[1].1.as_str()), (3, "docs/api"));
    assert_eq!(
        items[1].2.to_string(),
        r#"{"url":"/x","z":1,"a":{"n":[1,2]},"expires":"2030-01-01T00:00:00Z"}"#,
        "field order kept around the removed _id and _rev"
    );
    assert_eq!((items[2].0, items[2].1.as_str()), (5, "last"));
}

#[test]
fn a_byte_order_mark_is_skipped() {
    let (f, items) = read_all("\u{feff}{\"_id\":\"a\",\"url\":\"/a\"}\n");
    assert_eq!(f, Some(Format::JsonLines));
    assert!(items[0].is_ok(), "{items:?}");
    let (f, items) = read_all("\u{feff}key,url\r\nabc,/a\r\n");
    assert_eq!(f, Some(Format::Csv));
    assert_eq!(
        items,
        [Ok((
            2,
            "abc".into(),
            json!({"url": "/a", "inactive": false})
        ))]
    );
}

#[test]
fn bad_json_lines_name_the_line_and_the_reason() {
    let cases = [
        (
            "{\"_id\":\"a\",\"url\":\"/a\"",
            "line 1: not valid JSON: EOF while parsing an object (column 21)",
        ),
        (
            "{\"_id\":\"a\",\"url\":\"/a\"} x",
            "line 1: not valid JSON: trailing characters (column 24)",
        ),
        (
            "{\"_id\":\"a\",\"url\":\"/a\",}",
            "line 1: not valid JSON: trailing comma (column 23)",
        ),
        (
            "{\"url\":\"/a\"}",
            "line 1: no \"_id\": every line needs the link's key as \"_id\"",
        ),
        (
            "{\"_id\":5,\"url\":\"/a\"}",
            "line 1: \"_id\" must be a string",
        ),
        (
            "{\"_id\":\"a\",\"url\":\"/a\",\"_attachments\":{}}",
            "line 1: the field \"_attachments\" is CouchDB metadata",
        ),
        (
            "{\"_id\":\"a\",\"url\":\"/a\",\"_deleted\":true}",
            "line 1: the field \"_deleted\" is CouchDB metadata",
        ),
        (
            "{\"_id\":\"a\"}",
            "line 1: not a valid link: no \"url\" string",
        ),
        (
            "{\"_id\":\"a\",\"url\":\"javascript:alert(1)\"}",
            "line 1: not a valid link: bad \"url\": not an absolute http(s) URL",
        ),
        (
            "{\"_id\":\"a\",\"url\":\"//evil.example/\"}",
            "line 1: not a valid link: bad \"url\": a destination path must start with exactly one '/'",
        ),
        (
            "{\"_id\":\"a\",\"url\":\"/a\",\"inactive\":\"no\"}",
            "line 1: not a valid link: \"inactive\" must be true or false",
        ),
        (
            "{\"_id\":\"a\",\"url\":\"/a\",\"expires\":\"soon\"}",
            "line 1: not a valid link: \"expires\" must be an RFC 3339 time",
        ),
    ];
    for (input, want) in cases {
        let got = one_error(input);
        assert!(got.starts_with(want), "{input}: {got}");
    }
    for input in ["[1,2]", "\"abc\"", "null", "5"] {
        let got = one_error(&format!("{{\"_id\":\"a\",\"url\":\"/a\"}}\n{input}\n"));
        assert_eq!(got, "line 2: not a JSON object", "{input}");
    }
    for key in ["a b", "_design/x", "a//b", "", "é"] {
        let got = one_error(&format!(
            "{{\"_id\":{},\"url\":\"/a\"}}",
            Value::String(key.into())
        ));
        assert!(
            got.starts_with("line 1: bad key: a key is 1 to 64 characters"),
            "{got}"
        );
    }
    // Not UTF-8 inside a string.
    let mut errors = Vec::new();
    read(&b"{\"_id\":\"a\",\"url\":\"/\xff\"}\n"[..], |r| {
        errors.extend(r.err())
    })
    .expect("read");
    assert!(
        matches!(
            &errors[..],
            [LineError {
                line: 1,
                problem: Problem::Json(_)
            }]
        ),
        "{errors:?}"
    );
}

#[test]
fn every_line_is_read_after_a_bad_one() {
    let (_, items) = read_all(
        "{\"_id\":\"a\",\"url\":\"/a\"}\nnope\n\n{\"_id\":\"b\",\"url\":\"/b\"}\n{\"_id\":\"c\"}\n",
    );
    let lines: Vec<(u64, bool)> = items
        .iter()
        .map(|r| match r {
            Ok((l, _, _)) => (*l, true),
            Err(e) => (
                e.split(':')
                    .next()
                    .and_then(|s| s.strip_prefix("line "))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0),
                false,
            ),
        })
        .collect();
    assert_eq!(lines, [(1, true), (2, false), (4, true), (5, false)]);
}

#[test]
fn csv_with_a_header_in_any_order_and_case() {
    let (f, items) = read_all(concat!(
        "URL, Key ,inactive,Expires\n",
        "https://a.example/one,abcde,,\n",
        "/two , docs/api , TRUE , 2030-01-01T00:00:00Z\n",
        "\n",
        "\"https://a.example/?a=1,2\",q1,0,\n",
        "https://a.example/x,q2,1,\n",
        "https://a.example/y,q3,False,\n",
    ));
    assert_eq!(f, Some(Format::Csv));
    let items: Vec<_> = items.into_iter().map(|r| r.expect("valid")).collect();
    assert_eq!(
        items,
        [
            (
                2,
                "abcde".into(),
                json!({"url": "https://a.example/one", "inactive": false})
            ),
            (
                3,
                "docs/api".into(),
                json!({"url": "/two", "inactive": true, "expires": "2030-01-01T00:00:00Z"})
            ),
            (
                5,
                "q1".into(),
                json!({"url": "https://a.example/?a=1,2", "inactive": false})
            ),
            (
                6,
                "q2".into(),
                json!({"url": "https://a.example/x", "inactive": true})
            ),
            (
                7,
                "q3".into(),
                json!({"url": "https://a.example/y", "inactive": false})
            ),
        ]
    );
    assert_eq!(
        Value::Object(read_records_docs("key,url\nk,/a\n").remove(0)).to_string(),
        r#"{"url":"/a","inactive":false}"#,
        "the field order qrtag new writes"
    );
}

fn read_records_docs(input: &str) -> Vec<Document> {
    let mut docs = Vec::new();
    read(input.as_bytes(), |r| docs.extend(r.ok().map(|r| r.doc))).expect("read");
    docs
}

#[test]
fn csv_records_are_numbered_by_the_line_they_start_on() {
    let (_, items) = read_all("key,url\n\"a\nb\",/x\nk2,/y\n");
    assert!(
        items[0]
            .as_ref()
            .is_err_and(|e| e.starts_with("line 2: bad key")),
        "{items:?}"
    );
    assert_eq!(
        items[1],
        Ok((4, "k2".into(), json!({"url": "/y", "inactive": false})))
    );
}

#[test]
fn bad_csv_names_the_line_and_the_reason() {
    let cases = [
        (
            "abcde,https://a.example/\n",
            "line 1: bad CSV header: it must name the column url (optional: key, inactive, expires, notes, created_at, changed_at, deleted_at, fallback_url, title, created_via, changed_via, rules); found \"abcde,https://a.example/\"",
        ),
        (
            "key,link\nk,/a\n",
            "line 1: bad CSV header: it must name the column url",
        ),
        (
            "key,url,note\nk,/a,x\n",
            "line 1: bad CSV header: unknown column \"note\" (the columns are key, url, inactive, expires, notes, created_at, changed_at, deleted_at, fallback_url, title, created_via, changed_via, rules)",
        ),
        (
            "key,url,URL\n",
            "line 1: bad CSV header: the column \"URL\" is named twice",
        ),
        (
            "key,url\nk,/a,extra\n",
            "line 2: expected 2 fields, as in the header, found 3",
        ),
        (
            "key,url,inactive\nk,/a\n",
            "line 2: expected 3 fields, as in the header, found 2",
        ),
        (
            "key,url,inactive\nk,/a,yes\n",
            "line 2: \"inactive\" must be true, false, 1, 0 or empty, not \"yes\"",
        ),
        (
            "key,url\nk,ftp://a.example/\n",
            "line 2: not a valid link: bad \"url\": not an absolute http(s) URL",
        ),
        (
            "key,url\nk,\n",
            "line 2: not a valid link: bad \"url\": a destination must not be empty",
        ),
        (
            "key,url\n_design/x,/a\n",
            "line 2: bad key: a key is 1 to 64",
        ),
        (
            "key,url,expires\nk,/a,tomorrow\n",
            "line 2: not a valid link: \"expires\" must be an RFC 3339 time",
        ),
    ];
    for (input, want) in cases {
        let got = one_error(input);
        assert!(got.starts_with(want), "{input:?}: {got}");
    }
    let mut errors = Vec::new();
    read(&b"key,url\nk\xff,/a\n"[..], |r| errors.extend(r.err())).expect("read");
    assert_eq!(errors, [LineError::new(2, Problem::NotUtf8)]);
}

#[test]
fn inactive_spellings() {
    for (s, want) in [
        ("", Some(false)),
        ("0", Some(false)),
        ("false", Some(false)),
        ("FALSE", Some(false)),
        ("1", Some(true)),
        ("true", Some(true)),
        ("True", Some(true)),
        ("yes", None),
        ("2", None),
        ("t", None),
    ] {
        assert_eq!(parse_inactive(s), want, "{s:?}");
    }
}

fn key_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec("[A-Za-z0-9-][A-Za-z0-9_-]{0,9}", 1..4).prop_map(|segs| segs.join("/"))
}

fn json_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn doc_strategy() -> impl Strategy<Value = Document> {
    let url = prop_oneof![
        Just("https://a.example/".to_owned()),
        "/[a-z0-9/]{0,12}".prop_filter("one leading slash", |s| !s.starts_with("//")),
        "[a-z]{1,8}".prop_map(|h| format!("http://{h}.example/p?q=1#f")),
    ];
    let expires = prop::option::of(Just("2030-01-01T00:00:00Z".to_owned()));
    let extra = prop::collection::vec(("[a-z][a-zA-Z0-9_ é]{0,8}", json_strategy()), 0..5);
    (
        url,
        prop::option::of(any::<bool>()),
        expires,
        extra,
        any::<prop::sample::Index>(),
    )
        .prop_map(|(url, inactive, expires, extra, at)| {
            let mut fields: Vec<(String, Value)> = extra
                .into_iter()
                .filter(|(k, _)| !["url", "inactive", "expires", "rules"].contains(&k.as_str()))
                .collect();
            let mut own = vec![("url".to_owned(), Value::String(url))];
            own.extend(inactive.map(|b| ("inactive".to_owned(), Value::Bool(b))));
            own.extend(expires.map(|e| ("expires".to_owned(), Value::String(e))));
            // qrtag's own fields anywhere among the others.
            let pos = at.index(fields.len() + 1);
            fields.splice(pos..pos, own);
            fields.into_iter().collect()
        })
}

proptest! {
    #[test]
    fn an_export_line_reads_back_as_the_same_key_and_document(
        key in key_strategy(),
        doc in doc_strategy(),
        line_no in 1u64..1_000_000,
    ) {
        let key = LinkKey::parse(&key).expect("the strategy makes valid keys");
        let text = export::line(key.as_str(), &doc);
        prop_assert!(text.ends_with('\n') && !text[..text.len() - 1].contains('\n'));
        let record = json_line(line_no, text.as_bytes()).expect("an exported line is importable");
        prop_assert_eq!(record.line, line_no);
        prop_assert_eq!(&record.key, &key);
        let got: Vec<&String> = record.doc.keys().collect();
        let want: Vec<&String> = doc.keys().collect();
        prop_assert_eq!(got, want, "field order");
        prop_assert_eq!(&record.doc, &doc);
        // And the line written again is the same bytes.
        prop_assert_eq!(export::line(record.key.as_str(), &record.doc), text);
    }

    #[test]
    fn no_input_makes_the_reader_fail_or_panic(input in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut n = 0;
        prop_assert!(read(&input[..], |_| n += 1).is_ok());
    }
}

#[test]
fn crlf_and_lone_cr_line_ends() {
    let (_, items) = read_all("key,url\r\nk1,/a\r\n\r\n\r\nk2,/b\r\n\"a\r\nb\",/x\r\nk3,/y\r\n");
    let lines: Vec<u64> = items
        .iter()
        .map(|r| match r {
            Ok((l, _, _)) => *l,
            Err(e) => e
                .split(':')
                .next()
                .and_then(|s| s.strip_prefix("line "))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
        })
        .collect();
    assert_eq!(lines, [2, 5, 6, 8]);
    let (_, items) = read_all("key,url\rk1,/a\rk2,/b");
    assert_eq!(
        items,
        [
            Ok((1, "k1".into(), json!({"url": "/a", "inactive": false}))),
            Ok((1, "k2".into(), json!({"url": "/b", "inactive": false})))
        ],
        "old Mac line ends: one physical line"
    );
}

#[test]
fn a_last_csv_record_without_a_line_end_is_read() {
    let (_, items) = read_all("key,url\nk1,/a");
    assert_eq!(
        items,
        [Ok((
            2,
            "k1".into(),
            json!({"url": "/a", "inactive": false})
        ))]
    );
    let (_, items) = read_all("key,url\nk1,\"/a");
    assert_eq!(
        items,
        [Ok((
            2,
            "k1".into(),
            json!({"url": "/a", "inactive": false})
        ))],
        "an unclosed quote ends at the end of input"
    );
}

#[test]
fn whitespace_only_lines_between_csv_records_are_blank() {
    let (_, items) = read_all("key,url\n  \t \nk1,/a\n \n");
    assert_eq!(
        items,
        [Ok((
            3,
            "k1".into(),
            json!({"url": "/a", "inactive": false})
        ))]
    );
}

#[test]
fn long_csv_fields_grow_the_buffers() {
    let url = format!("https://a.example/{}", "x".repeat(5000));
    let (_, items) = read_all(&format!("key,url\nk1,{url}\n"));
    assert_eq!(
        items,
        [Ok((2, "k1".into(), json!({"url": url, "inactive": false})))]
    );
    let got = one_error(&format!("key,url\nk1,/a{}\n", ",".repeat(20)));
    assert_eq!(got, "line 2: expected 2 fields, as in the header, found 22");
}

#[test]
fn a_line_cut_short_is_reported_at_its_end() {
    assert_eq!(
        one_error("{\"_id\":\"a\",\"url\":\"/a\"}\n{\"_id\":\"b\",\"url\":\"/b\"\r\n"),
        "line 2: not valid JSON: EOF while parsing an object (column 21)"
    );
}

#[test]
fn csv_takes_every_field_the_store_keeps() {
    let csv = "key,url,notes,created_at,expires\n\
               k1,/a,\" bus stop, Main St \",2026-01-02T03:04:05Z,\n\
               k2,/b,,,2030-01-01T00:00:00Z\n\
               k3,/c,x,yesterday,\n";
    let mut got = Vec::new();
    read(csv.as_bytes(), |r| got.push(r)).expect("read");
    let ok: Vec<_> = got.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(ok.len(), 2);
    assert_eq!(
        serde_json::Value::Object(ok[0].doc.clone()),
        json!({"url": "/a", "inactive": false, "notes": "bus stop, Main St", "created_at": "2026-01-02T03:04:05Z"})
    );
    assert_eq!(
        serde_json::Value::Object(ok[1].doc.clone()),
        json!({"url": "/b", "inactive": false, "expires": "2030-01-01T00:00:00Z"})
    );
    let bad = got.iter().find_map(|r| r.as_ref().err()).expect("k3");
    assert_eq!(
        bad.to_string(),
        "line 4: not a valid link: \"created_at\" must be an RFC 3339 time, e.g. 2026-12-31T23:59:59Z"
    );
}

/// Issue 31: a host with capitals is imported in lower case, as every
/// writer stores it, from CSV and JSON lines alike.
#[test]
fn a_host_with_capitals_is_imported_in_lower_case() {
    for input in [
        "key,url\nmenu,https://Venue.example.com/Menu\n",
        "{\"_id\":\"menu\",\"url\":\"https://Venue.example.com/Menu\"}\n",
    ] {
        let docs = read_records_docs(input);
        assert_eq!(docs.len(), 1, "{input}");
        assert_eq!(docs[0]["url"], "https://venue.example.com/Menu", "{input}");
    }
}

/// Issue 31: a CSV of destinations alone, or a row with an empty key, gets
/// a drawn key (a `ShortId`, as `qrtag new` draws), marked as drawn.
#[test]
fn a_csv_without_keys_draws_them() {
    let mut records = Vec::new();
    let input = "url,notes\nhttps://example.com/a,front door\n/b,\n";
    read(input.as_bytes(), |r| records.push(r.expect("a record"))).expect("read");
    assert_eq!(records.len(), 2);
    for r in &records {
        assert!(r.drawn, "{r:?}");
        assert!(
            crate::values::short_id::ShortId::parse(r.key.as_str()).is_ok(),
            "{r:?}"
        );
    }
    assert_ne!(records[0].key, records[1].key);
    assert_eq!(records[0].doc["notes"], "front door");
    let mut records = Vec::new();
    let input = "key,url\nmine,/a\n,/b\n";
    read(input.as_bytes(), |r| records.push(r.expect("a record"))).expect("read");
    assert_eq!(records[0].key.as_str(), "mine");
    assert!(!records[0].drawn);
    assert!(records[1].drawn);
    // JSON lines name their keys: `_id` is still required.
    assert!(one_error("{\"url\":\"/a\"}\n").contains("_id"));
}

// --- Issue 34: a link's rules ---

/// Rules come in as stored, from JSON lines and from the CSV's `rules`
/// cell (their JSON array), a destination's host lowered as `url`'s is;
/// an empty list is no field.
#[test]
fn rules_are_read_from_json_lines_and_csv() {
    let rules = json!([{"url": "https://Apps.Apple.com/app/id1", "os": ["ios"]},
                       {"url": "https://example.com/b", "split": [50, 100]}]);
    let stored = json!([{"url": "https://apps.apple.com/app/id1", "os": ["ios"]},
                        {"url": "https://example.com/b", "split": [50, 100]}]);
    let line = json!({"_id": "menu", "url": "https://example.com/", "rules": rules});
    let mut cell = Vec::new();
    export::write_csv_header(&mut cell).expect("memory");
    let mut doc = Document::new();
    doc.insert("url".into(), json!("https://example.com/"));
    doc.insert("rules".into(), rules.clone());
    export::write_csv(&mut cell, "menu", &doc).expect("memory");
    let csv = String::from_utf8(cell).expect("utf-8");
    for input in [format!("{line}\n"), csv] {
        let docs = read_records_docs(&input);
        assert_eq!(docs.len(), 1, "{input}");
        assert_eq!(docs[0]["rules"], stored, "{input}");
    }
    for input in [
        "{\"_id\":\"menu\",\"url\":\"/x\",\"rules\":[]}\n",
        "key,url,rules\nmenu,/x,[]\n",
        "key,url,rules\nmenu,/x,\n",
    ] {
        let docs = read_records_docs(input);
        assert_eq!(docs.len(), 1, "{input}");
        assert!(docs[0].get("rules").is_none(), "{input}: {:?}", docs[0]);
    }
}

/// A bad rule refuses its line, naming the field in the core's words, as a
/// bad `url` does; the lines around it are read.
#[test]
fn a_bad_rule_refuses_its_line_naming_the_field() {
    let window =
        r#"{"url":"https://example.com/x","hours":["11:00","11:00"],"tz":"Europe/Dublin"}"#;
    let input = format!(
        "{{\"_id\":\"a\",\"url\":\"/a\"}}\n\
         {{\"_id\":\"b\",\"url\":\"/b\",\"rules\":[{window}]}}\n\
         {{\"_id\":\"c\",\"url\":\"/c\",\"rules\":{{\"os\":[\"ios\"]}}}}\n"
    );
    let (_, items) = read_all(&input);
    let errors: Vec<&String> = items.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(
        errors,
        [
            "line 2: rules[0].hours: start and end are the same time: the window would be empty",
            "line 3: rules: must be an array of rules"
        ]
    );
    assert_eq!(items.len(), 3);
    assert_eq!(
        one_error("key,url,rules\nk,/a,\"[{\"\"url\"\":\"\"/p\"\",\"\"os\"\":[\"\"ios\"\"]}]\"\n"),
        "line 2: rules[0].url: must be an absolute http(s) URL (https://...), not a path"
    );
    assert!(
        one_error("key,url,rules\nk,/a,[{\n").starts_with("line 2: rules: not valid JSON: "),
        "a cell that is not JSON"
    );
    // A country rule is kept as stored, whatever this machine has.
    let docs = read_records_docs(
        "{\"_id\":\"ie\",\"url\":\"/a\",\"rules\":[{\"url\":\"https://example.ie/\",\"country\":[\"IE\"]}]}\n",
    );
    assert_eq!(docs.len(), 1);
}

//! Issue 34: every writer that rewrites a stored document keeps the link's
//! `rules`: `qrtag set`, `disable`, `enable` (the real binary), the
//! console's bulk actions (`links::bulk::edit`) and a DIDComm invalidation
//! (`InvalidatePlan::apply` through `links::update`, as the API listener
//! writes it). The REST API's PATCH is checked in `tests/rest_rules.rs`.

mod support;

use std::path::Path;
use std::process::Output;

use qrtag::link::{self, Author, Document, Via};
use qrtag::store::LinkStore;
use qrtag::values::link_key::LinkKey;
use serde_json::{Value, json};
use support::qrtag_cmd;

/// One of the console's bulk edits.
type Edit = Box<dyn Fn(&mut Document)>;

fn rules() -> Value {
    json!([
        {"url": "https://apps.apple.com/app/id1", "os": ["ios", "ipados"]},
        {"url": "https://example.com/lunch", "days": ["mon", "fri"], "hours": ["11:00", "15:00"],
         "tz": "Europe/Dublin"},
        {"url": "https://example.com/b", "split": [50, 100]}
    ])
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The stored document of `key`, from `qrtag export`.
fn stored(db: &Path, key: &str) -> Value {
    ok(qrtag_cmd(db, &["export"]))
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .find(|d| d["_id"] == key)
        .unwrap_or_else(|| panic!("{key} exported"))
}

#[test]
fn cli_edits_keep_a_links_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    let file = dir.path().join("menu.jsonl");
    let line = json!({"_id": "menu", "url": "https://example.com/", "rules": rules()});
    std::fs::write(&file, format!("{line}\n")).expect("write");
    ok(qrtag_cmd(&db, &["import", file.to_str().expect("utf-8")]));
    for args in [
        &[
            "set",
            "menu",
            "https://example.com/new",
            "--title",
            "Menu",
            "--notes",
            "at the door",
        ][..],
        &["disable", "menu"],
        &["enable", "menu"],
        &["set", "menu", "--expires", "2099-01-01T00:00:00Z"],
    ] {
        ok(qrtag_cmd(&db, args));
        let doc = stored(&db, "menu");
        assert_eq!(doc["rules"], rules(), "after {args:?}: {doc}");
    }
    assert_eq!(stored(&db, "menu")["url"], "https://example.com/new");
}

#[tokio::test]
async fn bulk_edits_and_a_didcomm_invalidation_keep_a_links_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = qrtag::store::sqlite::SqliteStore::open(&dir.path().join("q.db")).expect("store");
    let key = LinkKey::parse("menu").expect("key");
    let url = qrtag::values::destination::Destination::parse("https://example.com/").expect("url");
    let mut doc = link::Link::new_document(&url, false);
    doc.insert("rules".into(), rules());
    qrtag::links::create_document(
        &store,
        &Author::cli(Via::Api, "test", "host"),
        &doc,
        Some(&key),
    )
    .await
    .expect("created");
    let rules_now = |doc: &Document| doc.get("rules").cloned().unwrap_or(Value::Null);

    let moved =
        qrtag::values::destination::Destination::parse("https://example.com/moved").expect("url");
    let edits: [Edit; 3] = [
        Box::new(|d| link::set_inactive(d, true)),
        Box::new(move |d| link::set_url(d, &moved)),
        Box::new(|d| link::set_expires(d, None)),
    ];
    for edit in &edits {
        let outcome = qrtag::links::bulk::edit(
            &store,
            &Author::cli(Via::Console, "test", "host"),
            &key,
            |d| edit(d),
        )
        .await;
        assert!(
            matches!(
                outcome,
                qrtag::links::bulk::Outcome::Done | qrtag::links::bulk::Outcome::Unchanged
            ),
            "{outcome:?}"
        );
        let now = store.get(&key).await.expect("read").expect("there");
        assert_eq!(rules_now(&now.doc), rules());
    }

    let plan = qrtag::didcomm::protocol::InvalidatePlan {
        key: key.clone(),
        by: "did:peer:2.example".into(),
        at: chrono::Utc::now(),
        ack: Value::Null,
    };
    let written = qrtag::links::update(
        &store,
        &Author::cli(Via::Didcomm, "test", "host"),
        &key,
        |d| plan.apply(d),
    )
    .await
    .expect("invalidated");
    assert_eq!(
        written.get("invalidated_by"),
        Some(&json!("did:peer:2.example"))
    );
    let now = store.get(&key).await.expect("read").expect("there");
    assert_eq!(rules_now(&now.doc), rules());
}

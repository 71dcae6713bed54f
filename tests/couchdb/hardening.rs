//! Issue 30 on CouchDB (PouchDB Server): the validation's length caps, and
//! a parent and its child created at once through the REST API, where
//! the store has no transaction to check and write in.

use std::collections::HashMap;
use std::time::Duration;

use qrtag::server::api::ApiSettings;
use serde_json::{Value, json};

use crate::harness::{Couch, TestApp, couch_settings, qrtag, stderr, stdout};
use crate::pouchdb::PouchDb;

async fn new_key(url: &str, scope: &str) -> String {
    let out = qrtag(
        &["api-key", "create", "--name", "test", "--scope", scope],
        &[("QRTAG_COUCHDB_URL", url)],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).trim().to_owned()
}

/// The sequence number a `_changes` row names (PouchDB: a number; CouchDB:
/// `N-…`).
fn seq_number(seq: &Value) -> u64 {
    seq.as_u64()
        .or_else(|| seq.as_str()?.split('-').next()?.parse().ok())
        .expect("a sequence number")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caps_hold_on_couchdb_and_a_child_is_never_written_after_its_parent() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let out = qrtag(&["setup"], &[("QRTAG_COUCHDB_URL", &url)]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let couch = Couch::new(&url, "links");

    // Written directly: the validation holds the same caps as the service.
    let cap = qrtag::values::destination::MAX_DESTINATION;
    let head = "https://example.com/";
    let at_cap = format!("{head}{}", "x".repeat(cap - head.len()));
    let (status, body) = couch.try_put("atcap", json!({ "url": at_cap })).await;
    assert_eq!(status, 201, "{body}");
    for (id, doc) in [
        ("over", json!({ "url": format!("{at_cap}x") })),
        (
            "wide",
            json!({ "url": format!("/{}", "ü".repeat(cap / 2)) }),
        ),
        (
            "huge",
            json!({ "url": format!("{head}{}", "x".repeat(4 << 20)) }),
        ),
        (
            "thid",
            json!({"url": "/x", "thid": "t".repeat(qrtag::link::MAX_TEXT + 1)}),
        ),
        (
            "notes",
            json!({"url": "/x", "notes": "é".repeat(qrtag::link::MAX_NOTES + 1)}),
        ),
    ] {
        let (status, body) = couch.try_put(id, doc).await;
        assert_eq!(status, 403, "{id}: {body}");
        assert!(
            body["reason"]
                .as_str()
                .is_some_and(|r| r.contains("at most")),
            "{id}: {body}"
        );
    }
    let (status, body) = couch
        .try_put(
            "fits",
            json!({"url": "/x", "notes": "é".repeat(qrtag::link::MAX_NOTES), "thid": "t".repeat(qrtag::link::MAX_TEXT)}),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    let write = new_key(&url, "write").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let app = TestApp::spawn_with(couch_settings(&url, "links"), dir.path(), |settings| {
        let mut api = ApiSettings::new("127.0.0.1:0", dir.path().join("didcomm-keys.json"));
        api.rate_per_second = 1_000_000;
        settings.api = Some(api);
    })
    .await;
    app.wait_ready(Duration::from_secs(20)).await;
    let api = app.api();
    let client = reqwest::Client::new();
    let post = |body: Value| {
        client
            .post(format!("{api}/links"))
            .bearer_auth(&write)
            .json(&body)
            .send()
    };
    let trials = 100;
    let mut children = 0;
    for i in 0..trials {
        let (p, c) = tokio::join!(
            post(json!({"url": "https://example.com/p", "key": format!("race{i}")})),
            post(json!({"url": "https://example.com/c", "key": format!("race{i}/c")}))
        );
        assert_eq!(p.expect("request").status().as_u16(), 201);
        match c.expect("request").status().as_u16() {
            201 => children += 1,
            409 => {}
            other => panic!("child {i}: {other}"),
        }
    }

    // Each document's last change: a child taken back is deleted there.
    let (status, changes) = couch
        .call(reqwest::Method::GET, "links/_changes?since=0", None)
        .await;
    assert_eq!(status, 200);
    let mut last: HashMap<String, (u64, bool)> = HashMap::new();
    for row in changes["results"].as_array().expect("results") {
        let id = row["id"].as_str().expect("id").to_owned();
        let deleted = row["deleted"].as_bool().unwrap_or(false);
        last.insert(id, (seq_number(&row["seq"]), deleted));
    }
    let live = |id: &str| {
        last.get(id)
            .filter(|(_, deleted)| !deleted)
            .map(|(s, _)| *s)
    };
    let mut late = Vec::new();
    let mut stored = 0;
    for i in 0..trials {
        if let (Some(p), Some(c)) = (live(&format!("race{i}")), live(&format!("race{i}/c"))) {
            stored += 1;
            if c > p {
                late.push(i);
            }
        }
    }
    assert!(
        late.is_empty(),
        "children written after their parent: {late:?} ({children} answered 201, {stored} stored)"
    );
    assert_eq!(children, stored, "every child answered 201 is kept");
}

/// Issue 33: the validation holds a title to a string of at most
/// `MAX_TITLE` characters, counted as code points as Rust counts them: 200
/// emoji (400 UTF-16 units) fit, 201 do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_validation_counts_a_title_in_characters() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let out = qrtag(&["setup"], &[("QRTAG_COUCHDB_URL", &url)]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let couch = Couch::new(&url, "links");
    let max = qrtag::link::MAX_TITLE;
    for (id, doc, want) in [
        ("emoji", json!({"url": "/x", "title": "🎟".repeat(max)}), 201),
        ("plain", json!({"url": "/x", "title": "x".repeat(max)}), 201),
        ("none", json!({"url": "/x", "title": null}), 201),
        (
            "over",
            json!({"url": "/x", "title": "🎟".repeat(max + 1)}),
            403,
        ),
        (
            "overx",
            json!({"url": "/x", "title": "x".repeat(max + 1)}),
            403,
        ),
        ("number", json!({"url": "/x", "title": 5}), 403),
        ("list", json!({"url": "/x", "title": ["a"]}), 403),
    ] {
        let (status, body) = couch.try_put(id, doc).await;
        assert_eq!(status, want, "{id}: {body}");
        if want == 403 {
            let reason = body["reason"].as_str().unwrap_or_default();
            assert!(reason.contains("\"title\""), "{id}: {body}");
        }
    }
}

/// Issue 33: `created_via` and `changed_via` hold one of the surfaces'
/// names or nothing; the validation and the import's check
/// (`link::check_via`) give the same verdict on each document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_validation_takes_only_a_surface_name_as_via() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let out = qrtag(&["setup"], &[("QRTAG_COUCHDB_URL", &url)]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let couch = Couch::new(&url, "links");
    let mut cases: Vec<(String, serde_json::Value, u16)> = qrtag::link::Via::ALL
        .iter()
        .map(|v| {
            let doc = json!({"url": "/x", "created_via": v.as_str(), "changed_via": v.as_str()});
            (format!("ok-{v}"), doc, 201)
        })
        .collect();
    for (id, doc, want) in [
        ("none", json!({"url": "/x", "created_via": null}), 201),
        ("rest", json!({"url": "/x", "changed_via": "rest"}), 403),
        ("caps", json!({"url": "/x", "created_via": "Console"}), 403),
        ("empty", json!({"url": "/x", "created_via": ""}), 403),
        ("number", json!({"url": "/x", "changed_via": 1}), 403),
        ("list", json!({"url": "/x", "created_via": ["cli"]}), 403),
    ] {
        cases.push((id.to_owned(), doc, want));
    }
    for (id, doc, want) in cases {
        let local = qrtag::link::check_via(doc.as_object().expect("object"));
        assert_eq!(local.is_ok(), want == 201, "{id}: check_via {local:?}");
        let (status, body) = couch.try_put(&id, doc).await;
        assert_eq!(status, want, "{id}: {body}");
        if want == 403 {
            let reason = body["reason"].as_str().unwrap_or_default();
            let words = local.err().map(|e| e.to_string()).unwrap_or_default();
            assert_eq!(
                reason,
                format!("not a qrtag link document: {words}"),
                "{id}: the same words as qrtag's own check"
            );
        }
    }
}

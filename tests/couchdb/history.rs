//! Issue 35: a link's history on CouchDB, kept in `LINKS-history` by the
//! follower of `qrtag serve`: qrtag's own writes by "cli", and a direct
//! PUT to the link document (as curl or Fauxton would) as "outside
//! qrtag" with its revision, which `qrtag revert` then undoes and a scan
//! follows; on PouchDB Server and on Apache CouchDB where present.

use std::time::Duration;

use qrtag::store::options::CouchSettings;
use qrtag::values::secret::Secret;
use serde_json::{Value, json};

use crate::apache::{ADMIN, ApacheCouch};
use crate::harness::{Couch, TestApp, couch_settings, eventually, qrtag, stderr, stdout};
use crate::pouchdb::PouchDb;

const START: Duration = Duration::from_secs(60);
/// How long the follower may take to record a change it has seen.
const RECORDED: Duration = Duration::from_secs(10);
const ONE: &str = "https://a.example/one";
const TWO: &str = "https://a.example/two";
const HAND: &str = "https://b.example/by-hand";

/// `qrtag history spring --json`, one entry a line.
async fn history(env: &[(&str, &str)]) -> Vec<Value> {
    let out = qrtag(&["history", "spring", "--json"], env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

async fn check(couch: &Couch, store: CouchSettings, env: &[(&str, &str)], server: &str) {
    let out = qrtag(&["setup"], env).await;
    assert!(out.status.success(), "{server}: {}", stderr(&out));
    assert!(
        stdout(&out).contains("database links-history (link history): created"),
        "{server}: {}",
        stdout(&out)
    );
    let app = TestApp::spawn(store).await;
    app.wait_ready(START).await;

    let out = qrtag(&["new", ONE, "--key", "spring"], env).await;
    assert!(out.status.success(), "{server}: {}", stderr(&out));
    let out = qrtag(&["set", "spring", TWO], env).await;
    assert!(out.status.success(), "{server}: {}", stderr(&out));
    eventually(RECORDED, "two entries by cli", || async {
        let h = history(env).await;
        (h.len() == 2).then_some(())
    })
    .await;

    // An outside tool repoints the tag by writing the document itself.
    let mut doc = couch.get("spring").await.expect("the link document");
    doc["url"] = json!(HAND);
    let (status, body) = couch.try_put("spring", doc).await;
    assert_eq!(status, 201, "{server}: {body}");
    let rev = body["rev"].as_str().expect("its revision").to_owned();
    assert!(rev.starts_with("3-"), "{server}: {rev}");
    let h = eventually(RECORDED, "the outside edit recorded", || async {
        let h = history(env).await;
        (h.len() == 3).then_some(h)
    })
    .await;
    for e in &h[..2] {
        assert_eq!(e["actor"]["kind"], "cli", "{server}: {e}");
    }
    assert_eq!(h[0]["kind"], "create", "{server}");
    assert_eq!(h[1]["changes"][0]["after"], TWO, "{server}");
    let outside = &h[2];
    assert_eq!(outside["n"], 3, "{server}");
    assert_eq!(
        outside["actor"],
        json!({"kind": "outside", "rev": rev}),
        "{server}"
    );
    assert_eq!(
        outside["changes"][0],
        json!({"field": "url", "before": TWO, "after": HAND}),
        "{server}"
    );
    app.wait_location("spring", Some(HAND), START).await;

    // Back to the state after entry 2; the scan follows, and the revert
    // is itself an entry.
    let out = qrtag(&["revert", "spring", "--to", "2"], env).await;
    assert!(out.status.success(), "{server}: {}", stderr(&out));
    app.wait_location("spring", Some(TWO), Duration::from_secs(1))
        .await;
    let h = eventually(RECORDED, "the revert recorded", || async {
        let h = history(env).await;
        (h.len() == 4).then_some(h)
    })
    .await;
    assert_eq!(h[3]["actor"]["kind"], "cli", "{server}: {}", h[3]);
    assert_eq!(
        h[3]["changes"][0],
        json!({"field": "url", "before": HAND, "after": TWO}),
        "{server}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pouchdb_records_an_outside_edit_and_reverts_it() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let env = [("QRTAG_COUCHDB_URL", url.as_str())];
    check(
        &Couch::new(&url, "links"),
        couch_settings(&url, "links"),
        &env,
        "PouchDB Server",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_records_an_outside_edit_and_reverts_it() {
    let Some(server) = ApacheCouch::start("apache_couchdb_records_an_outside_edit").await else {
        return;
    };
    let url = server.url();
    let env = [
        ("QRTAG_COUCHDB_URL", url.as_str()),
        ("QRTAG_COUCHDB_USER", ADMIN.0),
        ("QRTAG_COUCHDB_PASSWORD", ADMIN.1),
    ];
    let store = couch_settings(&url, "links").with_credentials(ADMIN.0, Some(Secret::new(ADMIN.1)));
    check(&server.admin(), store, &env, "Apache CouchDB").await;
}

//! Read-your-writes on CouchDB (issue 22): a DIDComm "shortened-url" reply
//! comes once the server's own follower has the new document from the
//! changes feed, so a scan sent right after it (no sleep, no retry) gets the
//! new link; the same for an invalidation.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Couch, TestApp, couch_settings};
use crate::pouchdb::PouchDb;

/// Pairs of a create and the scan right after its reply.
const PAIRS: usize = 1000;
/// Pairs of an invalidation and its scan: fewer, as each is a read and a
/// write on PouchDB Server (about 14 ms), to keep the test to seconds.
const INVALIDATIONS: usize = 200;

#[tokio::test]
async fn a_scan_right_after_a_didcomm_reply_gets_the_new_link_and_the_invalidation() {
    let pouch = PouchDb::start().await;
    Couch::new(&pouch.url(), "links").create_db().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut api = qrtag::server::api::ApiSettings::new("127.0.0.1:0", dir.path().join("keys.json"));
    api.token = Some(qrtag::values::secret::Secret::new("couch-token"));
    let app =
        TestApp::spawn_with_api(couch_settings(&pouch.url(), "links"), dir.path(), Some(api)).await;
    app.wait_ready(Duration::from_secs(20)).await;
    let didcomm = app.didcomm.clone().expect("the DIDComm listener");
    let http = reqwest::Client::new();
    let post = |body: Value| {
        http.post(&didcomm)
            .bearer_auth("couch-token")
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let started = Instant::now();
    let mut shorts = Vec::with_capacity(PAIRS);
    for i in 0..PAIRS {
        let url = format!("https://a.example/invite/{i}");
        let request = json!({
            "@type": "https://didcomm.org/shorten-url/1.0/request-shortened-url",
            "@id": format!("ryw-req-{i}"),
            "url": url,
            "goal_code": "shorten",
        });
        let reply: Value = post(request)
            .await
            .expect("the listener answers")
            .json()
            .await
            .expect("JSON");
        let short = reply["shortened_url"]
            .as_str()
            .unwrap_or_else(|| panic!("a short URL in {reply}"))
            .to_owned();
        let key = short.rsplit('/').next().expect("key").to_owned();
        assert_eq!(
            app.location(&key).await.as_deref(),
            Some(url.as_str()),
            "scan {i} of /{key}, sent right after the reply"
        );
        shorts.push((short, key));
    }
    let created = started.elapsed();
    for (i, (short, key)) in shorts.iter().take(INVALIDATIONS).enumerate() {
        let invalidate = json!({
            "@type": "https://didcomm.org/shorten-url/1.0/invalidate-shortened-url",
            "@id": format!("ryw-inv-{i}"),
            "shortened_url": short,
        });
        let ack: Value = post(invalidate)
            .await
            .expect("the listener answers")
            .json()
            .await
            .expect("JSON");
        assert_eq!(ack["status"], "OK", "{ack}");
        assert_eq!(
            app.status(key).await,
            404,
            "scan {i} of /{key}, sent right after the ack"
        );
    }
    eprintln!(
        "CouchDB: {PAIRS} create-then-scan pairs in {created:?}, {INVALIDATIONS} invalidate-then-scan pairs in {:?}",
        started.elapsed() - created
    );
}

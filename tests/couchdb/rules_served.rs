//! Issue 34: a link's rules written straight into CouchDB (as a person
//! editing the document in Fauxton would) reach every node's scans within
//! the propagation promise, on PouchDB Server and on Apache CouchDB where
//! its release is present.

use std::time::{Duration, Instant};

use qrtag::store::options::CouchSettings;
use qrtag::values::secret::Secret;
use serde_json::json;

use crate::apache::{ADMIN, ApacheCouch};
use crate::harness::{Couch, TestApp, couch_settings, eventually};
use crate::pouchdb::PouchDb;

const PROPAGATION: Duration = Duration::from_secs(1);
const START: Duration = Duration::from_secs(60);
const URL: &str = "https://a.example/poster";
const IOS: &str = "https://apps.apple.com/app/id1";
const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 \
                      (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";

/// Where an iPhone's scan of `/key` on `node` goes.
async fn iphone_location(node: &TestApp, key: &str) -> Option<String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("HTTP client");
    let resp = http
        .get(format!("{}/{key}", node.public))
        .header("user-agent", IPHONE)
        .send()
        .await
        .expect("the node answers");
    resp.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Two nodes on one database: a rule written into it is chosen by both
/// within a second, and the other scans keep the url.
async fn every_node_serves_a_rule_written_into_couchdb(couch: &Couch, store: CouchSettings) {
    couch.put("app", json!({"url": URL})).await;
    let nodes = [
        TestApp::spawn(store.clone()).await,
        TestApp::spawn(store).await,
    ];
    for node in &nodes {
        node.wait_ready(START).await;
        node.wait_location("app", Some(URL), START).await;
    }
    couch
        .put(
            "app",
            json!({"url": URL, "rules": [{"url": IOS, "os": ["ios", "ipados"]}]}),
        )
        .await;
    let written = Instant::now();
    for node in &nodes {
        eventually(
            PROPAGATION,
            "an iPhone's scan to get the iOS rule",
            || async { (iphone_location(node, "app").await.as_deref() == Some(IOS)).then_some(()) },
        )
        .await;
        // Everyone else still gets the url.
        assert_eq!(node.location("app").await.as_deref(), Some(URL));
    }
    eprintln!(
        "rules served by both nodes {:?} after the write",
        written.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_written_into_pouchdb_is_served_by_every_node_within_a_second() {
    let pouch = PouchDb::start().await;
    let couch = Couch::new(&pouch.url(), "links");
    couch.create_db().await;
    every_node_serves_a_rule_written_into_couchdb(&couch, couch_settings(&pouch.url(), "links"))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_written_into_apache_couchdb_is_served_by_every_node_within_a_second() {
    let Some(server) = ApacheCouch::start("a_rule_written_into_apache_couchdb").await else {
        return;
    };
    let url = server.url();
    let admin = server.admin();
    admin.create_db().await;
    let store = couch_settings(&url, "links").with_credentials(ADMIN.0, Some(Secret::new(ADMIN.1)));
    every_node_serves_a_rule_written_into_couchdb(&admin, store).await;
}

//! Issue 36: several domains on CouchDB, one database a domain: the same
//! key in two databases leads to two places, each followed on its own.

use std::time::Duration;

use qrtag::settings::domains::{DomainSettings, ServedDomains};
use qrtag::store::options::StoreSettings;
use qrtag::values::host::Host;
use qrtag::values::public_url::PublicUrl;
use serde_json::json;

use crate::harness::{Couch, TestApp, couch_settings, eventually};
use crate::pouchdb::PouchDb;

/// Where `/key` on `host` leads (`None`: any answer but a redirect).
async fn location(app: &TestApp, host: &str, key: &str) -> Option<String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let res = http
        .get(format!("{}/{key}", app.public))
        .header(reqwest::header::HOST, host)
        .send()
        .await
        .expect("the public listener answers");
    (res.status() == 302)
        .then(|| {
            res.headers()
                .get("location")?
                .to_str()
                .ok()
                .map(str::to_owned)
        })
        .flatten()
}

#[tokio::test]
async fn two_databases_one_key_two_destinations() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    // The default domain's `links` (H83if → https://a.example/one) ...
    let _a = Couch::with_two_links(&url).await;
    // ... and the second domain's own database, the same key elsewhere.
    let b = Couch::new(&url, "links-b");
    b.create_db().await;
    b.put("H83if", json!({"url": "https://b.example/one"}))
        .await;
    let dir = tempfile::tempdir().expect("temporary directory");
    let b_log = dir.path().join("b.log");
    let app = TestApp::spawn_with(couch_settings(&url, "links"), dir.path(), |s| {
        s.domains = ServedDomains {
            default_host: Some(Host::parse("qr.test").expect("host")),
            others: vec![DomainSettings {
                host: Host::parse("qr.b.test").expect("host"),
                public_url: PublicUrl::parse("http://qr.b.test").expect("url"),
                store: StoreSettings::CouchDb(couch_settings(&url, "links-b")),
                access_log: b_log.clone(),
                snapshot_file: Some(dir.path().join("links-b.snapshot")),
                dead_tag: Default::default(),
                root: None,
            }],
            unknown_host: Default::default(),
        };
    })
    .await;
    let app = &app;
    let within = Duration::from_secs(10);
    let a_one = eventually(within, "qr.test's H83if", || async move {
        location(app, "qr.test", "H83if").await
    })
    .await;
    let b_one = eventually(within, "qr.b.test's H83if", || async move {
        location(app, "qr.b.test", "H83if").await
    })
    .await;
    assert_eq!(
        (a_one.as_str(), b_one.as_str()),
        ("https://a.example/one", "https://b.example/one")
    );
    // An edit in one database reaches that domain's scans only.
    b.put("fresh", json!({"url": "https://b.example/fresh"}))
        .await;
    let fresh = eventually(within, "qr.b.test's new link", || async move {
        location(app, "qr.b.test", "fresh").await
    })
    .await;
    assert_eq!(fresh, "https://b.example/fresh");
    assert_eq!(location(app, "qr.test", "fresh").await, None);
    assert_eq!(location(app, "elsewhere.test", "H83if").await, None);
}

//! The REST API on CouchDB (issue 22), against PouchDB Server: API keys
//! made and revoked by the real binary in the keys database `qrtag setup`
//! made, then the same outside checkers as on SQLite (`tests/rest_api.rs`):
//! `openapi-spec-validator`, `schemathesis` (no server error, every answer
//! as documented) and the `httpx` walk through a tag's life.

use std::time::{Duration, Instant};

use qrtag::server::api::ApiSettings;

use crate::harness::{TestApp, couch_settings, qrtag, stderr, stdout};
use crate::pouchdb::PouchDb;
use crate::rest_checks;

/// `qrtag api-key create` against `url`: the key printed once.
async fn new_key(url: &str, scope: &str) -> String {
    let out = qrtag(
        &["api-key", "create", "--name", "test", "--scope", scope],
        &[("QRTAG_COUCHDB_URL", url)],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let key = stdout(&out).trim().to_owned();
    assert!(key.starts_with("qrt_"), "{key}");
    key
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_and_the_httpx_walk_find_nothing_wrong_on_couchdb() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let out = qrtag(&["setup"], &[("QRTAG_COUCHDB_URL", &url)]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let write = new_key(&url, "write").await;
    let read = new_key(&url, "read").await;
    let revoked = new_key(&url, "write").await;
    let out = qrtag(
        &["api-key", "revoke", &revoked[4..12]],
        &[("QRTAG_COUCHDB_URL", &url)],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = qrtag(&["api-key", "list"], &[("QRTAG_COUCHDB_URL", &url)]).await;
    assert_eq!(stdout(&out).lines().count(), 3, "{}", stdout(&out));
    assert!(
        !stdout(&out).contains(&write[13..]),
        "the secret is never shown again"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let app = TestApp::spawn_with(couch_settings(&url, "links"), dir.path(), |settings| {
        settings.api = Some(ApiSettings::new(
            "127.0.0.1:0",
            dir.path().join("didcomm-keys.json"),
        ));
        rest_checks::configure(settings);
    })
    .await;
    app.wait_ready(Duration::from_secs(20)).await;
    let api = app.api();

    let started = Instant::now();
    rest_checks::life(&api, &app.public, &write, &read, &revoked).await;
    let walked = started.elapsed();
    let document = format!("{api}/openapi.json");
    rest_checks::validate(&document).await;
    rest_checks::schemathesis(&document, &write, dir.path()).await;
    eprintln!(
        "CouchDB: the httpx walk took {walked:?}, the document's validation and schemathesis {:?}",
        started.elapsed() - walked
    );
}

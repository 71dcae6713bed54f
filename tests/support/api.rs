//! The REST API as its tests speak to it: addresses, a key minted with the
//! CLI, a keyed POST. Shared by `tests/rest_api.rs` and
//! `tests/rest_hardening.rs`.

use serde_json::Value;

use super::TestApp;

/// `http://ADDR/api/v1PATH` on the API listener.
pub fn api(app: &TestApp, path: &str) -> String {
    format!("http://{}/api/v1{path}", app.api.expect("API listener on"))
}

/// `qrtag api-key create`: the key printed once on stdout.
pub fn new_key(app: &TestApp, scope: &str) -> String {
    let out = app.cli(&["api-key", "create", "--name", "test", "--scope", scope]);
    assert!(out.status.success(), "{out:?}");
    let key = String::from_utf8(out.stdout).expect("utf-8");
    let key = key.trim().to_owned();
    assert!(key.starts_with("qrt_"), "{key}");
    key
}

/// A POST of `body` as JSON with `key` as the bearer.
pub async fn post(app: &TestApp, path: &str, key: &str, body: &Value) -> reqwest::Response {
    app.client
        .post(api(app, path))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .expect("request")
}

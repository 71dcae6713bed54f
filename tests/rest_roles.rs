//! Each REST operation's role (issue 35), read from the served OpenAPI
//! document (`x-qrtag-role` on every operation, so none is missed): a key
//! whose role is below an operation's gets a 403 problem and nothing
//! changes; a key at or above it is not refused for its role.

mod support;

use qrtag::server::api::ApiSettings;
use qrtag::values::role::Role;
use serde_json::{Value, json};
use support::api::{api, new_key, post};
use support::{TestApp, spawn_with, test_settings};

const KEY: &str = "spring";
const URL: &str = "https://example.com/spring";

async fn spawn_api() -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.api = Some(ApiSettings::new(
        "127.0.0.1:0",
        dir.path().join("didcomm-keys.json"),
    ));
    spawn_with(settings, dir).await
}

/// A body the operation would take, so only the key can be at fault.
fn body_for(operation: &str) -> Value {
    match operation {
        "create" => json!({"url": "https://example.com/forged", "key": "forged"}),
        "bulk" => json!({"links": [{"url": "https://example.com/forged", "key": "forged"}]}),
        "print_run_pdf" => json!({"keys": [KEY]}),
        _ => json!({"url": "https://example.com/forged"}),
    }
}

/// Each operation of the document: (method, path with the key, id, role).
fn operations(doc: &Value) -> Vec<(String, String, String, Role)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("operations") {
            let id = op["operationId"].as_str().expect("operationId").to_owned();
            let role = op["x-qrtag-role"]
                .as_str()
                .and_then(|r| Role::parse(r).ok())
                .unwrap_or_else(|| panic!("{method} {path} states no x-qrtag-role"));
            ops.push((method.to_uppercase(), path.replace("{key}", KEY), id, role));
        }
    }
    ops
}

async fn call(app: &TestApp, method: &str, path: &str, id: &str, key: &str) -> reqwest::Response {
    let url = api(app, path.strip_prefix("/api/v1").expect("under /api/v1"));
    let mut req = app
        .client
        .request(method.parse().expect("method"), url)
        .bearer_auth(key);
    if method != "GET" {
        req = req.json(&body_for(id));
    }
    req.send().await.expect("request")
}

#[tokio::test]
async fn every_operation_refuses_a_key_below_its_role() {
    let app = spawn_api().await;
    let keys = [
        (Role::Viewer, new_key(&app, "read")),
        (Role::Editor, new_key(&app, "write")),
    ];
    let r = post(&app, "/links", &keys[1].1, &json!({"url": URL, "key": KEY})).await;
    assert_eq!(r.status().as_u16(), 201);
    let doc: Value = app
        .client
        .get(api(&app, "/openapi.json"))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    let ops = operations(&doc);
    assert!(
        ops.iter().any(|(.., role)| *role == Role::Editor),
        "writes are stated"
    );
    let stored = || async {
        let out = app.cli(&["export", "--deleted"]);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let mut refused = 0;
    for (key_role, key) in &keys {
        for (method, path, id, need) in &ops {
            let before = stored().await;
            let r = call(&app, method, path, id, key).await;
            let status = r.status().as_u16();
            let what = format!("{method} {path} ({id}, needs {need}) with a {key_role} key");
            if key_role < need {
                assert_eq!(status, 403, "{what}");
                let problem: Value = r.json().await.expect("problem JSON");
                assert_eq!(problem["type"], "urn:qrtag:problem:forbidden", "{what}");
                let detail = problem["detail"].as_str().expect("detail");
                assert!(
                    detail.contains(&format!("needs the {need} role")),
                    "{what}: {detail}"
                );
                assert_eq!(stored().await, before, "{what} changed the store");
                refused += 1;
            } else {
                assert_ne!(status, 403, "{what}");
                assert_ne!(status, 401, "{what}");
            }
        }
    }
    assert!(refused >= 3, "a read key refused every write: {refused}");
}

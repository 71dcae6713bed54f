//! A link's history (issue 35) through the real application on port 0:
//! a link made with the `qrtag` binary, repointed in the console and over
//! the REST API, read back with `qrtag history` and
//! `GET /api/v1/links/{key}/history` (who, via, before and after, in
//! order), then reverted with `qrtag revert` and `POST .../revert`, each
//! revert an entry of its own and followed by scans within the repoint
//! bound; bad reverts answered clearly with nothing changed.

mod support;

use std::time::Duration;

use qrtag::console::ConsoleSettings;
use qrtag::console::password;
use qrtag::server::api::ApiSettings;
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::api::{api, new_key, post};
use support::console::{browser, csrf, get_page, log_in, post_form};
use support::{TestApp, eventually, header, spawn_with, test_settings};

const PASSWORD: &str = "poster-printing-42";
/// A repoint is served within this (the snapshot's bound the other
/// repoint tests keep).
const REPOINT_BOUND: Duration = Duration::from_secs(1);

async fn app() -> (TestApp, reqwest::Client, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.console = Some(ConsoleSettings::default());
    settings.api = Some(ApiSettings::new(
        "127.0.0.1:0",
        dir.path().join("didcomm-keys.json"),
    ));
    let app = spawn_with(settings, dir).await;
    password::set(&app.store(), PASSWORD)
        .await
        .expect("password set");
    let write = new_key(&app, "write");
    let http = browser();
    log_in(&http, &format!("http://{}/console", app.admin), PASSWORD).await;
    (app, http, write)
}

/// Waits until a scan of `/key` is sent to `url`; how long it took.
async fn scan_follows(app: &TestApp, key: &str, url: &str) -> Duration {
    eventually(Duration::from_secs(5), || async {
        let res = app.get(&format!("/{key}")).await;
        header(&res, "location") == Some(url)
    })
    .await
}

fn history_json(app: &TestApp, key: &str) -> Vec<Value> {
    let out = app.cli(&["history", "--json", key]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// `GET /api/v1/links/{key}/history` with the API key `bearer`, which
/// must answer 200: the history's JSON.
async fn rest_history(app: &TestApp, key: &str, bearer: &str) -> Value {
    let res = app
        .client
        .get(api(app, &format!("/links/{key}/history")))
        .bearer_auth(bearer)
        .send()
        .await
        .expect("history");
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.expect("json")
}

#[tokio::test]
async fn every_surface_leaves_an_entry_and_a_revert_goes_one_step_back() {
    let (app, http, write) = app().await;
    let key_id = write
        .strip_prefix("qrt_")
        .and_then(|r| r.split('_').next())
        .expect("key id")
        .to_owned();

    // 1: made with the binary.
    let out = app.cli(&["new", "https://example.com/a", "--key", "menu"]);
    assert!(out.status.success(), "{out:?}");
    // 2: repointed in the console, as the logged-in user.
    let console = format!("http://{}/console", app.admin);
    let token = csrf(&get_page(&http, &format!("{console}/link?key=menu")).await);
    let res = post_form(
        &http,
        &format!("{console}/link/destination"),
        &[
            ("csrf", &token),
            ("key", "menu"),
            ("url", "https://example.com/b"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    // 3: repointed and titled over the REST API.
    let res = app
        .client
        .patch(api(&app, "/links/menu"))
        .bearer_auth(&write)
        .json(&json!({"url": "https://example.com/c", "title": "Lunch"}))
        .send()
        .await
        .expect("patch");
    assert_eq!(res.status(), StatusCode::OK);
    scan_follows(&app, "menu", "https://example.com/c").await;

    let entries = history_json(&app, "menu");
    let who: Vec<(u64, &str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["n"].as_u64().expect("n"),
                e["actor"]["kind"].as_str().expect("kind"),
                e["via"].as_str().expect("via"),
            )
        })
        .collect();
    assert_eq!(
        who,
        [
            (1, "cli", "cli"),
            (2, "console", "console"),
            (3, "api_key", "api")
        ]
    );
    assert_eq!(entries[1]["actor"]["user"], "admin");
    assert_eq!(entries[2]["actor"]["key"], json!(key_id));
    assert_eq!(
        entries[2]["changes"],
        json!([
            {"field": "url", "before": "https://example.com/b", "after": "https://example.com/c"},
            {"field": "title", "before": null, "after": "Lunch"}
        ])
    );
    let out = app.cli(&["history", "menu"]);
    let table = String::from_utf8(out.stdout).expect("utf-8");
    assert!(out.status.success(), "{table}");
    assert!(table.starts_with("N  WHEN"), "{table}");
    assert!(table.contains("admin (console)"), "{table}");
    assert!(table.contains(&format!("API key {key_id}")), "{table}");
    assert!(
        table.contains("url: https://example.com/b → https://example.com/c"),
        "{table}"
    );

    // The REST API reads the same entries.
    let view = rest_history(&app, "menu", &write).await;
    assert_eq!(
        (view["dropped"].clone(), view["kept"].clone()),
        (json!(0), json!(200))
    );
    assert_eq!(view["entries"][1]["who"], "admin (console)");
    assert_eq!(view["entries"].as_array().map(Vec::len), Some(3));

    // A revert to an entry that does not exist: exit 2, one line, nothing written.
    let out = app.cli(&["revert", "menu", "--to", "9"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8(out.stderr).expect("utf-8");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("entry 9 does not exist"), "{err}");
    assert_eq!(history_json(&app, "menu").len(), 3);

    // Back to after entry 1 with the binary: the scan follows.
    let out = app.cli(&["revert", "menu", "--to", "1"]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8(out.stdout).expect("utf-8");
    assert_eq!(
        said.trim(),
        "menu reverted to how it was after entry 1 (url, title)"
    );
    let took = scan_follows(&app, "menu", "https://example.com/a").await;
    assert!(took <= REPOINT_BOUND, "served after {took:?}");
    let entries = history_json(&app, "menu");
    assert_eq!(entries.len(), 4, "a revert is an entry");
    assert_eq!(entries[3]["actor"]["kind"], "cli");

    // Over the REST API: a stale If-Match is a 412 and changes nothing.
    let res = app
        .client
        .post(api(&app, "/links/menu/revert"))
        .bearer_auth(&write)
        .header("if-match", "\"1\"")
        .json(&json!({"to": 3}))
        .send()
        .await
        .expect("revert");
    assert_eq!(res.status(), StatusCode::PRECONDITION_FAILED);
    let current = app
        .client
        .get(api(&app, "/links/menu"))
        .bearer_auth(&write)
        .send()
        .await
        .expect("get");
    let etag = header(&current, "etag").expect("etag").to_owned();
    let res = app
        .client
        .post(api(&app, "/links/menu/revert"))
        .bearer_auth(&write)
        .header("if-match", etag)
        .json(&json!({"to": 3}))
        .send()
        .await
        .expect("revert");
    assert_eq!(res.status(), StatusCode::OK);
    let view: Value = res.json().await.expect("json");
    assert_eq!(
        (view["url"].clone(), view["title"].clone()),
        (json!("https://example.com/c"), json!("Lunch"))
    );
    let took = scan_follows(&app, "menu", "https://example.com/c").await;
    assert!(took <= REPOINT_BOUND, "served after {took:?}");
    assert_eq!(history_json(&app, "menu").len(), 5);

    // Bad reverts over the API: problem+json, nothing written.
    for (body, status) in [
        (json!({"to": 99}), StatusCode::NOT_FOUND),
        (json!({"to": "one"}), StatusCode::BAD_REQUEST),
        (json!({}), StatusCode::BAD_REQUEST),
    ] {
        let res = post(&app, "/links/menu/revert", &write, &body).await;
        assert_eq!(res.status(), status, "{body}");
        assert_eq!(
            header(&res, "content-type"),
            Some("application/problem+json")
        );
    }
    let res = post(&app, "/links/nothing/revert", &write, &json!({"to": 1})).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let res = app
        .client
        .get(api(&app, "/links/menu/history"))
        .send()
        .await
        .expect("no key");
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(history_json(&app, "menu").len(), 5);

    // A deleted link keeps its history and cannot be reverted.
    let out = app.cli(&["delete", "--yes", "menu"]);
    assert!(out.status.success(), "{out:?}");
    let entries = history_json(&app, "menu");
    assert_eq!(
        entries.last().map(|e| e["kind"].clone()),
        Some(json!("delete"))
    );
    let out = app.cli(&["revert", "menu", "--to", "1"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let res = post(&app, "/links/menu/revert", &write, &json!({"to": 1})).await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    // A key that never was: the CLI's unknown key.
    let out = app.cli(&["history", "nothing"]);
    assert!(!out.status.success(), "{out:?}");
}

/// A revert's entry names the entry it went back to, on every surface
/// (issue 35): `qrtag history` (table and JSON), the REST history and the
/// console's timeline; the write after it is an ordinary edit again.
#[tokio::test]
async fn a_revert_entry_names_the_entry_it_went_back_to() {
    let (app, http, write) = app().await;
    for args in [
        &["new", "https://example.com/a", "--key", "menu"][..],
        &["set", "menu", "https://example.com/b"],
        &["set", "menu", "https://example.com/c"],
        &["revert", "menu", "--to", "1"],
    ] {
        let out = app.cli(args);
        assert!(out.status.success(), "{args:?}: {out:?}");
    }
    let res = post(&app, "/links/menu/revert", &write, &json!({"to": 2})).await;
    assert_eq!(res.status(), StatusCode::OK);
    let out = app.cli(&["set", "menu", "https://example.com/d"]);
    assert!(out.status.success(), "{out:?}");

    // Entries 4 and 5 are the reverts; the others name no entry.
    let (none, to) = (Value::Null, |n: u64| json!(n));
    let expected = [none.clone(), none.clone(), none.clone(), to(1), to(2), none];
    let reverted_to = |entries: &[Value]| -> Vec<Value> {
        entries.iter().map(|e| e["reverted_to"].clone()).collect()
    };
    assert_eq!(reverted_to(&history_json(&app, "menu")), expected);
    let out = app.cli(&["history", "menu"]);
    let table = String::from_utf8(out.stdout).expect("utf-8");
    let line = |n: &str| {
        table
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{n} ")))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        line("4").contains("reverted to #1: url: https://example.com/c → https://example.com/a"),
        "{table}"
    );
    assert!(line("5").contains("reverted to #2: url:"), "{table}");
    assert!(!line("6").contains("reverted"), "{table}");

    let view = rest_history(&app, "menu", &write).await;
    assert_eq!(
        reverted_to(view["entries"].as_array().expect("entries")),
        expected
    );

    let page = get_page(
        &http,
        &format!("http://{}/console/link?key=menu", app.admin),
    )
    .await;
    assert!(page.contains("reverted to #1"), "{page}");
    assert!(page.contains("reverted to #2"), "{page}");
}

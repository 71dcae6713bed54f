//! Issue 34: a link's `rules` through the REST API on the real server:
//! written on create, replaced and cleared by PATCH, kept by other edits,
//! shown on every read; a bad rule is a problem+json 400 naming the field
//! in the core's words, with nothing written.

mod support;

use std::path::Path;

use qrtag::server::api::ApiSettings;
use serde_json::{Value, json};
use support::api::{api, new_key, post};
use support::{TestApp, header, spawn_with, test_settings};

const PROBLEM: &str = "application/problem+json";

/// The API, with a GeoIP database (`--geoip-db`, which `serve` opens for
/// the rules and hands to the scan index) or without.
async fn spawn_api(geoip: bool) -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.api = Some(ApiSettings::new(
        "127.0.0.1:0",
        dir.path().join("didcomm-keys.json"),
    ));
    if geoip {
        let qrtag::settings::AccessLogTarget::Path(log) = settings.access_log.clone() else {
            panic!("a log file");
        };
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/geoip/test.mmdb");
        let db = qrtag::stats::dimensions::place::GeoDb::open(&path).expect("test MMDB");
        let mut index = qrtag::scan_index::ScanIndexSettings::beside(&log);
        index.breakdowns = Some(qrtag::scan_index::BreakdownSettings::new(
            chrono_tz::UTC,
            Some((path.as_path(), db.clone())),
        ));
        settings.scan_index = Some(index);
        settings.geoip = Some(qrtag::settings::GeoIp(db));
    }
    spawn_with(settings, dir).await
}

async fn read(app: &TestApp, key: &str, bearer: &str) -> Value {
    let r = app
        .client
        .get(api(app, &format!("/links/{key}")))
        .bearer_auth(bearer)
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status().as_u16(), 200, "{key}");
    r.json().await.expect("json")
}

async fn patch(app: &TestApp, key: &str, bearer: &str, body: &Value) -> reqwest::Response {
    app.client
        .patch(api(app, &format!("/links/{key}")))
        .bearer_auth(bearer)
        .json(body)
        .send()
        .await
        .expect("PATCH")
}

/// The problem's `type` and `detail`, after its status and media type.
async fn problem(r: reqwest::Response, status: u16) -> (String, String) {
    assert_eq!(r.status().as_u16(), status);
    assert_eq!(header(&r, "content-type"), Some(PROBLEM));
    let body: Value = r.json().await.expect("problem JSON");
    let text = |f: &str| body[f].as_str().unwrap_or_default().to_owned();
    (text("type"), text("detail"))
}

fn ios() -> Value {
    json!({"url": "https://apps.apple.com/app/id1", "os": ["ios", "ipados"]})
}

fn lunch() -> Value {
    json!({"url": "https://example.com/lunch", "days": ["mon", "tue", "wed", "thu", "fri"],
           "hours": ["11:00", "15:00"], "tz": "Europe/Dublin"})
}

#[tokio::test]
async fn rules_are_written_shown_replaced_kept_and_cleared() {
    let app = spawn_api(false).await;
    let write = new_key(&app, "write");
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/", "key": "menu",
                "rules": [ios(), {"url": "https://Example.com/B", "split": [50, 100]}]}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let made: Value = r.json().await.expect("json");
    // Stored as written, the destination's host lowered as `url`'s is.
    let stored = json!([ios(), {"url": "https://example.com/B", "split": [50, 100]}]);
    assert_eq!(made["rules"], stored, "{made}");
    assert_eq!(read(&app, "menu", &write).await["rules"], stored);

    // Another edit keeps them.
    let r = patch(
        &app,
        "menu",
        &write,
        &json!({"url": "https://example.com/new"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 200);
    let kept: Value = r.json().await.expect("json");
    assert_eq!(kept["rules"], stored, "{kept}");

    // New rules replace them all.
    let r = patch(&app, "menu", &write, &json!({"rules": [lunch()]})).await;
    assert_eq!(r.status().as_u16(), 200);
    let replaced: Value = r.json().await.expect("json");
    assert_eq!(replaced["rules"], json!([lunch()]), "{replaced}");
    assert_eq!(replaced["changed_via"], "api");

    // The list shows them too.
    app.wait_for_status("/menu", 302).await;
    let r = app
        .client
        .get(api(&app, "/links?prefix=menu"))
        .bearer_auth(&write)
        .send()
        .await
        .expect("list");
    let page: Value = r.json().await.expect("json");
    assert_eq!(page["links"][0]["rules"], json!([lunch()]), "{page}");

    // `[]` removes them, and the document has no `rules` left.
    let r = patch(&app, "menu", &write, &json!({"rules": []})).await;
    assert_eq!(r.status().as_u16(), 200);
    let cleared: Value = r.json().await.expect("json");
    assert_eq!(cleared["rules"], json!([]), "{cleared}");
    let out = app.cli(&["export"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("\"rules\""), "{text}");

    // A link made without rules shows none.
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/"}),
    )
    .await;
    let plain: Value = r.json().await.expect("json");
    assert_eq!(plain["rules"], json!([]), "{plain}");
}

#[tokio::test]
async fn a_bad_rule_is_a_problem_naming_the_field_and_nothing_is_written() {
    let app = spawn_api(false).await;
    let write = new_key(&app, "write");
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/", "key": "menu", "rules": [ios()]}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let made: Value = r.json().await.expect("json");

    let empty_window = json!({"url": "https://example.com/x", "hours": ["11:00", "11:00"],
                              "tz": "Europe/Dublin"});
    // (rules, the problem's type, how its detail starts, a word of the reason)
    let cases = [
        (
            json!([ios(), lunch(), empty_window]),
            "bad-request",
            "rules[2].hours: ",
            "empty",
        ),
        (
            json!([{"url": "https://example.com/x", "contry": ["IE"]}]),
            "bad-request",
            "rules[0].contry: ",
            "unknown field",
        ),
        (
            json!([{"url": "https://example.com/x", "split": [0, 150]}]),
            "bad-request",
            "rules[0].split: ",
            "0 <= lo < hi <= 100",
        ),
        (
            json!([{"url": "https://example.com/x"}]),
            "bad-request",
            "rules[0]: ",
            "at least one condition",
        ),
        (
            json!([{"url": "/elsewhere", "os": ["android"]}]),
            "invalid-url",
            "rules[0].url: ",
            "absolute",
        ),
        (
            json!({"url": "https://example.com/x"}),
            "bad-request",
            "rules: ",
            "array",
        ),
        (
            json!([{"url": "https://example.com/x", "country": ["IE"]}]),
            "bad-request",
            "rules[0].country: ",
            "--geoip-db",
        ),
        (
            json!([{"url": "https://0x1f.ie/KEY/x", "os": ["ios"]}]),
            "invalid-url",
            "rules[0].url: ",
            "own short URL",
        ),
    ];
    // A rule at the link's own short URL: `KEY` is the key written.
    let at = |rules: &Value, key: &str| -> Value {
        serde_json::from_str(&rules.to_string().replace("KEY", key)).expect("json")
    };
    for (rules, kind, starts, reason) in &cases {
        for r in [
            patch(
                &app,
                "menu",
                &write,
                &json!({"url": "https://example.com/new", "rules": at(rules, "menu")}),
            )
            .await,
            post(
                &app,
                "/links",
                &write,
                &json!({"url": "https://example.com/", "key": "other", "rules": at(rules, "other")}),
            )
            .await,
        ] {
            let (t, detail) = problem(r, 400).await;
            assert_eq!(t, format!("urn:qrtag:problem:{kind}"), "{rules}: {detail}");
            assert!(
                detail.starts_with(starts) && detail.contains(reason),
                "{rules}: {detail}"
            );
        }
        // A bulk create refuses the one link, naming the field.
        let r = post(
            &app,
            "/links/bulk",
            &write,
            &json!({"links": [{"url": "https://example.com/", "key": "other",
                               "rules": at(rules, "other")}]}),
        )
        .await;
        assert_eq!(r.status().as_u16(), 200);
        let bulk: Value = r.json().await.expect("json");
        let detail = bulk["results"][0]["problem"]["detail"]
            .as_str()
            .unwrap_or_default();
        assert!(detail.starts_with(starts), "{bulk}");
    }
    let now = read(&app, "menu", &write).await;
    assert_eq!(now["rev"], made["rev"], "nothing written: {now}");
    assert_eq!(now["url"], "https://example.com/");
    let r = app
        .client
        .get(api(&app, "/links/other"))
        .bearer_auth(&write)
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status().as_u16(), 404, "other was never made");
}

#[tokio::test]
async fn a_country_rule_is_taken_where_the_server_has_a_geoip_database() {
    let app = spawn_api(true).await;
    let write = new_key(&app, "write");
    let rules = json!([{"url": "https://example.com/ie", "country": ["IE", "GB"]}]);
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/", "key": "home", "rules": rules}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let made: Value = r.json().await.expect("json");
    assert_eq!(made["rules"], rules);
    // Still checked: "UK" is no ISO 3166-1 code.
    let r = patch(
        &app,
        "home",
        &write,
        &json!({"rules": [{"url": "https://example.com/uk", "country": ["UK"]}]}),
    )
    .await;
    let (_, detail) = problem(r, 400).await;
    assert!(
        detail.starts_with("rules[0].country[0]: ") && detail.contains("GB"),
        "{detail}"
    );
}

//! The REST API (`/api/v1` on the API listener) over real sockets, with API
//! keys made and revoked by the real binary (`qrtag api-key`).

mod support;

use support::api::{api, new_key, post};

use std::time::Duration;

use qrtag::server::api::ApiSettings;
use serde_json::{Value, json};
use support::{TestApp, eventually, header, rest_checks, spawn_with, test_settings};

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const PROBLEM: &str = "application/problem+json";

async fn spawn_api() -> TestApp {
    spawn_api_with(|_| {}).await
}

async fn spawn_api_with(edit: impl FnOnce(&mut ApiSettings)) -> TestApp {
    spawn_api_and(edit, |_| {}).await
}

/// The API with the scan index on, following the access log.
async fn spawn_api_with_scans(edit: impl FnOnce(&mut ApiSettings)) -> TestApp {
    spawn_api_and(edit, |settings| {
        let qrtag::settings::AccessLogTarget::Path(log) = settings.access_log.clone() else {
            panic!("a log file");
        };
        let mut index = qrtag::scan_index::ScanIndexSettings::beside(&log);
        index.poll_interval = Duration::from_millis(20);
        settings.scan_index = Some(index);
    })
    .await
}

async fn spawn_api_and(
    edit: impl FnOnce(&mut ApiSettings),
    more: impl FnOnce(&mut qrtag::settings::Settings),
) -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    let mut api = ApiSettings::new("127.0.0.1:0", dir.path().join("didcomm-keys.json"));
    edit(&mut api);
    settings.api = Some(api);
    more(&mut settings);
    spawn_with(settings, dir).await
}

async fn get(app: &TestApp, path: &str, key: &str) -> reqwest::Response {
    app.client
        .get(api(app, path))
        .bearer_auth(key)
        .send()
        .await
        .expect("request")
}

/// The problem's `type`, after checking the media type and status.
async fn problem(r: reqwest::Response, status: u16) -> String {
    assert_eq!(r.status().as_u16(), status);
    assert_eq!(header(&r, "content-type"), Some(PROBLEM));
    let body: Value = r.json().await.expect("problem JSON");
    assert_eq!(body["status"], status);
    body["type"].as_str().expect("type").to_owned()
}

#[tokio::test]
async fn keys_scopes_etags_and_revocation() {
    let app = spawn_api().await;
    let write = new_key(&app, "write");
    let read = new_key(&app, "read");
    let c = &app.client;

    let r = c.get(api(&app, "/links")).send().await.expect("request");
    assert_eq!(problem(r, 401).await, "urn:qrtag:problem:unauthorized");
    // The last character changed (to one it is not: a key ending in `x`
    // stayed itself 1 time in 62).
    let last = if write.ends_with('x') { "y" } else { "x" };
    let r = get(
        &app,
        "/links",
        &format!("{}{last}", &write[..write.len() - 1]),
    )
    .await;
    assert_eq!(problem(r, 401).await, "urn:qrtag:problem:unauthorized");

    let new = json!({"url": "https://example.com/a", "key": "promo/spring"});
    let r = post(&app, "/links", &read, &new).await;
    assert_eq!(problem(r, 403).await, "urn:qrtag:problem:forbidden");

    let r = post(&app, "/links", &write, &new).await;
    assert_eq!(r.status().as_u16(), 201);
    let etag = header(&r, "etag").expect("etag").to_owned();
    assert_eq!(header(&r, "location"), Some("/api/v1/links/promo/spring"));
    let link: Value = r.json().await.expect("json");
    assert_eq!(link["short_url"], "https://0x1f.ie/promo/spring");
    assert_eq!(format!("\"{}\"", link["rev"].as_str().expect("rev")), etag);
    app.wait_for_status("/promo/spring", 302).await;

    let r = post(&app, "/links", &write, &new).await;
    assert_eq!(problem(r, 409).await, "urn:qrtag:problem:key-taken");
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "javascript:alert(1)"}),
    )
    .await;
    assert_eq!(problem(r, 400).await, "urn:qrtag:problem:invalid-url");
    // Found by schemathesis: a multi-byte last character split by bytes.
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/", "expires": "3¬"}),
    )
    .await;
    assert_eq!(problem(r, 400).await, "urn:qrtag:problem:bad-request");

    // Repoint at the revision read; the same revision again is stale.
    let repoint = |url: &str, etag: &str| {
        c.patch(api(&app, "/links/promo/spring"))
            .bearer_auth(&write)
            .header("if-match", etag)
            .json(&json!({ "url": url }))
            .send()
    };
    let r = repoint("https://example.com/b", &etag)
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    let newer = header(&r, "etag").expect("etag").to_owned();
    assert_ne!(newer, etag);
    let r = repoint("https://example.com/c", &etag)
        .await
        .expect("request");
    assert_eq!(
        problem(r, 412).await,
        "urn:qrtag:problem:precondition-failed"
    );
    eventually(Duration::from_secs(2), || async {
        header(&app.get("/promo/spring").await, "location") == Some("https://example.com/b")
    })
    .await;

    let r = get(&app, "/links/promo/spring", &read).await;
    assert_eq!(header(&r, "etag"), Some(newer.as_str()));
    let r = get(&app, "/links/nothere", &read).await;
    assert_eq!(problem(r, 404).await, "urn:qrtag:problem:not-found");

    // Revoked: refused from the very next request.
    let id = &read[4..12];
    let out = app.cli(&["api-key", "revoke", id]);
    assert!(out.status.success(), "{out:?}");
    let listed = String::from_utf8(app.cli(&["api-key", "list"]).stdout).expect("utf-8");
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(
        !listed.contains(&read[13..]),
        "the secret is never shown again"
    );
    let r = get(&app, "/links/promo/spring", &read).await;
    assert_eq!(problem(r, 401).await, "urn:qrtag:problem:unauthorized");
}

#[tokio::test]
async fn bulk_create_list_and_the_same_qr_bytes_as_the_admin_listener() {
    let app = spawn_api().await;
    let write = new_key(&app, "write");
    let c = &app.client;
    let mut links: Vec<Value> = (0..100)
        .map(|i| json!({"url": format!("https://example.com/{i}"), "key": format!("run/{i:03}")}))
        .collect();
    links.push(json!({"url": "//evil.example"}));
    let r = post(&app, "/links/bulk", &write, &json!({ "links": links })).await;
    assert_eq!(r.status().as_u16(), 200);
    let body: Value = r.json().await.expect("json");
    let results = body["results"].as_array().expect("results");
    assert_eq!(results.len(), 101);
    assert!(results[..100].iter().all(|r| r["link"]["key"].is_string()));
    assert_eq!(
        results[100]["problem"]["type"],
        "urn:qrtag:problem:invalid-url"
    );

    let too_many: Vec<Value> = (0..1001)
        .map(|_| json!({"url": "https://example.com/"}))
        .collect();
    let r = post(&app, "/links/bulk", &write, &json!({ "links": too_many })).await;
    assert_eq!(problem(r, 413).await, "urn:qrtag:problem:payload-too-large");
    let r = c
        .post(api(&app, "/links"))
        .bearer_auth(&write)
        .header("content-type", "application/json")
        .body(vec![b' '; 5 << 20])
        .send()
        .await
        .expect("request");
    assert_eq!(problem(r, 413).await, "urn:qrtag:problem:payload-too-large");

    app.wait_for_status("/run/099", 302).await;
    let r = get(&app, "/links?prefix=run/&limit=60", &write).await;
    let page: Value = r.json().await.expect("json");
    assert_eq!(page["links"].as_array().expect("links").len(), 60);
    assert_eq!(page["links"][0]["key"], "run/000");
    let next = page["next"].as_str().expect("next page");
    let r = c
        .get(api(
            &app,
            &format!("/links?prefix=run/&limit=60&after={next}"),
        ))
        .bearer_auth(&write)
        .send()
        .await
        .expect("request");
    let page: Value = r.json().await.expect("json");
    assert_eq!(page["links"].as_array().expect("links").len(), 40);
    assert!(page["next"].is_null());
    // Issue 31: a list item is the link a single read answers, the same
    // fields and values (short URL, notes, times, revision).
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/n", "key": "run/noted", "notes": "on the door"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    app.wait_for_status("/run/noted", 302).await;
    let r = get(&app, "/links?prefix=run/noted", &write).await;
    let page: Value = r.json().await.expect("json");
    let r = get(&app, "/links/run/noted", &write).await;
    let one: Value = r.json().await.expect("json");
    assert_eq!(page["links"], json!([one]), "{page}");
    assert_eq!(one["notes"], "on the door");
    // Issue 31: a capital in a host is stored in lower case, and the
    // answer is the stored URL.
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://Venue.example.com/Menu", "key": "run/venue"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let venue: Value = r.json().await.expect("json");
    assert_eq!(venue["url"], "https://venue.example.com/Menu");

    for (ext, query) in [("svg", ""), ("png", "?scale=3&ec=H")] {
        let r = get(&app, &format!("/links/run/007/qr.{ext}{query}"), &write).await;
        assert_eq!(r.status().as_u16(), 200, "{ext}");
        let from_api = r.bytes().await.expect("bytes");
        let from_admin = app
            .admin_get(&format!("/qr/run/007.{ext}{query}"))
            .await
            .expect("admin")
            .bytes()
            .await
            .expect("bytes");
        assert_eq!(from_api, from_admin, "{ext}");
    }
}

#[tokio::test]
async fn a_burst_past_the_rate_limit_gets_429_with_retry_after() {
    let app = spawn_api_with(|api| api.rate_per_second = 5).await;
    let read = new_key(&app, "read");
    // The sixth request of a second is refused; 20 in a row (a few
    // milliseconds each) meet one unless each took over 200 ms.
    let mut limited = None;
    for _ in 0..20 {
        let r = get(&app, "/links/nothere", &read).await;
        if r.status().as_u16() == 429 {
            limited = Some(r);
            break;
        }
        assert_eq!(r.status().as_u16(), 404);
    }
    let r = limited.expect("a 429 within 20 requests");
    assert_eq!(header(&r, "retry-after"), Some("1"));
    assert_eq!(problem(r, 429).await, "urn:qrtag:problem:rate-limited");
}

/// A link's scans and its QR code are each one request against the key's
/// rate, not two (the scans endpoint once counted twice, so a key had
/// half its rate there: its fourth request at a rate of 6 was refused).
#[tokio::test]
async fn a_links_sub_resources_count_once_against_the_rate() {
    let app = spawn_api_with(|api| api.rate_per_second = 6).await;
    for path in ["/links/promo/spring/scans", "/links/promo/spring/qr.png"] {
        let read = new_key(&app, "read");
        for i in 1..=4 {
            let r = get(&app, path, &read).await;
            assert_ne!(
                r.status().as_u16(),
                429,
                "{path}: request {i} of 4 at a rate of 6"
            );
        }
    }
}

#[tokio::test]
async fn the_served_document_is_the_committed_copy() {
    let app = spawn_api().await;
    let r = app
        .client
        .get(api(&app, "/openapi.json"))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    let served = r.text().await.expect("text");
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/openapi.json"))
            .expect("committed copy");
    assert_eq!(served, committed);
    let doc: Value = serde_json::from_str(&served).expect("JSON");
    assert!(doc["openapi"].as_str().expect("version").starts_with("3.1"));
    assert!(doc["paths"]["/api/v1/links/{key}"]["patch"].is_object());
}

#[test]
fn api_key_commands_name_what_is_wrong() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    support::init_db(&db);
    let out = support::qrtag_cmd(&db, &["api-key", "revoke", "not-an-id"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("qrtag: ") && err.contains("not an API key ID"),
        "{err}"
    );
    let out = support::qrtag_cmd(&db, &["api-key", "revoke", "Ab3dE5gH"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no API key with ID Ab3dE5gH"));
    let out = support::qrtag_cmd(
        &db,
        &["api-key", "create", "--name", " ", "--scope", "read"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = support::qrtag_cmd(
        &db,
        &["api-key", "create", "--name", "x", "--scope", "admin"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// `--api-couchdb-user` is the API's CouchDB account: without CouchDB, or
/// a password without the user, it is a usage error before anything
/// starts (exit 2, one line).
#[test]
fn the_api_couchdb_account_is_a_couchdb_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    for (args, says) in [
        (
            &["--api-couchdb-user", "qrtag-api"][..],
            "give --couchdb-url too",
        ),
        (
            &["--api-couchdb-password", "pw-1"][..],
            "needs a user: give --api-couchdb-user",
        ),
    ] {
        let mut all = vec!["serve", "--api-listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let out = support::qrtag_cmd(&db, &all);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("qrtag: ") && err.contains(says), "{err}");
        assert!(!err.contains("pw-1"), "the password was echoed: {err}");
        assert!(!db.exists(), "nothing is created");
    }
}

#[tokio::test]
async fn the_document_validates_and_schemathesis_checks_all_pass() {
    let app = spawn_api_and(|_| {}, rest_checks::configure).await;
    let write = new_key(&app, "write");
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/", "key": "spring"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let document = api(&app, "/openapi.json");
    let started = std::time::Instant::now();
    rest_checks::validate(&document).await;
    rest_checks::schemathesis(&document, &write, app.dir.path()).await;
    eprintln!(
        "the document's validation and schemathesis --checks all took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_httpx_client_walks_the_life_of_a_tag() {
    let app = spawn_api_with_scans(|_| {}).await;
    let write = new_key(&app, "write");
    let read = new_key(&app, "read");
    let revoked = new_key(&app, "write");
    let out = app.cli(&["api-key", "revoke", &revoked[4..12]]);
    assert!(out.status.success(), "{out:?}");
    rest_checks::life(
        &api(&app, ""),
        &format!("http://{}", app.public),
        &write,
        &read,
        &revoked,
    )
    .await;
}

#[tokio::test]
async fn scans_of_a_link_and_of_all_links_come_from_the_scan_index() {
    let without = spawn_api().await;
    let key = new_key(&without, "read");
    let r = get(&without, "/scans", &key).await;
    assert_eq!(problem(r, 503).await, "urn:qrtag:problem:unavailable");

    let app = spawn_api_with_scans(|_| {}).await;
    let write = new_key(&app, "write");
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/", "key": "flyer"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    app.wait_for_status("/flyer", 302).await;
    // A phone, not a bot: the index counts scans as `qrtag stats` does.
    for _ in 0..3 {
        let r = app
            .client
            .get(app.url("/flyer"))
            .header("user-agent", IPHONE)
            .send()
            .await
            .expect("scan");
        assert_eq!(r.status().as_u16(), 302);
    }
    let today = chrono::Utc::now().date_naive().to_string();
    eventually(Duration::from_secs(5), || async {
        let r = get(&app, &format!("/links/flyer/scans?since={today}"), &write).await;
        r.status().as_u16() == 200
            && r.json::<Value>().await.expect("json")["in_range"].as_u64() == Some(3)
    })
    .await;
    let r = get(&app, "/scans", &write).await;
    assert_eq!(r.status().as_u16(), 200);
    let all: Value = r.json().await.expect("json");
    assert_eq!(all["in_range"].as_u64(), Some(3), "{all}");
    assert_eq!(all["top"][0]["key"], "flyer");
    // The breakdowns the index keeps: three iPhone scans, in UTC.
    let b = &all["breakdowns"];
    assert_eq!(b["scans"].as_u64(), Some(3), "{all}");
    assert_eq!(b["time_zone"], "UTC");
    let device = b["dimensions"]
        .as_array()
        .expect("dimensions")
        .iter()
        .find(|d| d["dimension"] == "device")
        .expect("device");
    assert_eq!(device["values"], json!([{"value": "phone", "scans": 3}]));
    let cells: u64 = b["hour_weekday"]
        .as_array()
        .expect("7 days")
        .iter()
        .flat_map(|d| d.as_array().expect("24 hours"))
        .map(|n| n.as_u64().expect("count"))
        .sum();
    assert_eq!(cells, 3);
    let r = get(&app, "/links/flyer/scans?by=os", &write).await;
    let one: Value = r.json().await.expect("json");
    let dims = one["breakdowns"]["dimensions"].as_array().expect("dims");
    assert_eq!(dims.len(), 1, "{one}");
    assert_eq!(dims[0]["dimension"], "os");
    assert_eq!(dims[0]["values"][0]["scans"].as_u64(), Some(3), "{one}");
    assert!(one["breakdowns"]["hour_weekday"].is_null(), "{one}");
    let r = get(&app, "/scans?by=colour", &write).await;
    assert_eq!(problem(r, 400).await, "urn:qrtag:problem:bad-request");
    // Issue 31: a place without a GeoIP database is refused by name, as
    // `qrtag stats --by country` is, never silently left out.
    for path in ["/scans?by=device,country", "/links/flyer/scans?by=city"] {
        let r = get(&app, path, &write).await;
        assert_eq!(r.status().as_u16(), 400, "{path}");
        assert_eq!(header(&r, "content-type"), Some(PROBLEM));
        let body: Value = r.json().await.expect("problem JSON");
        let detail = body["detail"].as_str().expect("detail");
        let place = if path.contains("city") {
            "city"
        } else {
            "country"
        };
        assert!(
            detail.contains(place) && detail.contains("--geoip-db"),
            "{path}: {detail}"
        );
    }
    let r = get(&app, "/scans?since=2026-12-02&until=2026-12-01", &write).await;
    assert_eq!(problem(r, 400).await, "urn:qrtag:problem:bad-request");
}

/// Issue 30, item 4: a link with a 1,039-character key was the seed of a
/// print bomb. A key is at most 256 bytes, refused past that by the API
/// (a problem naming the bound), the CLI (one line, exit 2) and an import
/// alike; the longest key is taken.
#[tokio::test]
async fn a_key_over_256_bytes_is_refused_by_every_writer() {
    let app = spawn_api().await;
    let write = new_key(&app, "write");
    let segments = vec!["k".repeat(64); 5].join("/");
    let longest = &segments[..qrtag::values::link_key::MAX_KEY_LEN];
    let over = &segments[..qrtag::values::link_key::MAX_KEY_LEN + 1];

    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/a", "key": over}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 400);
    let body: Value = r.json().await.expect("problem");
    let detail = body["detail"].as_str().expect("detail");
    assert!(detail.contains("at most 256"), "{detail}");
    assert!(detail.len() < 400, "the key is not echoed whole: {detail}");
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/a", "key": longest}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);

    let out = app.cli(&["new", "https://example.com/b", "--key", over]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("at most 256"), "{err}");

    let file = app.dir.path().join("links.csv");
    std::fs::write(&file, format!("key,url\n{over},https://example.com/c\n")).expect("write");
    let out = app.cli(&["import", file.to_str().expect("utf-8")]);
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at most 256"), "{err}");
}

/// Issue 31: every path of the document answers a method it does not
/// declare with a 405 problem whose `Allow` names the declared methods,
/// with or without a key; the document is read from the server, so a
/// path added later is held to it too.
#[tokio::test]
async fn an_undeclared_method_is_a_405_naming_the_declared_ones() {
    let app = spawn_api().await;
    let write = new_key(&app, "write");
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/", "key": "spring"}),
    )
    .await;
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
    let methods = [
        "GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE",
    ];
    let paths = doc["paths"].as_object().expect("paths");
    // Issue 35 added a link's history and revert: 11.
    assert_eq!(paths.len(), 11, "{:?}", paths.keys());
    for (path, item) in paths {
        let declared: Vec<&str> = methods
            .iter()
            .copied()
            .filter(|m| item.get(m.to_ascii_lowercase()).is_some())
            .collect();
        let url = format!(
            "http://{}{}",
            app.api.expect("API listener on"),
            path.replace("{key}", "spring")
        );
        for method in methods.iter().filter(|m| !declared.contains(m)) {
            for key in [Some(write.as_str()), None] {
                let mut req = app.client.request(method.parse().expect("method"), &url);
                if let Some(key) = key {
                    req = req.bearer_auth(key);
                }
                let r = req.send().await.expect("request");
                let what = format!("{method} {path}");
                assert_eq!(r.status().as_u16(), 405, "{what}");
                let allow: Vec<&str> = header(&r, "allow")
                    .expect("Allow")
                    .split(',')
                    .map(str::trim)
                    .collect();
                assert_eq!(allow, declared, "{what}");
                if *method != "HEAD" {
                    assert_eq!(
                        problem(r, 405).await,
                        "urn:qrtag:problem:method-not-allowed",
                        "{what}"
                    );
                }
            }
        }
    }
    // The path's own methods still answer; a key's `/` may come
    // percent-encoded, as a client filling in `{key}` sends it.
    let r = get(&app, "/links/spring", &write).await;
    assert_eq!(r.status().as_u16(), 200);
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/", "key": "docs/api"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    for path in [
        "/links/docs/api",
        "/links/docs%2Fapi",
        "/links/docs%2fapi/qr.svg",
    ] {
        let r = get(&app, path, &write).await;
        assert_eq!(r.status().as_u16(), 200, "{path}");
    }
}

/// Issue 31: what the document forbids is refused, as schemathesis found
/// it was not: an empty print option (read as left out before), a body
/// that is an array of a link's fields rather than an object.
#[tokio::test]
async fn what_the_document_forbids_is_refused() {
    let app = spawn_api().await;
    let write = new_key(&app, "write");
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/", "key": "spring"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let r = get(&app, "/links/spring/print.pdf?template=L7163", &write).await;
    assert_eq!(r.status().as_u16(), 200);
    for query in [
        "caption=",
        "template=L7163&caption=",
        "template=L7163&outline=",
    ] {
        let r = get(&app, &format!("/links/spring/print.pdf?{query}"), &write).await;
        assert_eq!(
            problem(r, 400).await,
            "urn:qrtag:problem:bad-request",
            "{query}"
        );
    }
    let r = app
        .client
        .patch(api(&app, "/links/spring"))
        .bearer_auth(&write)
        .header("content-type", "application/json")
        .body(r#"["https://example.com/b"]"#)
        .send()
        .await
        .expect("request");
    assert_eq!(problem(r, 400).await, "urn:qrtag:problem:bad-request");
    for query in ["state=", "state=never-scanned", "limit=0", "limit=1001"] {
        let r = get(&app, &format!("/links?{query}"), &write).await;
        assert_eq!(
            problem(r, 400).await,
            "urn:qrtag:problem:bad-request",
            "{query}"
        );
    }
}

/// Issue 33: a fallback is set on create, changed and cleared by PATCH,
/// shown on every read, refused as a problem when it is a path (nothing
/// else of the edit written), and a disabled link's scans go there.
#[tokio::test]
async fn a_fallback_is_set_shown_refused_and_followed() {
    let app = spawn_api().await;
    let write = new_key(&app, "write");
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://event.example/", "key": "gig",
                "fallback_url": "https://venue.example/home"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let made: Value = r.json().await.expect("json");
    assert_eq!(made["fallback_url"], "https://venue.example/home");
    app.wait_for_status("/gig", 302).await;

    let patch = |body: Value| {
        app.client
            .patch(api(&app, "/links/gig"))
            .bearer_auth(&write)
            .json(&body)
            .send()
    };
    for bad in ["/gig", "venue.example", "javascript:alert(1)"] {
        let r = patch(json!({"inactive": true, "fallback_url": bad}))
            .await
            .expect("PATCH");
        assert_eq!(
            problem(r, 400).await,
            "urn:qrtag:problem:invalid-url",
            "{bad}"
        );
    }
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://event.example/", "fallback_url": "/gig"}),
    )
    .await;
    assert_eq!(problem(r, 400).await, "urn:qrtag:problem:invalid-url");
    let r = get(&app, "/links/gig", &write).await;
    let now: Value = r.json().await.expect("json");
    assert_eq!(now["rev"], made["rev"], "nothing written: {now}");

    let r = patch(json!({"inactive": true})).await.expect("PATCH");
    assert_eq!(r.status().as_u16(), 200);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let r = client.get(app.url("/gig")).send().await.expect("scan");
    assert_eq!(r.status().as_u16(), 302);
    assert_eq!(header(&r, "location"), Some("https://venue.example/home"));

    let r = patch(json!({"fallback_url": ""})).await.expect("PATCH");
    assert_eq!(r.status().as_u16(), 200);
    let cleared: Value = r.json().await.expect("json");
    assert!(cleared["fallback_url"].is_null(), "{cleared}");
    app.wait_for_status("/gig", 404).await;
}

/// Issue 33: a link's title through the API: created, shown, edited and
/// cleared; an over-long or two-line title is a problem+json 400 and
/// nothing is written.
#[tokio::test]
async fn titles_are_written_shown_and_checked() {
    let app = spawn_api().await;
    let write = new_key(&app, "write");
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/s", "key": "spring", "title": " Spring poster "}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let made: Value = r.json().await.expect("json");
    assert_eq!(made["title"], "Spring poster");
    let r = get(&app, "/links/spring", &write).await;
    let one: Value = r.json().await.expect("json");
    assert_eq!(one["title"], "Spring poster");

    let patch = |body: Value| {
        app.client
            .patch(api(&app, "/links/spring"))
            .bearer_auth(&write)
            .json(&body)
            .send()
    };
    let long = "🎟".repeat(201);
    for bad in [long.as_str(), "two\nlines"] {
        let r = patch(json!({"title": bad, "url": "https://example.com/other"}))
            .await
            .expect("request");
        assert_eq!(problem(r, 400).await, "urn:qrtag:problem:bad-request");
        let r = post(
            &app,
            "/links",
            &write,
            &json!({"url": "https://example.com/s", "key": "bad", "title": bad}),
        )
        .await;
        assert_eq!(r.status().as_u16(), 400);
    }
    let r = get(&app, "/links/spring", &write).await;
    let after: Value = r.json().await.expect("json");
    assert_eq!(after["rev"], one["rev"], "nothing written");
    assert_eq!(get(&app, "/links/bad", &write).await.status().as_u16(), 404);

    // The list's q: a piece of the title (or key, notes, destination),
    // ignoring case, from the served snapshot.
    app.wait_for_status("/spring", 302).await;
    let r = get(&app, "/links?q=SPRING%20Post", &write).await;
    let page: Value = r.json().await.expect("json");
    assert_eq!(page["links"][0]["key"], "spring", "{page}");
    assert_eq!(page["links"].as_array().map(Vec::len), Some(1), "{page}");
    let r = get(&app, "/links?q=x&prefix=s", &write).await;
    assert_eq!(problem(r, 400).await, "urn:qrtag:problem:bad-request");

    let r = patch(json!({"title": "🎟".repeat(200)}))
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    let r = patch(json!({"title": ""})).await.expect("request");
    let cleared: Value = r.json().await.expect("json");
    assert!(cleared["title"].is_null(), "{cleared}");
}

/// Issue 33: a fallback at the link's own short URL (or below it) on the
/// public origin would send a dead link's scans back to itself: a
/// problem+json 400 naming the field, on create and on PATCH, nothing
/// written; the same path on another origin, or another key's, is fine.
#[tokio::test]
async fn a_fallback_that_loops_back_to_its_own_link_is_refused() {
    let app = spawn_api().await;
    let write = new_key(&app, "write");
    for own in ["https://0x1f.ie/gig", "https://0x1f.ie/gig/later?x=1"] {
        let r = post(
            &app,
            "/links",
            &write,
            &json!({"url": "https://event.example/", "key": "gig", "fallback_url": own}),
        )
        .await;
        assert_eq!(r.status().as_u16(), 400, "{own}");
        let body: Value = r.json().await.expect("problem+json");
        assert_eq!(body["type"], "urn:qrtag:problem:invalid-url", "{body}");
        let detail = body["detail"].as_str().unwrap_or_default();
        assert!(
            detail.starts_with("fallback_url: ") && detail.contains("own short URL"),
            "{body}"
        );
    }
    let r = get(&app, "/links/gig", &write).await;
    assert_eq!(r.status().as_u16(), 404, "gig was not created");

    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://event.example/", "key": "gig",
                "fallback_url": "https://0x1f.ie/home"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let made: Value = r.json().await.expect("json");
    let r = app
        .client
        .patch(api(&app, "/links/gig"))
        .bearer_auth(&write)
        .json(&json!({"inactive": true, "fallback_url": "https://0x1f.ie/gig"}))
        .send()
        .await
        .expect("PATCH");
    assert_eq!(problem(r, 400).await, "urn:qrtag:problem:invalid-url");
    let r = get(&app, "/links/gig", &write).await;
    let now: Value = r.json().await.expect("json");
    assert_eq!(now["rev"], made["rev"], "nothing written: {now}");
    assert_eq!(now["fallback_url"], "https://0x1f.ie/home");
}

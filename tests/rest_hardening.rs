//! Issue 30 on the REST API and the CLI: what one key (or none) could make
//! the server hold, send or do. Destinations capped at every surface, list
//! pages cut by bytes as well as rows, `If-Match` lists, and the rate limit
//! of requests without a valid key.

mod support;

use support::api::{api, new_key, post};

use qrtag::server::api::ApiSettings;
use qrtag::values::destination::MAX_DESTINATION;
use serde_json::{Value, json};
use support::{TestApp, header, spawn_with, test_settings};

async fn spawn_api() -> TestApp {
    spawn_api_with(|_| {}).await
}

async fn spawn_api_with(edit: impl FnOnce(&mut ApiSettings)) -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    let mut api = ApiSettings::new("127.0.0.1:0", dir.path().join("didcomm-keys.json"));
    edit(&mut api);
    settings.api = Some(api);
    spawn_with(settings, dir).await
}

/// A URL of exactly `len` bytes.
fn url_of(len: usize, tag: &str) -> String {
    let head = format!("https://example.com/{tag}/");
    format!("{head}{}", "x".repeat(len - head.len()))
}

/// 50 links with 4 MB destinations made the store, the snapshot and every
/// list page hundreds of megabytes, and a 54-byte scan a 4 MB answer.
/// Now every surface refuses a destination over `MAX_DESTINATION` bytes
/// with a short message, and takes one at the cap.
#[tokio::test]
async fn a_destination_over_the_cap_is_refused_everywhere_in_a_short_answer() {
    let app = spawn_api().await;
    let write = new_key(&app, "write");
    let huge = url_of(1 << 20, "huge");
    let over = url_of(MAX_DESTINATION + 1, "over");

    for url in [&huge, &over] {
        let r = post(&app, "/links", &write, &json!({ "url": url, "key": "big" })).await;
        assert_eq!(r.status().as_u16(), 400);
        let text = r.text().await.expect("body");
        assert!(text.len() < 600, "{} bytes: {}", text.len(), &text[..600]);
        let body: Value = serde_json::from_str(&text).expect("problem");
        assert_eq!(body["type"], "urn:qrtag:problem:invalid-url");
        assert!(
            body["detail"]
                .as_str()
                .is_some_and(|d| d.contains(&MAX_DESTINATION.to_string())),
            "{body}"
        );
    }
    let r = post(
        &app,
        "/links/bulk",
        &write,
        &json!({"links": [{"url": over}, {"url": "https://example.com/ok"}]}),
    )
    .await;
    let body: Value = r.json().await.expect("json");
    assert_eq!(
        body["results"][0]["problem"]["type"],
        "urn:qrtag:problem:invalid-url"
    );
    assert!(body["results"][1]["link"]["key"].is_string());

    let at_cap = url_of(MAX_DESTINATION, "cap");
    let r = post(
        &app,
        "/links",
        &write,
        &json!({ "url": at_cap, "key": "cap" }),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let r = app
        .client
        .patch(api(&app, "/links/cap"))
        .bearer_auth(&write)
        .json(&json!({ "url": over }))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 400);
    app.wait_for_status("/cap", 302).await;
    assert_eq!(
        header(&app.get("/cap").await, "location"),
        Some(at_cap.as_str())
    );

    // The CLI: one line, non-zero.
    let out = app.cli(&["new", &over, "--key", "cli"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // (clap names the value given, as for any invalid value.)
    assert_eq!(err.trim_end().lines().count(), 1);
    assert!(
        err.contains(&format!("at most {MAX_DESTINATION} bytes")),
        "{}",
        &err[err.len().saturating_sub(200)..]
    );
}

/// Every page of the list under `prefix`, following `next`: the keys in
/// order and how many pages. Each page is non-empty and at most
/// `list::PAGE_BYTES` plus `slack` bytes (the JSON around the counted text).
async fn walk_pages(app: &TestApp, prefix: &str, key: &str, slack: usize) -> (Vec<String>, usize) {
    let mut seen = Vec::new();
    let mut after = String::new();
    let mut pages = 0;
    loop {
        let r = app
            .client
            .get(api(
                app,
                &format!("/links?prefix={prefix}&limit=1000{after}"),
            ))
            .bearer_auth(key)
            .send()
            .await
            .expect("request");
        assert_eq!(r.status().as_u16(), 200);
        let text = r.text().await.expect("body");
        assert!(
            text.len() <= qrtag::console::list::PAGE_BYTES + slack,
            "a page of {} bytes",
            text.len()
        );
        let page: Value = serde_json::from_str(&text).expect("json");
        let rows = page["links"].as_array().expect("links");
        assert!(!rows.is_empty());
        seen.extend(
            rows.iter()
                .map(|r| r["key"].as_str().expect("key").to_owned()),
        );
        pages += 1;
        match page["next"].as_str() {
            Some(next) => after = format!("&after={next}"),
            None => return (seen, pages),
        }
    }
}

/// A page of the list stops at `list::PAGE_BYTES` of keys and
/// destinations as well as at its row count, and its cursor goes on
/// from there: a walk still gives every link once.
#[tokio::test]
async fn a_list_page_is_cut_by_bytes_and_its_cursor_goes_on() {
    let app = spawn_api().await;
    let write = new_key(&app, "write");
    let read = new_key(&app, "read");
    let n = 300;
    for run in 0..3 {
        let links: Vec<Value> = (run * 100..(run + 1) * 100)
            .map(|i| json!({"url": url_of(MAX_DESTINATION, &format!("{i}")), "key": format!("long/{i:03}")}))
            .collect();
        let r = post(&app, "/links/bulk", &write, &json!({ "links": links })).await;
        assert_eq!(r.status().as_u16(), 200);
    }
    app.wait_for_status(&format!("/long/{:03}", n - 1), 302)
        .await;

    // Rows' keys and URLs within the budget, plus JSON around them.
    let (seen, pages) = walk_pages(&app, "long/", &read, 100 * 1000).await;
    assert!(pages >= 3, "{pages} pages");
    let expected: Vec<String> = (0..n).map(|i| format!("long/{i:03}")).collect();
    assert_eq!(seen, expected);
}

/// `If-Match` with a list (RFC 9110 §13.1.1) matches when any of its
/// strong tags is the current revision; a weak tag never does.
#[tokio::test]
async fn if_match_with_a_list_holding_the_current_etag_writes() {
    let app = spawn_api().await;
    let write = new_key(&app, "write");
    let r = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://example.com/a", "key": "m"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let etag = header(&r, "etag").expect("etag").to_owned();
    let patch = |if_match: String, url: &'static str| {
        app.client
            .patch(api(&app, "/links/m"))
            .bearer_auth(&write)
            .header("if-match", if_match)
            .json(&json!({ "url": url }))
            .send()
    };
    let r = patch(format!("W/{etag}"), "https://example.com/w")
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 412, "a weak tag never matches");
    let r = patch(format!("\"0-old\", {etag}"), "https://example.com/b")
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    let newer = header(&r, "etag").expect("etag").to_owned();
    let r = patch(format!("{etag}, \"9-other\""), "https://example.com/c")
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 412, "none is current");
    let r = patch("*".to_owned(), "https://example.com/d")
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    assert_ne!(header(&r, "etag"), Some(newer.as_str()));
}

/// Requests with no key or a wrong one were never limited, and each wrong
/// key cost a read of the key store. Past `STRANGERS_PER_SECOND` refusals
/// in a second an address is answered 429 (problem, `Retry-After`);
/// another address is not.
#[tokio::test]
async fn requests_without_a_valid_key_are_limited_per_address() {
    use qrtag::server::rest::strangers::STRANGERS_PER_SECOND;
    let app = spawn_api().await;
    let read = new_key(&app, "read");
    // The right ID with a wrong secret: a key store read each time.
    let last = if read.ends_with('x') { "y" } else { "x" };
    let wrong = format!("{}{last}", &read[..read.len() - 1]);
    let from = |ip: &str| {
        reqwest::Client::builder()
            .local_address(ip.parse::<std::net::IpAddr>().expect("ip"))
            .build()
            .expect("client")
    };
    let first = from("127.0.0.1");
    let other = from("127.0.0.2");
    let mut limited = None;
    // Three times the limit in a row meets it unless each request took
    // over a third of a second.
    for _ in 0..3 * STRANGERS_PER_SECOND {
        let r = first
            .get(api(&app, "/links"))
            .bearer_auth(&wrong)
            .send()
            .await
            .expect("request");
        if r.status().as_u16() == 429 {
            limited = Some(r);
            break;
        }
        assert_eq!(r.status().as_u16(), 401);
    }
    let r = limited.expect("a 429 from the first address");
    assert_eq!(header(&r, "retry-after"), Some("1"));
    assert_eq!(header(&r, "content-type"), Some("application/problem+json"));
    let body: Value = r.json().await.expect("problem");
    assert_eq!(body["type"], "urn:qrtag:problem:rate-limited");

    let r = other
        .get(api(&app, "/links"))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 401, "another address is not limited");
}

/// A parent key and its child created at once: the child's check for a
/// parent and its write were two steps, so a parent written in between
/// was taken over (8 times in 200 on a release build). Whichever wins, a
/// child may exist beside its parent only if it was written first (its
/// sequence number is lower), never after.
#[tokio::test]
async fn a_child_is_never_written_after_its_parent_when_both_are_created_at_once() {
    let app = spawn_api_with(|api| api.rate_per_second = 1_000_000).await;
    let write = new_key(&app, "write");
    let trials = 200;
    let mut both = 0;
    for i in 0..trials {
        let parent = json!({"url": "https://example.com/p", "key": format!("race{i}")});
        let child = json!({"url": "https://example.com/c", "key": format!("race{i}/c")});
        let (p, c) = tokio::join!(
            post(&app, "/links", &write, &parent),
            post(&app, "/links", &write, &child)
        );
        assert_eq!(p.status().as_u16(), 201, "a parent never checks");
        match c.status().as_u16() {
            201 => both += 1,
            409 => {}
            other => panic!("child: {other}"),
        }
    }
    let db = rusqlite::Connection::open(&app.db).expect("open");
    let seq = |key: &str| -> Option<i64> {
        db.query_row(
            "SELECT seq FROM links WHERE key = ?1 AND deleted = 0",
            [key],
            |r| r.get(0),
        )
        .ok()
    };
    let mut late = Vec::new();
    for i in 0..trials {
        let (p, c) = (seq(&format!("race{i}")), seq(&format!("race{i}/c")));
        if let (Some(p), Some(c)) = (p, c)
            && c > p
        {
            late.push(i);
        }
    }
    assert!(
        late.is_empty(),
        "children written after their parent: {late:?} ({both} children of {trials} stored)"
    );
}

/// Issue 31: list items carry their notes (up to 2,000 characters each), so
/// a page is cut by its notes too: a page of long notes stays within the
/// list's byte budget, and `next` walks every link.
#[tokio::test]
async fn a_list_page_of_long_notes_stays_within_the_page_budget() {
    let app = spawn_api().await;
    let write = new_key(&app, "write");
    let notes = "€".repeat(2000);
    let n = 300;
    let links: Vec<Value> = (0..n)
        .map(|i| json!({"url": "https://example.com/", "key": format!("noted/{i:03}"), "notes": notes}))
        .collect();
    let r = post(&app, "/links/bulk", &write, &json!({ "links": links })).await;
    assert_eq!(r.status().as_u16(), 200);
    app.wait_for_status(&format!("/noted/{:03}", n - 1), 302)
        .await;
    let (seen, pages) = walk_pages(&app, "noted/", &write, 300 * 1000).await;
    assert!(pages >= 2, "{pages} pages");
    let expected: Vec<String> = (0..n).map(|i| format!("noted/{i:03}")).collect();
    assert_eq!(seen, expected);
}

//! The redirect service end to end: the real application on port 0, real
//! sockets, the embedded store on a real file.

mod support;

use std::time::Duration;

use support::{PUBLIC_URL, eventually, header, spawn_app};

#[tokio::test]
async fn get_redirects_with_the_three_headers() {
    let app = spawn_app().await;
    app.link("H83if", "https://example.com/wp/whelans/?p=14")
        .await;
    app.wait_for_status("/H83if", 302).await;

    let r = app.get("/H83if").await;
    assert_eq!(r.status(), 302);
    assert_eq!(
        header(&r, "location"),
        Some("https://example.com/wp/whelans/?p=14")
    );
    assert_eq!(header(&r, "cache-control"), Some("private, no-store"));
    assert_eq!(
        header(&r, "link"),
        Some(format!("<{PUBLIC_URL}/H83if>; rel=\"shortlink\"").as_str())
    );
}

#[tokio::test]
async fn head_gets_the_same_status_and_headers_and_no_body() {
    let app = spawn_app().await;
    app.link("H83if", "https://example.com/").await;
    app.wait_for_status("/H83if", 302).await;

    let r = app
        .client
        .head(app.url("/H83if"))
        .send()
        .await
        .expect("HEAD");
    assert_eq!(r.status(), 302);
    assert_eq!(header(&r, "location"), Some("https://example.com/"));
    assert_eq!(header(&r, "cache-control"), Some("private, no-store"));
    assert!(header(&r, "link").is_some_and(|l| l.contains("rel=\"shortlink\"")));
    assert!(r.bytes().await.expect("body").is_empty());
}

#[tokio::test]
async fn unknown_inactive_and_expired_keys_get_the_same_404() {
    let app = spawn_app().await;
    app.link("live1", "https://example.com/").await;
    app.link("dead1", "https://example.com/").await;
    app.link("old01", "https://example.com/").await;
    // Writes reach the snapshot in order: once the last is seen, all are.
    app.wait_for_status("/old01", 302).await;
    let out = app.cli(&["disable", "dead1"]);
    assert!(out.status.success(), "{out:?}");
    qrtag::links::update(
        &app.store(),
        &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
        &"old01".parse().expect("key"),
        |d| qrtag::link::set_expires(d, Some(chrono::Utc::now() - chrono::Duration::seconds(1))),
    )
    .await
    .expect("expire");
    app.wait_for_status("/old01", 404).await;

    let mut bodies = Vec::new();
    for path in ["/nope1", "/dead1", "/old01", "/"] {
        let r = app.get(path).await;
        assert_eq!(r.status(), 404, "{path}");
        assert_eq!(
            header(&r, "content-type"),
            Some("text/plain; charset=utf-8")
        );
        assert!(header(&r, "location").is_none());
        bodies.push(r.text().await.expect("body"));
    }
    assert!(
        bodies.windows(2).all(|w| w[0] == w[1]),
        "bodies differ: {bodies:?}"
    );
}

#[tokio::test]
async fn other_methods_get_501_with_allow() {
    let app = spawn_app().await;
    app.link("H83if", "https://example.com/").await;
    for method in ["POST", "PUT", "DELETE", "OPTIONS", "PATCH"] {
        let m = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let r = app
            .client
            .request(m, app.url("/H83if"))
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 501, "{method}");
        assert_eq!(header(&r, "allow"), Some("GET, HEAD"), "{method}");
    }
}

#[tokio::test]
async fn dot_segments_are_a_400() {
    let app = spawn_app().await;
    app.link("docs", "https://example.com/docs/").await;
    app.wait_for_status("/docs", 302).await;
    for path in [
        "/docs/../etc",
        "/docs/./x",
        "/docs/%2e%2E/x",
        "/docs/%2E",
        "/..",
    ] {
        // Sent raw: an HTTP client would normalise the dots away.
        let status = raw_get_status(app.public, path).await;
        assert_eq!(status, 400, "{path}");
    }
}

#[tokio::test]
async fn no_open_redirect_through_a_double_slash() {
    let app = spawn_app().await;
    app.link("evil", "https://example.com/").await;
    app.wait_for_status("/evil", 302).await;
    for path in ["//evil.example/x", "//evil.example", "///evil.example/"] {
        let status = raw_get_status(app.public, path).await;
        assert_eq!(status, 404, "{path}");
    }
}

#[tokio::test]
async fn path_appending_and_query_merge() {
    let app = spawn_app().await;
    app.link("xyz", "https://xyz.example.com").await;
    app.link("x", "https://a.example/x/?utm=print&lang=en")
        .await;
    app.link("docs", "/documentation").await;
    app.link("documentation", "https://docs.example/").await;
    // Links reach the snapshot in write order: wait for the last one.
    app.wait_for_status("/documentation", 302).await;

    let cases = [
        ("/xyz/abc", "https://xyz.example.com/abc"),
        ("/x/y/z", "https://a.example/x/y/z?utm=print&lang=en"),
        (
            "/x/y?lang=ga&q=a+b",
            "https://a.example/x/y?utm=print&lang=ga&q=a+b",
        ),
        ("/docs/v1/users", "https://docs.example/v1/users"),
    ];
    for (path, want) in cases {
        let r = app.get(path).await;
        assert_eq!(r.status(), 302, "{path}");
        assert_eq!(header(&r, "location"), Some(want), "{path}");
    }
    let r = app.get("/docs/v1").await;
    assert_eq!(
        header(&r, "link"),
        Some(format!("<{PUBLIC_URL}/docs>; rel=\"shortlink\"").as_str()),
        "the Link header names the key matched first"
    );
}

#[tokio::test]
async fn a_cli_edit_reaches_the_running_server_within_a_second() {
    let app = spawn_app().await;
    let out = app.cli(&["new", "https://before.example/", "--key", "tag01"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("{PUBLIC_URL}/tag01")
    );
    app.wait_for_status("/tag01", 302).await;

    let out = app.cli(&["set", "tag01", "https://after.example/"]);
    assert!(out.status.success(), "{out:?}");
    let took = eventually(Duration::from_secs(1), || async {
        header(&app.get("/tag01").await, "location") == Some("https://after.example/")
    })
    .await;
    assert!(took < Duration::from_secs(1));
}

#[tokio::test]
async fn health_and_readiness_on_the_admin_listener_only() {
    let app = spawn_app().await;
    let r = app.admin_get("/healthz").await.expect("healthz");
    assert_eq!(r.status(), 200);
    let r = app.admin_get("/readyz").await.expect("readyz");
    assert_eq!(r.status(), 200);
    assert!(r.text().await.expect("body").starts_with("ready"));
    // On the public listener these are just keys nobody created.
    assert_eq!(app.get("/healthz").await.status(), 404);
}

/// Sends a request line exactly as given, bypassing client-side normalisation.
async fn raw_get_status(addr: std::net::SocketAddr, path: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!("GET {path} HTTP/1.1\r\nHost: 0x1f.ie\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).await.expect("read");
    let text = String::from_utf8_lossy(&resp);
    text.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"))
}

/// Documents written before destinations were judged strictly (or edited by
/// hand) that could fool a person are skipped and counted like any invalid
/// document: the service never redirects through them.
#[tokio::test]
async fn stored_destinations_that_fool_people_are_invalid_documents() {
    use qrtag::store::LinkStore;
    let app = spawn_app().await;
    let store = app.store();
    let too_long = format!("https://example.com/{}", "x".repeat(4 << 20));
    let bad = [
        ("userinfo", "https://example.com:443@evil.example/"),
        ("dot", "/.//evil.example"),
        ("dotdot", "/..//evil.example"),
        ("encdot", "/%2e%2e//evil.example"),
        ("fullwidth", "https://ｅｖｉｌ.example/"),
        ("unicode", "https://bücher.example/"),
        ("backslash", "/a\\..\\..\\evil.example"),
        // Issue 30: over the length cap (here 4 MB, as the issue tried).
        ("toolong", too_long.as_str()),
    ];
    for (key, url) in bad {
        let doc = serde_json::json!({"url": url, "inactive": false});
        let serde_json::Value::Object(doc) = doc else {
            unreachable!("an object literal")
        };
        store
            .create(&key.parse().expect("key"), &doc)
            .await
            .expect("stored raw");
    }
    // Issue 31: capitals in a host are no trick (hosts are case-insensitive):
    // served, to the host in lower case, as every writer now stores it.
    let upper = serde_json::json!({"url": "https://EVIL.example/x", "inactive": false});
    let serde_json::Value::Object(upper) = upper else {
        unreachable!("an object literal")
    };
    store
        .create(&"upper".parse().expect("key"), &upper)
        .await
        .expect("stored raw");
    // Writes reach the snapshot in order: once the last is seen, all are.
    app.link("good1", "https://xn--bcher-kva.example/").await;
    app.wait_for_status("/good1", 302).await;
    let r = app.get("/upper").await;
    assert_eq!(r.status(), 302);
    assert_eq!(header(&r, "location"), Some("https://evil.example/x"));
    for (key, url) in bad {
        let r = app.get(&format!("/{key}")).await;
        assert_eq!(
            r.status(),
            404,
            "/{key} -> {}: {:?}",
            &url[..url.len().min(60)],
            header(&r, "location").map(str::len)
        );
    }
    let ready = app
        .admin_get("/readyz")
        .await
        .expect("admin listener")
        .text()
        .await
        .expect("body");
    assert!(
        ready.contains(&format!("2 links, {} invalid", bad.len())),
        "{ready}"
    );
}

/// Issue 30: a destination over the cap already in the store when the
/// server starts is skipped by the full load like any invalid document;
/// the server starts and serves the rest.
#[tokio::test]
async fn a_stored_destination_over_the_cap_is_skipped_by_a_full_load() {
    use qrtag::store::LinkStore;
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = support::test_settings(dir.path());
    let db = dir.path().join("qrtag.db");
    support::init_db(&db);
    let store = qrtag::store::sqlite::SqliteStore::open(&db).expect("open");
    let huge = format!("https://example.com/{}", "x".repeat(4 << 20));
    for (key, url) in [("huge", huge.as_str()), ("fine", "https://example.com/")] {
        let serde_json::Value::Object(doc) = serde_json::json!({ "url": url }) else {
            unreachable!("an object literal")
        };
        store
            .create(&key.parse().expect("key"), &doc)
            .await
            .expect("stored raw");
    }
    drop(store);
    let app = support::spawn_with(settings, dir).await;
    assert_eq!(app.get("/fine").await.status(), 302);
    let r = app.get("/huge").await;
    assert_eq!(r.status(), 404);
    assert!(r.bytes().await.expect("body").len() < 1000);
    let ready = app
        .admin_get("/readyz")
        .await
        .expect("admin listener")
        .text()
        .await
        .expect("body");
    assert!(ready.contains("1 links, 1 invalid"), "{ready}");
}

/// Issue 30: a document whose key is longer than any key may be (stored
/// before the bound, or written to the store by hand) is an invalid
/// document: counted, never served, and the server keeps serving the rest.
#[tokio::test]
async fn a_stored_key_over_the_bound_is_an_invalid_document() {
    let app = spawn_app().await;
    let segments = vec!["k".repeat(64); 20].join("/");
    let long = &segments[..1039];
    let conn = rusqlite::Connection::open(&app.db).expect("open");
    conn.execute(
        "INSERT INTO links (key, doc, rev, seq, deleted) VALUES (?1, ?2, 1, \
         (SELECT COALESCE(MAX(seq), 0) + 1 FROM links), 0)",
        rusqlite::params![long, r#"{"url":"https://example.com/long"}"#],
    )
    .expect("stored raw");
    drop(conn);
    // Writes reach the snapshot in order: once the next is seen, so is this.
    app.link("good1", "https://example.com/good").await;
    app.wait_for_status("/good1", 302).await;
    assert_eq!(app.get(&format!("/{long}")).await.status(), 404);
    let ready = app
        .admin_get("/readyz")
        .await
        .expect("admin listener")
        .text()
        .await
        .expect("body");
    assert!(ready.contains("1 links, 1 invalid"), "{ready}");
}

/// Issue 19, item 3: thousands of query parameters or path segments made
/// each request cost tens of milliseconds (quadratic merging, a key lookup
/// per segment). Past the caps it is a 400, logged like any answer; at the
/// caps it redirects.
#[tokio::test]
async fn requests_past_the_parameter_and_segment_caps_are_a_logged_400() {
    use qrtag::redirect::policy::{MAX_PATH_SEGMENTS, MAX_QUERY_PARAMS};
    let app = spawn_app().await;
    app.link("docs", "https://docs.example/").await;
    app.wait_for_status("/docs", 302).await;

    let many = (0..7_000)
        .map(|i| format!("p{i}=1"))
        .collect::<Vec<_>>()
        .join("&");
    let r = app.get(&format!("/docs?{many}")).await;
    assert_eq!(r.status(), 400);
    let deep = format!("/docs{}", "/a".repeat(30_000));
    let r = app.get(&deep).await;
    assert_eq!(r.status(), 400);

    let most = vec!["p=1"; MAX_QUERY_PARAMS].join("&");
    let r = app.get(&format!("/docs?{most}")).await;
    assert_eq!(r.status(), 302);
    let deepest = format!("/docs{}", "/a".repeat(MAX_PATH_SEGMENTS - 1));
    let r = app.get(&deepest).await;
    assert_eq!(r.status(), 302);
    assert_eq!(
        header(&r, "location"),
        Some(format!("https://docs.example{}", &deepest[5..]).as_str())
    );

    let log = app.dir.path().join("access.log");
    eventually(Duration::from_secs(5), || async {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .filter(|l| l.split(' ').nth(5) == Some("400"))
            .count()
            == 2
    })
    .await;
}

/// A destination that is one of the service's own short URLs is followed
/// as an internal redirect: a chain of them is one 302 to where it ends, and
/// a link to itself is a loop answered 404, not a 302 to itself forever.
#[tokio::test]
async fn a_destination_on_the_public_origin_is_followed_here() {
    let app = spawn_app().await;
    app.link("b", "https://d.example/x").await;
    app.link("a", &format!("{PUBLIC_URL}/b/y?q=1")).await;
    app.link("selfie", &format!("{PUBLIC_URL}/selfie")).await;
    app.link("other", "https://0x1f.ie:8443/b").await;
    app.wait_for_status("/other", 302).await;

    let r = app.get("/a").await;
    assert_eq!(r.status(), 302);
    assert_eq!(header(&r, "location"), Some("https://d.example/x/y?q=1"));
    let r = app.get("/a/z").await;
    assert_eq!(header(&r, "location"), Some("https://d.example/x/y/z?q=1"));
    let r = app.get("/selfie").await;
    assert_eq!(r.status(), 404, "{:?}", header(&r, "location"));
    // Another port is another origin.
    let r = app.get("/other").await;
    assert_eq!(header(&r, "location"), Some("https://0x1f.ie:8443/b"));
}

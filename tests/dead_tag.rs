//! A person who scans a tag that leads nowhere (unknown, disabled, expired,
//! deleted) on the real binary (issue 33): a browser gets a small HTML page
//! naming the operator from the configuration file, curl keeps the plain
//! body, every answer is the same 404 and the same access-log line as
//! before, and a replaced template is checked at start.

mod support;

use std::path::Path;
use std::time::Duration;

use support::process::ServerProcess;
use support::{init_db, poll, qrtag_bin, qrtag_cmd};

/// What Chromium sends for a page it navigates to (a scanned QR code).
const BROWSER: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
/// What curl sends.
const CURL: &str = "*/*";

fn ok(out: std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A server on `db` with the configuration file `toml`, whose links are a
/// live one, a disabled, an expired and a deleted one.
async fn server_with_dead_links(dir: &Path, toml: &str) -> ServerProcess {
    let db = dir.join("qrtag.db");
    init_db(&db);
    for key in ["live1", "dead1", "old01", "gone1"] {
        ok(qrtag_cmd(
            &db,
            &["new", "https://venue.example/", "--key", key],
        ));
    }
    ok(qrtag_cmd(&db, &["disable", "dead1"]));
    ok(qrtag_cmd(&db, &["delete", "gone1", "--yes"]));
    let store = qrtag::store::sqlite::SqliteStore::open(&db).expect("store");
    qrtag::links::update(
        &store,
        &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
        &"old01".parse().expect("key"),
        |d| qrtag::link::set_expires(d, Some(chrono::Utc::now() - chrono::Duration::seconds(1))),
    )
    .await
    .expect("expire");
    let config = dir.join("qrtag.toml");
    std::fs::write(&config, toml).expect("config");
    let config = config.to_string_lossy().into_owned();
    ServerProcess::spawn(&db, &[], &[("QRTAG_CONFIG", &config)], false).await
}

async fn get(client: &reqwest::Client, url: &str, accept: &str) -> reqwest::Response {
    client
        .get(url)
        .header("accept", accept)
        .send()
        .await
        .expect("GET")
}

fn header<'a>(r: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    r.headers().get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn a_browser_gets_a_page_naming_the_operator_and_curl_the_plain_body() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = server_with_dead_links(
        dir.path(),
        "operator_name = \"The Whelan's <Venue>\"\noperator_contact = \"events@venue.example\"\n",
    )
    .await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");

    // Until the links are loaded every key answers 503.
    let live = poll::until(Duration::from_secs(5), "the links loaded", || async {
        let r = get(&client, &srv.url("/live1"), BROWSER).await;
        (r.status() != 503).then_some(r)
    })
    .await;
    assert_eq!(live.status(), 302, "a live tag still redirects a browser");

    let dead = ["/nope1", "/dead1", "/old01", "/gone1"];
    for path in dead {
        let r = get(&client, &srv.url(path), BROWSER).await;
        assert_eq!(r.status(), 404, "{path}");
        assert_eq!(header(&r, "content-type"), Some("text/html; charset=utf-8"));
        assert_eq!(header(&r, "vary"), Some("accept"), "{path}");
        assert!(
            header(&r, "content-security-policy").is_some_and(|c| c.contains("default-src 'none'"))
        );
        assert!(header(&r, "location").is_none());
        let html = r.text().await.expect("body");
        assert!(html.len() < 4096, "{path}: {} bytes", html.len());
        assert!(html.contains("This tag is not active"), "{html}");
        assert!(html.contains("The Whelan&#39;s &lt;Venue&gt;"), "{html}");
        assert!(
            html.contains("<a href=\"mailto:events@venue.example\">events@venue.example</a>"),
            "{html}"
        );
        assert!(
            html.contains(&format!("<code>{}</code>", &path[1..])),
            "{html}"
        );
        let lower = html.to_ascii_lowercase();
        for never in ["<script", "src=", "url(", "<link", "http:", "https:"] {
            assert!(!lower.contains(never), "{path}: {never} in {html}");
        }

        for accept in [CURL, "text/plain, text/html;q=0.5"] {
            let r = get(&client, &srv.url(path), accept).await;
            assert_eq!(r.status(), 404, "{path} {accept}");
            assert_eq!(
                header(&r, "content-type"),
                Some("text/plain; charset=utf-8")
            );
            assert_eq!(header(&r, "vary"), Some("accept"));
            assert_eq!(r.text().await.expect("body"), "not found\n");
        }
        // No Accept at all, as many scripts send.
        let r = client.get(srv.url(path)).send().await.expect("GET");
        assert_eq!(r.text().await.expect("body"), "not found\n");
    }

    // Every answer has its line, as before: 404, no Location.
    let log = dir.path().join("access.log");
    let answers = |text: &str, path: &str| -> Vec<(u16, bool)> {
        text.lines()
            .map(|l| qrtag::access_log::parse_line(l).expect("a log line"))
            .filter(|l| l.target == path)
            .map(|l| (l.status, l.location.is_none()))
            .collect()
    };
    let text = poll::until(Duration::from_secs(5), "the log lines", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let all = dead.iter().all(|p| answers(&text, p).len() >= 4);
        std::future::ready(all.then_some(text))
    })
    .await;
    for path in dead {
        assert_eq!(answers(&text, path), vec![(404, true); 4], "{path}");
    }
    srv.stop().await;
}

#[tokio::test]
async fn a_replaced_page_is_filled_in_and_a_bad_one_stops_the_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("dead.html");
    std::fs::write(
        &page,
        "<!doctype html><title>{{name}}</title><p>Tag {{key}} is resting. \
         <a href=\"{{contact_href}}\">{{contact}}</a></p>\n",
    )
    .expect("page");
    let toml = format!(
        "operator_name = \"Venue\"\noperator_contact = \"https://venue.example/help\"\n\
         dead_tag_page = \"{}\"\n",
        page.display()
    );
    let srv = server_with_dead_links(dir.path(), &toml).await;
    let r = poll::until(Duration::from_secs(5), "the links loaded", || async {
        let r = get(&reqwest::Client::new(), &srv.url("/dead1"), BROWSER).await;
        (r.status() != 503).then_some(r)
    })
    .await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.text().await.expect("body"),
        "<!doctype html><title>Venue</title><p>Tag dead1 is resting. \
         <a href=\"https://venue.example/help\">https://venue.example/help</a></p>\n"
    );
    srv.stop().await;

    // A bad file, a bad contact: one line, exit 2, no server.
    let script = dir.path().join("script.html");
    std::fs::write(&script, "<p>{{key}}</p><script>alert(1)</script>").expect("page");
    let big = dir.path().join("big.html");
    std::fs::write(&big, "x".repeat(5000)).expect("page");
    let typo = dir.path().join("typo.html");
    std::fs::write(&typo, "<p>{{kee}}</p>").expect("page");
    let db = dir.path().join("qrtag.db");
    let db = db.to_string_lossy();
    for (args, says) in [
        (
            vec!["--dead-tag-page", &*script.to_string_lossy()],
            "JavaScript",
        ),
        (
            vec!["--dead-tag-page", &*big.to_string_lossy()],
            "at most 4096",
        ),
        (
            vec!["--dead-tag-page", &*typo.to_string_lossy()],
            "unknown placeholder {{kee}}",
        ),
        (
            vec!["--dead-tag-page", "/nonexistent/dead.html"],
            "/nonexistent/dead.html",
        ),
        (
            vec!["--operator-contact", "call us"],
            "email address or an http(s) URL",
        ),
    ] {
        let out = qrtag_bin()
            .args(["--db", &db, "serve", "--listen", "127.0.0.1:0"])
            .args(["--admin-listen", "127.0.0.1:0"])
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

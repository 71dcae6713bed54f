//! The whole loop a user relies on: scans through the real server, the real
//! access log it writes, and the real `qrtag stats` counting them. The stats
//! tests on hand-written logs check the counting; this checks that what the
//! server writes is what stats reads.

mod support;

use std::time::Duration;

use support::{eventually, spawn_app};

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const ANDROID: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

#[tokio::test]
async fn scans_through_the_server_are_counted_by_stats() {
    let app = spawn_app().await;
    app.link("tag01", "https://example.com/poster").await;
    app.wait_for_status("/tag01", 302).await;
    let log = app.dir.path().join("access.log");

    let get = |ua: &'static str, path: &str, cookie: Option<String>| {
        let mut req = app.client.get(app.url(path)).header("user-agent", ua);
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        req.send()
    };
    // Phone A scans twice, keeping its cookie; phone B once.
    let first = get(IPHONE, "/tag01", None).await.expect("scan");
    assert_eq!(first.status(), 302);
    let cookie = first
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::to_owned)
        .expect("a tracking cookie");
    assert_eq!(
        get(IPHONE, "/tag01", Some(cookie))
            .await
            .expect("scan")
            .status(),
        302
    );
    assert_eq!(
        get(ANDROID, "/tag01", None).await.expect("scan").status(),
        302
    );
    // Not scans: a HEAD, a crawler, an unknown key.
    let head = app
        .client
        .head(app.url("/tag01"))
        .header("user-agent", IPHONE)
        .send()
        .await
        .expect("head");
    assert_eq!(head.status(), 302);
    assert_eq!(
        get(GOOGLEBOT, "/tag01", None).await.expect("bot").status(),
        302
    );
    assert_eq!(
        get(IPHONE, "/nope1", None).await.expect("404").status(),
        404
    );

    eventually(Duration::from_secs(2), || async {
        our_lines(&log).len() == 6
    })
    .await;

    let scans = app.dir.path().join("scans.log");
    std::fs::write(&scans, our_lines(&log).concat()).expect("write scans.log");
    let out = app.cli(&[
        "stats",
        "--format",
        "json",
        scans.to_str().expect("utf-8 path"),
    ]);
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(
        report["malformed"]["count"], 0,
        "the server wrote only well-formed lines"
    );
    let key = |k: &str| {
        report["keys"]
            .as_array()
            .and_then(|keys| keys.iter().find(|e| e["key"] == k))
            .cloned()
            .unwrap_or_else(|| panic!("no row for {k} in {report}"))
    };
    let tag = key("tag01");
    assert_eq!(tag["scans"], 3, "{tag}");
    assert_eq!(tag["unique_scanners"], 2, "{tag}");
    assert_eq!(tag["head"], 1, "{tag}");
    assert_eq!(tag["bot"], 1, "{tag}");
    assert_eq!(tag["not_found"], 0, "{tag}");
    assert_eq!(tag["requests"], 5, "{tag}");
    assert_eq!(key("nope1")["not_found"], 1);
}

/// This test's lines: the harness's waiting requests send no User-Agent
/// (field 4 is `-`), every request above does.
fn our_lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_inclusive('\n')
        .filter(|l| l.split(' ').nth(3).is_some_and(|ua| ua != "-"))
        .map(str::to_owned)
        .collect()
}

/// The same loop with the console's scan index on: it follows the log the
/// server writes and ends up with `qrtag stats`'s numbers for every key.
#[tokio::test]
async fn the_scan_index_follows_the_server_s_log_to_stats_numbers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = support::test_settings(dir.path());
    let log = dir.path().join("access.log");
    let mut index_settings = qrtag::scan_index::ScanIndexSettings::beside(&log);
    index_settings.poll_interval = Duration::from_millis(10);
    settings.scan_index = Some(index_settings);
    let app = support::spawn_with(settings, dir).await;
    let index = app.scan_index.clone().expect("the scan index is on");
    app.link("tag01", "https://example.com/poster").await;
    app.wait_for_status("/tag01", 302).await;

    for ua in [IPHONE, ANDROID, GOOGLEBOT] {
        let r = app
            .client
            .get(app.url("/tag01"))
            .header("user-agent", ua)
            .send()
            .await
            .expect("scan");
        assert_eq!(r.status(), 302);
    }
    let r = app
        .client
        .get(app.url("/nope1"))
        .header("user-agent", IPHONE)
        .send()
        .await
        .expect("404");
    assert_eq!(r.status(), 404);
    eventually(Duration::from_secs(2), || async {
        our_lines(&log).len() == 4
    })
    .await;

    // Everything in the log now, harness requests included.
    let mut agg = qrtag::stats::aggregate::Aggregator::new(Default::default());
    qrtag::stats::read_file(&log, &mut agg, &indicatif::ProgressBar::hidden()).expect("stats");
    let report = agg.finish();
    eventually(Duration::from_secs(5), || {
        let lines = index.with_state(|s| s.lines_read());
        async move { lines >= report.lines_read }
    })
    .await;
    // Two phones; the crawler and the harness's waiting requests (no
    // User-Agent) count as bots.
    let tag = index.key("tag01");
    assert_eq!((tag.scans, tag.unique_scanners), (2, 2));
    assert!(tag.bot >= 1);
    for k in &report.keys {
        assert_eq!(index.key(&k.key), k.stats, "key {}", k.key);
    }
}

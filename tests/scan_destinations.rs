//! Issue 34, "which rule answered": a link's scans per destination, from
//! the scan index following a real access log, on the console's link page
//! (with the rule each destination belongs to today) and in the REST API's
//! `/links/{key}/scans`, equal to `qrtag stats --by destination` over the
//! same file; and kept over a restart from the checkpoint.
//!
//! The redirect path that answers with a rule's destination is another
//! part of the issue: the lines a server with an A/B split writes are
//! appended to the server's own log as it writes them.

mod support;

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use qrtag::scan_index::{self, ScanIndexSettings};
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::api::{api, new_key};
use support::{eventually, poll, spawn_with, test_settings};

const PASSWORD: &str = "correct horse battery";
const PHONE: &str = "Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1";
/// [`PHONE`] as the header is sent.
const PHONE_HEADER: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const MAIN: &str = "https://example.com/main";
const A: &str = "https://example.com/landing?variant=a";
const B: &str = "https://example.com/landing?variant=b";
const OLD: &str = "https://example.com/last-year";
const GONE: &str = "https://example.com/sold-out";

fn append(path: &Path, text: &str) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open log");
    f.write_all(text.as_bytes()).expect("append");
}

/// What a server with a 50/50 split on `/menu` writes: `a` scans of one
/// variant, `b` of the other, two to a destination a rule no longer has,
/// one fallback answer from while the link was disabled, and a 404.
fn split_lines(a: usize, b: usize) -> String {
    let mut out = String::new();
    let mut line = |i: usize, to: &str| {
        out.push_str(&format!(
            "20261121{:02}{:02}00.0 203.0.113.{} 0Vh3kY2s{i:011} {PHONE} /menu 302 {to} GET -\n",
            10 + i / 60,
            i % 60,
            i % 200
        ));
    };
    let fallback = format!("~{GONE}");
    for (i, to) in std::iter::repeat_n(A, a)
        .chain(std::iter::repeat_n(B, b))
        .chain([OLD, OLD, fallback.as_str()])
        .enumerate()
    {
        line(i, to);
    }
    out.push_str(&format!(
        "20261121120000.0 203.0.113.9 - {PHONE} /menu/x 404 - GET -\n"
    ));
    out
}

/// `qrtag stats --by destination --key KEY` over `log`, with the keys of
/// `db`: value to scans.
fn stats(db: &Path, log: &Path, key: &str) -> BTreeMap<String, u64> {
    let out = support::qrtag_cmd(
        db,
        &[
            "stats",
            "--by",
            "destination",
            "--key",
            key,
            "--format",
            "csv",
            log.to_str().expect("path"),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[1].to_owned(), f[2].parse().expect("scans"))
        })
        .collect()
}

/// The REST rows as `qrtag stats` names them: a fallback's with its `~`.
fn as_stats(rows: &[Value]) -> BTreeMap<String, u64> {
    rows.iter()
        .map(|r| {
            let d = r["destination"].as_str().expect("named");
            let mark = if r["fallback"] == true { "~" } else { "" };
            (format!("{mark}{d}"), r["scans"].as_u64().expect("scans"))
        })
        .collect()
}

/// The link page's "Scans per destination" rows: destination, fallback,
/// scans and what sends scans there today.
fn page_rows(html: &str) -> Vec<(String, bool, u64, String)> {
    let table = html
        .split(r#"<table id="destinations""#)
        .nth(1)
        .expect("the destinations table")
        .split("</table>")
        .next()
        .expect("its end");
    table
        .split("<tr data-destination=\"")
        .skip(1)
        .map(|row| {
            let attr = |name: &str| {
                row.split(&format!(r#"{name}=""#))
                    .nth(1)
                    .and_then(|r| r.split('"').next())
                    .expect("attribute")
                    .to_owned()
            };
            let destination = row.split('"').next().expect("value").replace("&amp;", "&");
            let owner = row
                .split(r#"<td class="owner">"#)
                .nth(1)
                .and_then(|r| r.split("</td>").next())
                .expect("owner cell")
                .to_owned();
            (
                destination,
                attr("data-fallback") == "true",
                attr("data-scans").parse().expect("scans"),
                owner,
            )
        })
        .collect()
}

#[tokio::test]
async fn a_split_s_destinations_on_the_link_page_and_the_rest_api_equal_qrtag_stats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.console = Some(qrtag::console::ConsoleSettings::default());
    settings.api = Some(qrtag::server::api::ApiSettings::new(
        "127.0.0.1:0",
        dir.path().join("didcomm-keys.json"),
    ));
    let qrtag::settings::AccessLogTarget::Path(log) = settings.access_log.clone() else {
        panic!("a log file");
    };
    let mut index = ScanIndexSettings::beside(&log);
    index.poll_interval = Duration::from_millis(20);
    settings.scan_index = Some(index);
    let app = spawn_with(settings, dir).await;
    qrtag::console::password::set(&app.store(), PASSWORD)
        .await
        .expect("password set");

    // `menu` with an A/B split, written through the REST API, which answers
    // once this server serves the rules: a scan right after is judged by
    // them (a write to the store alone reaches the snapshot a poll later,
    // and a scan in between would be answered by the link's url).
    app.link("menu", MAIN).await;
    let write = new_key(&app, "write");
    let r = app
        .client
        .patch(api(&app, "/links/menu"))
        .bearer_auth(&write)
        .json(&json!({"rules": [{"url": A, "split": [0, 50]}, {"url": B, "split": [50, 100]}]}))
        .send()
        .await
        .expect("PATCH");
    assert_eq!(r.status(), StatusCode::OK, "{:?}", r.text().await);
    append(&log, &split_lines(23, 31));
    // One scan the server answers itself, by the split: one variant more.
    let r = app
        .client
        .get(app.url("/menu"))
        .header("user-agent", PHONE_HEADER)
        .send()
        .await
        .expect("scan");
    assert_eq!(r.status().as_u16(), 302);
    let got = r.headers()["location"]
        .to_str()
        .expect("a location")
        .to_owned();
    assert!(got == A || got == B, "a variant: {got}");
    let (more_a, more_b) = (u64::from(got == A), u64::from(got == B));
    // And one scan answered by the link's url (a scan before the rules).
    append(
        &log,
        &format!(
            "20261121130000.0 203.0.113.8 0Vh3kY2s99999999999 {PHONE} /menu 302 {MAIN} GET -\n"
        ),
    );

    let read = new_key(&app, "read");
    let rest = || async {
        let r = app
            .client
            .get(api(&app, "/links/menu/scans"))
            .bearer_auth(&read)
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), StatusCode::OK);
        r.json::<Value>().await.expect("json")
    };
    eventually(Duration::from_secs(10), || async {
        let body = rest().await;
        let sent: u64 = body["destinations"].as_array().map_or(0, |d| {
            d.iter().map(|r| r["scans"].as_u64().unwrap_or(0)).sum()
        });
        sent == 23 + 31 + 2 + 1 + 1 + 1
    })
    .await;
    let body = rest().await;
    let rows = body["destinations"].as_array().expect("destinations");
    // Busiest first, each variant apart, the fallback marked.
    assert_eq!(
        rows[0],
        json!({"destination": B, "fallback": false, "scans": 31 + more_b})
    );
    assert_eq!(
        rows[1],
        json!({"destination": A, "fallback": false, "scans": 23 + more_a})
    );
    let from_stats = stats(&app.db, &log, "menu");
    assert_eq!(as_stats(rows), from_stats, "REST against qrtag stats");
    assert_eq!(from_stats[&format!("~{GONE}")], 1);
    assert_eq!(from_stats[MAIN], 1);

    // The link page: the same rows, each with what sends scans there now.
    let http = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let login = format!("http://{}/console/login", app.admin);
    let html = http
        .get(&login)
        .send()
        .await
        .expect("form")
        .text()
        .await
        .expect("body");
    let at = html.find(r#"name="csrf" value=""#).expect("csrf") + 19;
    let csrf = html[at..].split('"').next().expect("token").to_owned();
    let res = http
        .post(&login)
        .form(&[("csrf", csrf.as_str()), ("password", PASSWORD)])
        .send()
        .await
        .expect("login");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = http
        .get(format!("http://{}/console/link?key=menu", app.admin))
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("body");
    assert!(html.contains("Scans per destination"), "{html}");
    let shown = page_rows(&html);
    let owners: BTreeMap<String, (u64, String)> = shown
        .iter()
        .map(|(d, fallback, n, owner)| {
            let mark = if *fallback { "~" } else { "" };
            (format!("{mark}{d}"), (*n, owner.clone()))
        })
        .collect();
    let counts: BTreeMap<String, u64> = owners.iter().map(|(d, (n, _))| (d.clone(), *n)).collect();
    assert_eq!(counts, from_stats, "the page against qrtag stats");
    assert_eq!(owners[A].1, "rule 1");
    assert_eq!(owners[B].1, "rule 2");
    assert_eq!(owners[MAIN].1, "url");
    assert_eq!(owners[OLD].1, "no longer on this link");
    // The link has no fallback now: that answer's destination is gone too.
    assert_eq!(owners[&format!("~{GONE}")].1, "no longer on this link");
}

/// The index following a real log file: a restart from its checkpoint has
/// the same destinations and reads none of the lines again.
#[tokio::test]
async fn destinations_are_kept_over_a_restart_from_the_checkpoint() {
    let dir = tempfile::tempdir().expect("dir");
    let log = dir.path().join("access.log");
    let mut settings = ScanIndexSettings::beside(&log);
    settings.poll_interval = Duration::from_millis(5);
    append(&log, &split_lines(5, 8));
    let lines = 5 + 8 + 3 + 1;
    let counted =
        |index: &std::sync::Arc<scan_index::ScanIndex>| index.with_state(|s| s.lines_read());
    let running = scan_index::start(log.clone(), settings.clone()).expect("start");
    let index = running.index();
    poll::until(Duration::from_secs(10), "the log counted", || {
        std::future::ready((counted(&index) == lines && index.caught_up()).then_some(()))
    })
    .await;
    let before = index.key_destinations("menu");
    assert_eq!(before.len(), 4, "{before:?}");
    assert_eq!(before[0].destination.as_deref(), Some(B));
    assert_eq!(before[0].scans, 8);
    running.stop();
    assert!(settings.checkpoint.exists(), "a checkpoint written on stop");

    let running = scan_index::start(log.clone(), settings.clone()).expect("restart");
    let index = running.index();
    poll::until(Duration::from_secs(10), "the checkpoint loaded", || {
        std::future::ready(index.caught_up().then_some(()))
    })
    .await;
    assert_eq!(counted(&index), lines, "no line read twice");
    assert_eq!(index.key_destinations("menu"), before);
    // And it goes on counting.
    append(&log, &split_lines(1, 0));
    poll::until(Duration::from_secs(10), "the new lines counted", || {
        std::future::ready((counted(&index) == lines + 5).then_some(()))
    })
    .await;
    let after = index.key_destinations("menu");
    let a = |rows: &[scan_index::DestinationScans]| {
        rows.iter()
            .find(|r| r.destination.as_deref() == Some(A))
            .map(|r| r.scans)
    };
    assert_eq!(a(&after), Some(6));
    running.stop();
}

//! Scan counts as a user meets them (issue 18): scans below a hierarchical
//! key counted under its link by `qrtag stats` and the console, the
//! README's `qrtag stats access.log*` beside the console's checkpoint, a
//! chart written whatever happens to standard output, and unknown keys
//! answered with the keys meant. The real binary, and the real server
//! over real sockets.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use support::console::logged_in;
use support::{eventually, qrtag_cmd, spawn_console_with_scan_index};

const PASSWORD: &str = "poster-printing-42";
const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn utf8(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Lines of requests that sent a User-Agent: this test's, not the
/// harness's waiting requests.
fn our_lines(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split(' ').nth(3).is_some_and(|ua| ua != "-"))
        .count()
}

/// What the shell makes of `access.log*` in the log's directory.
fn glob_log(log: &Path) -> Vec<PathBuf> {
    let dir = log.parent().expect("a directory");
    let name = log.file_name().and_then(|n| n.to_str()).expect("a name");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(name)))
        .map(|e| e.path())
        .collect();
    files.sort();
    files
}

/// One scan by a phone (no cookie: a new scanner each time).
async fn phone_scan(app: &support::TestApp, path: &str) -> reqwest::Response {
    let res = app
        .client
        .get(app.url(path))
        .header("user-agent", IPHONE)
        .send()
        .await
        .expect("scan");
    assert_eq!(res.status(), StatusCode::FOUND, "{path}");
    res
}

/// A browser's session on the console, logged in.
async fn console_session(admin: std::net::SocketAddr) -> reqwest::Client {
    logged_in(&format!("http://{admin}/console"), PASSWORD).await
}

async fn console_page(http: &reqwest::Client, admin: std::net::SocketAddr, path: &str) -> String {
    let res = http
        .get(format!("http://{admin}/console{path}"))
        .send()
        .await
        .expect("GET");
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.text().await.expect("body")
}

/// Five scans of `/docs/api/v1` … `/v5` (link `docs`, the path appended)
/// are `docs`'s: in `qrtag stats` with the store, on the console's page of
/// `docs` and on the dashboard, which lists no path that is not a link.
#[tokio::test]
async fn scans_below_a_hierarchical_key_count_under_its_link() {
    let (app, log) = spawn_console_with_scan_index(PASSWORD).await;
    app.link("docs", "https://example.com/documentation").await;
    app.link("H83if", "https://example.com/poster").await;
    app.wait_for_status("/docs", 302).await;
    app.wait_for_status("/H83if", 302).await;
    for v in 1..=5 {
        let res = phone_scan(&app, &format!("/docs/api/v{v}")).await;
        assert_eq!(
            support::header(&res, "location"),
            Some(format!("https://example.com/documentation/api/v{v}").as_str())
        );
    }
    phone_scan(&app, "/H83if").await;
    eventually(Duration::from_secs(2), || async { our_lines(&log) == 6 }).await;

    let out = app.cli(&["stats", "--format", "csv", "--key", "docs", utf8(&log)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("\ndocs,5,"), "{}", stdout(&out));
    let out = app.cli(&["stats", "--format", "json", utf8(&log)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let keys: Vec<&str> = report["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .filter_map(|k| k["key"].as_str())
        .collect();
    assert!(
        keys.contains(&"docs") && keys.contains(&"H83if"),
        "{keys:?}"
    );
    assert!(
        !keys.iter().any(|k| k.starts_with("docs/")),
        "no path below docs counts as a key of its own: {keys:?}"
    );

    // Without the database the lines count per path, and stats says why.
    let out = qrtag_cmd(
        &app.dir.path().join("elsewhere.db"),
        &["stats", "--format", "csv", utf8(&log)],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\ndocs/api/v1,1,"),
        "{}",
        stdout(&out)
    );
    let note = stderr(&out);
    assert!(
        note.starts_with("qrtag: note: no link database at ") && note.contains("--db"),
        "{note}"
    );

    let http = console_session(app.admin).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let page = loop {
        let page = console_page(&http, app.admin, "/link?key=docs").await;
        if page.contains(r#"data-scans="5""#) {
            break page;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "docs's page never showed 5 scans:\n{page}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(page.contains("docs"), "{page}");
    let dashboard = console_page(&http, app.admin, "/dashboard").await;
    let rows: Vec<&str> = dashboard
        .split(r#"<tr data-key=""#)
        .skip(1)
        .map(|r| &r[..r.find('"').expect("end of key")])
        .collect();
    assert_eq!(rows, ["docs", "H83if"], "{dashboard}");
    assert!(!dashboard.contains(r#"data-link="false""#), "{dashboard}");
    let index = app.scan_index.clone().expect("the index");
    assert_eq!(index.key("docs/api/v1").scans, 0);
    assert_eq!(index.key("docs").scans, 5);
}

/// `qrtag stats access.log*` once the console has run: the checkpoint is
/// not among the files, and one given by name (an old one) is skipped with
/// a note.
#[tokio::test]
async fn stats_over_the_log_s_glob_once_the_console_has_run() {
    let (app, log) = spawn_console_with_scan_index(PASSWORD).await;
    app.link("H83if", "https://example.com/poster").await;
    app.wait_for_status("/H83if", 302).await;
    phone_scan(&app, "/H83if").await;
    eventually(Duration::from_secs(2), || async { our_lines(&log) == 1 }).await;
    let index = app.scan_index.clone().expect("the index");
    eventually(Duration::from_secs(5), || {
        let written = index
            .progress()
            .checkpoints_written
            .load(std::sync::atomic::Ordering::Relaxed);
        async move { written > 0 }
    })
    .await;
    let checkpoint = log.with_file_name(".access.log.scan-index");
    assert!(checkpoint.exists(), "the checkpoint beside the log, hidden");

    let files = glob_log(&log);
    assert_eq!(
        files,
        std::slice::from_ref(&log),
        "access.log* names only the log"
    );
    let mut args = vec!["stats", "--format", "csv"];
    args.extend(files.iter().map(|f| utf8(f)));
    let out = app.cli(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("\nH83if,1,1,"), "{}", stdout(&out));

    let old = log.with_file_name("access.log.scan-index");
    std::fs::copy(&checkpoint, &old).expect("an old-named checkpoint");
    let out = app.cli(&["stats", "--format", "csv", utf8(&log), utf8(&old)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("\nH83if,1,1,"), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "qrtag: note: skipping {}: the console's scan index checkpoint, not a log\n",
            old.display()
        )
    );
}

/// A checkpoint under the old name is moved to the new one when the index
/// starts, so an upgrade keeps its counts.
#[tokio::test]
async fn an_old_named_checkpoint_is_moved_on_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("access.log");
    std::fs::write(
        &log,
        "20261123200748.4 127.0.0.1 - Mozilla%2F5.0%20(iPhone) /abcde 302 https://a.example/ GET -\n",
    )
    .expect("log");
    let mut settings = qrtag::scan_index::ScanIndexSettings::beside(&log);
    settings.poll_interval = Duration::from_millis(10);
    // Started, caught up with the log, stopped (a last checkpoint).
    let run_once = |settings| async {
        let running = qrtag::scan_index::start(log.clone(), settings).expect("start");
        let index = running.index();
        eventually(Duration::from_secs(5), || {
            let done = index.caught_up();
            async move { done }
        })
        .await;
        running.stop();
        index
    };
    run_once(settings.clone()).await;
    assert!(settings.checkpoint.exists(), "a checkpoint was written");
    let old = dir.path().join("access.log.scan-index");
    std::fs::rename(&settings.checkpoint, &old).expect("as an old version named it");

    let index = run_once(settings.clone()).await;
    assert!(
        !old.exists(),
        "moved away from the name access.log* matches"
    );
    assert!(settings.checkpoint.exists());
    assert_eq!(index.key("abcde").scans, 1);
    assert_eq!(
        index
            .progress()
            .checkpoints_written
            .load(std::sync::atomic::Ordering::Relaxed),
        0,
        "loaded, not rebuilt"
    );
}

fn write_log(dir: &Path) -> PathBuf {
    let log = dir.join("access.log");
    let lines: String = (0..3000)
        .map(|i| {
            format!(
                "202611231{:05}.0 127.0.0.1 - Mozilla%2F5.0%20(iPhone) /k{} 302 https://a.example/{i} GET -\n",
                i % 60,
                i % 500
            )
        })
        .collect();
    std::fs::write(&log, lines).expect("log");
    log
}

/// `qrtag stats --chart c.svg … | head -c 100`: the chart is written though
/// standard output was closed, and the run ends quietly.
#[test]
fn a_chart_is_written_when_standard_output_is_closed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = write_log(dir.path());
    let chart = dir.path().join("c.svg");
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader); // closed before stats writes a byte
    let out = Command::new(env!("CARGO_BIN_EXE_qrtag"))
        .arg("--db")
        .arg(dir.path().join("none.db"))
        .args(["stats", "--chart", utf8(&chart), utf8(&log)])
        .env_remove("QRTAG_DB")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("run qrtag");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let svg = std::fs::read_to_string(&chart).expect("the chart was written");
    assert!(svg.contains("<svg"), "{svg}");
}

/// A key that is no link: the command fails in one line naming the keys
/// meant (case, look-alikes, one edit), exit 1.
#[test]
fn unknown_keys_name_the_keys_meant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    for key in ["hR2EJ", "Od1le", "summer-poster"] {
        let out = qrtag_cmd(&db, &["new", "https://example.com/", "--key", key]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let png = dir.path().join("t.png");
    for (args, says) in [
        (
            &["show", "hR2Ej"][..],
            "no link hR2Ej (did you mean hR2EJ?)",
        ),
        (&["disable", "hr2ej"], "no link hr2ej (did you mean hR2EJ?)"),
        (&["enable", "0dl1e"], "no link 0dl1e (did you mean Od1le?)"),
        (
            &["set", "summer-postr", "https://b.example/"],
            "no link summer-postr (did you mean summer-poster?)",
        ),
        (
            &["qr", "hR2Ej", "-o", utf8(&png)],
            "no link hR2Ej (did you mean hR2EJ?)",
        ),
        (&["edit", "Od1Ie"], "no link Od1Ie (did you mean Od1le?)"),
        (&["show", "zzzzz"], "no link zzzzz"),
    ] {
        let out = support::qrtag_cmd_env(&db, args, &[("EDITOR", "true")]);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&out), format!("qrtag: {says}\n"), "{args:?}");
    }
    assert!(!png.exists());
}

/// `stats --key K` for a key in no line of the logs is an error naming the
/// keys meant, from the logs and the links; a link without scans is zeros.
#[test]
fn stats_for_a_key_in_no_log_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = write_log(dir.path());
    let none = dir.path().join("none.db");
    let out = qrtag_cmd(&none, &["stats", "--key", "nope", utf8(&log)]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        "qrtag: no requests for key nope in the logs read\n"
    );
    assert_eq!(stdout(&out), "");
    let out = qrtag_cmd(&none, &["stats", "--key", "K17", utf8(&log)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "qrtag: no requests for key K17 in the logs read (did you mean k17?)\n"
    );
    // Seen, only outside the time asked for: zeros, not an error.
    let out = qrtag_cmd(
        &none,
        &["stats", "--key", "k17", "--since", "2026-11-24", utf8(&log)],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    let db = dir.path().join("links.db");
    let out = qrtag_cmd(&db, &["new", "https://example.com/", "--key", "quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = qrtag_cmd(
        &db,
        &["stats", "--format", "csv", "--key", "quiet", utf8(&log)],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("\nquiet,0,0,"), "{}", stdout(&out));
    let out = qrtag_cmd(&db, &["stats", "--key", "quite", utf8(&log)]);
    assert_eq!(
        stderr(&out),
        "qrtag: no requests for key quite in the logs read (did you mean quiet?)\n"
    );
}

/// Issue 33: a dead link's scans sent to its fallback are counted apart,
/// on its console page beside its scans (`#scans-summary`), as `qrtag
/// stats` counts them: 2 live scans, then 3 sent to the fallback.
#[tokio::test]
async fn the_link_page_shows_fallback_scans_beside_its_scans() {
    let (app, log) = spawn_console_with_scan_index(PASSWORD).await;
    let out = app.cli(&[
        "new",
        "https://event.example/gig",
        "--key",
        "gig",
        "--fallback",
        "https://venue.example/home",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    app.wait_for_status("/gig", 302).await;
    for _ in 0..2 {
        phone_scan(&app, "/gig").await;
    }
    let out = app.cli(&["disable", "gig"]);
    assert!(out.status.success(), "{}", stderr(&out));
    eventually(Duration::from_secs(5), || async {
        let r = app.get("/gig").await;
        support::header(&r, "location") == Some("https://venue.example/home")
    })
    .await;
    for _ in 0..3 {
        let res = phone_scan(&app, "/gig").await;
        assert_eq!(
            support::header(&res, "location"),
            Some("https://venue.example/home")
        );
    }
    eventually(Duration::from_secs(2), || async { our_lines(&log) == 5 }).await;

    let http = console_session(app.admin).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let page = loop {
        let page = console_page(&http, app.admin, "/link?key=gig").await;
        if page.contains(r#"data-fallback="3""#) {
            break page;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "gig's page never showed 3 fallback scans:\n{page}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let summary = &page[page.find(r#"id="scans-summary""#).expect("the summary")..];
    assert!(summary.contains(r#"data-scans="2""#), "{summary}");
    assert!(summary.contains(r#"data-fallback="3""#), "{summary}");
    let index = app.scan_index.clone().expect("the index");
    assert_eq!(index.key("gig").scans, 2);
    assert_eq!(index.key("gig").fallback, 3);
}

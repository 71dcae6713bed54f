//! A fallback destination per link on the real binary (issue 33): scans of
//! a disabled or expired link with a `fallback_url` are sent there (302)
//! instead of a 404, set and cleared by `new`/`set --fallback`, refused
//! when it is no absolute URL, and carried through export and import.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use support::process::ServerProcess;
use support::{init_db, poll, qrtag_cmd};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    stdout(&o)
}

fn show(db: &Path, key: &str) -> serde_json::Value {
    serde_json::from_str(&ok(qrtag_cmd(db, &["show", key]))).expect("show prints JSON")
}

/// The status and `Location` of a scan of `path`, once it is `want`.
async fn scan_until(
    client: &reqwest::Client,
    srv: &ServerProcess,
    path: &str,
    want: (u16, Option<&str>),
) {
    let url = srv.url(path);
    poll::until(
        Duration::from_secs(5),
        &format!("{path} to answer {want:?}"),
        || {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let r = client.get(&url).send().await.ok()?;
                let location = r.headers().get("location").and_then(|v| v.to_str().ok());
                (r.status().as_u16() == want.0 && location == want.1).then_some(())
            }
        },
    )
    .await;
}

#[tokio::test]
async fn a_dead_link_with_a_fallback_sends_its_scans_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    init_db(&db);
    let event = "https://event.example/gig";
    ok(qrtag_cmd(
        &db,
        &[
            "new",
            event,
            "--key",
            "gig01",
            "--fallback",
            "https://venue.example/home",
        ],
    ));
    ok(qrtag_cmd(
        &db,
        &[
            "new",
            event,
            "--key",
            "gig02",
            "--fallback",
            "https://venue.example/later",
            "--expires",
            "2020-01-01T00:00:00Z",
            "--force",
        ],
    ));
    ok(qrtag_cmd(
        &db,
        &["new", event, "--key", "gig03", "--inactive"],
    ));
    assert_eq!(
        show(&db, "gig01")["fallback_url"],
        "https://venue.example/home"
    );

    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    // A live link goes to its destination, fallback or not.
    scan_until(&client, &srv, "/gig01", (302, Some(event))).await;
    // Expired: the fallback, also for a browser (no dead-tag page).
    scan_until(
        &client,
        &srv,
        "/gig02",
        (302, Some("https://venue.example/later")),
    )
    .await;
    let r = client
        .get(srv.url("/gig02"))
        .header("accept", "text/html,*/*;q=0.8")
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), 302);
    // Inactive without a fallback: the 404 as before.
    scan_until(&client, &srv, "/gig03", (404, None)).await;

    ok(qrtag_cmd(&db, &["disable", "gig01"]));
    scan_until(
        &client,
        &srv,
        "/gig01",
        (302, Some("https://venue.example/home")),
    )
    .await;
    // Enabled again: its own destination.
    ok(qrtag_cmd(&db, &["enable", "gig01"]));
    scan_until(&client, &srv, "/gig01", (302, Some(event))).await;
    ok(qrtag_cmd(&db, &["disable", "gig01"]));
    scan_until(
        &client,
        &srv,
        "/gig01",
        (302, Some("https://venue.example/home")),
    )
    .await;

    // A restart serves the fallback from the snapshot file at once.
    srv.stop().await;
    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    scan_until(
        &client,
        &srv,
        "/gig01",
        (302, Some("https://venue.example/home")),
    )
    .await;

    // Cleared: the 404 again.
    let said = ok(qrtag_cmd(&db, &["set", "gig01", "--fallback", ""]));
    assert_eq!(said, "gig01 has no fallback\n");
    assert!(show(&db, "gig01").get("fallback_url").is_none());
    scan_until(&client, &srv, "/gig01", (404, None)).await;

    // Every scan has its line; a fallback's Location tells it apart.
    let log = dir.path().join("access.log");
    let text = poll::until(Duration::from_secs(5), "the log lines", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        std::future::ready(text.contains("https://venue.example/home").then_some(text))
    })
    .await;
    assert!(text.lines().any(|l| {
        let l = qrtag::access_log::parse_line(l).expect("a log line");
        l.target == "/gig01" && l.status == 302 && l.location == Some("https://venue.example/home")
    }));
    srv.stop().await;
}

/// On a store holding `gig01` (no fallback), runs each of `refused` (a
/// `new gig02` or a `set gig01` with a bad `--fallback`): every one exits
/// 2 with one line naming `--fallback` (and `also`, when given) and
/// prints nothing; then `gig01` is as it was and `gig02` was not created.
/// The store, for what the caller checks next.
fn refuses_fallbacks(refused: &[&[&str]], also: Option<&str>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    init_db(&db);
    ok(qrtag_cmd(
        &db,
        &["new", "https://event.example/", "--key", "gig01"],
    ));
    let before = show(&db, "gig01");
    for args in refused {
        let o = qrtag_cmd(&db, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("--fallback"), "{args:?}: {err}");
        if let Some(also) = also {
            assert!(err.contains(also), "{args:?}: {err}");
        }
        assert!(o.stdout.is_empty());
    }
    assert_eq!(show(&db, "gig01"), before);
    let o = qrtag_cmd(&db, &["show", "gig02"]);
    assert!(!o.status.success(), "gig02 was not created");
    (dir, db)
}

#[tokio::test]
async fn a_fallback_that_is_no_absolute_url_is_refused_and_nothing_changes() {
    refuses_fallbacks(
        &[
            &[
                "new",
                "https://event.example/",
                "--key",
                "gig02",
                "--fallback",
                "/gig01",
            ],
            &["set", "gig01", "--fallback", "/gig01"],
            &["set", "gig01", "--fallback", "venue.example"],
            &["set", "gig01", "--fallback", "javascript:alert(1)"],
        ],
        None,
    );
}

#[tokio::test]
async fn the_fallback_round_trips_through_export_and_import() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    init_db(&db);
    ok(qrtag_cmd(
        &db,
        &[
            "new",
            "https://event.example/",
            "--key",
            "gig01",
            "--fallback",
            "https://venue.example/a,b",
        ],
    ));
    ok(qrtag_cmd(
        &db,
        &["new", "https://event.example/", "--key", "gig02"],
    ));
    for format in ["csv", "jsonl"] {
        let file = dir.path().join(format!("links.{format}"));
        let file_arg = file.to_string_lossy().into_owned();
        let mut args = vec!["export", "-o", &file_arg];
        if format == "csv" {
            args.extend(["--format", "csv"]);
        }
        ok(qrtag_cmd(&db, &args));
        let text = std::fs::read_to_string(&file).expect("export");
        if format == "csv" {
            assert!(
                text.lines()
                    .next()
                    .is_some_and(|h| h.split(',').any(|c| c == "fallback_url")),
                "{text}"
            );
        }
        let other = dir.path().join(format!("{format}.db"));
        init_db(&other);
        ok(qrtag_cmd(&other, &["import", &file_arg]));
        assert_eq!(
            show(&other, "gig01")["fallback_url"],
            "https://venue.example/a,b"
        );
        assert!(show(&other, "gig02").get("fallback_url").is_none());
    }
    // An import refuses a fallback that is a path, naming the line.
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "key,url,fallback_url\ngig09,https://event.example/,/gig01\n",
    )
    .expect("csv");
    let o = qrtag_cmd(&db, &["import", &bad.to_string_lossy()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("fallback_url") && err.contains("bad.csv:2:"),
        "{err}"
    );
    assert!(!qrtag_cmd(&db, &["show", "gig09"]).status.success());
}

// --- Fallback scans counted apart (issue 33) ---

const PHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 \
                     (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";

/// Sends `n` phone scans of `path` and checks each got `want`.
async fn scans(client: &reqwest::Client, srv: &ServerProcess, path: &str, n: usize, want: &str) {
    for _ in 0..n {
        let r = client
            .get(srv.url(path))
            .header("user-agent", PHONE)
            .send()
            .await
            .expect("GET");
        assert_eq!(r.status(), 302);
        assert_eq!(r.headers()["location"], want);
    }
}

#[tokio::test]
async fn stats_counts_fallback_scans_apart_from_live_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    init_db(&db);
    let (event, home) = ("https://event.example/gig", "https://venue.example/home");
    ok(qrtag_cmd(
        &db,
        &["new", event, "--key", "gig01", "--fallback", home],
    ));
    // The fallback's URL is another link's destination: the Location alone
    // cannot tell the two apart.
    ok(qrtag_cmd(&db, &["new", home, "--key", "home"]));
    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    scan_until(&client, &srv, "/gig01", (302, Some(event))).await;
    scans(&client, &srv, "/gig01", 2, event).await;
    scans(&client, &srv, "/home", 1, home).await;
    ok(qrtag_cmd(&db, &["disable", "gig01"]));
    scan_until(&client, &srv, "/gig01", (302, Some(home))).await;
    scans(&client, &srv, "/gig01", 3, home).await;
    srv.stop().await;

    let log = dir.path().join("access.log");
    let log = log.to_str().expect("a UTF-8 path");
    let json: serde_json::Value =
        serde_json::from_str(&ok(qrtag_cmd(&db, &["stats", log, "--format", "json"])))
            .expect("stats prints JSON");
    let of = |key: &str| {
        json["keys"]
            .as_array()
            .expect("keys")
            .iter()
            .find(|k| k["key"] == key)
            .cloned()
            .unwrap_or_else(|| panic!("{key} in {json}"))
    };
    // scan_until's own scans have no user agent: bots, not counted.
    assert_eq!(of("gig01")["scans"], 2, "{json}");
    assert_eq!(of("gig01")["fallback"], 3, "{json}");
    assert_eq!(of("home")["scans"], 1, "{json}");
    assert_eq!(of("home")["fallback"], 0, "{json}");
    assert_eq!(json["total"]["fallback"], 3, "{json}");

    let csv = ok(qrtag_cmd(&db, &["stats", log, "--format", "csv"]));
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("key,scans,unique_scanners,first_scan,last_scan,head,bot,not_found,requests,fallback")
    );
    let gig = lines
        .find(|l| l.starts_with("gig01,"))
        .expect("a gig01 row");
    assert!(gig.starts_with("gig01,2,"), "{gig}");
    assert!(gig.ends_with(",3"), "{gig}");

    let table = ok(qrtag_cmd(&db, &["stats", log]));
    let head = table.lines().next().expect("a header");
    assert!(head.trim_end().ends_with("FALLBACK"), "{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with("gig01 "))
        .expect("a gig01 row");
    assert!(row.trim_end().ends_with(" 3"), "{table}");
}

/// Issue 33: a fallback at the link's own short URL (the tests' public URL
/// is https://0x1f.ie), or a path below it, would loop while the link is
/// dead: one line naming `--fallback`, exit 2, nothing written.
#[test]
fn a_fallback_that_loops_back_to_its_own_link_is_refused() {
    let (_dir, db) = refuses_fallbacks(
        &[
            &[
                "new",
                "https://event.example/",
                "--key",
                "gig02",
                "--fallback",
                "https://0x1f.ie/gig02",
            ],
            &["set", "gig01", "--fallback", "https://0x1f.ie/gig01"],
            &[
                "set",
                "gig01",
                "--fallback",
                "https://0x1f.ie/gig01/later?x=1",
            ],
        ],
        Some("own short URL"),
    );
    // Another key on the same origin is no loop.
    ok(qrtag_cmd(
        &db,
        &["set", "gig01", "--fallback", "https://0x1f.ie/gig02"],
    ));
}

/// Issue 33: import refuses a `fallback_url` at the line's own short URL,
/// by the line, and writes nothing.
#[test]
fn import_refuses_a_fallback_that_loops_back_to_its_own_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    init_db(&db);
    let file = dir.path().join("links.csv");
    std::fs::write(
        &file,
        "key,url,fallback_url\n\
         gig01,https://event.example/,https://venue.example/\n\
         gig02,https://event.example/,https://0x1f.ie/gig02\n",
    )
    .expect("write");
    let o = qrtag_cmd(&db, &["import", file.to_str().expect("a UTF-8 path")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.lines()
            .any(|l| l.contains("links.csv:3: fallback_url: ") && l.contains("own short URL")),
        "{err}"
    );
    for key in ["gig01", "gig02"] {
        assert!(
            !qrtag_cmd(&db, &["show", key]).status.success(),
            "{key} not written"
        );
    }
}

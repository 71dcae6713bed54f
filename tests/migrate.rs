//! `qrtag import --from` (issue 37) as a user runs it: the real binary on a
//! YOURLS dump built as mysqldump writes one, into the database of a
//! running server whose public listener then answers every old tag.

mod support;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use support::output::{stderr, stdout};

/// The awkward links of the issue: (keyword, url).
const LINKS: [(&str, &str); 5] = [
    ("ABCDEFG", "https://e.example/upper"),
    ("go_to-Page12", "https://e.example/twelve"),
    ("x.y", "https://e.example/refused"),
    ("uni", "https://e.example/caf%C3%A9?q=%C3%BC#frag"),
    ("busy", "https://e.example/busy"),
];

/// A YOURLS database as `mysqldump` writes it: the log table first (tables
/// come in name order), extended INSERTs, `busy` with `visits` clicks.
fn yourls_dump(visits: usize) -> String {
    let mut s = String::from(
        "-- MySQL dump 10.13  Distrib 8.0.36, for Linux (x86_64)\n\
         --\n-- Host: localhost    Database: yourls\n\
         /*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n\
         /*!40101 SET NAMES utf8mb4 */;\n\
         DROP TABLE IF EXISTS `yourls_log`;\n\
         CREATE TABLE `yourls_log` (\n  `click_id` int NOT NULL AUTO_INCREMENT,\n  `click_time` datetime NOT NULL,\n  `shorturl` varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n  `referrer` varchar(200) NOT NULL,\n  `user_agent` varchar(255) NOT NULL,\n  `ip_address` varchar(41) NOT NULL,\n  `country_code` char(2) NOT NULL,\n  PRIMARY KEY (`click_id`),\n  KEY `shorturl` (`shorturl`)\n) ENGINE=InnoDB AUTO_INCREMENT=10001 DEFAULT CHARSET=utf8mb4;\n\
         LOCK TABLES `yourls_log` WRITE;\n",
    );
    // mysqldump starts a new INSERT every so many rows.
    for chunk in (1..=visits).collect::<Vec<_>>().chunks(1000) {
        s.push_str("INSERT INTO `yourls_log` VALUES ");
        let rows: Vec<String> = chunk
            .iter()
            .map(|i| {
                format!(
                    "({i},'2019-0{}-{:02} 10:{:02}:00','busy','{}','Mozilla/5.0 (\\'q\\')','203.0.113.{}','IE')",
                    1 + i % 9,
                    1 + i % 28,
                    i % 60,
                    if i % 2 == 0 { "direct" } else { "https://ref.example/a;b" },
                    i % 250
                )
            })
            .collect();
        s.push_str(&rows.join(","));
        s.push_str(";\n");
    }
    s.push_str(
        "UNLOCK TABLES;\n\
         DROP TABLE IF EXISTS `yourls_url`;\n\
         CREATE TABLE `yourls_url` (\n  `keyword` varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',\n  `url` text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n  `title` text COLLATE utf8mb4_unicode_ci,\n  `timestamp` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,\n  `ip` varchar(41) NOT NULL,\n  `clicks` int unsigned NOT NULL,\n  PRIMARY KEY (`keyword`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;\n\
         INSERT INTO `yourls_url` VALUES ",
    );
    let rows: Vec<String> = LINKS
        .iter()
        .map(|(k, u)| format!("('{k}','{u}','It''s {k}','2018-01-02 03:04:05','198.51.100.1',0)"))
        .collect();
    s.push_str(&rows.join(","));
    s.push_str(";\n");
    let _ = writeln!(s, "-- Dump completed on 2026-11-27 12:00:00");
    s
}

fn import(db: &Path, dump: &Path, more: &[&str]) -> Output {
    let mut args = vec!["import", "--from", "yourls-sql"];
    args.extend_from_slice(more);
    // Never the working directory's access.log: the test's own directory.
    let log = db.with_file_name("access.log");
    let log = log.to_str().expect("path");
    if !more.contains(&"--access-log") {
        args.extend(["--access-log", log]);
    }
    let dump = dump.to_str().expect("path");
    args.push(dump);
    support::qrtag_cmd(db, &args)
}

/// The report: standard output without its last line (which says what was
/// written, or that nothing was).
fn report_of(o: &Output) -> String {
    let out = stdout(o);
    let mut lines: Vec<&str> = out.lines().collect();
    lines.pop();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[tokio::test]
async fn a_yourls_dump_comes_over_with_its_keys_and_every_tag_answers() {
    let app = support::spawn_app().await;
    let dump = app.dir.path().join("yourls.sql");
    std::fs::write(&dump, yourls_dump(10_000)).expect("dump");

    let dry = import(&app.db, &dump, &["--dry-run"]);
    assert_eq!(
        stdout(&dry).lines().last(),
        Some("dry run: nothing written")
    );
    assert!(!app.dir.path().join("yourls.sql.qrtag-import.txt").exists());
    let real = import(&app.db, &dump, &[]);
    // One link cannot come over: both say so, and exit 1.
    assert_eq!(dry.status.code(), Some(1), "{}", stderr(&dry));
    assert_eq!(real.status.code(), Some(1), "{}", stderr(&real));
    assert_eq!(stderr(&real).lines().count(), 1, "{}", stderr(&real));
    let report = report_of(&real);
    assert_eq!(
        report_of(&dry),
        report,
        "the dry run says what the run does"
    );
    assert!(report.contains("import from yourls-sql"), "{report}");
    assert!(report.contains("  new: 4\n"), "{report}");
    assert!(report.contains("  refused: 1\n"), "{report}");
    assert!(
        report.contains(
            "\"x.y\": a key holds only A-Z a-z 0-9 _ - and /, not '.'; a key qrtag can serve: x-y"
        ),
        "{report}"
    );
    let kept = std::fs::read_to_string(app.dir.path().join("yourls.sql.qrtag-import.txt"))
        .expect("the report file");
    assert_eq!(kept, report);

    // Every key kept exactly, answering as YOURLS did.
    for (key, url) in LINKS.iter().filter(|(k, _)| *k != "x.y") {
        let path = format!("/{key}");
        let location = support::poll::until(Duration::from_secs(5), &path, || async {
            let r = app.get(&path).await;
            (r.status() == 302)
                .then(|| support::header(&r, "location").map(str::to_owned))
                .flatten()
        })
        .await;
        assert_eq!(location, *url, "{key}");
    }
    assert_eq!(app.get("/abcdefg").await.status(), 404, "case is kept");

    // A second run adds nothing.
    let again = import(&app.db, &dump, &[]);
    let report = report_of(&again);
    assert!(report.contains("  new: 0\n"), "{report}");
    assert!(
        report.contains("  already there and equal: 4\n"),
        "{report}"
    );
    assert!(
        stdout(&again).contains("written: 0 created"),
        "{}",
        stdout(&again)
    );
}

#[test]
fn a_truncated_dump_is_one_line_exit_2_and_nothing_written() {
    let (dir, db) = support::fresh_db();
    let full = yourls_dump(10);
    for cut in [
        &full[..full.find("('go_to").expect("row") + 3],
        &full[..full.find("-- Dump completed").expect("end")],
    ] {
        let dump = dir.path().join("cut.sql");
        std::fs::write(&dump, cut).expect("dump");
        let o = import(&db, &dump, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("truncated"), "{err}");
        assert!(!dir.path().join("cut.sql.qrtag-import.txt").exists());
        let list = support::qrtag_cmd(&db, &["list"]);
        assert_eq!(stdout(&list).trim(), "", "nothing written");
    }
}

#[test]
fn a_collision_is_reported_and_the_stored_link_kept() {
    let (dir, db) = support::fresh_db();
    let dump = dir.path().join("yourls.sql");
    std::fs::write(&dump, yourls_dump(0)).expect("dump");
    for args in [
        &["new", "https://mine.example/", "--key", "ABCDEFG"][..],
        &["new", "https://mine.example/gone", "--key", "busy"],
        &["delete", "--yes", "busy"],
    ] {
        let o = support::qrtag_cmd(&db, args);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = import(&db, &dump, &[]);
    let report = report_of(&o);
    assert!(report.contains("  colliding: 2\n"), "{report}");
    assert!(
        report.contains("ABCDEFG: the key holds a different link (--update overwrites it)"),
        "{report}"
    );
    assert!(report.contains("busy: key busy was deleted"), "{report}");
    let show = support::qrtag_cmd(&db, &["show", "ABCDEFG"]);
    assert!(
        stdout(&show).contains("https://mine.example/"),
        "{}",
        stdout(&show)
    );
    let o = import(&db, &dump, &["--update"]);
    let report = report_of(&o);
    assert!(
        report.contains("different, overwritten (--update): 1"),
        "{report}"
    );
    assert!(report.contains("  colliding: 1\n"), "{report}");
    let show = support::qrtag_cmd(&db, &["show", "ABCDEFG"]);
    assert!(
        stdout(&show).contains("https://e.example/upper"),
        "{}",
        stdout(&show)
    );
}

#[test]
fn a_source_missing_what_it_reads_says_so_in_one_line() {
    let (_dir, db) = support::fresh_db();
    let o = support::qrtag_cmd(
        &db,
        &[
            "import",
            "--from",
            "kutt",
            "--source-url",
            "http://127.0.0.1:9",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o).trim(),
        "qrtag: --from kutt reads an API key or token: give --source-key (or QRTAG_SOURCE_KEY)"
    );
    let o = support::qrtag_cmd(&db, &["import", "--from", "nope", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("yourls-sql"), "{}", stderr(&o));
}

/// The REST API on, and the scan index following the access log and the
/// imported logs beside it (`--scan-log access.log --scan-log 'imported/*.log'`).
async fn spawn_with_imported_logs() -> (support::TestApp, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = support::test_settings(dir.path());
    let qrtag::settings::AccessLogTarget::Path(log) = settings.access_log.clone() else {
        panic!("a log file");
    };
    let imported = log.parent().expect("dir").join("imported/*.log");
    let mut index = qrtag::scan_index::ScanIndexSettings::beside(&log);
    index.poll_interval = Duration::from_millis(20);
    index.logs = Some(
        qrtag::scan_index::sources::LogSources::parse([
            log.display().to_string(),
            imported.display().to_string(),
        ])
        .expect("patterns"),
    );
    settings.scan_index = Some(index);
    settings.api = Some(qrtag::server::api::ApiSettings::new(
        "127.0.0.1:0",
        dir.path().join("didcomm-keys.json"),
    ));
    (support::spawn_with(settings, dir).await, log)
}

#[tokio::test]
async fn visits_become_log_lines_that_stats_and_the_scan_index_count_once() {
    let (app, log) = spawn_with_imported_logs().await;
    let dump = app.dir.path().join("yourls.sql");
    std::fs::write(&dump, yourls_dump(10_000)).expect("dump");
    let log_arg = log.to_str().expect("path");
    let o = import(&app.db, &dump, &["--access-log", log_arg]);
    let report = report_of(&o);
    assert!(
        report.contains(
            "  visits: 10000 read, 10000 new, 0 imported before, 0 of links not imported\n"
        ),
        "{report}\n{}",
        stderr(&o)
    );
    let dir = log.parent().expect("dir").join("imported");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .expect("imported/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(files, [dir.join(format!("yourls-{today}.log"))]);
    let text = std::fs::read_to_string(&files[0]).expect("log");
    let times: Vec<&str> = text.lines().map(|l| &l[..16]).collect();
    assert_eq!(times.len(), 10_000);
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
    let first = text.lines().next().expect("a line");
    assert!(
        first.contains(" /busy 302 https://e.example/busy GET "),
        "{first}"
    );

    // `qrtag stats` counts them as scans.
    let stats = support::qrtag_cmd(
        &app.db,
        &["stats", "--format", "json", files[0].to_str().expect("p")],
    );
    let v: serde_json::Value = serde_json::from_slice(&stats.stdout).expect("json");
    assert_eq!(v["total"]["scans"], 10_000, "{v}");
    assert_eq!(v["keys"][0]["key"], "busy");

    // The scan index too: the link's scans in 2019, years before the move.
    let key = support::api::new_key(&app, "read");
    let url = support::api::api(&app, "/links/busy/scans?since=2019-01-01&until=2019-12-31");
    support::poll::until(Duration::from_secs(20), "the index counts them", || async {
        let r = app.client.get(&url).bearer_auth(&key).send().await.ok()?;
        let v: serde_json::Value = r.json().await.ok()?;
        (v["in_range"].as_u64() == Some(10_000)).then_some(())
    })
    .await;

    // A second run adds no visit twice, and no file.
    let o = import(&app.db, &dump, &["--access-log", log_arg]);
    let report = report_of(&o);
    assert!(
        report.contains(
            "  visits: 10000 read, 0 new, 10000 imported before, 0 of links not imported\n"
        ),
        "{report}"
    );
    let logs = std::fs::read_dir(&dir)
        .expect("imported/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .count();
    assert_eq!(logs, 1);
}

#[test]
fn from_csv_is_qrtags_own_import_with_drawn_keys() {
    let (dir, db) = support::fresh_db();
    let file = dir.path().join("links.csv");
    std::fs::write(&file, "url,notes\nhttps://e.example/a,door\n").expect("csv");
    let o = support::qrtag_cmd(&db, &["import", "--from", "csv", file.to_str().expect("p")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let drawn = out.lines().find(|l| l.ends_with("\thttps://e.example/a"));
    assert!(drawn.is_some(), "{out}");
}

#[tokio::test]
async fn an_imported_total_is_shown_apart_from_scans_and_travels_with_the_link() {
    let (app, _log) = spawn_with_imported_logs().await;
    let file = app.dir.path().join("links.jsonl");
    std::fs::write(
        &file,
        "{\"_id\":\"bit\",\"url\":\"https://e.example/b\",\"imported_clicks\":1234}\n",
    )
    .expect("file");
    let o = app.cli(&["import", file.to_str().expect("p")]);
    assert!(o.status.success(), "{}", stderr(&o));

    let show = app.cli(&["show", "bit"]);
    assert!(
        stdout(&show).contains("\"imported_clicks\": 1234"),
        "{}",
        stdout(&show)
    );
    let export = app.cli(&["export"]);
    assert!(
        stdout(&export).contains("\"imported_clicks\":1234"),
        "{}",
        stdout(&export)
    );

    let key = support::api::new_key(&app, "read");
    let r = app
        .client
        .get(support::api::api(&app, "/links/bit"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("request");
    let v: serde_json::Value = r.json().await.expect("json");
    assert_eq!(v["imported_clicks"], 1234, "{v}");
    // Not a scan of qrtag's.
    let url = support::api::api(&app, "/links/bit/scans?since=2000-01-01");
    let v: serde_json::Value = support::poll::until(Duration::from_secs(10), "scans", || async {
        let r = app.client.get(&url).bearer_auth(&key).send().await.ok()?;
        (r.status() == 200).then_some(r.json().await.ok()?)
    })
    .await;
    assert_eq!(v["in_range"], 0, "{v}");
    // A link without one says nothing of it.
    let o = app.cli(&["new", "https://e.example/n", "--key", "plain"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = app
        .client
        .get(support::api::api(&app, "/links/plain"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("request");
    let v: serde_json::Value = r.json().await.expect("json");
    assert!(v.get("imported_clicks").is_none(), "{v}");
}

#[tokio::test]
async fn verify_asks_every_imported_key_and_names_those_that_differ() {
    let app = support::spawn_app().await;
    let dump = app.dir.path().join("yourls.sql");
    std::fs::write(&dump, yourls_dump(3)).expect("dump");
    let o = import(&app.db, &dump, &[]);
    assert!(stdout(&o).contains("written: 4 created"), "{}", stderr(&o));
    app.wait_for_status("/busy", 302).await;
    let base = format!("http://{}", app.public);
    let o = import(&app.db, &dump, &["--verify", &base]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), format!("verified 4 keys at {base}: 0 differ\n"));

    let o = support::qrtag_cmd(&app.db, &["delete", "--yes", "busy"]);
    assert!(o.status.success(), "{}", stderr(&o));
    app.wait_for_status("/busy", 404).await;
    let o = import(&app.db, &dump, &["--verify", &base]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        format!(
            "busy: the source sent https://e.example/busy; qrtag answers 404\nverified 4 keys at {base}: 1 differ\n"
        )
    );
    let o = import(&app.db, &dump, &["--verify", "ftp://x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn yourls_csv_exports_of_both_tables_come_over_like_the_dump() {
    let (dir, db) = support::fresh_db();
    let urls = dir.path().join("yourls_url.csv");
    let log = dir.path().join("yourls_log.csv");
    let mut u = String::from("keyword,url,title,timestamp,ip,clicks\n");
    for (k, url) in LINKS {
        u.push_str(&format!(
            "{k},\"{url}\",\"It's {k}\",2018-01-02 03:04:05,198.51.100.1,0\n"
        ));
    }
    std::fs::write(&urls, u).expect("urls");
    let mut l =
        String::from("click_id,click_time,shorturl,referrer,user_agent,ip_address,country_code\n");
    for i in 1..=10_000 {
        l.push_str(&format!(
            "{i},2019-05-{:02} 10:00:00,busy,direct,\"Mozilla/5.0 (X, \"\"q\"\")\",203.0.113.7,IE\n",
            1 + i % 28
        ));
    }
    std::fs::write(&log, l).expect("log");
    let access = dir.path().join("access.log");
    let args = [
        "import",
        "--from",
        "yourls-csv",
        "--source-visits",
        log.to_str().expect("p"),
        "--access-log",
        access.to_str().expect("p"),
        urls.to_str().expect("p"),
    ];
    let o = support::qrtag_cmd(&db, &args);
    let report = report_of(&o);
    assert!(report.contains("  new: 4\n"), "{report}{}", stderr(&o));
    assert!(report.contains("\"x.y\": a key holds only"), "{report}");
    assert!(
        report.contains("visits: 10000 read, 10000 new, 0 imported before"),
        "{report}"
    );
    let show = support::qrtag_cmd(&db, &["show", "go_to-Page12"]);
    assert!(
        stdout(&show).contains("\"title\": \"It's go_to-Page12\""),
        "{}",
        stdout(&show)
    );
    // The same visits read again from the dump are the same visits.
    let dump = dir.path().join("yourls.sql");
    std::fs::write(&dump, yourls_dump(10_000)).expect("dump");
    let o = import(&db, &dump, &[]);
    let report = report_of(&o);
    assert!(report.contains("already there and equal: 4"), "{report}");
    assert!(report.contains("0 new, 10000 imported before"), "{report}");
    // A cut file: one line, exit 2.
    let cut = dir.path().join("cut.csv");
    std::fs::write(&cut, "keyword,url\nk,\"https://e.example/").expect("cut");
    let o = support::qrtag_cmd(
        &db,
        &["import", "--from", "yourls-csv", cut.to_str().expect("p")],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("truncated"), "{}", stderr(&o));
}

/// A YOURLS API on a local port, answering `action=stats` from `links`
/// (keyword, url, clicks) page by page as `yourls_get_stats` does: the
/// first request 503 with Retry-After, then a 429 once, then the pages; a
/// signature other than `good` is refused as YOURLS refuses it.
fn yourls_api(links: Vec<(String, String, u64)>) -> String {
    use std::io::{BufRead, BufReader, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        let mut served = 0;
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut first = String::new();
            let mut reader = BufReader::new(conn.try_clone().expect("clone"));
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
            }
            let target = first.split(' ').nth(1).unwrap_or_default().to_owned();
            let param = |name: &str| {
                target
                    .split(['?', '&'])
                    .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                    .unwrap_or_default()
                    .to_owned()
            };
            served += 1;
            let (status, extra, body) = if param("signature") != "good" {
                (
                    "403 Forbidden",
                    "",
                    r#"{"errorCode":403,"message":"Please log in"}"#.to_owned(),
                )
            } else if served == 1 {
                (
                    "503 Service Unavailable",
                    "Retry-After: 0\r\n",
                    String::new(),
                )
            } else if served == 3 {
                ("429 Too Many Requests", "Retry-After: 1\r\n", String::new())
            } else {
                let start: usize = param("start").parse().unwrap_or(0);
                let limit: usize = param("limit").parse().unwrap_or(10);
                let page: serde_json::Map<String, serde_json::Value> = links
                    .iter()
                    .skip(start)
                    .take(limit)
                    .enumerate()
                    .map(|(i, (k, u, c))| {
                        (
                            format!("link_{}", i + 1),
                            serde_json::json!({
                                "shorturl": format!("https://sho.rt/{k}"), "url": u,
                                "title": format!("T {k}"), "timestamp": "2017-06-01 12:00:00",
                                "ip": "127.0.0.1", "clicks": c.to_string(),
                            }),
                        )
                    })
                    .collect();
                let body = serde_json::json!({
                    "links": page,
                    "stats": {"total_links": links.len().to_string(), "total_clicks": "0"},
                    "statusCode": "200", "message": "success",
                });
                ("200 OK", "", body.to_string())
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}")
}

#[test]
fn the_yourls_api_is_read_page_by_page_with_clicks_as_totals() {
    let (dir, db) = support::fresh_db();
    let mut links: Vec<(String, String, u64)> = (0..1500)
        .map(|i| (format!("k{i}"), format!("https://e.example/{i}"), i))
        .collect();
    links.push(("ABCDEFG".into(), "https://e.example/upper#frag".into(), 7));
    let url = yourls_api(links);
    let access = dir.path().join("access.log");
    let run = |key: &str| {
        support::qrtag_cmd(
            &db,
            &[
                "import",
                "--from",
                "yourls-api",
                "--source-url",
                &url,
                "--source-key",
                key,
                "--access-log",
                access.to_str().expect("p"),
                "--report",
                dir.path().join("report.txt").to_str().expect("p"),
            ],
        )
    };
    let o = run("good");
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let report = report_of(&o);
    assert!(report.contains(": 1501 links\n  new: 1501\n"), "{report}");
    assert!(
        report.contains("links with an imported total of clicks: 1501"),
        "{report}"
    );
    let show = support::qrtag_cmd(&db, &["show", "ABCDEFG"]);
    assert!(
        stdout(&show).contains("\"imported_clicks\": 7"),
        "{}",
        stdout(&show)
    );
    assert!(
        stdout(&show).contains("https://e.example/upper#frag"),
        "{}",
        stdout(&show)
    );

    let o = run("wrong");
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("refused the key (Please log in)"), "{err}");
}

/// Issue 37: a source written by another engineer (Dub's CSV export) through
/// `import --from`: every link of a one-domain qrtag whatever the source's
/// domain, codes kept, a code no key can hold refused with a close key,
/// click totals kept apart, the same report for the dry run, and nothing
/// new on a second run.
#[test]
fn a_dub_export_comes_over_with_its_codes_and_click_totals() {
    let (dir, db) = support::fresh_db();
    let file = dir.path().join("dub.csv");
    std::fs::write(
        &file,
        "Short link,Destination URL,Clicks,Created at,Tags,Archived\n\
         https://dub.sh/UPPER12,https://example.com/a,42,2024-01-02T03:04:05.000Z,poster,No\n\
         https://go.example/a-b_c,https://example.com/b,0,2024-01-02T03:04:05.000Z,,Yes\n\
         https://go.example/caf.v2,https://example.com/c,7,2024-01-02T03:04:05.000Z,,No\n",
    )
    .expect("file");
    let run = |more: &[&str]| {
        let mut args = vec!["import", "--from", "dub"];
        args.extend_from_slice(more);
        args.push(file.to_str().expect("path"));
        support::qrtag_cmd(&db, &args)
    };
    let dry = run(&["--dry-run"]);
    let real = run(&[]);
    assert_eq!(
        real.status.code(),
        Some(1),
        "one refused: {}",
        stderr(&real)
    );
    assert_eq!(report_of(&dry), report_of(&real));
    let report = report_of(&real);
    assert!(report.contains("  new: 2\n"), "{report}");
    assert!(report.contains("a key qrtag can serve: caf-v2"), "{report}");

    let show = support::qrtag_cmd(&db, &["show", "UPPER12"]);
    assert!(show.status.success(), "{}", stderr(&show));
    assert!(
        stdout(&show).contains("https://example.com/a"),
        "{}",
        stdout(&show)
    );
    assert!(
        stdout(&show).contains("\"imported_clicks\": 42"),
        "{}",
        stdout(&show)
    );
    let archived = support::qrtag_cmd(&db, &["show", "a-b_c"]);
    assert!(
        stdout(&archived).contains("\"inactive\": true"),
        "{}",
        stdout(&archived)
    );

    let again = run(&[]);
    assert!(
        report_of(&again).contains("  new: 0\n"),
        "{}",
        stdout(&again)
    );
}

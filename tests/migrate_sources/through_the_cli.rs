//! A reader through `qrtag import --from` end to end (issue 37): Shlink's
//! API with every visit, into a fresh database, as a user runs it.

use crate::fake_api::FakeApi;
use crate::shlink::{KEY, MANY, shlink};
use crate::support;
use support::output::{stderr, stdout};

/// The report: standard output without its last line (what was written).
fn report_of(o: &std::process::Output) -> String {
    let out = stdout(o);
    let mut lines: Vec<&str> = out.lines().collect();
    lines.pop();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn shlink_comes_over_through_import_from_with_every_visit_once() {
    let fake = FakeApi::start("x-api-key", KEY, shlink);
    let (dir, db) = support::fresh_db();
    let log = dir.path().join("access.log");
    let run = |more: &[&str]| {
        let mut args = vec![
            "import",
            "--from",
            "shlink",
            "--source-url",
            &fake.base,
            "--source-key",
            KEY,
            "--access-log",
            log.to_str().expect("path"),
        ];
        args.extend_from_slice(more);
        support::qrtag_cmd(&db, &args)
    };
    let dry = run(&["--dry-run"]);
    let real = run(&[]);
    // `café.v2` cannot be a key: both runs say so and exit 1.
    assert_eq!(real.status.code(), Some(1), "{}", stderr(&real));
    assert_eq!(
        report_of(&dry),
        report_of(&real),
        "the dry run says what the run does"
    );
    let report = report_of(&real);
    assert!(report.contains("  new: 5\n"), "{report}");
    assert!(report.contains("  refused: 1\n"), "{report}");

    // The codes are keys as Shlink had them, the other domain's included.
    for (key, url) in [
        ("ABC1234", "https://example.com/menü?x=1#top"),
        ("abc_def-1234", "https://example.com/a"),
        ("many", "https://example.com/many"),
    ] {
        let show = support::qrtag_cmd(&db, &["show", key]);
        assert!(show.status.success(), "{key}: {}", stderr(&show));
        assert!(stdout(&show).contains(url), "{key}: {}", stdout(&show));
    }

    // Every visit a log line, once, oldest first.
    let imported: Vec<_> = std::fs::read_dir(dir.path().join("imported"))
        .expect("imported/")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    assert_eq!(imported.len(), 1, "{imported:?}");
    let text = std::fs::read_to_string(&imported[0]).expect("log");
    let expected = MANY as usize + 3 + 2;
    assert_eq!(text.lines().count(), expected);
    let stats = support::qrtag_cmd(
        &db,
        &[
            "stats",
            "--format",
            "json",
            imported[0].to_str().expect("path"),
        ],
    );
    assert!(stats.status.success(), "{}", stderr(&stats));
    let v: serde_json::Value = serde_json::from_slice(&stats.stdout).expect("json");
    assert_eq!(v["lines_read"], expected, "{}", v["lines_read"]);
    let keys = v["keys"].as_array().expect("keys");
    let many = keys
        .iter()
        .find(|k| k["key"] == "many")
        .expect("many counted");
    assert_eq!(many["requests"], MANY, "{many}");
    // The oldest visit first, at Shlink's time of it.
    assert_eq!(many["first_scan"], "2020-01-01T00:00:00.0Z", "{many}");

    // A second run adds no link and no visit.
    let again = run(&[]);
    let report = report_of(&again);
    assert!(report.contains("  new: 0\n"), "{report}");
    assert!(
        report.contains(&format!("0 new, {expected} imported before")),
        "{report}"
    );
    let logs = std::fs::read_dir(dir.path().join("imported"))
        .expect("imported/")
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .map(|e| {
            std::fs::read_to_string(e.path())
                .map(|t| t.lines().count())
                .unwrap_or(0)
        })
        .sum::<usize>();
    assert_eq!(logs, expected, "no visit written twice");
}

/// chhoto-url's SQLite file through `import --from chhoto`: every key
/// answers as chhoto-url did (an expired one 404), hits kept as totals.
#[test]
fn a_chhoto_database_comes_over_and_its_keys_answer_as_before() {
    let (dir, db) = support::fresh_db();
    let file = dir.path().join("urls.sqlite");
    let conn = rusqlite::Connection::open(&file).expect("create");
    conn.execute_batch(
        "CREATE TABLE urls (id INTEGER PRIMARY KEY, short_url TEXT NOT NULL,
         long_url TEXT NOT NULL, hits INTEGER NOT NULL, expiry_time INTEGER, notes TEXT);
         PRAGMA user_version = 4;
         INSERT INTO urls (short_url, long_url, hits, expiry_time, notes) VALUES
         ('UPPER12', 'https://example.com/up', 42, NULL, 'Poster, hall B'),
         ('gone_7', 'https://example.com/gone', 0, 1577836800, NULL),
         ('later-12chars', 'https://example.org/later', 7, 32503680000, '');",
    )
    .expect("rows");
    drop(conn);
    let import = support::qrtag_cmd(
        &db,
        &["import", "--from", "chhoto", file.to_str().expect("p")],
    );
    assert!(
        import.status.success(),
        "{}\n{}",
        stdout(&import),
        stderr(&import)
    );
    assert!(
        report_of(&import).contains("  new: 3\n"),
        "{}",
        stdout(&import)
    );

    for (key, location) in [
        ("UPPER12", Some("https://example.com/up")),
        ("later-12chars", Some("https://example.org/later")),
        ("gone_7", None),
        ("upper12", None),
    ] {
        let scan = support::qrtag_cmd(&db, &["try", key]);
        match location {
            Some(url) => {
                assert!(scan.status.success(), "{key}: {}", stderr(&scan));
                assert_eq!(stdout(&scan).lines().next(), Some(url), "{key}");
            }
            None => assert_eq!(
                scan.status.code(),
                Some(1),
                "{key} answers 404: {}",
                stdout(&scan)
            ),
        }
    }
    let show = support::qrtag_cmd(&db, &["show", "UPPER12"]);
    assert!(
        stdout(&show).contains("\"imported_clicks\": 42"),
        "{}",
        stdout(&show)
    );
}

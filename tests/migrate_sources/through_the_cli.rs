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
    // In the test's directory, not the working directory's default.
    let report_file = dir.path().join("shlink-report.txt");
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
            "--report",
            report_file.to_str().expect("path"),
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

/// What a scan of `key` gets, through the resolver the server runs (`qrtag
/// try`): the destination, or `None` for a 404.
fn scan(db: &std::path::Path, key: &str, more: &[&str]) -> Option<String> {
    let out = support::qrtag_cmd(db, &[&["try", key][..], more].concat());
    match out.status.code() {
        Some(0) => stdout(&out).lines().next().map(str::to_owned),
        Some(1) => None,
        _ => panic!("try {key}: {out:?}"),
    }
}

/// Every link of `qrtag export` (JSON lines) by key.
fn exported(
    db: &std::path::Path,
    more: &[&str],
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let out = support::qrtag_cmd(db, &[&["export"][..], more].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json line");
            (v["_id"].as_str().expect("_id").to_owned(), v)
        })
        .collect()
}

/// Kutt's API v2 through `import --from kutt` (issue 37): 120 links over
/// three pages (a 429 and a failing page on the first run), every key
/// answering as Kutt did: expired and password links 404 (the password
/// noted as left out), a code no key holds refused; the visit counts kept
/// as imported totals; the same report dry and real; nothing new again.
#[test]
fn kutt_comes_over_through_import_from_and_every_key_answers() {
    use crate::kutt::{KEY, TOTAL, kutt};
    let fake = FakeApi::start("x-api-key", KEY, kutt);
    let (dir, db) = support::fresh_db();
    let report_file = dir.path().join("kutt-report.txt");
    let run = |more: &[&str]| {
        let mut args = vec![
            "import",
            "--from",
            "kutt",
            "--source-url",
            &fake.base,
            "--source-key",
            KEY,
            "--report",
            report_file.to_str().expect("path"),
        ];
        args.extend_from_slice(more);
        support::qrtag_cmd(&db, &args)
    };
    let dry = run(&["--dry-run"]);
    let real = run(&[]);
    assert_eq!(real.status.code(), Some(1), "has.dot: {}", stderr(&real));
    assert_eq!(
        report_of(&dry),
        report_of(&real),
        "the dry run says what the run does"
    );
    let report = report_of(&real);
    for line in [
        &format!("import from kutt {}: {TOTAL} links\n", fake.base),
        &format!("  new: {}\n", TOTAL - 1),
        "  refused: 1\n",
        "  expired already: 1 ",
        &format!("  links with an imported total of clicks: {}\n", TOTAL - 1),
        "\"has.dot\": a key holds only A-Z a-z 0-9 _ - and /, not '.'; a key qrtag can serve: has-dot\n",
        "  password: 1 links (qrtag has no password-protected links",
    ] {
        assert!(report.contains(line), "{line:?} in:\n{report}");
    }
    let kept = std::fs::read_to_string(&report_file).expect("report file");
    assert_eq!(kept, report);

    // Every key answers as Kutt did.
    for i in 0..TOTAL {
        let (key, want) = match i {
            0 => (
                "UPPER12".to_owned(),
                Some("https://example.com/menü#top".to_owned()),
            ),
            1 => (
                "a-b_c-d_e-f1".to_owned(),
                Some("https://example.com/1".to_owned()),
            ),
            2 => continue,
            // Expired, and locked by a password: 404.
            3 | 4 => (format!("k{i:03}"), None),
            _ => (format!("k{i:03}"), Some(format!("https://example.com/{i}"))),
        };
        let got = scan(&db, &key, &[]);
        match (&got, &want) {
            (Some(g), Some(w)) if g != w => assert_eq!(
                url::Url::parse(g).expect("url"),
                url::Url::parse(w).expect("url"),
                "{key}"
            ),
            _ => assert_eq!(got.is_some(), want.is_some(), "{key}: {got:?}"),
        }
    }
    assert_eq!(scan(&db, "upper12", &[]), None, "case kept");
    assert_eq!(scan(&db, "has-dot", &[]), None, "refused, not renamed");

    // Kutt's visit counts are each link's imported total, apart from scans.
    let links = exported(&db, &[]);
    assert_eq!(links.len() as u64, TOTAL - 1);
    assert_eq!(links["UPPER12"]["imported_clicks"], 0);
    assert_eq!(links["UPPER12"]["notes"], "Poster, hall B");
    for i in 3..TOTAL {
        assert_eq!(links[&format!("k{i:03}")]["imported_clicks"], i, "k{i:03}");
    }
    let show = support::qrtag_cmd(&db, &["show", "k042"]);
    assert!(
        stdout(&show).contains("\"imported_clicks\": 42"),
        "{}",
        stdout(&show)
    );

    // A second run adds nothing.
    let again = run(&[]);
    let report = report_of(&again);
    assert!(report.contains("  new: 0\n"), "{report}");
    assert!(
        report.contains(&format!("  already there and equal: {}\n", TOTAL - 1)),
        "{report}"
    );
    assert_eq!(exported(&db, &[]), links, "nothing changed");
}

/// Bitly's API v4 through `import --from bitly-api` into a qrtag of one
/// domain: each custom back-half (on brand.co) and the bit.ly back-half
/// of a bitlink without one a key, the clicks a total kept apart (on the
/// first back-half), the archived bitlink kept inactive, a back-half no
/// key holds refused; the same report dry and real; nothing new again.
#[test]
fn bitly_api_comes_over_through_import_from_into_one_domain() {
    use crate::bitly::{TOKEN, bitly};
    let fake = FakeApi::start("authorization", "Bearer bitly-token-3", bitly);
    let (dir, db) = support::fresh_db();
    let report_file = dir.path().join("bitly-report.txt");
    let run = |more: &[&str]| {
        let mut args = vec![
            "import",
            "--from",
            "bitly-api",
            "--source-url",
            &fake.base,
            "--source-key",
            TOKEN,
            "--report",
            report_file.to_str().expect("path"),
        ];
        args.extend_from_slice(more);
        support::qrtag_cmd(&db, &args)
    };
    let dry = run(&["--dry-run"]);
    let real = run(&[]);
    assert_eq!(real.status.code(), Some(1), "café.menu: {}", stderr(&real));
    assert_eq!(report_of(&dry), report_of(&real));
    let report = report_of(&real);
    for line in [
        "  new: 3\n",
        "  refused: 1\n",
        "  links with an imported total of clicks: 3\n",
        "\"brand.co/café.menu\": a key holds only A-Z a-z 0-9 _ - and /, not 'é'; a key qrtag can serve: caf--menu\n",
    ] {
        assert!(report.contains(line), "{line:?} in:\n{report}");
    }
    assert_eq!(
        std::fs::read_to_string(&report_file).expect("report"),
        report
    );
    check_bitly_links(&db, &[]);
    let again = run(&[]);
    let report = report_of(&again);
    assert!(
        report.contains("  new: 0\n  already there and equal: 3\n"),
        "{report}"
    );
}

/// The three links Bitly's fixtures hold that a key can carry, as they
/// answer and count in qrtag (`--domain` in `more`).
fn check_bitly_links(db: &std::path::Path, more: &[&str]) {
    let menu = "https://example.com/menü?x=1#top";
    for (key, want) in [
        ("SpringSale", Some(menu)),
        ("spring-sale_24", Some(menu)),
        // Archived in Bitly: kept inactive.
        ("AbCdEfG", None),
    ] {
        let got = scan(db, key, more);
        assert_eq!(
            got.as_deref().map(|g| url::Url::parse(g).expect("url")),
            want.map(|w| url::Url::parse(w).expect("url")),
            "{key}"
        );
    }
    let links = exported(db, more);
    assert_eq!(
        links.keys().map(String::as_str).collect::<Vec<_>>(),
        ["AbCdEfG", "SpringSale", "spring-sale_24"]
    );
    assert_eq!(links["SpringSale"]["imported_clicks"], 1234);
    assert_eq!(
        links["spring-sale_24"]["imported_clicks"], 0,
        "counted once"
    );
    assert_eq!(links["AbCdEfG"]["imported_clicks"], 5);
    assert_eq!(links["AbCdEfG"]["inactive"], true);
    assert_eq!(links["SpringSale"]["title"], "Spring");
    assert_eq!(links["SpringSale"]["notes"], "tags: print, 2019");
}

/// Bitly's CSV export through `import --from bitly` into a qrtag of one
/// domain: the same links as from the API (a row's custom link, or its
/// bit.ly back-half), the same report dry and real, nothing new again.
#[test]
fn a_bitly_export_comes_over_through_import_from_into_one_domain() {
    let (dir, db) = support::fresh_db();
    let file = dir.path().join("bitly.csv");
    std::fs::write(&file, crate::bitly::BITLY_CSV).expect("csv");
    let run = |more: &[&str]| {
        let mut args = vec!["import", "--from", "bitly"];
        args.extend_from_slice(more);
        args.push(file.to_str().expect("path"));
        support::qrtag_cmd(&db, &args)
    };
    let dry = run(&["--dry-run"]);
    let real = run(&[]);
    assert_eq!(real.status.code(), Some(1), "café.menu: {}", stderr(&real));
    assert_eq!(report_of(&dry), report_of(&real));
    let report = report_of(&real);
    assert!(
        report.contains("  new: 2\n  already there and equal: 0\n"),
        "{report}"
    );
    assert!(
        report.contains("a key qrtag can serve: caf--menu"),
        "{report}"
    );
    let kept = std::fs::read_to_string(dir.path().join("bitly.csv.qrtag-import.txt"))
        .expect("report file");
    assert_eq!(kept, report);
    let links = exported(&db, &[]);
    assert_eq!(
        links.keys().map(String::as_str).collect::<Vec<_>>(),
        ["AbCdEfG", "SpringSale"]
    );
    assert_eq!(
        scan(&db, "SpringSale", &[]).map(|u| url::Url::parse(&u).expect("url")),
        Some(url::Url::parse("https://example.com/menü?x=1#top").expect("url"))
    );
    assert_eq!(scan(&db, "AbCdEfG", &[]), None, "archived: inactive");
    assert_eq!(links["SpringSale"]["imported_clicks"], 1234);
    assert_eq!(links["AbCdEfG"]["imported_clicks"], 5);
    let again = run(&[]);
    assert!(
        report_of(&again).contains("  new: 0\n  already there and equal: 2\n"),
        "{}",
        stdout(&again)
    );
}

//! Smart tags on the command line (issue 34), through the real binary:
//! `qrtag rule add|list|remove|move`, `qrtag try`, `qrtag show` and the
//! mark in `qrtag list`.

mod support;

use std::path::Path;
use std::process::Output;

use support::{init_db, qrtag_cmd, qrtag_cmd_env};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

fn doc(db: &Path, key: &str) -> serde_json::Value {
    serde_json::from_str(&ok(qrtag_cmd(db, &["show", key]))).expect("show prints JSON")
}

/// A bad command: one line on stderr, exit 2, nothing on stdout.
fn refused(db: &Path, args: &[&str], said: &str) {
    let out = qrtag_cmd(db, args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(said), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
}

fn geoip_db() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/geoip/test.mmdb")
        .display()
        .to_string()
}

fn menu(db: &Path) {
    init_db(db);
    ok(qrtag_cmd(
        db,
        &["new", "--key", "menu", "https://example.com/dinner"],
    ));
}

#[test]
fn rules_are_added_listed_moved_and_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    menu(&db);
    let out = ok(qrtag_cmd(
        &db,
        &[
            "rule",
            "add",
            "menu",
            "--os",
            "ios,ipados",
            "https://apps.apple.com/app/id1",
        ],
    ));
    assert_eq!(
        out,
        "menu: rule 1: os: ios, ipados -> https://apps.apple.com/app/id1\n"
    );
    ok(qrtag_cmd(
        &db,
        &[
            "rule",
            "add",
            "menu",
            "--days",
            "mon-fri",
            "--hours",
            "11:00-15:00",
            "--tz",
            "Europe/Dublin",
            "https://example.com/lunch",
        ],
    ));
    ok(qrtag_cmd(
        &db,
        &[
            "rule",
            "add",
            "menu",
            "--from",
            "2026-12-01 09:00",
            "--tz",
            "Europe/Dublin",
            "https://example.com/recap",
            "--at",
            "1",
        ],
    ));
    ok(qrtag_cmd(
        &db,
        &[
            "rule",
            "add",
            "menu",
            "--split",
            "50-100",
            "--lang",
            "en",
            "https://example.com/b",
        ],
    ));
    let rules = doc(&db, "menu")["rules"].clone();
    assert_eq!(
        rules,
        serde_json::json!([
            {"url": "https://example.com/recap", "from": "2026-12-01T09:00:00Z"},
            {"url": "https://apps.apple.com/app/id1", "os": ["ios", "ipados"]},
            {"url": "https://example.com/lunch", "days": ["mon", "tue", "wed", "thu", "fri"],
             "hours": ["11:00", "15:00"], "tz": "Europe/Dublin"},
            {"url": "https://example.com/b", "lang": ["en"], "split": [50, 100]},
        ])
    );
    assert_eq!(
        ok(qrtag_cmd(&db, &["rule", "list", "menu"])),
        "1. from: 2026-12-01T09:00:00Z -> https://example.com/recap\n\
         2. os: ios, ipados -> https://apps.apple.com/app/id1\n\
         3. days: mon, tue, wed, thu, fri; hours: 11:00–15:00; tz: Europe/Dublin -> https://example.com/lunch\n\
         4. lang: en; split: 50–100% -> https://example.com/b\n\
         otherwise -> https://example.com/dinner\n"
    );
    ok(qrtag_cmd(&db, &["rule", "move", "menu", "1", "--to", "4"]));
    ok(qrtag_cmd(&db, &["rule", "remove", "menu", "3"]));
    let urls: Vec<String> = doc(&db, "menu")["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| r["url"].as_str().expect("url").to_owned())
        .collect();
    assert_eq!(
        urls,
        [
            "https://apps.apple.com/app/id1",
            "https://example.com/lunch",
            "https://example.com/recap"
        ]
    );
    assert_eq!(doc(&db, "menu")["changed_via"], "cli");
    ok(qrtag_cmd(&db, &["rule", "remove", "menu", "1"]));
    ok(qrtag_cmd(&db, &["rule", "remove", "menu", "1"]));
    ok(qrtag_cmd(&db, &["rule", "remove", "menu", "1"]));
    assert!(
        doc(&db, "menu").get("rules").is_none(),
        "no rules, no field"
    );
    assert_eq!(
        ok(qrtag_cmd(&db, &["rule", "list", "menu"])),
        "no rules: every scan gets https://example.com/dinner\n"
    );
}

#[test]
fn bad_rules_are_one_line_exit_2_and_nothing_saved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    menu(&db);
    ok(qrtag_cmd(
        &db,
        &[
            "rule",
            "add",
            "menu",
            "--os",
            "android",
            "https://play.google.com/x",
        ],
    ));
    let before = doc(&db, "menu");
    let u = "https://example.com/x";
    for (args, said) in [
        (&["rule", "add", "menu", u][..], "at least one condition"),
        (&["rule", "add", "menu", "--frob", "x", u], "--frob"),
        (
            &["rule", "add", "menu", "--os", "windows", u],
            "--os: must be one of",
        ),
        (
            &["rule", "add", "menu", "--hours", "11:00-11:00", u],
            "--hours: start and end",
        ),
        (
            &["rule", "add", "menu", "--hours", "11:00", u],
            "--hours: `11:00` is not a range",
        ),
        (
            &["rule", "add", "menu", "--hours", "25:00-26:00", u],
            "--hours: must be",
        ),
        (
            &["rule", "add", "menu", "--split", "0-150", u],
            "--split: must be [lo, hi]",
        ),
        (&["rule", "add", "menu", "--split", "60-40", u], "--split"),
        (
            &["rule", "add", "menu", "--days", "mon-fry", u],
            "--days: `fry` is not a day",
        ),
        (&["rule", "add", "menu", "--days", "weekends", u], "--days"),
        (&["rule", "add", "menu", "--lang", "en_GB", u], "--lang"),
        (
            &["rule", "add", "menu", "--from", "soon", u],
            "--from: `soon` is not a time",
        ),
        (
            &[
                "rule",
                "add",
                "menu",
                "--from",
                "2027-01-02",
                "--until",
                "2027-01-01",
                u,
            ],
            "--until: must be after",
        ),
        (
            &[
                "rule",
                "add",
                "menu",
                "--tz",
                "Mars/Base",
                "--days",
                "sat",
                u,
            ],
            "time zone",
        ),
        (
            &["rule", "add", "menu", "--country", "IE", u],
            "--country: a country rule needs",
        ),
        (
            &["rule", "add", "menu", "--os", "ios", "/a/path"],
            "URL: must be an absolute",
        ),
        (
            &["rule", "add", "menu", "--os", "ios", "javascript:alert(1)"],
            "URL",
        ),
        (
            &["rule", "add", "menu", "--os", "ios", "https://0x1f.ie/menu"],
            "the link menu's own short URL",
        ),
        (
            &["rule", "add", "menu", "--os", "ios", u, "--at", "3"],
            "--at 3: give 1 to 2",
        ),
        (
            &["rule", "add", "menu", "--os", "ios", u, "--at", "0"],
            "--at",
        ),
        (
            &["rule", "remove", "menu", "2"],
            "no rule 2: the link has 1 rule",
        ),
        (
            &["rule", "move", "menu", "1", "--to", "2"],
            "--to 2: the only place is 1",
        ),
    ] {
        refused(&db, args, said);
    }
    assert_eq!(doc(&db, "menu"), before, "nothing saved");
    let out = qrtag_cmd(&db, &["rule", "list", "mneu"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("no link mneu (did you mean menu?)"),
        "{out:?}"
    );
}

#[test]
fn a_country_rule_needs_the_geoip_database_serve_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    menu(&db);
    let mmdb = geoip_db();
    let add = [
        "rule",
        "add",
        "menu",
        "--country",
        "IE,GB",
        "https://example.com/ie",
    ];
    let out = qrtag_cmd(&db, &add);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(stderr(&out).contains("--geoip-db"), "{out:?}");
    // The flag, the variable serve reads, and the configuration file's key.
    let mut with_flag = add.to_vec();
    with_flag.extend(["--geoip-db", &mmdb]);
    ok(qrtag_cmd(&db, &with_flag));
    ok(qrtag_cmd_env(
        &db,
        &[
            "rule",
            "add",
            "menu",
            "--country",
            "FR",
            "https://example.com/fr",
        ],
        &[("QRTAG_GEOIP_DB", &mmdb)],
    ));
    let config = dir.path().join("qrtag.toml");
    std::fs::write(&config, format!("geoip_db = {mmdb:?}\n")).expect("config");
    ok(qrtag_cmd_env(
        &db,
        &[
            "rule",
            "add",
            "menu",
            "--country",
            "US",
            "https://example.com/us",
        ],
        &[("QRTAG_CONFIG", config.to_str().expect("utf-8"))],
    ));
    assert_eq!(doc(&db, "menu")["rules"].as_array().map(Vec::len), Some(3));
    // A rule whose code is no country is refused, database or not.
    let out = qrtag_cmd(
        &db,
        &[
            "rule",
            "add",
            "menu",
            "--country",
            "UK",
            "https://example.com/uk",
            "--geoip-db",
            &mmdb,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(stderr(&out).contains("\"GB\""), "{out:?}");
    // Other edits of a link whose country rules were saved with a database
    // go on without one.
    ok(qrtag_cmd(&db, &["rule", "move", "menu", "3", "--to", "1"]));
}

//! Smart tags on the command line (issue 34), through the real binary:
//! `qrtag rule add|list|remove|move`, `qrtag try`, `qrtag show` and the
//! mark in `qrtag list`.

mod support;

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use support::output::{ok, stderr, stdout};
use support::{fresh_db, qrtag_cmd, qrtag_cmd_env};

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

/// A fresh database holding `menu`, whose url is the dinner menu.
fn menu() -> (TempDir, PathBuf) {
    let (dir, db) = fresh_db();
    ok(qrtag_cmd(
        &db,
        &["new", "--key", "menu", "https://example.com/dinner"],
    ));
    (dir, db)
}

/// `rule add`'s flags for the issue's first two rules: the apps for iOS
/// and iPadOS, lunch on weekdays 11:00-15:00 in Dublin.
const APPS: &[&str] = &["--os", "ios,ipados", "https://apps.apple.com/app/id1"];
const LUNCH: &[&str] = &[
    "--days",
    "mon-fri",
    "--hours",
    "11:00-15:00",
    "--tz",
    "Europe/Dublin",
    "https://example.com/lunch",
];

/// What `qrtag rule list menu` prints.
fn rule_list(db: &Path) -> String {
    ok(qrtag_cmd(db, &["rule", "list", "menu"]))
}

/// `qrtag rule add KEY ARGS...`, which must succeed: what it printed.
fn add_rule(db: &Path, key: &str, args: &[&str]) -> String {
    let mut all = vec!["rule", "add", key];
    all.extend(args);
    ok(qrtag_cmd(db, &all))
}

#[test]
fn rules_are_added_listed_moved_and_removed() {
    let (_dir, db) = menu();
    let out = add_rule(&db, "menu", APPS);
    assert_eq!(
        out,
        "menu: rule 1: os: ios, ipados -> https://apps.apple.com/app/id1\n"
    );
    add_rule(&db, "menu", LUNCH);
    add_rule(
        &db,
        "menu",
        &[
            "--from",
            "2026-12-01 09:00",
            "--tz",
            "Europe/Dublin",
            "https://example.com/recap",
            "--at",
            "1",
        ],
    );
    add_rule(
        &db,
        "menu",
        &["--split", "50-100", "--lang", "en", "https://example.com/b"],
    );
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
        rule_list(&db),
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
        rule_list(&db),
        "no rules: every scan gets https://example.com/dinner\n"
    );
}

#[test]
fn bad_rules_are_one_line_exit_2_and_nothing_saved() {
    let (_dir, db) = menu();
    add_rule(
        &db,
        "menu",
        &["--os", "android", "https://play.google.com/x"],
    );
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
    let (dir, db) = menu();
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
    let add_country = |code: &str, env: &[(&str, &str)]| {
        let url = format!("https://example.com/{}", code.to_lowercase());
        let args = ["rule", "add", "menu", "--country", code, &url];
        ok(qrtag_cmd_env(&db, &args, env))
    };
    add_country("FR", &[("QRTAG_GEOIP_DB", &mmdb)]);
    let config = dir.path().join("qrtag.toml");
    std::fs::write(&config, format!("geoip_db = {mmdb:?}\n")).expect("config");
    add_country("US", &[("QRTAG_CONFIG", config.to_str().expect("utf-8"))]);
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

/// The lunch-menu tag of the issue: apps by OS first, lunch on weekdays
/// 11:00-15:00 in Dublin, the English page for English speakers, dinner
/// otherwise.
fn lunch_menu() -> (TempDir, PathBuf) {
    let (dir, db) = menu();
    for args in [APPS, LUNCH, &["--lang", "en", "https://example.com/en"]] {
        add_rule(&db, "menu", args);
    }
    (dir, db)
}

fn try_scan(db: &Path, args: &[&str]) -> Vec<String> {
    let mut all = vec!["try"];
    all.extend(args);
    ok(qrtag_cmd(db, &all)).lines().map(str::to_owned).collect()
}

#[test]
fn try_tells_which_rule_a_described_scan_gets_and_what_changes_next() {
    let (_dir, db) = lunch_menu();
    // Wednesday 2 December 2026, 12:30 in Dublin (UTC in winter).
    let wed_lunch = ["--at", "2026-12-02 12:30", "--tz", "Europe/Dublin"];
    let mut args = vec!["menu", "--ua", "iphone"];
    args.extend(wed_lunch);
    assert_eq!(
        try_scan(&db, &args),
        [
            "https://apps.apple.com/app/id1",
            "by rule 1 of menu: os: ios, ipados",
            "next: no change due",
        ]
    );
    let mut args = vec!["menu", "--ua", "android", "--lang", "de, en;q=0.8"];
    args.extend(wed_lunch);
    assert_eq!(
        try_scan(&db, &args),
        [
            "https://example.com/lunch",
            "by rule 2 of menu: days: mon, tue, wed, thu, fri; hours: 11:00–15:00; tz: Europe/Dublin",
            "next: from 2026-12-02 15:00 Europe/Dublin: https://example.com/dinner (the url)",
        ]
    );
    // Saturday: no lunch; German first, so not the English page either.
    let out = try_scan(
        &db,
        &[
            "menu",
            "--ua",
            "desktop",
            "--lang",
            "de, en;q=0.8",
            "--at",
            "2026-12-05T12:00:00Z",
        ],
    );
    assert_eq!(out[0], "https://example.com/dinner");
    assert_eq!(out[1], "by menu's url (no rule holds)");
    assert_eq!(
        out[2],
        "next: from 2026-12-07 11:00 UTC: https://example.com/lunch (rule 2)"
    );
    let out = try_scan(
        &db,
        &["menu", "--lang", "en-GB", "--at", "2026-12-05T12:00:00Z"],
    );
    assert_eq!(out[0], "https://example.com/en");
    // Summer time: 11:00 in Dublin is 10:00 UTC, the window is local.
    let out = try_scan(&db, &["menu", "--at", "2026-07-01T10:30:00Z"]);
    assert_eq!(out[0], "https://example.com/lunch", "{out:?}");
    let out = try_scan(&db, &["menu", "--at", "2026-07-01T14:30:00Z"]);
    assert_eq!(out[0], "https://example.com/dinner", "{out:?}");
    // The resolver runs on the chosen destination: path and query appended,
    // and another link pointing here follows the rules too.
    let mut args = vec!["menu/today?table=4"];
    args.extend(wed_lunch);
    assert_eq!(
        try_scan(&db, &args)[0],
        "https://example.com/lunch/today?table=4"
    );
    ok(qrtag_cmd(
        &db,
        &[
            "new",
            "--key",
            "tent",
            &format!("{}/menu", support::PUBLIC_URL),
        ],
    ));
    let mut args = vec!["tent", "--ua", "iphone"];
    args.extend(wed_lunch);
    let out = try_scan(&db, &args);
    assert_eq!(out[0], "https://apps.apple.com/app/id1", "{out:?}");
    // A dead link: 404, exit 1; a key that is no link: suggestions.
    ok(qrtag_cmd(&db, &["disable", "tent"]));
    let out = qrtag_cmd(&db, &["try", "tent"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(stdout(&out), "404: tent is inactive\n");
    let out = qrtag_cmd(&db, &["try", "mneu"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("did you mean menu?"), "{out:?}");
    for (args, said) in [
        (
            &["try", "menu", "--at", "whenever"][..],
            "--at: `whenever` is not a time",
        ),
        (
            &["try", "menu", "--country", "Ireland"],
            "--country Ireland",
        ),
        (&["try", "menu", "--cookie", "abc"], "--cookie"),
        (&["try", "menu", "--ip", "not-an-address"], "--ip"),
    ] {
        refused(&db, args, said);
    }
}

#[test]
fn try_splits_by_cookie_and_finds_the_country_of_an_address() {
    let (_dir, db) = menu();
    let mmdb = geoip_db();
    add_rule(
        &db,
        "menu",
        &[
            "--country",
            "IE",
            "https://example.com/ie",
            "--geoip-db",
            &mmdb,
        ],
    );
    add_rule(&db, "menu", &["--split", "0-50", "https://example.com/a"]);
    add_rule(&db, "menu", &["--split", "50-100", "https://example.com/b"]);
    let out = try_scan(&db, &["menu", "--country", "ie"]);
    assert_eq!(out[0], "https://example.com/ie");
    let out = try_scan(&db, &["menu", "--ip", "203.0.113.7", "--geoip-db", &mmdb]);
    assert_eq!(out[0], "https://example.com/ie", "{out:?}");
    let out = try_scan(&db, &["menu", "--ip", "198.51.100.7", "--geoip-db", &mmdb]);
    assert_ne!(out[0], "https://example.com/ie", "{out:?}");
    // Each ID's variant is the one its bucket says, every time.
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..12u64 {
        let id = qrtag::tracking::id::TrackingId::generate_now(1_780_000_000_000 + i as i64);
        let bucket = qrtag::link::rules::split::bucket("menu", id.as_str().as_bytes());
        let want = if bucket < 50 {
            "https://example.com/a"
        } else {
            "https://example.com/b"
        };
        for _ in 0..2 {
            let out = try_scan(&db, &["menu", "--cookie", id.as_str()]);
            assert_eq!(out[0], want, "{id}: {out:?}");
            assert_eq!(
                out[2],
                format!("split bucket: {bucket} of 0-99 (from --cookie)")
            );
        }
        seen.insert(want);
    }
    assert_eq!(seen.len(), 2, "12 IDs all in one half");
    // Without a cookie: the address and the User-Agent.
    let who = qrtag::link::rules::split::scanner_without_cookie(
        "192.0.2.1".parse().expect("ip"),
        b"curl/8",
    );
    let bucket = qrtag::link::rules::split::bucket("menu", &who);
    let out = try_scan(&db, &["menu", "--ip", "192.0.2.1", "--ua", "curl/8"]);
    assert_eq!(
        out[2],
        format!(
            "split bucket: {bucket} of 0-99 (no --cookie: from the address 192.0.2.1 and the User-Agent)"
        )
    );
}

#[test]
fn show_says_now_and_next_and_list_marks_links_with_rules() {
    let (_dir, db) = fresh_db();
    ok(qrtag_cmd(
        &db,
        &["new", "--key", "gig", "https://example.com/gig"],
    ));
    ok(qrtag_cmd(
        &db,
        &["new", "--key", "plain", "https://example.com/plain"],
    ));
    // The recap after an event: a scheduled repoint, nobody at a keyboard.
    add_rule(
        &db,
        "gig",
        &[
            "--from",
            "2030-06-01 09:00",
            "--tz",
            "Europe/Dublin",
            "https://example.com/recap",
        ],
    );
    let out = qrtag_cmd(&db, &["show", "gig", "--tz", "Europe/Dublin"]);
    let shown: serde_json::Value = serde_json::from_str(&ok(out.clone())).expect("stdout is JSON");
    assert_eq!(shown["rules"][0]["from"], "2030-06-01T08:00:00Z");
    assert_eq!(
        stderr(&out),
        "rules, tried in order (qrtag rule list gig):\n  \
         1. from: 2030-06-01T08:00:00Z -> https://example.com/recap\n  \
         otherwise -> https://example.com/gig\n\
         now, a scan with no User-Agent, language, country or cookie: https://example.com/gig (the url)\n\
         next: from 2030-06-01 09:00 Europe/Dublin: https://example.com/recap (rule 1)\n"
    );
    let out = qrtag_cmd(&db, &["show", "plain"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
    assert_eq!(
        ok(qrtag_cmd(&db, &["list"])),
        "gig\thttps://example.com/gig\tactive, 1 rule\n\
         plain\thttps://example.com/plain\tactive\n"
    );
}

#[test]
fn the_user_agent_presets_are_the_devices_they_name() {
    let (_dir, db) = fresh_db();
    ok(qrtag_cmd(
        &db,
        &["new", "--key", "dev", "https://example.com/"],
    ));
    let kinds = [
        ("iphone", "ios", "phone"),
        ("ipad", "ipados", "tablet"),
        ("android", "android", "phone"),
        ("android-tablet", "android", "tablet"),
        ("desktop", "other", "desktop"),
    ];
    for (preset, os, class) in kinds {
        add_rule(
            &db,
            "dev",
            &[
                "--os",
                os,
                "--class",
                class,
                &format!("https://example.com/{preset}"),
            ],
        );
    }
    for (preset, _, _) in kinds {
        let out = try_scan(&db, &["dev", "--ua", preset]);
        assert_eq!(out[0], format!("https://example.com/{preset}"), "{out:?}");
    }
    let out = try_scan(&db, &["dev", "--ua", "curl/8.5.0"]);
    assert_eq!(
        out[0], "https://example.com/",
        "a literal User-Agent: {out:?}"
    );
}

#[test]
fn show_and_try_without_flags_agree_on_a_split() {
    let (_dir, db) = fresh_db();
    for key in ["ab1", "ab2", "ab3", "ab4"] {
        ok(qrtag_cmd(
            &db,
            &["new", "--key", key, "https://example.com/a"],
        ));
        add_rule(&db, key, &["--split", "50-100", "https://example.com/b"]);
        let tried = try_scan(&db, &[key]);
        let shown = stderr(&qrtag_cmd(&db, &["show", key]));
        let now = shown
            .lines()
            .find(|l| l.starts_with("now, "))
            .expect("a now line");
        assert!(
            now.contains(&format!(": {} (", tried[0])),
            "{now} / {tried:?}"
        );
    }
}

#[test]
fn edit_refuses_rules_the_core_refuses() {
    let (dir, db) = menu();
    let before = doc(&db, "menu");
    let edited = dir.path().join("edited.json");
    std::fs::write(
        &edited,
        r#"{"url": "https://example.com/dinner", "rules": [{"url": "https://example.com/x", "contry": ["IE"]}]}"#,
    )
    .expect("write");
    let editor = format!("cp {}", edited.display());
    let out = qrtag_cmd_env(
        &db,
        &["edit", "menu"],
        &[("EDITOR", &editor), ("VISUAL", "")],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("rules[0].contry: unknown field"),
        "{out:?}"
    );
    assert_eq!(doc(&db, "menu"), before, "nothing saved");
    std::fs::write(
        &edited,
        r#"{"url": "https://example.com/dinner", "rules": [{"url": "https://example.com/x", "lang": ["en"]}]}"#,
    )
    .expect("write");
    ok(qrtag_cmd_env(
        &db,
        &["edit", "menu"],
        &[("EDITOR", &editor), ("VISUAL", "")],
    ));
    assert_eq!(
        rule_list(&db),
        "1. lang: en -> https://example.com/x\notherwise -> https://example.com/dinner\n"
    );
}

#[test]
fn a_rule_host_in_capitals_is_stored_lowered_and_said() {
    let (_dir, db) = menu();
    let out = qrtag_cmd(
        &db,
        &[
            "rule",
            "add",
            "menu",
            "--lang",
            "fr",
            "https://Example.COM/Fr",
        ],
    );
    assert_eq!(
        stdout(&out),
        "menu: rule 1: lang: fr -> https://example.com/Fr\n"
    );
    assert!(stderr(&out).starts_with("qrtag: note: "), "{out:?}");
    assert_eq!(
        doc(&db, "menu")["rules"][0]["url"],
        "https://example.com/Fr"
    );
}

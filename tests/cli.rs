//! The command line as a user runs it: the real binary, a real database file.

mod support;

use support::{PUBLIC_URL, qrtag_cmd};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn link_lifecycle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");

    let out = qrtag_cmd(&db, &["new", "https://example.com/a"]);
    assert!(out.status.success(), "{out:?}");
    let short = stdout(&out).trim().to_owned();
    let key = short
        .strip_prefix(&format!("{PUBLIC_URL}/"))
        .expect("short URL on the public origin");
    assert!(
        qrtag::values::short_id::ShortId::parse(key).is_ok(),
        "{key}"
    );

    let out = qrtag_cmd(&db, &["set", key, "https://example.com/b"]);
    assert!(out.status.success(), "{out:?}");
    let out = qrtag_cmd(&db, &["disable", key]);
    assert!(out.status.success(), "{out:?}");
    let out = qrtag_cmd(&db, &["show", key]);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("show prints JSON");
    assert_eq!(doc["url"], "https://example.com/b");
    assert_eq!(doc["inactive"], true);

    let out = qrtag_cmd(&db, &["list"]);
    assert_eq!(
        stdout(&out),
        format!("{key}\thttps://example.com/b\tinactive\n")
    );
    let out = qrtag_cmd(&db, &["enable", key]);
    assert!(out.status.success(), "{out:?}");
    let out = qrtag_cmd(&db, &["list"]);
    assert!(stdout(&out).ends_with("\tactive\n"), "{out:?}");
}

#[test]
fn hand_chosen_keys_and_taken_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let out = qrtag_cmd(&db, &["new", "/documentation", "--key", "docs/api"]);
    assert_eq!(stdout(&out).trim(), format!("{PUBLIC_URL}/docs/api"));
    let out = qrtag_cmd(&db, &["new", "/elsewhere", "--key", "docs/api"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("docs/api is already taken"));
}

#[test]
fn bad_arguments_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    for args in [
        &["new", "javascript:alert(1)"][..],
        &["new", "//evil.example"],
        &["new", "https://a.example/", "--key", "no spaces"],
        &["set", "H83if!", "https://a.example/"],
        &["--public-url", "0x1f.ie", "list"],
        &["frobnicate"],
    ] {
        let out = qrtag_cmd(&db, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("qrtag: ") && err.contains("--help)"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn destinations_that_fool_people_are_refused_in_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    for (args, says) in [
        (
            &["new", "https://example.com:443@evil.example/"][..],
            "user name or password",
        ),
        (&["new", "/.//evil.example"], "'.' or '..' segments"),
        (&["new", "/..//evil.example"], "'.' or '..' segments"),
        (&["new", "/%2e%2e//evil.example"], "'.' or '..' segments"),
        (&["new", "/\\evil.example"], "backslash"),
        (
            &["new", "https://ｅｖｉｌ.example/"],
            "did you mean https://evil.example/",
        ),
        (
            &["new", "--key", "books", "https://bücher.example/"],
            "did you mean https://xn--bcher-kva.example/",
        ),
    ] {
        let out = qrtag_cmd(&db, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("qrtag: ") && err.contains(says),
            "{args:?}: {err}"
        );
    }
    // The helper creates the database for `new` (`qrtag init`, as a user
    // does once); no link was written to it.
    let list = qrtag_cmd(&db, &["list"]);
    assert!(list.status.success() && list.stdout.is_empty(), "{list:?}");
}

/// Issue 31: hosts are case-insensitive, so a capital letter in one is
/// stored in lower case, as URL parsers serve it, and the CLI says so; the
/// path keeps its case.
#[test]
fn a_host_with_capitals_is_stored_in_lower_case_with_a_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    for (args, stored) in [
        (
            &["new", "--key", "menu", "https://Venue.example.com/Menu"][..],
            "https://venue.example.com/Menu",
        ),
        (
            &["set", "menu", "http://EVIL.example:8080/x?Y"],
            "http://evil.example:8080/x?Y",
        ),
    ] {
        let out = qrtag_cmd(&db, args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(stored) && err.contains("lower case"), "{err}");
        let out = qrtag_cmd(&db, &["show", "menu"]);
        let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
        assert_eq!(doc["url"], stored);
    }
}

#[test]
fn missing_keys_are_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    assert!(
        qrtag_cmd(&db, &["new", "https://a.example/"])
            .status
            .success()
    );
    for cmd in ["show", "disable", "enable", "set"] {
        let args: &[&str] = match cmd {
            "set" => &[cmd, "zzzzz", "https://b.example/"],
            _ => &[cmd, "zzzzz"],
        };
        let out = qrtag_cmd(&db, args);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        assert_eq!(stderr(&out).trim(), "qrtag: no link zzzzz", "{cmd}");
    }
}

#[test]
fn resolve_checks_a_ruleset_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = dir.path().join("rules.json");
    std::fs::write(
        &rules,
        r#"{"github": "https://github.com", "docs": "/documentation", "docs/api": "/documentation/reference", "loop": "/loop"}"#,
    )
    .expect("write rules");
    let rules = rules.to_str().expect("utf-8 path");
    let out = qrtag_cmd(
        std::path::Path::new("unused.db"),
        &[
            "resolve",
            "--rules",
            rules,
            "https://example.com/github/ietf/guidelines",
            "https://example.com/docs/api/v1/users",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stdout(&out),
        "https://example.com/github/ietf/guidelines -> https://github.com/ietf/guidelines\n\
         https://example.com/docs/api/v1/users -> https://example.com/documentation/reference/v1/users\n"
    );
    let out = qrtag_cmd(
        std::path::Path::new("unused.db"),
        &["resolve", "--rules", rules, "https://example.com/loop"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("too many internal redirects"),
        "{out:?}"
    );
}

/// Issue 31: `qrtag set` took `--notes` but `qrtag new` did not, so every
/// tag of a venue took two commands. The same rule as `set`'s: trimmed,
/// at most 2000 characters.
#[test]
fn new_takes_notes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let out = qrtag_cmd(
        &db,
        &[
            "new",
            "/menu",
            "--key",
            "t1",
            "--notes",
            "  table 1, by the window \n",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = qrtag_cmd(&db, &["show", "t1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(doc["notes"], "table 1, by the window");
    let long = "x".repeat(2001);
    let out = qrtag_cmd(&db, &["new", "/menu", "--key", "t2", "--notes", &long]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("notes may be at most 2000 characters, not 2001"),
        "{}",
        stderr(&out)
    );
    let out = qrtag_cmd(&db, &["show", "t2"]);
    assert!(!out.status.success(), "nothing created");
}

/// Issue 31: `list` put `table-10` before `table-2`; keys come in natural
/// order (digit runs by value), so `qrtag list | cut -f1 | qrtag print -`
/// prints a run's labels in the order people number them.
#[test]
fn list_sorts_numbered_keys_by_their_numbers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    for key in [
        "table-10", "table-2", "table-1", "b", "table-9", "a/10", "a/9",
    ] {
        let out = qrtag_cmd(&db, &["new", "/x", "--key", key]);
        assert!(out.status.success(), "{out:?}");
    }
    let out = qrtag_cmd(&db, &["list"]);
    assert!(out.status.success(), "{out:?}");
    let keys: Vec<String> = stdout(&out)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        keys,
        [
            "a/9", "a/10", "b", "table-1", "table-2", "table-9", "table-10"
        ]
    );
}

/// Issue 33: a link's title, set by `new --title` and `set --title`,
/// shown by `list` as a fourth column; bad input is one line, exit 2,
/// and nothing written.
#[test]
fn titles_are_set_listed_and_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let out = qrtag_cmd(
        &db,
        &[
            "new",
            "https://example.com/spring",
            "--key",
            "p1",
            "--title",
            "  Spring poster, bus stop ",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = qrtag_cmd(&db, &["new", "https://example.com/plain", "--key", "p2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = qrtag_cmd(&db, &["list"]);
    assert_eq!(
        stdout(&out),
        "p1\thttps://example.com/spring\tactive\tSpring poster, bus stop\n\
         p2\thttps://example.com/plain\tactive\n"
    );

    let out = qrtag_cmd(&db, &["set", "p2", "--title", "Menu, table 4"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "p2 title set\n");
    let show = |key: &str| -> serde_json::Value {
        let out = qrtag_cmd(&db, &["show", key]);
        serde_json::from_str(&stdout(&out)).expect("JSON")
    };
    assert_eq!(show("p2")["title"], "Menu, table 4");

    let long = "🎟".repeat(201);
    for bad in [long.as_str(), "two\nlines"] {
        for args in [
            vec!["set", "p2", "--title", bad],
            vec!["new", "/x", "--key", "p3", "--title", bad],
        ] {
            let out = qrtag_cmd(&db, &args);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stdout(&out));
            let err = stderr(&out);
            let first = err.lines().next().unwrap_or_default();
            assert!(
                first.contains("a title may be at most 200 characters, not 201")
                    || first.contains("a title is one line"),
                "{err}"
            );
        }
    }
    assert_eq!(show("p2")["title"], "Menu, table 4", "nothing changed");
    assert!(!qrtag_cmd(&db, &["show", "p3"]).status.success());
    let out = qrtag_cmd(&db, &["set", "p2", "--title", ""]);
    assert_eq!(stdout(&out), "p2 has no title\n");
    assert!(show("p2").get("title").is_none());
    let out = qrtag_cmd(
        &db,
        &["new", "/x", "--key", "p4", "--title", &"🎟".repeat(200)],
    );
    assert!(out.status.success(), "200 emoji fit: {}", stderr(&out));
}

//! A link's life on the real binary and a real server (issue 18): times
//! recorded on every write, expiry as people write it, `set` on an inactive
//! link, and deletion that keeps a tombstone so a key is never reused.

mod support;

use std::process::Output;

use serde_json::Value;
use support::output::{ok, stderr, stdout};
use support::{PUBLIC_URL, qrtag_cmd, qrtag_cmd_env, spawn_app};

/// The one line `qrtag: ...` a refused command prints, and its exit code.
fn refused(o: &Output, code: i32) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(o.stdout.is_empty(), "{}", stdout(o));
    err.trim_end().to_owned()
}

fn show(db: &std::path::Path, key: &str) -> Value {
    serde_json::from_str(&ok(qrtag_cmd(db, &["show", key]))).expect("show prints JSON")
}

fn time_of(doc: &Value, field: &str) -> chrono::DateTime<chrono::Utc> {
    let text = doc[field]
        .as_str()
        .unwrap_or_else(|| panic!("no {field} in {doc}"));
    assert!(
        text.ends_with('Z') && !text.contains('.'),
        "{field}: UTC, whole seconds: {text}"
    );
    text.parse().expect("RFC 3339")
}

#[test]
fn every_write_records_its_time_and_creation_is_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.db");
    let before = chrono::Utc::now() - chrono::Duration::seconds(1);
    ok(qrtag_cmd(
        &db,
        &["new", "https://example.com/", "--key", "k"],
    ));
    let created = show(&db, "k");
    let created_at = time_of(&created, "created_at");
    assert!(created_at >= before, "{created}");
    assert_eq!(created["changed_at"], created["created_at"]);
    // Issue 33: and by which surface, beside each time.
    assert_eq!(
        (&created["created_via"], &created["changed_via"]),
        (&serde_json::json!("cli"), &serde_json::json!("cli"))
    );

    // A link made long ago (an import keeps the times it brings): every
    // edit moves changed_at to now and leaves created_at.
    let file = dir.path().join("old.jsonl");
    std::fs::write(
        &file,
        r#"{"_id":"old","url":"https://example.com/","created_at":"2020-01-01T00:00:00Z","changed_at":"2020-01-02T00:00:00Z"}"#,
    )
    .expect("write");
    ok(qrtag_cmd(&db, &["import", file.to_str().expect("utf-8")]));
    let long_ago: chrono::DateTime<chrono::Utc> = "2020-01-01T00:00:00Z".parse().expect("time");
    let imported = show(&db, "old");
    assert_eq!(time_of(&imported, "created_at"), long_ago);
    // The import kept the times it was given, so it names no surface for
    // them (it did not make the link then).
    assert!(imported.get("created_via").is_none(), "{imported}");
    assert!(imported.get("changed_via").is_none(), "{imported}");
    for args in [
        &["set", "old", "https://example.com/2"][..],
        &["set", "old", "--notes", "bus stop"],
        &["set", "old", "--expires", "30d"],
        &["disable", "old"],
        &["enable", "old"],
        &["edit", "old"],
        &["delete", "--yes", "old"],
    ] {
        let edited_before = chrono::Utc::now() - chrono::Duration::seconds(1);
        set_changed_at(&db, "old", "2020-01-02T00:00:00Z");
        ok(qrtag_cmd_env(
            &db,
            args,
            &[("EDITOR", "sed -i s/bus/tram/")],
        ));
        let doc = show(&db, "old");
        assert_eq!(time_of(&doc, "created_at"), long_ago, "{args:?}");
        let via = if args[0] == "edit" { "edit" } else { "cli" };
        assert_eq!(doc["changed_via"], via, "{args:?}: {doc}");
        assert!(doc.get("created_via").is_none(), "{args:?}: {doc}");
        assert!(
            time_of(&doc, "changed_at") >= edited_before,
            "{args:?}: {doc}"
        );
    }
    assert_eq!(show(&db, "old")["notes"], "tram stop", "the edit was saved");

    let sheet = dir.path().join("sheet.svg");
    let out = ok(qrtag_cmd(
        &db,
        &["batch", "2", "--sheet", sheet.to_str().expect("utf-8")],
    ));
    let first = out.lines().next().expect("a short URL");
    let key = first.rsplit('/').next().expect("a key");
    let doc = show(&db, key);
    time_of(&doc, "created_at");
    time_of(&doc, "changed_at");
}

/// Puts `changed_at` back to a time long ago, as a hand edit in the
/// database would, so the next write's stamp is seen to move it.
fn set_changed_at(db: &std::path::Path, key: &str, at: &str) {
    let conn = rusqlite::Connection::open(db).expect("open");
    let n = conn
        .execute(
            "UPDATE links SET doc = json_set(doc, '$.changed_at', ?2) WHERE key = ?1",
            rusqlite::params![key, at],
        )
        .expect("update");
    assert_eq!(n, 1);
}

#[tokio::test]
async fn a_deleted_link_answers_404_and_its_key_is_never_reused() {
    let app = spawn_app().await;
    let db = &app.db;
    ok(app.cli(&["new", "https://example.com/menu", "--key", "menu"]));
    app.wait_for_status("/menu", 302).await;

    // Without a terminal, deleting needs --yes: a usage error, nothing done.
    let out = app.cli(&["delete", "menu"]);
    assert_eq!(
        refused(&out, 2),
        "qrtag: delete is for good and asks for confirmation at a terminal: \
         give --yes to delete menu from a script"
    );
    assert_eq!(app.get("/menu").await.status(), 302);

    let out = ok(app.cli(&["delete", "--yes", "menu"]));
    assert_eq!(
        out,
        format!(
            "deleted menu: scans of {PUBLIC_URL}/menu answer 404 from now on; \
             the key is kept as a tombstone and never reused\n"
        )
    );
    app.wait_for_status("/menu", 404).await;
    let unknown = app.get("/nothing-here").await.text().await.expect("body");
    let deleted = app.get("/menu").await.text().await.expect("body");
    assert_eq!(deleted, unknown, "a tombstone answers as an unknown key");
    let tag = app.admin_get("/qr/menu.png").await.expect("admin answers");
    assert_eq!(tag.status(), 404, "no tag for a deleted key");

    let doc = show(db, "menu");
    let day = time_of(&doc, "deleted_at").format("%Y-%m-%d").to_string();
    assert_eq!(doc["inactive"], true);
    assert_eq!(
        doc["url"], "https://example.com/menu",
        "kept, to show what it was"
    );
    assert_eq!(doc["changed_at"], doc["deleted_at"]);

    let never = format!(
        "qrtag: key menu was deleted on {day}; a deleted key is never reused, \
         so a printed tag can't lead somewhere else"
    );
    for args in [
        &["new", "https://other.example/", "--key", "menu"][..],
        &["set", "menu", "https://other.example/"],
        &["set", "menu", "--enable"],
        &["enable", "menu"],
        &["disable", "menu"],
        &["delete", "--yes", "menu"],
        &["qr", "menu", "--format", "svg"],
    ] {
        assert_eq!(refused(&app.cli(args), 1), never, "{args:?}");
    }

    ok(app.cli(&["new", "https://example.com/b", "--key", "bar"]));
    assert_eq!(
        ok(app.cli(&["list"])),
        "bar\thttps://example.com/b\tactive\n"
    );
    let deleted_line = format!(
        "menu\thttps://example.com/menu\tdeleted {}\n",
        time_of(&doc, "deleted_at").format("%Y-%m-%d %H:%M UTC")
    );
    assert_eq!(ok(app.cli(&["list", "--deleted"])), deleted_line);
    assert_eq!(
        ok(app.cli(&["list", "--all"])),
        format!("bar\thttps://example.com/b\tactive\n{deleted_line}")
    );
    assert_eq!(
        refused(&app.cli(&["delete", "--yes", "nope"]), 1),
        "qrtag: no link nope"
    );
}

#[test]
fn a_past_expiry_is_refused_unless_forced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.db");
    let out = qrtag_cmd(
        &db,
        &[
            "new",
            "https://example.com/",
            "--key",
            "old",
            "--expires",
            "2020-01-01T00:00:00Z",
        ],
    );
    let err = refused(&out, 2);
    assert!(
        err.starts_with("qrtag: --expires 2020-01-01 00:00 UTC is in the past (it is now 20")
            && err.ends_with("): the tag would answer 404 at once; give --force to set it anyway"),
        "{err}"
    );
    assert_eq!(
        ok(qrtag_cmd(&db, &["list", "--all"])),
        "",
        "refused before anything was written"
    );

    ok(qrtag_cmd(
        &db,
        &["new", "https://example.com/", "--key", "k"],
    ));
    let out = qrtag_cmd(&db, &["set", "k", "--expires", "2020-01-01"]);
    assert!(refused(&out, 2).contains("2020-01-01 23:59 UTC is in the past"));
    assert_eq!(show(&db, "k").get("expires"), None);

    ok(qrtag_cmd(
        &db,
        &["set", "k", "--expires", "2020-01-01", "--force"],
    ));
    assert_eq!(show(&db, "k")["expires"], "2020-01-01T23:59:59Z");
    ok(qrtag_cmd(
        &db,
        &[
            "new",
            "/x",
            "--key",
            "gone",
            "--expires",
            "2020-01-01T00:00:00Z",
            "--force",
        ],
    ));
    assert_eq!(
        ok(qrtag_cmd(&db, &["list"])),
        "gone\t/x\texpired 2020-01-01 00:00 UTC\n\
         k\thttps://example.com/\texpired 2020-01-01 23:59 UTC\n"
    );
}

#[test]
fn a_bare_date_ends_that_day_in_the_time_zone_and_list_says_until_when() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.db");
    ok(qrtag_cmd(
        &db,
        &[
            "new",
            "https://example.com/",
            "--key",
            "utc",
            "--expires",
            "2099-12-31",
        ],
    ));
    assert_eq!(show(&db, "utc")["expires"], "2099-12-31T23:59:59Z");
    ok(qrtag_cmd_env(
        &db,
        &[
            "new",
            "https://example.com/",
            "--key",
            "berlin",
            "--expires",
            "2099-12-31",
        ],
        &[("QRTAG_TIME_ZONE", "Europe/Berlin")],
    ));
    assert_eq!(show(&db, "berlin")["expires"], "2099-12-31T22:59:59Z");
    ok(qrtag_cmd(
        &db,
        &["new", "https://example.com/", "--key", "plain"],
    ));

    assert_eq!(
        ok(qrtag_cmd(&db, &["list"])),
        "berlin\thttps://example.com/\tactive until 2099-12-31 22:59 UTC\n\
         plain\thttps://example.com/\tactive\n\
         utc\thttps://example.com/\tactive until 2099-12-31 23:59 UTC\n"
    );
    let berlin = ok(qrtag_cmd(&db, &["--time-zone", "Europe/Berlin", "list"]));
    assert!(
        berlin.starts_with("berlin\thttps://example.com/\tactive until 2099-12-31 23:59 CET\n"),
        "{berlin}"
    );
    for line in berlin.lines() {
        assert_eq!(line.split('\t').count(), 3, "three columns: {line:?}");
    }
    let out = qrtag_cmd(&db, &["--time-zone", "Mars/Olympus", "list"]);
    let err = refused(&out, 2);
    assert!(
        err.starts_with("qrtag: invalid value 'Mars/Olympus' for '--time-zone <ZONE>': `Mars/Olympus` is not a time zone"),
        "{err}"
    );
}

#[tokio::test]
async fn set_on_an_inactive_link_says_scans_still_get_404_and_enable_does_it() {
    let app = spawn_app().await;
    ok(app.cli(&["new", "https://example.com/a", "--key", "k", "--inactive"]));
    let out = ok(app.cli(&["set", "k", "https://example.com/b"]));
    assert_eq!(
        out,
        "k -> https://example.com/b (inactive: scans answer 404 until qrtag enable k, or set --enable)\n"
    );
    app.wait_for_status("/nothing", 404).await;
    assert_eq!(app.get("/k").await.status(), 404);

    let out = ok(app.cli(&["set", "k", "https://example.com/c", "--enable"]));
    assert_eq!(out, "k -> https://example.com/c\nk enabled\n");
    app.wait_for_status("/k", 302).await;
    let out = ok(app.cli(&["set", "k", "--enable"]));
    assert_eq!(out, "k enabled\n");
}

/// At a terminal (a pseudo-terminal from `script`), delete asks first and
/// does nothing unless the answer is yes.
#[test]
fn at_a_terminal_delete_asks_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.db");
    ok(qrtag_cmd(
        &db,
        &["new", "https://example.com/", "--key", "k"],
    ));
    let at_terminal = |answer: &str| {
        use std::io::Write;
        let command = format!(
            "{} --db {} --public-url {PUBLIC_URL} delete k",
            env!("CARGO_BIN_EXE_qrtag"),
            db.display()
        );
        let mut child = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("script runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(answer.as_bytes())
            .expect("answer");
        child.wait_with_output().expect("finished")
    };
    let out = at_terminal("n\n");
    let text = stdout(&out);
    assert!(
        text.contains(
            "Delete k? Its scans will answer 404, and the key is never used again. [y/N]"
        ),
        "{text}"
    );
    assert!(text.contains("qrtag: k not deleted"), "{text}");
    assert_eq!(out.status.code(), Some(1));
    assert!(show(&db, "k").get("deleted_at").is_none());

    let out = at_terminal("y\n");
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("deleted k: scans of"),
        "{}",
        stdout(&out)
    );
    assert!(show(&db, "k")["deleted_at"].is_string());
}

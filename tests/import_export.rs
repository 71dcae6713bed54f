//! `qrtag export` and `qrtag import` as a user runs them: the real binary on
//! real SQLite files, files and pipes.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::{PUBLIC_URL, qrtag_cmd};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn qrtag_command(db: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_qrtag"));
    cmd.arg("--db")
        .arg(db)
        .args(["--public-url", PUBLIC_URL])
        .args(args)
        .env_remove("QRTAG_DB")
        .env_remove("QRTAG_PUBLIC_URL")
        .env_remove("QRTAG_COUCHDB_URL")
        .env("QRTAG_CONFIG", support::NO_CONFIG);
    if support::adds_links(args) {
        support::init_db(db);
    }
    cmd
}

/// Runs qrtag with `input` on its standard input.
fn qrtag_with_input(db: &Path, args: &[&str], input: &[u8]) -> Output {
    let mut child = qrtag_command(db, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run qrtag");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("qrtag finishes");
    writer.join().expect("writer").expect("input written");
    out
}

/// `qrtag export` through a real pipe into `qrtag import -`.
fn pipe_export_into_import(from: &Path, to: &Path, import_args: &[&str]) -> (Output, Output) {
    let mut args = vec!["import"];
    args.extend_from_slice(import_args);
    args.push("-");
    support::pipe::pipe(qrtag_command(from, &["export"]), qrtag_command(to, &args))
}

fn export(db: &Path) -> String {
    let out = qrtag_cmd(db, &["export"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "",
        "nothing on stderr when it is not a terminal"
    );
    unstamped(&stdout(&out))
}

/// Export text without the times qrtag stamps on the documents it creates
/// (`created_at`, `changed_at`: the clock's, checked in tests/lifecycle.rs;
/// `changed_actor`, issue 35's),
/// byte for byte otherwise.
fn unstamped(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| {
            let mut line = line.to_owned();
            for field in ["created_at", "changed_at", "created_via", "changed_via"] {
                let pattern = format!(",\"{field}\":\"");
                if let Some(at) = line.find(&pattern) {
                    let value = at + pattern.len();
                    let end = value + line[value..].find('"').expect("end of the time");
                    line.replace_range(at..=end, "");
                }
            }
            // Issue 35: who wrote last, an object of text fields.
            let pattern = ",\"changed_actor\":{";
            if let Some(at) = line.find(pattern) {
                let end = at + line[at..].find('}').expect("end of the actor");
                line.replace_range(at..=end, "");
            }
            line
        })
        .collect()
}

/// Issue 31: a CSV of destinations alone, or a row with an empty key: each
/// link gets a drawn key, as `qrtag new` draws one, and the import prints
/// `KEY<TAB>URL` for each before its summary, so a person knows which tag
/// is which.
#[test]
fn a_csv_without_keys_draws_them_and_prints_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let csv = write(
        dir.path(),
        "menus.csv",
        "url,notes\nhttps://example.com/a,front door\nhttps://example.com/b,\n",
    );
    let out = qrtag_cmd(&db, &["import", csv.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(
        lines[2],
        format!(
            "{} (CSV): 2 of 2 links imported, 2 created, 0 updated",
            csv.display()
        )
    );
    let mut keys = Vec::new();
    for (line, url) in lines[..2]
        .iter()
        .zip(["https://example.com/a", "https://example.com/b"])
    {
        let (key, printed) = line.split_once('\t').expect("KEY<TAB>URL");
        assert_eq!(printed, url);
        assert!(
            qrtag::values::short_id::ShortId::parse(key).is_ok(),
            "{key}"
        );
        assert_eq!(show(&db, key)["url"], url);
        keys.push(key.to_owned());
    }
    assert_eq!(show(&db, &keys[0])["notes"], "front door");
    let csv = write(
        dir.path(),
        "more.csv",
        "key,url\nmine,https://example.com/c\n,https://example.com/d\n",
    );
    let out = qrtag_cmd(&db, &["import", csv.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let (key, url) = text
        .lines()
        .next()
        .and_then(|l| l.split_once('\t'))
        .expect("{text}");
    assert_eq!(url, "https://example.com/d");
    assert!(!keys.contains(&key.to_owned()));
    assert_eq!(show(&db, key)["url"], url);
    assert_eq!(show(&db, "mine")["url"], "https://example.com/c");
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).expect("write input");
    path
}

fn show(db: &Path, key: &str) -> Value {
    let out = qrtag_cmd(db, &["show", key]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut doc: Value = serde_json::from_str(&stdout(&out)).expect("show prints JSON");
    if let Some(fields) = doc.as_object_mut() {
        fields.shift_remove("created_at");
        fields.shift_remove("changed_actor");
        fields.shift_remove("changed_at");
        fields.shift_remove("created_via");
        fields.shift_remove("changed_via");
    }
    doc
}

fn max_seq(db: &Path) -> i64 {
    let conn = rusqlite::Connection::open(db).expect("open database");
    conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM links", [], |r| r.get(0))
        .expect("max seq")
}

/// Documents with everything a person may put in one.
const RICH: &str = concat!(
    r#"{"_id":"docs/api","url":"/documentation/api","inactive":false,"note":"printed on the spring poster","_rev":"7-abc"}"#,
    "\n",
    r#"{"url":"https://example.com/é?q=a%20b#frag","_id":"H83if","inactive":true,"expires":"2030-01-01T00:00:00Z","owner":{"name":"Zoë","tags":["a",1,2.5,null,true],"z":{},"a":[]}}"#,
    "\n",
    r#"{"_id":"n-u_m","url":"http://[::1]:8080/x","count":12345678901234,"ratio":0.1,"tiny":1e-300,"neg":-0.0,"big":1.7976931348623157e308,"esc":"tab\tquote\"slash\\ nl\n \u0001 \ud83d\ude00"}"#,
    "\n",
);

#[test]
fn export_then_import_round_trips_every_document_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = dir.path().join("first.db");
    for args in [
        &["new", "https://example.com/a"][..],
        &["new", "/inner", "--key", "zz/top", "--inactive"],
    ] {
        let out = qrtag_cmd(&first, args);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let rich = write(dir.path(), "rich.jsonl", RICH);
    let out = qrtag_cmd(&first, &["import", rich.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "{} (JSON lines): 3 of 3 links imported, 3 created, 0 updated\n",
            rich.display()
        )
    );
    assert_eq!(stderr(&out), "");

    let exported = export(&first);
    let lines: Vec<&str> = exported.lines().collect();
    assert_eq!(lines.len(), 5, "{exported}");
    let keys: Vec<String> = lines
        .iter()
        .map(|l| {
            assert!(l.starts_with("{\"_id\":"), "_id first: {l}");
            let v: Value = serde_json::from_str(l).expect("each line is JSON");
            v["_id"].as_str().expect("an _id").to_owned()
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "sorted by key");
    // The imported documents come out as they went in: _id first, _rev
    // dropped, every other field in its order with its exact value.
    assert!(lines.contains(&r#"{"_id":"docs/api","url":"/documentation/api","inactive":false,"note":"printed on the spring poster"}"#));
    assert!(lines.contains(&r#"{"_id":"H83if","url":"https://example.com/é?q=a%20b#frag","inactive":true,"expires":"2030-01-01T00:00:00Z","owner":{"name":"Zoë","tags":["a",1,2.5,null,true],"z":{},"a":[]}}"#));
    let n_u_m = lines
        .iter()
        .find(|l| l.starts_with(r#"{"_id":"n-u_m""#))
        .expect("n-u_m exported");
    let input: Value =
        serde_json::from_str(RICH.lines().nth(2).expect("third line")).expect("json");
    let output: Value = serde_json::from_str(n_u_m).expect("json");
    assert_eq!(input, output, "numbers and escapes survive exactly");
    assert!(lines.contains(&r#"{"_id":"zz/top","url":"/inner","inactive":true}"#));

    // Into a fresh database and out again: the same bytes.
    let file = dir.path().join("links.jsonl");
    let out = qrtag_cmd(&first, &["export", "-o", file.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!((stdout(&out), stderr(&out)), (String::new(), String::new()));
    assert_eq!(
        unstamped(&std::fs::read_to_string(&file).expect("export file")),
        exported
    );
    let second = dir.path().join("second.db");
    let out = qrtag_cmd(&second, &["import", file.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(export(&second), exported);
    // And once more, so the export is a fixed point.
    let third = dir.path().join("third.db");
    let again = write(dir.path(), "again.jsonl", &export(&second));
    let out = qrtag_cmd(&third, &["import", again.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(export(&third), exported);
}

#[test]
fn the_pipe_from_one_store_into_another() {
    let dir = tempfile::tempdir().expect("tempdir");
    let from = dir.path().join("from.db");
    let to = dir.path().join("to.db");
    let out = qrtag_with_input(&from, &["import", "-"], RICH.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "stdin (JSON lines): 3 of 3 links imported, 3 created, 0 updated\n"
    );
    let (exported, imported) = pipe_export_into_import(&from, &to, &[]);
    assert!(exported.status.success(), "{}", stderr(&exported));
    assert!(imported.status.success(), "{}", stderr(&imported));
    assert_eq!(export(&to), export(&from));
}

#[test]
fn an_export_to_a_file_replaces_it_only_when_complete() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let out = qrtag_cmd(&db, &["new", "/a", "--key", "a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = write(dir.path(), "links.jsonl", "old content\n");
    let missing_db_dir = dir.path().join("nope").join("links.db");
    let out = qrtag_cmd(
        &missing_db_dir,
        &["export", "-o", file.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&file).expect("file"),
        "old content\n",
        "a failed export leaves the old file"
    );
    let out = qrtag_cmd(&db, &["export", "-o", file.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        unstamped(&std::fs::read_to_string(&file).expect("file")),
        "{\"_id\":\"a\",\"url\":\"/a\",\"inactive\":false}\n"
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| !n.starts_with("links.db"))
        .collect();
    assert_eq!(names, ["links.jsonl"], "no temporary file left");
    let out = qrtag_cmd(&db, &["export", "-o", "-"]);
    assert_eq!(
        unstamped(&stdout(&out)),
        "{\"_id\":\"a\",\"url\":\"/a\",\"inactive\":false}\n"
    );
}

#[tokio::test]
async fn deleted_links_are_not_exported_and_an_import_revives_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    for key in ["keep1", "gone1"] {
        let out = qrtag_cmd(&db, &["new", "https://example.com/", "--key", key]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let store = qrtag::store::sqlite::SqliteStore::open(&db).expect("open");
    store
        .delete(&qrtag::values::link_key::LinkKey::parse("gone1").expect("key"))
        .await
        .expect("delete");
    drop(store);
    assert_eq!(
        export(&db),
        "{\"_id\":\"keep1\",\"url\":\"https://example.com/\",\"inactive\":false}\n"
    );
    let out = qrtag_with_input(
        &db,
        &["import", "-"],
        b"{\"_id\":\"gone1\",\"url\":\"/back\"}\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("1 created"), "{}", stdout(&out));
    assert_eq!(show(&db, "gone1"), json!({"url": "/back"}));
}

#[test]
fn csv_with_a_header() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let csv = write(
        dir.path(),
        "links.csv",
        "\u{feff}Key,URL,Inactive,Expires\r\n\
         abcde,https://example.com/a,,\r\n\
         docs/api, /documentation , TRUE ,2030-01-01T00:00:00Z\r\n\
         \r\n\
         q1,\"https://example.com/?a=1,2\",0,\r\n\
         q2,https://example.com/x,1,\r\n",
    );
    let out = qrtag_cmd(&db, &["import", csv.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "{} (CSV): 4 of 4 links imported, 4 created, 0 updated\n",
            csv.display()
        )
    );
    assert_eq!(
        show(&db, "docs/api"),
        json!({"url": "/documentation", "inactive": true, "expires": "2030-01-01T00:00:00Z"})
    );
    assert_eq!(
        show(&db, "q1"),
        json!({"url": "https://example.com/?a=1,2", "inactive": false})
    );
    let out = qrtag_cmd(&db, &["list"]);
    assert_eq!(
        stdout(&out),
        "abcde\thttps://example.com/a\tactive\n\
         docs/api\t/documentation\tinactive\n\
         q1\thttps://example.com/?a=1,2\tactive\n\
         q2\thttps://example.com/x\tinactive\n"
    );
}

/// A JSON line whose title is one character over the limit (issue 33).
const TITLE_201_JSON: &str = concat!(
    "{\"_id\":\"ok1\",\"url\":\"/a\",\"title\":\"",
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "xxxxx\"}\n"
);

#[test]
fn bad_lines_are_named_and_nothing_is_written() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "bad.jsonl",
            "{\"_id\":\"ok1\",\"url\":\"/a\"}\n{\"_id\":\"ok2\",\"url\":\"/a\"\n",
            &["bad.jsonl:2: not valid JSON: EOF while parsing an object (column 23)"],
        ),
        (
            "bad.jsonl",
            "{\"_id\":\"ok1\",\"url\":\"/a\"}\n\n[\"ok2\"]\n",
            &["bad.jsonl:3: not a JSON object"],
        ),
        (
            "bad.jsonl",
            "{\"_id\":\"ok1\",\"url\":\"/a\"}\n{\"url\":\"/b\"}\n",
            &["bad.jsonl:2: no \"_id\": every line needs the link's key as \"_id\""],
        ),
        (
            "bad.jsonl",
            "{\"_id\":\"ok1\",\"url\":\"/a\"}\n{\"_id\":\"no spaces\",\"url\":\"/b\"}\n",
            &["bad.jsonl:2: bad key: a key is 1 to 64 characters"],
        ),
        (
            "bad.jsonl",
            "{\"_id\":\"ok1\",\"url\":\"javascript:alert(1)\"}\n",
            &[
                "bad.jsonl:1: not a valid link: bad \"url\": not an absolute http(s) URL with a host",
            ],
        ),
        (
            "bad.jsonl",
            "{\"_id\":\"ok1\",\"url\":\"/a\",\"inactive\":\"yes\"}\n",
            &["bad.jsonl:1: not a valid link: \"inactive\" must be true or false"],
        ),
        (
            "bad.jsonl",
            "{\"_id\":\"ok1\",\"url\":\"/a\",\"expires\":\"next week\"}\n",
            &["bad.jsonl:1: not a valid link: \"expires\" must be an RFC 3339 time"],
        ),
        (
            "bad.jsonl",
            "{\"_id\":\"ok1\",\"url\":\"/a\",\"_attachments\":{}}\n",
            &["bad.jsonl:1: the field \"_attachments\" is CouchDB metadata and cannot be imported"],
        ),
        (
            "bad.jsonl",
            "{\"_id\":\"ok1\",\"url\":\"/a\"}\n{\"_id\":\"ok2\",\"url\":\"/b\"}\n{\"_id\":\"ok1\",\"url\":\"/c\"}\n",
            &["bad.jsonl:3: the key ok1 is also on line 1"],
        ),
        (
            "bad.csv",
            "ok1,/a\n",
            &[
                "bad.csv:1: bad CSV header: it must name the column url (optional: key, inactive, expires, notes, created_at, changed_at, deleted_at, fallback_url, title, created_via, changed_via, rules); found \"ok1,/a\"",
            ],
        ),
        (
            "bad.csv",
            "key,url,note\nok1,/a,x\n",
            &["bad.csv:1: bad CSV header: unknown column \"note\""],
        ),
        (
            "bad.csv",
            "key,url\nok1,/a\nok2\n",
            &["bad.csv:3: expected 2 fields, as in the header, found 1"],
        ),
        (
            "bad.csv",
            "key,url,inactive\nok1,/a,no\nok2,/b,maybe\n",
            &[
                "bad.csv:2: \"inactive\" must be true, false, 1, 0 or empty, not \"no\"",
                "bad.csv:3: \"inactive\" must be true, false, 1, 0 or empty, not \"maybe\"",
            ],
        ),
        // Issue 33: a surface is one qrtag knows, by its stored name.
        (
            "bad.jsonl",
            "{\"_id\":\"ok1\",\"url\":\"/a\",\"created_via\":\"rest\"}\n",
            &[
                "bad.jsonl:1: not a valid link: \"created_via\" must be one of cli, edit, console, api, didcomm, import",
            ],
        ),
        // Issue 33: a title is a string of at most 200 characters, and a
        // CSV cell keeps `set --title`'s rule (one line).
        (
            "bad.jsonl",
            "{\"_id\":\"ok1\",\"url\":\"/a\",\"title\":5}\n",
            &["bad.jsonl:1: not a valid link: \"title\" must be a string"],
        ),
        (
            "bad.jsonl",
            TITLE_201_JSON,
            &["bad.jsonl:1: not a valid link: \"title\" may be at most 200 characters"],
        ),
        (
            "bad.csv",
            "key,url,title\nok1,/a,\"two\nlines\"\nok2,/b,fine\n",
            &["bad.csv:2: a title is one line: no line breaks or control characters"],
        ),
    ];
    for (name, content, want) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("links.db");
        let out = qrtag_cmd(&db, &["new", "/before", "--key", "before"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let before = export(&db);
        let seq = max_seq(&db);
        write(dir.path(), name, content);
        // Run where the file is, so messages name it as given.
        let out = qrtag_command(&db, &["import", name])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("run qrtag");
        assert_eq!(out.status.code(), Some(1), "{content:?}: {out:?}");
        let err = stderr(&out);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), want.len() + 1, "{content:?}: {err}");
        for (line, want) in lines.iter().zip(want.iter()) {
            assert!(
                line.starts_with(want),
                "{content:?}:\n{line}\nwanted\n{want}"
            );
        }
        assert_eq!(
            lines.last().copied(),
            Some(
                format!(
                    "qrtag: {} bad lines in {name}; nothing was imported",
                    want.len()
                )
                .as_str()
            )
        );
        assert_eq!(stdout(&out), "");
        assert_eq!(export(&db), before, "{content:?}: nothing written");
        assert_eq!(max_seq(&db), seq, "{content:?}: nothing written");
    }
}

#[test]
fn a_file_of_bad_lines_shows_the_first_twenty_and_counts_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let content: String = (0..50)
        .map(|i| format!("{{\"_id\":\"k{i}\",\"url\":\"ftp://x/\"}}\n"))
        .collect();
    let out = qrtag_with_input(&db, &["import", "-"], content.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 22, "{err}");
    assert!(lines[0].starts_with("stdin:1: not a valid link"), "{err}");
    assert!(lines[19].starts_with("stdin:20: "), "{err}");
    assert_eq!(lines[20], "stdin: ... and 30 more like these");
    assert_eq!(
        lines[21],
        "qrtag: 50 bad lines in stdin; nothing was imported"
    );
    // The helper created the database (`qrtag init`); nothing went into it.
    let list = qrtag_cmd(&db, &["list"]);
    assert!(list.status.success() && list.stdout.is_empty(), "{list:?}");
}

#[test]
fn a_missing_file_is_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let missing = dir.path().join("missing.jsonl");
    let out = qrtag_cmd(&db, &["import", missing.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "qrtag: reading {}: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
    let out = qrtag_cmd(&db, &["import"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
}

#[test]
fn existing_keys_are_refused_and_update_overwrites_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    for (key, url) in [
        ("a", "https://example.com/a"),
        ("b", "https://example.com/b"),
    ] {
        let out = qrtag_cmd(&db, &["new", url, "--key", key]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let before = export(&db);
    let seq = max_seq(&db);
    let input =
        "{\"_id\":\"c\",\"url\":\"/c\"}\n{\"_id\":\"a\",\"url\":\"/new-a\",\"note\":\"n\"}\n";

    let out = qrtag_with_input(&db, &["import", "-"], input.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "stdin:2: the key a already exists (--update overwrites it)\n\
         qrtag: 1 keys of stdin exist already; nothing was imported (--update overwrites them)\n"
    );
    assert_eq!(export(&db), before, "not even the new key c is written");
    assert_eq!(max_seq(&db), seq);

    let out = qrtag_with_input(&db, &["import", "--update", "-"], input.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "stdin (JSON lines): 2 of 2 links imported, 1 created, 1 updated\n"
    );
    // The imported document replaces the old one whole.
    assert_eq!(show(&db, "a"), json!({"url": "/new-a", "note": "n"}));
    assert_eq!(show(&db, "c"), json!({"url": "/c"}));
    let conn = rusqlite::Connection::open(&db).expect("open");
    let (rev, row_seq): (i64, i64) = conn
        .query_row("SELECT rev, seq FROM links WHERE key = 'a'", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("row");
    assert_eq!(rev, 2, "an overwrite is a new revision");
    assert!(row_seq > seq);
    // A single write after the import continues the sequence.
    let out = qrtag_cmd(&db, &["set", "b", "https://example.com/b2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(max_seq(&db), seq + 3);
}

#[test]
fn a_dry_run_checks_everything_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let input = "key,url\nx1,/x1\nx2,/x2\na,/a2\n";

    let out = qrtag_with_input(&db, &["import", "--dry-run", "-"], input.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "dry run: stdin (CSV): 3 links, 3 to create; nothing written\n"
    );
    assert!(!db.exists(), "a dry run creates no database");

    let out = qrtag_cmd(&db, &["new", "/a", "--key", "a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let before = export(&db);
    let seq = max_seq(&db);

    let out = qrtag_with_input(&db, &["import", "--dry-run", "-"], input.as_bytes());
    assert_eq!(out.status.code(), Some(1), "the import would fail");
    assert_eq!(
        stdout(&out),
        "dry run: stdin (CSV): 3 links, 2 to create, 1 refused because they exist (--update overwrites them); nothing written\n"
    );
    assert_eq!(
        stderr(&out),
        "stdin:4: the key a already exists (--update overwrites it)\n\
         qrtag: 1 keys of stdin exist already: an import would write nothing\n"
    );

    let out = qrtag_with_input(
        &db,
        &["import", "--dry-run", "--update", "-"],
        input.as_bytes(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "dry run: stdin (CSV): 3 links, 2 to create, 1 to update; nothing written\n"
    );

    let out = qrtag_with_input(
        &db,
        &["import", "--dry-run", "-"],
        b"key,url\nx1,/x1\nx1,/again\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("stdin:3: the key x1 is also on line 2\n"),
        "{}",
        stderr(&out)
    );
    assert_eq!(export(&db), before);
    assert_eq!(max_seq(&db), seq);
}

#[test]
fn empty_input_imports_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let out = qrtag_with_input(&db, &["import", "-"], b"\n\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "stdin: no links\n");
}

#[test]
fn more_than_one_batch_in_sequence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let out = qrtag_cmd(&db, &["new", "/first", "--key", "first"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let n = 25_000;
    let content: String = (0..n)
        .map(|i| format!("{{\"_id\":\"k{:05}\",\"url\":\"/{i}\"}}\n", (i * 7919) % n))
        .collect();
    let out = qrtag_with_input(&db, &["import", "-"], content.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&format!("{n} of {n} links imported")));
    let conn = rusqlite::Connection::open(&db).expect("open");
    let mut stmt = conn
        .prepare("SELECT seq FROM links ORDER BY seq")
        .expect("query");
    let seqs: Vec<i64> = stmt
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("seqs");
    let want: Vec<i64> = (1..=n + 1).collect();
    assert_eq!(seqs, want, "every write one more, across batches");
    assert_eq!(export(&db).lines().count() as i64, n + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_server_follows_an_import() {
    let app = support::spawn_app().await;
    app.link("H83if", "https://example.com/old").await;
    app.wait_for_status("/H83if", 302).await;
    let db = app.db.clone();
    let input = b"{\"_id\":\"H83if\",\"url\":\"https://example.com/new\"}\n{\"_id\":\"fresh\",\"url\":\"https://example.com/fresh\"}\n";
    let out = tokio::task::spawn_blocking(move || {
        qrtag_with_input(&db, &["import", "--update", "-"], input)
    })
    .await
    .expect("import");
    assert!(out.status.success(), "{}", stderr(&out));
    app.wait_for_status("/fresh", 302).await;
    let resp = app.get("/H83if").await;
    assert_eq!(
        support::header(&resp, "location"),
        Some("https://example.com/new")
    );
}

#[test]
fn documents_import_would_refuse_are_exported_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let out = qrtag_cmd(&db, &["new", "/ok", "--key", "good"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Written behind qrtag's back, as a hand edit of the file could.
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute(
        "INSERT INTO links (key, doc, rev, seq, deleted) VALUES ('broken', '{\"url\":5}', 1, 2, 0)",
        [],
    )
    .expect("insert");
    drop(conn);
    let out = qrtag_cmd(&db, &["export"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        unstamped(&stdout(&out)),
        "{\"_id\":\"broken\",\"url\":5}\n{\"_id\":\"good\",\"url\":\"/ok\",\"inactive\":false}\n",
        "exported as it is"
    );
    assert_eq!(
        stderr(&out),
        "qrtag: warning: exported \"broken\": not a valid link: no \"url\" string\n\
         qrtag: warning: 1 exported documents are not valid links; import refuses them until they are fixed\n"
    );
    let other = dir.path().join("other.db");
    let out = qrtag_with_input(&other, &["import", "-"], &out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("stdin:1: not a valid link: no \"url\" string\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_export_into_a_reader_that_stops_early_ends_quietly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    // Far more than a pipe buffer, so the export is still writing when the
    // reader goes away.
    let content: String = (0..20_000)
        .map(|i| {
            format!("{{\"_id\":\"k{i:05}\",\"url\":\"https://example.com/a/long/path/{i}\"}}\n")
        })
        .collect();
    let out = qrtag_with_input(&db, &["import", "-"], content.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    let mut export = qrtag_command(&db, &["export"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run export");
    let mut first = String::new();
    {
        use std::io::BufRead;
        let stdout = export.stdout.take().expect("stdout");
        std::io::BufReader::new(stdout)
            .read_line(&mut first)
            .expect("one line");
        // Dropping the reader closes the pipe, as `| head -1` would.
    }
    assert!(first.starts_with("{\"_id\":\"k00000\""), "{first}");
    let out = export.wait_with_output().expect("export ends");
    assert!(out.status.success(), "{:?}: {}", out.status, stderr(&out));
    assert_eq!(stderr(&out), "");
}

/// Issue 18: a CSV `notes` column was refused, and problems came in rounds
/// (bad lines first, existing keys only once those were fixed).
#[test]
fn csv_takes_notes_and_one_run_names_every_problem_of_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    for args in [
        &["new", "/a", "--key", "a"][..],
        &["new", "/g", "--key", "gone"],
        &["delete", "--yes", "gone"],
    ] {
        let out = qrtag_cmd(&db, args);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let before = export(&db);
    let input = "key,url,notes,inactive,expires\n\
                 new1,/n,\"bus stop, Main St\",0,2099-01-01T00:00:00Z\n\
                 a,/x,,,\n\
                 bad,ftp://x/,,,\n\
                 gone,/y,,,\n\
                 new1,/z,,,\n";
    let out = qrtag_with_input(&db, &["import", "-"], input.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 5, "{err}");
    assert_eq!(
        lines[0],
        "stdin:3: the key a already exists (--update overwrites it)"
    );
    assert!(
        lines[1].starts_with("stdin:4: not a valid link: bad \"url\""),
        "{err}"
    );
    assert_eq!(
        lines[2],
        format!(
            "stdin:5: key gone was deleted on {day}; a deleted key is never reused, \
             so a printed tag can't lead somewhere else"
        )
    );
    assert_eq!(lines[3], "stdin:6: the key new1 is also on line 2");
    assert_eq!(
        lines[4],
        "qrtag: 2 bad lines, 1 keys that exist already, 1 deleted keys in stdin; \
         nothing was imported (--update overwrites existing keys)"
    );
    assert_eq!(export(&db), before, "nothing written");

    // --update overwrites a live key, never a tombstone.
    let out = qrtag_with_input(
        &db,
        &["import", "--update", "-"],
        b"key,url\na,/x\ngone,/y\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "stdin:3: key gone was deleted on {day}; a deleted key is never reused, \
             so a printed tag can't lead somewhere else\n\
             qrtag: 1 deleted keys in stdin; nothing was imported\n"
        )
    );
    assert_eq!(export(&db), before, "nothing written");

    let input = "key,url,notes,inactive,expires,created_at\n\
                 new1,/n,\" bus stop, Main St \",1,2099-01-01T00:00:00Z,\n\
                 old1,/o,,,,2020-01-01T00:00:00Z\n";
    let out = qrtag_with_input(&db, &["import", "-"], input.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    let new1 = qrtag_cmd(&db, &["show", "new1"]);
    let new1: Value = serde_json::from_slice(&new1.stdout).expect("JSON");
    assert_eq!(new1["notes"], "bus stop, Main St");
    assert_eq!(new1["inactive"], true);
    assert_eq!(new1["expires"], "2099-01-01T00:00:00Z");
    assert!(
        new1["created_at"]
            .as_str()
            .is_some_and(|t| t.starts_with(&day)),
        "{new1}"
    );
    assert_eq!(new1["changed_at"], new1["created_at"]);
    let old1 = qrtag_cmd(&db, &["show", "old1"]);
    let old1: Value = serde_json::from_slice(&old1.stdout).expect("JSON");
    assert_eq!(
        old1["created_at"], "2020-01-01T00:00:00Z",
        "its own time kept"
    );
    assert_eq!(
        old1.get("changed_at"),
        None,
        "a document with its times is as it is"
    );
}

/// Issue 31: `export --help` and the guide say deleted links are left
/// out, yet a `qrtag delete` tombstone was the first line of an export.
/// `--deleted` keeps them, for a backup that keeps deleted keys reserved.
#[test]
fn tombstones_are_left_out_of_an_export_unless_asked_for() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    for args in [
        &["new", "/a", "--key", "a"][..],
        &["new", "/g", "--key", "gone"],
        &["delete", "--yes", "gone"],
    ] {
        let out = qrtag_cmd(&db, args);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(
        export(&db),
        "{\"_id\":\"a\",\"url\":\"/a\",\"inactive\":false}\n"
    );
    let out = qrtag_cmd(&db, &["export", "--deleted"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let keys: Vec<&str> = lines
        .iter()
        .map(|d| d["_id"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(keys, ["a", "gone"]);
    assert!(lines[1]["deleted_at"].is_string(), "{}", lines[1]);
    // Such a backup restores the tombstone: the key stays refused.
    let back = dir.path().join("back.db");
    let out = qrtag_with_input(&back, &["import", "-"], &out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = qrtag_cmd(&back, &["new", "/x", "--key", "gone"]);
    assert!(
        !out.status.success(),
        "a deleted key is not handed out again"
    );
}

/// Output of qrtag on `args`, or `None` when it is still running after ten
/// seconds (it is then killed): for a command that must not read its input.
fn finishes_within_ten_seconds(mut cmd: Command) -> Option<Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run qrtag");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if child.try_wait().expect("wait").is_some() {
            return Some(child.wait_with_output().expect("output"));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Issue 31: an import into a database that is not there read the whole
/// file (3.8 s for a million lines) before saying so. It is said first:
/// the file here is a FIFO nobody writes, which blocks any reader.
#[test]
fn an_import_into_a_missing_database_says_so_before_reading_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("missing.db");
    let fifo = dir.path().join("links.jsonl");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_qrtag"));
    cmd.arg("--db")
        .arg(&db)
        .arg("import")
        .arg(&fifo)
        .env_remove("QRTAG_DB")
        .env_remove("QRTAG_PUBLIC_URL")
        .env_remove("QRTAG_COUCHDB_URL")
        .env("QRTAG_CONFIG", support::NO_CONFIG);
    let out = finishes_within_ten_seconds(cmd).expect("an answer without reading the file");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "qrtag: no database at {} (db from --db); create it with qrtag init, or start qrtag serve\n",
            db.display()
        )
    );
    assert!(!db.exists(), "no database made");
}

/// Issue 31: `import --help` named only inactive and expires as optional
/// CSV columns; the import takes notes and the times too.
#[test]
fn import_help_names_every_optional_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = qrtag_cmd(&dir.path().join("unused.db"), &["import", "--help"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let help = stdout(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let columns = "(optional: key, inactive, expires, notes, created_at, changed_at, deleted_at, fallback_url, title, created_via, changed_via, rules";
    assert_eq!(help.matches(columns).count(), 2, "{help}");
    assert!(!help.contains("inactive, expires)"), "{help}");
}

/// Issue 31: `qrtag export --format csv`, every column the CSV import
/// reads, quoted where a cell needs it, and imported back by `qrtag
/// import` into the same documents; tombstones only with `--deleted`.
#[test]
fn a_csv_export_imports_back_into_the_same_links() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = dir.path().join("first.db");
    for args in [
        &["new", "https://example.com/a?x=1,2", "--key", "table-10"][..],
        &[
            "new",
            "/inner",
            "--key",
            "docs/api",
            "--inactive",
            "--expires",
            "2030-01-01T00:00:00Z",
            "--notes",
            "by the \"main\" door, left\nsecond line",
            // Issue 33: the title column.
            "--title",
            "Main door, \"inner\" 🎟",
        ],
        &["new", "/g", "--key", "gone"],
        &["delete", "--yes", "gone"],
    ] {
        let out = qrtag_cmd(&first, args);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let json_of = |db: &Path, extra: &[&str]| -> Vec<Value> {
        let mut args = vec!["export"];
        args.extend_from_slice(extra);
        let out = qrtag_cmd(db, &args);
        assert!(out.status.success(), "{}", stderr(&out));
        // Issue 35: CSV has no column for who wrote last (a stamp).
        stdout(&out)
            .lines()
            .map(|l| {
                let mut doc: Value = serde_json::from_str(l).expect("a JSON line");
                if let Some(fields) = doc.as_object_mut() {
                    fields.shift_remove("changed_actor");
                }
                doc
            })
            .collect()
    };
    let out = qrtag_cmd(&first, &["export", "--format", "csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    let csv = stdout(&out);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "key,url,inactive,expires,notes,created_at,changed_at,deleted_at,fallback_url,title,created_via,changed_via,rules"
        )
    );
    assert!(
        csv.contains(
            "docs/api,/inner,true,2030-01-01T00:00:00Z,\"by the \"\"main\"\" door, left\nsecond line\","
        ),
        "{csv}"
    );
    assert!(
        csv.contains("\ntable-10,\"https://example.com/a?x=1,2\",false,,,"),
        "{csv}"
    );
    assert!(
        csv.contains(",\"Main door, \"\"inner\"\" 🎟\",cli,cli,\n"),
        "the title, then the surfaces: {csv}"
    );
    assert!(
        !csv.contains("gone"),
        "no tombstone without --deleted: {csv}"
    );

    // Imported into a new database, the same documents, times included.
    let file = write(dir.path(), "links.csv", &csv);
    let second = dir.path().join("second.db");
    let out = qrtag_cmd(&second, &["import", file.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_of(&second, &[]), json_of(&first, &[]));

    // With --deleted the tombstone goes along, and stays one.
    let out = qrtag_cmd(&first, &["export", "--format", "csv", "--deleted"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let with_deleted = write(dir.path(), "all.csv", &stdout(&out));
    assert!(
        stdout(&out).contains("\ngone,/g,true,,,"),
        "{}",
        stdout(&out)
    );
    let third = dir.path().join("third.db");
    let out = qrtag_cmd(&third, &["import", with_deleted.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        json_of(&third, &["--deleted"]),
        json_of(&first, &["--deleted"])
    );
    let out = qrtag_cmd(&third, &["new", "/x", "--key", "gone"]);
    assert!(
        !out.status.success(),
        "a deleted key is not handed out again"
    );

    // A field CSV has no column for is said, not dropped in silence.
    let rich = write(dir.path(), "rich.jsonl", RICH);
    let fourth = dir.path().join("fourth.db");
    let out = qrtag_cmd(&fourth, &["import", rich.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = qrtag_cmd(&fourth, &["export", "--format", "csv", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "qrtag: warning: 3 links have fields CSV has no column for (\"H83if\": owner), left out; --format json keeps every field\n"
    );
}

/// Issue 33: an import keeps the surfaces a document names; a document
/// with no times is stamped as made and changed by an import; one with
/// its own times but no surface is given none (the import did not make
/// those times).
#[test]
fn an_import_keeps_a_documents_surfaces_and_names_itself_only_for_its_own_stamps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let file = write(
        dir.path(),
        "in.jsonl",
        concat!(
            r#"{"_id":"kept","url":"/a","created_at":"2025-01-01T00:00:00Z","changed_at":"2025-02-01T00:00:00Z","created_via":"console","changed_via":"api"}"#,
            "\n",
            r#"{"_id":"fresh","url":"/b"}"#,
            "\n",
            r#"{"_id":"timed","url":"/c","created_at":"2025-01-01T00:00:00Z"}"#,
            "\n",
        ),
    );
    let out = qrtag_cmd(&db, &["import", file.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let raw = |key: &str| -> Value {
        let out = qrtag_cmd(&db, &["show", key]);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str(&stdout(&out)).expect("JSON")
    };
    let via = |doc: &Value| (doc["created_via"].clone(), doc["changed_via"].clone());
    let kept = raw("kept");
    assert_eq!(via(&kept), (json!("console"), json!("api")), "{kept}");
    assert_eq!(kept["changed_at"], "2025-02-01T00:00:00Z");
    let fresh = raw("fresh");
    assert_eq!(via(&fresh), (json!("import"), json!("import")), "{fresh}");
    let timed = raw("timed");
    assert_eq!(via(&timed), (Value::Null, Value::Null), "{timed}");
}

// --- Issue 34: a link's rules ---

/// Links with rules, as JSON lines (one rule's host in capitals).
const WITH_RULES: &str = concat!(
    "{\"_id\":\"menu\",\"url\":\"https://example.com/dinner\",\"inactive\":false,\"rules\":[",
    "{\"url\":\"https://example.com/lunch\",\"days\":[\"mon\",\"tue\",\"wed\",\"thu\",\"fri\"],",
    "\"hours\":[\"11:00\",\"15:00\"],\"tz\":\"Europe/Dublin\"},",
    "{\"url\":\"https://Example.com/b,\\\"c\\\"\",\"split\":[50,100]}]}\n",
    "{\"_id\":\"app\",\"url\":\"https://example.com/\",\"inactive\":false,\"title\":\"App, \\\"store\\\"\",\"rules\":[",
    "{\"url\":\"https://apps.apple.com/app/id1\",\"os\":[\"ios\",\"ipados\"]},",
    "{\"url\":\"https://example.ie/\",\"country\":[\"IE\"]}]}\n",
    "{\"_id\":\"plain\",\"url\":\"/x\",\"inactive\":false}\n",
);

/// Rules go through JSON lines as stored and through CSV as their JSON
/// array in the last column, and come back into the same documents; a
/// country rule is moved whatever this machine has (the server decides).
#[test]
fn rules_round_trip_through_json_lines_and_csv() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = dir.path().join("first.db");
    let file = write(dir.path(), "rules.jsonl", WITH_RULES);
    let out = qrtag_cmd(&first, &["import", file.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = export(&first);
    let docs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let menu = docs.iter().find(|d| d["_id"] == "menu").expect("menu");
    assert_eq!(
        menu["rules"][1],
        json!({"url": "https://example.com/b,\"c\"", "split": [50, 100]}),
        "a host in capitals stored lowered, as url's: {menu}"
    );
    assert_eq!(
        menu["rules"][0]["hours"],
        json!(["11:00", "15:00"]),
        "{menu}"
    );

    // JSON lines: the same documents again, byte for byte.
    let second = dir.path().join("second.db");
    let (exported, imported) = pipe_export_into_import(&first, &second, &[]);
    assert!(exported.status.success(), "{}", stderr(&exported));
    assert!(imported.status.success(), "{}", stderr(&imported));
    assert_eq!(export(&second), text);

    // CSV: the rules column last, the JSON array in it, empty for none.
    let out = qrtag_cmd(&first, &["export", "--format", "csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "no field left out");
    let csv = stdout(&out);
    assert!(
        csv.starts_with(
            "key,url,inactive,expires,notes,created_at,changed_at,deleted_at,fallback_url,title,created_via,changed_via,rules\n"
        ),
        "{csv}"
    );
    assert!(
        csv.contains(",import,import,\"[{\"\"url\"\":\"\"https://apps.apple.com/app/id1\"\",\"\"os\"\":[\"\"ios\"\",\"\"ipados\"\"]},"),
        "{csv}"
    );
    assert!(csv.contains("\nplain,/x,false,"), "{csv}");
    assert!(
        csv.lines()
            .any(|l| l.starts_with("plain,") && l.ends_with(",import,import,")),
        "no rules, an empty cell: {csv}"
    );
    let file = write(dir.path(), "links.csv", &csv);
    let third = dir.path().join("third.db");
    let out = qrtag_cmd(&third, &["import", file.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The same documents (CSV has its own order of fields).
    let parsed = |text: &str| -> Vec<Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    };
    assert_eq!(parsed(&export(&third)), docs);
}

/// A bad rule refuses its line with the reason, as a bad url does, and
/// nothing of the file is written; so does a rule at the line's own short
/// URL.
#[test]
fn an_import_refuses_a_bad_rule_naming_the_line_and_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    let cases: &[(&str, &str, &str)] = &[
        (
            "bad.jsonl",
            concat!(
                "{\"_id\":\"ok1\",\"url\":\"/a\"}\n",
                "{\"_id\":\"ok2\",\"url\":\"/b\",\"rules\":[{\"url\":\"https://example.com/\",\"os\":[\"ios\"]},",
                "{\"url\":\"https://example.com/x\",\"split\":[50,50]}]}\n",
            ),
            "bad.jsonl:2: rules[1].split: must be [lo, hi], whole percentages with 0 <= lo < hi <= 100",
        ),
        (
            "bad.csv",
            "key,url,rules\nok1,/a,\nok2,/b,\"[{\"\"url\"\":\"\"https://example.com/\"\"}]\"\n",
            "bad.csv:3: rules[0]: a rule needs at least one condition",
        ),
        (
            "bad.csv",
            "key,url,rules\nok1,/a,not json\n",
            "bad.csv:2: rules: not valid JSON: ",
        ),
        (
            "bad.jsonl",
            "{\"_id\":\"ok1\",\"url\":\"/a\",\"rules\":[{\"url\":\"https://0x1f.ie/ok1/x\",\"lang\":[\"en\"]}]}\n",
            "bad.jsonl:1: rules[0].url: https://0x1f.ie/ok1/x is the link ok1's own short URL",
        ),
    ];
    for (name, content, said) in cases {
        let file = write(dir.path(), name, content);
        let out = qrtag_cmd(&db, &["import", file.to_str().expect("utf-8")]);
        assert_eq!(out.status.code(), Some(1), "{content}: {}", stdout(&out));
        assert!(
            stderr(&out).lines().any(|l| l.contains(said)),
            "{content}: {}",
            stderr(&out)
        );
        assert_eq!(export(&db), "", "nothing written: {content}");
    }
}

//! `qrtag export` and `qrtag import` against CouchDB: the move from the
//! embedded store, revisions with `--update`, per-document refusals from the
//! validation, and imports of more than one `_bulk_docs` batch.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::harness::{Couch, accounts, qrtag, stderr, stdout, user_env};
use crate::pouchdb::PouchDb;

/// Documents with everything a person may put in one (numbers a JavaScript
/// server keeps exactly: PouchDB is JavaScript).
const RICH: &str = concat!(
    r#"{"_id":"docs/api","url":"/documentation/api","inactive":false,"note":"printed on the spring poster","_rev":"7-abc"}"#,
    "\n",
    r#"{"url":"https://example.com/é?q=a%20b#frag","_id":"H83if","inactive":true,"expires":"2030-01-01T00:00:00Z","owner":{"name":"Zoë","tags":["a",1,2.5,null,true],"z":{},"a":[]}}"#,
    "\n",
    r#"{"_id":"n-u_m","url":"http://[::1]:8080/x","count":12345678901234,"ratio":0.1,"tiny":1e-300,"esc":"tab\tquote\"slash\\ nl\n \u0001 \ud83d\ude00"}"#,
    "\n",
    r#"{"_id":"plain","url":"https://example.com/","inactive":false}"#,
    "\n",
);

/// `qrtag export` on the embedded store through a real pipe into `qrtag
/// import -` on CouchDB: the README's move.
fn move_to_couchdb(db: &Path, couch_url: &str) -> (Output, Output) {
    let bin = env!("CARGO_BIN_EXE_qrtag");
    let mut export = Command::new(bin);
    export
        .env_clear()
        .env("QRTAG_CONFIG", "/dev/null")
        .arg("--db")
        .arg(db)
        .arg("export");
    let mut import = Command::new(bin);
    import.env_clear().env("QRTAG_CONFIG", "/dev/null").args([
        "--couchdb-url",
        couch_url,
        "import",
        "-",
    ]);
    crate::pipe::pipe(export, import)
}

/// `qrtag --db DB ARGS`; a command that adds links gets the database made
/// first with `qrtag init`, as a user does once.
async fn sqlite(db: &Path, args: &[&str]) -> Output {
    let adds = args
        .iter()
        .any(|a| matches!(*a, "new" | "batch" | "import"));
    let db = db.to_str().expect("utf-8 path");
    if adds && !Path::new(db).exists() {
        let out = qrtag(&["--db", db, "init"], &[]).await;
        assert!(out.status.success(), "{out:?}");
    }
    let mut all = vec!["--db", db];
    all.extend_from_slice(args);
    qrtag(&all, &[]).await
}

fn rev_generation(doc: &Value) -> u64 {
    doc["_rev"]
        .as_str()
        .and_then(|r| r.split('-').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_sqlite_to_couchdb_and_back_every_document_is_the_same() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = dir.path().join("first.db");
    let rich = dir.path().join("rich.jsonl");
    std::fs::write(&rich, RICH).expect("write");
    let out = sqlite(&first, &["import", rich.to_str().expect("utf-8")]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // Issue 33: a title of 200 emoji (400 UTF-16 units), the limit, which
    // CouchDB's validation counts as Rust does.
    let title = "🎟".repeat(qrtag::link::MAX_TITLE);
    let out = sqlite(
        &first,
        &[
            "new",
            "/inner",
            "--key",
            "zz/top",
            "--inactive",
            "--title",
            &title,
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = sqlite(&first, &["export"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let from_sqlite = stdout(&out);

    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let env = [("QRTAG_COUCHDB_URL", url.as_str())];
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));

    let (export, import) = tokio::task::spawn_blocking({
        let first = first.clone();
        let url = url.clone();
        move || move_to_couchdb(&first, &url)
    })
    .await
    .expect("pipe");
    assert!(export.status.success(), "{}", stderr(&export));
    assert!(import.status.success(), "{}", stderr(&import));
    assert_eq!(
        stdout(&import),
        "stdin (JSON lines): 5 of 5 links imported, 5 created, 0 updated\n"
    );

    // CouchDB holds them as documents people and the service can read.
    let couch = Couch::new(&url, "links");
    let doc = couch.get("docs/api").await.expect("imported");
    assert_eq!(doc["note"], "printed on the spring poster");
    assert_eq!(
        rev_generation(&doc),
        1,
        "a new document, not the file's _rev"
    );

    let out = qrtag(&["export"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    let from_couch = stdout(&out);
    assert_eq!(
        from_couch, from_sqlite,
        "the same documents, fields, order and bytes; no _rev, no design document"
    );
    let out = qrtag(&["export", "--format", "csv"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\nzz/top,/inner,true,,,")
            && stdout(&out).contains(&format!(",{title},cli,cli,\n")),
        "the title column, then the surfaces (issue 33): {}",
        stdout(&out)
    );

    // And back into a fresh embedded store.
    let back = dir.path().join("back.db");
    let file = dir.path().join("from-couch.jsonl");
    let out = qrtag(&["export", "-o", file.to_str().expect("utf-8")], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = sqlite(&back, &["import", file.to_str().expect("utf-8")]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = sqlite(&back, &["export"]).await;
    assert_eq!(stdout(&out), from_sqlite);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_overwrites_at_the_current_revision_and_refusals_are_per_document() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    accounts(&url).await;
    let as_user = |user: &'static str, password: &'static str| user_env(&url, user, password);
    let run = |args: Vec<String>, env: [(&'static str, String); 3]| async move {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        qrtag(&args, &env).await
    };
    let out = run(vec!["setup".into()], as_user("boss", "boss-pw-1")).await;
    assert!(out.status.success(), "{}", stderr(&out));

    let dir = tempfile::tempdir().expect("tempdir");
    let file = |name: &str, content: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, content).expect("write");
        path.to_str().expect("utf-8").to_owned()
    };
    let first = file(
        "first.csv",
        "key,url,inactive\nH83if,https://a.example/one,false\ndocs/api,/api,true\n",
    );
    let out = run(vec!["import".into(), first], as_user("ed", "ed-pw-1")).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let editor = Couch::new(&url, "links").with_user("ed", "ed-pw-1");
    let before = editor.get("H83if").await.expect("imported");
    assert_eq!(rev_generation(&before), 1);

    // Existing keys: refused, and nothing written, not even the new one.
    let second = file(
        "second.jsonl",
        "{\"_id\":\"new01\",\"url\":\"https://a.example/new\"}\n\
         {\"_id\":\"H83if\",\"url\":\"https://a.example/two\",\"note\":\"moved\"}\n\
         {\"_id\":\"docs/api\",\"url\":\"/api/v2\"}\n",
    );
    let out = run(
        vec!["import".into(), second.clone()],
        as_user("ed", "ed-pw-1"),
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "{second}:2: the key H83if already exists (--update overwrites it)\n\
             {second}:3: the key docs/api already exists (--update overwrites it)\n\
             qrtag: 2 keys of {second} exist already; nothing was imported (--update overwrites them)\n"
        )
    );
    assert!(editor.get("new01").await.is_none());
    assert_eq!(editor.get("H83if").await, Some(before.clone()));

    let out = run(
        vec![
            "import".into(),
            "--dry-run".into(),
            "--update".into(),
            second.clone(),
        ],
        as_user("rd", "rd-pw-1"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "dry run: {second} (JSON lines): 3 links, 1 to create, 2 to update; nothing written\n"
        )
    );

    // A reader may look but not write: CouchDB's validation refuses each
    // document, and each refusal is reported on its line.
    let out = run(
        vec!["import".into(), "--update".into(), second.clone()],
        as_user("rd", "rd-pw-1"),
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    for (line, key) in [(1, "new01"), (2, "H83if"), (3, "docs/api")] {
        assert!(
            err.contains(&format!(
                "{second}:{line}: {key} was not written: forbidden: only admins and the qrtag_editor and qrtag_admin roles may change links\n"
            )),
            "{err}"
        );
    }
    assert!(
        err.ends_with(&format!(
            "qrtag: 3 links of {second} were not written (see above)\n"
        )),
        "{err}"
    );
    assert_eq!(
        stdout(&out),
        format!("{second} (JSON lines): 0 of 3 links imported, 0 created, 0 updated\n")
    );
    assert!(!err.contains("rd-pw-1"), "{err}");
    assert_eq!(editor.get("H83if").await, Some(before.clone()));

    // An editor overwrites at the current revision.
    let out = run(
        vec!["import".into(), "--update".into(), second.clone()],
        as_user("ed", "ed-pw-1"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{second} (JSON lines): 3 of 3 links imported, 1 created, 2 updated\n")
    );
    let after = editor.get("H83if").await.expect("present");
    assert_eq!(rev_generation(&after), 2);
    assert_eq!(after["url"], "https://a.example/two");
    assert_eq!(after["note"], "moved");
    assert!(
        after.get("inactive").is_none(),
        "the document is replaced whole"
    );
    assert_eq!(
        rev_generation(&editor.get("new01").await.expect("created")),
        1
    );

    // A deleted document is created again, its revisions continuing.
    editor.delete("docs/api").await;
    let third = file(
        "third.jsonl",
        "{\"_id\":\"docs/api\",\"url\":\"/api/v3\"}\n",
    );
    let out = run(vec!["import".into(), third], as_user("ed", "ed-pw-1")).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("1 created"), "{}", stdout(&out));
    let revived = editor.get("docs/api").await.expect("created again");
    assert_eq!(revived["url"], "/api/v3");
    assert_eq!(
        rev_generation(&revived),
        4,
        "created, updated, deleted, created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_than_one_batch_each_way() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let env = [("QRTAG_COUCHDB_URL", url.as_str())];
    Couch::new(&url, "links").create_db().await;
    let n = 2500;
    let content: String = (0..n)
        // With their own created_at, the documents are written as they are.
        .map(|i| format!("{{\"_id\":\"k{i:04}\",\"url\":\"https://a.example/{i}\",\"n\":{i},\"created_at\":\"2026-01-01T00:00:00Z\"}}\n"))
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("many.jsonl");
    std::fs::write(&path, &content).expect("write");
    let path = path.to_str().expect("utf-8");

    let out = qrtag(&["import", path], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{path} (JSON lines): {n} of {n} links imported, {n} created, 0 updated\n")
    );
    let out = qrtag(&["export"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), content, "sorted, whole, as imported");

    let out = qrtag(&["import", "--update", path], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{path} (JSON lines): {n} of {n} links imported, 0 created, {n} updated\n")
    );
    let couch = Couch::new(&url, "links");
    for key in ["k0000", "k1000", "k2499"] {
        assert_eq!(rev_generation(&couch.get(key).await.expect("present")), 2);
    }
    let out = qrtag(&["import", path], &env).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).ends_with(&format!(
            "{path}: ... and {} more like these\nqrtag: {n} keys of {path} exist already; nothing was imported (--update overwrites them)\n",
            n - 20
        )),
        "{}",
        stderr(&out)
    );
}

/// A file much smaller than the database: which keys exist is asked by key
/// (a listing of every ID would read 2,500 rows for 12 keys), and the
/// lines named, tombstones told apart, are the same as from a listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_file_into_a_large_database_names_the_lines_that_exist() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let env = [("QRTAG_COUCHDB_URL", url.as_str())];
    Couch::new(&url, "links").create_db().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |name: &str, content: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, content).expect("write");
        path.to_str().expect("utf-8").to_owned()
    };
    let n = 2500;
    let many: String = (0..n)
        .map(|i| {
            let deleted = if i == 100 {
                r#","deleted_at":"2026-01-02T00:00:00Z","inactive":true"#
            } else {
                ""
            };
            format!(
                "{{\"_id\":\"k{i:04}\",\"url\":\"https://a.example/{i}\",\"created_at\":\"2026-01-01T00:00:00Z\"{deleted}}}\n"
            )
        })
        .collect();
    let many = file("many.jsonl", &many);
    let out = qrtag(&["import", &many], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));

    let existing = [3, 5, 7, 12];
    let small: String = (1..=12)
        .map(|line| {
            let key = match line {
                3 => "k0003".to_owned(),
                5 => "k0100".to_owned(),
                7 => "k1500".to_owned(),
                12 => "k2499".to_owned(),
                _ => format!("new{line:02}"),
            };
            format!("{{\"_id\":\"{key}\",\"url\":\"https://b.example/{line}\"}}\n")
        })
        .collect();
    let small = file("small.jsonl", &small);
    let deleted = format!(
        "{small}:5: key k0100 was deleted on 2026-01-02; a deleted key is never reused, so a printed tag can't lead somewhere else\n"
    );

    let out = qrtag(&["import", &small], &env).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), existing.len() + 1, "{err}");
    assert_eq!(
        lines[..3],
        [
            format!("{small}:3: the key k0003 already exists (--update overwrites it)"),
            deleted.trim_end().to_owned(),
            format!("{small}:7: the key k1500 already exists (--update overwrites it)"),
        ]
    );
    assert_eq!(
        lines[3],
        format!("{small}:12: the key k2499 already exists (--update overwrites it)")
    );
    assert!(lines[4].contains("nothing was imported"), "{err}");

    // With --update only the tombstone is refused, and still nothing is
    // written.
    let out = qrtag(&["import", "--update", &small], &env).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).starts_with(&deleted), "{}", stderr(&out));
    let couch = Couch::new(&url, "links");
    assert!(couch.get("new01").await.is_none(), "nothing written");
    assert_eq!(
        couch.get("k0003").await.expect("kept")["url"],
        "https://a.example/3"
    );
}

/// `import --new-database` (issue 24): only a server admin, only into a
/// database that is not there, every line checked before the database is
/// made; then the links are written and the database is set up as `qrtag
/// setup` sets one up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_database_is_created_filled_then_set_up() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let admin = accounts(&url).await;
    let as_user = |user: &str, password: &str| user_env(&url, user, password);
    let run = |args: Vec<String>, env: [(&'static str, String); 3]| async move {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        qrtag(&args, &env).await
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |name: &str, content: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, content).expect("write");
        path.to_str().expect("utf-8").to_owned()
    };
    // More than two of CouchDB's batches.
    let n = 600;
    let links = file(
        "links.csv",
        &(0..n).fold("key,url\n".to_owned(), |mut csv, i| {
            csv.push_str(&format!("k{i:04},https://a.example/{i}\n"));
            csv
        }),
    );
    let import_new = |path: &str| {
        vec![
            "import".to_owned(),
            "--new-database".to_owned(),
            path.to_owned(),
        ]
    };
    let exists = |db: &str| {
        let admin = Couch::new(&url, db).with_user("boss", "boss-pw-1");
        async move { admin.call(reqwest::Method::GET, &admin.db, None).await.0 == 200 }
    };

    // An editor may not create a database: said before the file is read.
    let out = run(import_new(&links), as_user("ed", "ed-pw-1")).await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "qrtag: --new-database creates a database, which needs a CouchDB server admin account (--couchdb-user): ed is not one on {url}\n"
        )
    );
    assert!(!exists("links").await);

    // A bad line: reported by line, and no database made. The check is
    // CouchDB's validation's, since none runs while the links are written:
    // a DIDComm field that is not text passes neither.
    let bad = file(
        "bad.jsonl",
        "{\"_id\":\"fine1\",\"url\":\"https://a.example/\"}\n\
         {\"_id\":\"fine2\",\"url\":\"https://a.example/\",\"goal_code\":5}\n",
    );
    let out = run(import_new(&bad), as_user("boss", "boss-pw-1")).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with(&format!("{bad}:2: "))
            && stderr(&out).contains("\"goal_code\" must be a string"),
        "{}",
        stderr(&out)
    );
    assert!(!exists("links").await, "nothing created for a bad file");

    // A dry run says what would be made, and makes nothing.
    let mut dry = import_new(&links);
    dry.insert(1, "--dry-run".into());
    let out = run(dry, as_user("boss", "boss-pw-1")).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("dry run: {links} (CSV): {n} links, {n} to create; nothing written\n")
    );
    assert!(!exists("links").await, "a dry run creates nothing");

    // While it is written the database admits server admins only (through
    // the library: the import holds it so for moments).
    let settings = qrtag::store::options::CouchSettings::new(
        qrtag::values::couch::CouchUrl::parse(&url).expect("URL"),
        qrtag::values::couch::CouchDbName::parse("locked").expect("name"),
    )
    .with_credentials(
        "boss",
        Some(qrtag::values::secret::Secret::new("boss-pw-1")),
    );
    let locked = qrtag::store::couch::setup::NewDatabase::create(&settings, Default::default())
        .await
        .expect("created")
        .expect("not there before");
    Couch::new(&url, "locked")
        .with_user("boss", "boss-pw-1")
        .put("early", serde_json::json!({"url": "https://a.example/"}))
        .await;
    let (status, body) = Couch::new(&url, "locked")
        .with_user("ed", "ed-pw-1")
        .call(reqwest::Method::GET, "locked/early", None)
        .await;
    assert!(
        matches!(status, 401 | 403),
        "an editor read a locked database: {status} {body}"
    );
    locked.remove().await.expect("removed");
    assert!(!exists("locked").await);

    let out = run(import_new(&links), as_user("boss", "boss-pw-1")).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.starts_with(&format!(
            "{links} (CSV): {n} of {n} links imported, {n} created, 0 updated\n\
             database links: created\n"
        )),
        "{said}"
    );
    for part in [
        "_design/qrtag (validation, links view): created\n",
        "_security (members: roles qrtag_reader, qrtag_editor, qrtag_viewer, qrtag_admin): updated\n",
        "database links-keys (API keys): created\n",
    ] {
        assert!(said.contains(part), "{part} missing: {said}");
    }

    // Set up as `qrtag setup` does it: the same _security, the validation,
    // the keys database; a second setup finds nothing to do.
    let security = admin.get("_security").await.expect("_security");
    assert_eq!(
        security,
        serde_json::json!({
            "admins": {"names": [], "roles": []},
            "members": {"names": [], "roles": ["qrtag_reader", "qrtag_editor", "qrtag_viewer", "qrtag_admin"]}
        })
    );
    let out = run(vec!["setup".into()], as_user("boss", "boss-pw-1")).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("database links: unchanged\n")
            && stdout(&out).contains("_design/qrtag (validation, links view): unchanged\n")
            && stdout(&out)
                .contains("_security (members: roles qrtag_reader, qrtag_editor, qrtag_viewer, qrtag_admin): unchanged\n"),
        "{}",
        stdout(&out)
    );
    let editor = Couch::new(&url, "links").with_user("ed", "ed-pw-1");
    let doc = editor.get("k0599").await.expect("imported");
    assert_eq!(doc["url"], "https://a.example/599");
    assert!(
        doc["created_at"].is_string(),
        "stamped as any import: {doc}"
    );
    let (status, body) = editor
        .try_put("k0000", serde_json::json!({"url": "javascript:alert(1)"}))
        .await;
    assert!(
        matches!(status, 400 | 403),
        "the validation is on: {status} {body}"
    );

    // The database is there now: one line, exit 2, nothing written.
    let more = file("more.csv", "key,url\nnew01,https://a.example/new\n");
    let out = run(import_new(&more), as_user("boss", "boss-pw-1")).await;
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "qrtag: database links exists on {url}; --new-database imports only into a database it creates (without it the import adds to this one)\n"
        )
    );
    assert!(editor.get("new01").await.is_none(), "nothing written");

    // Only CouchDB: the embedded store has no database to create.
    let sqlite_db = dir.path().join("links.db");
    let out = qrtag(
        &[
            "--db",
            sqlite_db.to_str().expect("utf-8"),
            "import",
            "--new-database",
            &links,
        ],
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        "qrtag: --new-database creates a CouchDB database: give --couchdb-url\n"
    );
    assert!(!sqlite_db.exists());

    // --replicas and --shards only with --new-database.
    let out = run(
        vec!["import".into(), "--shards".into(), "2".into(), more],
        as_user("boss", "boss-pw-1"),
    )
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        "qrtag: --replicas and --shards apply to the database --new-database creates\n"
    );
}

/// An interrupt while `import --new-database` writes deletes the database
/// it made: it is never left half-filled and locked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_new_database_import_deletes_the_database() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("many.csv");
    let csv = (0..20_000).fold("key,url\n".to_owned(), |mut csv, i| {
        csv.push_str(&format!("k{i:05},https://a.example/{i}\n"));
        csv
    });
    std::fs::write(&path, csv).expect("write");
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_qrtag"))
        .env_clear()
        .env("QRTAG_CONFIG", "/dev/null")
        .env("QRTAG_COUCHDB_URL", &url)
        .args(["import", "--new-database"])
        .arg(&path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("qrtag runs");
    let pid = child.id().expect("running");
    let couch = Couch::new(&url, "links");
    crate::harness::eventually(
        std::time::Duration::from_secs(30),
        "the database made",
        || async {
            let (_, info) = couch.call(reqwest::Method::GET, "links", None).await;
            info["doc_count"].as_u64().filter(|n| *n > 0).map(|_| ())
        },
    )
    .await;
    let sent = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let out = child.wait_with_output().await.expect("qrtag ends");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        "qrtag: database links deleted again; nothing was imported: interrupted\n"
    );
    let (status, _) = couch.call(reqwest::Method::GET, "links", None).await;
    assert_eq!(status, 404, "the interrupted import's database is gone");
}

/// Issue 31: the documented export leaves deleted links out; on CouchDB a
/// `qrtag delete` tombstone was exported all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tombstones_are_left_out_of_an_export_unless_asked_for() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let env = [("QRTAG_COUCHDB_URL", url.as_str())];
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    for args in [
        &["new", "/a", "--key", "a"][..],
        &["new", "/g", "--key", "gone"],
        &["delete", "--yes", "gone"],
    ] {
        let out = qrtag(args, &env).await;
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    let keys = |out: &Output| -> Vec<String> {
        stdout(out)
            .lines()
            .map(|l| {
                let doc: Value = serde_json::from_str(l).expect("a JSON line");
                doc["_id"].as_str().unwrap_or("").to_owned()
            })
            .collect()
    };
    let out = qrtag(&["export"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(keys(&out), ["a"], "{}", stdout(&out));
    let out = qrtag(&["export", "--deleted"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(keys(&out), ["a", "gone"], "{}", stdout(&out));
    assert!(stdout(&out).contains("\"deleted_at\":"), "{}", stdout(&out));
}

/// Issue 31: an import into a CouchDB database that is not there read the
/// whole file before saying so. It is said first: the file here is a FIFO
/// nobody writes, which blocks any reader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_into_a_missing_database_says_so_before_reading_the_file() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("links.jsonl");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_qrtag"))
        .env_clear()
        .env("QRTAG_CONFIG", "/dev/null")
        .env("QRTAG_COUCHDB_URL", &url)
        .arg("import")
        .arg(&fifo)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(10), run)
        .await
        .expect("an answer without reading the file")
        .expect("qrtag runs");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "qrtag: the database links does not exist on {url}; create it with `qrtag setup`, \
             or import into a new one with --new-database\n"
        )
    );
}

/// Issue 31: an `import --new-database` that failed once the keys
/// database was made (here CouchDB refuses its design document) deleted
/// the links database and left `links-keys` behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_new_database_import_deletes_its_keys_database_too() {
    let pouch = PouchDb::start().await;
    let proxy = crate::proxy::RefusingProxy::start(
        pouch.url().replace("http://", ""),
        "PUT /links-keys/_design/",
    )
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("links.csv");
    std::fs::write(&path, "key,url\na,https://a.example/\n").expect("write");
    let out = qrtag(
        &["import", "--new-database", path.to_str().expect("utf-8")],
        &[("QRTAG_COUCHDB_URL", proxy.url().as_str())],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).starts_with("qrtag: database links deleted again; nothing was imported"),
        "{}",
        stderr(&out)
    );
    let couch = Couch::new(&pouch.url(), "links");
    for db in ["links", "links-keys"] {
        let (status, body) = couch.call(reqwest::Method::GET, db, None).await;
        assert_eq!(status, 404, "{db} is left behind: {body}");
    }

    // A keys database that was there before (its links database deleted
    // by hand) is not the import's to delete.
    let (status, body) = couch.call(reqwest::Method::PUT, "links-keys", None).await;
    assert_eq!(status, 201, "{body}");
    let out = qrtag(
        &["import", "--new-database", path.to_str().expect("utf-8")],
        &[("QRTAG_COUCHDB_URL", proxy.url().as_str())],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let (status, body) = couch.call(reqwest::Method::GET, "links-keys", None).await;
    assert_eq!(
        status, 200,
        "a keys database it did not make was deleted: {body}"
    );
}

/// Issue 31: the first `serve` after `import --new-database` read every
/// document again (the `links` view not built yet). The import leaves the
/// links in the snapshot file `serve` reads, under a marker the new
/// database holds: the first start serves from it (said on its log, no
/// full load), its first answer for an imported key is a 302, and it
/// follows the database from there. `url` is a CouchDB server whose admin
/// is `admin`.
pub(crate) async fn first_serve_after_a_new_database_import(url: &str, admin: (&str, &str)) {
    use crate::process::ServerProcess;
    let dir = tempfile::tempdir().expect("tempdir");
    let n = 1500;
    let links = dir.path().join("links.csv");
    let csv = (0..n).fold("key,url\n".to_owned(), |mut csv, i| {
        csv.push_str(&format!("k{i:04},https://a.example/{i}\n"));
        csv
    });
    std::fs::write(&links, csv).expect("write");
    let snapshot = dir.path().join("node").join("links.snapshot");
    std::fs::create_dir(dir.path().join("node")).expect("mkdir");
    let snapshot = snapshot.to_str().expect("utf-8");
    let env = user_env(url, admin.0, admin.1);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("QRTAG_SNAPSHOT_FILE", snapshot));
    let out = qrtag(
        &["import", "--new-database", links.to_str().expect("utf-8")],
        &env,
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).ends_with(&format!(
            "snapshot file {snapshot}: {n} links; `qrtag serve` with these settings starts from it\n"
        )),
        "{}",
        stdout(&out)
    );

    // The service reads with the same configuration: the same file.
    env.push(("QRTAG_LOG", "info"));
    let secret = dir.path().join("node").join("tracking-secret");
    let server = ServerProcess::spawn(
        &dir.path().join("node").join("unused.db"),
        &[
            "--public-url",
            crate::harness::PUBLIC_URL,
            "--tracking-secret-file",
            secret.to_str().expect("utf-8"),
        ],
        &env,
        false,
    )
    .await;
    let app = crate::harness::TestApp::at(server.public, server.admin);
    assert_eq!(app.status("k0777").await, 302, "the first answer");
    assert_eq!(
        app.location("k1499").await.as_deref(),
        Some("https://a.example/1499")
    );
    let log = server.stderr();
    assert!(
        log.contains("serving links from the snapshot file") && log.contains("links=1500"),
        "{log}"
    );
    // Followed from the file's sequence: a new link is served, and the
    // marker was found (nothing loaded again).
    let couch = Couch::new(url, "links").with_user(admin.0, admin.1);
    couch
        .put(
            "after",
            serde_json::json!({"url": "https://a.example/after"}),
        )
        .await;
    app.wait_location(
        "after",
        Some("https://a.example/after"),
        std::time::Duration::from_secs(10),
    )
    .await;
    let log = server.stderr();
    assert!(
        !log.contains("links loaded from CouchDB") && !log.contains("reloading every link"),
        "{log}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_serve_after_a_new_database_import_starts_from_its_snapshot_file() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    accounts(&url).await;
    first_serve_after_a_new_database_import(&url, ("boss", "boss-pw-1")).await;
}

/// Issue 31: an import into a live database wrote in file order, CouchDB's
/// cost a document about four times that in key order. The documents of a
/// file in reverse key order reach `_bulk_docs` sorted by key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_into_a_live_database_writes_in_key_order() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    Couch::new(&url, "links").create_db().await;
    let proxy = crate::proxy::RecordingProxy::start(url.replace("http://", "")).await;
    let proxied = proxy.url();
    // One batch (250 a request): one request's bytes, never interleaved
    // with another's.
    let n = 200;
    let content: String = (0..n)
        .rev()
        .map(|i| format!("k{i:04},https://a.example/{i}\n"))
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("reversed.csv");
    std::fs::write(&path, format!("key,url\n{content}")).expect("write");
    let path = path.to_str().expect("utf-8");
    let out = qrtag(&["import", path], &[("QRTAG_COUCHDB_URL", &proxied)]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = proxy.sent();
    let body = sent
        .split_once("POST /links/_bulk_docs")
        .expect("a _bulk_docs request")
        .1;
    let ids: Vec<&str> = body
        .split("\"_id\":\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(id, _)| id))
        .collect();
    let sorted: Vec<String> = (0..n).map(|i| format!("k{i:04}")).collect();
    assert_eq!(ids, sorted, "the documents in key order");
}

/// Issue 33: a link's fallback moves to CouchDB and back with the link
/// (JSON lines both ways, CSV back), and CouchDB's validation refuses a
/// fallback that is not a string or not an absolute http(s) URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_moves_to_couchdb_and_back_and_the_validation_holds_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = dir.path().join("first.db");
    for args in [
        [
            "new",
            "https://event.example/",
            "--key",
            "gig",
            "--fallback",
            "https://venue.example/home",
        ],
        [
            "new",
            "https://event.example/",
            "--key",
            "plain",
            "--notes",
            "none",
        ],
    ] {
        let out = sqlite(&first, &args).await;
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = sqlite(&first, &["export"]).await;
    let from_sqlite = stdout(&out);

    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let env = [("QRTAG_COUCHDB_URL", url.as_str())];
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (export, import) = tokio::task::spawn_blocking({
        let (first, url) = (first.clone(), url.clone());
        move || move_to_couchdb(&first, &url)
    })
    .await
    .expect("pipe");
    assert!(export.status.success(), "{}", stderr(&export));
    assert!(import.status.success(), "{}", stderr(&import));
    let couch = Couch::new(&url, "links");
    let gig = couch.get("gig").await.expect("imported");
    assert_eq!(gig["fallback_url"], "https://venue.example/home");
    let out = qrtag(&["export"], &env).await;
    assert_eq!(stdout(&out), from_sqlite, "the same documents back");

    let csv = dir.path().join("from-couch.csv");
    let csv = csv.to_str().expect("utf-8");
    let out = qrtag(&["export", "--format", "csv", "-o", csv], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let back = dir.path().join("back.db");
    let out = sqlite(&back, &["import", csv]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = sqlite(&back, &["show", "gig"]).await;
    let shown: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(shown["fallback_url"], "https://venue.example/home");

    // Written straight to CouchDB, past qrtag's own checks.
    for (id, doc) in [
        (
            "bad1",
            serde_json::json!({"url": "https://a.example/", "fallback_url": 5}),
        ),
        (
            "bad2",
            serde_json::json!({"url": "https://a.example/", "fallback_url": "/gig"}),
        ),
        (
            "bad3",
            serde_json::json!({"url": "https://a.example/", "fallback_url": ["https://b.example/"]}),
        ),
        (
            "bad4",
            serde_json::json!({"url": "https://a.example/", "fallback_url": "https://u:p@b.example/"}),
        ),
    ] {
        let (status, body) = couch.try_put(id, doc).await;
        assert_eq!(status, 403, "{id} accepted: {body}");
        assert!(
            body["reason"]
                .as_str()
                .is_some_and(|r| r.contains("fallback_url")),
            "{id}: {body}"
        );
    }
    for (id, fallback) in [
        ("good1", Value::Null),
        ("good2", "https://b.example/x".into()),
    ] {
        let doc = serde_json::json!({"url": "https://a.example/", "fallback_url": fallback});
        let (status, body) = couch.try_put(id, doc).await;
        assert_eq!(status, 201, "{id}: {body}");
    }
}

// --- Issue 34: a link's rules ---

/// Links with rules, one destination's host in capitals, and a country rule.
const WITH_RULES: &str = concat!(
    r#"{"_id":"menu","url":"https://example.com/dinner","inactive":false,"rules":[{"url":"https://example.com/lunch","days":["mon","fri"],"hours":["11:00","15:00"],"tz":"Europe/Dublin"},{"url":"https://Example.com/B","split":[50,100]}]}"#,
    "\n",
    r#"{"_id":"app","url":"https://example.com/","inactive":false,"rules":[{"url":"https://apps.apple.com/app/id1","os":["ios","ipados"]},{"url":"https://example.ie/","country":["IE"],"lang":["ga"]}]}"#,
    "\n",
    r#"{"_id":"plain","url":"/x","inactive":false}"#,
    "\n",
);

/// Rules imported straight into CouchDB (through its validation, a host in
/// capitals lowered first), exported as they are stored, and back into the
/// embedded store the same; the CSV's `rules` column takes them there too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_round_trip_between_couchdb_and_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("rules.jsonl");
    std::fs::write(&file, WITH_RULES).expect("write");
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let env = [("QRTAG_COUCHDB_URL", url.as_str())];
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = qrtag(&["import", file.to_str().expect("utf-8")], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));

    let couch = Couch::new(&url, "links");
    let menu = couch.get("menu").await.expect("imported");
    assert_eq!(
        menu["rules"][1],
        serde_json::json!({"url": "https://example.com/B", "split": [50, 100]}),
        "{menu}"
    );
    let out = qrtag(&["export"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "every document importable");
    let from_couch = stdout(&out);
    assert!(from_couch.contains(r#""country":["IE"]"#), "{from_couch}");

    let back = dir.path().join("back.db");
    let exported = dir.path().join("from-couch.jsonl");
    std::fs::write(&exported, &from_couch).expect("write");
    let out = sqlite(&back, &["import", exported.to_str().expect("utf-8")]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = sqlite(&back, &["export"]).await;
    assert_eq!(stdout(&out), from_couch, "byte for byte");

    let out = qrtag(&["export", "--format", "csv"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = stdout(&out);
    assert!(
        csv.lines().next().is_some_and(|h| h.ends_with(",rules")),
        "{csv}"
    );
    let csv_file = dir.path().join("from-couch.csv");
    std::fs::write(&csv_file, &csv).expect("write");
    let third = dir.path().join("third.db");
    let out = sqlite(&third, &["import", csv_file.to_str().expect("utf-8")]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // Issue 35: CSV has no column for who wrote last (`changed_actor`, a
    // stamp), so the documents are compared without it.
    let parsed = |text: String| -> Vec<Value> {
        text.lines()
            .map(|l| {
                let mut doc: Value = serde_json::from_str(l).expect("a JSON line");
                if let Some(fields) = doc.as_object_mut() {
                    fields.shift_remove("changed_actor");
                }
                doc
            })
            .collect()
    };
    let out = sqlite(&third, &["export"]).await;
    assert_eq!(parsed(stdout(&out)), parsed(from_couch));
}

//! Starting and restarting: nothing a scanner sees may say "no such tag"
//! while links load, and a restart serves at once from the snapshot file,
//! never from a file it should not believe.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use qrtag::startup::Application;
use qrtag::store::options::{CouchSettings, StoreSettings};
use qrtag::values::couch::{CouchDbName, CouchUrl};
use support::process::ServerProcess;
use support::{header, poll, qrtag_cmd, test_settings};

const WITHIN: Duration = Duration::from_secs(10);

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

fn snapshot_of(db: &Path) -> PathBuf {
    qrtag::settings::default_snapshot_file(db)
}

fn cli_ok(db: &Path, args: &[&str]) {
    let out = qrtag_cmd(db, args);
    assert!(
        out.status.success(),
        "qrtag {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Waits until `path` answers `status` (and, for a redirect, `location`).
async fn wait_for(srv: &ServerProcess, path: &str, status: u16, location: Option<&str>) {
    let c = client();
    poll::until(WITHIN, &format!("{path} to answer {status}"), || async {
        let r = c.get(srv.url(path)).send().await.ok()?;
        (r.status().as_u16() == status && header(&r, "location") == location).then_some(())
    })
    .await
}

/// A backup of the database as `VACUUM INTO` makes one.
fn back_up(db: &Path, backup: &Path) {
    let conn = rusqlite::Connection::open(db).expect("open");
    conn.execute("VACUUM INTO ?1", [backup.to_str().expect("UTF-8")])
        .expect("backup");
}

/// The backup put back under the database's name, its WAL gone.
fn restore_backup(db: &Path, backup: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    std::fs::copy(backup, db).expect("restore");
}

async fn wait_for_snapshot_file(path: &Path) {
    poll::until(WITHIN, "the snapshot file to be written", || {
        std::future::ready(path.exists().then_some(()))
    })
    .await
}

/// A server whose links never load (a CouchDB that never answers), with a
/// snapshot file path it must not write: (public, admin, its directory).
async fn never_loading() -> (
    std::net::SocketAddr,
    std::net::SocketAddr,
    tempfile::TempDir,
) {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.store = StoreSettings::CouchDb(CouchSettings::new(
        CouchUrl::parse(&format!("http://127.0.0.1:{port}")).expect("url"),
        CouchDbName::parse("links").expect("name"),
    ));
    settings.snapshot_file = Some(dir.path().join("links.snapshot"));
    let app = Application::build(settings).await.expect("builds");
    let (public, admin) = (app.public_addr(), app.admin_addr());
    tokio::spawn(app.run_until_stopped());
    (public, admin, dir)
}

#[tokio::test]
async fn answers_503_not_404_until_links_are_loaded() {
    let (public, admin, dir) = never_loading().await;

    let c = client();
    for method in [reqwest::Method::GET, reqwest::Method::HEAD] {
        let r = c
            .request(method.clone(), format!("http://{public}/H83if"))
            .send()
            .await
            .expect("answered");
        assert_eq!(r.status(), 503, "{method}");
        assert_eq!(header(&r, "retry-after"), Some("1"));
        assert_eq!(header(&r, "cache-control"), Some("no-store"));
    }
    let ready = c
        .get(format!("http://{admin}/readyz"))
        .send()
        .await
        .expect("readyz");
    assert_eq!(ready.status(), 503);
    // Logged like any answer.
    let log = dir.path().join("access.log");
    poll::until(WITHIN, "two 503 lines in the access log", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<_> = text
            .lines()
            .filter(|l| l.split(' ').nth(5) == Some("503"))
            .collect();
        std::future::ready((lines.len() == 2).then_some(()))
    })
    .await;
    assert!(
        !dir.path().join("links.snapshot").exists(),
        "nothing loaded, nothing saved"
    );
}

/// The admin listener's tag images, too, say "retry" rather than "no such
/// link" while links load (issue 18): a print run started with the server
/// must not take a 404 for a dead tag.
#[tokio::test]
async fn tag_images_are_503_until_links_are_loaded() {
    let (_public, admin, _dir) = never_loading().await;
    let c = client();
    for path in [
        "/qr/H83if.png",
        "/qr/docs/api.svg?scale=4",
        "/qr/H83if.pdf?template=L7163",
    ] {
        let r = c
            .get(format!("http://{admin}{path}"))
            .send()
            .await
            .expect("answered");
        assert_eq!(r.status(), 503, "{path}");
        assert_eq!(header(&r, "retry-after"), Some("1"), "{path}");
        assert_eq!(header(&r, "cache-control"), Some("no-store"), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_serves_the_snapshot_file_then_catches_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    cli_ok(&db, &["new", "https://a.example/1", "--key", "aaaaa"]);
    cli_ok(&db, &["new", "https://b.example/1", "--key", "bbbbb"]);
    cli_ok(&db, &["new", "https://d.example/1", "--key", "ddddd"]);
    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    wait_for(&srv, "/aaaaa", 302, Some("https://a.example/1")).await;
    wait_for_snapshot_file(&snapshot_of(&db)).await;
    srv.stop().await;

    // While it is down: ordinary edits, which the restart must catch up on…
    cli_ok(&db, &["set", "aaaaa", "https://a.example/2"]);
    cli_ok(&db, &["disable", "bbbbb"]);
    cli_ok(&db, &["new", "https://c.example/1", "--key", "ccccc"]);
    // …and one behind the follower's back (the sequence does not move), so
    // only a server that really served the file still answers the old URL.
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute(
        "UPDATE links SET doc = '{\"url\":\"https://d.example/2\"}' WHERE key = 'ddddd'",
        [],
    )
    .expect("update");
    drop(conn);

    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    wait_for(&srv, "/ddddd", 302, Some("https://d.example/1")).await;
    wait_for(&srv, "/aaaaa", 302, Some("https://a.example/2")).await;
    wait_for(&srv, "/bbbbb", 404, None).await;
    wait_for(&srv, "/ccccc", 302, Some("https://c.example/1")).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_snapshot_file_is_reported_and_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    cli_ok(&db, &["new", "https://a.example/1", "--key", "aaaaa"]);
    let file = snapshot_of(&db);
    std::fs::write(&file, b"QRTAGSNP\x01\0\0\0 this is not a snapshot").expect("write");
    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    wait_for(&srv, "/aaaaa", 302, Some("https://a.example/1")).await;
    assert!(
        srv.stderr().contains("ignoring snapshot file"),
        "{}",
        srv.stderr()
    );
    srv.stop().await;
    let back = read_snapshot(&db).await;
    assert_eq!(back.links.build(Some(back.seq)).len(), 1);
}

/// The snapshot file of `db`, decoded as the server checks it: of this
/// database, in the state its marker names.
async fn read_snapshot(db: &Path) -> qrtag::snapshot::file::Decoded {
    use qrtag::snapshot::file;
    use qrtag::store::LinkStore;
    use qrtag::store::saver;
    let path = snapshot_of(db);
    let store = qrtag::store::sqlite::SqliteStore::open(db).expect("open");
    let mark = store
        .snapshot_mark(&saver::mark_name(&path))
        .await
        .expect("meta");
    assert!(mark.is_some(), "a save marks the database");
    let identity = file::marked_identity(&store.snapshot_identity(), mark.as_deref());
    let bytes = std::fs::read(&path).expect("read");
    file::decode(&bytes, &identity).expect("whole, and of this state")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_of_another_database_is_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = dir.path().join("first.db");
    let second = dir.path().join("second.db");
    cli_ok(&first, &["new", "https://first.example/", "--key", "xxxxx"]);
    cli_ok(
        &second,
        &["new", "https://second.example/", "--key", "yyyyy"],
    );
    let srv = ServerProcess::spawn(&first, &[], &[], false).await;
    wait_for_snapshot_file(&snapshot_of(&first)).await;
    srv.stop().await;
    std::fs::copy(snapshot_of(&first), snapshot_of(&second)).expect("copy");

    let srv = ServerProcess::spawn(&second, &[], &[], false).await;
    wait_for(&srv, "/yyyyy", 302, Some("https://second.example/")).await;
    wait_for(&srv, "/xxxxx", 404, None).await;
    assert!(srv.stderr().contains("another store"), "{}", srv.stderr());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_ahead_of_a_restored_database_is_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    let backup = dir.path().join("backup.db");
    cli_ok(&db, &["new", "https://a.example/", "--key", "aaaaa"]);
    // A backup taken now (same database, earlier sequence).
    back_up(&db, &backup);
    cli_ok(&db, &["new", "https://b.example/", "--key", "bbbbb"]);
    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    wait_for(&srv, "/bbbbb", 302, Some("https://b.example/")).await;
    wait_for_snapshot_file(&snapshot_of(&db)).await;
    srv.stop().await;

    // Restore the backup under the same name.
    restore_backup(&db, &backup);
    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    wait_for(&srv, "/aaaaa", 302, Some("https://a.example/")).await;
    wait_for(&srv, "/bbbbb", 404, None).await;
    assert!(
        srv.stderr().contains("restored from a backup"),
        "{}",
        srv.stderr()
    );
    srv.stop().await;
}

/// A backup restored and then edited past the snapshot's sequence: the
/// sequence alone would take the file for current; its marker does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_database_edited_past_the_snapshot_serves_its_edits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    let backup = dir.path().join("backup.db");
    cli_ok(&db, &["new", "https://a.example/1", "--key", "aaaaa"]);
    cli_ok(&db, &["new", "https://e.example/1", "--key", "eeeee"]);
    back_up(&db, &backup);
    cli_ok(&db, &["new", "https://b.example/1", "--key", "bbbbb"]);
    cli_ok(&db, &["set", "aaaaa", "https://a.example/2"]);
    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    wait_for(&srv, "/aaaaa", 302, Some("https://a.example/2")).await;
    wait_for_snapshot_file(&snapshot_of(&db)).await;
    srv.stop().await;

    restore_backup(&db, &backup);
    // Edited past the file's sequence (4): 5 writes after the backup's 2.
    cli_ok(&db, &["set", "aaaaa", "https://a.example/restored"]);
    cli_ok(&db, &["disable", "eeeee"]);
    cli_ok(&db, &["new", "https://c.example/1", "--key", "ccccc"]);
    cli_ok(&db, &["new", "https://d.example/1", "--key", "ddddd"]);
    cli_ok(&db, &["new", "https://f.example/1", "--key", "fffff"]);

    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    wait_for(&srv, "/fffff", 302, Some("https://f.example/1")).await;
    wait_for(&srv, "/aaaaa", 302, Some("https://a.example/restored")).await;
    wait_for(&srv, "/eeeee", 404, None).await;
    wait_for(&srv, "/bbbbb", 404, None).await;
    wait_for(&srv, "/ccccc", 302, Some("https://c.example/1")).await;
    assert!(
        srv.stderr().contains("restored from a backup"),
        "{}",
        srv.stderr()
    );
    srv.stop().await;
}

/// A snapshot file rewritten with a destination no store write takes and
/// its checksum made right: the file is believed, that link is not served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewritten_snapshot_file_cannot_add_a_bad_destination() {
    use qrtag::snapshot::{LinkView, file};
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    cli_ok(&db, &["new", "https://a.example/1", "--key", "aaaaa"]);
    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    wait_for_snapshot_file(&snapshot_of(&db)).await;
    srv.stop().await;

    let read = read_snapshot(&db).await;
    let mut links = read.links;
    for (key, url) in [
        ("evil1", "//evil.example/phish"),
        ("evil2", "javascript:alert(1)"),
    ] {
        let forged = LinkView {
            key,
            url,
            inactive: false,
            expires_ms: None,
            direct: Some(url),
            created: None,
            changed: None,
            fallback: None,
            rules: None,
        };
        links.push_live(key, &forged);
    }
    let mut bytes = Vec::new();
    file::encode(&links.build(Some(read.seq)), &read.identity, &mut bytes).expect("encode");
    std::fs::write(snapshot_of(&db), bytes).expect("rewrite");

    // Behind the follower's back (the sequence does not move), so that
    // only a server that believed the file answers the old URL.
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute(
        "UPDATE links SET doc = '{\"url\":\"https://a.example/2\"}' WHERE key = 'aaaaa'",
        [],
    )
    .expect("update");
    drop(conn);

    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    wait_for(&srv, "/aaaaa", 302, Some("https://a.example/1")).await;
    for key in ["evil1", "evil2"] {
        let res = client()
            .get(srv.url(&format!("/{key}")))
            .send()
            .await
            .expect("GET");
        assert_eq!(
            res.status().as_u16(),
            404,
            "{key}: {:?}",
            header(&res, "location")
        );
    }
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporary_file_a_killed_save_left_is_removed_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    cli_ok(&db, &["new", "https://a.example/1", "--key", "aaaaa"]);
    // The ID of a process that has ended, as a killed server's is.
    let mut gone = std::process::Command::new("true").spawn().expect("spawn");
    let pid = gone.id();
    gone.wait().expect("wait");
    let name = snapshot_of(&db)
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let leftover = dir.path().join(format!(".{name}.{pid}.tmp"));
    std::fs::write(&leftover, vec![0u8; 4096]).expect("write");
    let unrelated = dir.path().join(format!(".{name}.notapid.tmp"));
    std::fs::write(&unrelated, b"keep").expect("write");

    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    wait_for(&srv, "/aaaaa", 302, Some("https://a.example/1")).await;
    assert!(!leftover.exists(), "{} is still there", leftover.display());
    assert!(unrelated.exists(), "only a save's own files are removed");
    srv.stop().await;
}

#[tokio::test]
async fn no_snapshot_file_when_turned_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    cli_ok(&db, &["new", "https://a.example/", "--key", "aaaaa"]);
    let srv = ServerProcess::spawn(&db, &["--no-snapshot-file"], &[], false).await;
    wait_for(&srv, "/aaaaa", 302, Some("https://a.example/")).await;
    srv.stop().await;
    assert!(!snapshot_of(&db).exists());
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Issue 19, item 11: the database holds the console password's hash and
/// the log clients' addresses; under the usual umask 022 both were 0644.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_the_server_creates_are_readable_by_its_owner_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    let srv = ServerProcess::spawn_wrapped(
        &["sh", "-c", "umask 022; exec \"$@\"", "sh"],
        &db,
        &[],
        &[],
        false,
    )
    .await;
    wait_for(&srv, "/nothere", 404, None).await;
    wait_for_snapshot_file(&snapshot_of(&db)).await;
    let wal = db.with_file_name("qrtag.db-wal");
    for path in [
        db.clone(),
        wal,
        db.with_file_name("access.log"),
        snapshot_of(&db),
        qrtag::settings::default_tracking_secret_file(&db),
    ] {
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }
    // A log that exists keeps the mode it was given (a group may read it).
    drop(srv);
    let log = dir.path().join("shared.log");
    std::fs::write(&log, "").expect("log");
    std::fs::set_permissions(&log, std::os::unix::fs::PermissionsExt::from_mode(0o640))
        .expect("chmod");
    let log_arg = log.to_string_lossy().into_owned();
    let srv = ServerProcess::spawn(&db, &["--access-log", &log_arg], &[], false).await;
    wait_for(&srv, "/nothere", 404, None).await;
    assert_eq!(mode(&log), 0o640);
}

/// Issue 19, item 11: a start cut short by a full disk left a 0-byte
/// database that later commands read as "no such table: links".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfinished_database_is_named_and_the_next_start_finishes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    std::fs::write(&db, "").expect("an empty file");
    let out = qrtag_cmd(&db, &["list"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("qrtag: ") && err.contains("not a finished qrtag database"),
        "{err}"
    );
    assert!(!err.contains("no such table"), "{err}");
    let srv = ServerProcess::spawn(&db, &[], &[], false).await;
    wait_for(&srv, "/nothere", 404, None).await;
    drop(srv);
    let out = qrtag_cmd(&db, &["list"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 23, item 4: SIGTERM closed the listeners at once, so a node
/// refused connections for the ~2 s its shutdown took and a load balancer
/// learnt of it only from failures. Now `/readyz` says 503 "draining" at
/// once while every listener keeps answering for `--shutdown-grace`; then
/// the process stops, and a second signal cuts the grace short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_with_readyz_503_while_scans_are_still_answered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    cli_ok(&db, &["init", "--public-url", "https://0x1f.ie"]);
    cli_ok(&db, &["new", "https://a.example/1", "--key", "aaaaa"]);
    let mut srv = ServerProcess::spawn(&db, &[], &[("QRTAG_SHUTDOWN_GRACE", "30")], false).await;
    wait_for(&srv, "/aaaaa", 302, Some("https://a.example/1")).await;
    let c = client();
    let ready = c
        .get(srv.admin_url("/readyz"))
        .send()
        .await
        .expect("readyz");
    assert_eq!(ready.status(), 200);

    srv.signal("TERM");
    let body = poll::until(WITHIN, "/readyz to say draining", || async {
        let r = c.get(srv.admin_url("/readyz")).send().await.ok()?;
        let status = r.status().as_u16();
        let body = r.text().await.ok()?;
        (status == 503).then_some(body)
    })
    .await;
    assert!(body.contains("draining"), "{body}");
    // Scans on new connections are still answered, and the process runs on.
    for _ in 0..3 {
        let fresh = client();
        let r = fresh
            .get(srv.url("/aaaaa"))
            .send()
            .await
            .expect("a scan while draining");
        assert_eq!(r.status(), 302);
    }
    assert!(
        srv.child.try_wait().expect("try_wait").is_none(),
        "stopped before its grace"
    );
    let json = c
        .get(srv.admin_url("/readyz?format=json"))
        .send()
        .await
        .expect("readyz")
        .text()
        .await
        .expect("body");
    assert!(json.contains(r#""status":"draining""#), "{json}");

    // A second signal: stopping now, cleanly, well before the 30 s grace.
    srv.signal("TERM");
    let status = srv.wait_exit().await;
    assert!(status.success(), "qrtag exited with {status}");
    assert!(
        c.get(srv.url("/aaaaa")).send().await.is_err(),
        "the listener still accepts after the exit"
    );
}

/// A file-size limit (`ulimit -f`, `LimitFSIZE=`) below the database's size
/// used to kill `serve` with SIGXFSZ while the store opened, with nothing
/// said: the start stops in one line naming both sizes instead.
#[test]
fn a_file_size_limit_below_the_database_stops_the_start_in_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    cli_ok(&db, &["new", "https://example.com/a", "--key", "aaaaa"]);
    let size = std::fs::metadata(&db).expect("the database").len();
    let limit = size / 2;
    let out = std::process::Command::new("prlimit")
        .arg(format!("--fsize={limit}"))
        .args(["--", env!("CARGO_BIN_EXE_qrtag"), "--db"])
        .arg(&db)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ])
        .env("QRTAG_CONFIG", "/dev/null")
        .env("QRTAG_LOG", "warn")
        .output()
        .expect("prlimit runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {err}", out.status);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "the file-size limit (ulimit -f) is {limit} bytes, below the database's {size} bytes"
        )),
        "{err}"
    );
}

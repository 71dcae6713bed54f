//! What a person trips over at the command line (issue 12): databases made
//! by mistake, read-only files, repeated error causes, exit codes, closed
//! pipes, messages that name the problem. The real binary, real files.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::{qrtag_cmd, qrtag_cmd_env};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// One line on stderr, `qrtag: ...`, and the exit code.
fn one_line_error(out: &Output, code: i32, what: &str) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{what}: {err}");
    assert_eq!(err.lines().count(), 1, "{what}: {err}");
    assert!(err.starts_with("qrtag: "), "{what}: {err}");
    err.trim_end().to_owned()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

#[test]
fn only_init_and_serve_create_a_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("typo.db");
    let expected = format!(
        "qrtag: no database at {} (db from --db); create it with qrtag init, or start qrtag serve",
        db.display()
    );
    let csv = dir.path().join("in.csv");
    std::fs::write(&csv, "key,url\nabc,https://a.example/\n").expect("csv");
    let csv = csv.to_str().expect("utf-8");
    for args in [
        &["list"][..],
        &["show", "abcde"],
        &["set", "abcde", "https://a.example/"],
        &["disable", "abcde"],
        &["enable", "abcde"],
        &["qr", "abcde", "--format", "svg"],
        &["export"],
        &["new", "https://a.example/"],
        &["batch", "2", "--sheet", "s.svg"],
        &["import", csv],
    ] {
        // Not through `qrtag_cmd`, which creates the database for `new`.
        let out = support::qrtag_bin()
            .arg("--db")
            .arg(&db)
            .args(["--public-url", support::PUBLIC_URL])
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("run qrtag");
        assert_eq!(one_line_error(&out, 1, &args.join(" ")), expected);
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert_eq!(files_in(dir.path()), ["in.csv"], "nothing created");
    // `init` creates it, and says so; run again, it says it exists.
    let out = qrtag_cmd(&db, &["init"]);
    assert!(out.status.success(), "{out:?}");
    assert!(db.exists());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("created") && said.contains("public URL: https://0x1f.ie (recorded)"),
        "{said}"
    );
    let out = qrtag_cmd(&db, &["init"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(": exists"),
        "{out:?}"
    );
}

/// Runs `qrtag` as a user who cannot write `dir`: as root, as `nobody`
/// (the database owned by another user); otherwise with the directory and
/// file made read-only, as on a read-only mount.
fn run_without_write_access(dir: &Path, db: &Path, args: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_qrtag");
    // SAFETY-free check of the effective user: `id -u` is on every Unix.
    let uid = Command::new("id").arg("-u").output().expect("id -u");
    let root = String::from_utf8_lossy(&uid.stdout).trim() == "0";
    let mut cmd = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
        c
    } else {
        use std::os::unix::fs::PermissionsExt;
        for (path, mode) in [(db, 0o444), (dir, 0o555)] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        }
        Command::new(bin)
    };
    let out = cmd
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("QRTAG_DB")
        .env("QRTAG_CONFIG", "/dev/null")
        .stdin(Stdio::null())
        .output()
        .expect("run qrtag");
    if !root {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    out
}

#[test]
fn a_database_that_cannot_be_written_can_still_be_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Readable by anyone, as a database owned by another user may be.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let db = dir.path().join("links.db");
    assert!(
        qrtag_cmd(&db, &["new", "--key", "abcde", "https://a.example/"])
            .status
            .success()
    );
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let before = files_in(dir.path());

    let out = run_without_write_access(dir.path(), &db, &["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "abcde\thttps://a.example/\tactive\n");
    for args in [
        &["show", "abcde"][..],
        &["export"],
        &["qr", "abcde", "--format", "svg"],
    ] {
        let out = run_without_write_access(dir.path(), &db, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
    // A write says why it cannot, in one line.
    let out = run_without_write_access(dir.path(), &db, &["disable", "abcde"]);
    let err = one_line_error(&out, 1, "disable");
    assert!(
        err.contains("readonly") || err.contains("read-only"),
        "{err}"
    );
    assert_eq!(files_in(dir.path()), before, "reading left nothing behind");
}

#[test]
fn serve_on_a_taken_port_creates_nothing_and_says_the_cause_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let db = dir.path().join("q.db");
    let out = qrtag_cmd(
        &db,
        &["serve", "--listen", &addr, "--admin-listen", "127.0.0.1:0"],
    );
    let err = one_line_error(&out, 1, "serve");
    assert!(err.contains(&format!("cannot listen on {addr}")), "{err}");
    assert_eq!(err.matches("Address already in use").count(), 1, "{err}");
    assert_eq!(
        files_in(dir.path()),
        Vec::<String>::new(),
        "no database, log or secret"
    );
}

/// A port clash names the option and the variable that set the address, for
/// each listener: the admin port (8081) is the one two services meet on.
#[test]
fn a_taken_port_names_the_option_that_chose_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let db = dir.path().join("q.db");
    let free = "127.0.0.1:0";
    for (args, named) in [
        (
            ["--listen", free, "--admin-listen", &addr],
            "--admin-listen, QRTAG_ADMIN_LISTEN",
        ),
        (
            ["--listen", &addr, "--admin-listen", free],
            "--listen, QRTAG_LISTEN",
        ),
    ] {
        let out = qrtag_cmd(&db, &[&["serve"][..], &args[..]].concat());
        let err = one_line_error(&out, 1, "serve");
        assert!(
            err.contains(&format!("cannot listen on {addr} ({named}): ")),
            "{err}"
        );
    }
    let out = qrtag_cmd_env(
        &db,
        &["serve", "--listen", free, "--admin-listen", free],
        &[("QRTAG_API_LISTEN", &addr)],
    );
    let err = one_line_error(&out, 1, "serve");
    assert!(
        err.contains(&format!(
            "cannot listen on {addr} (--api-listen, QRTAG_API_LISTEN): "
        )),
        "{err}"
    );
}

#[test]
fn an_error_cause_is_said_once() {
    let db = Path::new("/nonexistent/dir/q.db");
    // `init`: the command that creates a database (`new` no longer does).
    let out = qrtag_cmd(db, &["init"]);
    let err = one_line_error(&out, 1, "init");
    let parts: Vec<&str> = err.split(": ").collect();
    let mut seen = std::collections::HashSet::new();
    assert!(parts.iter().all(|p| seen.insert(*p)), "repeated: {err}");
    assert!(err.contains("/nonexistent/dir/q.db"), "{err}");
}

#[test]
fn usage_errors_exit_2_and_failures_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    assert!(
        qrtag_cmd(&db, &["new", "--key", "abcde", "https://a.example/"])
            .status
            .success()
    );
    let log = dir.path().join("a.log");
    std::fs::write(&log, "").expect("log");
    let log = log.to_str().expect("utf-8");
    for args in [
        &["serve", "--listen", "nonsense"][..],
        &["serve", "--admin-listen", "127.0.0.1:99999"],
        &["stats", "--chart", "c.gif", log],
        &[
            "stats",
            "--since",
            "2026-11-02",
            "--until",
            "2026-11-01",
            log,
        ],
        &["qr", "abcde", "-o", "x.jpg"],
        &["new"],
        &["frobnicate"],
        &["serve", "--client-ip", "half"],
        &["serve", "--scan-log", "/var/log/qrtag/nodes/[a.log"],
        &["serve", "--scan-log", ""],
    ] {
        one_line_error(&qrtag_cmd(&db, args), 2, &args.join(" "));
    }
    // A failure, not a usage error: the command was right.
    one_line_error(&qrtag_cmd(&db, &["show", "zzzzz"]), 1, "show");
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    // Far more than a pipe holds, so the writer meets the closed end.
    let csv: String = std::iter::once("key,url\n".to_owned())
        .chain((0..5000).map(|i| format!("k{i},https://example.com/{i}/{}\n", "x".repeat(40))))
        .collect();
    let file = dir.path().join("links.csv");
    std::fs::write(&file, csv).expect("csv");
    let out = qrtag_cmd(&db, &["import", file.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    for args in [&["list"][..], &["export"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_qrtag"))
            .env("QRTAG_CONFIG", "/dev/null")
            .arg("--db")
            .arg(&db)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut first = String::new();
        let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
        reader.read_line(&mut first).expect("a line");
        drop(reader); // `| head -1`
        let out = child.wait_with_output().expect("wait");
        assert!(!first.is_empty());
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}

#[test]
fn stats_refuses_what_is_not_an_access_log_and_reads_its_own_dates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    let binary = dir.path().join("binary.log");
    std::fs::write(&binary, (0..=255u8).cycle().take(4096).collect::<Vec<u8>>()).expect("bin");
    let out = qrtag_cmd(&db, &["stats", binary.to_str().expect("utf-8")]);
    let err = one_line_error(&out, 1, "stats binary");
    assert!(err.contains("is not a qrtag access log"), "{err}");

    let log = dir.path().join("access.log");
    std::fs::write(
        &log,
        "20261123200748.4 127.0.0.1 - Mozilla%2F5.0%20(iPhone) /abcde 302 https://a.example/ GET -\n\
         20261124090000.0 127.0.0.1 - Mozilla%2F5.0%20(iPhone) /abcde 302 https://a.example/ GET -\n",
    )
    .expect("log");
    let log = log.to_str().expect("utf-8");
    let out = qrtag_cmd(&db, &["stats", log]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("2026-11-23 20:07:48.4"),
        "{}",
        stdout(&out)
    );
    // That printed time reads back, as --until (inclusive) and --since.
    let out = qrtag_cmd(
        &db,
        &[
            "stats",
            "--format",
            "csv",
            "--until",
            "2026-11-23 20:07:48.4",
            log,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("abcde,1,"), "{}", stdout(&out));
    let out = qrtag_cmd(
        &db,
        &[
            "stats",
            "--format",
            "csv",
            "--since",
            "2026-11-23 20:07:48.5",
            log,
        ],
    );
    assert!(stdout(&out).contains("abcde,1,"), "{}", stdout(&out));
}

#[test]
fn a_write_that_makes_a_loop_is_warned_of_by_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    let out = qrtag_cmd(&db, &["new", "--key", "a", "/b"]);
    assert!(out.status.success());
    assert_eq!(
        stderr(&out),
        "",
        "b does not exist yet: a dead end, not a loop"
    );
    let out = qrtag_cmd(&db, &["new", "--key", "b", "/a"]);
    assert!(out.status.success(), "the write is done: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("warning: scans of b will answer 404"), "{err}");
    assert!(err.contains("b -> /a, a -> /b"), "{err}");
    // Repointing out of the loop is quiet again.
    let out = qrtag_cmd(&db, &["set", "a", "https://a.example/"]);
    assert_eq!(stderr(&out), "");
}

/// A link to its own short URL (issue 18) is a loop like `a -> /a`, and so
/// is a chain through short URLs written in full: both are warned of.
#[test]
fn a_link_to_its_own_short_url_is_warned_of_as_a_loop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    let own = "https://0x1f.ie/selfie";
    let out = qrtag_cmd(&db, &["new", own, "--key", "selfie"]);
    assert!(out.status.success(), "the write is done: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning: scans of selfie will answer 404: too many internal redirects"),
        "{err}"
    );
    assert!(err.contains(&format!("selfie -> {own}")), "{err}");
    // The default port written out is the same origin.
    let out = qrtag_cmd(&db, &["new", "--key", "c", "https://0x1f.ie:443/d"]);
    assert_eq!(stderr(&out), "", "d does not exist yet: a dead end");
    let out = qrtag_cmd(&db, &["new", "--key", "d", "/c"]);
    assert!(
        stderr(&out).contains("scans of d will answer 404"),
        "{}",
        stderr(&out)
    );
    // Another port is another service: no loop.
    let out = qrtag_cmd(&db, &["set", "selfie", "https://0x1f.ie:8443/selfie"]);
    assert_eq!(stderr(&out), "");
}

/// The server answers a scan into a loop 404 and says which path, so an
/// operator can find the links (`qrtag show`).
#[tokio::test]
async fn the_server_names_the_path_of_a_scan_it_cannot_resolve() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    assert!(
        qrtag_cmd(&db, &["new", "--key", "a", "/b"])
            .status
            .success()
    );
    assert!(
        qrtag_cmd(&db, &["new", "--key", "b", "/a"])
            .status
            .success()
    );
    let srv = support::process::ServerProcess::spawn(&db, &[], &[], false).await;
    let res = reqwest::get(srv.url("/a")).await.expect("scan");
    assert_eq!(res.status(), 404);
    let said = support::poll::until(std::time::Duration::from_secs(5), "the warning", || {
        let err = srv.stderr();
        std::future::ready(err.contains("cannot be resolved").then_some(err))
    })
    .await;
    assert!(
        said.contains("path=\"/a\"") || said.contains("path=/a"),
        "{said}"
    );
    srv.stop().await;
}

#[test]
fn batch_says_which_sheets_it_wrote_and_resolve_has_a_plain_form() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    let sheet = dir.path().join("multi.svg");
    let out = qrtag_cmd(
        &db,
        &["batch", "30", "--sheet", sheet.to_str().expect("utf-8")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    for n in [1, 2] {
        let path = dir.path().join(format!("multi-{n}.svg"));
        assert!(path.exists());
        assert!(err.contains(&format!("wrote {}", path.display())), "{err}");
    }
    assert_eq!(stdout(&out).lines().count(), 30);

    let rules = dir.path().join("rules.json");
    std::fs::write(
        &rules,
        r#"{"docs": "https://docs.example/", "loop": "/loop"}"#,
    )
    .expect("rules");
    let out = qrtag_cmd_env(
        &db,
        &[
            "resolve",
            "--plain",
            "--rules",
            rules.to_str().expect("utf-8"),
            "https://0x1f.ie/docs/a",
            "https://0x1f.ie/loop",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "https://docs.example/a\n-\n");
    assert!(
        stderr(&out).contains("https://0x1f.ie/loop: "),
        "{}",
        stderr(&out)
    );
}

fn show(db: &Path, key: &str) -> serde_json::Value {
    let out = qrtag_cmd(db, &["show", key]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("show prints JSON")
}

#[test]
fn expiry_is_set_from_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    let before = chrono::Utc::now();
    let out = qrtag_cmd(
        &db,
        &[
            "new",
            "--key",
            "poster",
            "--expires",
            "30d",
            "https://a.example/",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let expires = show(&db, "poster")["expires"]
        .as_str()
        .expect("expires")
        .to_owned();
    let expires = chrono::DateTime::parse_from_rfc3339(&expires).expect("RFC 3339");
    let days = (expires.with_timezone(&chrono::Utc) - before).num_hours();
    assert!((30 * 24 - 1..=30 * 24).contains(&days), "{expires}");

    let out = qrtag_cmd(&db, &["set", "poster", "--expires", "2027-01-01T00:00:00Z"]);
    assert_eq!(stdout(&out), "poster expires 2027-01-01T00:00:00+00:00\n");
    assert_eq!(show(&db, "poster")["expires"], "2027-01-01T00:00:00Z");
    assert_eq!(
        show(&db, "poster")["url"],
        "https://a.example/",
        "the URL is kept"
    );
    let out = qrtag_cmd(&db, &["set", "poster", "--expires", "never"]);
    assert!(out.status.success());
    assert!(show(&db, "poster").get("expires").is_none());

    one_line_error(
        &qrtag_cmd(&db, &["set", "poster"]),
        2,
        "set without a change",
    );
    one_line_error(
        &qrtag_cmd(&db, &["new", "--expires", "soon", "https://a.example/"]),
        2,
        "bad expiry",
    );
}

#[test]
fn edit_checks_the_document_before_saving_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    assert!(
        qrtag_cmd(&db, &["new", "--key", "poster", "https://a.example/"])
            .status
            .success()
    );

    // An "editor" that adds a note and repoints: saved.
    let editor = r#"sed -i -e 's|a.example|b.example|' -e 's|^{|{"note": "bus stop",|'"#;
    let out = qrtag_cmd_env(
        &db,
        &["edit", "poster"],
        &[("EDITOR", editor), ("VISUAL", "")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = show(&db, "poster");
    assert_eq!(doc["url"], "https://b.example/");
    assert_eq!(doc["note"], "bus stop");

    // One that breaks the URL: refused, nothing written, the text kept.
    let editor = r#"sed -i -e 's|https://b.example/|javascript:alert(1)|'"#;
    let out = qrtag_cmd_env(
        &db,
        &["edit", "poster"],
        &[("EDITOR", editor), ("VISUAL", "")],
    );
    let err = one_line_error(&out, 1, "bad edit");
    assert!(
        err.contains("poster not saved") && err.contains("bad \"url\""),
        "{err}"
    );
    let kept = err
        .rsplit("kept in ")
        .next()
        .and_then(|s| s.strip_suffix(')'))
        .expect("path");
    let text = std::fs::read_to_string(kept).expect("the text survives");
    assert!(text.contains("javascript:alert(1)"));
    let _ = std::fs::remove_file(kept);
    assert_eq!(
        show(&db, "poster")["url"],
        "https://b.example/",
        "unchanged"
    );

    // An editor that changes nothing: nothing to save.
    let out = qrtag_cmd_env(
        &db,
        &["edit", "poster"],
        &[("EDITOR", "true"), ("VISUAL", "")],
    );
    assert!(out.status.success());
    assert_eq!(stderr(&out).trim(), "qrtag: poster unchanged");
}

const COMMANDS: &[&str] = &[
    "serve",
    "new",
    "set",
    "edit",
    "disable",
    "enable",
    "show",
    "qr",
    "batch",
    "print",
    "list",
    "setup",
    "resolve",
    "stats",
    "export",
    "import",
    "didcomm did",
];

fn help_of(command: &str) -> String {
    let mut args: Vec<&str> = command.split(' ').collect();
    args.push("--help");
    let out = qrtag_cmd(Path::new("unused.db"), &args);
    assert!(out.status.success(), "{command}: {}", stderr(&out));
    stdout(&out)
}

#[test]
fn every_command_describes_every_argument_and_shows_an_example() {
    for command in COMMANDS {
        let help = help_of(command);
        assert!(help.contains("\nExample"), "{command}: no example\n{help}");
        let lines: Vec<&str> = help
            .lines()
            .take_while(|l| !l.starts_with("Example"))
            .collect();
        for (i, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            let indent = line.len() - trimmed.len();
            let is_item =
                (2..=6).contains(&indent) && (trimmed.starts_with('-') || trimmed.starts_with('<'));
            if is_item {
                let next = lines.get(i + 1).copied().unwrap_or_default();
                assert!(
                    next.starts_with("          ") && !next.trim().is_empty(),
                    "{command}: {trimmed} has no description\n{help}"
                );
            }
        }
    }
}

#[test]
fn help_shows_only_the_options_a_command_reads_under_headings() {
    for (command, absent) in [
        ("stats", &["--public-url"][..]),
        ("resolve", &["--db", "--couchdb-url", "--public-url"]),
        ("setup", &["--db ", "--public-url"]),
        ("list", &["--public-url"]),
        ("didcomm did", &["--couchdb-url", "--public-url"]),
    ] {
        let help = help_of(command);
        for option in absent {
            assert!(!help.contains(option), "{command} --help shows {option}");
        }
    }
    let serve = help_of("serve");
    for heading in [
        "Listeners:",
        "Access log:",
        "Tracking:",
        "Limits:",
        "Store:",
        "DIDComm:",
    ] {
        assert!(
            serve.contains(&format!("\n{heading}\n")),
            "no {heading}\n{serve}"
        );
    }
    assert!(
        serve.contains("/qr/KEY.png"),
        "the admin listener's QR endpoints"
    );
    // Hidden is not refused: a global option before the command still works.
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("a.log");
    std::fs::write(&log, "").expect("log");
    let out = qrtag_cmd(
        &dir.path().join("x.db"),
        &["stats", log.to_str().expect("utf-8")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Issue 19, item 8: a key below an existing link (`docs/api/v1` while
/// `docs/api` exists) would change where the printed `/docs/api/v1` leads;
/// `new` and `import` refuse it unless told `--take-over`.
#[test]
fn a_key_that_takes_over_a_links_urls_needs_take_over() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    let ok = |args: &[&str]| {
        let out = qrtag_cmd(&db, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        out
    };
    ok(&["new", "--key", "docs/api", "https://docs.example/api"]);
    let out = qrtag_cmd(
        &db,
        &["new", "--key", "docs/api/v1", "https://evil.example/phish"],
    );
    let err = one_line_error(&out, 1, "new under docs/api");
    assert_eq!(
        err,
        "qrtag: the key docs/api/v1 would take over URLs of the link docs/api: /docs/api/v1 now leads to docs/api's destination with the rest of the path appended (--take-over creates it anyway)"
    );
    // Keys beside or above it are no one's URLs yet.
    ok(&["new", "--key", "docs/apis", "https://a.example/"]);
    ok(&["new", "--key", "docs", "https://a.example/"]);

    let csv = dir.path().join("in.csv");
    std::fs::write(
        &csv,
        "key,url\nfresh,https://a.example/\nfresh/login,https://b.example/\ndocs/api/v2/x,https://evil.example/\n",
    )
    .expect("csv");
    let csv = csv.to_str().expect("utf-8");
    let out = qrtag_cmd(&db, &["import", csv]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{csv}:4: the key docs/api/v2/x would take over URLs of the existing link docs/api (--take-over imports it anyway)\n"
        )),
        "{err}"
    );
    assert_eq!(
        err.lines().last(),
        Some(
            format!(
                "qrtag: 1 keys that would take over URLs of existing links (--take-over imports them) in {csv}; nothing was imported"
            )
            .as_str()
        ),
        "{err}"
    );
    let shown = qrtag_cmd(&db, &["show", "fresh"]);
    assert!(!shown.status.success(), "nothing was imported");

    // An editor's explicit word; a file's own keys never count against it.
    ok(&["import", "--take-over", csv]);
    ok(&[
        "new",
        "--take-over",
        "--key",
        "docs/api/v1",
        "https://docs.example/v1",
    ]);
    let out = ok(&["show", "docs/api/v1"]);
    assert!(
        stdout(&out).contains("https://docs.example/v1"),
        "{}",
        stdout(&out)
    );
}

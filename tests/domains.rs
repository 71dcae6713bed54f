//! Several domains on one service (issue 36): the configuration file's
//! `[[domains]]`, read by the real binary, and the public listener picking
//! a domain by the request's host, over real sockets.

mod support;

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use support::process::ServerProcess;
use support::qrtag_bin;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `qrtag serve` with the configuration file `config` (in `dir`), expected
/// to stop before it starts.
fn serve_refused(dir: &Path, config: &str) -> Output {
    let file = dir.join("qrtag.toml");
    std::fs::write(&file, config).expect("write config");
    qrtag_bin()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ])
        .env("QRTAG_CONFIG", &file)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run qrtag")
}

/// A link in the embedded store at `db`, as the CLI writes it.
async fn add(db: &Path, key: &str, url: &str) {
    let store = qrtag::store::sqlite::SqliteStore::open(db).expect("store");
    qrtag::links::create(
        &store,
        &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
        &qrtag::values::destination::Destination::parse(url).expect("url"),
        Some(&qrtag::values::link_key::LinkKey::parse(key).expect("key")),
        false,
    )
    .await
    .expect("create");
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// `GET target` on the server's public listener naming `host` (`None`:
/// the listener's own address, as reqwest sends it): status and Location.
async fn get_as(
    srv: &ServerProcess,
    host: Option<&str>,
    target: &str,
    extra: &[(&str, &str)],
) -> (u16, Option<String>, String) {
    let mut req = client().get(srv.url(target));
    if let Some(host) = host {
        req = req.header(reqwest::header::HOST, host);
    }
    for (name, value) in extra {
        req = req.header(*name, *value);
    }
    let res = req.send().await.expect("answer");
    let status = res.status().as_u16();
    let location = support::header(&res, "location").map(str::to_owned);
    let body = res.text().await.expect("body");
    (status, location, body)
}

/// Waits until the server answers `host`'s `/key` with a redirect.
async fn serving(srv: &ServerProcess, host: Option<&str>, key: &str) -> String {
    support::poll::until(Duration::from_secs(10), "the link served", || async move {
        match get_as(srv, host, key, &[]).await {
            (302, Some(location), _) => Some(location),
            _ => None,
        }
    })
    .await
}

#[test]
fn a_domain_mistake_is_one_line_and_exit_2_before_anything_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let top = "db = \"links.db\"\naccess_log = \"access.log\"\n";
    let a = "[[domains]]\nhost = \"go.brand-a.com\"\npublic_url = \"https://go.brand-a.com\"\n";
    for (config, said) in [
        (
            format!("{top}{a}{a}"),
            "domain go.brand-a.com is listed twice",
        ),
        (
            format!(
                "{top}[[domains]]\nhost = \"go.brand-a.com\"\npublic_url = \"https://qr.brand-b.ie\"\n"
            ),
            "domain go.brand-a.com: its public_url https://qr.brand-b.ie is on another host",
        ),
        (
            format!(
                "{top}public_url = \"https://qr.brand-b.ie\"\n[[domains]]\nhost = \"go.brand-a.com\"\n"
            ),
            "domain go.brand-a.com: its public_url https://qr.brand-b.ie is on another host",
        ),
        (
            format!(
                "{top}{a}[[domains]]\nhost = \"qr.brand-b.ie\"\nsqlite = \"links.db\"\naccess_log = \"b.log\"\n"
            ),
            "domains go.brand-a.com and qr.brand-b.ie share the store",
        ),
        (
            format!(
                "{top}{a}[[domains]]\nhost = \"qr.brand-b.ie\"\nsqlite = \"b.db\"\naccess_log = \"access.log\"\n"
            ),
            "domains go.brand-a.com and qr.brand-b.ie share the access log",
        ),
        (
            format!("{top}{a}[[domains]]\nhost = \"qr.brand-b.ie\"\naccess_log = \"b.log\"\n"),
            "domain qr.brand-b.ie: give its store",
        ),
        (
            format!("{top}{a}[[domains]]\nhost = \"qr.brand-b.ie\"\nsqlite = \"b.db\"\n"),
            "domain qr.brand-b.ie: give its access_log",
        ),
        (
            format!("{a}sqlite = \"a.db\"\n").replace("[[domains]]", "db = \"x.db\"\n[[domains]]"),
            "the default domain's `sqlite` and the top-level `db` are both set",
        ),
        (
            format!("{top}[[domains]]\nhots = \"go.brand-a.com\"\n"),
            "unknown field `hots`",
        ),
    ] {
        let out = serve_refused(d, &config);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{config}\n{err}");
        assert_eq!(err.lines().count(), 1, "{config}\n{err}");
        assert!(err.contains(said), "{config}\nwanted {said:?} in {err}");
        for file in ["links.db", "access.log", "b.db", "b.log"] {
            assert!(!d.join(file).exists(), "{config}: {file} was made");
        }
    }
}

/// An installation from before domains (its configuration, database and
/// snapshot file) starts with a `[[domains]]` list naming it the default
/// and serves every tag as before.
#[tokio::test]
async fn a_single_domain_installation_serves_the_same_after_the_upgrade() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let db = d.join("links.db");
    let config = d.join("qrtag.toml");
    let before = "public_url = \"https://0x1f.ie\"\n";
    std::fs::write(&config, before).expect("config");
    support::init_db(&db);
    let tags = [
        ("H83if", "https://example.com/poster"),
        ("docs", "https://example.com/docs"),
        ("menu", "/docs"),
    ];
    for (key, url) in tags {
        add(&db, key, url).await;
    }
    let env = [("QRTAG_CONFIG", config.to_str().expect("utf-8"))];
    let srv = ServerProcess::spawn(&db, &[], &env, false).await;
    let mut answers = Vec::new();
    for (key, _) in tags {
        answers.push(serving(&srv, None, &format!("/{key}")).await);
        answers.push(serving(&srv, None, &format!("/{key}/more?x=1")).await);
    }
    srv.stop().await;
    let snapshot = qrtag::settings::default_snapshot_file(&db);
    let saved = std::fs::read(&snapshot).expect("the snapshot file");

    // The upgrade: the same installation as the default domain, and a
    // second domain beside it.
    std::fs::write(
        &config,
        format!(
            "{before}[[domains]]\nhost = \"0x1f.ie\"\n\n[[domains]]\nhost = \"qr.brand-b.ie\"\nsqlite = \"b.db\"\naccess_log = \"b.log\"\n"
        ),
    )
    .expect("config");
    let srv = ServerProcess::spawn(&db, &[], &env, false).await;
    let mut after = Vec::new();
    for (key, _) in tags {
        after.push(serving(&srv, Some("0x1f.ie"), &format!("/{key}")).await);
        after.push(serving(&srv, Some("0x1f.ie"), &format!("/{key}/more?x=1")).await);
    }
    assert_eq!(after, answers);
    srv.stop().await;
    assert_eq!(
        std::fs::read(&snapshot).expect("the snapshot file"),
        saved,
        "nothing changed for the tags, so neither did their snapshot file"
    );
}

/// `qrtag init` of a domain's own database, its public URL recorded.
fn init(db: &Path, public_url: &str) {
    let out = qrtag_bin()
        .arg("--db")
        .arg(db)
        .args(["--public-url", public_url, "init"])
        .stdin(Stdio::null())
        .output()
        .expect("run qrtag init");
    assert!(out.status.success(), "qrtag init: {out:?}");
}

/// Two domains: `0x1f.ie`, the default (the database the server is
/// started with, its log `access.log` beside it), and `qr.brand-b.ie`
/// with `b.db` and `b.log`; the same key in each, leading to two places.
async fn two_domains(dir: &Path, extra: &str) -> std::path::PathBuf {
    let db = dir.join("a.db");
    init(&db, "https://0x1f.ie");
    init(&dir.join("b.db"), "https://qr.brand-b.ie");
    add(&db, "H83if", "https://brand-a.example/poster").await;
    add(&dir.join("b.db"), "H83if", "https://brand-b.example/poster").await;
    let config = dir.join("qrtag.toml");
    std::fs::write(
        &config,
        format!(
            r#"public_url = "https://0x1f.ie"
{extra}
[[domains]]
host = "0x1f.ie"
root = "https://brand-a.example/"
operator_name = "Brand A"

[[domains]]
host = "qr.brand-b.ie"
public_url = "https://qr.brand-b.ie"
sqlite = "b.db"
access_log = "b.log"
root = "https://brand-b.example/"
operator_name = "Brand B"
operator_contact = "tags@brand-b.example"
"#
        ),
    )
    .expect("config");
    db
}

/// The log's lines as (target, status).
fn lines(path: &Path) -> Vec<(String, u16)> {
    std::fs::read_to_string(path)
        .expect("a log")
        .lines()
        .map(|l| {
            let line = qrtag::access_log::format::parse_line(l).expect("a log line");
            (line.target.to_owned(), line.status)
        })
        .collect()
}

#[tokio::test]
async fn each_domain_has_its_links_log_root_and_dead_tag_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let db = two_domains(d, "").await;
    let config = d.join("qrtag.toml");
    let env = [("QRTAG_CONFIG", config.to_str().expect("utf-8"))];
    let srv = ServerProcess::spawn(&db, &[], &env, false).await;
    let (a, b) = (Some("0x1f.ie"), Some("qr.brand-b.ie"));

    assert_eq!(
        serving(&srv, a, "/H83if").await,
        "https://brand-a.example/poster"
    );
    assert_eq!(
        serving(&srv, b, "/H83if").await,
        "https://brand-b.example/poster"
    );
    let (status, location, _) = get_as(&srv, Some("QR.Brand-B.ie.:80"), "/H83if", &[]).await;
    assert_eq!(
        (status, location.as_deref()),
        (302, Some("https://brand-b.example/poster"))
    );
    // A host of neither: 404, one short line.
    let (status, location, body) = get_as(&srv, None, "/H83if", &[]).await;
    assert_eq!((status, location), (404, None));
    assert_eq!(body, "not found: no such domain here\n");
    let (status, _, _) = get_as(&srv, Some("brand-b.ie"), "/H83if", &[]).await;
    assert_eq!(status, 404);
    // Each domain's root and dead-tag page.
    for (host, root) in [
        (a, "https://brand-a.example/"),
        (b, "https://brand-b.example/"),
    ] {
        let (status, location, _) = get_as(&srv, host, "/", &[]).await;
        assert_eq!((status, location.as_deref()), (302, Some(root)));
    }
    let html = [("accept", "text/html")];
    let (status, _, page_a) = get_as(&srv, a, "/nope", &html).await;
    let (_, _, page_b) = get_as(&srv, b, "/nope", &html).await;
    assert_eq!(status, 404);
    assert!(
        page_a.contains("Brand A") && !page_a.contains("Brand B"),
        "{page_a}"
    );
    assert!(
        page_b.contains("Brand B") && page_b.contains("tags@brand-b.example"),
        "{page_b}"
    );
    // An edit to one domain's store reaches its scans, not the other's.
    add(&d.join("b.db"), "new", "https://brand-b.example/new").await;
    assert_eq!(
        serving(&srv, b, "/new").await,
        "https://brand-b.example/new"
    );
    let (status, _, _) = get_as(&srv, a, "/new", &[]).await;
    assert_eq!(status, 404);
    let metrics = client()
        .get(srv.admin_url("/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert!(
        metrics.contains("qrtag_unknown_host_requests_total 2"),
        "{metrics}"
    );
    srv.stop().await;

    // Each log holds exactly its domain's requests; the unknown hosts are
    // the default's, marked 421.
    let a_log = lines(&d.join("access.log"));
    let b_log = lines(&d.join("b.log"));
    let count = |log: &[(String, u16)], target: &str, status: u16| {
        log.iter()
            .filter(|(t, s)| t == target && *s == status)
            .count()
    };
    assert!(
        b_log
            .iter()
            .all(|(t, _)| ["/H83if", "/", "/nope", "/new"].contains(&t.as_str()))
    );
    assert_eq!(count(&b_log, "/", 302), 1);
    assert_eq!(count(&b_log, "/nope", 404), 1);
    assert_eq!(count(&a_log, "/", 302), 1);
    assert_eq!(count(&a_log, "/nope", 404), 1);
    assert_eq!(count(&a_log, "/H83if", 421), 2);
    assert_eq!(count(&b_log, "/H83if", 421), 0);
    assert_eq!(count(&a_log, "/new", 404), 1);
    assert_eq!(count(&b_log, "/new", 302), 1);
    assert_eq!(count(&a_log, "/new", 302), 0);
    // Every scan of /H83if answered 302 is in the log of the domain that
    // answered it: one polled scan and the one with a port for b, one for a.
    assert_eq!(count(&b_log, "/H83if", 302), 2);
    assert_eq!(count(&a_log, "/H83if", 302), 1);
}

#[tokio::test]
async fn a_forwarded_host_is_believed_only_from_a_trusted_proxy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let db = two_domains(d, "").await;
    let config = d.join("qrtag.toml");
    let env = [("QRTAG_CONFIG", config.to_str().expect("utf-8"))];
    let forwarded = [("x-forwarded-host", "qr.brand-b.ie")];

    // Behind a trusted proxy (loopback), the host it was asked for counts.
    let srv = ServerProcess::spawn(&db, &["--trusted-proxy", "127.0.0.1"], &env, false).await;
    serving(&srv, Some("0x1f.ie"), "/H83if").await;
    let (status, location, _) = get_as(&srv, Some("0x1f.ie"), "/H83if", &forwarded).await;
    assert_eq!(
        (status, location.as_deref()),
        (302, Some("https://brand-b.example/poster"))
    );
    let (status, location, _) = get_as(&srv, None, "/H83if", &forwarded).await;
    assert_eq!(
        (status, location.as_deref()),
        (302, Some("https://brand-b.example/poster"))
    );
    srv.stop().await;

    // From anyone else it is ignored: the Host decides; and a host of
    // neither gets the default domain's answer when asked to.
    let srv = ServerProcess::spawn(
        &db,
        &["--trusted-proxy", "10.0.0.0/8", "--unknown-host", "default"],
        &env,
        false,
    )
    .await;
    serving(&srv, Some("0x1f.ie"), "/H83if").await;
    let (status, location, _) = get_as(&srv, Some("0x1f.ie"), "/H83if", &forwarded).await;
    assert_eq!(
        (status, location.as_deref()),
        (302, Some("https://brand-a.example/poster"))
    );
    let (status, location, _) = get_as(&srv, None, "/H83if", &forwarded).await;
    assert_eq!(
        (status, location.as_deref()),
        (302, Some("https://brand-a.example/poster"))
    );
    let (status, location, _) = get_as(&srv, Some("qr.brand-b.ie"), "/H83if", &[]).await;
    assert_eq!(
        (status, location.as_deref()),
        (302, Some("https://brand-b.example/poster"))
    );
    srv.stop().await;
}

/// `qrtag ARGS` in `dir` with its `qrtag.toml`.
fn cli(dir: &Path, args: &[&str]) -> Output {
    qrtag_bin()
        .args(args)
        .env("QRTAG_CONFIG", dir.join("qrtag.toml"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run qrtag")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_link_commands_take_a_domain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(
        d.join("qrtag.toml"),
        r#"db = "a.db"
public_url = "https://0x1f.ie"

[[domains]]
host = "0x1f.ie"

[[domains]]
host = "qr.brand-b.ie"
public_url = "https://qr.brand-b.ie"
sqlite = "b.db"
access_log = "b.log"
"#,
    )
    .expect("config");
    assert!(cli(d, &["init"]).status.success());
    init(&d.join("b.db"), "https://qr.brand-b.ie");
    let b = ["--domain", "qr.brand-b.ie"];
    let ok = |args: &[&str]| {
        let out = cli(d, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    assert_eq!(
        ok(&["new", "https://brand-a.example/x", "--key", "k"]),
        "https://0x1f.ie/k\n"
    );
    assert_eq!(
        ok(&[&["new", "https://brand-b.example/x", "--key", "k"][..], &b].concat()),
        "https://qr.brand-b.ie/k\n"
    );
    ok(&[&["set", "k", "https://brand-b.example/y"][..], &b].concat());
    assert!(ok(&["show", "k"]).contains("https://brand-a.example/x"));
    assert!(ok(&["show", "k", "--domain", "0x1f.ie"]).contains("https://brand-a.example/x"));
    let shown = ok(&[&["show", "k"][..], &b].concat());
    assert!(shown.contains("https://brand-b.example/y"), "{shown}");
    let listed = ok(&[&["list"][..], &b].concat());
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(
        listed.starts_with("k\thttps://brand-b.example/y"),
        "{listed}"
    );
    let out = cli(d, &["show", "k", "--domain", "nope.example"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        stderr(&out),
        "qrtag: no domain nope.example (domains: 0x1f.ie, qr.brand-b.ie)\n"
    );
}

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

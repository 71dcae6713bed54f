//! Issue 36: the descriptor budget of a service with many domains, on the
//! real `qrtag serve` under a low `prlimit --nofile`. Every other domain
//! holds an access log, its snapshot file's writes and a store of its own;
//! the connection caps must leave room for them, or the start must say in
//! one line that the limit is too low, never run out of descriptors later.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use support::process::ServerProcess;
use support::qrtag_bin;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

const TIMEOUT: Duration = Duration::from_secs(20);
/// The open-file limit both tests run under.
const LIMIT: u32 = 512;

/// `qrtag init` of a domain's database, its public URL recorded, and its
/// link `H83if` to `https://HOST.example/poster`.
async fn domain_db(db: &Path, host: &str) {
    let out = qrtag_bin()
        .arg("--db")
        .arg(db)
        .args(["--public-url", &format!("https://{host}"), "init"])
        .stdin(Stdio::null())
        .output()
        .expect("run qrtag init");
    assert!(out.status.success(), "qrtag init: {out:?}");
    add(db, "H83if", &format!("https://{host}.example/poster")).await;
}

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

fn host(i: usize) -> String {
    format!("d{i}.brand.example")
}

/// A configuration of the default domain `0x1f.ie` (database `a.db`) and
/// `others` more, each with its SQLite file, access log and snapshot
/// file; returns the configuration file and the default database.
async fn domains(dir: &Path, others: usize) -> (PathBuf, PathBuf) {
    let db = dir.join("a.db");
    domain_db(&db, "0x1f.ie").await;
    let mut config = String::from(
        "public_url = \"https://0x1f.ie\"\nsnapshot_file = \"a.snap\"\n\n[[domains]]\nhost = \"0x1f.ie\"\n",
    );
    for i in 1..=others {
        let h = host(i);
        domain_db(&dir.join(format!("d{i}.db")), &h).await;
        config.push_str(&format!(
            "\n[[domains]]\nhost = \"{h}\"\npublic_url = \"https://{h}\"\nsqlite = \"d{i}.db\"\naccess_log = \"d{i}.log\"\nsnapshot_file = \"d{i}.snap\"\n"
        ));
    }
    let file = dir.join("qrtag.toml");
    std::fs::write(&file, config).expect("write config");
    (file, db)
}

/// `GET /key` on the public listener as `host`: the status and Location.
async fn get(srv: &ServerProcess, host: &str, key: &str) -> Option<(u16, Option<String>)> {
    let res = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client")
        .get(srv.url(key))
        .header(reqwest::header::HOST, host)
        .send()
        .await
        .ok()?;
    let location = support::header(&res, "location").map(str::to_owned);
    Some((res.status().as_u16(), location))
}

/// Waits until `host` answers `/key` with a 302 to `to`.
async fn served(srv: &ServerProcess, host: &str, key: &str, to: &str) {
    support::poll::until(TIMEOUT, &format!("{host}/{key} served"), || async move {
        (get(srv, host, key).await == Some((302, Some(to.to_owned())))).then_some(())
    })
    .await
}

/// A number from the start's warning: the one after `before`.
fn said(stderr: &str, before: &str) -> usize {
    let line = stderr
        .lines()
        .find(|l| l.contains("open-file limit is"))
        .unwrap_or_else(|| panic!("the start names the limit:\n{stderr}"));
    let at = line.find(before).expect(before) + before.len();
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a number after {before:?}: {line}"))
}

/// `n` connections to `to`, each sent the start of a request it never
/// finishes.
async fn hold(n: usize, to: std::net::SocketAddr) -> Vec<TcpStream> {
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        let socket = TcpSocket::new_v4().expect("socket");
        socket
            .bind("127.0.2.2:0".parse().expect("addr"))
            .expect("bind the source address");
        let mut conn = socket.connect(to).await.expect("connect");
        conn.write_all(b"GET /H83if HTTP/1.1\r\nHost: 0x1f.ie\r\n")
            .await
            .expect("send");
        held.push(conn);
    }
    held
}

/// The server's open sockets, from /proc (the process is the server:
/// prlimit executes it).
fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|t| t.to_string_lossy().starts_with("socket:"))
                .count()
        })
        .unwrap_or(0)
}

/// Sixteen more domains under a limit of 512: both listeners filled to
/// their caps, every log reopened on SIGHUP and a domain's link added
/// meanwhile; then every domain answers, the new link and the reopened log
/// included, and no descriptor ran out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_domains_under_a_low_limit_start_with_caps_that_leave_them_room() {
    qrtag::startup::fd_budget::open_file_limit();
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let others = 16;
    let (config, db) = domains(d, others).await;
    let nofile = format!("--nofile={LIMIT}:{LIMIT}");
    let srv = ServerProcess::spawn_wrapped(
        &["prlimit", &nofile, "--"],
        &db,
        // No per-address cap: one address may fill a listener.
        &["--max-connections-per-ip", "0", "--request-timeout", "60"],
        &[("QRTAG_CONFIG", config.to_str().expect("utf-8"))],
        false,
    )
    .await;
    for i in 1..=others {
        served(
            &srv,
            &host(i),
            "/H83if",
            &format!("https://{}.example/poster", host(i)),
        )
        .await;
    }
    let stderr = srv.stderr();
    let (public, admin) = (
        said(&stderr, "at most "),
        said(&stderr, "instead of --max-connections 25000 ("),
    );

    let mut held = hold(public, srv.public).await;
    held.extend(hold(admin, srv.admin).await);
    let pid = srv.child.id();
    // Every held connection accepted, or the server out of descriptors.
    support::poll::until(TIMEOUT, "the held connections accepted", || {
        let out = srv.stderr().contains("Too many open files");
        std::future::ready((out || sockets(pid) >= public + admin).then_some(()))
    })
    .await;
    // While they are held: every log reopened (d1's moved away first), and
    // a link added to the last domain, which its follower and snapshot
    // file take in.
    std::fs::rename(d.join("d1.log"), d.join("d1.log.1")).expect("rotate");
    srv.signal("HUP");
    let last = d.join(format!("d{others}.db"));
    add(&last, "fresh", "https://fresh.example/").await;
    support::poll::until(TIMEOUT, "d1.log reopened", || {
        std::future::ready(d.join("d1.log").exists().then_some(()))
    })
    .await;
    drop(held);

    served(&srv, &host(others), "/fresh", "https://fresh.example/").await;
    for i in 1..=others {
        served(
            &srv,
            &host(i),
            "/H83if",
            &format!("https://{}.example/poster", host(i)),
        )
        .await;
    }
    let health = reqwest::get(srv.admin_url("/healthz"))
        .await
        .expect("health");
    assert_eq!(health.status(), 200);
    let reopened = std::fs::read_to_string(d.join("d1.log")).expect("d1.log");
    assert!(
        reopened.contains("/H83if"),
        "d1's scan in its new log: {reopened:?}"
    );
    let stderr = srv.stderr();
    assert!(
        !stderr.contains("Too many open files"),
        "the process ran out of descriptors:\n{stderr}"
    );
    srv.stop().await;
}

/// Forty more domains under the same limit: the start stops in one line
/// that names the limit and the domains, before anything is served.
#[tokio::test]
async fn a_limit_too_low_for_the_domains_stops_the_start_in_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let (config, db) = domains(d, 40).await;
    let mut child = Killed(
        Command::new("prlimit")
            .arg(format!("--nofile={LIMIT}:{LIMIT}"))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_qrtag"))
            .arg("--db")
            .arg(&db)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--admin-listen",
                "127.0.0.1:0",
                "--workers",
                "2",
            ])
            .env("QRTAG_CONFIG", &config)
            .env("QRTAG_LOG", "warn")
            .current_dir(d)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("prlimit runs"),
    );
    let exited = support::poll::until(TIMEOUT, "the start to stop", || {
        std::future::ready(child.0.try_wait().expect("try_wait"))
    })
    .await;
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.0.stderr.take().expect("stderr"), &mut err)
        .expect("stderr");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "qrtag: starting the server: the open-file limit is {LIMIT}, too low to serve 41 domains: qrtag needs at least "
        )),
        "{err}"
    );
    assert_eq!(exited.code(), Some(1), "{err}");
}

/// A server that started when it should not have is not left running.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

//! File descriptors (issue 19, item 2): the real `qrtag serve` under a low
//! `prlimit --nofile`, held connections from several loopback addresses, and
//! slow DIDComm bodies. The caps come from the limit the process has, so the
//! admin listener and a fresh redirect keep answering and `accept` never
//! runs out of descriptors; the DIDComm listener has the same request
//! deadline and per-address cap as the others. Bounded: a few hundred
//! connections, each test over in seconds.

#[path = "support/poll.rs"]
mod poll;
#[path = "support/process.rs"]
mod process;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use process::ServerProcess;
use qrtag::store::sqlite::SqliteStore;
use qrtag::values::destination::Destination;
use qrtag::values::link_key::LinkKey;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const TIMEOUT: Duration = Duration::from_secs(5);
/// The open-file limit the server runs under: far below what the held
/// connections would take without caps.
const NOFILE: &str = "--nofile=256:256";
/// The source addresses the held connections come from: each in a /24 of
/// its own, since the per-address cap counts a /24 (issue 30).
const HOLDERS: [&str; 5] = [
    "127.0.2.2",
    "127.0.3.3",
    "127.0.4.4",
    "127.0.5.5",
    "127.0.6.6",
];

async fn create_link(db: &Path) {
    let store = SqliteStore::open(db).expect("open store");
    let key = LinkKey::parse("abcde").expect("key");
    let url = Destination::parse("https://example.com/").expect("destination");
    qrtag::links::create(
        &store,
        &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
        &url,
        Some(&key),
        false,
    )
    .await
    .expect("create link");
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .build()
        .expect("client")
}

/// `qrtag serve` under [`NOFILE`] with a request deadline of
/// `request_timeout` seconds and `args`, its database holding `abcde`.
async fn serve(dir: &Path, request_timeout: &str, args: &[&str]) -> ServerProcess {
    // The held connections' client ends are this process's descriptors.
    qrtag::startup::fd_budget::open_file_limit();
    let db = dir.join("qrtag.db");
    create_link(&db).await;
    let mut all = vec!["--no-snapshot-file", "--request-timeout", request_timeout];
    all.extend_from_slice(args);
    ServerProcess::spawn_wrapped(&["prlimit", NOFILE, "--"], &db, &all, &[], false).await
}

/// As [`serve`] with the DIDComm listener on; also its address.
async fn serve_api(dir: &Path, request_timeout: &str) -> (ServerProcess, SocketAddr) {
    let srv = serve(dir, request_timeout, &["--api-listen", "127.0.0.1:0"]).await;
    let api = api_addr(&srv).await;
    (srv, api)
}

/// The DIDComm listener's address from the server's listening line (kept
/// a moment after the line is parsed: polled).
async fn api_addr(srv: &ServerProcess) -> SocketAddr {
    poll::until(
        TIMEOUT,
        "the listening line to name the api address",
        || {
            std::future::ready(
                srv.stderr()
                    .lines()
                    .find(|l| l.starts_with("listening "))
                    .and_then(|l| l.split(' ').find_map(|f| f.strip_prefix("api=")))
                    .and_then(|a| a.parse().ok()),
            )
        },
    )
    .await
}

/// A connection from `source`, or `None` when the attempt is refused or
/// not accepted in time (the server is allowed to leave it waiting).
async fn connect_from(source: &str, to: SocketAddr) -> Option<TcpStream> {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().expect("addr"))
        .expect("bind the source address");
    tokio::time::timeout(TIMEOUT, socket.connect(to))
        .await
        .ok()?
        .ok()
}

/// Opens `per_source` connections from each of `sources` and sends each the
/// start of a request it never finishes.
async fn hold(sources: &[&str], per_source: usize, to: SocketAddr, start: &[u8]) -> Vec<TcpStream> {
    let mut held = Vec::new();
    for source in sources {
        for _ in 0..per_source {
            if let Some(mut conn) = connect_from(source, to).await {
                // A connection closed at once refuses the write: still kept,
                // to be counted as closed.
                let _ = conn.write_all(start).await;
                held.push(conn);
            }
        }
    }
    held
}

/// Whether the server has closed (or reset) `conn`, without waiting.
fn closed(conn: &TcpStream) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match conn.try_read(&mut buf) {
            Ok(0) => return true,
            // An answer (a refusal) before the close: read on.
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

fn open_count(conns: &[TcpStream]) -> usize {
    conns.iter().filter(|c| !closed(c)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_connections_under_a_low_open_file_limit_leave_health_and_redirects_answering() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A long deadline: the held connections stay for the whole test.
    let srv = serve(dir.path(), "60", &[]).await;
    let head = b"GET /abcde HTTP/1.1\r\nHost: qr.example\r\n";
    let public = hold(&HOLDERS, 80, srv.public, head).await;
    let admin = hold(&HOLDERS, 20, srv.admin, head).await;
    assert!(
        public.len() + admin.len() >= 400,
        "the connections were made"
    );

    let http = client();
    let health = http
        .get(srv.admin_url("/healthz"))
        .send()
        .await
        .expect("the admin listener answers");
    assert_eq!(health.status(), 200);
    let redirect = http
        .get(srv.url("/abcde"))
        .send()
        .await
        .expect("the public listener answers");
    assert_eq!(redirect.status(), 302);
    // The load was real: the server holds many of them while answering.
    assert!(open_count(&public) >= 40, "held: {}", open_count(&public));

    drop((public, admin));
    let stderr = srv.stderr();
    assert!(
        !stderr.contains("Too many open files"),
        "the process ran out of descriptors:\n{stderr}"
    );
    assert!(
        stderr.contains("open-file limit is 256: at most ")
            && stderr.contains("instead of --max-connections 25000")
            && stderr.contains("LimitNOFILE="),
        "the start says the limit lowered the cap:\n{stderr}"
    );
    srv.stop().await;
}

/// The start of a DIDComm POST whose body (`len` bytes) is still to come.
fn didcomm_head(len: usize) -> Vec<u8> {
    format!(
        "POST /didcomm HTTP/1.1\r\nHost: qr.example\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
    )
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_didcomm_body_is_cut_at_the_request_deadline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (srv, api) = serve_api(dir.path(), "2").await;
    let mut conn = connect_from("127.0.0.1", api).await.expect("connect");
    conn.write_all(&didcomm_head(100)).await.expect("send");
    let began = Instant::now();
    let mut buf = [0u8; 512];
    // A byte a second, for up to 15 s: the deadline is 2 s.
    let mut cut = None;
    for _ in 0..15 {
        let closed = tokio::select! {
            r = conn.read(&mut buf) => matches!(r, Ok(0) | Err(_)),
            // The pace of a slowloris client, not a wait for the server.
            () = tokio::time::sleep(Duration::from_secs(1)) => false,
        };
        if closed || conn.write_all(b"{").await.is_err() {
            cut = Some(began.elapsed());
            break;
        }
    }
    let cut = cut.expect("the slow body was still being taken after 15 s");
    assert!(cut < Duration::from_secs(6), "cut after {cut:?}");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_hold_every_didcomm_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (srv, api) = serve_api(dir.path(), "60").await;
    let conns = hold(&["127.0.7.7"], 60, api, &didcomm_head(100)).await;
    // Past its share, one address's connections are closed at once (well
    // before the 60 s deadline).
    poll::until(TIMEOUT, "most of one address's connections closed", || {
        std::future::ready((open_count(&conns) <= 20).then_some(()))
    })
    .await;
    // Another agent still gets an answer (a refusal of its empty message).
    let r = client()
        .post(format!("http://{api}/didcomm"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("the DIDComm listener answers");
    assert!(r.status().is_client_error(), "{}", r.status());
    assert!(open_count(&conns) >= 1, "the address keeps its share");
    drop(conns);
    srv.stop().await;
}

#[test]
fn a_limit_too_low_to_serve_stops_the_start_in_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new("prlimit")
        .args(["--nofile=40:40", "--", env!("CARGO_BIN_EXE_qrtag"), "--db"])
        .arg(dir.path().join("qrtag.db"))
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
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("qrtag: starting the server: the open-file limit is 40, too low to serve"),
        "{err}"
    );
}

/// `qrtag serve` under `prlimit --nofile=LIMIT:LIMIT` with `args`.
async fn serve_under(dir: &Path, limit: u32, args: &[&str]) -> ServerProcess {
    serve_under_with(dir, limit, args, &[]).await
}

/// As [`serve_under`], with environment variables `envs`.
async fn serve_under_with(
    dir: &Path,
    limit: u32,
    args: &[&str],
    envs: &[(&str, &str)],
) -> ServerProcess {
    let db = dir.join("qrtag.db");
    create_link(&db).await;
    let nofile = format!("--nofile={limit}:{limit}");
    let mut all = vec!["--no-snapshot-file"];
    all.extend_from_slice(args);
    ServerProcess::spawn_wrapped(&["prlimit", &nofile, "--"], &db, &all, envs, false).await
}

/// A limit that leaves thousands of public connections below the default
/// `--max-connections` is no news to an operator who never set it (issue 31,
/// item 7): the start says nothing about it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_start_under_a_roomy_limit_says_nothing_of_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = serve_under(dir.path(), 20_000, &[]).await;
    let stderr = srv.stderr();
    assert!(!stderr.contains("open-file limit"), "{stderr}");
    srv.stop().await;
}

/// A `--max-connections` the operator gave and the limit lowers is said,
/// naming the API listener for what it is: the REST API and DIDComm.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cap_the_operator_set_and_the_limit_lowers_is_said() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = serve_under(
        dir.path(),
        20_000,
        &["--max-connections", "25000", "--api-listen", "127.0.0.1:0"],
    )
    .await;
    let stderr = srv.stderr();
    assert!(
        stderr.contains("qrtag: warning: the open-file limit is 20000: at most ")
            && stderr.contains("instead of --max-connections 25000")
            && stderr.contains(" on the API listener"),
        "{stderr}"
    );
    assert!(!stderr.contains("DIDComm listener"), "{stderr}");
    srv.stop().await;

    // Set in the configuration file, it is as much the operator's.
    let dir = tempfile::tempdir().expect("tempdir");
    let toml = dir.path().join("qrtag.toml");
    std::fs::write(&toml, "max_connections = 25000\n").expect("write the file");
    let from_file = serve_under_with(
        dir.path(),
        20_000,
        &[],
        &[("QRTAG_CONFIG", toml.to_str().expect("utf-8"))],
    )
    .await;
    let stderr = from_file.stderr();
    assert!(
        stderr.contains("the open-file limit is 20000: at most ")
            && stderr.contains("instead of --max-connections 25000"),
        "{stderr}"
    );
    from_file.stop().await;
}

async fn readyz(srv: &ServerProcess) -> String {
    client()
        .get(srv.admin_url("/readyz"))
        .send()
        .await
        .expect("the admin listener answers")
        .text()
        .await
        .expect("body")
}

/// `/readyz` reports DIDComm deliveries only when DIDComm can deliver: the
/// API listener alone (the REST API, no DID allowed) sends no replies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_reports_didcomm_deliveries_only_when_didcomm_is_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let info = [("QRTAG_LOG", "info")];
    let rest_only =
        serve_under_with(dir.path(), 20_000, &["--api-listen", "127.0.0.1:0"], &info).await;
    poll::until(TIMEOUT, "ready", || async {
        readyz(&rest_only).await.contains("ready").then_some(())
    })
    .await;
    let body = readyz(&rest_only).await;
    assert!(!body.to_lowercase().contains("didcomm"), "{body}");
    // Nor does the start say DIDComm is on.
    let said = rest_only.stderr();
    assert!(said.contains("DIDComm is off"), "{said}");
    assert!(!said.contains("DIDComm listener on"), "{said}");
    rest_only.stop().await;

    let dir = tempfile::tempdir().expect("tempdir");
    let didcomm = serve_under_with(
        dir.path(),
        20_000,
        &["--api-listen", "127.0.0.1:0", "--didcomm-allow-any"],
        &info,
    )
    .await;
    poll::until(TIMEOUT, "the DIDComm line", || async {
        readyz(&didcomm)
            .await
            .contains("didcomm replies delivered: 0")
            .then_some(())
    })
    .await;
    let said = didcomm.stderr();
    assert!(said.contains("DIDComm listener on"), "{said}");
    didcomm.stop().await;
}

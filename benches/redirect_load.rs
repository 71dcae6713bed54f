//! Load benchmark: server CPU per redirect, qrtag against a bare actix-web
//! handler, measured in the same run.
//!
//! Run with `cargo bench --bench redirect_load` (optionally
//! `QRTAG_LOAD_REQUESTS=200000`). The bench binary re-executes itself as each
//! server (one worker thread each, like for like), drives it from this process
//! over keep-alive loopback connections, and reads the server process's CPU
//! time from `/proc/PID/task/*/schedstat` (nanoseconds, every thread, the
//! kernel's share of the socket work included). Wall-clock throughput is
//! printed too but is not the figure: the client shares the machine.
//!
//! What the qrtag side does per request is the whole production path:
//! snapshot lookup, resolver and policy, tracking cookie (a new ID each time,
//! the costlier case), and an access-log line written to a real file.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROLE_VAR: &str = "QRTAG_LOAD_ROLE";
const KEY: &str = "H83if";
const DEST: &str = "https://example.com/wp/whelans/?p=14";

fn main() {
    match std::env::var(ROLE_VAR).as_deref() {
        Ok("bare") => serve_bare(),
        Ok("qrtag") => serve_qrtag(),
        _ => drive(),
    }
}

/// The baseline: the least an actix-web server can do to answer a redirect.
fn serve_bare() {
    use actix_web::{App, HttpResponse, HttpServer, web};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    announce(listener.local_addr().expect("addr"));
    let server = HttpServer::new(|| {
        App::new().default_service(web::to(|| async {
            HttpResponse::Found()
                .insert_header(("location", DEST))
                .finish()
        }))
    })
    .workers(1)
    .disable_signals()
    .listen(listener)
    .expect("listen")
    .run();
    actix_web::rt::System::new()
        .block_on(server)
        .expect("serve");
}

/// The real application, built exactly as `qrtag serve` builds it.
fn serve_qrtag() {
    let dir = tempfile::tempdir().expect("tempdir");
    actix_web::rt::System::new().block_on(async move {
        let mut settings = qrtag::settings::Settings::local(dir.path().join("load.db"));
        settings.listen = "127.0.0.1:0".into();
        settings.admin_listen = "127.0.0.1:0".into();
        settings.workers = Some(1);
        // For finding where the cost goes: QRTAG_LOAD_VARIANT=no-tracking,
        // or null-log (lines formatted and written, to /dev/null).
        match std::env::var("QRTAG_LOAD_VARIANT").as_deref() {
            Ok("no-tracking") => settings.tracking = None,
            Ok("null-log") => {
                settings.access_log = qrtag::access_log::AccessLogTarget::Path("/dev/null".into())
            }
            _ => {}
        }
        let store = qrtag::store::sqlite::SqliteStore::open(&dir.path().join("load.db"))
            .expect("open store");
        let key = qrtag::link_key::LinkKey::parse(KEY).expect("key");
        let dest = qrtag::destination::Destination::parse(DEST).expect("dest");
        qrtag::links::create(&store, &dest, Some(&key), false)
            .await
            .expect("create link");
        let app = qrtag::startup::Application::build(settings)
            .await
            .expect("build");
        let snapshot = app.snapshot();
        let addr = app.public_addr();
        let run = actix_web::rt::spawn(app.run_until_stopped());
        while !snapshot.is_loaded() {
            actix_web::rt::time::sleep(Duration::from_millis(5)).await;
        }
        announce(addr);
        let _ = run.await;
    });
}

fn announce(addr: SocketAddr) {
    println!("{addr}");
    let _ = std::io::stdout().flush();
}

struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(role: &str) -> Self {
        let exe = std::env::current_exe().expect("current exe");
        let mut child = Command::new(exe)
            .env(ROLE_VAR, role)
            .env("QRTAG_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn server");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read address");
        let addr = line.trim().parse().expect("server printed its address");
        Self { child, addr }
    }

    /// CPU time of every thread of the server process, in nanoseconds.
    fn cpu_ns(&self) -> u64 {
        let tasks = format!("/proc/{}/task", self.child.id());
        std::fs::read_dir(tasks)
            .expect("read /proc tasks")
            .filter_map(|t| t.ok())
            .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
            .filter_map(|s| {
                s.split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
            })
            .sum()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `n` requests on one keep-alive connection and checks every answer.
fn client(addr: SocketAddr, n: usize) {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::with_capacity(16 * 1024, stream);
    let request = format!(
        "GET /{KEY} HTTP/1.1\r\nHost: 0x1f.ie\r\nUser-Agent: Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)\r\n\r\n"
    );
    let mut line = String::new();
    for _ in 0..n {
        writer.write_all(request.as_bytes()).expect("send");
        let mut content_length = 0usize;
        let mut status_ok = false;
        loop {
            line.clear();
            reader.read_line(&mut line).expect("read header");
            if line.starts_with("HTTP/1.1 ") {
                status_ok = line.starts_with("HTTP/1.1 302");
            } else if let Some(v) = line
                .to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().to_owned())
            {
                content_length = v.parse().unwrap_or(0);
            } else if line == "\r\n" || line.is_empty() {
                break;
            }
        }
        assert!(status_ok, "expected a 302");
        let mut body = vec![0; content_length];
        reader.read_exact(&mut body).expect("body");
    }
}

struct Run {
    cpu_per_request_us: f64,
    requests_per_s: f64,
}

fn measure(role: &str, requests: usize, connections: usize) -> Run {
    let server = Server::start(role);
    // Warm up caches and connection handling before measuring.
    client(server.addr, 2000);
    let cpu0 = server.cpu_ns();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..connections {
            s.spawn(|| client(server.addr, requests / connections));
        }
    });
    let wall = t0.elapsed();
    let cpu = server.cpu_ns() - cpu0;
    let done = (requests / connections) * connections;
    Run {
        cpu_per_request_us: cpu as f64 / 1000.0 / done as f64,
        requests_per_s: done as f64 / wall.as_secs_f64(),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn drive() {
    // `cargo test --benches` runs bench binaries with `--test`: one quick round.
    let quick = std::env::args().any(|a| a == "--test");
    let requests: usize = std::env::var("QRTAG_LOAD_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 4_000 } else { 100_000 });
    let rounds = if quick { 1 } else { 5 };
    let connections = 4;
    let (mut bare, mut qrtag, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    println!(
        "redirect_load: {requests} requests per run, {connections} connections, {rounds} rounds"
    );
    for round in 1..=rounds {
        // Alternate so drift in machine load hits both sides alike.
        let b = measure("bare", requests, connections);
        let q = measure("qrtag", requests, connections);
        let ratio = q.cpu_per_request_us / b.cpu_per_request_us;
        println!(
            "round {round}: bare {:.2} µs/req ({:.0} req/s), qrtag {:.2} µs/req ({:.0} req/s), ratio {ratio:.3}",
            b.cpu_per_request_us, b.requests_per_s, q.cpu_per_request_us, q.requests_per_s
        );
        bare.push(b.cpu_per_request_us);
        qrtag.push(q.cpu_per_request_us);
        ratios.push(ratio);
    }
    println!(
        "median: bare {:.2} µs CPU/req, qrtag {:.2} µs CPU/req, qrtag/bare = {:.3}",
        median(bare),
        median(qrtag),
        median(ratios)
    );
}

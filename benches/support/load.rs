//! Driving a server process over loopback and reading its CPU time: the
//! shared part of the load benchmarks (`redirect_load`, `scale`). Included
//! with `#[path]`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

pub const ROLE_VAR: &str = "QRTAG_LOAD_ROLE";
pub const DEST: &str = "https://example.com/wp/whelans/?p=14";
/// The key the load benchmarks scan.
pub const KEY: &str = "H83if";

// Issue 34: links with three rules (OS, language, time) beside [`KEY`]. ----
/// Three rules, the last of which holds for an iPhone that prefers English:
/// a weekly window that covers the whole day.
pub const RULES_LAST: &str = "rules3";
/// The same three rules, none of which holds (the window ended in 2020):
/// the scan falls through to `url`, [`DEST`].
pub const RULES_URL: &str = "rules3u";
/// Where [`RULES_LAST`]'s last rule sends a scan.
pub const RULES_DEST: &str = "https://example.com/wp/whelans/open?p=14";

/// The rules of [`RULES_LAST`] (`ended: false`) or [`RULES_URL`].
pub fn three_rules(ended: bool) -> qrtag::link::rules::Rules {
    let mut window = serde_json::json!({
        "url": RULES_DEST,
        "days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
        "hours": ["00:00", "23:59"],
        "tz": "Europe/Dublin"
    });
    if ended {
        window["until"] = serde_json::json!("2020-01-01T00:00:00Z");
    }
    let rules = serde_json::json!([
        {"url": "https://play.google.com/store/apps/details?id=ie.whelans", "os": ["android"]},
        {"url": "https://example.com/wp/whelans/de", "lang": ["de"]},
        window
    ]);
    qrtag::link::rules::Rules::from_json(&rules, &Default::default()).expect("valid rules")
}
// End of the rules links. --------------------------------------------------

/// The baseline: the least an actix-web server can do to answer a redirect.
/// Run by a bench binary re-executed with [`ROLE_VAR`]` = bare`.
pub fn serve_bare() {
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

/// The real application, built exactly as `qrtag serve` builds it, with the
/// one link [`KEY`] → [`DEST`]. Run by a bench binary re-executed with
/// [`ROLE_VAR`]` = qrtag`.
pub fn serve_qrtag() {
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
            // Issue 36: three domains, the scanned one (with the links)
            // the last the host is compared with.
            Ok("three-domains") => three_domains(&mut settings, dir.path()),
            _ => {}
        }
        let store = qrtag::store::sqlite::SqliteStore::open(&dir.path().join("load.db"))
            .expect("open store");
        let key = qrtag::values::link_key::LinkKey::parse(KEY).expect("key");
        let dest = qrtag::values::destination::Destination::parse(DEST).expect("dest");
        qrtag::links::create(
            &store,
            &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
            &dest,
            Some(&key),
            false,
        )
        .await
        .expect("create link");
        // Issue 34: the links with rules, written as every surface writes them.
        for (key, ended) in [(RULES_LAST, false), (RULES_URL, true)] {
            let key = qrtag::values::link_key::LinkKey::parse(key).expect("key");
            let rules = three_rules(ended);
            qrtag::links::create(
                &store,
                &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
                &dest,
                Some(&key),
                false,
            )
            .await
            .expect("create link");
            qrtag::links::update(
                &store,
                &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
                &key,
                |d| rules.write_to(d),
            )
            .await
            .expect("write rules");
        }
        let app = qrtag::startup::Application::build(settings)
            .await
            .expect("build");
        // Issue 36: every domain's links, the scanned one's too.
        let snapshots = app.snapshots();
        let addr = app.public_addr();
        let run = actix_web::rt::spawn(app.run_until_stopped());
        while !snapshots.iter().all(|s| s.is_loaded()) {
            actix_web::rt::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        announce(addr);
        let _ = run.await;
    });
}

/// Issue 36: `settings` as three domains: the default `a.example` and
/// `b.example` on databases of their own, then `0x1f.ie` (the host the
/// benchmarks ask for) on `load.db`, which holds the links.
fn three_domains(settings: &mut qrtag::settings::Settings, dir: &std::path::Path) {
    use qrtag::settings::domains::{DomainSettings, ServedDomains};
    use qrtag::store::options::StoreSettings;
    let host = |h: &str| qrtag::values::host::Host::parse(h).expect("host");
    let domain = |name: &str, db: &str, log: &str| DomainSettings {
        host: host(name),
        public_url: qrtag::values::public_url::PublicUrl::parse(&format!("https://{name}"))
            .expect("url"),
        store: StoreSettings::Sqlite { path: dir.join(db) },
        access_log: dir.join(log),
        snapshot_file: Some(qrtag::settings::default_snapshot_file(&dir.join(db))),
        dead_tag: Default::default(),
        root: None,
    };
    settings.store = StoreSettings::Sqlite {
        path: dir.join("a.db"),
    };
    settings.snapshot_file = Some(qrtag::settings::default_snapshot_file(&dir.join("a.db")));
    settings.access_log = qrtag::access_log::AccessLogTarget::Path(dir.join("a.log"));
    settings.public_url =
        Some(qrtag::values::public_url::PublicUrl::parse("https://a.example").expect("url"));
    settings.domains = ServedDomains {
        default_host: Some(host("a.example")),
        others: vec![
            domain("b.example", "b.db", "b.log"),
            domain("0x1f.ie", "load.db", "access.log"),
        ],
        unknown_host: Default::default(),
    };
}

/// Tells the driving process where this server listens.
pub fn announce(addr: SocketAddr) {
    println!("{addr}");
    let _ = std::io::stdout().flush();
}

pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Server {
    /// This bench binary again, as the server `role`; it prints its address.
    pub fn start(role: &str) -> Self {
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

    /// `qrtag serve` itself, which prints `listening public=ADDR admin=ADDR`
    /// on stderr; returns the server and its admin address.
    pub fn qrtag(mut cmd: Command) -> (Self, SocketAddr) {
        let mut child = cmd
            .env("QRTAG_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn qrtag");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let (public, admin) = loop {
            let line = lines
                .next()
                .expect("qrtag printed its addresses")
                .expect("read stderr");
            match qrtag::startup::parse_listening_line(&line) {
                Some(addrs) => break addrs,
                None => eprintln!("qrtag: {line}"),
            }
        };
        // Keep draining, so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        (
            Self {
                child,
                addr: public,
            },
            admin,
        )
    }

    /// CPU time of every thread of the server process, in nanoseconds.
    pub fn cpu_ns(&self) -> u64 {
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

    /// Resident memory of the server process, in bytes.
    pub fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .expect("VmRSS")
    }

    pub fn terminate(mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `n` requests on one keep-alive connection, cycling through
/// `paths`, and checks that every answer is a 302.
pub fn client(addr: SocketAddr, n: usize, paths: &[String]) {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::with_capacity(16 * 1024, stream);
    let requests: Vec<String> = paths
        .iter()
        .map(|p| format!(
            "GET {p} HTTP/1.1\r\nHost: 0x1f.ie\r\nUser-Agent: Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)\r\n\r\n"
        ))
        .collect();
    let mut line = String::new();
    for i in 0..n {
        writer
            .write_all(requests[i % requests.len()].as_bytes())
            .expect("send");
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
        assert!(status_ok, "expected a 302, got {line:?}");
        let mut body = vec![0; content_length];
        reader.read_exact(&mut body).expect("body");
    }
}

pub struct Run {
    pub cpu_per_request_us: f64,
    pub requests_per_s: f64,
}

/// Server CPU per request over `requests` requests on `connections`
/// keep-alive connections, after a warm-up.
pub fn measure(server: &Server, paths: &[String], requests: usize, connections: usize) -> Run {
    client(server.addr, 2000, paths);
    let cpu0 = server.cpu_ns();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for c in 0..connections {
            // Each connection starts elsewhere in the list.
            let mut mine = paths.to_vec();
            mine.rotate_left(c * paths.len() / connections);
            s.spawn(move || client(server.addr, requests / connections, &mine));
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

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The value below which `q` of `v` lie.
pub fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v[i.min(v.len() - 1)]
}

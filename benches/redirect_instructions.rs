//! Instructions per redirect: qrtag with every feature on against a bare
//! actix-web handler, counted by callgrind.
//!
//! Run with `cargo bench --bench redirect_instructions` (valgrind must be
//! installed). Wall-clock and CPU-time ratios on a shared machine swing by
//! half between rounds; instruction counts do not, so this is the figure that
//! steers work on the hot path.
//!
//! Each server (the roles of `redirect_load`: this binary re-executed, one
//! worker thread) runs under `valgrind --tool=callgrind`. Over one keep-alive
//! connection it gets 300 warm-up requests; then its counters are zeroed,
//! dumped after 1,000 requests and again after 4,000 more. The figure is the
//! second dump over 4,000 (every thread of the process; the first dump shows
//! the count has settled). Every request is `GET /H83if` with an iPhone
//! User-Agent, twice over: a first scan (no cookie, so a new tracking ID is
//! made and signed) and a returning scan (a valid cookie, verified and sent
//! back). The qrtag side is the whole production path: request-line rewriting
//! and head capture, snapshot lookup, tracking cookie, metrics, and an access
//! log line written to a file.
//!
//! Issue 34: then, for each kind of scan, qrtag alone on links with three
//! rules (device OS, language, a weekly time window): one whose last rule
//! answers the scan, one whose rules all fail so the scan gets `url`. Those
//! requests also say `Accept-Language: en-GB,en;q=0.9` (the language rule
//! reads it), one header more than the rows above, and are compared with
//! the rule-less qrtag row of the same kind.
//!
//! Issue 36: then, for each kind of scan, qrtag serving three domains
//! (`QRTAG_LOAD_VARIANT=three-domains`), the host asked for the last of
//! the three compared, against the one-domain qrtag row of the same kind.
//!
//! `QRTAG_CALLGRIND_KEEP=DIR` keeps the dumps in DIR for `callgrind_annotate`.

#[path = "support/load.rs"]
mod load;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use load::{DEST, KEY, ROLE_VAR, RULES_DEST, RULES_LAST, RULES_URL, serve_bare, serve_qrtag};
use qrtag::tracking::secret::VALUE_LEN;

const WARM_UP: usize = 300;
const FIRST_DUMP: usize = 1_000;
const SECOND_DUMP: usize = 4_000;

fn main() {
    match std::env::var(ROLE_VAR).as_deref() {
        Ok("bare") => serve_bare(),
        Ok("qrtag") => serve_qrtag(),
        _ => drive(),
    }
}

#[derive(Clone, Copy)]
enum Scan {
    First,
    Returning,
}

impl Scan {
    fn name(self) -> &'static str {
        match self {
            Scan::First => "first scan (no cookie)",
            Scan::Returning => "returning scan (valid cookie)",
        }
    }
}

fn drive() {
    let keep = std::env::var_os("QRTAG_CALLGRIND_KEEP").map(PathBuf::from);
    let scratch = tempfile::tempdir().expect("tempdir");
    println!(
        "redirect_instructions: instructions per request (callgrind), {WARM_UP} warm-up, \
         dumps after {FIRST_DUMP} and {SECOND_DUMP} more, GET /{KEY} on one keep-alive connection"
    );
    for scan in [Scan::First, Scan::Returning] {
        let mut counts = Vec::new();
        for role in ["bare", "qrtag"] {
            let dir = keep.clone().unwrap_or_else(|| scratch.path().to_owned());
            let dir = dir.join(format!("{role}-{}", scan_tag(scan)));
            std::fs::create_dir_all(&dir).expect("dump directory");
            let (settle, per_request) = count(role, scan, &dir, &Target::PLAIN, None);
            println!(
                "  {:<30} {role:>5}: {per_request:>8.0} instructions/request (first {FIRST_DUMP}: {settle:.0})",
                scan.name()
            );
            counts.push(per_request);
        }
        println!(
            "{}: bare {:.0}, qrtag {:.0}, qrtag/bare = {:.3}",
            scan.name(),
            counts[0],
            counts[1],
            counts[1] / counts[0]
        );
        // Issue 34: the links with rules.
        for target in [Target::LAST_RULE, Target::TO_URL] {
            let dir = keep.clone().unwrap_or_else(|| scratch.path().to_owned());
            let dir = dir.join(format!("{}-{}", target.key, scan_tag(scan)));
            std::fs::create_dir_all(&dir).expect("dump directory");
            let (settle, per_request) = count("qrtag", scan, &dir, &target, None);
            println!(
                "  {:<30} {}: {per_request:>8.0} instructions/request (first {FIRST_DUMP}: {settle:.0})",
                scan.name(),
                target.name
            );
            println!(
                "{}: {} {per_request:.0}, /qrtag without rules = {:.3}",
                scan.name(),
                target.name,
                per_request / counts[1]
            );
        }
        // Issue 36: three domains, the host asked for the last compared.
        let dir = keep.clone().unwrap_or_else(|| scratch.path().to_owned());
        let dir = dir.join(format!("three-domains-{}", scan_tag(scan)));
        std::fs::create_dir_all(&dir).expect("dump directory");
        let (settle, per_request) =
            count("qrtag", scan, &dir, &Target::PLAIN, Some("three-domains"));
        println!(
            "  {:<30} three domains: {per_request:>8.0} instructions/request (first {FIRST_DUMP}: {settle:.0})",
            scan.name()
        );
        println!(
            "{}: three domains {per_request:.0}, /qrtag with one = {:.3}",
            scan.name(),
            per_request / counts[1]
        );
    }
}

/// What the requests ask for, and the `Location` they must get.
struct Target {
    name: &'static str,
    key: &'static str,
    accept_language: bool,
    location: &'static str,
}

impl Target {
    const PLAIN: Target = Target {
        name: "no rules",
        key: KEY,
        accept_language: false,
        location: DEST,
    };
    const LAST_RULE: Target = Target {
        name: "3 rules, the last answers",
        key: RULES_LAST,
        accept_language: true,
        location: RULES_DEST,
    };
    const TO_URL: Target = Target {
        name: "3 rules, none holds (url)",
        key: RULES_URL,
        accept_language: true,
        location: DEST,
    };
}

fn scan_tag(scan: Scan) -> &'static str {
    match scan {
        Scan::First => "first",
        Scan::Returning => "returning",
    }
}

/// Instructions per request of the server `role` in the first and the
/// second dump.
fn count(role: &str, scan: Scan, dir: &Path, target: &Target, variant: Option<&str>) -> (f64, f64) {
    let exe = std::env::current_exe().expect("current exe");
    let out_file = dir.join("callgrind.out");
    let mut child = Valgrind(
        Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg("--quiet")
            .arg(format!("--callgrind-out-file={}", out_file.display()))
            .arg(exe)
            .env(ROLE_VAR, role)
            .envs(variant.map(|v| ("QRTAG_LOAD_VARIANT", v)))
            .env("QRTAG_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run valgrind (is it installed?)"),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read address");
    let addr: std::net::SocketAddr = line.trim().parse().expect("server printed its address");
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut conn = Connection {
        writer: stream.try_clone().expect("clone"),
        reader: BufReader::new(stream),
        location: None,
    };
    let plain = request(target, None);
    let request = match scan {
        Scan::First => plain,
        Scan::Returning => {
            // The cookie a first scan is given, sent back from then on; the
            // bare handler sets none, so it gets one of the same length.
            let cookie = conn
                .exchange(&plain)
                .unwrap_or_else(|| format!("qrtag={}", "0".repeat(VALUE_LEN)));
            request(target, Some(&cookie))
        }
    };
    let sent_back = conn.run(&request, WARM_UP);
    if role == "qrtag" {
        assert_eq!(
            conn.location.as_deref(),
            Some(target.location),
            "{}",
            target.name
        );
    }
    if let (Scan::Returning, "qrtag") = (scan, role) {
        assert_eq!(
            sent_back.as_deref().map(|c| request.contains(c)),
            Some(true),
            "a returning scan gets its own cookie back"
        );
    }
    control(&child.0, "-z");
    conn.run(&request, FIRST_DUMP);
    control(&child.0, "-d");
    conn.run(&request, SECOND_DUMP);
    control(&child.0, "-d");
    drop(child);
    let dumps = dump_totals(dir);
    assert!(
        dumps.len() >= 2,
        "callgrind wrote {} dumps in {}",
        dumps.len(),
        dir.display()
    );
    (
        dumps[0] as f64 / FIRST_DUMP as f64,
        dumps[1] as f64 / SECOND_DUMP as f64,
    )
}

fn request(target: &Target, cookie: Option<&str>) -> String {
    let cookie = cookie.map_or(String::new(), |c| format!("Cookie: {c}\r\n"));
    let lang = if target.accept_language {
        "Accept-Language: en-GB,en;q=0.9\r\n"
    } else {
        ""
    };
    format!(
        "GET /{} HTTP/1.1\r\nHost: 0x1f.ie\r\nUser-Agent: Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)\r\n{lang}{cookie}\r\n",
        target.key
    )
}

/// Runs `callgrind_control OPTION PID` (zero or dump) and waits for it: the
/// server is idle meanwhile, so the counts hold only the requests between.
fn control(child: &Child, option: &str) {
    let status = Command::new("callgrind_control")
        .arg(option)
        .arg(child.id().to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run callgrind_control");
    assert!(status.success(), "callgrind_control {option} failed");
}

/// The server under valgrind, ended however the count ends (a failed
/// assertion included), so no server outlives the benchmark.
struct Valgrind(Child);

impl Drop for Valgrind {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `totals:` (instructions) of each numbered dump in `dir`, in order.
fn dump_totals(dir: &Path) -> Vec<u64> {
    let mut dumps: Vec<(u32, u64)> = std::fs::read_dir(dir)
        .expect("read dump directory")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let part: u32 = name.strip_prefix("callgrind.out.")?.parse().ok()?;
            let text = std::fs::read_to_string(e.path()).ok()?;
            let total = text
                .lines()
                .find_map(|l| {
                    l.strip_prefix("totals:")
                        .or_else(|| l.strip_prefix("summary:"))
                })?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            Some((part, total))
        })
        .collect();
    dumps.sort();
    dumps.into_iter().map(|(_, total)| total).collect()
}

struct Connection {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    /// The last answer's `Location`.
    location: Option<String>,
}

impl Connection {
    /// Sends `request` `n` times, one at a time, and returns the last
    /// `Set-Cookie` value's `name=value` part.
    fn run(&mut self, request: &str, n: usize) -> Option<String> {
        let mut cookie = None;
        for _ in 0..n {
            cookie = self.exchange(request);
        }
        cookie
    }

    /// One request and its answer, which must be a 302; returns the
    /// `name=value` of its `Set-Cookie`, if any.
    fn exchange(&mut self, request: &str) -> Option<String> {
        self.writer.write_all(request.as_bytes()).expect("send");
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status line");
        assert!(line.starts_with("HTTP/1.1 302"), "expected a 302: {line:?}");
        let (mut length, mut cookie) = (0, None);
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("header");
            if line == "\r\n" || line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("a header line");
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().expect("a length");
            } else if name.eq_ignore_ascii_case("set-cookie") {
                cookie = value.split(';').next().map(str::to_owned);
            } else if name.eq_ignore_ascii_case("location") {
                self.location = Some(value.to_owned());
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).expect("body");
        cookie
    }
}

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
//! second dump over 4,000 (every thread of the process, and the request
//! path alone, below; the first dump shows the count has settled). Every request is `GET /H83if` with an iPhone
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
//! Issue 36, a fair count: callgrind keeps each thread apart
//! (`--separate-threads=yes`), and every row is given twice: the whole
//! process (every thread, as before) and the request path alone, the
//! threads whose dump holds actix-http's connection dispatcher
//! ([`REQUEST_PATH_MARK`]): with one worker, the thread that reads, parses,
//! answers and writes each request, its runtime's reactor and timers
//! included. Left out of the request path: the threads driven by the clock
//! rather than by requests (the store's follower polling on the main
//! runtime, the access log's flusher every 50 ms, the blocking pool they
//! use), whose instructions are per second, not per request; counted per
//! request they grow with how slowly valgrind runs, so two builds run at
//! different loads differ by them alone. They are reported on their own:
//! after the last dump the server sits idle for [`IDLE`] and its
//! instructions per second are counted, whole and request path.
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
/// How long the server sits idle after the last dump, for the clock-driven
/// instructions per second.
const IDLE: std::time::Duration = std::time::Duration::from_secs(3);
/// A demangled name only the thread that serves HTTP/1 requests runs.
const REQUEST_PATH_MARK: &str = "actix_http::h1::dispatcher";

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
            let c = count(role, scan, &dir, &Target::PLAIN, None);
            c.print(scan, role);
            counts.push(c);
        }
        let (bare, qrtag) = (&counts[0], &counts[1]);
        println!(
            "{}: bare {:.0}, qrtag {:.0}, qrtag/bare = {:.3}; request path: bare {:.0}, qrtag {:.0}, qrtag/bare = {:.3}",
            scan.name(),
            bare.whole,
            qrtag.whole,
            qrtag.whole / bare.whole,
            bare.path,
            qrtag.path,
            qrtag.path / bare.path
        );
        // Issue 34: the links with rules.
        for target in [Target::LAST_RULE, Target::TO_URL] {
            let dir = keep.clone().unwrap_or_else(|| scratch.path().to_owned());
            let dir = dir.join(format!("{}-{}", target.key, scan_tag(scan)));
            std::fs::create_dir_all(&dir).expect("dump directory");
            let c = count("qrtag", scan, &dir, &target, None);
            c.print(scan, target.name);
            println!(
                "{}: {} {:.0}, /qrtag without rules = {:.3}; request path {:.0}, {:.3}",
                scan.name(),
                target.name,
                c.whole,
                c.whole / qrtag.whole,
                c.path,
                c.path / qrtag.path
            );
        }
        // Issue 36: three domains, the host asked for the last compared.
        let dir = keep.clone().unwrap_or_else(|| scratch.path().to_owned());
        let dir = dir.join(format!("three-domains-{}", scan_tag(scan)));
        std::fs::create_dir_all(&dir).expect("dump directory");
        let c = count("qrtag", scan, &dir, &Target::PLAIN, Some("three-domains"));
        c.print(scan, "three domains");
        println!(
            "{}: three domains {:.0}, /qrtag with one = {:.3}; request path {:.0}, {:.3}",
            scan.name(),
            c.whole,
            c.whole / qrtag.whole,
            c.path,
            c.path / qrtag.path
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

/// One server's counts: instructions per request in the second dump (and
/// the first, which shows the count has settled), whole process and
/// request path, and per second of idle after it.
struct Count {
    whole: f64,
    whole_settle: f64,
    path: f64,
    path_settle: f64,
    idle_whole: f64,
    idle_path: f64,
}

impl Count {
    fn print(&self, scan: Scan, row: &str) {
        println!(
            "  {:<30} {row}: {:>8.0} instructions/request (first {FIRST_DUMP}: {:.0}), \
             request path {:>8.0} (first {FIRST_DUMP}: {:.0}); idle {:.0}/s, request path {:.0}/s",
            scan.name(),
            self.whole,
            self.whole_settle,
            self.path,
            self.path_settle,
            self.idle_whole,
            self.idle_path
        );
    }
}

/// Instructions of the server `role` per request in the first and the
/// second dump, and per second of idle.
fn count(role: &str, scan: Scan, dir: &Path, target: &Target, variant: Option<&str>) -> Count {
    let exe = std::env::current_exe().expect("current exe");
    let out_file = dir.join("callgrind.out");
    let mut child = Valgrind(
        Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg("--quiet")
            .arg("--separate-threads=yes")
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
    // Clock-driven work: the connection open and quiet, as between scans.
    let idle = std::time::Instant::now();
    std::thread::sleep(IDLE);
    control(&child.0, "-d");
    let idle = idle.elapsed().as_secs_f64();
    drop(child);
    let dumps = dump_totals(dir);
    assert!(
        dumps.len() >= 3,
        "callgrind wrote {} dumps in {}",
        dumps.len(),
        dir.display()
    );
    assert!(
        dumps[1].path > 0,
        "no thread of the second dump ran {REQUEST_PATH_MARK} in {}",
        dir.display()
    );
    Count {
        whole: dumps[1].whole as f64 / SECOND_DUMP as f64,
        whole_settle: dumps[0].whole as f64 / FIRST_DUMP as f64,
        path: dumps[1].path as f64 / SECOND_DUMP as f64,
        path_settle: dumps[0].path as f64 / FIRST_DUMP as f64,
        idle_whole: dumps[2].whole as f64 / idle,
        idle_path: dumps[2].path as f64 / idle,
    }
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

/// One dump's instructions: every thread, and the threads of the request
/// path.
#[derive(Default)]
struct Dump {
    whole: u64,
    path: u64,
}

/// Each numbered dump in `dir`, in order, from its files
/// `callgrind.out.PART-THREAD`: a thread's `totals:` (instructions) counts
/// towards the request path when the thread ran [`REQUEST_PATH_MARK`] in
/// any dump, so the idle dump counts the same threads as the others.
fn dump_totals(dir: &Path) -> Vec<Dump> {
    // (part, thread, instructions, whether the dump names the mark)
    let mut files = Vec::<(u32, u32, u64, bool)>::new();
    for entry in std::fs::read_dir(dir).expect("read dump directory") {
        let entry = entry.expect("dump directory entry");
        let Some(name) = entry.file_name().into_string().ok() else {
            continue;
        };
        let Some((part, thread)) = name
            .strip_prefix("callgrind.out.")
            .and_then(|rest| rest.split_once('-'))
        else {
            continue;
        };
        let part: u32 = part.parse().expect("a dump's part number");
        let thread: u32 = thread.parse().expect("a dump's thread number");
        let text = std::fs::read_to_string(entry.path()).expect("read a dump");
        let total: u64 = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("totals:")
                    .or_else(|| l.strip_prefix("summary:"))
            })
            .and_then(|t| t.split_whitespace().next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no totals in {}", entry.path().display()));
        files.push((part, thread, total, text.contains(REQUEST_PATH_MARK)));
    }
    let serving: std::collections::BTreeSet<u32> = files
        .iter()
        .filter(|f| f.3)
        .map(|&(_, thread, _, _)| thread)
        .collect();
    let mut dumps = std::collections::BTreeMap::<u32, Dump>::new();
    for (part, thread, total, _) in files {
        let dump = dumps.entry(part).or_default();
        dump.whole += total;
        if serving.contains(&thread) {
            dump.path += total;
        }
    }
    dumps.into_values().collect()
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

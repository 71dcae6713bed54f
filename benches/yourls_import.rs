//! `qrtag import --from yourls-sql` of a generated YOURLS dump against
//! `qrtag import` of the same links from qrtag's own JSON lines, in the same
//! run (issue 37).
//!
//! N links (`QRTAG_BENCH_LINKS`, 100,000) and V visits
//! (`QRTAG_BENCH_VISITS`, 1,000,000, spread over the links) are written as
//! a mysqldump writes them (the log table first, extended INSERTs of 1,000
//! rows, escaped strings); the same links as JSON lines with the documents
//! the migration makes (url, title, created_at). Each round
//! (`QRTAG_BENCH_ROUNDS`, 3) times, in turn and alternating which goes
//! first, each whole process into a fresh SQLite database made by `qrtag
//! init`, and reads its peak RSS and CPU time from `wait4`. The figures are medians and
//! the ratios of the medians. `QRTAG_BENCH_QRTAG=PATH` times another build.
//!
//! `cargo bench --bench yourls_import` (release), or `cargo test --bench
//! yourls_import` for a debug build's ratios.

#[path = "support/keys.rs"]
mod keys;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn url(i: u64) -> String {
    format!(
        "https://www.example.com/campaign/{i}?utm_source=qr&p={}",
        i % 97
    )
}

fn write_dump(path: &Path, links: u64, visits: u64) {
    let mut f =
        std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).expect("dump"));
    writeln!(f, "-- MySQL dump 10.13  Distrib 8.0.36, for Linux (x86_64)").expect("w");
    writeln!(f, "CREATE TABLE `yourls_log` (\n  `click_id` int NOT NULL AUTO_INCREMENT,\n  `click_time` datetime NOT NULL,\n  `shorturl` varchar(100) NOT NULL,\n  `referrer` varchar(200) NOT NULL,\n  `user_agent` varchar(255) NOT NULL,\n  `ip_address` varchar(41) NOT NULL,\n  `country_code` char(2) NOT NULL,\n  PRIMARY KEY (`click_id`)\n) ENGINE=InnoDB;").expect("w");
    let mut id = 0u64;
    while id < visits {
        f.write_all(b"INSERT INTO `yourls_log` VALUES ").expect("w");
        let end = (id + 1000).min(visits);
        for v in id..end {
            if v > id {
                f.write_all(b",").expect("w");
            }
            write!(
                f,
                "({},'20{:02}-{:02}-{:02} {:02}:{:02}:{:02}','{}','{}','Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1','203.0.{}.{}','IE')",
                v + 1,
                18 + v % 8,
                1 + v % 12,
                1 + v % 28,
                v % 24,
                v % 60,
                (v / 7) % 60,
                keys::key((v * 7919) % links.max(1)),
                if v % 3 == 0 { "direct".to_owned() } else { format!("https://ref.example/p?q=\\'{}\\'", v % 50) },
                v % 256,
                (v / 256) % 256,
            )
            .expect("w");
        }
        f.write_all(b";\n").expect("w");
        id = end;
    }
    writeln!(f, "CREATE TABLE `yourls_url` (\n  `keyword` varchar(100) NOT NULL DEFAULT '',\n  `url` text NOT NULL,\n  `title` text,\n  `timestamp` timestamp NOT NULL,\n  `ip` varchar(41) NOT NULL,\n  `clicks` int unsigned NOT NULL\n);").expect("w");
    let mut i = 0u64;
    while i < links {
        f.write_all(b"INSERT INTO `yourls_url` VALUES ").expect("w");
        let end = (i + 1000).min(links);
        for l in i..end {
            if l > i {
                f.write_all(b",").expect("w");
            }
            write!(
                f,
                "('{}','{}','Campaign {l}','2019-03-04 05:06:07','198.51.100.1',10)",
                keys::key(l),
                url(l)
            )
            .expect("w");
        }
        f.write_all(b";\n").expect("w");
        i = end;
    }
    writeln!(f, "-- Dump completed on 2026-11-28 12:00:00").expect("w");
    f.flush().expect("flush");
}

fn write_jsonl(path: &Path, links: u64) {
    let mut f =
        std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).expect("jsonl"));
    for l in 0..links {
        let doc = serde_json::json!({
            "_id": keys::key(l),
            "url": url(l),
            "inactive": false,
            "title": format!("Campaign {l}"),
            "created_at": "2019-03-04T05:06:07Z",
        });
        writeln!(f, "{doc}").expect("w");
    }
    f.flush().expect("flush");
}

/// Seconds, peak RSS (bytes) and CPU seconds (user and system) of one
/// `qrtag` run, which must succeed. The CPU time is the process's own, so
/// a machine shared with other work shows in the seconds, not in it.
#[expect(
    clippy::zombie_processes,
    reason = "reaped by wait4, which also gives its resource usage"
)]
fn run(bin: &Path, dir: &Path, args: &[&str]) -> (f64, u64, f64) {
    let start = Instant::now();
    let child = Command::new(bin)
        .env("QRTAG_CONFIG", "/dev/null")
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("qrtag runs");
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, never waited on through std, and
    // both pointers are to live locals.
    let waited = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(waited, pid, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "qrtag {args:?}: {status}"
    );
    let cpu = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (
        secs,
        u64::try_from(usage.ru_maxrss).expect("positive") * 1024,
        cpu(usage.ru_utime) + cpu(usage.ru_stime),
    )
}

fn fresh(bin: &Path, dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("dir");
    let db = dir.join("q.db");
    run(
        bin,
        dir,
        &["--db", "q.db", "--public-url", "https://q.example", "init"],
    );
    db
}

fn main() {
    let links = env_u64("QRTAG_BENCH_LINKS", 100_000);
    let visits = env_u64("QRTAG_BENCH_VISITS", 1_000_000);
    let rounds = env_u64("QRTAG_BENCH_ROUNDS", 3).max(1);
    let bin: PathBuf = std::env::var_os("QRTAG_BENCH_QRTAG")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_qrtag")));
    let work = tempfile::tempdir().expect("tempdir");
    let dump = work.path().join("yourls.sql");
    let jsonl = work.path().join("links.jsonl");
    write_dump(&dump, links, visits);
    write_jsonl(&jsonl, links);
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    println!(
        "{links} links, {visits} visits: dump {:.1} MB, JSON lines {:.1} MB; {rounds} rounds",
        size(&dump) as f64 / 1e6,
        size(&jsonl) as f64 / 1e6
    );
    let (mut from, mut own) = (Vec::new(), Vec::new());
    let (mut from_rss, mut own_rss) = (Vec::new(), Vec::new());
    let (mut from_cpu, mut own_cpu) = (Vec::new(), Vec::new());
    let dump_s = dump.to_str().expect("path");
    let jsonl_s = jsonl.to_str().expect("path");
    for round in 0..rounds {
        let dir = work.path().join("run");
        let migrate = || {
            fresh(&bin, &dir);
            run(
                &bin,
                &dir,
                &[
                    "--db",
                    "q.db",
                    "import",
                    "--from",
                    "yourls-sql",
                    "--access-log",
                    "access.log",
                    dump_s,
                ],
            )
        };
        let plain = || {
            fresh(&bin, &dir);
            run(&bin, &dir, &["--db", "q.db", "import", jsonl_s])
        };
        let (a, b) = if round % 2 == 0 {
            let a = migrate();
            (a, plain())
        } else {
            let b = plain();
            (migrate(), b)
        };
        println!(
            "round {round}: --from yourls-sql {:.2} s, {:.2} s CPU ({:.0} MB), JSON lines {:.2} s, {:.2} s CPU ({:.0} MB)",
            a.0,
            a.2,
            a.1 as f64 / 1e6,
            b.0,
            b.2,
            b.1 as f64 / 1e6
        );
        from_cpu.push(a.2);
        own_cpu.push(b.2);
        from.push(a.0);
        from_rss.push(a.1 as f64);
        own.push(b.0);
        own_rss.push(b.1 as f64);
    }
    let (f, o) = (median(from), median(own));
    let (fr, or) = (median(from_rss), median(own_rss));
    let (fc, oc) = (median(from_cpu), median(own_cpu));
    println!(
        "median: --from yourls-sql {f:.2} s ({fc:.2} s CPU), peak RSS {:.0} MB; qrtag import of JSON lines {o:.2} s ({oc:.2} s CPU), peak RSS {:.0} MB",
        fr / 1e6,
        or / 1e6
    );
    println!(
        "ratio: time {:.2}x, CPU {:.2}x, peak RSS {:.2}x",
        f / o,
        fc / oc,
        fr / or
    );
}

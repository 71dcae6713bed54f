//! Issue 34, "which rule answered": `qrtag stats --by destination` counts
//! scans per logged `Location` (an A/B split's variants apart, a dead
//! link's fallback answers apart under their `~`), checked against awk
//! over the same log file, in every output format, and bounded when a link
//! that appends paths is sent made-up ones.

mod support;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const PHONE: &str = "Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1";
const BOT: &str = "Mozilla%2F5.0%20%28compatible%3B%20Googlebot%2F2.1%3B%20%2Bhttp%3A%2F%2Fwww.google.com%2Fbot.html%29";
const A: &str = "https://example.com/landing?variant=a";
const B: &str = "https://example.com/landing?variant=b";
const GONE: &str = "https://example.com/sold-out";

/// A tracking ID of the server's form (8 + 11 base-62 characters).
fn tracking(n: usize) -> String {
    format!("0Vh3kY2s{n:011}")
}

/// The log's time of `second` seconds after 2026-11-21 00:00 UTC.
fn log_time(second: usize) -> String {
    let t = chrono::DateTime::from_timestamp(1_795_219_200 + second as i64, 0).expect("time");
    t.format("%Y%m%d%H%M%S.0").to_string()
}

/// The lines a server with a 50/50 split on `/menu` writes: each scanner
/// keeps its variant; some scanners refuse cookies; plus HEAD requests, a
/// crawler, 404s, a path appended to the chosen destination, and a dead
/// link's fallback answers (issue 33's `~`).
fn split_log() -> String {
    let mut log = String::new();
    let mut line =
        |time: usize, id: &str, ua: &str, target: &str, status: u16, loc: &str, method: &str| {
            log.push_str(&format!(
                "{} 203.0.113.{} {id} {ua} {target} {status} {loc} {method} -\n",
                log_time(time),
                time % 250
            ));
        };
    let mut t = 0;
    for scanner in 0..60 {
        let variant = if scanner % 7 < 3 { A } else { B };
        let id = if scanner % 5 == 0 {
            "-".to_owned()
        } else {
            tracking(scanner)
        };
        for _ in 0..(1 + scanner % 3) {
            t += 37;
            line(t, &id, PHONE, "/menu", 302, variant, "GET");
        }
    }
    for i in 0..4 {
        t += 11;
        line(t, &tracking(i), PHONE, "/menu", 302, A, "HEAD");
        line(t, "-", BOT, "/menu", 302, B, "GET");
        line(t, "-", PHONE, "/nothing-here", 404, "-", "GET");
        line(
            t,
            &tracking(100 + i),
            PHONE,
            "/poster",
            302,
            &format!("~{GONE}"),
            "GET",
        );
    }
    line(
        t + 1,
        &tracking(3),
        PHONE,
        "/menu/wine",
        302,
        "https://example.com/landing/wine?variant=a",
        "GET",
    );
    log
}

/// Scans per destination counted by awk: GET answered by a redirect, bots
/// (the crawler's `bot` agent) left out; a fallback keeps its `~`.
fn awk_counts(log: &Path) -> BTreeMap<String, u64> {
    let out = Command::new("awk")
        .arg(r#"$6 ~ /^30[12378]$/ && $8 == "GET" && $4 !~ /bot/ { n[$7]++ } END { for (d in n) print d, n[d] }"#)
        .arg(log)
        .output()
        .expect("awk runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| {
            let (d, n) = l.rsplit_once(' ').expect("two fields");
            (d.to_owned(), n.parse().expect("count"))
        })
        .collect()
}

fn stats(args: &[&str]) -> String {
    let out = support::qrtag_bin()
        .arg("stats")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("qrtag runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn an_ab_split_is_counted_per_destination_as_awk_counts_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("access.log");
    std::fs::write(&log, split_log()).expect("log");
    let log_arg = log.to_str().expect("path");
    let expected = awk_counts(&log);
    assert_eq!(
        expected.len(),
        4,
        "two variants, one appended path, one fallback: {expected:?}"
    );
    assert!(expected[A] > 10 && expected[B] > 10, "{expected:?}");

    // CSV: dimension,value,scans,new,returning.
    let csv = stats(&["--by", "destination", "--format", "csv", log_arg]);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("dimension,value,scans,new,returning"));
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    let counted: BTreeMap<String, u64> = rows
        .iter()
        .map(|r| {
            assert_eq!(r[0], "destination");
            (r[1].clone(), r[2].parse().expect("scans"))
        })
        .collect();
    assert_eq!(counted, expected);
    // Busiest first.
    let scans: Vec<u64> = rows.iter().map(|r| r[2].parse().expect("scans")).collect();
    assert!(scans.windows(2).all(|w| w[0] >= w[1]), "{csv}");
    // A fallback answer has no new or returning scanner: it is no scan.
    let fallback = rows
        .iter()
        .find(|r| r[1] == format!("~{GONE}"))
        .expect("fallback row");
    assert_eq!(
        (
            fallback[2].as_str(),
            fallback[3].as_str(),
            fallback[4].as_str()
        ),
        ("4", "0", "0")
    );
    // The fallback answers stay apart in the key's own counts too.
    let keys = stats(&["--format", "json", log_arg]);
    let keys: serde_json::Value = serde_json::from_str(&keys).expect("json");
    let scans_total: u64 = expected
        .iter()
        .filter(|(d, _)| !d.starts_with('~'))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(keys["total"]["scans"], scans_total, "{keys}");

    // JSON: the same rows.
    let json = stats(&["--by", "destination", "--format", "json", log_arg]);
    let json: serde_json::Value = serde_json::from_str(&json).expect("json");
    let b = &json["breakdowns"][0];
    assert_eq!(b["by"], "destination");
    let from_json: BTreeMap<String, u64> = b["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["value"].as_str().expect("value").to_owned(),
                r["scans"].as_u64().expect("scans"),
            )
        })
        .collect();
    assert_eq!(from_json, expected);

    // The table: each destination whole, with its count.
    let table = stats(&["--by", "destination", log_arg]);
    assert!(
        table.contains("Scans by destination, bots left out"),
        "{table}"
    );
    for (d, n) in &expected {
        let row = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(d))
            .unwrap_or_else(|| panic!("{d} in\n{table}"));
        assert_eq!(
            row.split_whitespace().nth(1),
            Some(n.to_string().as_str()),
            "{row}"
        );
    }

    // The chart: one bar per destination, the variants told apart by
    // their ends (a label is cut in the middle).
    let svg = dir.path().join("d.svg");
    let svg_arg = svg.to_str().expect("path");
    stats(&["--by", "destination", "--chart", svg_arg, log_arg]);
    let drawn = std::fs::read_to_string(&svg).expect("chart written");
    for d in ["…/landing?variant=a", "…/landing?variant=b"] {
        assert!(drawn.contains(d), "{d} labelled in the chart:\n{drawn}");
    }
}

/// Peak resident memory of one `qrtag stats` run, from `wait4`.
#[expect(
    clippy::zombie_processes,
    reason = "reaped by wait4, which also gives its resource usage"
)]
fn peak_of_stats(args: &[&str]) -> (String, u64) {
    let child = support::qrtag_bin()
        .arg("stats")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("qrtag runs");
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    let mut stdout = child.stdout.expect("stdout");
    let mut out = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut out).expect("read");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for, and both
    // pointers are to live locals.
    let waited = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    assert_eq!(waited, pid, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{status}"
    );
    (
        out,
        u64::try_from(usage.ru_maxrss).expect("positive") * 1024,
    )
}

/// A link that appends paths answers one destination per path a client
/// makes up: 40,000 made-up paths of 4 KiB would be 160 MB of names; past
/// the bound they count together, and the run's peak stays near that of
/// the same lines (the same made-up keys) all sent to one destination.
#[test]
fn made_up_destinations_cost_a_bounded_amount_of_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, distinct: bool| {
        let path = dir.path().join(name);
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("log"));
        let filler = "x".repeat(4000);
        for i in 0..40_000 {
            let path_part = format!("{i:08}{filler}");
            let sent_to = if distinct { path_part.as_str() } else { "" };
            writeln!(
                f,
                "{} 203.0.113.7 - {PHONE} /docs/{path_part} 302 https://example.com/docs/{sent_to} GET -",
                log_time(i)
            )
            .expect("write");
        }
        f.flush().expect("flush");
        path
    };
    let same = write("same.log", false);
    let made_up = write("made-up.log", true);
    let by = ["--by", "destination", "--format", "csv"];
    let (base_out, base) = peak_of_stats(&[&by[..], &[same.to_str().expect("path")]].concat());
    let (out, peak) = peak_of_stats(&[&by[..], &[made_up.to_str().expect("path")]].concat());
    assert_eq!(base_out.lines().count(), 2, "one destination");
    let other = out
        .lines()
        .find(|l| l.starts_with("destination,(other destinations),"))
        .unwrap_or_else(|| panic!("an other row"));
    let named = out.lines().count() - 2;
    let other_scans: usize = other
        .split(',')
        .nth(2)
        .expect("scans")
        .parse()
        .expect("count");
    assert_eq!(named + other_scans, 40_000, "every scan counted once");
    assert!(
        named < 40_000 / 8 * 4 && named > 1000,
        "{named} named apart"
    );
    println!(
        "peak: {} MB with one destination, {} MB with 40,000 made-up ones ({:.2}x)",
        base >> 20,
        peak >> 20,
        peak as f64 / base as f64
    );
    assert!(
        peak < base + (48 << 20),
        "made-up destinations: {} MB against {} MB",
        peak >> 20,
        base >> 20
    );
}

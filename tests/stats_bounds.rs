//! Issue 19, item 14: `qrtag stats` bounded by its input's size, not its
//! dates or a second copy of its report. Run as a real process; its peak
//! memory is read from `wait4`'s resource usage of that one child.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const LINE_TAIL: &str = " 198.51.100.7 - Mozilla%2F5.0%20%28iPhone%29 ";

/// One phone scan of `/{key}` at `time` (`YYYYMMDDhhmmss`).
fn scan(time: &str, key: &str) -> String {
    format!("{time}.0{LINE_TAIL}/{key} 302 https://example.com/ GET -\n")
}

/// What one run of `qrtag stats ARGS` gave: exit code, stdout, stderr, and
/// its peak resident memory in bytes.
struct Run {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
    peak: u64,
}

#[expect(
    clippy::zombie_processes,
    reason = "reaped by wait4, which also gives its resource usage"
)]
fn stats(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let child = Command::new(env!("CARGO_BIN_EXE_qrtag"))
        .env("QRTAG_CONFIG", "/dev/null")
        .arg("stats")
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("out"))
        .stderr(std::fs::File::create(&err).expect("err"))
        .spawn()
        .expect("qrtag runs");
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for (`child` is never
    // waited on through std), and both pointers are to live locals.
    let waited = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    assert_eq!(waited, pid, "wait4");
    assert!(libc::WIFEXITED(status), "exited: {status}");
    Run {
        code: libc::WEXITSTATUS(status),
        stdout: std::fs::read(out).expect("stdout"),
        stderr: std::fs::read_to_string(err).expect("stderr"),
        // Linux reports kilobytes.
        peak: u64::try_from(usage.ru_maxrss).expect("positive") * 1024,
    }
}

fn write_log(path: &Path, lines: impl Iterator<Item = String>) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("log"));
    for line in lines {
        f.write_all(line.as_bytes()).expect("write");
    }
    f.flush().expect("flush");
}

/// Two scans ten thousand years apart were 3.65 million daily bars: 12 s and
/// 450 MB to draw a picture 1000 pixels wide. Now refused before any
/// output, naming the span and what to do.
#[test]
fn a_chart_with_more_periods_than_pixels_is_refused_naming_the_span() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("access.log");
    write_log(
        &log,
        [
            scan("00000101120000", "H83if"),
            scan("99991231120000", "H83if"),
        ]
        .into_iter(),
    );
    let chart = dir.path().join("scans.svg");
    let (log, chart) = (log.to_str().expect("utf-8"), chart.to_str().expect("utf-8"));
    let run = stats(&[log, "--chart", chart]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "qrtag: a chart by day from 0000-01-01 to 9999-12-31 needs 3652425 bars, \
         more than its 1000 pixels across: narrow it with --since and --until\n"
    );
    assert!(run.stdout.is_empty(), "no report before the refusal");
    assert!(!Path::new(chart).exists());

    // Six years by day: weeks would fit, and are suggested, and do.
    let log6 = dir.path().join("six-years.log");
    write_log(
        &log6,
        [
            scan("20200106120000", "H83if"),
            scan("20260105120000", "H83if"),
        ]
        .into_iter(),
    );
    let log6 = log6.to_str().expect("utf-8");
    let run = stats(&[log6, "--chart", chart]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.ends_with(", or use --by week\n"),
        "{}",
        run.stderr
    );
    let run = stats(&[log6, "--chart", chart, "--by", "week"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(Path::new(chart).exists());
}

/// `--format json` built the whole report a second time as a JSON tree
/// before writing it (1.1 GB for 300,000 keys). Streamed, it costs what CSV
/// does, which was always written row by row: the same keys, the same run,
/// the peaks compared.
#[test]
fn json_over_many_keys_costs_what_csv_does() {
    const KEYS: usize = 100_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("access.log");
    write_log(
        &log,
        (0..KEYS).map(|i| scan("20261122120000", &format!("k{i:07}"))),
    );
    let log = log.to_str().expect("utf-8");
    let csv = stats(&[log, "--format", "csv"]);
    let json = stats(&[log, "--format", "json"]);
    assert_eq!(
        (csv.code, json.code),
        (0, 0),
        "{}{}",
        csv.stderr,
        json.stderr
    );
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(report["keys"].as_array().map(Vec::len), Some(KEYS));
    assert_eq!(report["keys"][0]["scans"], 1);
    let slack = csv.peak / 4 + (8 << 20);
    assert!(
        json.peak <= csv.peak + slack,
        "JSON peaked at {} MiB, CSV at {} MiB",
        json.peak >> 20,
        csv.peak >> 20
    );
}

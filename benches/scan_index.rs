//! The console's scan index at scale: a generated log of 10M lines over 1M
//! keys (`QRTAG_SCAN_INDEX_LINES`, `QRTAG_SCAN_INDEX_KEYS` for other sizes),
//! written to a temporary directory. Reports, each against a baseline from
//! the same run:
//!
//! - the first build (rotated file and live file read, every line counted)
//!   in lines/s, against `qrtag stats` aggregating the same files;
//! - resident memory the built index adds, per key and per line, with the
//!   breakdowns (device, OS, browser, places from the test GeoIP database,
//!   referrer, hour × weekday) against without them: each built in a child
//!   process of its own, so neither sees the other's freed pages;
//! - a restart: loading the checkpoint and catching up with 1% new lines,
//!   against the first build, and the bytes it read against those appended;
//! - query times (`key`, a page of 50 `scans_since`, `top_keys(20)`,
//!   `daily_totals` over 90 days, a key's 90-day series), against a lookup
//!   in a `HashMap` of the same keys.
//!
//! `QRTAG_SCAN_INDEX_JUNK=P` makes P% of the lines 404s of random paths,
//! as scanners send a long-running server.
//!
//! `cargo bench --bench scan_index` (a quick run:
//! `QRTAG_SCAN_INDEX_LINES=200000 QRTAG_SCAN_INDEX_KEYS=20000 cargo bench --bench scan_index`)

#[path = "support/keys.rs"]
mod keys;
#[path = "support/log_lines.rs"]
mod log_lines;

use std::collections::HashMap;
use std::fs::File;
use std::hint::black_box;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate};
use qrtag::scan_index::{self, ScanIndex, ScanIndexSettings};
use qrtag::stats::aggregate::{Aggregator, Filter};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use keys::key;
use log_lines::Generator;

const DAYS: i64 = 365;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn wait(index: &ScanIndex, what: &str, done: impl Fn(&ScanIndex) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(3600);
    while !done(index) {
        assert!(Instant::now() < deadline, "{what} took over an hour");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Mean time of `f` over `runs`, in nanoseconds.
fn time_ns(runs: u32, mut f: impl FnMut(u32)) -> f64 {
    let t = Instant::now();
    for i in 0..runs {
        f(i);
    }
    t.elapsed().as_nanos() as f64 / f64::from(runs)
}

/// Set in a child: build the index of the log at this path (with
/// `QRTAG_SCAN_INDEX_VARIANT` = `plain` or `breakdowns`) and print what it
/// took.
const CHILD_LOG: &str = "QRTAG_SCAN_INDEX_CHILD_LOG";
const VARIANT: &str = "QRTAG_SCAN_INDEX_VARIANT";

fn settings_for(log: &std::path::Path, breakdowns: bool) -> ScanIndexSettings {
    let geoip =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/geoip/test.mmdb");
    ScanIndexSettings {
        checkpoint_interval: Duration::from_secs(3600),
        breakdowns: breakdowns.then(|| {
            let db = qrtag::stats::dimensions::place::GeoDb::open(&geoip).expect("test mmdb");
            scan_index::BreakdownSettings::new(chrono_tz::Tz::UTC, Some((geoip.as_path(), db)))
        }),
        ..ScanIndexSettings::beside(log)
    }
}

/// One build in this process, alone: `rss=… approx=… build_ns=… keys=…`.
fn child(log: PathBuf, breakdowns: bool) -> std::io::Result<()> {
    let mut settings = settings_for(&log, breakdowns);
    settings.checkpoint = log.with_file_name(format!(".child-{breakdowns}.scan-index"));
    let rss_before = rss();
    let t = Instant::now();
    let running = scan_index::start(log.clone(), settings)?;
    let index = running.index();
    wait(&index, "the first build", ScanIndex::caught_up);
    let build = t.elapsed();
    let rss_added = rss().saturating_sub(rss_before);
    let (keys, approx) = index.with_state(|s| (s.key_count(), s.approx_bytes()));
    println!(
        "rss={rss_added} approx={approx} build_ns={} keys={keys}",
        build.as_nanos()
    );
    drop(running);
    Ok(())
}

/// Runs [`child`] in a new process of this benchmark and reads its line.
fn build_apart(log: &std::path::Path, breakdowns: bool) -> std::io::Result<(u64, u64, Duration)> {
    let out = std::process::Command::new(std::env::current_exe()?)
        .env(CHILD_LOG, log)
        .env(VARIANT, if breakdowns { "breakdowns" } else { "plain" })
        .stderr(std::process::Stdio::inherit())
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| -> u64 {
        text.split_whitespace()
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} from the child: {text}"))
    };
    Ok((
        field("rss"),
        field("approx"),
        Duration::from_nanos(field("build_ns")),
    ))
}

fn main() -> std::io::Result<()> {
    if let Some(log) = std::env::var_os(CHILD_LOG) {
        return child(
            PathBuf::from(log),
            std::env::var(VARIANT).as_deref() == Ok("breakdowns"),
        );
    }
    let lines = env_or("QRTAG_SCAN_INDEX_LINES", 10_000_000);
    let keys = env_or("QRTAG_SCAN_INDEX_KEYS", 1_000_000);
    let junk = env_or("QRTAG_SCAN_INDEX_JUNK", 0) as u32;
    let dir = tempfile::tempdir()?;
    let log: PathBuf = dir.path().join("access.log");
    let rotated = dir.path().join("access.log.1");

    let t = Instant::now();
    let mut generator = Generator::new(
        (0..keys).map(|i| format!("/{}", key(i))).collect(),
        lines,
        DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default(),
        DAYS,
    )
    .with_junk(junk);
    let old = lines * 9 / 10;
    let mut size = generator.write(old, &mut BufWriter::new(File::create(&rotated)?))?;
    size += generator.write(lines - old, &mut BufWriter::new(File::create(&log)?))?;
    println!(
        "log: {lines} lines over {keys} keys, {junk}% random 404 paths, {:.2} GB in access.log.1 and access.log, generated in {:.1?}",
        size as f64 / 1e9,
        t.elapsed()
    );

    // Memory, each variant built alone in a process of its own.
    let (plain_rss, plain_approx, plain_build) = build_apart(&log, false)?;
    let (with_rss, with_approx, with_build) = build_apart(&log, true)?;
    println!(
        "breakdowns: +{:.0} MB resident with them | baseline without: +{:.0} MB | ratio {:.2} (tables {:.0} MB vs {:.0} MB, {:.2}); build {:.1?} vs {:.1?}, ratio {:.2}",
        with_rss as f64 / 1e6,
        plain_rss as f64 / 1e6,
        with_rss as f64 / plain_rss.max(1) as f64,
        with_approx as f64 / 1e6,
        plain_approx as f64 / 1e6,
        with_approx as f64 / plain_approx.max(1) as f64,
        with_build,
        plain_build,
        with_build.as_secs_f64() / plain_build.as_secs_f64(),
    );

    // The first build (with the breakdowns), with the process's memory
    // before and after.
    let settings = settings_for(&log, true);
    let rss_before = rss();
    let t = Instant::now();
    let running = scan_index::start(log.clone(), settings.clone())?;
    let index = running.index();
    wait(&index, "the first build", ScanIndex::caught_up);
    let build = t.elapsed();
    let rss_added = rss().saturating_sub(rss_before);
    let t = Instant::now();
    wait(&index, "the first checkpoint", |i| {
        i.progress().checkpoints_written.load(Ordering::Relaxed) >= 1
    });
    let save = t.elapsed();
    let (index_keys, approx) = index.with_state(|s| (s.key_count() as u64, s.approx_bytes()));
    running.stop();
    drop(index);

    // The baseline: qrtag stats over the same files, on one core too.
    let t = Instant::now();
    let mut agg = Aggregator::new(Filter::default());
    for f in [&rotated, &log] {
        qrtag::stats::read_file(f, &mut agg, &indicatif::ProgressBar::hidden())
            .map_err(std::io::Error::other)?;
    }
    let report = black_box(agg.finish());
    let stats_time = t.elapsed();
    let per_s = |d: Duration| lines as f64 / d.as_secs_f64();
    println!(
        "first build: {:.1?}, {:.0} lines/s | baseline qrtag stats: {:.1?}, {:.0} lines/s | ratio {:.2}",
        build,
        per_s(build),
        stats_time,
        per_s(stats_time),
        build.as_secs_f64() / stats_time.as_secs_f64()
    );
    let checkpoint_size = std::fs::metadata(&settings.checkpoint)?.len();
    println!(
        "memory: +{:.0} MB resident ({:.0} B a key, {:.1} B a line; tables {:.0} MB), {index_keys} keys | checkpoint {:.0} MB written in {:.1?}",
        rss_added as f64 / 1e6,
        rss_added as f64 / index_keys as f64,
        rss_added as f64 / lines as f64,
        approx as f64 / 1e6,
        checkpoint_size as f64 / 1e6,
        save,
    );
    drop(report);

    // A restart with 1% new lines.
    let new_lines = (lines / 100).max(1);
    let appended = generator.write(
        new_lines,
        &mut std::fs::OpenOptions::new().append(true).open(&log)?,
    )?;
    let t = Instant::now();
    let running = scan_index::start(log.clone(), settings.clone())?;
    let index = running.index();
    wait(&index, "the restart", ScanIndex::caught_up);
    let restart = t.elapsed();
    let read = index.progress().bytes_read.load(Ordering::Relaxed);
    println!(
        "restart: checkpoint loaded and {new_lines} new lines read in {:.2?} | baseline first build {:.1?} | ratio {:.3}; read {read} bytes for {appended} appended",
        restart,
        build,
        restart.as_secs_f64() / build.as_secs_f64()
    );

    // Queries, against a HashMap lookup of the same keys.
    let mut rng = StdRng::seed_from_u64(7);
    let sample: Vec<String> = (0..100_000)
        .map(|_| key(rng.random_range(0..keys)))
        .collect();
    let map: HashMap<String, u64, foldhash::fast::RandomState> =
        (0..keys).map(|i| (key(i), i)).collect();
    let lookup = time_ns(100_000, |i| {
        black_box(map.get(&sample[i as usize]));
    });
    let last_day = NaiveDate::from_ymd_opt(2026, 12, 31).unwrap_or_default();
    let month_ago = last_day - chrono::Duration::days(29);
    let quarter_ago = last_day - chrono::Duration::days(89);
    let key_q = time_ns(100_000, |i| {
        black_box(index.key(&sample[i as usize]));
    });
    let page = time_ns(2_000, |i| {
        let start = (i as usize * 50) % (sample.len() - 50);
        let rows: Vec<&str> = sample[start..start + 50]
            .iter()
            .map(String::as_str)
            .collect();
        black_box(index.scans_since(&rows, month_ago));
    });
    let series = time_ns(10_000, |i| {
        black_box(index.key_days(&sample[i as usize], quarter_ago, last_day));
    });
    let top = time_ns(5, |_| {
        black_box(index.top_keys(20, month_ago));
    });
    let pass = time_ns(5, |_| {
        black_box(map.values().copied().max());
    });
    let daily = time_ns(10_000, |_| {
        black_box(index.daily_totals(quarter_ago, last_day));
    });
    println!("queries (mean) | baseline HashMap lookup {lookup:.0} ns");
    println!(
        "  key(k)                      {key_q:>12.0} ns  ({:.1}x)",
        key_q / lookup
    );
    println!(
        "  50 x scans_since(30 days)   {page:>12.0} ns  ({:.1}x 50 lookups)",
        page / (50.0 * lookup)
    );
    println!(
        "  key_days(k, 90 days)        {series:>12.0} ns  ({:.1}x)",
        series / lookup
    );
    println!(
        "  top_keys(20, 30 days)       {:>12.2} ms  (one pass over the HashMap: {:.2} ms)",
        top / 1e6,
        pass / 1e6
    );
    println!(
        "  daily_totals(90 days)       {daily:>12.0} ns  ({:.1}x)",
        daily / lookup
    );
    running.stop();
    Ok(())
}

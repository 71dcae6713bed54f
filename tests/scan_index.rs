//! The scan index against real files: appends, a partial line, rotation by
//! rename as logrotate does it, gzip of an old file, copytruncate, restarts
//! from a checkpoint and a damaged checkpoint. After each, the index must
//! say what `qrtag stats` says over the same files, and a restart must read
//! only the bytes written since the checkpoint.

#[path = "support/poll.rs"]
mod poll;

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use flate2::Compression;
use flate2::write::GzEncoder;
use qrtag::scan_index::{self, RunningIndex, ScanIndex, ScanIndexSettings};
use qrtag::stats::aggregate::{Aggregator, Filter, Report};
use qrtag::values::link_key::LinkKey;

const TIMEOUT: Duration = Duration::from_secs(10);

const IPHONE: &str =
    "Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29";
const BOT: &str = "Mozilla%2F5.0%20%28compatible%3B%20Googlebot%2F2.1%29";

/// `n` lines numbered from `from`: scans of a few keys by a few phones,
/// bots, HEADs and 404s mixed in, over several days.
fn lines(from: usize, n: usize) -> String {
    let mut out = String::new();
    for i in from..from + n {
        let key = ["H83if", "docs/api", "Zq7Pz", "menu"][i % 4];
        let id = match i % 5 {
            0 => "-".to_owned(),
            k => format!("0Vh3kY2s4fLq9ZxA0{k:02}"),
        };
        let (ua, method, status) = match i % 7 {
            0 => (BOT, "GET", 302),
            1 => (IPHONE, "HEAD", 302),
            2 => (IPHONE, "GET", 404),
            _ => (IPHONE, "GET", 302),
        };
        let location = if status == 302 {
            "https://example.com/"
        } else {
            "-"
        };
        out.push_str(&format!(
            "202611{:02}{:02}{:02}00.0 192.0.2.1 {id} {ua} /{key} {status} {location} {method} -\n",
            10 + i / 40 % 20,
            i % 24,
            i % 60,
        ));
    }
    out
}

fn append(path: &Path, text: &str) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open log");
    f.write_all(text.as_bytes()).expect("append");
}

fn gzip(text: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
    enc.write_all(text).expect("gzip");
    enc.finish().expect("gzip")
}

/// `qrtag stats` over `files`.
fn stats(files: &[PathBuf]) -> Report {
    let mut agg = Aggregator::new(Filter::default());
    for f in files {
        qrtag::stats::read_file(f, &mut agg, &indicatif::ProgressBar::hidden()).expect("stats");
    }
    agg.finish()
}

/// The totals, and every path that can be a link key, as `qrtag stats`
/// counts them; other paths only in the totals.
fn assert_agrees(index: &ScanIndex, files: &[PathBuf]) {
    let report = stats(files);
    let links: Vec<_> = report
        .keys
        .iter()
        .filter(|k| LinkKey::is_valid(&k.key))
        .collect();
    index.with_state(|s| {
        assert_eq!(s.lines_read(), report.lines_read, "lines");
        assert_eq!(s.malformed(), report.malformed, "malformed lines");
        assert_eq!(s.key_count(), links.len(), "keys");
    });
    assert_eq!(index.totals(), report.total, "totals");
    for k in links {
        assert_eq!(index.key(&k.key), k.stats, "key {}", k.key);
    }
}

struct Log {
    _dir: tempfile::TempDir,
    path: PathBuf,
    settings: ScanIndexSettings,
}

impl Log {
    fn new() -> Log {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("access.log");
        let mut settings = ScanIndexSettings::beside(&path);
        settings.poll_interval = Duration::from_millis(5);
        settings.checkpoint_interval = Duration::from_secs(3600);
        Log {
            _dir: dir,
            path,
            settings,
        }
    }

    fn rotated(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    }

    fn start(&self) -> RunningIndex {
        scan_index::start(self.path.clone(), self.settings.clone()).expect("start")
    }
}

fn polls(index: &ScanIndex) -> u64 {
    index.progress().polls.load(Ordering::Relaxed)
}

/// Waits until the index has counted `lines` lines, then for two more
/// polls (the second begun after the first ended, so after everything on
/// disk now was there to read), and checks that nothing more was counted.
async fn settle(index: &Arc<ScanIndex>, lines: u64) {
    poll::until(TIMEOUT, &format!("{lines} lines counted"), || {
        let n = index.with_state(|s| s.lines_read());
        std::future::ready((n >= lines && index.caught_up()).then_some(()))
    })
    .await;
    two_more_polls(index).await;
    assert_eq!(index.with_state(|s| s.lines_read()), lines, "counted twice");
}

async fn two_more_polls(index: &Arc<ScanIndex>) {
    let target = polls(index) + 2;
    poll::until(TIMEOUT, "two more polls", || {
        std::future::ready((polls(index) >= target).then_some(()))
    })
    .await;
}

fn bytes_read(index: &ScanIndex) -> u64 {
    index.progress().bytes_read.load(Ordering::Relaxed)
}

#[tokio::test]
async fn appended_lines_are_counted_and_a_partial_line_waits() {
    let log = Log::new();
    let running = log.start();
    let index = running.index();
    // The log does not exist yet: the index waits for it.
    two_more_polls(&index).await;
    append(&log.path, &lines(0, 30));
    settle(&index, 30).await;

    let next = lines(30, 1);
    let (head, tail) = next.split_at(next.len() / 2);
    append(&log.path, head);
    two_more_polls(&index).await;
    assert_eq!(
        index.with_state(|s| s.lines_read()),
        30,
        "half a line counted"
    );
    append(&log.path, tail);
    settle(&index, 31).await;
    assert_agrees(&index, std::slice::from_ref(&log.path));
    running.stop();
}

/// Scanners probing paths that are no link keys (with dots, percent
/// signs, `_`, the root) get no key each: every link still agrees with
/// `qrtag stats`, and so do the totals, across a restart.
#[tokio::test]
async fn junk_paths_are_in_the_totals_without_a_key_each() {
    let log = Log::new();
    let junk = |from: usize, n: usize| -> String {
        (from..from + n)
            .map(|i| {
                let path = match i % 4 {
                    0 => format!("/wp-login{i}.php"),
                    1 => format!("/.env{i}"),
                    2 => format!("/_probe{i}"),
                    _ => "/".to_owned(),
                };
                format!(
                    "2026111{}0{}0000.0 192.0.2.9 - {IPHONE} {path} 404 - GET -\n",
                    i % 10,
                    i % 10
                )
            })
            .collect()
    };
    append(&log.path, &(lines(0, 40) + &junk(0, 200) + &lines(40, 40)));
    let running = log.start();
    let index = running.index();
    settle(&index, 280).await;
    assert_agrees(&index, std::slice::from_ref(&log.path));
    assert_eq!(index.with_state(|s| s.key_count()), 4, "only the link keys");
    running.stop();

    append(&log.path, &(junk(200, 50) + &lines(80, 20)));
    let running = log.start();
    let index = running.index();
    settle(&index, 350).await;
    assert_agrees(&index, std::slice::from_ref(&log.path));
    assert_eq!(index.with_state(|s| s.other_paths().requests), 250);
    running.stop();
}

#[tokio::test]
async fn rotation_by_rename_counts_lines_written_to_the_old_file_after_it() {
    let log = Log::new();
    append(&log.path, &lines(0, 20));
    let running = log.start();
    let index = running.index();
    settle(&index, 20).await;

    // logrotate: rename, then create an empty file; qrtag writes to the old
    // one until SIGHUP reopens the path.
    let old = log.rotated(".1");
    fs::rename(&log.path, &old).expect("rename");
    append(&old, &lines(20, 5));
    two_more_polls(&index).await;
    fs::File::create(&log.path).expect("create");
    two_more_polls(&index).await;
    append(&old, &lines(25, 3));
    two_more_polls(&index).await;
    // Reopened: new lines go to the new file only.
    append(&log.path, &lines(28, 7));
    settle(&index, 35).await;
    assert_eq!(index.progress().rotations.load(Ordering::Relaxed), 1);
    assert_eq!(index.progress().files_completed.load(Ordering::Relaxed), 1);
    assert_agrees(&index, &[old, log.path.clone()]);
    running.stop();
}

#[tokio::test]
async fn copytruncate_reads_the_copy_s_tail_then_the_file_from_the_start() {
    let log = Log::new();
    append(&log.path, &lines(0, 10));
    let running = log.start();
    let index = running.index();
    settle(&index, 10).await;

    // Written, then copied and truncated, maybe before the index read it.
    append(&log.path, &lines(10, 5));
    let copy = log.rotated(".1");
    fs::copy(&log.path, &copy).expect("copy");
    OpenOptions::new()
        .write(true)
        .open(&log.path)
        .expect("open")
        .set_len(0)
        .expect("truncate");
    append(&log.path, &lines(15, 4));
    settle(&index, 19).await;
    assert_eq!(index.progress().truncations.load(Ordering::Relaxed), 1);
    assert_agrees(&index, &[copy, log.path.clone()]);
    running.stop();
}

#[tokio::test]
async fn a_restart_reads_only_what_was_written_since_across_rotations_and_gzip() {
    let log = Log::new();
    append(&log.path, &lines(0, 10));
    let running = log.start();
    let index = running.index();
    settle(&index, 10).await;
    let one = log.rotated(".1");
    fs::rename(&log.path, &one).expect("rename");
    append(&log.path, &lines(10, 10));
    settle(&index, 20).await;
    running.stop();
    assert!(log.settings.checkpoint.exists(), "no checkpoint written");

    // While the server is down, the next rotation: .1 is compressed to
    // .2.gz, the live file becomes .1 (with lines written before the
    // reopen), and a new live file starts.
    let two_gz = log.rotated(".2.gz");
    fs::write(&two_gz, gzip(&fs::read(&one).expect("read"))).expect("gzip");
    fs::remove_file(&one).expect("remove");
    fs::rename(&log.path, &one).expect("rename");
    let written_since = lines(20, 5) + &lines(25, 6);
    append(&one, &lines(20, 5));
    append(&log.path, &lines(25, 6));

    let running = log.start();
    let index = running.index();
    settle(&index, 31).await;
    assert_eq!(
        bytes_read(&index),
        written_since.len() as u64,
        "read more than the new lines"
    );
    assert_agrees(&index, &[two_gz.clone(), one.clone(), log.path.clone()]);
    running.stop();

    // And once more with nothing new: nothing is read at all.
    let running = log.start();
    let index = running.index();
    settle(&index, 31).await;
    assert_eq!(bytes_read(&index), 0);
    assert_agrees(&index, &[two_gz, one, log.path.clone()]);
    running.stop();
}

#[tokio::test]
async fn a_first_start_reads_rotated_files_oldest_first_plain_or_gzip() {
    let log = Log::new();
    fs::write(log.rotated(".3.gz"), gzip(lines(0, 12).as_bytes())).expect("write");
    fs::write(log.rotated(".2"), gzip(lines(12, 7).as_bytes())).expect("write");
    fs::write(log.rotated(".1"), lines(19, 9) + "cut short").expect("write");
    append(&log.path, &lines(28, 4));
    let running = log.start();
    let index = running.index();
    // The cut line of `.1` counts as one malformed line, as in `qrtag stats`.
    settle(&index, 33).await;
    let files: Vec<PathBuf> = [".3.gz", ".2", ".1", ""]
        .iter()
        .map(|s| log.rotated(s))
        .collect();
    assert_agrees(&index, &files);
    assert_eq!(index.with_state(|s| s.malformed()), 1);
    running.stop();
}

#[tokio::test]
async fn date_named_rotations_are_read_too() {
    // logrotate's `dateext`: `access.log-YYYYMMDD`, compressed a day later.
    let log = Log::new();
    fs::write(log.rotated("-20261122.gz"), gzip(lines(0, 5).as_bytes())).expect("write");
    fs::write(log.rotated("-20261123"), lines(5, 6)).expect("write");
    append(&log.path, &lines(11, 3));
    let running = log.start();
    let index = running.index();
    settle(&index, 14).await;
    let files: Vec<PathBuf> = ["-20261122.gz", "-20261123", ""]
        .iter()
        .map(|s| log.rotated(s))
        .collect();
    assert_agrees(&index, &files);
    running.stop();
}

#[tokio::test]
async fn a_damaged_checkpoint_is_reported_and_the_logs_read_again() {
    let log = Log::new();
    append(&log.path, &lines(0, 40));
    let running = log.start();
    settle(&running.index(), 40).await;
    running.stop();
    let mut bytes = fs::read(&log.settings.checkpoint).expect("checkpoint");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    fs::write(&log.settings.checkpoint, bytes).expect("damage");

    let running = log.start();
    let index = running.index();
    settle(&index, 40).await;
    let size = fs::metadata(&log.path).expect("log").len();
    assert_eq!(bytes_read(&index), size, "not a full rebuild");
    assert_agrees(&index, std::slice::from_ref(&log.path));
    running.stop();
}

#[tokio::test]
async fn a_checkpoint_of_another_log_is_not_used() {
    let log = Log::new();
    append(&log.path, &lines(0, 8));
    let running = log.start();
    settle(&running.index(), 8).await;
    running.stop();

    let other = Log::new();
    append(&other.path, &lines(100, 3));
    fs::copy(&log.settings.checkpoint, &other.settings.checkpoint).expect("copy");
    let running = other.start();
    let index = running.index();
    settle(&index, 3).await;
    assert_agrees(&index, std::slice::from_ref(&other.path));
    running.stop();
}

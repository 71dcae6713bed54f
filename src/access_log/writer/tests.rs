use super::*;

use std::sync::mpsc;

/// Polls `cond` until it holds or `timeout` passes; returns whether it held.
fn eventually(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn line(log: &AccessLog, text: &str) {
    log.append(|buf| {
        buf.extend_from_slice(text.as_bytes());
        buf.push(b'\n');
    });
}

fn options() -> WriterOptions {
    WriterOptions {
        flush_interval: Duration::from_millis(20),
        ..WriterOptions::default()
    }
}

#[test]
fn target_parses() {
    assert_eq!("-".parse(), Ok(AccessLogTarget::Stdout));
    assert_eq!(
        "logs/access.log".parse(),
        Ok(AccessLogTarget::Path("logs/access.log".into()))
    );
    assert_eq!("".parse::<AccessLogTarget>(), Err(InvalidAccessLogTarget));
}

#[test]
fn lines_reach_the_file_within_the_interval() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("access.log");
    // Default options: the interval the service runs with.
    let log = AccessLog::open(
        &AccessLogTarget::Path(path.clone()),
        WriterOptions::default(),
    )
    .expect("open");
    assert!(
        path.exists(),
        "created on open, so a bad path fails startup"
    );
    let start = Instant::now();
    line(&log, "one");
    line(&log, "two");
    assert!(eventually(Duration::from_secs(2), || read(&path) == "one\ntwo\n"));
    let latency = start.elapsed();
    assert!(
        latency < Duration::from_millis(100) + Duration::from_millis(150),
        "took {latency:?}; the interval is {:?}",
        WriterOptions::default().flush_interval
    );
    let stats = log.stats();
    assert_eq!((stats.lines_appended, stats.lines_written), (2, 2));
    assert_eq!(stats.write_errors, 0);
    assert!(!stats.failing && stats.last_error.is_none());
}

#[test]
fn a_missing_newline_is_added_and_appends_to_existing_content() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("access.log");
    std::fs::write(&path, "old\n").expect("seed");
    let log = AccessLog::open(&AccessLogTarget::Path(path.clone()), options()).expect("open");
    log.append(|buf| buf.extend_from_slice(b"no newline"));
    log.shutdown().expect("shutdown");
    assert_eq!(read(&path), "old\nno newline\n");
}

#[test]
fn a_panicking_formatter_leaves_no_partial_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("access.log");
    let log = AccessLog::open(&AccessLogTarget::Path(path.clone()), options()).expect("open");
    let l2 = log.clone();
    let panicked = std::thread::spawn(move || {
        l2.append(|buf| {
            buf.extend_from_slice(b"half a li");
            panic!("formatter bug");
        })
    })
    .join();
    assert!(panicked.is_err());
    line(&log, "whole");
    log.shutdown().expect("shutdown");
    assert_eq!(read(&path), "whole\n");
}

#[test]
fn concurrent_appends_give_whole_lines_in_per_thread_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("access.log");
    // A small buffer forces many swaps and some waiting for room.
    let log = AccessLog::open(
        &AccessLogTarget::Path(path.clone()),
        WriterOptions {
            flush_interval: Duration::from_millis(5),
            capacity: 16 << 10,
            max_wait: Duration::from_secs(30),
            ..WriterOptions::default()
        },
    )
    .expect("open");
    const THREADS: usize = 8;
    const LINES: usize = 2_000;
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..LINES {
                    // Lengths from 10 to over 2,000 bytes.
                    let pad = "x".repeat((i * 37 + t) % 2_048);
                    line(&log, &format!("t{t} {i} {pad}"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("appender");
    }
    let stats = log.shutdown().expect("shutdown");
    assert_eq!(stats.lines_dropped, 0);
    assert_eq!(stats.lines_written, (THREADS * LINES) as u64);

    let text = read(&path);
    assert!(text.ends_with('\n'));
    let mut next = [0usize; THREADS];
    let mut count = 0;
    for l in text.lines() {
        let mut parts = l.split(' ');
        let (Some(t), Some(i), Some(pad), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            panic!("torn or merged line: {:.80}", l);
        };
        let t: usize = t[1..].parse().expect("thread number");
        let i: usize = i.parse().expect("line number");
        assert_eq!(i, next[t], "thread {t}'s lines out of order or missing");
        assert_eq!(pad.len(), (i * 37 + t) % 2_048);
        assert!(pad.bytes().all(|b| b == b'x'));
        next[t] += 1;
        count += 1;
    }
    assert_eq!(count, THREADS * LINES);
}

#[test]
fn shutdown_drains_then_refuses_loudly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("access.log");
    // An interval far beyond the test: only shutdown can write these.
    let log = AccessLog::open(
        &AccessLogTarget::Path(path.clone()),
        WriterOptions {
            flush_interval: Duration::from_secs(3600),
            ..WriterOptions::default()
        },
    )
    .expect("open");
    for i in 0..1000 {
        line(&log, &format!("line {i}"));
    }
    let stats = log.shutdown().expect("shutdown");
    assert_eq!(stats.lines_written, 1000);
    assert_eq!(read(&path).lines().count(), 1000);
    // A second shutdown is harmless; a late line is counted, not hidden.
    assert!(log.shutdown().is_ok());
    line(&log, "too late");
    assert_eq!(log.stats().lines_dropped, 1);
    assert!(!log.reopen());
    assert_eq!(read(&path).lines().count(), 1000);
}

#[test]
fn dropping_the_last_handle_writes_what_is_queued() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("access.log");
    let log = AccessLog::open(
        &AccessLogTarget::Path(path.clone()),
        WriterOptions {
            flush_interval: Duration::from_secs(3600),
            ..WriterOptions::default()
        },
    )
    .expect("open");
    line(&log, "a");
    drop(log.clone());
    line(&log, "b");
    drop(log);
    assert_eq!(read(&path), "a\nb\n");
}

#[test]
fn reopen_after_rename_splits_the_lines_at_the_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("access.log");
    let rotated = dir.path().join("access.log.1");
    let log = AccessLog::open(&AccessLogTarget::Path(path.clone()), options()).expect("open");
    line(&log, "before rename");
    assert!(eventually(Duration::from_secs(2), || !read(&path).is_empty()));
    std::fs::rename(&path, &rotated).expect("rename");
    // Still queued for the old file when the reopen is asked for.
    line(&log, "after rename");
    assert!(log.reopen());
    line(&log, "after reopen");
    let stats = log.shutdown().expect("shutdown");
    assert_eq!(read(&rotated), "before rename\nafter rename\n");
    assert_eq!(read(&path), "after reopen\n");
    assert_eq!(stats.reopens, 1);
    assert_eq!(stats.write_errors, 0);
}

#[test]
fn a_deleted_file_is_reported_and_created_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("access.log");
    let log = AccessLog::open(&AccessLogTarget::Path(path.clone()), options()).expect("open");
    line(&log, "first");
    assert!(eventually(Duration::from_secs(2), || read(&path) == "first\n"));
    std::fs::remove_file(&path).expect("remove");
    line(&log, "second");
    assert!(eventually(Duration::from_secs(2), || read(&path) == "second\n"));
    let stats = log.stats();
    assert_eq!(stats.write_errors, 1);
    assert_eq!(stats.reopens, 1);
    assert!(!stats.failing, "recovered at once");
    let err = stats.last_error.expect("error kept for /readyz");
    assert!(err.contains("was deleted"), "{err}");
    log.shutdown().expect("shutdown");
}

#[test]
fn failing_writes_are_counted_retried_and_never_block_requests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let link = dir.path().join("access.log");
    let real = dir.path().join("real.log");
    // /dev/full fails every write with ENOSPC: a full disk.
    std::os::unix::fs::symlink("/dev/full", &link).expect("symlink");
    let log = AccessLog::open(
        &AccessLogTarget::Path(link.clone()),
        WriterOptions {
            flush_interval: Duration::from_millis(10),
            capacity: 4 << 10,
            // Were a request to wait for room while writes fail, this test
            // would take minutes.
            max_wait: Duration::from_secs(60),
            ..WriterOptions::default()
        },
    )
    .expect("open");
    line(&log, "queued 0");
    assert!(eventually(Duration::from_secs(2), || log.stats().failing));
    let started = Instant::now();
    for i in 1..2_000 {
        line(&log, &format!("queued {i}"));
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        eventually(Duration::from_secs(2), || log.stats().write_errors >= 3),
        "retried"
    );
    let stats = log.stats();
    assert!(stats.failing);
    assert!(
        stats.lines_dropped > 0,
        "a full buffer drops, and counts it"
    );
    assert_eq!(stats.lines_written, 0);
    // What the buffer and the flusher's failed batch hold: every kept line.
    // Lines are 9 ("queued 0\n") to 12 bytes long.
    let kept = stats.lines_appended - stats.lines_dropped;
    assert!(
        (9 * kept..=12 * kept).contains(&stats.bytes_queued),
        "{} bytes queued for {kept} lines",
        stats.bytes_queued
    );
    let err = stats.last_error.expect("error kept");
    assert!(err.contains("No space left on device"), "{err}");

    // The disk comes back (here: the path now points somewhere writable).
    std::fs::remove_file(&link).expect("unlink");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    assert!(log.reopen());
    let stats = log.shutdown().expect("everything left is written");
    assert!(!stats.failing);
    assert_eq!(log.stats().bytes_queued, 0, "nothing left queued");
    assert_eq!(stats.lines_appended, 2_000);
    assert_eq!(stats.lines_written + stats.lines_dropped, 2_000);
    let text = read(&real);
    assert_eq!(text.lines().count() as u64, stats.lines_written);
    assert!(
        text.starts_with("queued 0\n"),
        "the first failed batch was retried"
    );
    assert!(text.lines().all(|l| l.starts_with("queued ")));
}

#[test]
fn shutdown_gives_up_on_a_dead_disk_and_says_how_much_was_lost() {
    let log = AccessLog::open(
        &AccessLogTarget::Path("/dev/full".into()),
        WriterOptions {
            flush_interval: Duration::from_millis(10),
            shutdown_retry: Duration::from_millis(50),
            ..WriterOptions::default()
        },
    )
    .expect("open");
    line(&log, "a");
    line(&log, "b");
    match log.shutdown() {
        Err(AccessLogError::Lost { lines, last_error }) => {
            assert_eq!(lines, 2);
            assert!(last_error.contains("No space left"), "{last_error}");
        }
        other => panic!("expected lost lines, got {other:?}"),
    }
    assert_eq!(log.stats().lines_dropped, 2);
}

#[test]
fn a_slow_disk_makes_appends_wait_instead_of_dropping() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());

    // The reader opens the pipe at once (so that opening it for writing
    // returns) but reads nothing until told: a disk that has stalled.
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = File::open(&fifo).expect("open fifo");
            go_rx.recv().expect("go");
            let mut all = String::new();
            io::Read::read_to_string(&mut f, &mut all).expect("read fifo");
            all
        })
    };
    let log = AccessLog::open(
        &AccessLogTarget::Path(fifo.clone()),
        WriterOptions {
            flush_interval: Duration::from_millis(5),
            capacity: 4 << 10,
            max_wait: Duration::from_secs(60),
            ..WriterOptions::default()
        },
    )
    .expect("open");

    const LINES: usize = 3_000; // ~300 KB: far beyond the pipe and the buffer
    let appender = {
        let log = log.clone();
        std::thread::spawn(move || {
            for i in 0..LINES {
                line(&log, &format!("{i:06} {}", "y".repeat(92)));
            }
        })
    };
    assert!(
        eventually(Duration::from_secs(10), || log.stats().backpressure_waits
            > 0),
        "the appender never had to wait"
    );
    assert!(!appender.is_finished());
    go_tx.send(()).expect("reader alive");
    appender.join().expect("appender");
    let stats = log.shutdown().expect("shutdown");
    drop(log); // closes the pipe, so the reader sees its end
    let all = reader.join().expect("reader");
    assert_eq!(stats.lines_dropped, 0);
    assert_eq!(all.lines().count(), LINES);
    for (i, l) in all.lines().enumerate() {
        assert_eq!(l, format!("{i:06} {}", "y".repeat(92)));
    }
}

#[test]
fn a_failing_disk_is_retried_at_the_interval_not_at_every_line() {
    let log = AccessLog::open(
        &AccessLogTarget::Path("/dev/full".into()),
        WriterOptions {
            flush_interval: Duration::from_millis(10),
            capacity: 4 << 10,
            ..WriterOptions::default()
        },
    )
    .expect("open");
    line(&log, "first");
    assert!(eventually(Duration::from_secs(2), || log.stats().failing));
    let before = log.stats().write_errors;
    // Appends past half the buffer used to wake the writer for another try
    // every time: thousands of attempts a second.
    let started = Instant::now();
    let mut i = 0;
    while started.elapsed() < Duration::from_secs(1) {
        line(&log, &format!("line {i}"));
        i += 1;
    }
    let attempts = log.stats().write_errors - before;
    // 10 ms doubling to 1 s: about 8 in a second.
    assert!(attempts <= 20, "{attempts} attempts for {i} lines in 1 s");
    assert!(attempts >= 2, "still retried");
    let _ = log.shutdown();
}

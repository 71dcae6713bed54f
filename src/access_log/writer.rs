//! The buffered access-log writer.
//!
//! Requests append whole lines to one shared in-memory buffer under a mutex and
//! return; a dedicated flusher thread swaps that buffer out every
//! [`WriterOptions::flush_interval`] and writes it with the lock released. A
//! channel per line was measured at about twice the server's CPU per request
//! (every line wakes the writer); an append under an uncontended lock costs
//! about as much as copying the line. A plain thread keeps the disk away from
//! the actix runtimes, whose workers must never block on I/O.
//!
//! Guarantees, and how:
//! - *Whole lines.* A line is formatted into a thread-local scratch buffer and
//!   copied into the shared one in a single `extend` under the lock, so a line
//!   is never interleaved with another, and a formatter that panics halfway
//!   leaves nothing behind. The flusher resumes a partial write exactly where it
//!   stopped, so a line is torn only if the file is switched mid-line (see
//!   [`AccessLog::reopen`]).
//! - *Nothing dropped silently.* When the buffer is full the request waits for
//!   the flusher (backpressure), at most [`WriterOptions::max_wait`]. A line is
//!   dropped only when that wait runs out or writes are failing and the buffer
//!   is full; every drop is counted, logged at error level and shown on
//!   `/readyz`.
//! - *Failures are loud and retried calmly.* A failed write keeps its bytes
//!   and is retried after the interval, doubling up to [`MAX_RETRY`] (appends
//!   never wake a failing writer); a line the disk took part of is cut off the
//!   file again, so the file ends in whole lines and `lines_written` counts
//!   exactly the newlines written. The first failure and then one summary
//!   every [`REPORT_EVERY`] go to the tracing log, and the state is in
//!   [`AccessLogStats`].
//! - *Drained on shutdown.* [`AccessLog::shutdown`] writes everything queued,
//!   retries failures for a bounded time, then fsyncs.

use std::cell::RefCell;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::format::{Record, write_record};
use super::tap::{LineTap, Placer};

/// How often repeated failures are summarised in the tracing log.
pub const REPORT_EVERY: Duration = Duration::from_secs(10);

/// The longest pause between two attempts to write to a failing log.
pub const MAX_RETRY: Duration = Duration::from_secs(1);

/// The longest [`AccessLog::reopen`] waits for the flusher, which may be in
/// the middle of a slow write to the old file.
pub const REOPEN_WAIT: Duration = Duration::from_secs(10);

/// Where the access log goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessLogTarget {
    /// Appended to this file; SIGHUP reopens it (logrotate's convention).
    Path(PathBuf),
    /// Standard output (`-`), for containers that collect it.
    Stdout,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the access log must be a file path or - for standard output")]
pub struct InvalidAccessLogTarget;

impl std::str::FromStr for AccessLogTarget {
    type Err = InvalidAccessLogTarget;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "" => Err(InvalidAccessLogTarget),
            "-" => Ok(Self::Stdout),
            path => Ok(Self::Path(path.into())),
        }
    }
}

impl fmt::Display for AccessLogTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Path(p) => write!(f, "{}", p.display()),
            Self::Stdout => f.write_str("standard output"),
        }
    }
}

/// Tuning; the defaults suit a single busy server.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// The longest a line waits in memory: well inside the promised 100 ms.
    pub flush_interval: Duration,
    /// Bytes the shared buffer holds before requests wait. 8 MiB is some 40,000
    /// lines, over a second of heavy traffic, so only a disk that is really
    /// behind makes anyone wait. The flusher also wakes early at half of it.
    pub capacity: usize,
    /// The longest one request waits for room before its line is dropped
    /// (counted and reported). Long enough to ride out a slow write, short
    /// enough that a stuck disk does not stop redirects.
    pub max_wait: Duration,
    /// How long [`AccessLog::shutdown`] keeps retrying failed writes.
    pub shutdown_retry: Duration,
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self {
            flush_interval: Duration::from_millis(50),
            capacity: 8 << 20,
            max_wait: Duration::from_secs(1),
            shutdown_retry: Duration::from_secs(5),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AccessLogError {
    #[error("cannot open the access log {path}: {source}")]
    Open {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot use standard output for the access log: {0}")]
    Stdout(#[source] io::Error),
    #[error("cannot start the access log writer thread: {0}")]
    Thread(#[source] io::Error),
    #[error("the access log writer thread panicked")]
    Panicked,
    #[error("{lines} access log lines could not be written before exit: {last_error}")]
    Lost { lines: u64, last_error: String },
    #[error("flushing the access log to disk at exit failed: {0}")]
    Sync(#[source] io::Error),
}

/// Counters and health, for `/readyz` and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessLogStats {
    pub lines_appended: u64,
    /// Lines handed to the OS (and so readable in the file).
    pub lines_written: u64,
    /// Failed write, reopen or fsync attempts (one per retry).
    pub write_errors: u64,
    /// Lines lost: the buffer stayed full past `max_wait`, or writes were
    /// failing with the buffer full, or appended after shutdown.
    pub lines_dropped: u64,
    /// Appends that had to wait for room.
    pub backpressure_waits: u64,
    /// Files opened after the first (SIGHUP, or the file was deleted).
    pub reopens: u64,
    /// Bytes appended and not yet written: the buffer and the batch the
    /// flusher holds. Filled in by [`AccessLog::stats`].
    pub bytes_queued: u64,
    /// True from a failed write until the next successful one.
    pub failing: bool,
    /// The most recent error, with its UTC time; kept after recovery.
    pub last_error: Option<String>,
}

/// A handle on the access log; clones share one buffer and one flusher.
#[derive(Clone)]
pub struct AccessLog {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    target: AccessLogTarget,
    flusher: Mutex<Option<JoinHandle<Result<(), AccessLogError>>>>,
}

struct Shared {
    queue: Mutex<Queue>,
    /// The flusher sleeps here between intervals; woken early when the buffer
    /// passes half full, on reopen and on shutdown.
    wake: Condvar,
    /// Appenders wait here for room.
    room: Condvar,
    /// [`AccessLog::reopen`] waits here for the flusher to switch files.
    reopened: Condvar,
    capacity: usize,
    max_wait: Duration,
    shutdown_retry: Duration,
    /// Issue 38: what takes each batch of lines written, with its place.
    tap: OnceLock<Arc<dyn LineTap>>,
}

/// Everything behind the one lock.
#[derive(Default)]
struct Queue {
    buf: Vec<u8>,
    lines: u64,
    urgent: bool,
    /// Reopen requests made and answered; a caller waits for its own number.
    reopen_requested: u64,
    reopen_handled: u64,
    /// Whether the last reopen attempt succeeded.
    reopen_ok: bool,
    stop: bool,
    /// How long the flusher may retry failed writes once stopped.
    stop_retry: Duration,
    /// The flusher has exited; nothing appended now would be written.
    closed: bool,
    waiters: u32,
    /// Bytes of the flusher's batch not yet written, as of its last report.
    flusher_holds: usize,
    stats: AccessLogStats,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks (lines are formatted outside
    // them), so a poisoned lock still guards consistent data.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(512));
}

impl AccessLog {
    /// Opens (creating, appending to) the target and starts the flusher.
    /// Fails if the file cannot be opened, so a bad path stops startup.
    pub fn open(target: &AccessLogTarget, options: WriterOptions) -> Result<Self, AccessLogError> {
        let sink = Sink::open(target)?;
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                buf: Vec::with_capacity(options.capacity.min(1 << 20)),
                ..Queue::default()
            }),
            wake: Condvar::new(),
            room: Condvar::new(),
            reopened: Condvar::new(),
            capacity: options.capacity.max(1),
            max_wait: options.max_wait,
            shutdown_retry: options.shutdown_retry,
            tap: OnceLock::new(),
        });
        let flusher = Flusher::new(Arc::clone(&shared), sink, &options);
        let handle = std::thread::Builder::new()
            .name("access-log".into())
            .spawn(move || flusher.run())
            .map_err(AccessLogError::Thread)?;
        Ok(Self {
            inner: Arc::new(Inner {
                shared,
                target: target.clone(),
                flusher: Mutex::new(Some(handle)),
            }),
        })
    }

    pub fn target(&self) -> &AccessLogTarget {
        &self.inner.target
    }

    /// Issue 38: hands every line written from now on to `tap`, on the
    /// writer thread, with its place in the file (see [`super::tap`]).
    /// One tap a log; false if one was set already.
    pub fn set_tap(&self, tap: Arc<dyn LineTap>) -> bool {
        self.inner.shared.tap.set(tap).is_ok()
    }

    /// Appends one line, which `write` must produce, `\n` included (one is
    /// added if missing). Never touches the disk; waits only when the buffer
    /// is full.
    pub fn append(&self, write: impl FnOnce(&mut Vec<u8>)) {
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut line) => {
                line.clear();
                write(&mut line);
                self.push_line(&mut line);
                if line.capacity() > 64 << 10 {
                    // One huge request should not pin its memory in every worker.
                    *line = Vec::with_capacity(512);
                }
            }
            // Only if `write` itself appends (it should not): still log it.
            Err(_) => {
                let mut line = Vec::new();
                write(&mut line);
                self.push_line(&mut line);
            }
        });
    }

    /// Appends the line for `rec`; see [`append`](Self::append).
    pub fn append_record(&self, rec: &Record<'_>) {
        self.append(|buf| write_record(rec, buf));
    }

    fn push_line(&self, line: &mut Vec<u8>) {
        if line.last() != Some(&b'\n') {
            line.push(b'\n');
        }
        let shared = &*self.inner.shared;
        let mut q = lock(&shared.queue);
        q.stats.lines_appended += 1;
        if q.closed {
            q.stats.lines_dropped += 1;
            drop(q);
            tracing::error!("access log line dropped: the log was already shut down");
            return;
        }
        let full = |q: &Queue| !q.buf.is_empty() && q.buf.len() + line.len() > shared.capacity;
        if full(&q) {
            if q.stats.failing {
                // Waiting would only stall requests until the disk is back.
                q.stats.lines_dropped += 1;
                return;
            }
            q.stats.backpressure_waits += 1;
            q.waiters += 1;
            q.urgent = true;
            shared.wake.notify_one();
            let deadline = Instant::now() + shared.max_wait;
            while full(&q) && !q.stats.failing && !q.closed {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                q = shared
                    .room
                    .wait_timeout(q, deadline - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            q.waiters -= 1;
            if full(&q) || q.closed {
                q.stats.lines_dropped += 1;
                return;
            }
        }
        q.buf.extend_from_slice(line);
        q.lines += 1;
        // A failing flusher retries on its own schedule: waking it for every
        // line made it retry thousands of times a second.
        if !q.urgent && !q.stats.failing && q.buf.len() >= shared.capacity / 2 {
            q.urgent = true;
            shared.wake.notify_one();
        }
    }

    /// Switches to a freshly opened file at the same path (after logrotate
    /// renamed the old one): every line appended before this call goes to the
    /// old file, every line appended after it returns to the new one. Blocks
    /// until the flusher has switched, at most [`REOPEN_WAIT`]; returns whether
    /// the new file is in use. On failure the old file stays in use, the error
    /// is reported and the flusher keeps trying. Always true for standard
    /// output, which has nothing to reopen.
    pub fn reopen(&self) -> bool {
        let shared = &*self.inner.shared;
        let mut q = lock(&shared.queue);
        if q.closed {
            return false;
        }
        q.reopen_requested += 1;
        let ticket = q.reopen_requested;
        shared.wake.notify_one();
        let deadline = Instant::now() + REOPEN_WAIT;
        while q.reopen_handled < ticket && !q.closed {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            q = shared
                .reopened
                .wait_timeout(q, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        q.reopen_handled >= ticket && q.reopen_ok
    }

    pub fn stats(&self) -> AccessLogStats {
        let q = lock(&self.inner.shared.queue);
        AccessLogStats {
            bytes_queued: (q.buf.len() + q.flusher_holds) as u64,
            ..q.stats.clone()
        }
    }

    /// Writes every queued line, fsyncs and stops the flusher. Call after the
    /// listeners have stopped: lines appended later are dropped (and counted).
    /// Blocks; a second call returns at once.
    pub fn shutdown(&self) -> Result<AccessLogStats, AccessLogError> {
        let handle = lock(&self.inner.flusher).take();
        let result = match handle {
            Some(handle) => {
                let shared = &*self.inner.shared;
                let mut q = lock(&shared.queue);
                q.stop = true;
                q.stop_retry = shared.shutdown_retry;
                drop(q);
                shared.wake.notify_one();
                handle.join().unwrap_or(Err(AccessLogError::Panicked))
            }
            None => Ok(()),
        };
        result.map(|()| self.stats())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle is gone (say, a test that never called shutdown):
        // still write what is queued rather than lose it with the thread, but
        // try only once: nobody asked to wait for a failing disk.
        if let Some(handle) = lock(&self.flusher).take() {
            lock(&self.shared.queue).stop = true;
            self.shared.wake.notify_one();
            if let Ok(Err(e)) = handle.join() {
                tracing::error!(error = %e, "access log");
            }
        }
    }
}

impl fmt::Debug for AccessLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessLog")
            .field("target", &self.inner.target)
            .finish_non_exhaustive()
    }
}

/// The open destination.
enum Sink {
    File {
        path: PathBuf,
        file: File,
    },
    /// A duplicate of descriptor 1, written without std's line buffering so a
    /// batch goes out in one call, and partial writes are visible.
    Stdout(File),
}

impl Sink {
    fn open(target: &AccessLogTarget) -> Result<Self, AccessLogError> {
        match target {
            AccessLogTarget::Path(path) => Ok(Sink::File {
                file: open_append(path).map_err(|source| AccessLogError::Open {
                    path: path.display().to_string(),
                    source,
                })?,
                path: path.clone(),
            }),
            AccessLogTarget::Stdout => {
                use std::os::fd::AsFd;
                let fd = io::stdout()
                    .as_fd()
                    .try_clone_to_owned()
                    .map_err(AccessLogError::Stdout)?;
                Ok(Sink::Stdout(File::from(fd)))
            }
        }
    }

    fn file(&mut self) -> &mut File {
        match self {
            Sink::File { file, .. } | Sink::Stdout(file) => file,
        }
    }

    /// True when the file was deleted under us: writes would succeed and vanish.
    /// (A rename keeps the link count, so logrotate's rename is not this.)
    fn was_removed(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        match self {
            Sink::File { file, .. } => file.metadata().is_ok_and(|m| m.nlink() == 0),
            Sink::Stdout(_) => false,
        }
    }

    /// Opens the path afresh; on failure the old file stays in use.
    fn reopen(&mut self) -> io::Result<bool> {
        match self {
            Sink::File { path, file } => {
                let new = open_append(path)?;
                // The old file is complete now: make it durable before letting go.
                let _ = file.sync_data();
                *file = new;
                Ok(true)
            }
            Sink::Stdout(_) => Ok(false),
        }
    }

    /// Removes the last `bytes` written (a torn line). Standard output
    /// cannot be cut: there the line is finished on the next try.
    fn cut_back(&mut self, bytes: u64) -> io::Result<()> {
        match self {
            Sink::File { file, .. } => {
                let len = file.metadata()?.len();
                file.set_len(len.saturating_sub(bytes))
            }
            Sink::Stdout(_) => Err(io::Error::other("standard output cannot be cut back")),
        }
    }

    fn sync(&mut self) -> io::Result<()> {
        match self {
            // Pipes, terminals and devices (a path may name one) cannot be
            // synced: EINVAL means there is nothing to make durable.
            Sink::File { file, .. } => match file.sync_data() {
                Err(e) if e.kind() == io::ErrorKind::InvalidInput => Ok(()),
                other => other,
            },
            Sink::Stdout(_) => Ok(()),
        }
    }

    /// Issue 38: the file's length after a write, which is where the
    /// write ended (the file is opened to append); `None` for a stream.
    fn end(&self) -> Option<u64> {
        match self {
            Sink::File { file, .. } => file.metadata().ok().map(|m| m.len()),
            Sink::Stdout(_) => None,
        }
    }

    /// Issue 38: the first line of the open file (through `/proc/self/fd`,
    /// so a file renamed by a rotation is still the one read).
    fn first_line(&self) -> Option<Vec<u8>> {
        use std::io::{BufRead, Read};
        use std::os::fd::AsRawFd;
        let Sink::File { file, .. } = self else {
            return None;
        };
        let f = File::open(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
        let mut line = Vec::new();
        io::BufReader::new(f)
            .take(1 << 20)
            .read_until(b'\n', &mut line)
            .ok()?;
        (line.last() == Some(&b'\n')).then_some(line)
    }

    fn describe(&self) -> String {
        match self {
            Sink::File { path, .. } => path.display().to_string(),
            Sink::Stdout(_) => "standard output".into(),
        }
    }
}

/// Appends to the log, creating it readable by its owner only: its lines
/// hold clients' addresses. A file that exists keeps its mode, so a log
/// that a group reads is made so once (logrotate's `create 0640 …` does it
/// at each rotation, see deploy/logrotate.conf).
fn open_append(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

/// The state the flusher thread owns; nothing here is shared.
struct Flusher {
    shared: Arc<Shared>,
    sink: Sink,
    interval: Duration,
    /// Swapped out of the queue; `pending[done..]` is still to be written.
    pending: Vec<u8>,
    done: usize,
    /// The pause before the next attempt: the interval, doubled after each
    /// failed write up to [`MAX_RETRY`], back to the interval on success.
    retry: Duration,
    /// A reopen was asked for and has not succeeded yet.
    reopen_wanted: bool,
    /// The newest reopen request taken from the queue.
    reopen_ticket: u64,
    errors: ErrorReport,
    dropped_reported: u64,
    dropped_reported_at: Option<Instant>,
    /// Issue 38: what was handed to the tap, and where the file stands.
    placer: Placer,
}

/// Rate-limits error reports: the first at once, then a summary per period.
#[derive(Default)]
struct ErrorReport {
    unreported: u64,
    last: Option<Instant>,
}

impl Flusher {
    fn new(shared: Arc<Shared>, sink: Sink, options: &WriterOptions) -> Self {
        Self {
            pending: Vec::with_capacity(shared.capacity.min(1 << 20)),
            shared,
            sink,
            interval: options.flush_interval,
            done: 0,
            retry: options.flush_interval,
            reopen_wanted: false,
            reopen_ticket: 0,
            errors: ErrorReport::default(),
            dropped_reported: 0,
            dropped_reported_at: None,
            placer: Placer::default(),
        }
    }

    fn run(mut self) -> Result<(), AccessLogError> {
        let mut next = Instant::now() + self.interval;
        loop {
            let stop = self.wait_and_take(next);
            next = Instant::now() + self.retry;
            if self.reopen_wanted {
                // What was queued before the signal belongs to the old file.
                self.write_pending();
                self.try_reopen();
            }
            self.write_pending();
            self.report_drops(false);
            if stop {
                return self.drain();
            }
        }
    }

    /// Sleeps until `deadline` or an early wake, then moves the queued lines
    /// into `pending` if the previous batch is fully written. Returns whether
    /// to stop.
    fn wait_and_take(&mut self, deadline: Instant) -> bool {
        let shared = Arc::clone(&self.shared);
        let mut q = lock(&shared.queue);
        while !(q.stop || q.reopen_requested > q.reopen_handled || q.urgent && !q.stats.failing) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            q = shared
                .wake
                .wait_timeout(q, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        q.urgent = false;
        if q.reopen_requested > q.reopen_handled {
            self.reopen_wanted = true;
            self.reopen_ticket = q.reopen_requested;
        }
        self.take(&mut q);
        q.stop
    }

    fn take(&mut self, q: &mut Queue) {
        if self.done < self.pending.len() || q.buf.is_empty() {
            return;
        }
        self.pending.clear();
        self.done = 0;
        self.placer.new_batch();
        std::mem::swap(&mut self.pending, &mut q.buf);
        q.flusher_holds = self.pending.len();
        q.lines = 0;
        if q.waiters > 0 {
            self.shared.room.notify_all();
        }
    }

    /// Writes `pending[done..]`; on failure keeps the rest for the next try.
    fn write_pending(&mut self) {
        if self.done >= self.pending.len() {
            return;
        }
        if self.sink.was_removed() {
            self.record_error(&format!(
                "access log file {} was deleted; creating it again",
                self.sink.describe()
            ));
            self.reopen_wanted = true;
            self.try_reopen();
        }
        while self.done < self.pending.len() {
            match self.sink.file().write(&self.pending[self.done..]) {
                Ok(0) => {
                    let e = io::Error::from(io::ErrorKind::WriteZero);
                    return self.write_failed(&e);
                }
                Ok(n) => {
                    // Counted as they reach the file: exact whatever fails later.
                    let lines =
                        memchr::memchr_iter(b'\n', &self.pending[self.done..self.done + n]).count();
                    if let Some(tap) = self.shared.tap.get() {
                        let end = self.sink.end();
                        let sink = &self.sink;
                        self.placer.written(
                            &self.pending,
                            self.done,
                            n,
                            end,
                            || sink.first_line(),
                            tap.as_ref(),
                        );
                    }
                    self.done += n;
                    let mut q = lock(&self.shared.queue);
                    q.stats.lines_written += lines as u64;
                    q.flusher_holds = self.pending.len() - self.done;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.write_failed(&e),
            }
        }
        self.retry = self.interval;
        let mut q = lock(&self.shared.queue);
        if q.stats.failing {
            q.stats.failing = false;
            drop(q);
            let missed = std::mem::take(&mut self.errors.unreported);
            tracing::warn!(
                file = %self.sink.describe(),
                failed_attempts_since_last_report = missed,
                "access log writes work again"
            );
        }
    }

    fn write_failed(&mut self, e: &io::Error) {
        let mut message = format!(
            "writing the access log {} failed: {e}",
            self.sink.describe()
        );
        // A full disk takes part of a write: cut the file back to the last
        // whole line, so it never ends in a torn one, and write that line
        // again whole on the next try.
        let line_start = self.pending[..self.done]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let partial = self.done - line_start;
        if partial > 0 {
            match self.sink.cut_back(partial as u64) {
                Ok(()) => self.done = line_start,
                Err(cut) => {
                    message.push_str(&format!(
                        "; a partly written line could not be removed: {cut}"
                    ));
                }
            }
        }
        self.retry = (self.retry * 2).min(MAX_RETRY.max(self.interval));
        let mut q = lock(&self.shared.queue);
        q.stats.failing = true;
        q.flusher_holds = self.pending.len() - self.done;
        drop(q);
        // Appenders waiting for room would wait in vain.
        self.shared.room.notify_all();
        self.record_error(&message);
    }

    /// Counts an error, keeps it for `/readyz`, and reports it loudly unless
    /// one was reported within [`REPORT_EVERY`].
    fn record_error(&mut self, message: &str) {
        {
            let mut q = lock(&self.shared.queue);
            q.stats.write_errors += 1;
            q.stats.last_error = Some(format!(
                "{}: {message}",
                chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ")
            ));
        }
        let now = Instant::now();
        if self.errors.last.is_some_and(|t| now - t < REPORT_EVERY) {
            self.errors.unreported += 1;
            return;
        }
        let repeats = std::mem::take(&mut self.errors.unreported);
        self.errors.last = Some(now);
        tracing::error!(
            repeats_since_last_report = repeats,
            "{message}; lines stay queued and are retried"
        );
    }

    fn try_reopen(&mut self) {
        if !self.reopen_wanted {
            return;
        }
        // A line whose start is in the old file would be torn; write it whole
        // to the new one instead.
        let line_start = self.pending[..self.done]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let result = self.sink.reopen();
        if let Ok(reopened) = result {
            self.reopen_wanted = false;
            if reopened {
                self.done = line_start;
                self.placer.new_file();
                lock(&self.shared.queue).stats.reopens += 1;
                tracing::info!(file = %self.sink.describe(), "access log reopened");
            }
        }
        if let Err(e) = &result {
            let message = format!(
                "reopening the access log {} failed (still writing to the old file): {e}",
                self.sink.describe()
            );
            self.record_error(&message);
        }
        let mut q = lock(&self.shared.queue);
        q.flusher_holds = self.pending.len() - self.done;
        if q.reopen_handled < self.reopen_ticket {
            q.reopen_handled = self.reopen_ticket;
            q.reopen_ok = result.is_ok();
            self.shared.reopened.notify_all();
        }
    }

    fn report_drops(&mut self, force: bool) {
        let dropped = lock(&self.shared.queue).stats.lines_dropped;
        if dropped == self.dropped_reported {
            return;
        }
        let now = Instant::now();
        let recent = self
            .dropped_reported_at
            .is_some_and(|t| now - t < REPORT_EVERY);
        if recent && !force {
            return;
        }
        tracing::error!(
            lines_dropped_total = dropped,
            since_last_report = dropped - self.dropped_reported,
            "access log lines were dropped: the log could not keep up or is failing"
        );
        self.dropped_reported = dropped;
        self.dropped_reported_at = Some(now);
    }

    /// After `stop`: writes everything still queued, retrying failures for at
    /// most the time the stopper allowed, then fsyncs.
    fn drain(mut self) -> Result<(), AccessLogError> {
        let deadline = Instant::now() + lock(&self.shared.queue).stop_retry;
        loop {
            self.write_pending();
            let stuck = self.done < self.pending.len();
            let shared = Arc::clone(&self.shared);
            let mut q = lock(&shared.queue);
            self.take(&mut q);
            let all_written = self.done >= self.pending.len() && q.buf.is_empty();
            if all_written || Instant::now() >= deadline {
                q.closed = true;
                shared.room.notify_all();
                shared.reopened.notify_all();
                break;
            }
            drop(q);
            if stuck {
                // Failing: pause before retrying, without spinning.
                let left = deadline.saturating_duration_since(Instant::now());
                std::thread::sleep(self.interval.min(left));
            }
        }
        self.report_drops(true);
        let lost = {
            let mut q = lock(&self.shared.queue);
            let unwritten = self.pending[self.done..]
                .iter()
                .filter(|&&b| b == b'\n')
                .count() as u64;
            let lost = unwritten + q.lines;
            q.stats.lines_dropped += lost;
            (lost, q.stats.last_error.clone())
        };
        if lost.0 > 0 {
            return Err(AccessLogError::Lost {
                lines: lost.0,
                last_error: lost.1.unwrap_or_default(),
            });
        }
        if let Err(e) = self.sink.sync() {
            self.record_error(&format!("fsync of the access log failed: {e}"));
            return Err(AccessLogError::Sync(e));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

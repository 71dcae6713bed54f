//! `serve --scans-to` (issue 38): every access-log line, as it is
//! written, sent to ClickHouse as the row `stats --load-into` would make
//! of it, with the same identity (node, the log's first-line hash, the
//! line's offset), so a back-fill of the same log adds nothing.
//!
//! A redirect never waits on it. The access-log writer thread hands each
//! written batch to [`LineTap::landed`], which copies the lines into a
//! bounded queue if there is room and counts the rest as dropped: no lock
//! is held long, nothing blocks, and the request path does not see it.
//! A thread of its own (with a one-thread runtime, so parsing User-Agents
//! takes no time from the listeners) turns up to [`BATCH_ROWS`] lines at
//! a time into rows every [`BATCH_INTERVAL`] and sends them; a batch that
//! fails is kept, counting against the queue, and retried with a back-off
//! doubling to [`MAX_BACKOFF`]. Dropped lines are still in the access
//! log: `stats --load-into` fills them in.

use std::collections::BTreeSet;
use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::client::{ClickHouseError, Client};
use super::load::BATCH_ROWS;
use super::rollup;
use super::row;
use super::rows::{LogSource, RowMaker};
use super::setup::{self, SetupError};
use super::url::ClickHouseUrl;
use crate::access_log::tap::{Landed, LineTap};
use crate::stats::dimensions::place::GeoDb;

/// Rows the queue holds by default: some 100 seconds of 1,000 scans a
/// second while ClickHouse is away, each row waiting as its log line.
pub const DEFAULT_QUEUE_ROWS: usize = 100_000;
/// Bytes of log lines the queue holds at most, a row: a line from a
/// phone's browser is about 270 to 330 bytes, but a line may hold four
/// fields of 8 KiB, so the rows alone would not bound the memory.
pub const BYTES_PER_ROW: usize = 1024;
/// Bytes of lines one batch takes at most (its JSON is about twice that).
pub const BATCH_BYTES: usize = 8 << 20;
/// The longest a row waits before it is sent when ClickHouse is there.
pub const BATCH_INTERVAL: Duration = Duration::from_secs(1);
/// The first pause after a failed send; doubled after each failure.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest pause between two attempts while ClickHouse is away.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long one send may take before it counts as failed.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// How often repeated failures and drops are said again in the log.
const REPORT_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct SinkSettings {
    pub url: ClickHouseUrl,
    /// Rows waiting (queued or in a batch being retried) at most.
    pub queue_rows: usize,
}

/// What `/readyz` and `/metrics` show of the sink.
#[derive(Debug, Clone, Serialize)]
pub struct SinkReport {
    pub url: String,
    pub rows_sent: u64,
    /// Queued, or in a batch not yet accepted.
    pub rows_waiting: u64,
    /// Lines that found the queue full: in the access log only.
    pub rows_dropped: u64,
    pub queue_rows: u64,
    /// Lines that are not access-log lines (never sent, as a load skips them).
    pub lines_skipped: u64,
    pub failing: bool,
    pub last_error: Option<String>,
}

impl SinkReport {
    /// `/readyz`'s lines: the counts, then a `warning:` line for drops and
    /// for failing sends. Warnings, not reasons: the node stays ready.
    pub fn text(&self, body: &mut String) {
        use std::fmt::Write;
        let _ = writeln!(
            body,
            "scans to ClickHouse {}: {} rows sent, {} waiting (queue {}), {} dropped",
            self.url, self.rows_sent, self.rows_waiting, self.queue_rows, self.rows_dropped
        );
        if self.rows_dropped > 0 {
            let _ = writeln!(
                body,
                "warning: {} scans dropped for ClickHouse: its queue (--scans-queue {}) was full; \
                 they are in the access log: qrtag stats --load-into fills them in",
                self.rows_dropped, self.queue_rows
            );
        }
        if let (true, Some(err)) = (self.failing, &self.last_error) {
            let _ = writeln!(
                body,
                "warning: sending scans to ClickHouse fails, they wait and are retried: {err}"
            );
        }
    }
}

/// The start found the schema wrong, or the user refused: one line, exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{option}: {cause}")]
pub struct SinkRefused {
    /// `--scans-to` or `--scans-from`.
    pub option: &'static str,
    #[source]
    pub cause: SetupError,
}

/// Asks the server whether it holds this qrtag's schema, for `option`:
/// `Ok(None)` when it does, `Ok(Some(error))` when it cannot be reached
/// (serve anyway), `Err` when the operator must change something.
pub async fn check_at_start(
    url: &ClickHouseUrl,
    option: &'static str,
) -> Result<Option<SetupError>, SinkRefused> {
    let client = Client::new(url.clone(), SEND_TIMEOUT);
    match setup::check_schema(&client).await {
        Ok(()) => Ok(None),
        Err(cause) if cause.is_usage() => Err(SinkRefused { option, cause }),
        Err(e) => Ok(Some(e)),
    }
}

struct Chunk {
    log: Arc<TappedLog>,
    log_id: u64,
    offset: u64,
    lines: Vec<u8>,
}

#[derive(Default)]
struct Queue {
    chunks: VecDeque<Chunk>,
    /// Lines in `chunks`.
    queued: usize,
    /// Lines taken into a batch not yet accepted.
    in_flight: usize,
    /// Bytes of both.
    bytes: usize,
}

/// The whole lines at the start of `lines` that fit in `rows` and
/// `bytes` (pure): how many, and their length.
fn fitting(lines: &[u8], rows: usize, bytes: usize) -> (usize, usize) {
    let mut n = 0;
    let mut len = 0;
    for newline in memchr::memchr_iter(b'\n', lines) {
        if n == rows || newline + 1 > bytes {
            break;
        }
        n += 1;
        len = newline + 1;
    }
    (n, len)
}

/// One domain's access log the sink takes lines from (schema version 3:
/// every domain's, each row with its domain).
pub struct TappedLog {
    pub source: LogSource,
    /// Whether the domain's links are known (its snapshot loaded): lines
    /// wait until then, so each counts under its link.
    pub ready: Box<dyn Fn() -> bool + Send + Sync>,
}

/// What the access log of one domain is given: its lines go to the shared
/// queue with their log.
struct DomainTap {
    shared: Arc<Shared>,
    log: Arc<TappedLog>,
}

impl LineTap for DomainTap {
    fn landed(&self, landed: Landed<'_>) {
        self.shared.push(&self.log, landed);
    }
}

struct Shared {
    queue: Mutex<Queue>,
    /// Every log tapped, whose links must be known before rows are made.
    logs: Mutex<Vec<Arc<TappedLog>>>,
    capacity: usize,
    /// Bytes of lines waiting at most: [`BYTES_PER_ROW`] a row.
    capacity_bytes: usize,
    /// The sender waits here for a full batch or the stop.
    wake: tokio::sync::Notify,
    stop: AtomicBool,
    /// Cuts a back-off short at the stop.
    stopped: tokio::sync::Notify,
    sent: AtomicU64,
    dropped: AtomicU64,
    skipped: AtomicU64,
    failing: AtomicBool,
    last_error: Mutex<Option<String>>,
    url: String,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while these locks are held.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// Lines of `log` just written: into the queue as far as it has room.
    fn push(&self, log: &Arc<TappedLog>, landed: Landed<'_>) {
        let lines = memchr::memchr_iter(b'\n', landed.lines).count();
        let log_id = row::log_id(landed.first_line);
        let mut q = lock(&self.queue);
        let rows = self.capacity.saturating_sub(q.queued + q.in_flight);
        let bytes = self.capacity_bytes.saturating_sub(q.bytes);
        let (taken, len) = fitting(landed.lines, rows, bytes);
        if taken > 0 {
            q.chunks.push_back(Chunk {
                log: Arc::clone(log),
                log_id,
                offset: landed.offset,
                lines: landed.lines[..len].to_vec(),
            });
            q.queued += taken;
            q.bytes += len;
        }
        let full_batch = q.queued >= BATCH_ROWS;
        drop(q);
        if taken < lines {
            self.dropped.fetch_add((lines - taken) as u64, Relaxed);
        }
        if full_batch {
            self.wake.notify_one();
        }
    }
}

impl Shared {
    /// Whether every tapped log's links are known.
    fn ready(&self) -> bool {
        lock(&self.logs).iter().all(|l| (l.ready)())
    }

    fn waiting(&self) -> usize {
        let q = lock(&self.queue);
        q.queued + q.in_flight
    }

    fn stopping(&self) -> bool {
        self.stop.load(Relaxed)
    }

    /// Up to [`BATCH_ROWS`] lines and [`BATCH_BYTES`] out of the queue
    /// (one line at least), as (log id, offset, lines) pieces, counted as
    /// in flight: the pieces, their lines and their bytes.
    fn take(&self) -> (Vec<Chunk>, usize, usize) {
        let mut q = lock(&self.queue);
        let mut taken = Vec::new();
        let (mut n, mut bytes) = (0, 0);
        while n < BATCH_ROWS {
            let Some(mut chunk) = q.chunks.pop_front() else {
                break;
            };
            let budget = if n == 0 {
                BATCH_BYTES.max(memchr::memchr(b'\n', &chunk.lines).map_or(0, |i| i + 1))
            } else {
                BATCH_BYTES - bytes
            };
            let (rows, len) = fitting(&chunk.lines, BATCH_ROWS - n, budget);
            if len < chunk.lines.len() {
                let rest = Chunk {
                    log: Arc::clone(&chunk.log),
                    log_id: chunk.log_id,
                    offset: chunk.offset + len as u64,
                    lines: chunk.lines.split_off(len),
                };
                q.chunks.push_front(rest);
            }
            n += rows;
            bytes += len;
            if rows > 0 {
                taken.push(chunk);
            }
            if len == 0 || n == BATCH_ROWS || bytes >= BATCH_BYTES {
                break;
            }
        }
        q.queued -= n;
        q.in_flight += n;
        (taken, n, bytes)
    }

    fn done(&self, lines: usize, bytes: usize) {
        let mut q = lock(&self.queue);
        q.in_flight -= lines;
        q.bytes -= bytes;
    }

    fn report(&self) -> SinkReport {
        SinkReport {
            url: self.url.clone(),
            rows_sent: self.sent.load(Relaxed),
            rows_waiting: self.waiting() as u64,
            rows_dropped: self.dropped.load(Relaxed),
            queue_rows: self.capacity as u64,
            lines_skipped: self.skipped.load(Relaxed),
            failing: self.failing.load(Relaxed),
            last_error: lock(&self.last_error).clone(),
        }
    }
}

/// The running sink: give [`ScanSink::tap`] to the access log.
pub struct ScanSink {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for ScanSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanSink")
            .field("url", &self.shared.url)
            .finish_non_exhaustive()
    }
}

impl ScanSink {
    /// Starts the sender thread; [`ScanSink::tap`] gives it logs.
    pub fn start(
        settings: &SinkSettings,
        node: String,
        geo: Option<GeoDb>,
    ) -> std::io::Result<ScanSink> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            logs: Mutex::new(Vec::new()),
            capacity: settings.queue_rows.max(1),
            capacity_bytes: settings.queue_rows.max(1).saturating_mul(BYTES_PER_ROW),
            wake: tokio::sync::Notify::new(),
            stop: AtomicBool::new(false),
            stopped: tokio::sync::Notify::new(),
            sent: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            failing: AtomicBool::new(false),
            last_error: Mutex::new(None),
            url: settings.url.to_string(),
        });
        let client = Client::new(settings.url.clone(), SEND_TIMEOUT);
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("scan-sink".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::error!(error = %e, "the ClickHouse scan sink cannot start its runtime; scans stay in the access log");
                        return;
                    }
                };
                let maker = match RowMaker::new(node, geo) {
                    Ok(m) => m,
                    Err(e) => {
                        tracing::error!(error = %e, "the ClickHouse scan sink cannot compile the User-Agent rules; scans stay in the access log");
                        return;
                    }
                };
                runtime.block_on(Sender::new(for_thread, client, maker).run());
            })?;
        Ok(ScanSink {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// What one domain's access log hands its lines to.
    pub fn tap(&self, log: TappedLog) -> Arc<dyn LineTap> {
        let log = Arc::new(log);
        lock(&self.shared.logs).push(Arc::clone(&log));
        Arc::new(DomainTap {
            shared: Arc::clone(&self.shared),
            log,
        })
    }

    pub fn report(&self) -> SinkReport {
        self.shared.report()
    }

    /// After the access log's last line: sends what waits, one attempt a
    /// batch, for at most `within`. Blocks.
    pub fn finish(&self, within: Duration) {
        self.shared.stop.store(true, Relaxed);
        self.shared.wake.notify_one();
        self.shared.stopped.notify_one();
        let Some(thread) = lock(&self.thread).take() else {
            return;
        };
        let deadline = Instant::now() + within;
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let left = self.shared.waiting();
        if left > 0 {
            tracing::warn!(
                rows = left,
                url = %self.shared.url,
                "scans not sent to ClickHouse at exit; they are in the access log: qrtag stats --load-into fills them in"
            );
        }
    }
}

/// A domain's day, as rows carry them.
type DomainDay = (String, chrono::NaiveDate);

/// The sender thread's state.
struct Sender {
    shared: Arc<Shared>,
    client: Client,
    maker: RowMaker,
    backoff: Duration,
    failure_said: Option<Instant>,
    drops_said: (u64, Option<Instant>),
    /// Settled days (`rollup::settled`) it delivered rows of since its
    /// last roll of them: rolled again, at most every `rollup::EVERY`.
    late: BTreeSet<DomainDay>,
    late_rolled: Option<Instant>,
}

impl Sender {
    fn new(shared: Arc<Shared>, client: Client, maker: RowMaker) -> Self {
        Sender {
            shared,
            client,
            maker,
            backoff: FIRST_BACKOFF,
            failure_said: None,
            drops_said: (0, None),
            late: BTreeSet::new(),
            late_rolled: None,
        }
    }

    async fn run(mut self) {
        let mut next = Instant::now() + BATCH_INTERVAL;
        loop {
            while !self.shared.stopping()
                && self.shared.waiting() < BATCH_ROWS
                && Instant::now() < next
            {
                tokio::select! {
                    () = self.shared.wake.notified() => {}
                    () = tokio::time::sleep_until(next.into()) => {}
                }
            }
            self.say_drops();
            while !self.shared.ready() && !self.shared.stopping() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let stopping = self.shared.stopping();
            loop {
                let (chunks, lines, bytes) = self.shared.take();
                if lines == 0 {
                    break;
                }
                let (body, rows, late) = self.rows(&chunks);
                if !self.send(body, rows, (lines, bytes), stopping).await {
                    return;
                }
                self.late.extend(late);
                if !stopping && self.shared.waiting() < BATCH_ROWS {
                    break;
                }
            }
            if stopping {
                return;
            }
            self.roll_late().await;
            next = Instant::now() + BATCH_INTERVAL;
        }
    }

    /// The batch's rows, how many, and the settled days they are of.
    fn rows(&mut self, chunks: &[Chunk]) -> (Vec<u8>, u64, BTreeSet<DomainDay>) {
        let mut body = Vec::with_capacity(chunks.iter().map(|c| c.lines.len() * 2).sum());
        let mut rows = 0u64;
        let mut late = BTreeSet::new();
        let now = chrono::Utc::now();
        for chunk in chunks {
            let mut at = 0usize;
            for line in chunk.lines.split_inclusive(|&b| b == b'\n') {
                let offset = chunk.offset + at as u64;
                at += line.len();
                match self
                    .maker
                    .write(&mut body, &chunk.log.source, chunk.log_id, offset, line)
                {
                    Some(day) => {
                        rows += 1;
                        if rollup::settled(day, now) {
                            late.insert((chunk.log.source.domain.clone(), day));
                        }
                    }
                    None => {
                        self.shared.skipped.fetch_add(1, Relaxed);
                    }
                }
            }
        }
        (body, rows, late)
    }

    /// Rolls again the settled days it delivered rows of (and their
    /// domains' windows), so the dashboard counts rows a long outage held
    /// back; at most every `rollup::EVERY`, since a node with a skewed
    /// clock could send such rows all day. A failure is logged and tried
    /// again next time.
    async fn roll_late(&mut self) {
        if self.late.is_empty()
            || self
                .late_rolled
                .is_some_and(|t| t.elapsed() < rollup::EVERY)
        {
            return;
        }
        self.late_rolled = Some(Instant::now());
        let client = Client::new(self.client.url().clone(), rollup::ROLL_TIMEOUT);
        let now = chrono::Utc::now();
        let days = std::mem::take(&mut self.late);
        let mut domains = BTreeSet::new();
        for (domain, day) in &days {
            if let Err(e) = rollup::roll_day(&client, domain, *day, now).await {
                tracing::warn!(error = %e, day = %day, "ClickHouse: rolling up a day the sink delivered late failed; tried again later");
                self.late = days;
                return;
            }
            domains.insert(domain.as_str());
        }
        for domain in domains {
            if let Err(e) = super::windows::build_due(&client, domain, now).await {
                tracing::warn!(error = %e, domain = %domain, "ClickHouse: summing the periods' links after late rows failed; the roller tries again");
            }
        }
        tracing::info!(
            days = days.len(),
            "ClickHouse: days the sink delivered late rolled up again"
        );
    }

    /// Sends one batch until it is accepted; while stopping, once. False
    /// when the sender is to end (stopping and the send failed).
    /// `taken` is the lines and bytes the batch holds of the queue.
    async fn send(
        &mut self,
        body: Vec<u8>,
        rows: u64,
        taken: (usize, usize),
        stopping: bool,
    ) -> bool {
        loop {
            if rows == 0 {
                self.shared.done(taken.0, taken.1);
                return true;
            }
            match self.client.insert_json_rows("scans", body.clone()).await {
                Ok(()) => {
                    self.shared.done(taken.0, taken.1);
                    self.shared.sent.fetch_add(rows, Relaxed);
                    self.backoff = FIRST_BACKOFF;
                    if self.shared.failing.swap(false, Relaxed) {
                        tracing::warn!(url = %self.shared.url, "scans reach ClickHouse again");
                        self.failure_said = None;
                    }
                    return true;
                }
                Err(e) => {
                    self.failed(&e);
                    if stopping || self.shared.stopping() {
                        return false;
                    }
                    tokio::select! {
                        () = tokio::time::sleep(self.backoff) => {}
                        () = self.shared.stopped.notified() => {}
                    }
                    self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                    self.say_drops();
                }
            }
        }
    }

    fn failed(&mut self, e: &ClickHouseError) {
        self.shared.failing.store(true, Relaxed);
        *lock(&self.shared.last_error) = Some(format!(
            "{}: {e}",
            chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ")
        ));
        let now = Instant::now();
        if self.failure_said.is_some_and(|t| now - t < REPORT_EVERY) {
            return;
        }
        self.failure_said = Some(now);
        tracing::warn!(
            error = %e,
            rows_waiting = self.shared.waiting(),
            "sending scans to ClickHouse failed; they wait in the queue and are retried"
        );
    }

    fn say_drops(&mut self) {
        let dropped = self.shared.dropped.load(Relaxed);
        let (said, at) = self.drops_said;
        let now = Instant::now();
        if dropped == said || at.is_some_and(|t| now - t < REPORT_EVERY) {
            return;
        }
        self.drops_said = (dropped, Some(now));
        tracing::warn!(
            rows_dropped_total = dropped,
            since_last_report = dropped - said,
            "scans dropped: the ClickHouse queue (--scans-queue) is full; they are in the access log, for qrtag stats --load-into"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(capacity: usize) -> Shared {
        Shared {
            queue: Mutex::new(Queue::default()),
            logs: Mutex::new(Vec::new()),
            capacity,
            capacity_bytes: capacity * BYTES_PER_ROW,
            wake: tokio::sync::Notify::new(),
            stop: AtomicBool::new(false),
            stopped: tokio::sync::Notify::new(),
            sent: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            failing: AtomicBool::new(false),
            last_error: Mutex::new(None),
            url: "http://ch:8123/qrtag".into(),
        }
    }

    fn log() -> Arc<TappedLog> {
        Arc::new(TappedLog {
            source: LogSource {
                domain: "0x1f.ie".into(),
                is_link: Box::new(|_| false),
            },
            ready: Box::new(|| true),
        })
    }

    #[test]
    fn a_full_queue_takes_what_fits_and_counts_the_rest() {
        let s = shared(3);
        let landed = |offset, lines: &'static [u8]| Landed {
            first_line: b"a\n",
            offset,
            lines,
        };
        s.push(&log(), landed(0, b"a\nb\n"));
        s.push(&log(), landed(4, b"c\nd\ne\n"));
        assert_eq!(s.waiting(), 3);
        assert_eq!(s.dropped.load(Relaxed), 2);
        let (chunks, n, bytes) = s.take();
        assert_eq!(bytes, 6);
        assert_eq!(n, 3);
        assert_eq!(s.waiting(), 3, "in flight still counts");
        let pieces: Vec<(u64, &[u8])> = chunks
            .iter()
            .map(|c| (c.offset, c.lines.as_slice()))
            .collect();
        assert_eq!(pieces, [(0, &b"a\nb\n"[..]), (4, &b"c\n"[..])]);
        assert!(chunks.iter().all(|c| c.log_id == row::log_id(b"a\n")));
        s.push(&log(), landed(10, b"f\n"));
        assert_eq!(
            s.dropped.load(Relaxed),
            3,
            "a batch being retried keeps its room"
        );
        s.done(n, bytes);
        assert_eq!(s.waiting(), 0);
    }

    #[test]
    fn long_lines_are_bounded_by_their_bytes_too() {
        let mut s = shared(10);
        s.capacity_bytes = 10;
        let lines: &'static [u8] = b"aaaa\nbbbb\ncccc\n";
        s.push(
            &log(),
            Landed {
                first_line: b"aaaa\n",
                offset: 0,
                lines,
            },
        );
        assert_eq!(s.waiting(), 2, "two lines of five bytes fill ten");
        assert_eq!(s.dropped.load(Relaxed), 1);
        assert_eq!(fitting(b"ab\ncd\n", 5, 4), (1, 3));
        assert_eq!(fitting(b"ab\ncd\n", 1, 100), (1, 3));
        assert_eq!(fitting(b"ab\ncd\n", 0, 100), (0, 0));
    }

    #[test]
    fn a_batch_is_cut_at_the_row_limit_with_the_rest_at_its_offset() {
        let s = shared(BATCH_ROWS * 2);
        let lines: Vec<u8> = b"xy\n".repeat(BATCH_ROWS + 2);
        let lines: &'static [u8] = Box::leak(lines.into_boxed_slice());
        s.push(
            &log(),
            Landed {
                first_line: b"xy\n",
                offset: 100,
                lines,
            },
        );
        let (_, n, _) = s.take();
        assert_eq!(n, BATCH_ROWS);
        let (rest, m, _) = s.take();
        assert_eq!(m, 2);
        assert_eq!(rest[0].offset, 100 + 3 * BATCH_ROWS as u64);
    }
}

//! Scan counts for the console, kept current from the access log.
//!
//! `qrtag stats` reads whole logs; a page view cannot. The index follows
//! the log instead ([`follow`]): it reads each line once, as it is written
//! and across rotations, into counts in memory ([`index`]) that a page
//! queries in microseconds, and keeps a checkpoint ([`checkpoint`]) so that a
//! restart reads only the lines written since. Every line is classified and
//! counted by the same functions as `qrtag stats`
//! ([`crate::stats::aggregate::classify`], [`KeyStats::count`]).
//!
//! One thread does all of it (it is the state's only writer); the console
//! holds an `Arc<ScanIndex>` and reads under a read lock that the thread
//! takes for writing only while it counts one chunk of lines, never while it
//! reads or writes a file.

pub mod breakdowns;
mod buckets;
pub mod checkpoint;
pub mod destinations;
pub mod follow;
pub mod index;
mod key_tallies;
mod pairs;
pub mod sketch;
pub mod sources;
mod walk;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chrono::NaiveDate;

use crate::stats::aggregate::KeyStats;
use crate::stats::dimensions::place::GeoDb;
use crate::stats::dimensions::{Deriver, device};
pub use breakdowns::{Basis, Share, Shares};
pub use checkpoint::{DecodeError, FileMark, LogMarks};
pub use destinations::DestinationScans;
pub use follow::Progress;
pub use index::{
    DayScans, DayTotals, EXACT_KEY_SCANNERS, EXACT_TOTAL_SCANNERS, IndexState, TopKey,
};
pub use sources::{Expansion, LogSources, SourceError};
pub use walk::MAX_ENTRIES as MAX_WALK_ENTRIES;

/// How the index follows the log and where it keeps its checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanIndexSettings {
    pub checkpoint: PathBuf,
    /// How often the live file is looked at: the most a count lags behind
    /// the log (plus the log's own flush interval).
    pub poll_interval: Duration,
    /// The least time between two checkpoints: a checkpoint of a million
    /// keys is hundreds of megabytes, and a restart rereads at most this
    /// much of the log.
    pub checkpoint_interval: Duration,
    /// The logs to follow (`--scan-log`); `None`: the server's own access log.
    pub logs: Option<LogSources>,
    /// Keep the breakdowns too, and with what (`None`: only the counts).
    pub breakdowns: Option<BreakdownSettings>,
}

/// What the breakdowns are counted with: the time zone of the hour ×
/// weekday map and the GeoIP database (`serve --time-zone`, `--geoip-db`).
#[derive(Clone)]
pub struct BreakdownSettings {
    pub basis: Basis,
    pub geo: Option<GeoDb>,
}

impl BreakdownSettings {
    /// In `time_zone`, with the places of `geoip` (its path as given, and
    /// the database opened from it).
    pub fn new(time_zone: chrono_tz::Tz, geoip: Option<(&Path, GeoDb)>) -> BreakdownSettings {
        BreakdownSettings {
            basis: Basis {
                time_zone,
                geoip: geoip
                    .as_ref()
                    .map(|(p, _)| p.to_string_lossy().into_owned()),
            },
            geo: geoip.map(|(_, db)| db),
        }
    }
}

impl Default for BreakdownSettings {
    /// UTC, no places.
    fn default() -> BreakdownSettings {
        BreakdownSettings::new(chrono_tz::Tz::UTC, None)
    }
}

impl std::fmt::Debug for BreakdownSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BreakdownSettings")
            .field(&self.basis)
            .finish()
    }
}

/// Equal when counted on the same basis (the database by its path).
impl PartialEq for BreakdownSettings {
    fn eq(&self, other: &BreakdownSettings) -> bool {
        self.basis == other.basis
    }
}

impl Eq for BreakdownSettings {}

/// What each follower builds its [`Deriver`] from: the uap-core rules
/// compiled once for all of them.
struct DeriveInputs {
    settings: BreakdownSettings,
    parser: device::Parser,
}

impl DeriveInputs {
    fn deriver(&self) -> Deriver {
        Deriver::new(
            self.settings.basis.time_zone,
            Some(self.parser.clone()),
            self.settings.geo.clone(),
        )
    }

    /// Starts compiling the rules on a thread of its own (on this one if
    /// no thread can be started).
    fn compile(settings: BreakdownSettings) -> Compiling {
        let build =
            |settings| device::Parser::new().map(|parser| DeriveInputs { settings, parser });
        let (tx, rx) = mpsc::sync_channel(1);
        let spawned = std::thread::Builder::new()
            .name("scan-index-rules".into())
            .spawn({
                let settings = settings.clone();
                move || tx.send(build(settings)).ok()
            });
        match spawned {
            Ok(_) => Compiling::Thread(rx),
            Err(_) => Compiling::Done(build(settings)),
        }
    }
}

/// The rules being compiled ([`DeriveInputs::compile`]).
enum Compiling {
    Thread(mpsc::Receiver<Result<DeriveInputs, device::RulesError>>),
    Done(Result<DeriveInputs, device::RulesError>),
}

impl Compiling {
    /// Waits for the rules.
    fn join(self) -> Result<DeriveInputs, String> {
        let done = match self {
            Compiling::Thread(rx) => rx
                .recv()
                .map_err(|_| "the thread compiling them stopped".to_owned())?,
            Compiling::Done(done) => done,
        };
        done.map_err(|e| e.to_string())
    }
}

impl ScanIndexSettings {
    /// The checkpoint beside the log, [`default_checkpoint`].
    pub fn beside(log: &Path) -> ScanIndexSettings {
        ScanIndexSettings {
            checkpoint: default_checkpoint(log),
            poll_interval: Duration::from_millis(250),
            checkpoint_interval: Duration::from_secs(60),
            logs: None,
            breakdowns: Some(BreakdownSettings::default()),
        }
    }
}

/// The default checkpoint beside `log`, hidden: `.access.log.scan-index`.
/// A pattern for the log's files (`access.log*`) never names it, so
/// `qrtag stats access.log*` reads only logs.
pub fn default_checkpoint(log: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(log.file_name().unwrap_or(log.as_os_str()));
    name.push(".scan-index");
    log.with_file_name(name)
}

/// Where versions before the hidden name kept the checkpoint,
/// `access.log.scan-index`: matched by `access.log*`.
fn old_default_checkpoint(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".scan-index");
    PathBuf::from(name)
}

/// Moves a checkpoint from its old default name to the new one, so an
/// upgrade keeps its counts instead of rereading every log; only when
/// the checkpoint is the default one and none is at the new name.
fn move_old_checkpoint(log: &Path, checkpoint: &Path) {
    let old = old_default_checkpoint(log);
    if checkpoint != default_checkpoint(log) || checkpoint.exists() || !old.exists() {
        return;
    }
    match std::fs::rename(&old, checkpoint) {
        Ok(()) => tracing::info!(
            from = %old.display(),
            to = %checkpoint.display(),
            "moved the scan index checkpoint to its new name"
        ),
        Err(e) => tracing::warn!(
            from = %old.display(),
            error = %e,
            "cannot move the scan index checkpoint to its new name"
        ),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read scan index checkpoint {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("ignoring scan index checkpoint {path}: {source}")]
    Invalid {
        path: PathBuf,
        #[source]
        source: DecodeError,
    },
}

/// Reads the checkpoint at `path` made for the logs `sources` names, with
/// breakdowns counted on `basis` (or none): `Ok(None)` when there is none,
/// an error (to report, then rebuild) when it cannot be believed.
pub fn load_checkpoint(
    path: &Path,
    sources: &LogSources,
    basis: Option<&Basis>,
) -> Result<Option<checkpoint::Decoded>, LoadError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(LoadError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let len = file
        .metadata()
        .map_err(|source| LoadError::Read {
            path: path.to_owned(),
            source,
        })?
        .len();
    checkpoint::decode(file, len, &sources.checkpoint_key(), basis)
        .map(Some)
        .map_err(|source| LoadError::Invalid {
            path: path.to_owned(),
            source,
        })
}

/// The links lines are counted under ([`crate::stats::attribute`]): a
/// path below a hierarchical key counts under that key, as `qrtag stats`
/// with the store counts it.
pub trait Links: Send + Sync {
    /// False until the links are known: counting before would put every
    /// path under itself.
    fn ready(&self) -> bool;
    fn is_link(&self, key: &str) -> bool;
}

/// The server's own links: the table its answers come from, so a line
/// counts under the link that answered it (or, read after a restart, the
/// link that would answer it now).
impl Links for crate::snapshot::Snapshot {
    fn ready(&self) -> bool {
        self.is_loaded()
    }

    fn is_link(&self, key: &str) -> bool {
        self.load().get(key).is_some()
    }
}

/// The counts, shared between the follower thread and the pages that read them.
#[derive(Debug, Default)]
pub struct ScanIndex {
    state: RwLock<IndexState>,
    progress: Progress,
    caught_up: AtomicBool,
    /// The pattern whose last expansion ran out of directory entries
    /// ([`MAX_WALK_ENTRIES`]), for `/readyz`.
    walk_cut: Mutex<Option<String>>,
}

impl ScanIndex {
    pub fn new() -> ScanIndex {
        ScanIndex::default()
    }

    /// A panic elsewhere cannot leave the counts half updated in a way that
    /// matters more than stopping the console would, so a poisoned lock is
    /// used as it is.
    fn read(&self) -> RwLockReadGuard<'_, IndexState> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, IndexState> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs several queries on one consistent state (a page's numbers all
    /// from the same moment).
    pub fn with_state<R>(&self, f: impl FnOnce(&IndexState) -> R) -> R {
        f(&self.read())
    }

    /// A key's counts, `qrtag stats --key KEY`'s numbers; zeros for a key
    /// never requested.
    pub fn key(&self, key: &str) -> KeyStats {
        self.read().key(key)
    }

    /// A key's scans per day in `from..=to` (days without scans left out).
    pub fn key_days(&self, key: &str, from: NaiveDate, to: NaiveDate) -> Vec<DayScans> {
        self.read().key_days(key, from, to)
    }

    /// Scans since `since` (inclusive) of each of `keys`, in order: one
    /// lock for a page of rows.
    pub fn scans_since(&self, keys: &[&str], since: NaiveDate) -> Vec<u64> {
        let state = self.read();
        keys.iter().map(|k| state.scans_since(k, since)).collect()
    }

    /// The `n` keys with the most scans since `since`, most first.
    pub fn top_keys(&self, n: usize, since: NaiveDate) -> Vec<TopKey> {
        self.read().top_keys(n, since)
    }

    /// All keys together per day in `from..=to` (days without requests left out).
    pub fn daily_totals(&self, from: NaiveDate, to: NaiveDate) -> Vec<DayTotals> {
        self.read().daily_totals(from, to)
    }

    /// All keys together, as `qrtag stats`'s total line.
    pub fn totals(&self) -> KeyStats {
        self.read().totals()
    }

    /// A key's breakdowns of all time (`None`: the index keeps none).
    pub fn key_shares(&self, key: &str) -> Option<Shares> {
        self.read().key_shares(key)
    }

    /// A key's scans per destination of all time (issue 34).
    pub fn key_destinations(&self, key: &str) -> Vec<DestinationScans> {
        self.read().key_destinations(key)
    }

    /// All keys' breakdowns over the days `from..=to` (`None`: none kept).
    pub fn day_shares(&self, from: NaiveDate, to: NaiveDate) -> Option<Shares> {
        self.read().day_shares(from, to)
    }

    /// False until the log as it was at start has been read: until then a
    /// page should say the counts are still being built.
    pub fn caught_up(&self) -> bool {
        self.caught_up.load(Ordering::Acquire)
    }

    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// What `/readyz` should say about the index: a `--scan-log` pattern
    /// that names more than one expansion may look at.
    pub fn problem(&self) -> Option<String> {
        let cut = self.walk_cut.lock().unwrap_or_else(PoisonError::into_inner);
        cut.as_ref().map(|pattern| {
            format!(
                "scan log pattern `{pattern}` stopped after {MAX_WALK_ENTRIES} directory entries; logs beyond are not counted: name a narrower directory"
            )
        })
    }

    /// Records what the last expansion ran out on (`None`: nothing); true
    /// when that changed.
    fn set_walk_cut(&self, cut: Option<String>) -> bool {
        let mut was = self.walk_cut.lock().unwrap_or_else(PoisonError::into_inner);
        if cut.is_some() {
            self.progress.walks_cut.fetch_add(1, Ordering::Relaxed);
        }
        let changed = *was != cut;
        *was = cut;
        changed
    }
}

/// The follower thread and the index it fills. Dropping it stops the
/// thread without waiting; [`stop`](Self::stop) waits for it and its last
/// checkpoint.
pub struct RunningIndex {
    index: Arc<ScanIndex>,
    stopping: Arc<AtomicBool>,
    wake: mpsc::Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl RunningIndex {
    pub fn index(&self) -> Arc<ScanIndex> {
        Arc::clone(&self.index)
    }

    /// Stops following and writes a last checkpoint. Blocks (a checkpoint
    /// is a large write): call it off the async runtime's threads.
    pub fn stop(mut self) {
        self.signal();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    fn signal(&self) {
        self.stopping.store(true, Ordering::Release);
        let _ = self.wake.send(());
    }
}

impl Drop for RunningIndex {
    fn drop(&mut self) {
        self.signal();
    }
}

/// Starts following the logs `sources` names (an access log's path, or
/// [`LogSources`]): loads the checkpoint (or rebuilds from the logs),
/// catches up, then polls, all on a new thread. Each line counts under its
/// path; [`start_with_links`] counts it under its link.
pub fn start(
    sources: impl Into<LogSources>,
    settings: ScanIndexSettings,
) -> io::Result<RunningIndex> {
    start_following(sources.into(), settings, None)
}

/// [`start`], counting each line under the link among `links` that
/// answered it, once `links` are [ready](Links::ready).
pub fn start_with_links(
    sources: impl Into<LogSources>,
    settings: ScanIndexSettings,
    links: Arc<dyn Links>,
) -> io::Result<RunningIndex> {
    start_following(sources.into(), settings, Some(links))
}

fn start_following(
    sources: LogSources,
    settings: ScanIndexSettings,
    links: Option<Arc<dyn Links>>,
) -> io::Result<RunningIndex> {
    let index = Arc::new(ScanIndex::new());
    let stopping = Arc::new(AtomicBool::new(false));
    let (wake, woken) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("scan-index".into())
        .spawn({
            let index = Arc::clone(&index);
            let stopping = Arc::clone(&stopping);
            move || {
                run(
                    &index,
                    &sources,
                    &settings,
                    links.as_deref(),
                    &stopping,
                    &woken,
                )
            }
        })?;
    Ok(RunningIndex {
        index,
        stopping,
        wake,
        thread: Some(thread),
    })
}

fn run(
    index: &ScanIndex,
    sources: &LogSources,
    settings: &ScanIndexSettings,
    links: Option<&dyn Links>,
    stopping: &AtomicBool,
    woken: &mpsc::Receiver<()>,
) {
    let stopped = || stopping.load(Ordering::Acquire);
    if let Some(links) = links {
        while !links.ready() {
            match woken.recv_timeout(settings.poll_interval) {
                Err(RecvTimeoutError::Timeout) if !stopped() => {}
                _ => return,
            }
        }
    }
    let started = Instant::now();
    // The uap-core rules take a quarter of a second to compile, and no
    // line is counted before the checkpoint is read: they compile on a
    // thread of their own meanwhile, off a restart's critical path.
    let compiling = settings.breakdowns.clone().map(DeriveInputs::compile);
    let basis = settings.breakdowns.as_ref().map(|b| &b.basis);
    *index.write() = match basis {
        Some(basis) => IndexState::new().with_breakdowns(basis.clone()),
        None => IndexState::new(),
    };
    if let [only] = sources.patterns() {
        move_old_checkpoint(Path::new(only), &settings.checkpoint);
    }
    let loaded = match load_checkpoint(&settings.checkpoint, sources, basis) {
        Ok(Some(decoded)) => {
            *index.write() = decoded.state;
            decoded.logs
        }
        Ok(None) => Vec::new(),
        Err(e) => {
            tracing::warn!(error = %e, "rebuilding the scan index from the access logs");
            Vec::new()
        }
    };
    let derive = compiling.and_then(|c| {
        c.join()
            .map_err(|e| tracing::error!(error = %e, "the scan index keeps no breakdowns"))
            .ok()
    });
    if derive.is_none() {
        // Nothing would count them: none shown rather than some stale.
        index.write().drop_breakdowns();
    }
    let loaded_lines = index.read().lines_read();
    let mut logs = Logs {
        index,
        derive: derive.as_ref(),
        links,
        stopped: &stopped,
        loaded,
        followers: Vec::new(),
        next_look: Instant::now(),
    };
    if logs.follow_new(sources).is_err() {
        return;
    }
    index.progress.polls.fetch_add(1, Ordering::Relaxed);
    index.caught_up.store(true, Ordering::Release);
    tracing::info!(
        lines = index.read().lines_read(),
        new_lines = index.read().lines_read() - loaded_lines,
        logs = logs.followers.len(),
        took = ?started.elapsed(),
        "scan index caught up with the access logs"
    );
    let sources_key = sources.checkpoint_key();
    // Anything read since the checkpoint is worth saving at once: the
    // catch-up may have been the expensive full build.
    let mut saved_lines = loaded_lines;
    let mut last_save: Option<Instant> = None;
    let mut save = |logs: &Logs<'_>, force: bool| {
        let lines = index.read().lines_read();
        let due = last_save.is_none_or(|t| t.elapsed() >= settings.checkpoint_interval);
        if lines == saved_lines || !(due || force) {
            return;
        }
        let Some(marks) = logs.marks() else {
            return;
        };
        let written = crate::snapshot::file::write_atomically(&settings.checkpoint, |w| {
            checkpoint::encode(&index.read(), &marks, &sources_key, w)
        });
        match written {
            Ok(()) => {
                saved_lines = lines;
                index
                    .progress
                    .checkpoints_written
                    .fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(
                path = %settings.checkpoint.display(),
                error = %e,
                "cannot write the scan index checkpoint"
            ),
        }
        last_save = Some(Instant::now());
    };
    loop {
        save(&logs, false);
        match woken.recv_timeout(settings.poll_interval) {
            Err(RecvTimeoutError::Timeout) if !stopped() => {}
            _ => break,
        }
        if logs.poll(sources).is_err() {
            break;
        }
    }
    save(&logs, true);
}

/// The followers of every live log the sources name, one each, sharing
/// the index; a log that appears later gets its follower at the next poll.
struct Logs<'a> {
    index: &'a ScanIndex,
    derive: Option<&'a DeriveInputs>,
    links: Option<&'a dyn Links>,
    stopped: &'a dyn Fn() -> bool,
    /// The checkpoint's marks, by log, for each log's first catch-up.
    loaded: Vec<LogMarks>,
    followers: Vec<(PathBuf, follow::Follower<'a>)>,
    /// When the patterns are next matched: a walk takes at most a tenth
    /// of the index's time, however many entries the patterns name.
    next_look: Instant,
}

/// How many times as long as the last walk the index waits before the next.
const WALK_PAUSE: u32 = 10;

impl<'a> Logs<'a> {
    /// Starts a follower (reading its rotations and its file so far) for
    /// each live log the patterns name that has none yet.
    fn follow_new(&mut self, sources: &LogSources) -> Result<(), follow::Stopped> {
        let started = Instant::now();
        if started < self.next_look {
            return Ok(());
        }
        let Expansion { logs, cut } = sources.expand(self.stopped)?;
        let took = started.elapsed();
        tracing::debug!(?took, logs = logs.len(), "scan log patterns matched");
        self.next_look = Instant::now() + took * WALK_PAUSE;
        if self.index.set_walk_cut(cut.clone())
            && let Some(pattern) = cut
        {
            tracing::warn!(
                pattern,
                entries = MAX_WALK_ENTRIES,
                "a scan log pattern names more than the index looks at: logs beyond are not counted"
            );
        }
        for path in logs {
            // A followed log's rotation is read by its follower, also in
            // the moment between logrotate's rename and its new file, when
            // `nodes/*` names the rotation alone.
            if self
                .followers
                .iter()
                .any(|(p, _)| *p == path || sources::is_rotation_of(p, &path))
            {
                continue;
            }
            let name = path.to_string_lossy();
            let marks = self
                .loaded
                .iter()
                .position(|l| l.log == name)
                .map(|i| self.loaded.swap_remove(i).marks)
                .unwrap_or_default();
            let mut follower = follow::Follower::new(self.index, path.clone(), self.stopped);
            if let Some(links) = self.links {
                follower = follower.with_links(links);
            }
            if let Some(derive) = self.derive {
                follower = follower.with_deriver(derive.deriver());
            }
            if !self.followers.is_empty() {
                tracing::info!(log = %path.display(), "the scan index follows a new log");
            }
            follower.catch_up(&marks)?;
            self.followers.push((path, follower));
        }
        Ok(())
    }

    /// Reads what every log gained, then looks for new logs.
    fn poll(&mut self, sources: &LogSources) -> Result<(), follow::Stopped> {
        for (_, follower) in &mut self.followers {
            follower.poll()?;
        }
        self.follow_new(sources)?;
        self.index.progress.polls.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Every log's marks, or `None` while one may not be checkpointed.
    fn marks(&self) -> Option<Vec<LogMarks>> {
        self.followers
            .iter()
            .map(|(path, f)| {
                f.marks().map(|marks| LogMarks {
                    log: path.to_string_lossy().into_owned(),
                    marks,
                })
            })
            .collect()
    }
}

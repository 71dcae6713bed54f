//! Following the access log: the rotated files once, then the live file as
//! it grows, across rotations and truncations, counting every line once.
//!
//! A file is known by the hash of its first line ([`FileMark::head`]), which
//! survives a rename and a gzip; inode and device only tell the follower
//! that the path now names another file. Runs on one thread, the index's
//! only writer: lines are read outside the lock and counted under a short
//! write lock per chunk.
//!
//! Rotation, as logrotate does it with `create` (rename, new empty file,
//! SIGHUP): once the path names a new file, the old one is still read (the
//! writer may append to it until it reopens) until the new file holds a
//! byte, which the writer only writes after reopening; the old file is then
//! read to its end once more and closed. So no line is missed, however the
//! rename, the reopen and the polls interleave. With `copytruncate`, the file
//! shrinks instead: the copy (`access.log.1`, recognised by its first line)
//! holds what was not read yet, and the live file is read again from 0.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::bufread::MultiGzDecoder;
use sha2::{Digest, Sha256};

use crate::access_log::format::parse_line_bytes;
use crate::stats::aggregate::BotFilter;
use crate::stats::attribute::link_key;
use crate::stats::dimensions::Deriver;

use super::Links;
use crate::stats::read::{LineError, MAX_LINE};

use super::ScanIndex;
use super::checkpoint::FileMark;
use super::index::IndexState;

/// Large reads keep system calls off the per-line cost of the first build;
/// each chunk is counted under one write lock (a few milliseconds).
const CHUNK: usize = 1 << 20;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Splits a byte stream into lines as [`crate::stats::read::for_each_line`]
/// does (same cap, same verdicts), but across reads that may end anywhere:
/// an unfinished last line waits for the next read.
#[derive(Debug, Default)]
struct Lines {
    /// Bytes of the stream counted: always just after a `\n`.
    offset: u64,
    /// Bytes read after `offset`, held in `carry` (or skipped, for a line
    /// over the cap).
    pending: u64,
    carry: Vec<u8>,
    skipping: bool,
}

impl Lines {
    fn at(offset: u64) -> Lines {
        Lines {
            offset,
            ..Lines::default()
        }
    }

    /// Where the next read continues.
    fn position(&self) -> u64 {
        self.offset + self.pending
    }

    fn feed(&mut self, chunk: &[u8], mut f: impl FnMut(Result<&[u8], LineError>)) {
        let mut rest = chunk;
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            let (line, after) = rest.split_at(nl + 1);
            if self.skipping {
                f(Err(LineError::TooLong));
            } else if self.carry.is_empty() {
                f(if line.len() > MAX_LINE {
                    Err(LineError::TooLong)
                } else {
                    Ok(line)
                });
            } else {
                self.carry.extend_from_slice(line);
                f(if self.carry.len() > MAX_LINE {
                    Err(LineError::TooLong)
                } else {
                    Ok(&self.carry)
                });
            }
            self.carry.clear();
            self.skipping = false;
            self.offset += self.pending + line.len() as u64;
            self.pending = 0;
            rest = after;
        }
        self.pending += rest.len() as u64;
        if !self.skipping {
            self.carry.extend_from_slice(rest);
            // With its `\n` it would be over the cap: count it as too long
            // when it ends, and hold none of it meanwhile.
            if self.carry.len() >= MAX_LINE {
                self.carry = Vec::new();
                self.skipping = true;
            }
        }
    }

    /// The stream has ended for good: an unfinished line is one malformed
    /// line, as `qrtag stats` counts it.
    fn finish(&mut self, mut f: impl FnMut(Result<&[u8], LineError>)) {
        if self.pending > 0 {
            f(Err(if self.skipping {
                LineError::TooLong
            } else {
                LineError::Unterminated
            }));
        }
        self.offset += self.pending;
        self.pending = 0;
        self.carry = Vec::new();
        self.skipping = false;
    }
}

/// What a follower counts lines with besides the state: caches that
/// outlive a state replaced by a checkpoint's.
struct Counters {
    bots: BotFilter,
    deriver: Option<Deriver>,
}

fn count(
    state: &mut IndexState,
    counters: &mut Counters,
    links: Option<&dyn Links>,
    line: Result<&[u8], LineError>,
) {
    match line.ok().map(parse_line_bytes) {
        Some(Ok(parsed)) => {
            let key = match links {
                Some(links) => link_key(parsed.key(), |k| links.is_link(k)),
                None => parsed.key(),
            };
            state.add_with(&parsed, key, &mut counters.bots, counters.deriver.as_mut());
            if let Some(d) = &mut counters.deriver
                && d.names_len() > super::breakdowns::DERIVER_NAMES
            {
                *d = d.renewed();
            }
        }
        _ => state.add_malformed(),
    }
}

/// Counts what is read through it into one of the index's counters.
struct Counting<'a, R> {
    inner: R,
    counter: &'a AtomicU64,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Reads a file from a position without moving its cursor, so probing the
/// live file's first line does not disturb where following continues.
struct At<'a> {
    file: &'a File,
    pos: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

fn is_gzip(file: &File) -> io::Result<bool> {
    let mut magic = [0u8; 2];
    let n = file.read_at(&mut magic, 0)?;
    Ok(n == 2 && magic == GZIP_MAGIC)
}

/// The file's identity: a hash of its first line (of the decompressed
/// content for gzip), or `None` while it holds no complete line.
fn probe_head(file: &File, counter: &AtomicU64) -> io::Result<Option<[u8; 16]>> {
    let raw = Counting {
        inner: At { file, pos: 0 },
        counter,
    };
    let mut line = Vec::new();
    if is_gzip(file)? {
        let mut r = BufReader::with_capacity(16 << 10, MultiGzDecoder::new(BufReader::new(raw)));
        io::BufRead::read_until(&mut Read::take(&mut r, MAX_LINE as u64), b'\n', &mut line)?;
    } else {
        let mut r = BufReader::with_capacity(4 << 10, raw);
        io::BufRead::read_until(&mut Read::take(&mut r, MAX_LINE as u64), b'\n', &mut line)?;
    }
    if line.last() != Some(&b'\n') {
        return Ok(None);
    }
    let digest = Sha256::digest(&line);
    let mut head = [0u8; 16];
    head.copy_from_slice(&digest[..16]);
    Ok(Some(head))
}

/// Where a rotated file stands among the others: logrotate numbers them
/// (`access.log.1`, higher is older) or, with `dateext`, dates them
/// (`access.log-20261124`, or another `dateformat` such as `-%Y-%m-%d` or
/// `.%Y-%m-%d`: later is newer).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rotation {
    /// Dated files sort before numbered ones: a log that has both switched
    /// to numbers last, as nothing renames a numbered file to a date.
    Dated(String),
    /// Stored negated, so that the derived order is oldest first.
    Numbered(std::cmp::Reverse<u64>),
}

/// A name in the log's directory read as a rotation of `log_name`, and
/// whether it is gzip: `None` for the live file, the index's checkpoint
/// and anything else. A dated name needs at least eight digits (a day);
/// all digits after a `.` is a number, as logrotate writes without
/// `dateext`.
pub fn rotation_of(log_name: &str, file_name: &str) -> Option<(Rotation, bool)> {
    let rest = file_name.strip_prefix(log_name)?;
    let (body, gz) = match rest.strip_suffix(".gz") {
        Some(b) => (b, true),
        None => (rest, false),
    };
    let mut chars = body.chars();
    let separator = chars.next()?;
    let stamp = chars.as_str();
    let digits = stamp.bytes().filter(u8::is_ascii_digit).count();
    if digits == 0
        || !stamp
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'-' || b == b'_')
    {
        return None;
    }
    match separator {
        '.' if digits == stamp.len() => stamp
            .parse::<u64>()
            .ok()
            .map(|n| (Rotation::Numbered(std::cmp::Reverse(n)), gz)),
        '.' | '-' if digits >= 8 => Some((Rotation::Dated(stamp.to_owned()), gz)),
        _ => None,
    }
}

/// The rotated files of `log` ([`rotation_of`]), oldest first; a plain
/// file before a gzip one of the same name, which is the one logrotate is
/// still compressing.
pub fn rotated_files(log: &Path) -> io::Result<Vec<PathBuf>> {
    let Some(name) = log.file_name().and_then(|n| n.to_str()) else {
        return Ok(Vec::new());
    };
    let dir = match log.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let file_name = entry.file_name();
        if let Some((rotation, gz)) = file_name.to_str().and_then(|f| rotation_of(name, f)) {
            found.push((rotation, gz, entry.path()));
        }
    }
    found.sort();
    Ok(found.into_iter().map(|(_, _, p)| p).collect())
}

/// A plain file being followed.
struct Tracked {
    file: File,
    dev: u64,
    ino: u64,
    lines: Lines,
    head: Option<[u8; 16]>,
}

impl Tracked {
    fn open(file: File, offset: u64, head: Option<[u8; 16]>) -> io::Result<Tracked> {
        let meta = file.metadata()?;
        let mut file = file;
        file.seek(SeekFrom::Start(offset))?;
        Ok(Tracked {
            file,
            dev: meta.dev(),
            ino: meta.ino(),
            lines: Lines::at(offset),
            head,
        })
    }

    fn mark(&self, complete: bool) -> Option<FileMark> {
        let head = self.head?;
        (self.lines.offset > 0).then(|| FileMark {
            dev: self.dev,
            ino: self.ino,
            size: self.file.metadata().map_or(0, |m| m.len()),
            offset: self.lines.offset,
            head,
            complete,
        })
    }
}

/// What the follower has done, for `/readyz`-style reporting and tests.
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes read from log files to count lines (compressed bytes for a
    /// gzip file): what a restart from a checkpoint keeps to the new bytes.
    pub bytes_read: AtomicU64,
    /// Bytes read to recognise files by their first line.
    pub probe_bytes: AtomicU64,
    /// Files read to their end and closed (rotated away, or read at start).
    pub files_completed: AtomicU64,
    pub rotations: AtomicU64,
    pub truncations: AtomicU64,
    pub checkpoints_written: AtomicU64,
    /// Polls of the live files since the start (each a round over every
    /// followed log, then a look for new ones): a test waits for one more
    /// to know everything written before it has been read.
    pub polls: AtomicU64,
    /// Expansions of the `--scan-log` patterns that stopped at their bound
    /// of directory entries ([`super::MAX_WALK_ENTRIES`]).
    pub walks_cut: AtomicU64,
}

/// Why following stopped early: the index was asked to stop.
#[derive(Debug)]
pub struct Stopped;

pub(super) struct Follower<'a> {
    index: &'a ScanIndex,
    path: PathBuf,
    counters: Counters,
    buf: Vec<u8>,
    current: Option<Tracked>,
    /// The file the path named before the last rotation, read until the
    /// writer has moved to the new one.
    draining: Option<Tracked>,
    /// Files read to their end; kept for the checkpoint.
    done: Vec<FileMark>,
    /// A file is being read whole and no mark says how far yet: a checkpoint
    /// now would count its lines again after a restart.
    unmarked: bool,
    stop: &'a dyn Fn() -> bool,
    /// What lines count under; each under its path without.
    links: Option<&'a dyn Links>,
}

impl<'a> Follower<'a> {
    pub fn new(index: &'a ScanIndex, path: PathBuf, stop: &'a dyn Fn() -> bool) -> Follower<'a> {
        Follower {
            index,
            path,
            counters: Counters {
                bots: BotFilter::new(),
                deriver: None,
            },
            buf: vec![0; CHUNK],
            current: None,
            draining: None,
            done: Vec::new(),
            unmarked: false,
            stop,
            links: None,
        }
    }

    /// Derives each scan's breakdown values with `deriver` (counted when
    /// the state keeps breakdowns).
    pub fn with_deriver(mut self, deriver: Deriver) -> Follower<'a> {
        self.counters.deriver = Some(deriver);
        self
    }

    /// Counts each line under the link among `links` that answered it.
    pub fn with_links(mut self, links: &'a dyn Links) -> Follower<'a> {
        self.links = Some(links);
        self
    }

    fn progress(&self) -> &'a Progress {
        &self.index.progress
    }

    /// Reads every rotated file and the live file as far as they go,
    /// skipping what `marks` (from a checkpoint) say is counted already.
    pub fn catch_up(&mut self, marks: &[FileMark]) -> Result<(), Stopped> {
        // One file per first line: during a compression both `access.log.2`
        // and `access.log.2.gz` exist, and only one may count.
        let mut claimed: Vec<[u8; 16]> = Vec::new();
        let rotated = rotated_files(&self.path).unwrap_or_else(|e| {
            tracing::warn!(log = %self.path.display(), error = %e, "cannot list rotated access logs");
            Vec::new()
        });
        for path in rotated {
            if let Err(e) = self.read_rotated(&path, marks, &mut claimed) {
                match e {
                    ReadError::Stopped => return Err(Stopped),
                    ReadError::Io(e) => {
                        tracing::warn!(file = %path.display(), error = %e, "cannot read a rotated access log");
                    }
                }
            }
        }
        match File::open(&self.path) {
            Ok(file) => {
                let head = probe_head(&file, &self.progress().probe_bytes)
                    .ok()
                    .flatten();
                let size = file.metadata().map_or(0, |m| m.len());
                let offset = match head {
                    Some(h) if claimed.contains(&h) => {
                        tracing::warn!(log = %self.path.display(), "the access log is also a rotated file; reading it as new");
                        0
                    }
                    Some(h) => find_mark(marks, h)
                        .filter(|m| m.offset <= size)
                        .map_or(0, |m| m.offset),
                    None => 0,
                };
                match Tracked::open(file, offset, head) {
                    Ok(t) => self.current = Some(t),
                    Err(e) => {
                        tracing::warn!(log = %self.path.display(), error = %e, "cannot read the access log");
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(log = %self.path.display(), error = %e, "cannot open the access log");
            }
        }
        self.poll()
    }

    fn read_rotated(
        &mut self,
        path: &Path,
        marks: &[FileMark],
        claimed: &mut Vec<[u8; 16]>,
    ) -> Result<(), ReadError> {
        let file = File::open(path)?;
        let Some(head) = probe_head(&file, &self.progress().probe_bytes)? else {
            return Ok(());
        };
        if claimed.contains(&head) {
            return Ok(());
        }
        claimed.push(head);
        let start = match find_mark(marks, head) {
            Some(m) if m.complete => {
                self.done.push(*m);
                return Ok(());
            }
            Some(m) => m.offset,
            None => 0,
        };
        self.read_whole(file, start, head)
    }

    /// Reads a file that no longer grows from `start` to its end, plain or
    /// gzip, and remembers it as complete.
    fn read_whole(&mut self, file: File, start: u64, head: [u8; 16]) -> Result<(), ReadError> {
        let meta = file.metadata()?;
        self.unmarked = true;
        let mut lines = Lines::at(start);
        let counter = &self.index.progress.bytes_read;
        if is_gzip(&file)? {
            let raw = Counting {
                inner: &file,
                counter,
            };
            let mut r = MultiGzDecoder::new(BufReader::with_capacity(CHUNK, raw));
            let skipped = io::copy(&mut Read::take(&mut r, start), &mut io::sink())?;
            if skipped < start {
                tracing::warn!(
                    "a rotated access log is shorter than the checkpoint says was counted of it"
                );
            }
            self.pump(&mut r, &mut lines)?;
        } else {
            let mut f = &file;
            f.seek(SeekFrom::Start(start))?;
            self.pump(&mut Counting { inner: f, counter }, &mut lines)?;
        }
        let (index, counters, links) = (self.index, &mut self.counters, self.links);
        let mut state = index.write();
        lines.finish(|l| count(&mut state, counters, links, l));
        drop(state);
        self.done.push(FileMark {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            offset: lines.offset,
            head,
            complete: true,
        });
        self.unmarked = false;
        self.progress()
            .files_completed
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Reads `r` to its end, counting complete lines chunk by chunk.
    fn pump(&mut self, r: &mut dyn Read, lines: &mut Lines) -> Result<(), ReadError> {
        loop {
            if (self.stop)() {
                return Err(ReadError::Stopped);
            }
            let n = match r.read(&mut self.buf) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            let (index, counters, links) = (self.index, &mut self.counters, self.links);
            let mut state = index.write();
            lines.feed(&self.buf[..n], |l| count(&mut state, counters, links, l));
        }
    }

    /// Reads what was appended to the followed files, and follows the path
    /// to a new file after a rotation.
    pub fn poll(&mut self) -> Result<(), Stopped> {
        let result = self.poll_inner();
        match result {
            Ok(()) => Ok(()),
            Err(ReadError::Stopped) => Err(Stopped),
            Err(ReadError::Io(e)) => {
                tracing::warn!(log = %self.path.display(), error = %e, "cannot read the access log");
                Ok(())
            }
        }
    }

    fn poll_inner(&mut self) -> Result<(), ReadError> {
        if let Some(mut cur) = self.current.take() {
            let read = self.read_live(&mut cur);
            self.current = Some(cur);
            read?;
        }
        // Which file the path names now.
        let now = match File::open(&self.path) {
            Ok(f) => Some(f),
            // Between logrotate's rename and its `create`.
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        if let Some(file) = now {
            let meta = file.metadata()?;
            let moved = self
                .current
                .as_ref()
                .is_none_or(|c| (c.dev, c.ino) != (meta.dev(), meta.ino()));
            if moved {
                if let Some(old) = self.current.take() {
                    if let Some(older) = self.draining.take() {
                        self.finish_draining(older)?;
                    }
                    self.draining = Some(old);
                    self.progress().rotations.fetch_add(1, Ordering::Relaxed);
                }
                let mut cur = Tracked::open(file, 0, None)?;
                let read = self.read_live(&mut cur);
                self.current = Some(cur);
                read?;
            }
        }
        if let Some(mut old) = self.draining.take() {
            // First see that the writer has written to the new file (so it
            // has reopened and will not write to the old one again), then
            // read the old one to its end.
            let switched = match &self.current {
                Some(c) => c.file.metadata()?.len() > 0,
                None => false,
            };
            if switched {
                self.finish_draining(old)?;
            } else {
                let read = self.read_appended(&mut old);
                self.draining = Some(old);
                read?;
            }
        }
        Ok(())
    }

    fn finish_draining(&mut self, mut old: Tracked) -> Result<(), ReadError> {
        self.read_appended(&mut old)?;
        let (index, counters, links) = (self.index, &mut self.counters, self.links);
        let mut state = index.write();
        old.lines.finish(|l| count(&mut state, counters, links, l));
        drop(state);
        if old.head.is_none() {
            old.head = probe_head(&old.file, &self.progress().probe_bytes)?;
        }
        if let Some(mark) = old.mark(true) {
            self.done.push(mark);
        }
        self.progress()
            .files_completed
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The live file: notices a truncation first, then reads what is new.
    fn read_live(&mut self, cur: &mut Tracked) -> Result<(), ReadError> {
        let size = cur.file.metadata()?.len();
        let position = cur.lines.position();
        let truncated = if size < position {
            true
        } else if size > position {
            // Truncated and written again past where we were: the first
            // line is another. One small read, only when there is news.
            match cur.head {
                Some(h) => probe_head(&cur.file, &self.progress().probe_bytes)? != Some(h),
                None => false,
            }
        } else {
            false
        };
        if truncated {
            self.recover_truncated(cur)?;
        }
        self.read_appended(cur)
    }

    /// `copytruncate`: the copy holds the lines between what was counted and
    /// the truncation; read them there, then the live file from 0.
    fn recover_truncated(&mut self, cur: &mut Tracked) -> Result<(), ReadError> {
        self.progress().truncations.fetch_add(1, Ordering::Relaxed);
        let copy = match cur.head {
            Some(head) => self.find_rotated(head)?,
            None => None,
        };
        match (copy, cur.head) {
            (Some(file), Some(head)) => self.read_whole(file, cur.lines.offset, head)?,
            _ => tracing::warn!(
                log = %self.path.display(),
                "the access log was truncated and no copy of it was found; lines written since the last read are not counted"
            ),
        }
        cur.file.seek(SeekFrom::Start(0))?;
        cur.lines = Lines::at(0);
        cur.head = None;
        Ok(())
    }

    fn find_rotated(&self, head: [u8; 16]) -> io::Result<Option<File>> {
        // Newest first: the copy is `.1`.
        for path in rotated_files(&self.path)?.into_iter().rev() {
            let Ok(file) = File::open(&path) else {
                continue;
            };
            if probe_head(&file, &self.progress().probe_bytes)? == Some(head) {
                return Ok(Some(file));
            }
        }
        Ok(None)
    }

    fn read_appended(&mut self, t: &mut Tracked) -> Result<(), ReadError> {
        let counter = &self.index.progress.bytes_read;
        let mut r = Counting {
            inner: &t.file,
            counter,
        };
        let read = self.pump(&mut r, &mut t.lines);
        if t.head.is_none() && t.lines.offset > 0 {
            t.head = probe_head(&t.file, &self.progress().probe_bytes)?;
        }
        read
    }

    /// What a checkpoint must hold to resume from here; `None` while a
    /// file was left half read (stopped mid-way), when no checkpoint may be
    /// written.
    pub fn marks(&self) -> Option<Vec<FileMark>> {
        let headless = |t: &Tracked| t.lines.offset > 0 && t.head.is_none();
        if self.unmarked || self.draining.iter().chain(&self.current).any(headless) {
            return None;
        }
        let mut marks = self.done.clone();
        marks.extend(self.draining.iter().filter_map(|t| t.mark(false)));
        marks.extend(self.current.iter().filter_map(|t| t.mark(false)));
        Some(marks)
    }
}

/// A complete mark first: after a `copytruncate`, the copy's mark and the
/// live file's earlier one may share a first line.
fn find_mark(marks: &[FileMark], head: [u8; 16]) -> Option<&FileMark> {
    marks
        .iter()
        .find(|m| m.head == head && m.complete)
        .or_else(|| marks.iter().find(|m| m.head == head))
}

enum ReadError {
    Stopped,
    Io(io::Error),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

#[cfg(test)]
mod tests;

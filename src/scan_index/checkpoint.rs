//! The checkpoint file's format: the index's state and which bytes of which
//! log files it covers, so a restart reads only what was written since.
//!
//! Pure encoding and decoding over `Write`/`Read`; [`super::follow`] does the
//! file I/O. Like the snapshot file, a checkpoint is believed only whole: the
//! magic, the version, the log path it was made for, a CRC-32 of everything
//! before it, every count and id in bounds. Decoding streams (a checkpoint of
//! a million keys is hundreds of megabytes) into a state that is only handed
//! out once the checksum at the end has matched.
//!
//! The (key, scanner) pairs, most of the file, are the raw slots of their
//! table ([`super::pairs`]): written in order and read back as they are,
//! checked in one pass, never re-inserted. A key past its exact scanners
//! (and the total past its own) adds its sketch's 4 KiB
//! ([`super::sketch`]); the exact part a sketch begins after is its key's
//! pairs, so it is not stored.
//!
//! Layout, integers little-endian:
//!
//! ```text
//! "QRTAGSIX" version:u32
//! sources_len:u32 sources              (the followed patterns, one a line: the access log's path, as given, by default)
//! basis_len:u32 basis                  (what the breakdowns are counted with, `Basis::describe`; empty: none kept)
//! logs:u32, per live log:
//!     path_len:u32 path
//!     marks:u32, per file: dev:u64 ino:u64 size:u64 offset:u64 head:[u8;16] complete:u8
//! lines_read:u64 malformed:u64 overflow:u64 folded:u64
//! other: requests scans head bot not_found:u64 first last:u64 [fallback:u64 (version 8)]
//! keys:u64, per key:
//!     key_len:u32 key redirected:u8 requests scans head bot not_found:u64 first last:u64 (0: none) [fallback:u64]
//!     days:u32, per day: day:u32 scans:u32
//! pair_bits:u32 slots:u64, per slot: key_id:u32 scanner:u64 (key_id u32::MAX, scanner 0: empty)
//! scanners:u64, per scanner: scanner:u64
//! days:u32, per day: day:u32 requests scans head bot not_found:u64 first last:u64 [fallback:u64]
//! with breakdowns (basis not empty):
//!     values:u32, per value: tag:u16 len:u32 value        (in the order they were interned)
//!     tallies:u32 (at most keys), per key by id: entries:u32, per entry: tag << 16 | count:u32
//!     excess:u64, per entry: key_id:u32 tag:u16 count:u64  (beyond a saturated entry's 65,535)
//!     days:u32, per day: day:u32 entries:u32, per entry: u32
//!     excess:u64, per entry: day:u32 tag:u16 count:u64
//! sketches:u32, per key past its exact scanners: key_id:u32 registers:[u8;4096]   (version 7)
//! total sketch:u8 (0: none; 1: registers:[u8;4096] follow)                          (version 7)
//! destinations:u32, per destination: len:u32 destination   (version 9, in id order)
//! links:u32 (at most keys), per key by id: entries:u32, per entry: id << 32 | count:u64
//! crc32:u32                            (of every byte before it)
//! ```

use std::io::{self, BufReader, BufWriter, Read, Write};

use crate::access_log::format::LogTime;
use crate::snapshot::file::Crc32Writer;
use crate::stats::aggregate::KeyStats;

use super::breakdowns::{Basis, Kept, Tally};
use super::destinations::{self, Destinations};
use super::index::{Beyond, DayCount, IndexState, day_date};
use super::pairs::{Pair, PairSet};
use super::sketch::Sketch;

use crate::stats::read::SCAN_INDEX_CHECKPOINT as MAGIC;

/// 2: the "other paths" bucket and a key's `redirected` flag; 3: the pairs
/// as their table's raw slots; 4: lines counted under the link that
/// answered them, not their path; 5: several logs (`--scan-log`), the marks
/// of each under its path; 6: the breakdowns and what they were counted
/// with; 7: the sketches of scanners past the exact counts, which a
/// version 6 file lacks and is read without; 8 (issue 33): each stats
/// record ends in its fallback answers, 0 in an older file (whose lines the
/// server that wrote them did not mark); 9 (issue 34): each link's scans
/// per destination, which an older file lacks and its lines hold, so it is
/// rebuilt rather than read with none. A file of another version is
/// ignored and the index rebuilt from the logs.
const VERSION: u32 = 9;
/// The oldest version read.
const OLDEST: u32 = 9;

/// Which file a checkpoint's counts came from, and how far.
///
/// A file is recognised by the hash of its first line, which survives a
/// rename and a gzip (the inode does not survive the gzip); `dev`, `ino` and
/// `size` are what the file was when the mark was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMark {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    /// Bytes of the file's (decompressed) content counted: always the end
    /// of a line.
    pub offset: u64,
    /// The first 16 bytes of the SHA-256 of the first line, `\n` included.
    pub head: [u8; 16],
    /// The file was rotated away and read to its end: never read again.
    pub complete: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not a qrtag scan index checkpoint")]
    NotACheckpoint,
    #[error("checkpoint format version {0}, this qrtag reads versions {OLDEST} to {VERSION}")]
    Version(u32),
    #[error("checksum mismatch: the file is damaged or was cut short")]
    Checksum,
    #[error("malformed checkpoint: {0}")]
    Malformed(&'static str),
    #[error("the checkpoint is of other access logs ({found:?}), not {expected:?}")]
    OtherLog { found: String, expected: String },
    #[error("the checkpoint's breakdowns were counted with {found:?}, not {expected:?}")]
    OtherBasis { found: String, expected: String },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// How far one followed log (its live path) and its rotations were counted.
/// Marks are looked up by log: two nodes' files may begin with the same line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogMarks {
    pub log: String,
    pub marks: Vec<FileMark>,
}

/// What a checkpoint holds.
#[derive(Debug)]
pub struct Decoded {
    pub state: IndexState,
    pub logs: Vec<LogMarks>,
}

/// Writes `state` and each log's marks as a checkpoint of the logs that
/// `sources` ([`super::LogSources::checkpoint_key`]) names.
pub fn encode(
    state: &IndexState,
    logs: &[LogMarks],
    sources: &str,
    out: impl Write,
) -> io::Result<()> {
    encode_as(VERSION, state, logs, sources, out)
}

/// [`encode`] in the layout of `version` (7 or later), so the tests can
/// make the files an older qrtag wrote: a version 7 file has no fallbacks.
fn encode_as(
    version: u32,
    state: &IndexState,
    logs: &[LogMarks],
    sources: &str,
    out: impl Write,
) -> io::Result<()> {
    let fallback = version >= 8;
    // Buffered before the checksum, so that it is taken of 64 KiB blocks
    // rather than of millions of 4- and 8-byte writes.
    let mut w = BufWriter::with_capacity(
        1 << 16,
        Crc32Writer {
            inner: out,
            crc: crc32fast::Hasher::new(),
        },
    );
    w.write_all(MAGIC)?;
    w.u32(version)?;
    w.u32(len32(sources.len())?)?;
    w.write_all(sources.as_bytes())?;
    let basis = state
        .breakdown_basis()
        .map(Basis::describe)
        .unwrap_or_default();
    w.u32(len32(basis.len())?)?;
    w.write_all(basis.as_bytes())?;
    w.u32(len32(logs.len())?)?;
    for log in logs {
        w.u32(len32(log.log.len())?)?;
        w.write_all(log.log.as_bytes())?;
        w.u32(len32(log.marks.len())?)?;
        for m in &log.marks {
            for v in [m.dev, m.ino, m.size, m.offset] {
                w.u64(v)?;
            }
            w.write_all(&m.head)?;
            w.write_all(&[u8::from(m.complete)])?;
        }
    }
    for v in [
        state.lines_read,
        state.malformed,
        state.overflow,
        state.folded,
    ] {
        w.u64(v)?;
    }
    write_stats(&mut w, &state.other, fallback)?;
    w.u64(state.keys.len() as u64)?;
    for (id, entry) in state.keys.iter().enumerate() {
        let key = state.key_str(id as u32);
        w.u32(len32(key.len())?)?;
        w.write_all(key.as_bytes())?;
        w.write_all(&[u8::from(entry.redirected)])?;
        write_stats(&mut w, &entry.stats, fallback)?;
        w.u32(len32(entry.days.len())?)?;
        for d in &entry.days {
            w.u32(d.day)?;
            w.u32(d.scans)?;
        }
    }
    let (bits, slots) = state.pairs.raw();
    w.u32(bits)?;
    w.u64(slots.len() as u64)?;
    for p in slots {
        w.u32(p.key())?;
        w.u64(p.scanner())?;
    }
    w.u64(state.scanners.len() as u64)?;
    for &s in &state.scanners {
        w.u64(s)?;
    }
    w.u32(len32(state.days.len())?)?;
    for (&day, stats) in &state.days {
        w.u32(day)?;
        write_stats(&mut w, stats, fallback)?;
    }
    if let Some(kept) = &state.kept {
        write_kept(&mut w, kept)?;
    }
    let mut sketched: Vec<_> = state.beyond.iter().collect();
    sketched.sort_unstable_by_key(|(id, _)| **id);
    w.u32(len32(sketched.len())?)?;
    for (&id, beyond) in sketched {
        w.u32(id)?;
        w.write_all(beyond.sketch.registers())?;
    }
    match &state.scanners_beyond {
        Some(beyond) => {
            w.write_all(&[1])?;
            w.write_all(beyond.sketch.registers())?;
        }
        None => w.write_all(&[0])?,
    }
    if version >= 9 {
        write_destinations(&mut w, &state.destinations)?;
    }
    let mut w = w.into_inner().map_err(|e| e.into_error())?;
    let crc = w.crc.clone().finalize();
    w.inner.write_all(&crc.to_le_bytes())?;
    w.inner.flush()
}

fn write_kept(w: &mut impl Write, kept: &Kept) -> io::Result<()> {
    w.u32(len32(kept.values.len())?)?;
    for (tag, value) in kept.values.iter() {
        w.write_all(&tag.to_le_bytes())?;
        w.u32(len32(value.len())?)?;
        w.write_all(value.as_bytes())?;
    }
    let write_tally = |w: &mut dyn Write, entries: &[u32]| -> io::Result<()> {
        w.u32(len32(entries.len())?)?;
        entries.iter().try_for_each(|&e| w.u32(e))
    };
    let write_excess = |w: &mut dyn Write, excess: &super::breakdowns::Excess| -> io::Result<()> {
        w.u64(excess.len() as u64)?;
        for (&(owner, tag), &n) in excess {
            w.u32(owner)?;
            w.write_all(&tag.to_le_bytes())?;
            w.u64(n)?;
        }
        Ok(())
    };
    w.u32(len32(kept.keys.len())?)?;
    for entries in kept.keys.iter() {
        write_tally(w, entries)?;
    }
    write_excess(w, &kept.key_excess)?;
    w.u32(len32(kept.days.len())?)?;
    for (&day, t) in &kept.days {
        w.u32(day)?;
        write_tally(w, t.entries())?;
    }
    write_excess(w, &kept.day_excess)
}

fn read_kept(r: &mut impl Read, basis: Basis, key_count: usize) -> Result<Kept, DecodeError> {
    let mut kept = Kept::new(basis);
    let value_count = r.u32()?;
    for _ in 0..value_count {
        let tag = r.u16()?;
        let value = r.string()?;
        kept.values
            .push(tag, &value)
            .map_err(DecodeError::Malformed)?;
    }
    // One buffer for every tally's bytes and one for its entries, read in
    // one call each: no allocation per link.
    let mut bytes = Vec::new();
    let mut entries = Vec::new();
    let read_excess = |r: &mut dyn Read,
                       owners: &dyn Fn(u32) -> bool|
     -> Result<super::breakdowns::Excess, DecodeError> {
        let n = r.u64()?;
        let mut excess = super::breakdowns::Excess::default();
        excess.reserve(bounded(n));
        for _ in 0..n {
            let (owner, tag, count) = (r.u32()?, r.u16()?, r.u64()?);
            if !owners(owner) || excess.insert((owner, tag), count).is_some() {
                return Err(DecodeError::Malformed("a breakdown's excess"));
            }
        }
        Ok(excess)
    };
    let tallies = r.u32()? as usize;
    if tallies > key_count {
        return Err(DecodeError::Malformed("more breakdowns than keys"));
    }
    for _ in 0..tallies {
        read_entries(r, &mut bytes, &mut entries)?;
        kept.keys
            .push(&entries, &kept.values)
            .map_err(DecodeError::Malformed)?;
    }
    kept.keys.shrink_to_fit();
    kept.key_excess = read_excess(r, &|id| (id as usize) < tallies)?;
    let day_count = r.u32()?;
    for _ in 0..day_count {
        let day = r.u32()?;
        let ordered = kept.days.last_key_value().is_none_or(|(&d, _)| d < day);
        if !ordered || day_date(day).is_none() {
            return Err(DecodeError::Malformed("a breakdown's day"));
        }
        read_entries(r, &mut bytes, &mut entries)?;
        let t =
            Tally::from_entries(entries.clone(), &kept.values).map_err(DecodeError::Malformed)?;
        kept.days.insert(day, t);
    }
    let days: Vec<u32> = kept.days.keys().copied().collect();
    kept.day_excess = read_excess(r, &|d| days.binary_search(&d).is_ok())?;
    Ok(kept)
}

fn write_stats(w: &mut impl Write, s: &KeyStats, fallback: bool) -> io::Result<()> {
    for v in [s.requests, s.scans, s.head, s.bot, s.not_found] {
        w.u64(v)?;
    }
    w.u64(s.first_scan.map_or(0, LogTime::to_bits))?;
    w.u64(s.last_scan.map_or(0, LogTime::to_bits))?;
    if fallback {
        w.u64(s.fallback)?;
    }
    Ok(())
}

fn len32(n: usize) -> io::Result<u32> {
    u32::try_from(n).map_err(|_| io::Error::other("more than 4 GiB in one checkpoint field"))
}

/// Reads a checkpoint of `len` bytes made for the logs `sources` names,
/// with breakdowns counted on `basis` (or none kept).
pub fn decode(
    input: impl Read,
    len: u64,
    sources: &str,
    basis: Option<&Basis>,
) -> Result<Decoded, DecodeError> {
    decode_inner(input, len, sources, basis).map_err(|e| match e {
        // A count or length pointing past the end: the file was cut short
        // or a damaged byte became a length.
        DecodeError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => DecodeError::Checksum,
        e => e,
    })
}

fn decode_inner(
    input: impl Read,
    len: u64,
    sources: &str,
    basis: Option<&Basis>,
) -> Result<Decoded, DecodeError> {
    let Some(body_left) = len.checked_sub(4) else {
        return Err(DecodeError::NotACheckpoint);
    };
    // The checksum is taken of the large blocks the buffer reads, not of
    // the millions of small reads parsing makes.
    let mut r = BufReader::with_capacity(
        1 << 20,
        Checksummed {
            inner: input,
            crc: crc32fast::Hasher::new(),
            body_left,
        },
    );
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => DecodeError::NotACheckpoint,
        _ => DecodeError::Io(e),
    })?;
    if &magic != MAGIC {
        return Err(DecodeError::NotACheckpoint);
    }
    let version = r.u32()?;
    if !(OLDEST..=VERSION).contains(&version) {
        return Err(DecodeError::Version(version));
    }
    let found = r.string()?;
    if found != sources {
        return Err(DecodeError::OtherLog {
            found,
            expected: sources.to_owned(),
        });
    }
    let found = r.string()?;
    let expected = basis.map(Basis::describe).unwrap_or_default();
    if found != expected {
        return Err(DecodeError::OtherBasis { found, expected });
    }
    let log_count = r.u32()?;
    let mut logs = Vec::with_capacity(bounded(u64::from(log_count)));
    for _ in 0..log_count {
        let log = r.string()?;
        let mark_count = r.u32()?;
        let mut marks = Vec::with_capacity(bounded(u64::from(mark_count)));
        for _ in 0..mark_count {
            let (dev, ino, size, offset) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?);
            let mut head = [0u8; 16];
            r.read_exact(&mut head)?;
            let complete = r.flag("a file mark's flag")?;
            marks.push(FileMark {
                dev,
                ino,
                size,
                offset,
                head,
                complete,
            });
        }
        logs.push(LogMarks { log, marks });
    }

    let mut state = IndexState::new();
    state.lines_read = r.u64()?;
    state.malformed = r.u64()?;
    state.overflow = r.u64()?;
    state.folded = r.u64()?;
    state.other = read_stats(&mut r, version)?;
    let key_count = r.u64()?;
    state.reserve_keys(bounded(key_count));
    // One buffer for every key's bytes: no allocation per key.
    let mut key_bytes = Vec::new();
    for _ in 0..key_count {
        let key = read_str(&mut r, &mut key_bytes)?;
        let redirected = r.flag("a key's flag")?;
        let stats = read_stats(&mut r, version)?;
        let day_count = r.u32()?;
        let mut days = Vec::with_capacity(bounded(u64::from(day_count)));
        for _ in 0..day_count {
            let d = DayCount {
                day: r.u32()?,
                scans: r.u32()?,
            };
            let ordered = days.last().is_none_or(|p: &DayCount| p.day < d.day);
            if !ordered || day_date(d.day).is_none() {
                return Err(DecodeError::Malformed("a key's days"));
            }
            days.push(d);
        }
        // `top_keys` relies on a key's days never adding up to more than
        // its scans (the buckets are by scans).
        let day_scans: u64 = days.iter().map(|d| u64::from(d.scans)).sum();
        if day_scans > stats.scans {
            return Err(DecodeError::Malformed("a key's days"));
        }
        state
            .push_key(key, redirected, stats, days)
            .ok_or(DecodeError::Malformed("a key twice"))?;
    }
    let pair_bits = r.u32()?;
    let slot_count = r.u64()?;
    let mut slots = Vec::with_capacity(bounded(slot_count));
    read_records(&mut r, slot_count, |b: &[u8; 12]| {
        let (key, scanner) = b.split_at(4);
        slots.push(Pair::new(
            u32::from_le_bytes([key[0], key[1], key[2], key[3]]),
            u64::from_le_bytes(std::array::from_fn(|i| scanner[i])),
        ));
    })?;
    state.pairs = PairSet::from_raw(pair_bits, slots, state.keys.len())
        .map_err(|e| DecodeError::Malformed(e.0))?;
    let scanner_count = r.u64()?;
    state.scanners.reserve(bounded(scanner_count));
    read_records(&mut r, scanner_count, |b: &[u8; 8]| {
        state.scanners.insert(u64::from_le_bytes(*b));
    })?;
    let day_count = r.u32()?;
    for _ in 0..day_count {
        let day = r.u32()?;
        if day_date(day).is_none() {
            return Err(DecodeError::Malformed("a day"));
        }
        let stats = read_stats(&mut r, version)?;
        state.days.insert(day, stats);
    }
    if let Some(basis) = basis {
        state.kept = Some(read_kept(&mut r, basis.clone(), state.keys.len())?);
    }
    if version >= 7 {
        read_sketches(&mut r, &mut state)?;
    }
    if version >= 9 {
        read_destinations(&mut r, &mut state)?;
    }
    let mut trailer = [0u8; 4];
    r.read_exact(&mut trailer)?;
    let body = r.get_ref();
    if body.body_left != 0 {
        return Err(DecodeError::Malformed("bytes after the last record"));
    }
    if u32::from_le_bytes(trailer) != body.crc.clone().finalize() {
        return Err(DecodeError::Checksum);
    }
    if !state.recount_uniques() {
        return Err(DecodeError::Malformed("a sketch of too few scanners"));
    }
    Ok(Decoded { state, logs })
}

fn write_destinations(w: &mut impl Write, d: &Destinations) -> io::Result<()> {
    let names: Vec<&str> = d.names().collect();
    w.u32(len32(names.len())?)?;
    for name in names {
        w.u32(len32(name.len())?)?;
        w.write_all(name.as_bytes())?;
    }
    w.u32(len32(d.key_count())?)?;
    for entries in d.entries() {
        w.u32(len32(entries.len())?)?;
        entries.iter().try_for_each(|&e| w.u64(e))?;
    }
    Ok(())
}

/// Each link's scans per destination, checked as they are read.
fn read_destinations(r: &mut impl Read, state: &mut IndexState) -> Result<(), DecodeError> {
    let names = r.u32()?;
    for _ in 0..names {
        let name = r.string()?;
        state
            .destinations
            .push_name(&name)
            .map_err(DecodeError::Malformed)?;
    }
    let links = r.u32()? as usize;
    if links > state.keys.len() {
        return Err(DecodeError::Malformed("more links' destinations than keys"));
    }
    let mut entries = Vec::new();
    for _ in 0..links {
        let n = r.u32()? as usize;
        if n > 2 * destinations::KEY_CAP + 2 {
            return Err(DecodeError::Malformed("a link's destinations"));
        }
        entries.clear();
        for _ in 0..n {
            entries.push(r.u64()?);
        }
        state
            .destinations
            .push_key(&entries)
            .map_err(DecodeError::Malformed)?;
    }
    Ok(())
}

/// The keys' sketches, in key order, and the total's.
fn read_sketches(r: &mut impl Read, state: &mut IndexState) -> Result<(), DecodeError> {
    let mut registers = vec![0u8; Sketch::BYTES];
    let mut read = |r: &mut dyn Read| -> Result<Beyond, DecodeError> {
        r.read_exact(&mut registers)?;
        let sketch = Sketch::from_registers(&registers).map_err(|e| DecodeError::Malformed(e.0))?;
        // The exact part is counted from the pairs (`recount_uniques`).
        Ok(Beyond { exact: 0, sketch })
    };
    let count = r.u32()?;
    let mut last = None;
    for _ in 0..count {
        let id = r.u32()?;
        if id as usize >= state.keys.len() || last.is_some_and(|l| l >= id) {
            return Err(DecodeError::Malformed("a sketch's key"));
        }
        last = Some(id);
        let beyond = read(r)?;
        state.beyond.insert(id, beyond);
    }
    if r.flag("the total's sketch flag")? {
        state.scanners_beyond = Some(read(r)?);
    }
    Ok(())
}

fn read_stats(r: &mut impl Read, version: u32) -> Result<KeyStats, DecodeError> {
    let mut s = KeyStats {
        requests: r.u64()?,
        scans: r.u64()?,
        head: r.u64()?,
        bot: r.u64()?,
        not_found: r.u64()?,
        ..KeyStats::default()
    };
    s.first_scan = read_time(r)?;
    s.last_scan = read_time(r)?;
    if version >= 8 {
        s.fallback = r.u64()?;
    }
    Ok(s)
}

fn read_time(r: &mut impl Read) -> Result<Option<LogTime>, DecodeError> {
    match r.u64()? {
        0 => Ok(None),
        bits => LogTime::from_bits(bits)
            .map(Some)
            .ok_or(DecodeError::Malformed("a time")),
    }
}

/// Reads `count` records of `N` bytes, many at a time: the millions of
/// pairs and scanners cost one copy each, not a buffered read call per
/// field.
fn read_records<const N: usize>(
    r: &mut impl Read,
    count: u64,
    mut each: impl FnMut(&[u8; N]),
) -> Result<(), DecodeError> {
    const AT_ONCE: u64 = 4096;
    let mut buf = vec![0u8; N * AT_ONCE as usize];
    let mut left = count;
    while left > 0 {
        let n = left.min(AT_ONCE) as usize;
        let bytes = &mut buf[..n * N];
        r.read_exact(bytes)?;
        for record in bytes.chunks_exact(N) {
            if let Ok(record) = <&[u8; N]>::try_from(record) {
                each(record);
            }
        }
        left -= n as u64;
    }
    Ok(())
}

/// Reads a length and that many bytes of UTF-8 into `buf`.
fn read_str<'b>(r: &mut impl Read, buf: &'b mut Vec<u8>) -> Result<&'b str, DecodeError> {
    let len = r.u32()? as usize;
    if len > MAX_KEY {
        return Err(DecodeError::Malformed("a key's length"));
    }
    buf.resize(len, 0);
    r.read_exact(buf)?;
    std::str::from_utf8(buf).map_err(|_| DecodeError::Malformed("a string is not UTF-8"))
}

/// Longer than any key a log line can hold.
const MAX_KEY: usize = 1 << 16;

/// Reads one tally's entries into `entries` through `bytes`, in one read.
fn read_entries(
    r: &mut impl Read,
    bytes: &mut Vec<u8>,
    entries: &mut Vec<u32>,
) -> Result<(), DecodeError> {
    let n = r.u32()? as usize;
    if n > MAX_TALLY {
        return Err(DecodeError::Malformed("a breakdown's counts"));
    }
    bytes.resize(n * 4, 0);
    r.read_exact(bytes)?;
    entries.clear();
    entries.extend(
        bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
    );
    Ok(())
}

/// The most entries a tally can have: every tag.
const MAX_TALLY: usize = 1 << 16;

/// Caps what a count read from the file may reserve before the checksum has
/// vouched for it: a damaged count must fail, not allocate terabytes.
fn bounded(count: u64) -> usize {
    count.min(1 << 24) as usize
}

/// Little-endian integers, the layout's only kind.
trait WriteLe: Write {
    fn u32(&mut self, v: u32) -> io::Result<()> {
        self.write_all(&v.to_le_bytes())
    }
    fn u64(&mut self, v: u64) -> io::Result<()> {
        self.write_all(&v.to_le_bytes())
    }
}

impl<W: Write + ?Sized> WriteLe for W {}

/// Checksums what is read through it, up to the trailer.
struct Checksummed<R> {
    inner: R,
    crc: crc32fast::Hasher,
    /// Bytes before the trailer not read yet.
    body_left: u64,
}

impl<R: Read> Read for Checksummed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let body = (n as u64).min(self.body_left) as usize;
        self.crc.update(&buf[..body]);
        self.body_left -= body as u64;
        Ok(n)
    }
}

/// The layout's integers and strings.
trait ReadLe: Read {
    fn u8(&mut self) -> io::Result<u8> {
        let mut b = [0u8; 1];
        self.read_exact(&mut b)?;
        Ok(b[0])
    }
    fn u16(&mut self) -> io::Result<u16> {
        let mut b = [0u8; 2];
        self.read_exact(&mut b)?;
        Ok(u16::from_le_bytes(b))
    }
    fn u32(&mut self) -> io::Result<u32> {
        let mut b = [0u8; 4];
        self.read_exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn u64(&mut self) -> io::Result<u64> {
        let mut b = [0u8; 8];
        self.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn flag(&mut self, what: &'static str) -> Result<bool, DecodeError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError::Malformed(what)),
        }
    }
    fn string(&mut self) -> Result<String, DecodeError> {
        let len = self.u32()?;
        let mut bytes = Vec::with_capacity(bounded(u64::from(len)));
        Read::take(&mut *self, u64::from(len)).read_to_end(&mut bytes)?;
        if bytes.len() != len as usize {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
        }
        String::from_utf8(bytes).map_err(|_| DecodeError::Malformed("a string is not UTF-8"))
    }
}

impl<R: Read + ?Sized> ReadLe for R {}

#[cfg(test)]
mod tests;

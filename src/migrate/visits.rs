//! A source's visits as access-log lines (issue 37), so `qrtag stats`, the
//! scan index and the console count them as scans: the tag's chart starts
//! years before the move.
//!
//! Visits arrive in the source's order, before or after the links they
//! name (a mysqldump has `yourls_log` before `yourls_url`), so each is
//! spooled to a temporary file as it comes; once the source is read, only
//! 16 bytes a visit (its time and place in the spool) are sorted, and the
//! lines are written in time order, through the one formatter
//! (`access_log::format`), to `imported/FAMILY-DATE.log` beside the access
//! log, under a temporary name renamed when complete.
//!
//! A re-run adds no visit twice: the 64-bit hashes of the visits imported
//! before (source family, domain, code, the source's visit ID) are kept
//! sorted in `imported/.FAMILY.ids`, 8 bytes a visit, read whole at the
//! start and rewritten (temporary file and rename) after the log.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::source::SourceVisit;
use crate::access_log::format::{self, LogTime};

/// A stable 64-bit hash (FNV-1a) of what identifies a visit in its source.
pub fn visit_id(family: &str, visit: &SourceVisit) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [
        family,
        visit.domain.as_deref().unwrap_or_default(),
        &visit.code,
        &visit.source_id,
    ] {
        for b in part.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// One visit as an access-log line: a `GET` of the key's path answered
/// `302` to the link's destination, with the visit's address, user agent
/// and referrer (no tracking ID: the source had none).
pub fn log_line(visit: &SourceVisit, key: &str, location: &str, out: &mut Vec<u8>) {
    let target = format!("/{key}");
    format::write_record(
        &format::Record {
            time: visit.time,
            client_ip: visit.address,
            tracking: None,
            user_agent: visit.user_agent.as_deref().map(str::as_bytes),
            target: target.as_bytes(),
            status: 302,
            location: Some(location),
            fallback: false,
            method: "GET",
            referer: visit.referrer.as_deref().map(str::as_bytes),
        },
        out,
    );
}

/// The spooled visits: each a JSON line in a temporary file, and its time
/// and place kept to sort by.
pub struct Spool {
    file: BufWriter<File>,
    path: PathBuf,
    at: u64,
    index: Vec<(u64, u64)>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Spooled {
    c: String,
    d: Option<String>,
    /// Microseconds since the epoch.
    t: i64,
    r: Option<String>,
    u: Option<String>,
    a: Option<std::net::IpAddr>,
    i: String,
}

impl Spool {
    /// A spool in `dir` (made if missing), removed when dropped.
    pub fn create(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!(".spool.{}.tmp", std::process::id()));
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        Ok(Self {
            file: BufWriter::with_capacity(1 << 16, file),
            path,
            at: 0,
            index: Vec::new(),
        })
    }

    pub fn push(&mut self, v: SourceVisit) -> io::Result<()> {
        let s = Spooled {
            c: v.code,
            d: v.domain,
            t: v.time.timestamp_micros(),
            r: v.referrer,
            u: v.user_agent,
            a: v.address,
            i: v.source_id,
        };
        let mut line = serde_json::to_vec(&s).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.index
            .push((LogTime::from_datetime(&v.time).to_bits(), self.at));
        self.at += line.len() as u64;
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Calls `each` with every visit in time order (ties in source order).
    pub fn sorted(mut self, mut each: impl FnMut(SourceVisit) -> io::Result<()>) -> io::Result<()> {
        self.file.flush()?;
        self.index.sort_by_key(|&(t, at)| (t, at));
        let mut file = self.file.get_ref().try_clone()?;
        let mut reader = BufReader::with_capacity(1 << 12, &mut file);
        let mut line = Vec::new();
        let mut pos: Option<u64> = None;
        for &(_, at) in &self.index {
            if pos != Some(at) {
                reader.seek(SeekFrom::Start(at))?;
            }
            line.clear();
            let n = reader.read_until(b'\n', &mut line)?;
            pos = Some(at + n as u64);
            let s: Spooled = serde_json::from_slice(&line).map_err(io::Error::other)?;
            each(SourceVisit {
                code: s.c,
                domain: s.d,
                time: DateTime::from_timestamp_micros(s.t).unwrap_or_default(),
                referrer: s.r,
                user_agent: s.u,
                address: s.a,
                country: None,
                source_id: s.i,
            })?;
        }
        Ok(())
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The hashes of the visits a family's earlier imports wrote, sorted.
pub struct Imported {
    path: PathBuf,
    ids: Vec<u64>,
}

impl Imported {
    /// `dir/.FAMILY.ids`, empty when there is none.
    pub fn read(dir: &Path, family: &str) -> io::Result<Self> {
        let path = dir.join(format!(".{family}.ids"));
        let mut ids = Vec::new();
        match File::open(&path) {
            Ok(f) => {
                let mut r = BufReader::new(f);
                let mut b = [0u8; 8];
                loop {
                    match r.read_exact(&mut b) {
                        Ok(()) => ids.push(u64::from_le_bytes(b)),
                        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                        Err(e) => return Err(e),
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        ids.sort_unstable();
        Ok(Self { path, ids })
    }

    pub fn contains(&self, id: u64) -> bool {
        self.ids.binary_search(&id).is_ok()
    }

    /// Writes the old and `new` hashes as the file, atomically.
    pub fn write_with(mut self, mut new: Vec<u64>) -> io::Result<()> {
        self.ids.append(&mut new);
        self.ids.sort_unstable();
        self.ids.dedup();
        let temp = self
            .path
            .with_extension(format!("ids.{}.tmp", std::process::id()));
        let mut w = BufWriter::new(File::create(&temp)?);
        for id in &self.ids {
            w.write_all(&id.to_le_bytes())?;
        }
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&temp, &self.path)
    }
}

/// `dir/FAMILY-DATE.log`, or `-2`, `-3`... when a run that day wrote one.
pub fn log_path(dir: &Path, family: &str, now: DateTime<Utc>) -> PathBuf {
    let date = now.format("%Y-%m-%d");
    let first = dir.join(format!("{family}-{date}.log"));
    if !first.exists() {
        return first;
    }
    (2..)
        .map(|n| dir.join(format!("{family}-{date}-{n}.log")))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn visit(id: &str, secs: i64) -> SourceVisit {
        SourceVisit {
            code: "k".into(),
            domain: None,
            time: Utc
                .timestamp_opt(1_500_000_000 + secs, 0)
                .single()
                .expect("t"),
            referrer: Some("https://ref.example/a b".into()),
            user_agent: Some("Mozilla/5.0 (X)".into()),
            address: "203.0.113.7".parse().ok(),
            country: None,
            source_id: id.into(),
        }
    }

    #[test]
    fn a_visit_is_a_line_the_log_parser_reads_back() {
        let mut out = Vec::new();
        log_line(&visit("1", 0), "Go/Home", "https://e.example/x#f", &mut out);
        let text = String::from_utf8(out).expect("ascii");
        let rec = format::parse_line(text.trim_end()).expect("parses");
        assert_eq!(rec.status, 302);
        assert_eq!(rec.target, "/Go/Home");
        assert!(text.contains(" 203.0.113.7 - "), "{text}");
    }

    #[test]
    fn the_spool_gives_visits_in_time_order() {
        let dir = tempfile::tempdir().expect("dir");
        let mut spool = Spool::create(dir.path()).expect("spool");
        for (id, t) in [("a", 30), ("b", 10), ("c", 20), ("d", 10)] {
            spool.push(visit(id, t)).expect("push");
        }
        let mut order = Vec::new();
        spool
            .sorted(|v| {
                order.push(v.source_id);
                Ok(())
            })
            .expect("sorted");
        assert_eq!(order, ["b", "d", "c", "a"]);
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }

    #[test]
    fn imported_ids_are_kept_across_runs() {
        let dir = tempfile::tempdir().expect("dir");
        let v = visit("7", 0);
        let id = visit_id("yourls", &v);
        assert_ne!(id, visit_id("shlink", &v));
        let first = Imported::read(dir.path(), "yourls").expect("read");
        assert!(!first.contains(id));
        first.write_with(vec![id]).expect("write");
        assert!(
            Imported::read(dir.path(), "yourls")
                .expect("read")
                .contains(id)
        );
    }
}

//! Keeps the snapshot file current, and reads it back at start.
//!
//! Saving runs on the blocking pool from an immutable table (so the links
//! and the sequence written are one consistent state) and never holds
//! anything a request needs. A save writes a temporary file beside the
//! target, syncs it and renames it over the old one, so a crash leaves
//! either the old file or the new one, never half of one.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::LinkStore;
use crate::snapshot::file::{self, DecodeError, write_atomically};
use crate::snapshot::{LinkTable, Snapshot};

/// How often the saver looks for a new table.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// The least time between two saves: a save of a million links writes about
/// 70 MB, so a stream of edits costs at most one such write this often.
pub const MIN_INTERVAL: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read snapshot file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("ignoring snapshot file {path}: {source}")]
    Invalid {
        path: PathBuf,
        #[source]
        source: DecodeError,
    },
}

/// Reads the snapshot file at `path` for store `identity`: `Ok(None)` when
/// there is none, an error (to report, then load from the store) when it
/// cannot be believed.
pub fn load(path: &Path, identity: &str) -> Result<Option<LinkTable>, LoadError> {
    Ok(read(path, |bytes| file::decode(bytes, identity))?.map(|(table, _)| table))
}

/// Reads the snapshot file of any state of the store `store`, with the
/// marker it was saved with, for the follower to compare
/// ([`crate::store::Resume::unchecked_mark`]).
pub fn load_any_state(
    path: &Path,
    store: &str,
) -> Result<Option<(LinkTable, Option<String>)>, LoadError> {
    read(path, |bytes| file::decode_any_state(bytes, store))
}

/// A snapshot file read by [`load_any_state_from`].
pub struct FoundState {
    pub table: LinkTable,
    /// The marker it was saved with.
    pub mark: Option<String>,
    /// Whether it names another store, one `same_data` took as the same
    /// data reached another way (another URL of the same CouchDB database).
    pub moved: bool,
}

/// Like [`load_any_state`], but also takes a file that names another store
/// when `same_data` (given the store the file names) says it holds the same
/// data: a copy from a node that reaches the database at another URL.
pub fn load_any_state_from(
    path: &Path,
    store: &str,
    same_data: impl FnOnce(&str) -> bool,
) -> Result<Option<FoundState>, LoadError> {
    let mut moved = false;
    let found = read(path, |bytes| match file::named_store(bytes) {
        Some(named) if named != store && same_data(named) => {
            moved = true;
            file::decode_any_state(bytes, named)
        }
        _ => file::decode_any_state(bytes, store),
    })?;
    Ok(found.map(|(table, mark)| FoundState { table, mark, moved }))
}

fn read(
    path: &Path,
    decode: impl FnOnce(&[u8]) -> Result<file::Decoded, file::DecodeError>,
) -> Result<Option<(LinkTable, Option<String>)>, LoadError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(LoadError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let decoded = decode(&bytes).map_err(|source| LoadError::Invalid {
        path: path.to_owned(),
        source,
    })?;
    drop(bytes);
    let mark = decoded.mark().map(str::to_owned);
    Ok(Some((decoded.links.build(Some(decoded.seq)), mark)))
}

/// The name a store's marker for the file at `path` goes under.
pub fn mark_name(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_owned())
        .display()
        .to_string()
}

/// Removes the temporary files that saves of `path` killed before their
/// rename left behind (`.NAME.PID.tmp`), unless their process still runs.
/// Returns what it removed.
pub fn remove_leftovers(path: &Path) -> Vec<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let prefix = format!(".{name}.");
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = file
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && process_runs(pid) {
            continue;
        }
        if fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

/// Whether a process with this ID exists (another server saving the same
/// file right now keeps its temporary file).
fn process_runs(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Writes `table` to `path` atomically.
pub fn save(path: &Path, identity: &str, table: &LinkTable) -> io::Result<()> {
    write_atomically(path, |w| file::encode(table, identity, w))
}

/// Writes `table` to `path` as a snapshot of `store` (whose identity is
/// `identity`) under a fresh marker of the store's state, which replaces
/// `previous`; returns the new marker. The marker is written before the
/// file: a crash between the two leaves a file that is not believed, never
/// one that is wrongly. Also how `import --new-database` leaves the file
/// the first `serve` starts from.
pub async fn save_marked(
    path: &Path,
    store: &dyn LinkStore,
    identity: &str,
    previous: Option<&str>,
    table: Arc<LinkTable>,
) -> io::Result<Option<String>> {
    let mark = store
        .mark_snapshot(&mark_name(path), previous)
        .await
        .map_err(io::Error::other)?;
    let identity = file::marked_identity(identity, mark.as_deref());
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || save(&path, &identity, &table))
        .await
        .map_err(io::Error::other)??;
    Ok(mark)
}

/// Saves the snapshot's table whenever it has changed, at most every
/// [`MIN_INTERVAL`], and once more at shutdown.
pub struct Saver {
    path: PathBuf,
    identity: String,
    /// Marks the database state each file is taken from.
    store: Arc<dyn LinkStore>,
    snapshot: Arc<Snapshot>,
    /// The generation last written (or read from the file).
    saved: AtomicU64,
    /// Serialises saves, so the shutdown save waits for one under way; holds
    /// the marker of the last save, which the next one replaces.
    writing: tokio::sync::Mutex<Option<String>>,
}

impl Saver {
    /// `saved_generation` is the snapshot's generation that is already on
    /// disk (the one published from the file), or `None`.
    pub fn new(
        path: PathBuf,
        store: Arc<dyn LinkStore>,
        snapshot: Arc<Snapshot>,
        saved_generation: Option<u64>,
    ) -> Arc<Self> {
        Arc::new(Self {
            path,
            identity: store.snapshot_identity(),
            store,
            snapshot,
            saved: AtomicU64::new(saved_generation.unwrap_or(u64::MAX)),
            writing: tokio::sync::Mutex::new(None),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            let mut last_save: Option<Instant> = None;
            let mut failing = false;
            let mut tick = tokio::time::interval(CHECK_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if last_save.is_some_and(|t| t.elapsed() < MIN_INTERVAL) {
                    continue;
                }
                match this.save_if_changed().await {
                    Ok(false) => {}
                    Ok(true) => {
                        last_save = Some(Instant::now());
                        if std::mem::take(&mut failing) {
                            tracing::info!(path = %this.path.display(), "snapshot file written again");
                        }
                    }
                    Err(e) => {
                        // Retried at the next interval; redirects are unaffected.
                        last_save = Some(Instant::now());
                        if !std::mem::replace(&mut failing, true) {
                            tracing::warn!(path = %this.path.display(), error = %e, "cannot write the snapshot file");
                        }
                    }
                }
            }
        })
    }

    /// Writes the current table if it is loaded and newer than the file.
    /// Returns whether it wrote.
    pub async fn save_if_changed(&self) -> io::Result<bool> {
        let mut last_mark = self.writing.lock().await;
        let generation = self.snapshot.generation();
        if !self.snapshot.is_loaded() || generation == self.saved.load(Ordering::Acquire) {
            return Ok(false);
        }
        let table = Arc::clone(&self.snapshot.load());
        if table.seq().is_none() {
            return Ok(false);
        }
        let started = Instant::now();
        let links = table.len();
        *last_mark = save_marked(
            &self.path,
            self.store.as_ref(),
            &self.identity,
            last_mark.as_deref(),
            table,
        )
        .await?;
        self.saved.store(generation, Ordering::Release);
        tracing::debug!(links, took = ?started.elapsed(), "snapshot file written");
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{TableBuilder, test_upsert};
    use serde_json::json;

    fn table() -> LinkTable {
        let mut b = TableBuilder::default();
        b.apply([test_upsert("abcde", json!({"url": "https://a.example/"}))]);
        b.build(Some(json!(3)))
    }

    #[test]
    fn saves_atomically_and_loads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("links.snapshot");
        assert!(load(&path, "id").expect("no file is fine").is_none());
        save(&path, "id", &table()).expect("saves");
        let back = load(&path, "id").expect("reads").expect("present");
        assert_eq!(back.live_url("abcde", 0), Some("https://a.example/"));
        assert_eq!(back.seq(), Some(&json!(3)));
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["links.snapshot"], "no temporary file left behind");
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_damaged_file_is_reported_not_believed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("links.snapshot");
        save(&path, "id", &table()).expect("saves");
        let mut bytes = fs::read(&path).expect("read");
        let n = bytes.len();
        bytes[n / 2] ^= 1;
        fs::write(&path, &bytes).expect("write");
        assert!(matches!(
            load(&path, "id"),
            Err(LoadError::Invalid {
                source: DecodeError::Checksum,
                ..
            })
        ));
    }
}

//! Which logs the index follows: the server's own access log, or the
//! files `--scan-log PATTERN` names (each a path or a glob), so that a
//! console host reading the logs its nodes ship to it counts every node's
//! scans.
//!
//! A pattern is matched again at every poll, so a node whose file appears
//! later is picked up; each matched file is followed with its rotations
//! ([`super::follow`]), and a match that is itself a rotation of another
//! match (`nodes/*` names `a.log` and `a.log.1`) is read as that rotation,
//! never as a log of its own, so no line counts twice.

use std::path::{Path, PathBuf};

use super::follow::{Stopped, rotation_of};
use super::walk::{Budget, MAX_ENTRIES, Walk};

/// The patterns the index follows, checked once at the edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSources {
    patterns: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("give at least one log to follow")]
    Empty,
    #[error("`{pattern}` is not a log file pattern: {reason}")]
    Pattern { pattern: String, reason: String },
}

/// One log at a fixed path: the server's own, as before `--scan-log`.
impl From<PathBuf> for LogSources {
    fn from(path: PathBuf) -> LogSources {
        LogSources {
            patterns: vec![path.to_string_lossy().into_owned()],
        }
    }
}

impl LogSources {
    /// Paths and globs (`*`, `?`, `[...]`), in the order given; a pattern
    /// given twice is followed once.
    pub fn parse(patterns: impl IntoIterator<Item = String>) -> Result<LogSources, SourceError> {
        let mut kept: Vec<String> = Vec::new();
        for pattern in patterns {
            if pattern.is_empty() {
                return Err(SourceError::Pattern {
                    pattern,
                    reason: "it is empty".into(),
                });
            }
            let walk = match glob::Pattern::new(&pattern).and_then(|_| Walk::new(&pattern)) {
                Ok(walk) => walk,
                Err(e) => {
                    return Err(SourceError::Pattern {
                        pattern,
                        reason: e.msg.to_owned(),
                    });
                }
            };
            if walk.walks_from_root() {
                return Err(SourceError::Pattern {
                    pattern,
                    reason: "it would search the whole file system from /; \
                             begin it with the directory the logs are in (/var/log/qrtag/nodes/*.log)"
                        .into(),
                });
            }
            if !kept.contains(&pattern) {
                kept.push(pattern);
            }
        }
        if kept.is_empty() {
            return Err(SourceError::Empty);
        }
        Ok(LogSources { patterns: kept })
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// What a checkpoint is made for: the patterns, one a line. A checkpoint
    /// of other patterns counted other files, so it is not used.
    pub fn checkpoint_key(&self) -> String {
        self.patterns.join("\n")
    }

    /// The default checkpoint's directory and name when no access log file
    /// gives one: beside the first pattern's files,
    /// `.qrtag-scan-logs.scan-index` (hidden, so `*` names no checkpoint).
    pub fn default_checkpoint(&self) -> PathBuf {
        let first = Path::new(&self.patterns[0]);
        // The directory part of a pattern is literal in practice
        // (`/var/log/qrtag/nodes/*.log`).
        let dir = first.parent().unwrap_or(Path::new("."));
        dir.join(".qrtag-scan-logs.scan-index")
    }

    /// The live logs the patterns name now, sorted. A literal path is
    /// named even while it does not exist (it is followed once it does).
    /// The globs together look at no more than [`MAX_ENTRIES`] directory
    /// entries ([`super::walk`]); `stop` is asked at each one.
    pub fn expand(&self, stop: &dyn Fn() -> bool) -> Result<Expansion, Stopped> {
        self.expand_within(MAX_ENTRIES, stop)
    }

    /// [`Self::expand`] within `entries` directory entries.
    pub fn expand_within(
        &self,
        entries: u64,
        stop: &dyn Fn() -> bool,
    ) -> Result<Expansion, Stopped> {
        let mut budget = Budget::new(entries);
        let mut found = Vec::new();
        let mut cut = None;
        for pattern in &self.patterns {
            if !is_glob(pattern) {
                found.push(PathBuf::from(pattern));
                continue;
            }
            match Walk::new(pattern) {
                Ok(walk) => found.extend(walk.files(&mut budget, stop)?),
                Err(e) => tracing::warn!(pattern, error = %e, "cannot match a scan log pattern"),
            }
            if budget.cut && cut.is_none() {
                cut = Some(pattern.clone());
            }
        }
        Ok(Expansion {
            logs: live_logs(once_each(found)),
            cut,
        })
    }
}

/// What one [`LogSources::expand`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// The live logs, sorted.
    pub logs: Vec<PathBuf>,
    /// The pattern whose walk ran out of entries: what it found is
    /// followed, files beyond are not.
    pub cut: Option<String>,
}

/// `paths` with each file once, under its first name in order: a file
/// reached through a symbolic link too (`nodes/*/*.log` with a link among
/// the directories) would otherwise be followed, and counted, twice. A
/// path that does not exist (a literal one, followed once it does) stays.
fn once_each(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    paths.sort();
    let mut seen = std::collections::HashSet::new();
    paths.retain(|p| {
        std::fs::metadata(p)
            .map(|m| seen.insert((m.dev(), m.ino())))
            .unwrap_or(true)
    });
    paths
}

fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

/// Whether `path` is a rotation ([`rotation_of`]) of the live log `live`:
/// same directory, a rotated name of it.
pub fn is_rotation_of(live: &Path, path: &Path) -> bool {
    let name = |p: &Path| p.file_name().and_then(|n| n.to_str()).map(str::to_owned);
    match (name(live), name(path)) {
        (Some(live_name), Some(path_name)) => {
            live != path
                && live.parent() == path.parent()
                && rotation_of(&live_name, &path_name).is_some()
        }
        _ => false,
    }
}

/// The live logs among `paths` (pure): sorted, each once, and without any
/// path that is a rotation of another path, which its live log's follower
/// reads.
pub fn live_logs(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort();
    paths.dedup();
    let keep: Vec<bool> = paths
        .iter()
        .map(|p| !paths.iter().any(|live| is_rotation_of(live, p)))
        .collect();
    paths
        .into_iter()
        .zip(keep)
        .filter_map(|(p, k)| k.then_some(p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[&str]) -> Vec<PathBuf> {
        list.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn rotations_of_a_match_are_not_logs_of_their_own() {
        assert_eq!(
            live_logs(paths(&[
                "/n/b.log",
                "/n/a.log.1",
                "/n/a.log",
                "/n/a.log.2.gz",
                "/n/b.log-20261124",
                "/n/a.log",
            ])),
            paths(&["/n/a.log", "/n/b.log"])
        );
        // A file named like a rotation in another directory is its own log.
        assert_eq!(
            live_logs(paths(&["/m/a.log.1", "/n/a.log"])),
            paths(&["/m/a.log.1", "/n/a.log"])
        );
        // Without its live file, a rotated file is the log.
        assert_eq!(live_logs(paths(&["/n/a.log.1"])), paths(&["/n/a.log.1"]));
        assert!(is_rotation_of(
            Path::new("/n/a.log"),
            Path::new("/n/a.log.1")
        ));
        assert!(!is_rotation_of(
            Path::new("/n/a.log"),
            Path::new("/n/a.log")
        ));
        assert!(!is_rotation_of(
            Path::new("/n/a.log"),
            Path::new("/m/a.log.1")
        ));
    }

    #[test]
    fn patterns_are_checked_and_kept_once() {
        let s = LogSources::parse([
            "/n/*.log".to_owned(),
            "/x/own.log".into(),
            "/n/*.log".into(),
        ])
        .expect("valid");
        assert_eq!(s.patterns(), ["/n/*.log", "/x/own.log"]);
        assert_eq!(s.checkpoint_key(), "/n/*.log\n/x/own.log");
        assert_eq!(
            s.default_checkpoint(),
            PathBuf::from("/n/.qrtag-scan-logs.scan-index")
        );
        assert_eq!(LogSources::parse(Vec::new()), Err(SourceError::Empty));
        assert!(matches!(
            LogSources::parse(["/n/[a.log".to_owned()]),
            Err(SourceError::Pattern { .. })
        ));
        assert!(matches!(
            LogSources::parse([String::new()]),
            Err(SourceError::Pattern { .. })
        ));
        for broad in ["/**/**/**/**/**/*", "/*/*.log", "/../**/x.log"] {
            let e = LogSources::parse([broad.to_owned()]).expect_err(broad);
            assert!(e.to_string().contains("whole file system"), "{e}");
        }
        for narrow in ["/var/log/*/x.log", "nodes/**/*.log", "/x.log"] {
            assert!(LogSources::parse([narrow.to_owned()]).is_ok(), "{narrow}");
        }
    }

    #[test]
    fn an_expansion_past_its_entries_names_its_pattern() {
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..20 {
            std::fs::write(dir.path().join(format!("{i}.log")), "x\n").expect("write");
        }
        let pattern = format!("{}/*.log", dir.path().display());
        let sources = LogSources::parse([pattern.clone()]).expect("valid");
        let all = sources.expand_within(100, &|| false).expect("not stopped");
        assert_eq!((all.logs.len(), all.cut), (20, None));
        let some = sources.expand_within(5, &|| false).expect("not stopped");
        assert!(some.logs.len() <= 5);
        assert_eq!(some.cut, Some(pattern));
        // A file reached through a link is one log, under its first name.
        std::os::unix::fs::symlink(dir.path(), dir.path().join("again")).expect("symlink");
        let twice = format!("{}/*/*.log", dir.path().display());
        let sources = LogSources::parse([twice]).expect("valid");
        let logs = sources.expand(&|| false).expect("not stopped").logs;
        assert_eq!(logs.len(), 20, "{logs:?}");
    }

    #[test]
    fn a_glob_matches_files_but_not_hidden_ones_nor_rotations() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in ["a.log", "a.log.1", "b.log", ".a.log.scan-index", "c.txt"] {
            std::fs::write(dir.path().join(name), "x\n").expect("write");
        }
        std::fs::create_dir(dir.path().join("d.log")).expect("dir");
        let pattern = format!("{}/*", dir.path().display());
        let literal = dir.path().join("later.log");
        let sources =
            LogSources::parse([pattern, literal.to_string_lossy().into_owned()]).expect("valid");
        assert_eq!(
            sources.expand(&|| false).expect("not stopped").logs,
            vec![
                dir.path().join("a.log"),
                dir.path().join("b.log"),
                dir.path().join("c.txt"),
                literal,
            ]
        );
    }
}

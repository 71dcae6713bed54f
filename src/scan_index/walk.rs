//! Matching one `--scan-log` glob against the file system, within a bound.
//!
//! `glob::glob_with` walks as far as a pattern reaches, follows symbolic
//! links into directories under `**` (`/proc/*/root` is `/`) and cannot be
//! stopped: `/**/**/*` grew a server by gigabytes and held its shutdown.
//! This walk reads directories itself, from the pattern's fixed directory,
//! counts every directory entry it looks at against a [`Budget`] shared by
//! one expansion's patterns, asks whether the index is stopping at each
//! entry, and does not follow a symbolic link under `**`. The components
//! are matched as `glob` matches them (`glob::Pattern`, a `*` never names a
//! hidden file, `**` a whole component for any number of directories).

use std::path::{Component, PathBuf};

use super::follow::Stopped;

/// The most directory entries one expansion of the patterns looks at: a
/// log directory of a few thousand nodes' files is far below it, and a
/// walk of a whole file system stops in well under a second.
pub const MAX_ENTRIES: u64 = 100_000;

/// What an expansion may still look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    left: u64,
    /// An entry was passed over for want of budget.
    pub cut: bool,
}

impl Budget {
    pub fn new(entries: u64) -> Budget {
        Budget {
            left: entries,
            cut: false,
        }
    }

    /// Takes one entry; false once none is left.
    fn take(&mut self) -> bool {
        if self.left == 0 {
            self.cut = true;
            return false;
        }
        self.left -= 1;
        true
    }
}

/// One component of a pattern after its fixed directory.
#[derive(Debug, Clone)]
enum Part {
    /// No wildcard: joined without reading the directory.
    Literal(String),
    Glob(glob::Pattern),
    /// `**`: this directory and every one below it.
    AnyDirs,
}

/// A pattern split into the directory it starts from and what follows.
#[derive(Debug, Clone)]
pub struct Walk {
    base: PathBuf,
    parts: Vec<Part>,
}

/// Whether one component holds a wildcard.
fn is_wild(component: &str) -> bool {
    component.contains(['*', '?', '['])
}

impl Walk {
    /// Splits `pattern` (one `glob::Pattern::new` accepts) at its first
    /// wildcard component. Consecutive `**` are one.
    pub fn new(pattern: &str) -> Result<Walk, glob::PatternError> {
        let mut base = PathBuf::new();
        if pattern.starts_with('/') {
            base.push("/");
        }
        let mut parts: Vec<Part> = Vec::new();
        // `.` components are left out, as `glob` leaves them out of what it
        // names.
        for c in pattern.split('/').filter(|c| !c.is_empty() && *c != ".") {
            if parts.is_empty() && !is_wild(c) {
                base.push(c);
            } else if c == "**" {
                if !matches!(parts.last(), Some(Part::AnyDirs)) {
                    parts.push(Part::AnyDirs);
                }
            } else if is_wild(c) {
                parts.push(Part::Glob(glob::Pattern::new(c)?));
            } else {
                parts.push(Part::Literal(c.to_owned()));
            }
        }
        // An empty base is the working directory, and matches are named
        // as `glob` names them (`a.log`, not `./a.log`): a checkpoint knows
        // each log by that name.
        Ok(Walk { base, parts })
    }

    /// Whether the walk starts at the root: `/**/x`, `/*/*.log` (and
    /// `/../*`, which is the root too) look at the whole file system.
    pub fn walks_from_root(&self) -> bool {
        !self.parts.is_empty()
            && self.base.is_absolute()
            && self.base.components().all(|c| {
                matches!(
                    c,
                    Component::RootDir | Component::CurDir | Component::ParentDir
                )
            })
    }

    /// The files the pattern names, within `budget`, in no particular
    /// order and possibly more than once (`a/**/b/**/c`).
    pub fn files(
        &self,
        budget: &mut Budget,
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<PathBuf>, Stopped> {
        let options = glob::MatchOptions {
            // `*` never names a hidden file: the index's checkpoint is one.
            require_literal_leading_dot: true,
            ..glob::MatchOptions::new()
        };
        let mut found = Vec::new();
        if self.parts.is_empty() && self.base.is_file() {
            found.push(self.base.clone());
        }
        let mut todo = vec![(self.base.clone(), 0usize)];
        while let Some((dir, i)) = todo.pop() {
            let Some(part) = self.parts.get(i) else {
                continue;
            };
            let last = i + 1 == self.parts.len();
            let mut matched = |path: PathBuf, todo: &mut Vec<(PathBuf, usize)>| {
                if last {
                    if path.is_file() {
                        found.push(path);
                    }
                } else if path.is_dir() {
                    todo.push((path, i + 1));
                }
            };
            match part {
                Part::Literal(name) => {
                    if stop() {
                        return Err(Stopped);
                    }
                    if !budget.take() {
                        break;
                    }
                    matched(dir.join(name), &mut todo);
                }
                Part::AnyDirs | Part::Glob(_) => {
                    if matches!(part, Part::AnyDirs) {
                        todo.push((dir.clone(), i + 1));
                    }
                    let here = if dir.as_os_str().is_empty() {
                        std::path::Path::new(".")
                    } else {
                        dir.as_path()
                    };
                    let Ok(entries) = std::fs::read_dir(here) else {
                        continue;
                    };
                    for entry in entries {
                        if stop() {
                            return Err(Stopped);
                        }
                        if !budget.take() {
                            return Ok(found);
                        }
                        let Ok(entry) = entry else {
                            continue;
                        };
                        let name = entry.file_name();
                        let Some(name) = name.to_str() else {
                            continue;
                        };
                        match part {
                            Part::Glob(p) if p.matches_with(name, options) => {
                                matched(dir.join(name), &mut todo);
                            }
                            Part::AnyDirs
                                if !name.starts_with('.')
                                    && entry.file_type().is_ok_and(|t| t.is_dir()) =>
                            {
                                todo.push((dir.join(name), i));
                            }
                            _ => {}
                        }
                    }
                }
            }
            if budget.cut {
                break;
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn files(pattern: &str, budget: &mut Budget) -> BTreeSet<PathBuf> {
        Walk::new(pattern)
            .expect("pattern")
            .files(budget, &|| false)
            .expect("not stopped")
            .into_iter()
            .collect()
    }

    /// The files `glob` names for the same pattern, on a tree without
    /// symbolic links.
    fn globbed(pattern: &str) -> BTreeSet<PathBuf> {
        let options = glob::MatchOptions {
            require_literal_leading_dot: true,
            ..glob::MatchOptions::new()
        };
        glob::glob_with(pattern, options)
            .expect("pattern")
            .filter_map(Result::ok)
            .filter(|p| p.is_file())
            .collect()
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for path in [
            "a.log",
            "a.log.1",
            ".hidden.log",
            "n/b.log",
            "n/c.txt",
            "n/m/d.log",
            "n/m/k/e.log",
            "n/.h/f.log",
            "x/n/g.log",
        ] {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            std::fs::write(path, "x\n").expect("write");
        }
        std::fs::create_dir(dir.path().join("n/dir.log")).expect("dir");
        dir
    }

    #[test]
    fn names_the_files_glob_names() {
        let dir = tree();
        let root = dir.path().display();
        for pattern in [
            "*",
            "*.log",
            "n/*.log",
            "*/*.log",
            "**/*.log",
            "**/**/**/*.log",
            "n/**/*",
            "**/n/*.log",
            "*/m/*.log",
            "n/m/k/e.log",
            "n/[bc].*",
            "n/?.log",
            "n/.h/*",
            "**",
        ] {
            let pattern = format!("{root}/{pattern}");
            let mut budget = Budget::new(MAX_ENTRIES);
            assert_eq!(files(&pattern, &mut budget), globbed(&pattern), "{pattern}");
            assert!(!budget.cut);
        }
    }

    /// Relative patterns, from the crate's directory (the tests' working
    /// directory), name their files as `glob` does: the checkpoint keys
    /// each log by that name.
    #[test]
    fn relative_patterns_name_files_as_glob_does() {
        for pattern in [
            "*.toml",
            "src/scan_index/*.rs",
            "./src/scan_index/*.rs",
            "src/**/walk.rs",
            "src/scan_index/../scan_index/*.rs",
            "./*.toml",
            "src/./scan_index/*.rs",
        ] {
            let mut budget = Budget::new(MAX_ENTRIES);
            let got = files(pattern, &mut budget);
            assert!(!got.is_empty(), "{pattern}");
            assert_eq!(got, globbed(pattern), "{pattern}");
        }
    }

    #[test]
    fn a_walk_stops_at_its_budget_and_when_asked() {
        let dir = tree();
        let pattern = format!("{}/**/*.log", dir.path().display());
        let mut budget = Budget::new(3);
        assert!(files(&pattern, &mut budget).len() <= 3);
        assert!(budget.cut);
        let walk = Walk::new(&pattern).expect("pattern");
        assert!(walk.files(&mut Budget::new(MAX_ENTRIES), &|| true).is_err());
    }

    #[test]
    fn a_loop_of_links_is_not_followed_under_double_star() {
        let dir = tree();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("n/up")).expect("symlink");
        std::os::unix::fs::symlink(dir.path(), dir.path().join("n/m/up")).expect("symlink");
        let pattern = format!("{}/**/*.log", dir.path().display());
        let mut budget = Budget::new(MAX_ENTRIES);
        let got = files(&pattern, &mut budget);
        assert!(!budget.cut);
        assert!(got.contains(&dir.path().join("n/m/k/e.log")));
    }

    #[test]
    fn only_a_walk_from_the_root_is_from_the_root() {
        for (pattern, root) in [
            ("/**/x", true),
            ("/*/*.log", true),
            ("/../*/x", true),
            ("/./**", true),
            ("/var/log/*.log", false),
            ("/var/*/x", false),
            ("nodes/*", false),
            ("*.log", false),
            ("/var/log/qrtag/access.log", false),
        ] {
            assert_eq!(
                Walk::new(pattern).expect("pattern").walks_from_root(),
                root,
                "{pattern}"
            );
        }
    }
}

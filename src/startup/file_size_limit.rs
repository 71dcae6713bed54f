//! The file-size limit (`RLIMIT_FSIZE`: `ulimit -f`, systemd's
//! `LimitFSIZE=`) against the database it must write.
//!
//! SQLite writes pages anywhere in its file: under a limit below the file's
//! size the first write past it fails (or, without a SIGXFSZ handler, kills
//! the process). A start that cannot write its own database is refused in
//! one line naming both sizes, before the store is opened.
//!
//! [`check`] is the decision (pure); [`limit`] is the only kernel call.

use std::path::Path;

/// The limit is below the database's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the file-size limit (ulimit -f) is {limit} bytes, below the database's {size} bytes: raise it (`ulimit -f unlimited`, LimitFSIZE= in the systemd unit)"
)]
pub struct BelowDatabase {
    pub limit: u64,
    pub size: u64,
}

/// Whether a database of `size` bytes can be written under `limit` (`None`:
/// no limit).
pub fn check(limit: Option<u64>, size: u64) -> Result<(), BelowDatabase> {
    match limit {
        Some(limit) if limit < size => Err(BelowDatabase { limit, size }),
        _ => Ok(()),
    }
}

/// The process's soft `RLIMIT_FSIZE` in bytes, `None` when unlimited or
/// unreadable.
pub fn limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    Some(lim.rlim_cur)
}

/// [`check`] for the file at `path` under the process's limit; a file that
/// does not exist yet has nothing to write past.
pub fn check_file(path: &Path) -> Result<(), BelowDatabase> {
    match std::fs::metadata(path) {
        Ok(meta) => check(limit(), meta.len()),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_limit_or_room_to_spare_passes() {
        assert_eq!(check(None, u64::MAX), Ok(()));
        assert_eq!(check(Some(4096), 4096), Ok(()));
    }

    #[test]
    fn a_limit_below_the_file_names_both() {
        let e = check(Some(1000), 4096).expect_err("below");
        assert!(
            e.to_string()
                .starts_with("the file-size limit (ulimit -f) is 1000 bytes, below the database's 4096 bytes: raise it"),
            "{e}"
        );
    }
}

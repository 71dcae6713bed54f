//! Whole lines handed on as they reach the log, each batch with the place
//! it landed (issue 38: the ClickHouse scan sink). The flusher thread is
//! where that place is known: it writes every byte, so it alone can say
//! at which offset of which file a line starts, and it works in batches
//! (one call per write, not per request), off the request path. A
//! request handler knows neither the offset nor the file, and a hand-off
//! there would cost every redirect.
//!
//! A file is named by its first line (the identity `qrtag stats
//! --load-into` and the scan index give it), so after a rotation, or a
//! truncation by `copytruncate`, the new file's first line names it.

/// Lines just written, and where.
#[derive(Debug, Clone, Copy)]
pub struct Landed<'a> {
    /// The current file's first line, `\n` included.
    pub first_line: &'a [u8],
    /// The byte offset of `lines`' first byte in that file.
    pub offset: u64,
    /// One or more whole lines, each ending in `\n`.
    pub lines: &'a [u8],
}

/// What takes the lines. Called on the writer thread after the write,
/// with no lock held: it must not block (a bounded queue's try-push).
pub trait LineTap: Send + Sync {
    fn landed(&self, landed: Landed<'_>);
}

/// The flusher's bookkeeping of what it handed on (pure but for the
/// callbacks it is given).
#[derive(Debug, Default)]
pub(super) struct Placer {
    /// `pending[..tapped]` has been handed on (it ends at a line's end).
    tapped: usize,
    first_line: Option<Vec<u8>>,
    /// Where the lines last handed on ended in the file: an offset below
    /// it means the file was truncated under us.
    end: u64,
    /// Bytes written to a stream (standard output), which has no length.
    stream: u64,
}

impl Placer {
    /// The flusher took a new batch: offsets into it start again.
    pub(super) fn new_batch(&mut self) {
        self.tapped = 0;
    }

    /// The flusher switched files: the next file names itself.
    pub(super) fn new_file(&mut self) {
        self.first_line = None;
        self.end = 0;
        self.stream = 0;
    }

    /// After `n` bytes of `pending` from `done_before` were written: the
    /// whole lines now written and not yet handed on go to `tap`.
    /// `file_end` is the file's length after the write (`None` for a
    /// stream); `read_first` reads the file's first line when the lines
    /// do not start it and it is not known.
    pub(super) fn written(
        &mut self,
        pending: &[u8],
        done_before: usize,
        n: usize,
        file_end: Option<u64>,
        read_first: impl FnOnce() -> Option<Vec<u8>>,
        tap: &dyn LineTap,
    ) {
        let done = done_before + n;
        self.tapped = self.tapped.min(done_before);
        let Some(last) = memchr::memrchr(b'\n', &pending[self.tapped..done]) else {
            return;
        };
        let upto = self.tapped + last + 1;
        let lines = &pending[self.tapped..upto];
        let file_end = file_end.unwrap_or_else(|| {
            self.stream += n as u64;
            self.stream
        });
        // The write's first byte is at `file_end - n`; the lines start
        // `done_before - tapped` bytes earlier (a line begun by an
        // earlier, partial write).
        let offset = file_end
            .checked_sub(n as u64)
            .and_then(|s| s.checked_sub((done_before - self.tapped) as u64));
        self.tapped = upto;
        let Some(offset) = offset else { return };
        if offset == 0 {
            let first = memchr::memchr(b'\n', lines).map_or(lines.len(), |i| i + 1);
            self.first_line = Some(lines[..first].to_vec());
        } else if self.first_line.is_none() || offset < self.end {
            self.first_line = read_first();
        }
        self.end = offset + lines.len() as u64;
        if let Some(first_line) = &self.first_line {
            tap.landed(Landed {
                first_line,
                offset,
                lines,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// (first line, offset, lines) of each call.
    type Call = (Vec<u8>, u64, Vec<u8>);

    #[derive(Default)]
    struct Seen(Mutex<Vec<Call>>);

    impl LineTap for Seen {
        fn landed(&self, l: Landed<'_>) {
            self.0
                .lock()
                .unwrap()
                .push((l.first_line.to_vec(), l.offset, l.lines.to_vec()));
        }
    }

    #[test]
    fn a_line_split_across_writes_is_handed_on_once_whole_at_its_offset() {
        let seen = Seen::default();
        let mut p = Placer::default();
        let pending = b"a1\nb22\nc333\n";
        // A file that already held 10 bytes whose first line is "old\n".
        let first = || Some(b"old\n".to_vec());
        p.written(pending, 0, 5, Some(15), first, &seen);
        p.written(pending, 5, 7, Some(22), || None, &seen);
        let got = seen.0.lock().unwrap().clone();
        assert_eq!(
            got,
            [
                (b"old\n".to_vec(), 10, b"a1\n".to_vec()),
                (b"old\n".to_vec(), 13, b"b22\nc333\n".to_vec()),
            ]
        );
    }

    #[test]
    fn a_new_or_truncated_file_is_named_by_its_own_first_line() {
        let seen = Seen::default();
        let mut p = Placer::default();
        p.written(b"x\ny\n", 0, 4, Some(4), || None, &seen);
        p.new_batch();
        // copytruncate: the file was emptied, the next batch starts it.
        p.written(b"z\n", 0, 2, Some(2), || None, &seen);
        p.new_batch();
        p.new_file();
        p.written(b"w\n", 0, 2, None, || None, &seen);
        p.written(b"w\nv\n", 2, 2, None, || None, &seen);
        let got = seen.0.lock().unwrap().clone();
        assert_eq!(got[0], (b"x\n".to_vec(), 0, b"x\ny\n".to_vec()));
        assert_eq!(got[1], (b"z\n".to_vec(), 0, b"z\n".to_vec()));
        assert_eq!(got[2], (b"w\n".to_vec(), 0, b"w\n".to_vec()));
        assert_eq!(got[3], (b"w\n".to_vec(), 2, b"v\n".to_vec()));
    }
}

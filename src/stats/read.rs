//! Reading log files line by line, plain or gzip-compressed.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};

use flate2::bufread::MultiGzDecoder;

/// How a scan index checkpoint file begins. It sits beside the logs and may
/// match `access.log*`, so `qrtag stats` must know one when it is given one;
/// the scan index, which builds on this reading, writes it.
pub const SCAN_INDEX_CHECKPOINT: &[u8; 8] = b"QRTAGSIX";

/// Whether `head`, a file's first bytes, begins like a scan index checkpoint.
pub fn is_scan_index_checkpoint(head: &[u8]) -> bool {
    head.starts_with(SCAN_INDEX_CHECKPOINT)
}

/// Large reads keep system calls and decompressor calls off the per-line cost.
pub const BUF_SIZE: usize = 1 << 20;

/// No valid line comes near this (request headers are capped far lower); the cap
/// keeps a binary file without newlines from being read into memory whole.
pub const MAX_LINE: usize = 1 << 20;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Wraps `r` in a buffer, with a gzip decoder in between if `r` starts with the
/// gzip magic number. Rotated logs are recognised by content, since rotation tools
/// name them variously (`.gz`, `.1`, `-20261121`). Concatenated gzip members (as
/// `cat a.gz b.gz` makes) are all read.
pub fn decompressing<'a, R: Read + 'a>(r: R) -> io::Result<Box<dyn BufRead + 'a>> {
    let mut buffered = BufReader::with_capacity(BUF_SIZE, r);
    if buffered.fill_buf()?.starts_with(&GZIP_MAGIC) {
        let decoder = MultiGzDecoder::new(buffered);
        Ok(Box::new(BufReader::with_capacity(BUF_SIZE, decoder)))
    } else {
        Ok(Box::new(buffered))
    }
}

/// A line that cannot be handed to the parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineError {
    /// The file ends without a final `\n`: a write was cut short, or the log is
    /// being written to right now.
    Unterminated,
    TooLong,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::Unterminated => f.write_str("last line has no newline (cut short?)"),
            LineError::TooLong => write!(f, "line longer than {MAX_LINE} bytes"),
        }
    }
}

/// Calls `f` with each line's 1-based number and its bytes, `\n` included.
/// One buffer serves every line, so reading allocates only when a line is longer
/// than any before it.
pub fn for_each_line(
    r: &mut dyn BufRead,
    mut f: impl FnMut(u64, Result<&[u8], LineError>),
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(4096);
    let mut number = 0;
    loop {
        buf.clear();
        let n = Read::take(&mut *r, MAX_LINE as u64).read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        if buf.last() == Some(&b'\n') {
            f(number, Ok(&buf));
        } else if n == MAX_LINE {
            r.skip_until(b'\n')?;
            f(number, Err(LineError::TooLong));
        } else {
            f(number, Err(LineError::Unterminated));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::{Cursor, Write};

    fn lines(data: Vec<u8>) -> Vec<(u64, Result<Vec<u8>, LineError>)> {
        let mut r = decompressing(Cursor::new(data)).unwrap();
        let mut seen = Vec::new();
        for_each_line(&mut *r, |n, l| seen.push((n, l.map(<[u8]>::to_vec)))).unwrap();
        seen
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn plain_and_gzip_read_the_same() {
        let text = b"one\ntwo\n".to_vec();
        let want = vec![(1, Ok(b"one\n".to_vec())), (2, Ok(b"two\n".to_vec()))];
        assert_eq!(lines(text.clone()), want);
        assert_eq!(lines(gzip(&text)), want);
    }

    #[test]
    fn concatenated_gzip_members_are_all_read() {
        let mut data = gzip(b"one\n");
        data.extend(gzip(b"two\n"));
        assert_eq!(lines(data).len(), 2);
    }

    #[test]
    fn empty_and_unterminated() {
        assert!(lines(Vec::new()).is_empty());
        assert_eq!(
            lines(b"one\ntw".to_vec())[1],
            (2, Err(LineError::Unterminated))
        );
    }

    #[test]
    fn overlong_line_is_skipped_whole() {
        let mut data = vec![b'x'; MAX_LINE + 10];
        data.extend(b"\nnext\n");
        let seen = lines(data);
        assert_eq!(seen[0], (1, Err(LineError::TooLong)));
        assert_eq!(seen[1], (2, Ok(b"next\n".to_vec())));
    }

    #[test]
    fn corrupt_gzip_is_an_error() {
        let mut data = gzip(b"one\ntwo\n");
        let len = data.len();
        data[len / 2] ^= 0xff;
        data.truncate(len - 4);
        let mut r = decompressing(Cursor::new(data)).unwrap();
        assert!(for_each_line(&mut *r, |_, _| {}).is_err());
    }
}

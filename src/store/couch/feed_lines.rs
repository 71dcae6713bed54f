//! Splitting the `_changes` feed into lines: each byte is looked at once,
//! and no line is held beyond a limit.
//!
//! The feed is one JSON object per line, of any length a document can have.
//! Searching the whole buffer again for every new chunk (and draining it
//! line by line) made a long line quadratic; a line longer than the limit was
//! buffered whole before it was refused. Here a chunk is scanned from where
//! the last one stopped, and a line over the limit keeps only its first bytes
//! (which name the change's `seq` and `id`) while the rest streams past.

/// What the splitter hands on.
#[derive(Debug, PartialEq, Eq)]
pub enum FeedLine {
    /// A whole line, without its `\n`.
    Whole(Vec<u8>),
    /// A line longer than the limit: its first `limit` bytes, its last
    /// [`TAIL`] bytes (PouchDB writes `seq` last) and its length.
    TooLong {
        head: Vec<u8>,
        tail: Vec<u8>,
        len: usize,
    },
}

/// How much of the end of a line over the limit is kept.
pub const TAIL: usize = 512;

#[derive(Debug)]
pub struct LineSplitter {
    limit: usize,
    buf: Vec<u8>,
    /// Bytes of the current line dropped after the first `limit`.
    dropped: usize,
    /// The last dropped bytes (up to twice [`TAIL`] between trims).
    tail: Vec<u8>,
}

impl LineSplitter {
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            buf: Vec::new(),
            dropped: 0,
            tail: Vec::new(),
        }
    }

    /// Feeds one chunk; returns the lines it completed, in order.
    pub fn push(&mut self, mut chunk: &[u8]) -> Vec<FeedLine> {
        let mut lines = Vec::new();
        while let Some(pos) = memchr::memchr(b'\n', chunk) {
            self.keep(&chunk[..pos]);
            lines.push(self.finish());
            chunk = &chunk[pos + 1..];
        }
        self.keep(chunk);
        lines
    }

    /// Bytes of an unfinished line held now (at most the limit).
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    fn keep(&mut self, part: &[u8]) {
        let room = self.limit.saturating_sub(self.buf.len());
        let take = room.min(part.len());
        self.buf.extend_from_slice(&part[..take]);
        let dropped = &part[take..];
        self.dropped += dropped.len();
        let from = dropped.len().saturating_sub(TAIL);
        self.tail.extend_from_slice(&dropped[from..]);
        if self.tail.len() > 2 * TAIL {
            self.tail.drain(..self.tail.len() - TAIL);
        }
    }

    fn finish(&mut self) -> FeedLine {
        let line = std::mem::take(&mut self.buf);
        let dropped = std::mem::take(&mut self.dropped);
        let mut tail = std::mem::take(&mut self.tail);
        if dropped == 0 {
            FeedLine::Whole(line)
        } else {
            tail.drain(..tail.len().saturating_sub(TAIL));
            FeedLine::TooLong {
                len: line.len() + dropped,
                head: line,
                tail,
            }
        }
    }
}

/// The `id` of a change line from its first bytes, for a line too long to
/// parse: CouchDB writes `seq` and `id` before the document. Only ids that
/// need no JSON escapes are found; a key needs none.
pub fn id_in_head(head: &[u8]) -> Option<&str> {
    let at = memchr::memmem::find(head, b"\"id\":\"")? + 6;
    let rest = &head[at..];
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    (rest[end] == b'"')
        .then(|| std::str::from_utf8(&rest[..end]).ok())
        .flatten()
}

/// The `seq` of a change line too long to parse, as JSON (a number or a
/// string without escapes): the first in its head (CouchDB writes it first),
/// else the last in its tail (PouchDB writes it last).
pub fn seq_in(head: &[u8], tail: &[u8]) -> Option<serde_json::Value> {
    let key = b"\"seq\":";
    let (text, at) = match memchr::memmem::find(head, key) {
        Some(at) => (head, at),
        None => (tail, memchr::memmem::rfind(tail, key)?),
    };
    let rest = &text[at + key.len()..];
    let end = if rest.first() == Some(&b'"') {
        memchr::memchr(b'"', &rest[1..])? + 2
    } else {
        rest.iter().position(|b| !b.is_ascii_digit())?
    };
    serde_json::from_slice(&rest[..end]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn split_all(input: &[u8], cuts: &[usize], limit: usize) -> Vec<FeedLine> {
        let mut s = LineSplitter::new(limit);
        let mut out = Vec::new();
        let mut last = 0;
        for &c in cuts {
            let c = c.min(input.len()).max(last);
            out.extend(s.push(&input[last..c]));
            last = c;
        }
        out.extend(s.push(&input[last..]));
        assert!(s.pending() <= limit);
        out
    }

    #[test]
    fn lines_come_whole_or_cut_with_their_length() {
        let input =
            b"{\"seq\":1}\n\n{\"seq\":2,\"id\":\"abcde\",\"doc\":\"xxxxxxxxxxxxxxxx\"}\npartial";
        let lines = split_all(input, &[3, 11, 12, 40], 20);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], FeedLine::Whole(b"{\"seq\":1}".to_vec()));
        assert_eq!(lines[1], FeedLine::Whole(Vec::new()));
        match &lines[2] {
            FeedLine::TooLong { head, len, .. } => {
                assert_eq!(head.as_slice(), &input[11..31]);
                let line_end = 11
                    + input[11..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .expect("newline");
                assert_eq!(*len, line_end - 11);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_long_line_reads_its_id_and_seq() {
        let head = br#"{"seq":"12-g1AAAA","id":"H83if","changes":[{"rev":"2-a"}],"doc":{"url":"#;
        assert_eq!(id_in_head(head), Some("H83if"));
        assert_eq!(seq_in(head, b""), Some(serde_json::json!("12-g1AAAA")));
        let pouch = br#"{"id":"docs/api","changes":[{"rev":"2-b"}],"doc":{"#;
        assert_eq!(id_in_head(pouch), Some("docs/api"));
        assert_eq!(
            seq_in(pouch, br#"xxxx"}},"seq":17}"#),
            Some(serde_json::json!(17))
        );
        assert_eq!(seq_in(pouch, b"xxxx"), None);
        assert_eq!(id_in_head(br#"{"seq":7,"id":"ab\"c"#), None);
        assert_eq!(
            id_in_head(br#"{"seq":7,"id":"abc"#),
            None,
            "cut inside the id"
        );
    }

    proptest! {
        /// However the stream is cut into chunks, the lines are the same,
        /// and what is held never passes the limit.
        #[test]
        fn every_split_gives_the_same_lines(
            lines in proptest::collection::vec(proptest::collection::vec(b'a'..=b'z', 0..40), 0..8),
            cuts in proptest::collection::vec(0usize..300, 0..10),
            limit in 1usize..30,
        ) {
            let mut input = Vec::new();
            for l in &lines {
                input.extend_from_slice(l);
                input.push(b'\n');
            }
            let mut cuts = cuts;
            cuts.sort_unstable();
            let got = split_all(&input, &cuts, limit);
            prop_assert_eq!(got.len(), lines.len());
            for (g, want) in got.iter().zip(&lines) {
                match g {
                    FeedLine::Whole(l) => prop_assert!(l == want && want.len() <= limit),
                    FeedLine::TooLong { head, tail, len } => {
                        prop_assert_eq!(*len, want.len());
                        prop_assert!(want.len() > limit);
                        prop_assert_eq!(head.as_slice(), &want[..limit]);
                        let kept = (want.len() - limit).min(TAIL);
                        prop_assert_eq!(tail.as_slice(), &want[want.len() - kept..]);
                    }
                }
            }
        }
    }
}

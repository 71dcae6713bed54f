//! Splitting a streamed `_all_docs` answer into its rows, chunk by chunk.
//!
//! `{"total_rows":N,"offset":0,"rows":[{row},{row},…]}`: each row is an
//! object inside the array at the second level. Apache CouchDB writes a row
//! per line and PouchDB Server the whole answer on one line, so rows are
//! found by the JSON structure (depth, strings, escapes) rather than by
//! lines. Each byte is looked at once (string contents are skipped with
//! `memchr`), only the row being read is held, and a row longer than the
//! limit keeps only its first bytes, which name its `id`, while the rest
//! streams past. A body that stops before its closing brace is an error, so
//! a cut connection is never taken for the end of the database.

/// What the splitter hands on.
#[derive(Debug, PartialEq, Eq)]
pub enum Row {
    /// A whole row's JSON text.
    Whole(Vec<u8>),
    /// A row longer than the limit: its first `limit` bytes and its length.
    TooLong { head: Vec<u8>, len: usize },
}

#[derive(Debug)]
pub struct RowSplitter {
    limit: usize,
    /// Open arrays and objects; a row is an object opened at depth 2.
    depth: u32,
    /// Whether the container at depth 2 is an array (the rows).
    in_rows: bool,
    in_string: bool,
    escaped: bool,
    /// The current row's bytes, up to the limit.
    row: Vec<u8>,
    in_row: bool,
    row_len: usize,
    /// The top-level object has been opened.
    started: bool,
    /// The top-level object has been closed.
    done: bool,
}

impl RowSplitter {
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            depth: 0,
            in_rows: false,
            in_string: false,
            escaped: false,
            row: Vec::new(),
            in_row: false,
            row_len: 0,
            started: false,
            done: false,
        }
    }

    /// Feeds one chunk, appending the rows it completed to `out`, in order.
    /// An error means the body is not an `_all_docs` answer.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Row>) -> Result<(), &'static str> {
        let mut i = 0;
        let mut row_from = 0;
        while i < chunk.len() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    i += 1;
                    continue;
                }
                match memchr::memchr2(b'"', b'\\', &chunk[i..]) {
                    None => i = chunk.len(),
                    Some(at) => {
                        i += at;
                        if chunk[i] == b'"' {
                            self.in_string = false;
                        } else {
                            self.escaped = true;
                        }
                        i += 1;
                    }
                }
                continue;
            }
            let b = chunk[i];
            if self.done {
                if !b.is_ascii_whitespace() {
                    return Err("text after the end of the answer");
                }
                i += 1;
                continue;
            }
            match b {
                b'"' => {
                    if !self.started {
                        return Err("not a JSON object");
                    }
                    self.in_string = true;
                }
                b'{' | b'[' => {
                    if !self.started {
                        if b != b'{' {
                            return Err("not a JSON object");
                        }
                        self.started = true;
                    }
                    self.depth += 1;
                    if self.depth == 2 {
                        self.in_rows = b == b'[';
                    }
                    if self.depth == 3 && self.in_rows && b == b'{' {
                        self.in_row = true;
                        self.row_len = 0;
                        row_from = i;
                    }
                }
                b'}' | b']' => {
                    if self.depth == 0 {
                        return Err("unbalanced JSON");
                    }
                    self.depth -= 1;
                    if self.depth == 2 && self.in_row {
                        self.keep(&chunk[row_from..=i]);
                        self.in_row = false;
                        out.push(self.finish_row());
                    }
                    if self.depth == 0 {
                        self.done = true;
                    }
                }
                _ if !self.started && !b.is_ascii_whitespace() => {
                    return Err("not a JSON object");
                }
                _ => {}
            }
            i += 1;
        }
        if self.in_row {
            self.keep(&chunk[row_from..]);
        }
        Ok(())
    }

    /// Checks the body ended where the answer does.
    pub fn finish(&self) -> Result<(), &'static str> {
        if self.done {
            Ok(())
        } else {
            Err("the answer stopped before its end")
        }
    }

    fn keep(&mut self, part: &[u8]) {
        self.row_len += part.len();
        let room = self.limit.saturating_sub(self.row.len());
        self.row.extend_from_slice(&part[..room.min(part.len())]);
    }

    fn finish_row(&mut self) -> Row {
        let row = std::mem::take(&mut self.row);
        if self.row_len > self.limit {
            Row::TooLong {
                head: row,
                len: self.row_len,
            }
        } else {
            Row::Whole(row)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn split(input: &[u8], cuts: &[usize], limit: usize) -> Result<Vec<Row>, &'static str> {
        let mut s = RowSplitter::new(limit);
        let mut out = Vec::new();
        let mut at = 0;
        for &cut in cuts {
            let cut = cut.min(input.len()).max(at);
            s.push(&input[at..cut], &mut out)?;
            at = cut;
        }
        s.push(&input[at..], &mut out)?;
        s.finish()?;
        Ok(out)
    }

    const COUCH: &[u8] = b"{\"total_rows\":3,\"offset\":0,\"rows\":[\r\n\
        {\"id\":\"a}\",\"key\":\"a}\",\"value\":{\"rev\":\"1-x\"},\"doc\":{\"_id\":\"a}\",\"url\":\"/\\\"{[\"}},\r\n\
        {\"id\":\"b\",\"key\":\"b\",\"value\":{\"rev\":\"1-y\"},\"doc\":{\"n\":[{\"x\":[]}]}}\r\n\
        ]}\n";

    #[test]
    fn rows_are_found_by_structure_whatever_the_chunks() {
        let whole = split(COUCH, &[], 1 << 20).expect("rows");
        assert_eq!(whole.len(), 2);
        let Row::Whole(first) = &whole[0] else {
            panic!("{whole:?}")
        };
        let v: serde_json::Value = serde_json::from_slice(first).expect("a row is JSON");
        assert_eq!(v["doc"]["url"], "/\"{[");
        for cut in 0..COUCH.len() {
            assert_eq!(split(COUCH, &[cut], 1 << 20).as_ref(), Ok(&whole), "{cut}");
        }
    }

    #[test]
    fn a_long_row_keeps_its_head() {
        let rows = split(COUCH, &[40, 90], 30).expect("rows");
        match &rows[0] {
            Row::TooLong { head, len } => {
                assert_eq!(head.len(), 30);
                assert!(head.starts_with(b"{\"id\":\"a}\""));
                assert!(*len > 30);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_cut_or_broken_body_is_an_error() {
        for cut in [0, 10, COUCH.len() / 2, COUCH.len() - 3] {
            let mut s = RowSplitter::new(1 << 20);
            let mut out = Vec::new();
            s.push(&COUCH[..cut], &mut out).expect("a prefix");
            assert!(s.finish().is_err(), "{cut}");
        }
        for bad in [&b"[1]"[..], b"x{}", b"{}}", b"{} x", b"\"rows\""] {
            assert!(split(bad, &[], 100).is_err(), "{bad:?}");
        }
        assert_eq!(
            split(b"{\"total_rows\":0,\"rows\":[]}", &[], 100),
            Ok(vec![])
        );
    }

    proptest! {
        #[test]
        fn any_cuts_give_the_same_rows(
            ids in proptest::collection::vec("[a-z{}\\[\\]\"\\\\]{0,8}", 0..20),
            mut cuts in proptest::collection::vec(0usize..2000, 0..6),
        ) {
            let rows: Vec<String> = ids
                .iter()
                .map(|id| serde_json::json!({"id": id, "doc": {"_id": id, "a": [id, {"b": id}]}}).to_string())
                .collect();
            let body = format!("{{\"total_rows\":{},\"rows\":[{}]}}", rows.len(), rows.join(","));
            cuts.sort_unstable();
            let got = split(body.as_bytes(), &cuts, 1 << 20).expect("rows");
            let want: Vec<Row> = rows.into_iter().map(|r| Row::Whole(r.into_bytes())).collect();
            prop_assert_eq!(got, want);
        }
    }
}

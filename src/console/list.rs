//! One page of the links list: a search over the sorted keys and the
//! snapshot's table, cut at a page by key cursors (`after`/`before` a key),
//! so every page costs the same however deep it is and an edit between two
//! clicks never shifts a row onto the wrong page.

use memchr::memmem;

use super::key_order::SortedKeys;
use crate::snapshot::LinkTable;

/// What the search box searches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum By {
    /// Keys starting with the text: a range of the sorted keys.
    #[default]
    Key,
    /// Destinations containing the text: a scan in key order that stops
    /// once a page is full.
    Url,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Cursor {
    #[default]
    First,
    After(String),
    Before(String),
}

#[derive(Debug, Clone, Default)]
pub struct Query {
    pub text: String,
    pub by: By,
    pub cursor: Cursor,
}

/// A row, copied out of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub key: String,
    pub url: String,
    pub inactive: bool,
    pub expires_ms: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    pub rows: Vec<Row>,
    /// The cursor for the previous page (`before` this key), if there is one.
    pub prev: Option<String>,
    /// The cursor for the next page (`after` this key), if there is one.
    pub next: Option<String>,
}

/// The page `query` asks for, at most `size` rows.
pub fn page(keys: &SortedKeys, table: &LinkTable, query: &Query, size: usize) -> Page {
    let size = size.max(1);
    let text = query.text.as_str();
    let finder = memmem::Finder::new(text.as_bytes());
    let row = |key: &str| -> Option<Row> {
        let link = table.get(key)?;
        if query.by == By::Url && !text.is_empty() && finder.find(link.url.as_bytes()).is_none() {
            return None;
        }
        Some(Row {
            key: key.to_owned(),
            url: link.url.to_owned(),
            inactive: link.inactive,
            expires_ms: link.expires_ms,
        })
    };
    // Keys with the prefix are one run of the sorted keys.
    let prefix = if query.by == By::Key { text } else { "" };
    match &query.cursor {
        Cursor::Before(end) => {
            let mut rows: Vec<Row> = keys
                .before(Some(end))
                .take_while(|k| k.starts_with(prefix))
                .filter_map(row)
                .take(size + 1)
                .collect();
            let more = rows.len() > size;
            rows.truncate(size);
            rows.reverse();
            Page {
                prev: more.then(|| rows.first().map(|r| r.key.clone())).flatten(),
                next: rows.last().map(|r| r.key.clone()),
                rows,
            }
        }
        cursor => {
            let (start, after) = match cursor {
                Cursor::After(k) if k.as_str() >= prefix => (k.as_str(), Some(k.as_str())),
                _ => (prefix, None),
            };
            let mut rows: Vec<Row> = keys
                .from(Some(start))
                .skip_while(|k| Some(*k) == after)
                .take_while(|k| k.starts_with(prefix))
                .filter_map(row)
                .take(size + 1)
                .collect();
            let more = rows.len() > size;
            rows.truncate(size);
            Page {
                prev: after.and(rows.first().map(|r| r.key.clone())),
                next: more.then(|| rows.last().map(|r| r.key.clone())).flatten(),
                rows,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Change, TableBuilder};

    fn table(n: usize) -> LinkTable {
        let mut b = TableBuilder::default();
        b.apply((0..n).map(|i| Change::Upsert {
            key: format!("k{i:03}"),
            doc: crate::link::test_document(serde_json::json!({
                "url": format!("https://example.com/{}", if i % 10 == 0 { "ten" } else { "other" }),
                "inactive": i % 2 == 1,
            })),
        }));
        b.build(None)
    }

    fn keys_of(p: &Page) -> Vec<&str> {
        p.rows.iter().map(|r| r.key.as_str()).collect()
    }

    #[test]
    fn pages_walk_forward_and_back_by_cursor() {
        let t = table(120);
        let keys = SortedKeys::build(t.iter().map(|l| l.key));
        let mut q = Query::default();
        let p1 = page(&keys, &t, &q, 50);
        assert_eq!(p1.rows.len(), 50);
        assert_eq!(
            (p1.prev.as_deref(), p1.next.as_deref()),
            (None, Some("k049"))
        );
        q.cursor = Cursor::After("k049".into());
        let p2 = page(&keys, &t, &q, 50);
        assert_eq!(keys_of(&p2)[0], "k050");
        q.cursor = Cursor::After(p2.next.clone().expect("more"));
        let p3 = page(&keys, &t, &q, 50);
        assert_eq!(p3.rows.len(), 20);
        assert_eq!(p3.next, None);
        q.cursor = Cursor::Before(p3.prev.clone().expect("back"));
        assert_eq!(page(&keys, &t, &q, 50), p2);
        q.cursor = Cursor::Before("k050".into());
        let back = page(&keys, &t, &q, 50);
        assert_eq!(keys_of(&back), keys_of(&p1));
        assert_eq!(back.prev, None);
    }

    #[test]
    fn prefix_and_substring_searches() {
        let t = table(120);
        let keys = SortedKeys::build(t.iter().map(|l| l.key));
        let q = Query {
            text: "k10".into(),
            ..Query::default()
        };
        let p = page(&keys, &t, &q, 50);
        assert_eq!(
            keys_of(&p),
            (100..110).map(|i| format!("k{i}")).collect::<Vec<_>>()
        );
        let q = Query {
            text: "ten".into(),
            by: By::Url,
            cursor: Cursor::First,
        };
        let p = page(&keys, &t, &q, 5);
        assert_eq!(keys_of(&p), ["k000", "k010", "k020", "k030", "k040"]);
        let q = Query {
            cursor: Cursor::After("k040".into()),
            ..q
        };
        let p = page(&keys, &t, &q, 5);
        assert_eq!(keys_of(&p), ["k050", "k060", "k070", "k080", "k090"]);
        assert_eq!(p.next.as_deref(), Some("k090"));
        let q = Query {
            text: "zz".into(),
            ..Query::default()
        };
        assert_eq!(page(&keys, &t, &q, 5), Page::default());
    }
}

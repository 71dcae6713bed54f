//! One page of the links list: a search over the sorted keys and the
//! snapshot's table, cut at a page by key cursors (`after`/`before` a key),
//! so every page costs the same however deep it is and an edit between two
//! clicks never shifts a row onto the wrong page.

use memchr::memmem;

use super::key_order::SortedKeys;
use crate::snapshot::{LinkTable, LinkView};

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
    let backward = matches!(query.cursor, Cursor::Before(_));
    // Up to `size + 1` rows in the direction of travel: one more than a
    // page says whether there is another page that way.
    let mut rows = if query.by == By::Url && !query.text.is_empty() {
        destination_matches(table, query, size + 1)
    } else {
        key_matches(keys, table, query, size + 1)
    };
    let more = rows.len() > size;
    rows.truncate(size);
    if backward {
        rows.reverse();
        Page {
            prev: more.then(|| rows.first().map(|r| r.key.clone())).flatten(),
            next: rows.last().map(|r| r.key.clone()),
            rows,
        }
    } else {
        let after = matches!(query.cursor, Cursor::After(_));
        Page {
            prev: after.then(|| rows.first().map(|r| r.key.clone())).flatten(),
            next: more.then(|| rows.last().map(|r| r.key.clone())).flatten(),
            rows,
        }
    }
}

fn row(key: &str, url: &str, inactive: bool, expires_ms: Option<i64>) -> Row {
    Row {
        key: key.to_owned(),
        url: url.to_owned(),
        inactive,
        expires_ms,
    }
}

/// Keys with the prefix are one run of the sorted keys: seek, then read on.
fn key_matches(keys: &SortedKeys, table: &LinkTable, query: &Query, n: usize) -> Vec<Row> {
    let prefix = if query.by == By::Key {
        query.text.as_str()
    } else {
        ""
    };
    let lookup = |key: &str| {
        table
            .get(key)
            .map(|l| row(key, l.url, l.inactive, l.expires_ms))
    };
    match &query.cursor {
        Cursor::Before(end) => keys
            .before(Some(end))
            .take_while(|k| k.starts_with(prefix))
            .filter_map(lookup)
            .take(n)
            .collect(),
        cursor => {
            let after = match cursor {
                Cursor::After(k) if k.as_str() >= prefix => Some(k.as_str()),
                _ => None,
            };
            keys.from(Some(after.unwrap_or(prefix)))
                .skip_while(|k| Some(*k) == after)
                .take_while(|k| k.starts_with(prefix))
                .filter_map(lookup)
                .take(n)
                .collect()
        }
    }
}

/// Destinations containing the text: one pass over the table in memory
/// order (a lookup per key in key order misses the cache a million times),
/// then the `n` nearest keys past the cursor picked out of the matches.
fn destination_matches(table: &LinkTable, query: &Query, n: usize) -> Vec<Row> {
    let finder = memmem::Finder::new(query.text.as_bytes());
    let past_cursor = |key: &str| match &query.cursor {
        Cursor::First => true,
        Cursor::After(k) => key > k.as_str(),
        Cursor::Before(k) => key < k.as_str(),
    };
    let mut hits: Vec<LinkView<'_>> = table
        .iter()
        .filter(|l| past_cursor(l.key) && finder.find(l.url.as_bytes()).is_some())
        .collect();
    let backward = matches!(query.cursor, Cursor::Before(_));
    let order = |a: &LinkView<'_>, b: &LinkView<'_>| {
        if backward {
            b.key.cmp(a.key)
        } else {
            a.key.cmp(b.key)
        }
    };
    if hits.len() > n {
        hits.select_nth_unstable_by(n, order);
        hits.truncate(n);
    }
    hits.sort_unstable_by(order);
    hits.iter()
        .map(|l| row(l.key, l.url, l.inactive, l.expires_ms))
        .collect()
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
            cursor: Cursor::Before("k050".into()),
            ..q
        };
        let back = page(&keys, &t, &q, 3);
        assert_eq!(keys_of(&back), ["k020", "k030", "k040"]);
        assert_eq!(
            (back.prev.as_deref(), back.next.as_deref()),
            (Some("k020"), Some("k040"))
        );
        let q = Query {
            text: "zz".into(),
            ..Query::default()
        };
        assert_eq!(page(&keys, &t, &q, 5), Page::default());
    }
}

//! One page of the links list: a search over the sorted keys and the
//! snapshot's table, cut at a page by cursors (`after`/`before` a row's
//! position), so every page costs the same however deep it is and an edit
//! between two clicks never shifts a row onto the wrong page.
//!
//! Issue 33: every page reads the console's orders ([`ListIndex`], kept
//! current per edit by [`super::key_order`]): a walk of the key order or a
//! time order from the cursor, the state filter read from the columns
//! kept beside each key, until a page is full; a search in key order reads
//! the index's text from the cursor until a page is full; a search in a
//! time order walks that order past the blocks whose trigrams rule its
//! text out, reading the others' texts, until a page is full (a text of
//! under three bytes, or one the walk finds too little of in
//! [`TEXTS_READ_IN_ORDER`] links, reads all of the index's text in one
//! `memmem` pass and keeps the page's rows in a heap bounded by the page
//! size). Only the rows of a page are read from the table.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::list_index::{Cols, ListIndex, Start, Summary, Time};
use super::scans::AllTimeScans;
use super::search::Needle;
use crate::link::natural_order;
use crate::snapshot::{LinkTable, LinkView};

/// What the search box searches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum By {
    /// Keys starting with the text: a range of the sorted keys.
    #[default]
    Key,
    /// Destinations containing the text: the index's text read in key
    /// order until a page is full.
    Url,
    /// Issue 33: keys, titles, notes or destinations containing the text,
    /// ignoring case ([`super::search::Needle`]), read from the index's
    /// lowered text.
    Any,
}

/// The list's order. Links without the time asked for (made before qrtag
/// recorded times, or written by hand) come last either way, by key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Sort {
    #[default]
    Key,
    /// Newest first.
    Created,
    CreatedOldest,
    /// Most recently changed first.
    Changed,
    ChangedOldest,
}

impl Sort {
    pub const ALL: [Sort; 5] = [
        Sort::Key,
        Sort::Created,
        Sort::CreatedOldest,
        Sort::Changed,
        Sort::ChangedOldest,
    ];

    /// The query parameter's value.
    pub fn name(self) -> &'static str {
        match self {
            Sort::Key => "key",
            Sort::Created => "created",
            Sort::CreatedOldest => "created-oldest",
            Sort::Changed => "changed",
            Sort::ChangedOldest => "changed-oldest",
        }
    }

    pub fn parse(s: &str) -> Option<Sort> {
        Sort::ALL.into_iter().find(|v| v.name() == s)
    }

    /// A link's place in this order before its key: smaller comes first.
    fn rank(self, l: &LinkView<'_>) -> u64 {
        self.rank_of_cols(&Cols::of(l))
    }

    /// [`Sort::rank`] from the index's columns.
    fn rank_of_cols(self, c: &Cols) -> u64 {
        let (time, newest_first) = match self {
            Sort::Key => return 0,
            Sort::Created => (c.created(), true),
            Sort::CreatedOldest => (c.created(), false),
            Sort::Changed => (c.changed(), true),
            Sort::ChangedOldest => (c.changed(), false),
        };
        match time {
            None => u64::MAX,
            Some(t) if newest_first => u64::from(u32::MAX - t),
            Some(t) => u64::from(t),
        }
    }

    /// The time behind a rank, as a cursor shows it (`-` for none).
    fn time_of(self, rank: u64) -> String {
        match self {
            _ if rank == u64::MAX => "-".into(),
            Sort::Created | Sort::Changed => (u64::from(u32::MAX) - rank).to_string(),
            _ => rank.to_string(),
        }
    }

    /// The index's time order and whether it is walked newest first.
    fn time(self) -> (Time, bool) {
        match self {
            Sort::Key => (Time::Key, false),
            Sort::Created => (Time::Created, true),
            Sort::CreatedOldest => (Time::Created, false),
            Sort::Changed => (Time::Changed, true),
            Sort::ChangedOldest => (Time::Changed, false),
        }
    }

    /// A rank of this order as the index's time order ranks it (the time,
    /// oldest first): one to one, so a cursor's place is kept exactly.
    fn index_rank(self, rank: u64) -> u64 {
        match self {
            Sort::Created | Sort::Changed if rank <= u64::from(u32::MAX) => {
                u64::from(u32::MAX) - rank
            }
            _ => rank,
        }
    }

    fn rank_of(self, time: &str) -> Option<u64> {
        if time == "-" {
            return Some(u64::MAX);
        }
        let t: u32 = time.parse().ok()?;
        Some(match self {
            Sort::Created | Sort::Changed => u64::from(u32::MAX - t),
            _ => u64::from(t),
        })
    }
}

/// Which links the list shows, by state. Deleted links (tombstones) are
/// not in the snapshot, so in no list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StateFilter {
    #[default]
    All,
    /// Redirecting now: enabled and not past an expiry.
    Active,
    Inactive,
    /// Enabled, with an expiry not yet passed.
    Expiring,
    /// Enabled, and past its expiry.
    Expired,
    /// No scan of all time.
    NeverScanned,
}

impl StateFilter {
    pub const ALL: [StateFilter; 6] = [
        StateFilter::All,
        StateFilter::Active,
        StateFilter::Inactive,
        StateFilter::Expiring,
        StateFilter::Expired,
        StateFilter::NeverScanned,
    ];

    /// The query parameter's value.
    pub fn name(self) -> &'static str {
        match self {
            StateFilter::All => "all",
            StateFilter::Active => "active",
            StateFilter::Inactive => "inactive",
            StateFilter::Expiring => "expiring",
            StateFilter::Expired => "expired",
            StateFilter::NeverScanned => "never-scanned",
        }
    }

    pub fn parse(s: &str) -> Option<StateFilter> {
        StateFilter::ALL.into_iter().find(|v| v.name() == s)
    }

    /// Whether `key`'s link, with the index's columns `c`, is in this state.
    fn admits(self, key: &str, c: &Cols, at: &At<'_>) -> bool {
        let expired = |e: i64| e <= at.now_ms;
        match self {
            StateFilter::All => true,
            StateFilter::Active => c.is_live_at(at.now_ms),
            StateFilter::Inactive => c.inactive(),
            StateFilter::Expiring => !c.inactive() && c.expires_ms().is_some_and(|e| !expired(e)),
            StateFilter::Expired => !c.inactive() && c.expires_ms().is_some_and(expired),
            // A link known scanned is not asked again: scans only grow.
            StateFilter::NeverScanned => !c.known_scanned() && (at.all_time_scans)(key) == 0,
        }
    }

    /// Whether a block with `s` may hold a link in this state: the walks
    /// pass over one that cannot unread.
    fn may(self, s: &Summary, at: &At<'_>) -> bool {
        match self {
            StateFilter::All => true,
            StateFilter::Active => s.any_live_at(at.now_ms),
            StateFilter::Inactive => s.any_inactive(),
            StateFilter::Expiring => s.any_expiring_at(at.now_ms),
            StateFilter::Expired => s.any_expired_at(at.now_ms),
            StateFilter::NeverScanned => s.any_not_known_scanned(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Cursor {
    #[default]
    First,
    /// After a row's [`Row::position`].
    After(String),
    Before(String),
}

#[derive(Debug, Clone, Default)]
pub struct Query {
    pub text: String,
    pub by: By,
    pub sort: Sort,
    pub state: StateFilter,
    pub cursor: Cursor,
}

/// What a page is judged against besides the links: the time (for
/// expiries) and the scans of all time (for "never scanned").
pub struct At<'a> {
    pub now_ms: i64,
    pub all_time_scans: &'a AllTimeScans<'a>,
}

/// A row, copied out of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub key: String,
    pub url: String,
    pub inactive: bool,
    pub expires_ms: Option<i64>,
    pub created: Option<u32>,
    pub changed: Option<u32>,
    /// Issue 33: the title, and the notes' first line (at most
    /// [`NOTES_SHOWN`] characters), from the snapshot.
    pub title: Option<String>,
    pub notes: Option<String>,
    /// Where the row stands in the page's order, as a cursor names it: the
    /// key in key order, `TIME:KEY` in a time order.
    pub position: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    pub rows: Vec<Row>,
    /// The cursor for the previous page (`before` this position), if there is one.
    pub prev: Option<String>,
    /// The cursor for the next page (`after` this position), if there is one.
    pub next: Option<String>,
}

/// Bytes of keys and destinations a page holds at most (its first row
/// always): with a thousand rows of the longest destinations a page would
/// be 8 MB of text, held in memory and sent for every request of it, so
/// a page stops at this many as well as at its row count, and its cursor
/// continues from the last row it holds (issue 30). A thousand rows of
/// ordinary URLs are a tenth of it.
pub const PAGE_BYTES: usize = 1 << 20;

/// The page `query` asks for, at most `size` rows and [`PAGE_BYTES`].
pub fn page(keys: &ListIndex, table: &LinkTable, query: &Query, size: usize, at: &At<'_>) -> Page {
    page_within(keys, table, query, size, PAGE_BYTES, at)
}

/// [`page`] with a budget of `bytes` (tests use small ones).
fn page_within(
    keys: &ListIndex,
    table: &LinkTable,
    query: &Query,
    size: usize,
    bytes: usize,
    at: &At<'_>,
) -> Page {
    page_of(table, query, size, bytes, |n| {
        matches(keys, query, n, at)
            .into_iter()
            .filter_map(|k| table.get(k))
            .map(|l| row(&l, query.sort))
            .collect()
    })
}

/// The page of the rows `find(n)` gives: up to `n` rows in the direction
/// of travel.
fn page_of(
    table: &LinkTable,
    query: &Query,
    size: usize,
    bytes: usize,
    find: impl FnOnce(usize) -> Vec<Row>,
) -> Page {
    let size = size.max(1);
    let backward = matches!(query.cursor, Cursor::Before(_));
    // Up to `size + 1` rows in the direction of travel: one more than a
    // page says whether there is another page that way.
    let mut rows = find(size + 1);
    // Rows are in the direction of travel, so a page cut short by bytes
    // ends where the cursor it gives continues.
    with_texts(table, &mut rows);
    let size = size.min(rows_within(&rows, bytes));
    let more = rows.len() > size;
    rows.truncate(size);
    let position = |r: Option<&Row>| r.map(|r| r.position.clone());
    if backward {
        rows.reverse();
        Page {
            prev: more.then(|| position(rows.first())).flatten(),
            next: position(rows.last()),
            rows,
        }
    } else {
        let after = matches!(query.cursor, Cursor::After(_));
        Page {
            prev: after.then(|| position(rows.first())).flatten(),
            next: more.then(|| position(rows.last())).flatten(),
            rows,
        }
    }
}

/// How many leading rows hold at most `bytes` of keys and destinations;
/// at least one, so every page moves on.
fn rows_within(rows: &[Row], bytes: usize) -> usize {
    let mut total = 0usize;
    let fit = rows
        .iter()
        .take_while(|r| {
            let texts =
                r.title.as_ref().map_or(0, String::len) + r.notes.as_ref().map_or(0, String::len);
            total = total.saturating_add(r.key.len() + r.url.len() + texts);
            total <= bytes
        })
        .count();
    fit.max(1)
}

fn row(l: &LinkView<'_>, sort: Sort) -> Row {
    let position = match sort {
        Sort::Key => l.key.to_owned(),
        _ => format!("{}:{}", sort.time_of(sort.rank(l)), l.key),
    };
    Row {
        key: l.key.to_owned(),
        url: l.url.to_owned(),
        inactive: l.inactive,
        expires_ms: l.expires_ms,
        created: l.created,
        changed: l.changed,
        title: None,
        notes: None,
        position,
    }
}

/// Characters of the notes a row shows: a line of the list, not the notes.
pub const NOTES_SHOWN: usize = 80;

/// Each row's title and the first line of its notes, one lookup a row
/// (issue 33): O(page), read only for the rows a page shows.
fn with_texts(table: &LinkTable, rows: &mut [Row]) {
    for r in rows {
        let Some(texts) = table.texts(&r.key) else {
            continue;
        };
        r.title = texts.title.map(str::to_owned);
        r.notes = texts.notes.and_then(|n| {
            let line = n.lines().map(str::trim).find(|l| !l.is_empty())?;
            Some(line.chars().take(NOTES_SHOWN).collect())
        });
    }
}

/// The keys of the page's rows (and one more), in the direction of travel.
fn matches<'k>(index: &'k ListIndex, query: &Query, n: usize, at: &At<'_>) -> Vec<&'k str> {
    let backward = matches!(query.cursor, Cursor::Before(_));
    let text = query.text.as_str();
    let mut out = Vec::with_capacity(n);
    let mut keep = |key: &'k str, cols: Cols| {
        if query.state.admits(key, &cols, at) {
            out.push(key);
        }
        out.len() < n
    };
    let searched = query.by != By::Key && !text.is_empty();
    let lowered;
    let needle = match query.by {
        By::Any => {
            lowered = Needle::new(text);
            lowered.lowered().as_bytes()
        }
        _ => text.as_bytes(),
    };
    let url_only = query.by == By::Url;
    let may = |s: &Summary| query.state.may(s, at);
    if query.sort == Sort::Key {
        let cursor = match &query.cursor {
            Cursor::First => None,
            Cursor::After(k) | Cursor::Before(k) => Some(k.as_str()),
        };
        if searched {
            let start = cursor.map_or(Start::Edge, |k| Start::Past(0, k));
            index.search_where(needle, url_only, start, backward, &may, keep);
        } else {
            key_run(index, query, cursor, backward, &may, &mut keep);
        }
        return out;
    }
    let (time, newest) = query.sort.time();
    let place = match &query.cursor {
        Cursor::First => None,
        Cursor::After(p) | Cursor::Before(p) => Some(parse_position(query.sort, p)),
    };
    let start = match &place {
        None => Start::Edge,
        Some((rank, key)) => Start::Past(query.sort.index_rank(*rank), key),
    };
    if text.is_empty() {
        index.walk_time_where(time, newest, start, backward, &may, keep);
        return out;
    }
    // Issue 33: a search of the texts in a time order walks that order,
    // passing over the blocks whose trigrams rule the needle out, and
    // stops at a full page; a needle with no trigram, or one most links'
    // blocks hold without a match, goes back to one pass over the texts.
    if searched && needle.len() >= 3 {
        let walked = index.search_time_where(
            needle,
            url_only,
            time,
            newest,
            start,
            backward,
            &may,
            TEXTS_READ_IN_ORDER,
            &mut keep,
        );
        if walked.is_some() {
            return out;
        }
        out.clear();
    }
    gathered(index, query, n, at, needle, url_only)
}

/// Links' texts a search walking a time order reads (each looked up in the
/// key order, about a microsecond) before it gives up for one pass over
/// every text (about 20 ms at a million links): a bound on what a
/// needle the trigram summaries cannot narrow costs on top of that pass.
const TEXTS_READ_IN_ORDER: usize = 20_000;

/// Key order without a search of the texts: keys with the prefix are one
/// run of the order; seek, then read on, keeping the links the state
/// filter admits.
fn key_run<'k>(
    index: &'k ListIndex,
    query: &Query,
    cursor: Option<&str>,
    backward: bool,
    may: &dyn Fn(&Summary) -> bool,
    keep: &mut impl FnMut(&'k str, Cols) -> bool,
) {
    let prefix = if query.by == By::Key {
        query.text.as_str()
    } else {
        ""
    };
    // In natural order the keys with the prefix lie in the run of its
    // tokens without its trailing digits (`table-1`: `table-1`, `table-2`,
    // …, `table-10`), read and filtered.
    let run = natural_order::prefix_run(prefix);
    let visit = |key: &'k str, cols: Cols| {
        if !natural_order::in_run(key, run) {
            return false;
        }
        !key.starts_with(prefix) || keep(key, cols)
    };
    match cursor {
        // Backward from the run's end when the cursor lies past it.
        Some(end) if backward => index.walk_keys_back_in_run_where(
            prefix,
            end,
            |k| natural_order::in_run(k, run),
            may,
            visit,
        ),
        Some(k) if natural_order::cmp(k, prefix) != Ordering::Less => {
            index.walk_keys_where(Start::Past(0, k), false, may, visit)
        }
        _ => index.walk_keys_where(Start::At(0, prefix), false, may, visit),
    }
}

/// A search in a time order: every match (a key prefix's run, or a pass
/// over the index's text), of which a max-heap keeps the `n` nearest past
/// the cursor.
fn gathered<'k>(
    index: &'k ListIndex,
    query: &Query,
    n: usize,
    at: &At<'_>,
    needle: &[u8],
    url_only: bool,
) -> Vec<&'k str> {
    let sort = query.sort;
    let backward = matches!(query.cursor, Cursor::Before(_));
    let cursor = match &query.cursor {
        Cursor::First => None,
        Cursor::After(p) | Cursor::Before(p) => Some(parse_position(sort, p)),
    };
    let past_cursor = |place: (u64, &str)| match &cursor {
        None => true,
        Some((rank, key)) if backward => place_cmp(place, (*rank, key)) == Ordering::Less,
        Some((rank, key)) => place_cmp(place, (*rank, key)) == Ordering::Greater,
    };
    let may = |s: &Summary| query.state.may(s, at);
    let mut heap: BinaryHeap<Hit<'k>> = BinaryHeap::with_capacity(n + 1);
    let mut consider = |key: &'k str, cols: Cols| {
        let rank = sort.rank_of_cols(&cols);
        if !past_cursor((rank, key)) || !query.state.admits(key, &cols, at) {
            return true;
        }
        let hit = Hit {
            rank,
            key,
            backward,
        };
        if heap.len() < n {
            heap.push(hit);
        } else if heap.peek().is_some_and(|worst| hit < *worst) {
            heap.pop();
            heap.push(hit);
        }
        true
    };
    if query.by == By::Key {
        let prefix = query.text.as_str();
        let run = natural_order::prefix_run(prefix);
        index.walk_keys_where(Start::At(0, prefix), false, &may, |key, cols| {
            if !natural_order::in_run(key, run) {
                return false;
            }
            !key.starts_with(prefix) || consider(key, cols)
        });
    } else {
        index.search_where(needle, url_only, Start::Edge, false, &may, consider);
    }
    heap.into_sorted_vec().into_iter().map(|h| h.key).collect()
}

/// A match in the heap, ordered by its place in the page's order.
struct Hit<'a> {
    rank: u64,
    key: &'a str,
    /// Walking backward the heap keeps the last rows before the cursor, so
    /// the order is turned around.
    backward: bool,
}

/// A row's place in a page's order: its rank, then its key in natural order.
fn place_cmp(a: (u64, &str), b: (u64, &str)) -> Ordering {
    a.0.cmp(&b.0).then_with(|| natural_order::cmp(a.1, b.1))
}

impl Ord for Hit<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        let o = place_cmp((self.rank, self.key), (other.rank, other.key));
        if self.backward { o.reverse() } else { o }
    }
}

impl PartialOrd for Hit<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Hit<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Hit<'_> {}

/// A cursor's position in `sort`'s order: a key, or `TIME:KEY`. A cursor
/// from another order (a bookmark edited by hand) is read as a key.
fn parse_position(sort: Sort, p: &str) -> (u64, String) {
    if sort == Sort::Key {
        return (0, p.to_owned());
    }
    match p
        .split_once(':')
        .and_then(|(t, k)| Some((sort.rank_of(t)?, k)))
    {
        Some((rank, key)) => (rank, key.to_owned()),
        None => (0, p.to_owned()),
    }
}

// Bulk actions (issue 33): "all N matching this filter".

/// The first `limit` links `query` matches from its first page on, in its
/// order and with no byte budget: what a bulk action over "all matching"
/// acts on, resolved when it is sent. Asking for one more than an action
/// takes says whether there are too many.
pub fn matching(
    keys: &ListIndex,
    table: &LinkTable,
    query: &Query,
    limit: usize,
    at: &At<'_>,
) -> Vec<Row> {
    let first = Query {
        cursor: Cursor::First,
        ..query.clone()
    };
    page_within(keys, table, &first, limit, usize::MAX, at).rows
}

/// How many links `query` matches, counted up to `limit`: what
/// [`matching`]`(…).len()` says, without its rows. A count has no order, so
/// it reads the key order, where a search and a filter stop at `limit`
/// matches; a time order would read every match into a heap first (issue
/// 33: the list's "all N matching" had cost a second pass over every link
/// of a search newest first).
pub fn count(keys: &ListIndex, query: &Query, limit: usize, at: &At<'_>) -> usize {
    if limit == 0 {
        return 0;
    }
    let in_key_order = Query {
        sort: Sort::Key,
        cursor: Cursor::First,
        ..query.clone()
    };
    matches(keys, &in_key_order, limit, at).len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Change, TableBuilder};

    /// The pass before issue 33's index, kept as the reference the index's
    /// pages must equal: one pass over the table in memory order, the
    /// links the search and the state filter admit past the cursor, of
    /// which a max-heap keeps the `n` nearest.
    mod reference {
        use super::super::*;
        use crate::snapshot::Texts;
        use memchr::memmem;

        /// The state filter read from a link as the table holds it.
        pub(super) fn admits_view(state: StateFilter, l: &LinkView<'_>, at: &At<'_>) -> bool {
            let expired = |e: i64| e <= at.now_ms;
            match state {
                StateFilter::All => true,
                StateFilter::Active => l.is_live_at(at.now_ms),
                StateFilter::Inactive => l.inactive,
                StateFilter::Expiring => !l.inactive && l.expires_ms.is_some_and(|e| !expired(e)),
                StateFilter::Expired => !l.inactive && l.expires_ms.is_some_and(expired),
                StateFilter::NeverScanned => (at.all_time_scans)(l.key) == 0,
            }
        }

        /// A link in the heap, ordered by its place in the page's order.
        struct Ranked<'a> {
            rank: u64,
            view: LinkView<'a>,
            /// Walking backward the heap keeps the last rows before the cursor, so
            /// the order is turned around.
            backward: bool,
        }

        impl Ranked<'_> {
            fn place(&self) -> (u64, &str) {
                (self.rank, self.view.key)
            }
        }

        impl Ord for Ranked<'_> {
            fn cmp(&self, other: &Self) -> Ordering {
                let o = place_cmp(self.place(), other.place());
                if self.backward { o.reverse() } else { o }
            }
        }

        impl PartialOrd for Ranked<'_> {
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                Some(self.cmp(other))
            }
        }

        impl PartialEq for Ranked<'_> {
            fn eq(&self, other: &Self) -> bool {
                self.cmp(other) == Ordering::Equal
            }
        }

        impl Eq for Ranked<'_> {}

        /// One pass over the table in memory order (a lookup per key in key order
        /// misses the cache a million times): the links the search and the state
        /// filter admit past the cursor, of which a max-heap keeps the `n` nearest.
        pub(super) fn scan_matches<'a>(
            table: &'a LinkTable,
            query: &Query,
            n: usize,
            at: &At<'_>,
        ) -> Vec<Row> {
            let sort = query.sort;
            let text = query.text.as_bytes();
            let finder = memmem::Finder::new(text);
            let backward = matches!(query.cursor, Cursor::Before(_));
            let cursor = match &query.cursor {
                Cursor::First => None,
                Cursor::After(p) | Cursor::Before(p) => Some(parse_position(sort, p)),
            };
            let past_cursor = |place: (u64, &str)| match &cursor {
                None => true,
                Some((rank, key)) if backward => place_cmp(place, (*rank, key)) == Ordering::Less,
                Some((rank, key)) => place_cmp(place, (*rank, key)) == Ordering::Greater,
            };
            let needle = Needle::new(&query.text);
            let searched = |l: &LinkView<'_>, t: &Texts<'_>| {
                text.is_empty()
                    || match query.by {
                        By::Key => l.key.as_bytes().starts_with(text),
                        By::Url => finder.find(l.url.as_bytes()).is_some(),
                        By::Any => {
                            needle.found_in(l.key)
                                || t.title.is_some_and(|x| needle.found_in(x))
                                || t.notes.is_some_and(|x| needle.found_in(x))
                                || needle.found_in(l.url)
                        }
                    }
            };
            let mut heap: BinaryHeap<Ranked<'a>> = BinaryHeap::with_capacity(n + 1);
            let mut consider = |view: LinkView<'a>, texts: Texts<'_>| {
                let rank = sort.rank(&view);
                if !past_cursor((rank, view.key))
                    || !searched(&view, &texts)
                    || !admits_view(query.state, &view, at)
                {
                    return;
                }
                let hit = Ranked {
                    rank,
                    view,
                    backward,
                };
                if heap.len() < n {
                    heap.push(hit);
                } else if heap.peek().is_some_and(|worst| hit < *worst) {
                    heap.pop();
                    heap.push(hit);
                }
            };
            // Only a search of everything reads the texts: the other pages pass
            // over the table as they did.
            if query.by == By::Any && !text.is_empty() {
                table
                    .iter_with_texts()
                    .for_each(|(view, texts)| consider(view, texts));
            } else {
                table
                    .iter()
                    .for_each(|view| consider(view, Texts::default()));
            }
            heap.into_sorted_vec()
                .iter()
                .map(|r| row(&r.view, sort))
                .collect()
        }
    }
    use reference::{admits_view, scan_matches};

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

    const AT: At<'static> = At {
        now_ms: 1_800_000_000_000,
        all_time_scans: &|_| 0,
    };

    fn keys_of(p: &Page) -> Vec<&str> {
        p.rows.iter().map(|r| r.key.as_str()).collect()
    }

    #[test]
    fn pages_walk_forward_and_back_by_cursor() {
        let t = table(120);
        let keys = ListIndex::build(t.iter_with_texts());
        let mut q = Query::default();
        let p1 = page(&keys, &t, &q, 50, &AT);
        assert_eq!(p1.rows.len(), 50);
        assert_eq!(
            (p1.prev.as_deref(), p1.next.as_deref()),
            (None, Some("k049"))
        );
        q.cursor = Cursor::After("k049".into());
        let p2 = page(&keys, &t, &q, 50, &AT);
        assert_eq!(keys_of(&p2)[0], "k050");
        q.cursor = Cursor::After(p2.next.clone().expect("more"));
        let p3 = page(&keys, &t, &q, 50, &AT);
        assert_eq!(p3.rows.len(), 20);
        assert_eq!(p3.next, None);
        q.cursor = Cursor::Before(p3.prev.clone().expect("back"));
        assert_eq!(page(&keys, &t, &q, 50, &AT), p2);
        q.cursor = Cursor::Before("k050".into());
        let back = page(&keys, &t, &q, 50, &AT);
        assert_eq!(keys_of(&back), keys_of(&p1));
        assert_eq!(back.prev, None);
    }

    #[test]
    fn prefix_and_substring_searches() {
        let t = table(120);
        let keys = ListIndex::build(t.iter_with_texts());
        let q = Query {
            text: "k10".into(),
            ..Query::default()
        };
        let p = page(&keys, &t, &q, 50, &AT);
        assert_eq!(
            keys_of(&p),
            (100..110).map(|i| format!("k{i}")).collect::<Vec<_>>()
        );
        let q = Query {
            text: "ten".into(),
            by: By::Url,
            ..Query::default()
        };
        let p = page(&keys, &t, &q, 5, &AT);
        assert_eq!(keys_of(&p), ["k000", "k010", "k020", "k030", "k040"]);
        let q = Query {
            cursor: Cursor::After("k040".into()),
            ..q
        };
        let p = page(&keys, &t, &q, 5, &AT);
        assert_eq!(keys_of(&p), ["k050", "k060", "k070", "k080", "k090"]);
        assert_eq!(p.next.as_deref(), Some("k090"));
        let q = Query {
            cursor: Cursor::Before("k050".into()),
            ..q
        };
        let back = page(&keys, &t, &q, 3, &AT);
        assert_eq!(keys_of(&back), ["k020", "k030", "k040"]);
        assert_eq!(
            (back.prev.as_deref(), back.next.as_deref()),
            (Some("k020"), Some("k040"))
        );
        let q = Query {
            text: "zz".into(),
            ..Query::default()
        };
        assert_eq!(page(&keys, &t, &q, 5, &AT), Page::default());
    }

    /// Links whose times, states and scans are all different, in one table:
    /// key `tNN` was created NN hours after a start and changed in the
    /// opposite order; every third has no times; a few are expired,
    /// expiring, inactive or deleted.
    fn varied(n: u32) -> LinkTable {
        let start = 1_790_000_000i64;
        let time = |h: u32| {
            chrono::DateTime::from_timestamp(start + i64::from(h) * 3600, 0)
                .expect("time")
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        };
        let mut b = TableBuilder::default();
        b.apply((0..n).map(|i| {
            let mut doc = serde_json::json!({ "url": format!("https://example.com/{i}") });
            if i % 3 != 0 {
                doc["created_at"] = time(i).into();
                doc["changed_at"] = time(n - i).into();
            }
            match i % 7 {
                1 => doc["expires"] = "2020-01-01T00:00:00Z".into(),
                2 => doc["expires"] = "2099-01-01T00:00:00Z".into(),
                3 => doc["inactive"] = true.into(),
                4 if i % 2 == 0 => doc["deleted_at"] = time(n).into(),
                _ => {}
            }
            Change::Upsert {
                key: format!("t{i:02}"),
                doc: crate::link::test_document(doc),
            }
        }));
        b.build(None)
    }

    /// Every page of a query, walked forward, then walked back from the end.
    fn walk(keys: &ListIndex, t: &LinkTable, q: &Query, size: usize, at: &At<'_>) -> Vec<String> {
        walk_within(keys, t, q, size, PAGE_BYTES, at)
    }

    /// [`walk`] with pages of at most `bytes`, each page checked to hold
    /// no more (but for its first row).
    fn walk_within(
        keys: &ListIndex,
        t: &LinkTable,
        q: &Query,
        size: usize,
        bytes: usize,
        at: &At<'_>,
    ) -> Vec<String> {
        let page = |q: &Query| {
            let p = page_within(keys, t, q, size, bytes, at);
            let held: usize = p
                .rows
                .iter()
                .skip(1)
                .map(|r| r.key.len() + r.url.len())
                .sum();
            let first = p.rows.first().map_or(0, |r| r.key.len() + r.url.len());
            assert!(p.rows.len() <= 1 || first + held <= bytes, "{q:?}");
            p
        };
        let mut q = q.clone();
        let mut pages = vec![page(&q)];
        while let Some(next) = pages.last().and_then(|p| p.next.clone()) {
            q.cursor = Cursor::After(next);
            pages.push(page(&q));
        }
        let forward: Vec<String> = pages
            .iter()
            .flat_map(|p| keys_of(p))
            .map(str::to_owned)
            .collect();
        let mut back = Vec::new();
        let mut p = pages.last().cloned().unwrap_or_default();
        loop {
            back.splice(0..0, keys_of(&p).into_iter().map(str::to_owned));
            match p.prev.clone() {
                Some(prev) => {
                    q.cursor = Cursor::Before(prev);
                    p = page(&q);
                }
                None => break,
            }
        }
        assert_eq!(back, forward, "back and forth agree for {q:?}");
        forward
    }

    /// What a sort of every link and a filter would give, the slow way.
    fn expected(t: &LinkTable, q: &Query, at: &At<'_>) -> Vec<String> {
        let mut all: Vec<LinkView<'_>> = t
            .iter()
            .filter(|l| {
                admits_view(q.state, l, at) && (q.text.is_empty() || l.key.starts_with(&q.text))
            })
            .collect();
        all.sort_by(|a, b| place_cmp((q.sort.rank(a), a.key), (q.sort.rank(b), b.key)));
        all.iter().map(|l| l.key.to_owned()).collect()
    }

    #[test]
    fn time_orders_and_state_filters_page_as_a_full_sort_would() {
        let t = varied(60);
        let keys = ListIndex::build(t.iter_with_texts());
        let scanned = |k: &str| u64::from(k.ends_with('5'));
        let at = At {
            now_ms: 1_800_000_000_000,
            all_time_scans: &scanned,
        };
        for sort in Sort::ALL {
            for state in StateFilter::ALL {
                for text in ["", "t1"] {
                    let q = Query {
                        text: text.into(),
                        sort,
                        state,
                        ..Query::default()
                    };
                    for size in [1, 4, 50] {
                        assert_eq!(
                            walk(&keys, &t, &q, size, &at),
                            expected(&t, &q, &at),
                            "{q:?} by {size}"
                        );
                    }
                    // Pages cut by bytes (a row here is about 30) walk
                    // the same rows.
                    for bytes in [1, 70, 200] {
                        assert_eq!(
                            walk_within(&keys, &t, &q, 50, bytes, &at),
                            expected(&t, &q, &at),
                            "{q:?} within {bytes} bytes"
                        );
                    }
                }
            }
        }
        let newest = page(
            &keys,
            &t,
            &Query {
                sort: Sort::Created,
                ..Query::default()
            },
            3,
            &at,
        );
        assert_eq!(keys_of(&newest), ["t59", "t58", "t56"]);
        let oldest = page(
            &keys,
            &t,
            &Query {
                sort: Sort::CreatedOldest,
                ..Query::default()
            },
            3,
            &at,
        );
        assert_eq!(keys_of(&oldest), ["t01", "t02", "t05"], "t04 is deleted");
        let changed = page(
            &keys,
            &t,
            &Query {
                sort: Sort::Changed,
                ..Query::default()
            },
            2,
            &at,
        );
        assert_eq!(keys_of(&changed), ["t01", "t02"]);
        assert!(
            changed.next.as_deref().is_some_and(|n| n.ends_with(":t02")),
            "{changed:?}"
        );
        let undated = Query {
            sort: Sort::Created,
            text: "t0".into(),
            ..Query::default()
        };
        let walked = walk(&keys, &t, &undated, 3, &at);
        assert_eq!(
            walked[walked.len() - 4..],
            ["t00", "t03", "t06", "t09"],
            "no time: last, by key"
        );
    }

    #[test]
    fn a_rare_state_in_key_order_reads_the_columns_with_the_passes_rows() {
        let t = varied(60);
        let keys = ListIndex::build(t.iter_with_texts());
        let q = Query {
            state: StateFilter::Expired,
            ..Query::default()
        };
        let walked: Vec<Row> = matches(&keys, &q, 5, &AT)
            .into_iter()
            .filter_map(|k| t.get(k))
            .map(|l| row(&l, q.sort))
            .collect();
        assert_eq!(walked, scan_matches(&t, &q, 5, &AT));
        assert_eq!(walked.len(), 5);
    }

    #[test]
    fn deleted_links_are_in_no_list() {
        let t = varied(30);
        let keys = ListIndex::build(t.iter_with_texts());
        for state in StateFilter::ALL {
            let q = Query {
                state,
                ..Query::default()
            };
            let listed = walk(&keys, &t, &q, 50, &AT);
            assert!(
                !listed.contains(&"t04".to_owned()) && !listed.contains(&"t18".to_owned()),
                "{state:?}: {listed:?}"
            );
        }
        assert_eq!(Sort::parse("created-oldest"), Some(Sort::CreatedOldest));
        assert_eq!(
            StateFilter::parse("never-scanned"),
            Some(StateFilter::NeverScanned)
        );
        assert_eq!(StateFilter::parse("bogus"), None);
    }

    /// A link of the random tables: small keys that tie and run in natural
    /// order, times that tie, texts in both cases and outside ASCII.
    fn arb_doc() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let url = prop::sample::select(vec![
            "https://example.com/a1",
            "https://example.com/Stop",
            "https://ex.com/\u{e9}t\u{e9}",
            "/ΑΣ",
            "https://example.com/b",
        ]);
        let text = prop::option::of(prop::sample::select(vec![
            "Bus STOP", "stop", "ΑΣ b", "é", "a1",
        ]));
        let time = prop::option::of(0u32..4);
        let expiry = prop::option::of(prop::sample::select(vec![
            "2020-01-01T00:00:00Z",
            "2099-01-01T00:00:00Z",
        ]));
        (
            url,
            text.clone(),
            text,
            time.clone(),
            time,
            any::<bool>(),
            expiry,
        )
            .prop_map(|(url, title, notes, created, changed, inactive, expires)| {
                let stamp = |h: u32| {
                    chrono::DateTime::from_timestamp(1_790_000_000 + i64::from(h) * 3600, 0)
                        .expect("time")
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                };
                let mut doc = serde_json::json!({ "url": url, "inactive": inactive });
                if let Some(t) = title {
                    doc["title"] = t.into();
                }
                if let Some(n) = notes {
                    doc["notes"] = n.into();
                }
                if let Some(h) = created {
                    doc["created_at"] = stamp(h).into();
                }
                if let Some(h) = changed {
                    doc["changed_at"] = stamp(h).into();
                }
                if let Some(e) = expires {
                    doc["expires"] = e.into();
                }
                doc
            })
    }

    fn arb_key() -> impl proptest::strategy::Strategy<Value = String> {
        "[ab]{1,2}[0-9]{0,2}"
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Issue 33: over random tables and random edits followed through
        /// `changed_keys`, every page (any sort, search, state, size,
        /// cursor either way) equals the pass's.
        #[test]
        fn every_page_equals_the_pass_after_edits_followed(
            initial in proptest::collection::vec((arb_key(), arb_doc()), 0..40),
            edits in proptest::collection::vec(
                (arb_key(), proptest::option::of(arb_doc())),
                0..20,
            ),
            sort in proptest::sample::select(Sort::ALL.to_vec()),
            by in proptest::sample::select(vec![By::Key, By::Url, By::Any]),
            text in proptest::sample::select(vec!["", "a", "a1", "b", "STOP", "stop", "Σ", "σ", "é", "/", "ΑΣ", "/Stop", "com/a", "xyz"]),
            state in proptest::sample::select(StateFilter::ALL.to_vec()),
            size in 1usize..5,
        ) {
            use std::sync::Arc;
            let mut b = TableBuilder::default();
            b.apply(initial.into_iter().map(|(key, doc)| Change::Upsert {
                key,
                doc: crate::link::test_document(doc),
            }));
            let before = Arc::new(b.build(None));
            let mut order = super::super::key_order::KeyOrder::default();
            order.follow(&before);
            let mut after = (*before).clone();
            after.apply(edits.into_iter().map(|(key, doc)| match doc {
                Some(doc) => Change::Upsert {
                    key,
                    doc: crate::link::test_document(doc),
                },
                None => Change::Delete { key },
            }));
            let after = Arc::new(after);
            proptest::prop_assert!(order.try_follow(&after), "followed per edit");
            let index = order.follow(&after);
            let t = &*after;
            let scanned = |k: &str| u64::from(k.ends_with('1'));
            let at = At {
                now_ms: 1_800_000_000_000,
                all_time_scans: &scanned,
            };
            let q = Query { text: text.into(), by, sort, state, cursor: Cursor::First };
            let all = scan_matches(t, &q, t.len() + 1, &at);
            let mut cursors = vec![Cursor::First];
            for p in all.iter().map(|r| r.position.clone()).chain(
                t.iter().map(|l| row(&l, sort).position),
            ).chain(["zz".to_owned(), "-:a1".to_owned(), "5:b".to_owned(), "".to_owned()]) {
                cursors.push(Cursor::After(p.clone()));
                cursors.push(Cursor::Before(p));
            }
            for cursor in cursors {
                let q = Query { cursor, ..q.clone() };
                let got = page_within(index, t, &q, size, PAGE_BYTES, &at);
                let want = page_of(t, &q, size, PAGE_BYTES, |n| scan_matches(t, &q, n, &at));
                proptest::prop_assert_eq!(got, want, "{:?}", q);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Issue 33: the list's "all N matching" counts in key order without
        /// rows; it says what the rows of [`matching`] in the query's own
        /// order number, up to any limit.
        #[test]
        fn a_count_equals_the_rows_matching_gives(
            initial in proptest::collection::vec((arb_key(), arb_doc()), 0..40),
            sort in proptest::sample::select(Sort::ALL.to_vec()),
            by in proptest::sample::select(vec![By::Key, By::Url, By::Any]),
            text in proptest::sample::select(vec!["", "a", "a1", "b", "STOP", "é", "/"]),
            state in proptest::sample::select(StateFilter::ALL.to_vec()),
        ) {
            let mut b = TableBuilder::default();
            b.apply(initial.into_iter().map(|(key, doc)| Change::Upsert {
                key,
                doc: crate::link::test_document(doc),
            }));
            let t = b.build(None);
            let index = ListIndex::build(t.iter_with_texts());
            let scanned = |k: &str| u64::from(k.ends_with('1'));
            let at = At {
                now_ms: 1_800_000_000_000,
                all_time_scans: &scanned,
            };
            let q = Query { text: text.into(), by, sort, state, cursor: Cursor::After("b".into()) };
            let all = scan_matches(&t, &Query { cursor: Cursor::First, ..q.clone() }, t.len() + 1, &at).len();
            for limit in 0..=all + 1 {
                proptest::prop_assert_eq!(count(&index, &q, limit, &at), all.min(limit), "{:?}", q);
                if limit > 0 {
                    proptest::prop_assert_eq!(matching(&index, &t, &q, limit, &at).len(), all.min(limit));
                }
            }
        }
    }
}

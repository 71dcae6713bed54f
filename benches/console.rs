//! A page of the console's links list at a million links, in memory: the
//! work the handler does besides rendering HTML (which is per row, not per
//! link). Baseline in the same run: one table lookup per row of a page,
//! the least any list of 50 links must cost.
//!
//! `cargo bench --bench console` (`QRTAG_CONSOLE_BENCH_LINKS=N` for another size).

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use qrtag::console::PAGE_SIZE;
use qrtag::console::key_order::KeyOrder;
use qrtag::console::list::{self, At, By, Cursor, Query, Sort};
use qrtag::console::list_index::{ListIndex, Start};
use qrtag::link::Document;
use qrtag::snapshot::{Change, LinkTable, TableBuilder};

#[path = "support/short_keys.rs"]
mod short_keys;
use short_keys::key;

/// A link document as qrtag writes it, created `i` minutes after a start.
fn doc(url: String, i: u64) -> Document {
    let mut d = Document::new();
    d.insert("url".into(), url.into());
    d.insert("inactive".into(), false.into());
    let at = chrono::DateTime::from_timestamp(1_700_000_000 + 60 * i as i64, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    d.insert("created_at".into(), at.clone().into());
    d.insert("changed_at".into(), at.into());
    d
}

const AT: At<'static> = At {
    now_ms: 1_800_000_000_000,
    all_time_scans: &|_| 0,
};

fn table(n: u64) -> LinkTable {
    let mut b = TableBuilder::default();
    b.apply((0..n).map(|i| Change::Upsert {
        key: key(i),
        doc: doc(
            format!("https://www.example.com/campaigns/{i}/landing?utm=qr"),
            i,
        ),
    }));
    b.build(None)
}

fn bench(c: &mut Criterion) {
    let n: u64 = std::env::var("QRTAG_CONSOLE_BENCH_LINKS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let table = Arc::new(table(n));
    let mut order = KeyOrder::default();
    let started = Instant::now();
    order.follow(&table);
    eprintln!("ordered index of {n} keys built in {:?}", started.elapsed());
    let keys = order.follow(&table).clone();
    eprintln!(
        "the list's index: {:.0} bytes a link (orders, columns and search text), \
         the table {:.0}",
        keys.heap_bytes() as f64 / n as f64,
        table.heap_bytes() as f64 / n as f64
    );
    // Issue 33: how far the blocks' trigram summaries narrow a search of a
    // tenth of the links (`console_pages`' many-match needle) and of one.
    for needle in ["campaigns/1", "campaigns/123456/"] {
        let r = keys.trigram_reach(needle.as_bytes());
        eprintln!(
            "trigram summaries, {needle:?}: {} of {} creation-order blocks may hold it, \
             {} do (false positives {:.2}% of the blocks without a match); \
             {:.0}% of a summary's bits set",
            r.passed,
            r.blocks,
            r.with_match,
            100.0 * (r.passed - r.with_match) as f64 / (r.blocks - r.with_match).max(1) as f64,
            100.0 * r.fill
        );
    }
    let middle = keys.keys().nth(keys.len() / 2).map(str::to_owned);

    let mut g = c.benchmark_group("list_page");
    let first = Query::default();
    g.bench_function("baseline/50_lookups", |b| {
        let sample: Vec<String> = keys.keys().take(PAGE_SIZE).map(str::to_owned).collect();
        b.iter(|| {
            sample
                .iter()
                .filter_map(|k| table.get(k).map(|l| l.url.len()))
                .sum::<usize>()
        })
    });
    g.bench_function("first_page", |b| {
        b.iter(|| list::page(&keys, &table, black_box(&first), PAGE_SIZE, &AT))
    });
    let deep = Query {
        cursor: Cursor::After(middle.clone().unwrap_or_default()),
        ..Query::default()
    };
    g.bench_function("page_after_the_middle_key", |b| {
        b.iter(|| list::page(&keys, &table, black_box(&deep), PAGE_SIZE, &AT))
    });
    let back = Query {
        cursor: Cursor::Before(middle.unwrap_or_default()),
        ..Query::default()
    };
    g.bench_function("page_before_the_middle_key", |b| {
        b.iter(|| list::page(&keys, &table, black_box(&back), PAGE_SIZE, &AT))
    });
    let prefix = Query {
        text: "Ab".into(),
        ..Query::default()
    };
    g.bench_function("key_prefix_search", |b| {
        b.iter(|| list::page(&keys, &table, black_box(&prefix), PAGE_SIZE, &AT))
    });
    let common = Query {
        text: "campaigns/1".into(),
        by: By::Url,
        ..Query::default()
    };
    g.bench_function("destination_search_common", |b| {
        b.iter(|| list::page(&keys, &table, black_box(&common), PAGE_SIZE, &AT))
    });
    // A time order: one pass over every link, a heap of a page.
    let newest = Query {
        sort: Sort::Created,
        ..Query::default()
    };
    g.bench_function("first_page_newest_first", |b| {
        b.iter(|| list::page(&keys, &table, black_box(&newest), PAGE_SIZE, &AT))
    });
    // Matches nothing: every link's destination is read once.
    let rare = Query {
        text: "no-such-text".into(),
        by: By::Url,
        ..Query::default()
    };
    g.sample_size(10);
    g.bench_function("destination_search_no_match_full_scan", |b| {
        b.iter(|| list::page(&keys, &table, black_box(&rare), PAGE_SIZE, &AT))
    });
    g.finish();

    // An edit publishes a table sharing all but one shard; the index follows
    // it by that shard's keys.
    let mut g = c.benchmark_group("key_order");
    g.sample_size(10);
    // The sort a start (or a full reload) costs, against gathering the same
    // keys unsorted.
    g.bench_function("baseline/gather_keys", |b| {
        b.iter(|| black_box(table.iter().map(|l| l.key).collect::<Vec<_>>().len()))
    });
    g.bench_function("build_list_index", |b| {
        b.iter(|| black_box(ListIndex::build(table.iter_with_texts()).len()))
    });
    g.sample_size(20);
    g.bench_function("follow_one_edit", |b| {
        let mut current = Arc::clone(&table);
        let mut i = 0u64;
        b.iter_custom(|iters| {
            let mut spent = std::time::Duration::ZERO;
            for _ in 0..iters {
                i += 1;
                let mut next = LinkTable::clone(&current);
                next.apply([Change::Upsert {
                    key: format!("new-{i}"),
                    doc: doc("https://example.com/new".into(), i),
                }]);
                current = Arc::new(next);
                let t = Instant::now();
                black_box(order.follow(&current).len());
                spent += t.elapsed();
            }
            spent
        })
    });
    g.finish();
    alternatives(c, &table, &keys, n);
}

/// Issue 33: the index's text pass against a trigram index, the
/// alternative weighed for the search (`list_index`'s doc comment).
fn alternatives(c: &mut Criterion, table: &LinkTable, keys: &ListIndex, n: u64) {
    let trigrams = Trigrams::build(table);
    eprintln!(
        "trigram posting lists: {:.0} bytes a link, besides the text they are checked against",
        trigrams.heap_bytes() as f64 / n as f64
    );
    // One destination, and every one whose number starts with 1 (111,111 at
    // a million).
    let one = format!("campaigns/{}/", n / 3);
    let many = "campaigns/1".to_owned();
    let mut g = c.benchmark_group("search_every_match");
    g.sample_size(10);
    for (name, text) in [("1_match", &one), ("many_matches", &many)] {
        let count = |b: &mut criterion::Bencher| {
            b.iter(|| {
                let mut found = 0usize;
                keys.search(text.as_bytes(), false, Start::Edge, false, |_, _| {
                    found += 1;
                    true
                });
                found
            })
        };
        g.bench_function(format!("index_text_pass/{name}"), count);
        g.bench_function(format!("trigrams/{name}"), |b| {
            b.iter(|| black_box(trigrams.search(text).len()))
        });
    }
    g.finish();
}

/// Sorted link numbers per trigram of each link's lowered destination,
/// candidates checked against the text.
struct Trigrams {
    postings: HashMap<[u8; 3], Vec<u32>>,
    texts: Vec<String>,
}

impl Trigrams {
    fn build(table: &LinkTable) -> Self {
        let mut postings: HashMap<[u8; 3], Vec<u32>> = HashMap::new();
        let mut texts = Vec::new();
        for (i, l) in table.iter().enumerate() {
            let text = l.url.to_lowercase();
            let mut seen: Vec<[u8; 3]> = text
                .as_bytes()
                .windows(3)
                .map(|w| [w[0], w[1], w[2]])
                .collect();
            seen.sort_unstable();
            seen.dedup();
            for t in seen {
                postings.entry(t).or_default().push(i as u32);
            }
            texts.push(text);
        }
        for list in postings.values_mut() {
            list.shrink_to_fit();
        }
        Self { postings, texts }
    }

    fn heap_bytes(&self) -> usize {
        self.postings
            .values()
            .map(|v| v.capacity() * 4 + 3 + size_of::<Vec<u32>>())
            .sum()
    }

    fn search(&self, text: &str) -> Vec<u32> {
        let lower = text.to_lowercase();
        let mut lists: Vec<&Vec<u32>> = Vec::new();
        for w in lower.as_bytes().windows(3) {
            match self.postings.get(&[w[0], w[1], w[2]]) {
                Some(list) => lists.push(list),
                None => return Vec::new(),
            }
        }
        lists.sort_by_key(|l| l.len());
        let Some((first, rest)) = lists.split_first() else {
            return Vec::new();
        };
        first
            .iter()
            .copied()
            .filter(|i| rest.iter().all(|l| l.binary_search(i).is_ok()))
            .filter(|&i| self.texts[i as usize].contains(&lower))
            .collect()
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

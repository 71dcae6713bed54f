//! What keeping a link's history costs a repoint (issue 35), on the
//! embedded store at a million links: `links::set_url` (read, edit, write)
//! with its history entry written and trimmed in the same transaction,
//! against the same repoint with no history (`SqliteStore::without_history`),
//! on the same file in the same run, rounds interleaved so both see the same
//! disk and cache. A third row repoints links that are at the bound (200
//! entries, the oldest dropped with each write): the cost must not grow
//! with a link's history.
//!
//! `cargo bench --bench history` (QRTAG_HISTORY_LINKS to change the 1M).

use std::time::{Duration, Instant};

use qrtag::link::{Author, Link, Via};
use qrtag::store::sqlite::SqliteStore;
use qrtag::store::{BulkDoc, LinkStore, OnExisting};
use qrtag::values::destination::Destination;
use qrtag::values::link_key::LinkKey;

const ROUNDS: usize = 7;
const PER_ROUND: u64 = 2_000;
/// Links kept at the bound, for the third row.
const BUSY: u64 = 50;

fn key(i: u64) -> LinkKey {
    LinkKey::parse(&format!("k{i:07}")).expect("key")
}

fn dest(i: u64, round: usize) -> Destination {
    Destination::parse(&format!("https://example.com/p/{i}?r={round}")).expect("url")
}

/// Nanoseconds per repoint of `keys` through `store`.
fn repoints(
    rt: &tokio::runtime::Runtime,
    store: &SqliteStore,
    author: &Author,
    keys: &[u64],
    round: usize,
) -> f64 {
    let start = Instant::now();
    rt.block_on(async {
        for &i in keys {
            qrtag::links::set_url(store, author, &key(i), &dest(i, round))
                .await
                .expect("repoint");
        }
    });
    start.elapsed().as_nanos() as f64 / keys.len() as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n: u64 = std::env::var("QRTAG_HISTORY_LINKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("history.db");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let store = SqliteStore::open(&path).expect("open");
    let author = Author::cli(Via::Cli, "bench", "host");
    let fill = Instant::now();
    rt.block_on(async {
        let mut batch = Vec::new();
        for i in 0..n {
            let mut doc = Link::new_document(&dest(i, 0), false);
            qrtag::link::stamp_created(&mut doc, chrono::Utc::now(), &author);
            batch.push(BulkDoc::new(key(i), doc));
            if batch.len() == store.batch_size() || i + 1 == n {
                store
                    .write_batch(std::mem::take(&mut batch), OnExisting::Refuse)
                    .await
                    .expect("fill");
            }
        }
    });
    eprintln!("{n} links written in {:.1?}", fill.elapsed());
    // Links at the bound: 250 writes each, so 50 dropped.
    rt.block_on(async {
        for i in 0..BUSY {
            for r in 0..250 {
                qrtag::links::set_url(&store, &author, &key(i), &dest(i, 1000 + r))
                    .await
                    .expect("busy");
            }
        }
    });
    let plain = SqliteStore::open(&path).expect("open").without_history();
    // Spread over the whole key range, the same keys for both rows.
    let step = (n / PER_ROUND).max(1);
    let keys: Vec<u64> = (0..PER_ROUND).map(|j| (BUSY + j * step) % n).collect();
    let busy: Vec<u64> = (0..PER_ROUND).map(|j| j % BUSY).collect();
    let (mut with, mut without, mut at_bound) = (vec![], vec![], vec![]);
    for round in 1..=ROUNDS {
        without.push(repoints(&rt, &plain, &author, &keys, round * 2));
        with.push(repoints(&rt, &store, &author, &keys, round * 2 + 1));
        at_bound.push(repoints(&rt, &store, &author, &busy, round));
    }
    let (with, without, at_bound) = (median(with), median(without), median(at_bound));
    let us = |ns: f64| Duration::from_nanos(ns as u64);
    println!("repoint at {n} links, median of {ROUNDS} rounds of {PER_ROUND}:");
    println!("  without history         {:>10.1?}  1.00", us(without));
    println!(
        "  with history            {:>10.1?}  {:.2}",
        us(with),
        with / without
    );
    println!(
        "  with history, at bound  {:>10.1?}  {:.2}",
        us(at_bound),
        at_bound / without
    );
    let entries = rt.block_on(store.history(&key(0))).expect("history").len();
    println!("  a busy link keeps {entries} entries");
}

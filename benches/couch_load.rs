//! The CouchDB full load (a new node, or a lost snapshot file): the
//! follower's way (the `links` view where it can be read), `_all_docs` read
//! in key ranges at once (the way before the view) and the paged
//! sequential read before that, in the same run.
//!
//! `cargo bench --bench couch_load` starts a PouchDB Server (CI's, from
//! `tests/couchdb/node_modules`) and loads 100,000 links. With
//! `QRTAG_BENCH_COUCHDB_URL` (and `_USER`, `_PASSWORD`, an admin) it uses
//! that server instead, e.g. Apache CouchDB 3.5 from
//! `../shared/couchdb/start-couchdb DIR 5984 admin PW`, with a million links.
//! `QRTAG_BENCH_LINKS=N` for another size, `QRTAG_BENCH_ROUNDS=R` for
//! another number of rounds (3). The database
//! `qrtag-bench-load-N` (or `QRTAG_BENCH_COUCHDB_DB`) is filled with
//! `_bulk_docs` (four in flight) unless it holds N documents already, and
//! kept, so a second run against the same server starts at once; `qrtag
//! setup` then installs the view, and the bench waits until CouchDB has
//! built its index (about 10 minutes at a million links, once).
//!
//! Each round times the three ways, alternating which goes first; the figures
//! are the medians and the ratio of the medians.

#[path = "support/couch.rs"]
mod couch;
#[path = "support/keys.rs"]
mod keys;

use std::time::Instant;

use couch::CouchServer;
use qrtag::store::couch::load::{LoadWay, bench_load};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (server, what, default_n) = match CouchServer::from_env("QRTAG_BENCH_COUCHDB") {
            Some(s) => (s, "CouchDB", 1_000_000),
            None => (CouchServer::pouchdb().await, "PouchDB Server", 100_000),
        };
        let n: u64 = std::env::var("QRTAG_BENCH_LINKS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if quick { 5_000 } else { default_n });
        let db = server.db_for(n);
        let t0 = Instant::now();
        if server.fill(&db, n).await {
            println!(
                "couch_load: filled {db} on {what} at {} in {:.1} s",
                server.url,
                t0.elapsed().as_secs_f64()
            );
        }
        let t0 = Instant::now();
        if server.set_up_view(&db).await {
            println!(
                "couch_load: built the links view of {db} in {:.1} s",
                t0.elapsed().as_secs_f64()
            );
        }
        let settings = server.settings(&db);
        let rounds: usize = std::env::var("QRTAG_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if quick { 1 } else { 3 });
        let (mut paged, mut all_docs, mut ranges) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let order = if round % 2 == 0 {
                [LoadWay::Paged, LoadWay::AllDocs, LoadWay::Ranges]
            } else {
                [LoadWay::Ranges, LoadWay::AllDocs, LoadWay::Paged]
            };
            for way in order {
                let t0 = Instant::now();
                let (links, invalid) = bench_load(&settings, way).await.expect("load");
                let took = t0.elapsed().as_secs_f64();
                assert_eq!((links, invalid), (n as usize, 0), "{way:?}");
                println!(
                    "round {}: {way:?} {took:.2} s, {:.0} links/s",
                    round + 1,
                    n as f64 / took
                );
                match way {
                    LoadWay::Paged => paged.push(took),
                    LoadWay::AllDocs => all_docs.push(took),
                    LoadWay::Ranges => ranges.push(took),
                }
            }
        }
        let (p, a, r) = (median(paged), median(all_docs), median(ranges));
        println!(
            "full load of {n} links on {what}: paged {p:.2} s, {:.0} links/s; \
             _all_docs in ranges {a:.2} s, {:.0} links/s; the follower's load \
             (the view where it can) {r:.2} s, {:.0} links/s; follower / paged = {:.3}, \
             follower / _all_docs ranges = {:.3}",
            n as f64 / p,
            n as f64 / a,
            n as f64 / r,
            r / p,
            r / a
        );
    });
}

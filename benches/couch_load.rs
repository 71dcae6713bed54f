//! The CouchDB full load (a new node, or a lost snapshot file): key ranges
//! read at once and streamed, against the paged sequential read it
//! replaced, in the same run.
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
//! kept, so a second run against the same server starts at once.
//!
//! Each round times both ways, alternating which goes first; the figures
//! are the medians and the ratio of the medians.

#[path = "support/couch.rs"]
mod couch;
#[path = "support/keys.rs"]
mod keys;

use std::time::Instant;

use couch::CouchServer;
use qrtag::store::couch_load::{LoadWay, bench_load};

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
        let settings = server.settings(&db);
        let rounds: usize = std::env::var("QRTAG_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if quick { 1 } else { 3 });
        let (mut paged, mut ranges) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let order = if round % 2 == 0 {
                [LoadWay::Paged, LoadWay::Ranges]
            } else {
                [LoadWay::Ranges, LoadWay::Paged]
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
                    LoadWay::Ranges => ranges.push(took),
                }
            }
        }
        let (p, r) = (median(paged), median(ranges));
        println!(
            "full load of {n} links on {what}: paged (before) {p:.2} s, {:.0} links/s; \
             ranges (after) {r:.2} s, {:.0} links/s; after / before = {:.3}",
            n as f64 / p,
            n as f64 / r,
            r / p
        );
    });
}

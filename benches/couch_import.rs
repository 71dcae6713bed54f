//! `qrtag import` into a live CouchDB database (one `qrtag setup` made, so
//! CouchDB's validation runs on every document) against CouchDB's own
//! `_bulk_docs` of the same documents into another such database, in the
//! same run (issue 31).
//!
//! `cargo bench --bench couch_import` starts Apache CouchDB 3.5 from
//! `../shared/couchdb/start-couchdb` when that release is there (else
//! PouchDB Server from `tests/couchdb/node_modules`); with
//! `QRTAG_BENCH_COUCHDB_URL` (and `_USER`, `_PASSWORD`, an admin) it uses
//! that server. N links (`QRTAG_BENCH_LINKS`, 100,000) are written as JSON
//! lines in random key order, each with its times, so both sides write the
//! same documents. Each round (`QRTAG_BENCH_ROUNDS`, 3) makes both
//! databases anew with `qrtag setup`'s library call, then times, in turn
//! (alternating which goes first):
//!
//! - `qrtag import FILE`, the whole process: reading and checking the file,
//!   asking which keys exist, the writes;
//! - the documents posted with `_bulk_docs` straight to CouchDB, sorted by
//!   key, `QRTAG_BENCH_BULK_BATCH` (1,000) a request, four under way.
//!
//! `QRTAG_BENCH_QRTAG=PATH` times another build's `qrtag import` (an
//! older one, for a before-and-after) against the same baseline.
//!
//! With a server started here it also reads CouchDB's CPU seconds (its
//! process and those it started, the JavaScript query servers among them)
//! over each, and for the import the CPU seconds and peak RSS of the qrtag
//! process. The figures are medians and the ratio of the medians.

#[path = "support/couch.rs"]
mod couch;
#[path = "support/keys.rs"]
mod keys;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use couch::CouchServer;
use futures_util::StreamExt;
use serde_json::{Value, json};

const CREATED: &str = "2026-01-02T03:04:05Z";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The i-th document, as the file has it and `_bulk_docs` sends it.
fn doc(i: u64) -> Value {
    json!({
        "_id": keys::key(i),
        "url": couch::url(i),
        "created_at": CREATED,
        "changed_at": CREATED,
    })
}

/// 0..n in a scattered order (a multiplier prime to n), as a file of drawn
/// keys comes.
fn file_order(n: u64) -> impl Iterator<Item = u64> {
    let step = (1..)
        .map(|k| 7919 * k + 1)
        .find(|s| gcd(*s, n) == 1)
        .unwrap_or(1);
    (0..n).map(move |i| (i * step) % n)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// CPU seconds of process `pid` and every process below it.
fn tree_cpu(pid: i32) -> f64 {
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let mut stats = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Ok(p) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            // After the command's closing parenthesis: state, ppid, ...
            let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r.to_owned()) else {
                continue;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
            // Fields 4 (ppid), 14 (utime), 15 (stime) of stat(5), here from 3.
            stats.push((p, num(1) as i32, num(11) + num(12)));
        }
    }
    let mut inside = vec![pid];
    let mut total = 0.0;
    while let Some(p) = inside.pop() {
        for (child, parent, cpu) in &stats {
            if *child == p {
                total += cpu;
            }
            if *parent == p {
                inside.push(*child);
            }
        }
    }
    total / tick
}

/// What one run of `qrtag import` took: wall seconds, its own CPU seconds,
/// its peak RSS in MiB.
struct Run {
    wall: f64,
    cpu: f64,
    rss_mib: f64,
}

fn run_import(server: &CouchServer, db: &str, file: &Path) -> Run {
    let bin = std::env::var_os("QRTAG_BENCH_QRTAG");
    let mut cmd = Command::new(
        bin.as_deref()
            .unwrap_or(env!("CARGO_BIN_EXE_qrtag").as_ref()),
    );
    cmd.env_clear()
        .env("QRTAG_CONFIG", "/dev/null")
        .env("QRTAG_COUCHDB_URL", &server.url)
        .env("QRTAG_COUCHDB_DB", db)
        .env("QRTAG_PUBLIC_URL", "https://qr.example")
        .arg("import")
        .arg(file)
        .stdout(std::process::Stdio::null());
    if let Some(user) = &server.user {
        cmd.env("QRTAG_COUCHDB_USER", user);
    }
    if let Some(password) = &server.password {
        cmd.env("QRTAG_COUCHDB_PASSWORD", password);
    }
    let t0 = Instant::now();
    // Waited for with wait4 below, which also gives its CPU time and peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().expect("run qrtag import");
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = t0.elapsed().as_secs_f64();
    assert_eq!(waited, pid, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "qrtag import failed ({status})"
    );
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Run {
        wall,
        cpu: secs(usage.ru_utime) + secs(usage.ru_stime),
        rss_mib: usage.ru_maxrss as f64 / 1024.0,
    }
}

/// The documents in key order, `batch` a `_bulk_docs` request, four under
/// way: the seconds it took.
async fn bulk_docs(server: &CouchServer, db: &str, docs: &[Value], batch: usize) -> f64 {
    let path = format!("{db}/_bulk_docs");
    let t0 = Instant::now();
    futures_util::stream::iter(docs.chunks(batch))
        .map(|chunk| {
            let path = &path;
            async move {
                let (status, body) = server
                    .call(reqwest::Method::POST, path, Some(&json!({ "docs": chunk })))
                    .await;
                assert!(
                    status == 201 || status == 202,
                    "_bulk_docs: {status} {body}"
                );
                let refused = body.as_array().map_or(0, |rows| {
                    rows.iter().filter(|r| r.get("error").is_some()).count()
                });
                assert_eq!(refused, 0, "_bulk_docs refused documents: {body}");
            }
        })
        .buffer_unordered(4)
        .collect::<Vec<()>>()
        .await;
    t0.elapsed().as_secs_f64()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test");
    let env_num = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let n = env_num("QRTAG_BENCH_LINKS", if quick { 2_000 } else { 100_000 });
    let rounds = env_num("QRTAG_BENCH_ROUNDS", if quick { 1 } else { 3 });
    let batch = env_num("QRTAG_BENCH_BULK_BATCH", 1000) as usize;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (server, what) = match CouchServer::from_env("QRTAG_BENCH_COUCHDB") {
            Some(s) => (s, "CouchDB"),
            None => match CouchServer::apache().await {
                Some(s) => (s, "Apache CouchDB 3.5 (started here)"),
                None => (CouchServer::pouchdb().await, "PouchDB Server"),
            },
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("links.jsonl");
        {
            let mut out = std::io::BufWriter::new(std::fs::File::create(&file).expect("file"));
            for i in file_order(n) {
                writeln!(out, "{}", doc(i)).expect("write");
            }
            out.flush().expect("flush");
        }
        let mut docs: Vec<Value> = (0..n).map(doc).collect();
        docs.sort_by(|a, b| a["_id"].as_str().cmp(&b["_id"].as_str()));
        let (import_db, bulk_db) = ("qrtag-bench-import", "qrtag-bench-bulk-docs");
        let cpu = || server.apache_pid().map(tree_cpu);
        let (mut imports, mut bulks) = (Vec::new(), Vec::new());
        let (mut import_couch_cpu, mut bulk_couch_cpu) = (Vec::new(), Vec::new());
        let (mut import_cpu, mut import_rss) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            for db in [import_db, bulk_db] {
                server.call(reqwest::Method::DELETE, db, None).await;
                server.call(reqwest::Method::DELETE, &format!("{db}-keys"), None).await;
                qrtag::store::couch::setup::setup(&server.settings(db), Default::default())
                    .await
                    .expect("qrtag setup");
            }
            let import_first = round % 2 == 0;
            for import_now in [import_first, !import_first] {
                let before = cpu();
                if import_now {
                    // The import's process is waited for on this thread.
                    let run = tokio::task::block_in_place(|| run_import(&server, import_db, &file));
                    println!(
                        "round {}: qrtag import {:.1} s ({:.0} links/s), its CPU {:.1} s, peak RSS {:.0} MiB",
                        round + 1,
                        run.wall,
                        n as f64 / run.wall,
                        run.cpu,
                        run.rss_mib
                    );
                    imports.push(run.wall);
                    import_cpu.push(run.cpu);
                    import_rss.push(run.rss_mib);
                } else {
                    let took = bulk_docs(&server, bulk_db, &docs, batch).await;
                    println!(
                        "round {}: _bulk_docs {took:.1} s ({:.0} links/s)",
                        round + 1,
                        n as f64 / took
                    );
                    bulks.push(took);
                }
                if let (Some(before), Some(after)) = (before, cpu()) {
                    let used = after - before;
                    println!("round {}:   CouchDB CPU {used:.1} s", round + 1);
                    if import_now {
                        import_couch_cpu.push(used);
                    } else {
                        bulk_couch_cpu.push(used);
                    }
                }
            }
            for (db, want) in [(import_db, n), (bulk_db, n)] {
                let (_, info) = server.call(reqwest::Method::GET, db, None).await;
                assert_eq!(info["doc_count"].as_u64(), Some(want + 1), "{db}: {info}");
            }
        }
        let (i, b) = (median(imports), median(bulks));
        println!(
            "{n} links into a live database (validation on) on {what}: qrtag import {i:.1} s, \
             _bulk_docs of {batch} in key order {b:.1} s; import / _bulk_docs = {:.2}; \
             qrtag's CPU {:.1} s, peak RSS {:.0} MiB",
            i / b,
            median(import_cpu),
            median(import_rss)
        );
        if !import_couch_cpu.is_empty() {
            println!(
                "CouchDB CPU: during the import {:.1} s, during _bulk_docs {:.1} s",
                median(import_couch_cpu),
                median(bulk_couch_cpu)
            );
        }
        for db in [import_db, bulk_db] {
            server.call(reqwest::Method::DELETE, db, None).await;
            server.call(reqwest::Method::DELETE, &format!("{db}-keys"), None).await;
        }
    });
}

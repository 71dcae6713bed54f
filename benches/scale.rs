//! Scale benchmark: a million links in the embedded store.
//!
//! Run with `cargo bench --bench scale` (`QRTAG_SCALE_LINKS=N` for another
//! size). It writes N links (5-character keys, ~55-character URLs) as CSV,
//! loads them with `qrtag import`, and reports, each against a baseline
//! measured in the same run:
//!
//! - start to serving: a full load from SQLite, and a restart from the
//!   snapshot file (the baseline: an empty store);
//! - resident bytes per link: the server's RSS after the load minus an empty
//!   server's, divided by N;
//! - edit-to-visible latency over 100 edits (median and p99): from the write's
//!   commit to the first answer with the new destination;
//! - redirect CPU per request at N links against a bare actix-web handler,
//!   both with one worker, as `redirect_load` measures it; with
//!   `QRTAG_SCALE_BASELINE_BIN` set to an older `qrtag` binary, that build
//!   too, serving a copy of the same database, in every round (and, with
//!   `QRTAG_SCALE_ONLY=load`, its full load and its restart from the
//!   snapshot file that load writes, beside this build's).
//!
//! The full load's CPU time (user and system, all threads) is printed beside
//! its wall time.
//!
//! With `QRTAG_SCALE_COUCHDB_URL` (and `QRTAG_SCALE_COUCHDB_USER`,
//! `QRTAG_SCALE_COUCHDB_PASSWORD`, an admin of that server) it then
//! measures `qrtag import` into CouchDB, in databases `qrtag_scale_*` it
//! deletes first: on the first 100k links (or N if fewer), the import into
//! a database `qrtag setup` made (CouchDB's validation runs on each
//! document) against `import --new-database` in the same run, and a dry
//! run of them again (which only asks which keys exist); then all N links
//! with `import --new-database`. With `QRTAG_SCALE_COUCHDB_BEFORE=1` the
//! 100k also go in as before issue 24 (one `POST _all_docs` of 1,000 keys
//! at a time, then one `_bulk_docs` of 1,000 at a time, through the
//! library). `QRTAG_SCALE_ONLY=couchdb` gives the import figures alone.
//!
//! With the same variables it also first measures the same N links in that CouchDB database
//! (`qrtag-bench-load-N` or `QRTAG_SCALE_COUCHDB_DB`, filled with
//! `_bulk_docs` unless it already holds N documents, then given `qrtag
//! setup`'s `links` view, whose index CouchDB builds once): start to
//! serving with a full load (a new node), start to
//! serving for a new node given a copy of the first one's snapshot file,
//! and edit-to-visible latency over 100 edits written to CouchDB.
//! `QRTAG_SCALE_SQLITE=0` then skips the embedded store's figures.

#[path = "support/couch.rs"]
mod couch;
#[path = "support/keys.rs"]
mod keys;
#[path = "support/load.rs"]
mod load;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use keys::key;
use load::{Server, measure, median, quantile};

fn url(i: u64) -> String {
    format!("https://www.example.com/campaigns/spring/poster-{i:07}?src=qr")
}

fn qrtag(db: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_qrtag"));
    c.arg("--db").arg(db);
    c
}

/// `serve` on loopback port 0 (public and admin), one worker, the access
/// log beside `beside`: what every server of this bench runs with.
fn serve_args(c: &mut Command, beside: &Path) {
    c.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "127.0.0.1:0",
    ])
    .args(["--workers", "1", "--access-log"])
    .arg(beside.with_file_name("access.log"));
}

fn serve(db: &Path, extra: &[&str]) -> (Server, SocketAddr) {
    let mut c = qrtag(db);
    serve_args(&mut c, db);
    c.args(extra);
    Server::qrtag(c)
}

/// One HTTP/1.1 GET on a fresh connection: (status, Location).
fn get(addr: SocketAddr, path: &str) -> Option<(u16, Option<String>)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n").as_bytes())
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.get(9..12)?.parse().ok()?;
    let location = text
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .map(str::to_owned);
    Some((status, location))
}

/// Polls every millisecond until `path` redirects to `want`; returns when.
fn wait_for(addr: SocketAddr, path: &str, want: &str, limit: Duration) -> Instant {
    let start = Instant::now();
    loop {
        if let Some((302, Some(l))) = get(addr, path)
            && l == want
        {
            return Instant::now();
        }
        assert!(start.elapsed() < limit, "{path} never redirected to {want}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Wall time from the start to the first redirect of `probe` to `want`,
/// and the server's CPU time by then (every thread, user and system).
fn time_to_serving(
    db: &Path,
    extra: &[&str],
    probe: &str,
    want: &str,
) -> (Duration, Duration, Server) {
    let t0 = Instant::now();
    let (server, _) = serve(db, extra);
    wait_for(server.addr, probe, want, Duration::from_secs(600));
    let wall = t0.elapsed();
    let cpu = Duration::from_nanos(server.cpu_ns());
    (wall, cpu, server)
}

fn main() {
    if std::env::var(load::ROLE_VAR).as_deref() == Ok("bare") {
        return load::serve_bare();
    }
    let quick = std::env::args().any(|a| a == "--test");
    let n: u64 = std::env::var("QRTAG_SCALE_LINKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 20_000 } else { 1_000_000 });
    let dir = tempfile::tempdir().expect("tempdir");
    if std::env::var("QRTAG_SCALE_ONLY").as_deref() == Ok("couchdb") {
        let csv = dir.path().join("links.csv");
        write_csv(&csv, n);
        return couchdb::measure(dir.path(), &csv, n);
    }
    if let Some(server) = couch::CouchServer::from_env("QRTAG_SCALE_COUCHDB") {
        couch_figures(&server, n, dir.path());
        if std::env::var("QRTAG_SCALE_SQLITE").as_deref() == Ok("0") {
            return;
        }
    }
    let db = dir.path().join("scale.db");
    let empty_db = dir.path().join("empty").join("empty.db");
    std::fs::create_dir_all(empty_db.parent().expect("parent")).expect("mkdir");

    // The data set, through `qrtag import` (into a database made first:
    // only `init` and `serve` create one).
    let csv = dir.path().join("links.csv");
    write_csv(&csv, n);
    let out = qrtag(&db).arg("init").output().expect("run init");
    assert!(
        out.status.success(),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t0 = Instant::now();
    let out = qrtag(&db)
        .arg("import")
        .arg(&csv)
        .output()
        .expect("run import");
    assert!(
        out.status.success(),
        "import: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "scale: {n} links; qrtag import took {:.1} s",
        t0.elapsed().as_secs_f64()
    );

    let probe = format!("/{}", key(n / 2));
    let want = url(n / 2);

    // Baseline: an empty server.
    let (empty_start, empty) = {
        let t0 = Instant::now();
        let (server, admin) = serve(&empty_db, &[]);
        while get(admin, "/readyz").map(|r| r.0) != Some(200) {
            std::thread::sleep(Duration::from_millis(1));
        }
        (t0.elapsed(), server)
    };
    let empty_rss = empty.rss_bytes();
    empty.terminate();

    // A full load from SQLite, which then writes the snapshot file.
    let (full, full_cpu, server) = time_to_serving(&db, &[], &probe, &want);
    let snapshot_file = dir.path().join("scale.db.snapshot");
    let t0 = Instant::now();
    while !snapshot_file.exists() {
        assert!(t0.elapsed() < Duration::from_secs(120), "no snapshot file");
        std::thread::sleep(Duration::from_millis(10));
    }
    let loaded_rss = server.rss_bytes();
    server.terminate();

    // A restart from the snapshot file.
    let (restart, restart_cpu, server) = time_to_serving(&db, &[], &probe, &want);
    let restart_rss = server.rss_bytes();
    println!(
        "start to serving: empty store {:.3} s; full load {:.3} s ({:.1}x), {:.2} CPU-s; restart from the snapshot file {:.3} s ({:.1}x), {:.2} CPU-s",
        empty_start.as_secs_f64(),
        full.as_secs_f64(),
        full.as_secs_f64() / empty_start.as_secs_f64(),
        full_cpu.as_secs_f64(),
        restart.as_secs_f64(),
        restart.as_secs_f64() / empty_start.as_secs_f64(),
        restart_cpu.as_secs_f64(),
    );
    println!(
        "resident memory: empty {:.1} MB; after the full load {:.1} MB = {:.0} bytes a link; after the restart {:.1} MB = {:.0} bytes a link",
        empty_rss as f64 / 1e6,
        loaded_rss as f64 / 1e6,
        loaded_rss.saturating_sub(empty_rss) as f64 / n as f64,
        restart_rss as f64 / 1e6,
        restart_rss.saturating_sub(empty_rss) as f64 / n as f64,
    );
    // QRTAG_SCALE_ONLY=load: the start figures alone (and the baseline
    // build's full load, when one is given).
    if std::env::var("QRTAG_SCALE_ONLY").as_deref() == Ok("load") {
        server.terminate();
        if let Some(bin) = std::env::var_os("QRTAG_SCALE_BASELINE_BIN") {
            let old = baseline_full_load(&bin, &db, &probe, &want, full);
            baseline_restart(&bin, old, &db, &probe, &want, restart).terminate();
        }
        return;
    }

    // Edits, written as `qrtag set` writes them, timed to the first answer
    // that shows them.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let store = qrtag::store::sqlite::SqliteStore::open(&db).expect("open store");
    // The first 100 edits are the measured ones; the 400 after them show
    // whether memory keeps growing (old shards not freed) or settles.
    let mut latencies = Vec::new();
    let mut rss_after_100 = 0;
    for e in 0..500u64 {
        let i = (e * 7919) % n;
        let k = qrtag::values::link_key::LinkKey::parse(&key(i)).expect("key");
        let new_url = format!("https://www.example.com/campaigns/summer/poster-{i:07}?e={e}");
        let dest = qrtag::values::destination::Destination::parse(&new_url).expect("url");
        // A pause of 0-25 ms, so edits do not fall into step with the
        // store's poll and every edit waits a whole interval.
        std::thread::sleep(Duration::from_micros((e * 7_919) % 25_000));
        rt.block_on(qrtag::links::set_url(
            &store,
            &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
            &k,
            &dest,
        ))
        .expect("set");
        let written = Instant::now();
        let seen = wait_for(
            server.addr,
            &format!("/{}", key(i)),
            &new_url,
            Duration::from_secs(10),
        );
        if e < 100 {
            latencies.push((seen - written).as_secs_f64() * 1000.0);
        }
        if e == 99 {
            rss_after_100 = server.rss_bytes();
        }
    }
    let rss_after_500 = server.rss_bytes();
    println!(
        "edit to visible over 100 edits: median {:.1} ms, p99 {:.1} ms, max {:.1} ms; resident memory {:+.1} MB after 100 edits, {:+.1} MB more after 400 more",
        median(latencies.clone()),
        quantile(latencies.clone(), 0.99),
        quantile(latencies, 1.0),
        (rss_after_100 as f64 - restart_rss as f64) / 1e6,
        (rss_after_500 as f64 - rss_after_100 as f64) / 1e6,
    );

    // Redirect CPU at N links against the bare handler.
    let requests = if quick { 4_000 } else { 100_000 };
    let rounds = if quick { 1 } else { 3 };
    let paths: Vec<String> = (0..10_000u64)
        .map(|j| format!("/{}", key((j * 104_729) % n)))
        .collect();
    // QRTAG_SCALE_BASELINE_BIN=/path/to/an/older/qrtag adds that build,
    // serving the same database, to every round: before/after at N links.
    let baseline = std::env::var_os("QRTAG_SCALE_BASELINE_BIN")
        .map(|bin| baseline_full_load(&bin, &db, &probe, &want, full));
    let (mut ratios, mut before) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let b = measure(&Server::start("bare"), &[String::from("/x")], requests, 4);
        let q = measure(&server, &paths, requests, 4);
        let ratio = q.cpu_per_request_us / b.cpu_per_request_us;
        print!(
            "round {round}: bare {:.2} µs/req, qrtag at {n} links {:.2} µs/req, ratio {ratio:.3}",
            b.cpu_per_request_us, q.cpu_per_request_us
        );
        if let Some(old) = &baseline {
            let o = measure(old, &paths, requests, 4);
            let r = o.cpu_per_request_us / b.cpu_per_request_us;
            print!(
                "; baseline build {:.2} µs/req, ratio {r:.3}",
                o.cpu_per_request_us
            );
            before.push(r);
        }
        println!();
        ratios.push(ratio);
    }
    println!(
        "redirect CPU at {n} links / bare handler: median {:.3}",
        median(ratios)
    );
    if !before.is_empty() {
        println!(
            "baseline build at {n} links / bare handler: median {:.3}",
            median(before)
        );
    }
    server.terminate();
    if std::env::var_os("QRTAG_SCALE_COUCHDB_URL").is_some() {
        couchdb::measure(dir.path(), &csv, n);
    }
}

/// The build at `bin` (QRTAG_SCALE_BASELINE_BIN) serving a copy of the
/// database, started without a snapshot file: its full load, timed and
/// printed against this build's (`ours`).
fn baseline_full_load(
    bin: &std::ffi::OsStr,
    db: &Path,
    probe: &str,
    want: &str,
    ours: Duration,
) -> Server {
    let copy = baseline_db(db);
    std::fs::create_dir_all(copy.parent().expect("parent")).expect("mkdir");
    std::fs::copy(db, &copy).expect("copy the database");
    baseline_start(bin, &copy, probe, want, ours, "full load")
}

/// The baseline build started on its copy until `probe` answers `want`:
/// its wall and CPU time printed as `what`, against this build's (`ours`).
fn baseline_start(
    bin: &std::ffi::OsStr,
    copy: &Path,
    probe: &str,
    want: &str,
    ours: Duration,
    what: &str,
) -> Server {
    let t0 = Instant::now();
    let server = baseline_serve(bin, copy);
    wait_for(server.addr, probe, want, Duration::from_secs(600));
    let wall = t0.elapsed();
    println!(
        "baseline build: {what} {:.3} s, {:.2} CPU-s; this build / baseline: {:.2}",
        wall.as_secs_f64(),
        Duration::from_nanos(server.cpu_ns()).as_secs_f64(),
        ours.as_secs_f64() / wall.as_secs_f64()
    );
    server
}

/// The baseline build's copy of the database (see [`baseline_full_load`]).
fn baseline_db(db: &Path) -> std::path::PathBuf {
    db.parent()
        .expect("parent")
        .join("baseline")
        .join("scale.db")
}

/// The baseline build started as in [`baseline_full_load`] on its copy.
fn baseline_serve(bin: &std::ffi::OsStr, copy: &Path) -> Server {
    let mut c = Command::new(bin);
    c.arg("--db").arg(copy);
    serve_args(&mut c, copy);
    Server::qrtag(c).0
}

/// The baseline build's restart from the snapshot file its full load
/// (`server`) writes, timed and printed against this build's (`ours`).
fn baseline_restart(
    bin: &std::ffi::OsStr,
    server: Server,
    db: &Path,
    probe: &str,
    want: &str,
    ours: Duration,
) -> Server {
    let copy = baseline_db(db);
    let snapshot_file = copy.with_file_name("scale.db.snapshot");
    let t0 = Instant::now();
    while !snapshot_file.exists() {
        assert!(t0.elapsed() < Duration::from_secs(120), "no snapshot file");
        std::thread::sleep(Duration::from_millis(10));
    }
    server.terminate();
    baseline_start(
        bin,
        &copy,
        probe,
        want,
        ours,
        "restart from the snapshot file",
    )
}

/// N links as CSV, as `qrtag import` reads them.
fn write_csv(path: &Path, n: u64) {
    let mut text = String::with_capacity(n as usize * 70);
    text.push_str("key,url\n");
    for i in 0..n {
        text.push_str(&format!("{},{}\n", key(i), url(i)));
    }
    std::fs::write(path, text).expect("write csv");
}

/// `qrtag import` into Apache CouchDB (or any CouchDB the variables name).
mod couchdb {
    use std::io::{Read, Write};
    use std::path::Path;
    use std::process::Command;
    use std::time::Instant;

    use base64::Engine;
    use qrtag::store::couch::CouchStore;
    use qrtag::store::options::CouchSettings;
    use qrtag::store::{BulkDoc, LinkStore, OnExisting};
    use qrtag::values::couch::{CouchDbName, CouchUrl};
    use qrtag::values::link_key::LinkKey;
    use qrtag::values::secret::Secret;

    /// Links of the same-run comparison with the way before issue 24.
    const COMPARED: u64 = 100_000;

    struct Server {
        url: String,
        user: String,
        password: String,
    }

    impl Server {
        fn from_env() -> Self {
            let var = |name: &str| {
                std::env::var(name)
                    .unwrap_or_else(|_| panic!("{name} is needed with QRTAG_SCALE_COUCHDB_URL"))
            };
            Self {
                url: var("QRTAG_SCALE_COUCHDB_URL"),
                user: var("QRTAG_SCALE_COUCHDB_USER"),
                password: var("QRTAG_SCALE_COUCHDB_PASSWORD"),
            }
        }

        fn qrtag(&self, db: &str) -> Command {
            let mut c = Command::new(env!("CARGO_BIN_EXE_qrtag"));
            c.env("QRTAG_CONFIG", "/dev/null")
                .env("QRTAG_COUCHDB_PASSWORD", &self.password)
                .args(["--couchdb-url", &self.url, "--couchdb-user", &self.user])
                .args(["--couchdb-db", db]);
            c
        }

        /// A new database `db` made ready by `qrtag setup` (validation
        /// function, security), after deleting any left by an earlier run.
        fn fresh(&self, db: &str) {
            self.delete(db);
            run(self.qrtag(db).arg("setup"), "setup");
        }

        /// `DELETE /db` over a plain socket (a 404 is fine).
        fn delete(&self, db: &str) {
            let url = url::Url::parse(&self.url).expect("CouchDB URL");
            let addr = format!(
                "{}:{}",
                url.host_str().expect("host"),
                url.port_or_known_default().expect("port")
            );
            let auth = base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{}", self.user, self.password));
            let mut s = std::net::TcpStream::connect(addr).expect("connect to CouchDB");
            write!(
                s,
                "DELETE /{db} HTTP/1.1\r\nHost: couchdb\r\nAuthorization: Basic {auth}\r\nConnection: close\r\n\r\n"
            )
            .expect("send");
            let mut answer = String::new();
            s.read_to_string(&mut answer).expect("read");
            assert!(
                answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.1 404"),
                "DELETE /{db}: {answer}"
            );
        }

        fn store(&self, db: &str) -> CouchStore {
            let settings = CouchSettings::new(
                CouchUrl::parse(&self.url).expect("CouchDB URL"),
                CouchDbName::parse(db).expect("database name"),
            )
            .with_credentials(&self.user, Some(Secret::new(&self.password)));
            CouchStore::new(&settings).expect("store")
        }
    }

    /// A dry run of a file whose every key exists: refused, naming them.
    fn dry_run(c: &mut Command) -> f64 {
        let t0 = Instant::now();
        let out = c.output().expect("run qrtag");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("exist already"),
            "dry run: {err}"
        );
        t0.elapsed().as_secs_f64()
    }

    fn run(c: &mut Command, what: &str) -> f64 {
        let t0 = Instant::now();
        let out = c.output().expect("run qrtag");
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t0.elapsed().as_secs_f64()
    }

    /// The import as it was before issue 24, on the library: which keys
    /// exist, 1,000 at a time, one request after the other; then the
    /// documents, 1,000 a request, one after the other. (The file is read
    /// and checked by the caller, outside the time.)
    fn old_import(store: &CouchStore, docs: Vec<BulkDoc>) -> (f64, f64) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let t0 = Instant::now();
            for batch in docs.chunks(1000) {
                let keys: Vec<LinkKey> = batch.iter().map(|d| d.key().clone()).collect();
                let found = store.existing(&keys).await.expect("existing");
                assert!(found.iter().all(|e| !e), "a new database");
            }
            let looked_up = t0.elapsed().as_secs_f64();
            let mut docs = docs.into_iter().peekable();
            while docs.peek().is_some() {
                let batch: Vec<BulkDoc> = docs.by_ref().take(1000).collect();
                let n = batch.len();
                let outcomes = store
                    .write_batch(batch, OnExisting::Refuse)
                    .await
                    .expect("write");
                assert_eq!(outcomes.len(), n);
            }
            (looked_up, t0.elapsed().as_secs_f64())
        })
    }

    fn docs(n: u64) -> Vec<BulkDoc> {
        let now = chrono::Utc::now();
        (0..n)
            .map(|i| {
                let mut doc = qrtag::link::Link::new_document(
                    &qrtag::values::destination::Destination::parse(&super::url(i)).expect("url"),
                    false,
                );
                qrtag::link::stamp_created(
                    &mut doc,
                    now,
                    &qrtag::link::Author::cli(qrtag::link::Via::Cli, "bench", "host"),
                );
                BulkDoc::new(LinkKey::parse(&super::key(i)).expect("key"), doc)
            })
            .collect()
    }

    /// `qrtag import --new-database` of `file` into `db` (deleted first,
    /// with its keys database): the seconds it took.
    fn import_new(server: &Server, db: &str, file: &Path) -> f64 {
        server.delete(db);
        server.delete(&format!("{db}-keys"));
        run(
            server
                .qrtag(db)
                .args(["import", "--new-database"])
                .arg(file),
            "import --new-database",
        )
    }

    pub fn measure(dir: &Path, csv: &Path, n: u64) {
        let server = Server::from_env();
        let m = COMPARED.min(n);
        let small = dir.join("compared.csv");
        super::write_csv(&small, m);

        // The same links into a database `qrtag setup` made (the validation
        // runs on every document) and into one the import makes itself.
        server.fresh("qrtag_scale_existing");
        let existing = run(
            server
                .qrtag("qrtag_scale_existing")
                .arg("import")
                .arg(&small),
            "import",
        );
        let new = import_new(&server, "qrtag_scale_new", &small);
        println!(
            "CouchDB import of {m} links: into a database made by qrtag setup {existing:.1} s ({:.0} links/s); \
             --new-database {new:.1} s ({:.0} links/s); ratio {:.2}",
            m as f64 / existing,
            m as f64 / new,
            new / existing
        );
        let dry = dry_run(
            server
                .qrtag("qrtag_scale_existing")
                .args(["import", "--dry-run"])
                .arg(&small),
        );
        println!("CouchDB: a dry run of the same {m} links, every key existing: {dry:.1} s");
        if std::env::var("QRTAG_SCALE_COUCHDB_BEFORE").as_deref() == Ok("1") {
            server.fresh("qrtag_scale_old");
            let (old_lookup, old) = old_import(&server.store("qrtag_scale_old"), docs(m));
            println!(
                "CouchDB import of {m} links as before issue 24: {old:.1} s (of which {old_lookup:.1} s asking which keys exist); \
                 qrtag import into a database made by setup / it: {:.2}",
                existing / old
            );
            server.delete("qrtag_scale_old");
        }
        for db in ["qrtag_scale_existing", "qrtag_scale_new"] {
            server.delete(db);
            server.delete(&format!("{db}-keys"));
        }
        if n > m {
            let all = import_new(&server, "qrtag_scale_all", csv);
            println!(
                "CouchDB import --new-database of {n} links: {all:.1} s ({:.0} links/s)",
                n as f64 / all
            );
            server.delete("qrtag_scale_all");
            server.delete("qrtag_scale_all-keys");
        }
    }
}

/// `qrtag serve` on the CouchDB database `db`, its snapshot file at `file`
/// and its access log beside it.
fn serve_couch(server: &couch::CouchServer, db: &str, file: &Path) -> Server {
    let mut c = Command::new(env!("CARGO_BIN_EXE_qrtag"));
    c.args(["--couchdb-url", &server.url, "--couchdb-db", db]);
    serve_args(&mut c, file);
    c.arg("--snapshot-file").arg(file);
    if let Some(user) = &server.user {
        c.env("QRTAG_COUCHDB_USER", user);
    }
    if let Some(password) = &server.password {
        c.env("QRTAG_COUCHDB_PASSWORD", password);
    }
    Server::qrtag(c).0
}

/// The CouchDB figures: a new node's full load, a new node given a copy of
/// a snapshot file, and edits written to CouchDB until a node serves them.
fn couch_figures(server: &couch::CouchServer, n: u64, dir: &Path) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let db = server.db_for(n);
    let t0 = Instant::now();
    if rt.block_on(server.fill(&db, n)) {
        println!(
            "couchdb: filled {db} at {} with {n} links in {:.1} s",
            server.url,
            t0.elapsed().as_secs_f64()
        );
    }
    // `qrtag setup`'s links view, which the full load reads (built once).
    let t0 = Instant::now();
    if rt.block_on(server.set_up_view(&db)) {
        println!(
            "couchdb: built the links view of {db} in {:.1} s",
            t0.elapsed().as_secs_f64()
        );
    }
    let probe = format!("/{}", key(n / 2));
    let want = couch::url(n / 2);
    let (first_dir, second_dir) = (dir.join("couch-node1"), dir.join("couch-node2"));
    for d in [&first_dir, &second_dir] {
        std::fs::create_dir_all(d).expect("mkdir");
    }

    // A new node: everything from CouchDB.
    let file = first_dir.join("links.snapshot");
    let t0 = Instant::now();
    let first = serve_couch(server, &db, &file);
    wait_for(first.addr, &probe, &want, Duration::from_secs(600));
    let full = t0.elapsed();
    while !file.exists() {
        assert!(t0.elapsed() < Duration::from_secs(600), "no snapshot file");
        std::thread::sleep(Duration::from_millis(10));
    }
    let rss = first.rss_bytes();
    first.terminate();

    // Another new node, given a copy of the first one's file.
    let copy = second_dir.join("links.snapshot");
    std::fs::copy(&file, &copy).expect("copy the snapshot file");
    let t0 = Instant::now();
    let second = serve_couch(server, &db, &copy);
    wait_for(second.addr, &probe, &want, Duration::from_secs(600));
    let from_copy = t0.elapsed();
    println!(
        "couchdb, {n} links: start to serving with a full load {:.3} s ({:.0} links/s); \
         a new node from a copy of the snapshot file {:.3} s; resident memory after the full load {:.1} MB",
        full.as_secs_f64(),
        n as f64 / full.as_secs_f64(),
        from_copy.as_secs_f64(),
        rss as f64 / 1e6,
    );

    // Edits written to CouchDB as a person with curl would, timed from
    // CouchDB's answer to the first redirect that shows them.
    let mut latencies = Vec::new();
    for e in 0..100u64 {
        let i = (e * 7919) % n;
        let path = format!("{db}/{}", key(i));
        let (status, mut doc) = rt.block_on(server.call(reqwest::Method::GET, &path, None));
        assert_eq!(status, 200, "{path}: {doc}");
        let new_url = format!("https://www.example.com/campaigns/summer/poster-{i:07}?e={e}");
        doc["url"] = serde_json::Value::String(new_url.clone());
        std::thread::sleep(Duration::from_micros((e * 7_919) % 25_000));
        let (status, body) = rt.block_on(server.call(reqwest::Method::PUT, &path, Some(&doc)));
        assert!(status == 201 || status == 202, "{path}: {status} {body}");
        let written = Instant::now();
        let seen = wait_for(
            second.addr,
            &format!("/{}", key(i)),
            &new_url,
            Duration::from_secs(10),
        );
        latencies.push((seen - written).as_secs_f64() * 1000.0);
    }
    println!(
        "couchdb edit to visible over 100 edits: median {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        median(latencies.clone()),
        quantile(latencies.clone(), 0.99),
        quantile(latencies, 1.0),
    );
    second.terminate();
}

//! Whole console pages, end to end, at issue 13's size: the real application
//! (`Application::build`, console and scan index on) over an SQLite store of
//! 1M links and an access log of 10M lines over those keys, logged in over
//! HTTP, every page a whole GET on one kept-alive connection (request sent,
//! body read to its end).
//!
//! Baseline in the same run: `GET /healthz` on the same admin listener, so
//! the ratios hold on a noisy machine. Pages are timed round-robin (one of
//! each per round), so noise falls on all of them alike. Prints p50/p95 per
//! page, its ratio to the baseline, and whether the p95 is under 100 ms (issue
//! 33's bound: every list page, in any order and with any search).
//!
//! The links and the log are generated once per size and kept under the
//! target directory (`CARGO_TARGET_TMPDIR/console-pages-LINKS-LINES-timed/`), with
//! the index's checkpoint beside the log, so a re-run starts in seconds.
//! The log spans the 365 days before it was generated.
//!
//! `cargo bench --bench console_pages` (a quick run:
//! `QRTAG_BENCH_LINKS=20000 QRTAG_BENCH_LINES=200000 cargo bench --bench console_pages`;
//! `QRTAG_BENCH_ROUNDS` for more or fewer samples, 30 by default;
//! `QRTAG_BENCH_PAGES=never,expired` times only the pages whose names hold
//! one of those pieces, besides the baseline; `QRTAG_BENCH_PER=50` asks the
//! list pages for another of the console's page sizes, `?per=`, 100 when
//! not given).

#[path = "support/keys.rs"]
mod keys;
#[path = "support/load.rs"]
mod load;
#[path = "support/log_lines.rs"]
mod log_lines;

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use qrtag::console::ConsoleSettings;
use qrtag::link::Link;
use qrtag::scan_index::{ScanIndex, ScanIndexSettings};
use qrtag::settings::{AccessLogTarget, Settings};
use qrtag::startup::Application;
use qrtag::store::sqlite::SqliteStore;
use qrtag::store::{Access, LinkStore};
use qrtag::store::{BulkDoc, BulkOutcome, OnExisting};
use qrtag::values::destination::Destination;
use qrtag::values::link_key::LinkKey;
use qrtag::values::public_url::PublicUrl;

use keys::key;
use load::quantile;
use log_lines::Generator;

const PASSWORD: &str = "bench-console-password";
/// Issue 33's bound for a page (issue 13's was 200 ms).
const BOUND_MS: f64 = 100.0;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn url(i: u64) -> String {
    format!("https://www.example.com/campaigns/spring/poster-{i:07}?src=qr")
}

/// The cached store and log of one size.
struct Data {
    db: PathBuf,
    log: PathBuf,
}

/// Writes `path` through `make` into a `.part` file renamed into place, so
/// an interrupted run never leaves half a file that looks whole.
async fn cached<F, Fut>(path: &Path, what: &str, make: F) -> Result<(), Error>
where
    F: FnOnce(PathBuf) -> Fut,
    Fut: std::future::Future<Output = Result<(), Error>>,
{
    if path.exists() {
        println!("{what}: cached in {}", path.display());
        return Ok(());
    }
    let part = path.with_extension("part");
    let _ = std::fs::remove_file(&part);
    let t = Instant::now();
    make(part.clone()).await?;
    std::fs::rename(&part, path)?;
    println!("{what}: generated in {:.1?}", t.elapsed());
    Ok(())
}

async fn data(links: u64, lines: u64) -> Result<Data, Error> {
    // "-timed": the links carry creation and change times (a cache of an
    // older build's links, without them, is not reused).
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("console-pages-{links}-{lines}-timed"));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("links.db");
    cached(&db, &format!("{links} links"), |part| async move {
        // The store's bulk path, as `qrtag import` writes.
        let store = SqliteStore::open_with(&part, Access::Create)?;
        let batch = store.batch_size() as u64;
        for from in (0..links).step_by(batch as usize) {
            let docs = (from..(from + batch).min(links))
                .map(|i| -> Result<BulkDoc, Error> {
                    let mut doc = Link::new_document(&Destination::parse(&url(i))?, false);
                    // Created a minute apart, as the list's time orders read.
                    let at = (chrono::DateTime::UNIX_EPOCH
                        + chrono::Duration::minutes(28_000_000 + i as i64))
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                    doc.insert("created_at".into(), at.clone().into());
                    doc.insert("changed_at".into(), at.into());
                    Ok(BulkDoc::new(LinkKey::parse(&key(i))?, doc))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let outcomes = store.write_batch(docs, OnExisting::Refuse).await?;
            if let Some(bad) = outcomes.iter().find(|o| **o != BulkOutcome::Created) {
                return Err(format!("bulk write: {bad:?}").into());
            }
        }
        Ok(())
    })
    .await?;
    let log = dir.join("access.log");
    cached(&log, &format!("{lines} log lines"), |part| async move {
        let days = 365;
        let start = chrono::Utc::now() - chrono::Duration::days(days);
        let keys = (0..links).map(|i| format!("/{}", key(i))).collect();
        let mut out = BufWriter::new(File::create(&part)?);
        Generator::new(keys, lines, start, days).write(lines, &mut out)?;
        std::io::Write::flush(&mut out)?;
        Ok(())
    })
    .await?;
    Ok(Data { db, log })
}

/// Polls `done` every 20 ms for at most an hour.
async fn wait(what: &str, done: impl Fn() -> bool) -> Result<Duration, Error> {
    let t = Instant::now();
    while !done() {
        if t.elapsed() > Duration::from_secs(3600) {
            return Err(format!("{what} took over an hour").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(t.elapsed())
}

/// One whole GET: status checked, body read to its end.
async fn get(client: &reqwest::Client, url: &str) -> Result<Duration, Error> {
    let t = Instant::now();
    let res = client.get(url).send().await?;
    let status = res.status();
    let body = res.bytes().await?;
    let took = t.elapsed();
    if status != reqwest::StatusCode::OK {
        return Err(format!("GET {url}: {status}: {}", String::from_utf8_lossy(&body)).into());
    }
    Ok(took)
}

/// The synchronizer token in a page's form.
fn csrf(html: &str) -> Option<&str> {
    let field = r#"name="csrf" value=""#;
    let rest = &html[html.find(field)? + field.len()..];
    rest.split('"').next()
}

async fn login(client: &reqwest::Client, console: &str) -> Result<(), Error> {
    let form = client
        .get(format!("{console}/login"))
        .send()
        .await?
        .text()
        .await?;
    let token = csrf(&form).ok_or("no CSRF token on the login page")?;
    let res = client
        .post(format!("{console}/login"))
        .form(&[("csrf", token), ("password", PASSWORD)])
        .send()
        .await?;
    if res.status() != reqwest::StatusCode::SEE_OTHER {
        return Err(format!("login: {}", res.status()).into());
    }
    Ok(())
}

fn main() -> Result<(), Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> Result<(), Error> {
    let links = env_or("QRTAG_BENCH_LINKS", 1_000_000);
    let lines = env_or("QRTAG_BENCH_LINES", 10_000_000);
    let rounds = env_or("QRTAG_BENCH_ROUNDS", 30).max(1);
    let data = data(links, lines).await?;

    // A fresh copy of the store each run (sessions and the snapshot file
    // are the run's own); the log and the checkpoint stay in the cache.
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("qrtag.db");
    std::fs::copy(&data.db, &db)?;
    let mut settings = Settings::local(db.clone());
    settings.listen = "127.0.0.1:0".into();
    settings.admin_listen = "127.0.0.1:0".into();
    settings.public_url = Some(PublicUrl::parse("https://0x1f.ie")?);
    settings.access_log = AccessLogTarget::Path(data.log.clone());
    settings.console = Some(ConsoleSettings::default());
    settings.scan_index = Some(ScanIndexSettings::beside(&data.log));
    qrtag::console::password::set(&SqliteStore::open(&db)?, PASSWORD).await?;

    let t = Instant::now();
    let app = Application::build(settings).await?;
    let admin = app.admin_addr();
    let index: Arc<ScanIndex> = app.scan_index().ok_or("the scan index is on")?;
    tokio::spawn(app.run_until_stopped());
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(1)
        .build()?;
    let base = format!("http://{admin}");
    let ready = || async { get(&client, &format!("{base}/readyz")).await.is_ok() };
    while !ready().await {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("application ready (links loaded) in {:.1?}", t.elapsed());
    let caught_up = wait("the index's first pass", || index.caught_up()).await?;
    let read = index.progress().bytes_read.load(Ordering::Relaxed);
    println!(
        "scan index caught up {:.1?} later ({:.0} MB of log read{})",
        caught_up,
        read as f64 / 1e6,
        if read == 0 {
            ", all from the checkpoint"
        } else {
            ""
        }
    );
    if read > 0 {
        // It saves a checkpoint right after a pass that read lines: let that
        // finish rather than time pages against it.
        let saved = wait("the checkpoint", || {
            index.progress().checkpoints_written.load(Ordering::Relaxed) >= 1
        })
        .await?;
        println!("checkpoint written {saved:.1?} later");
    }

    let console = format!("{base}/console");
    login(&client, &console).await?;
    let mut sorted: Vec<String> = (0..links).map(key).collect();
    sorted.sort_unstable();
    let middle = &sorted[sorted.len() / 2];
    let rare = url(links / 3);
    let rare = &rare[rare.find("poster-").unwrap_or(0)..];
    // The last row of the first newest-first page, as its cursor names it
    // (`TIME:KEY`): link `i` was created `28_000_000 + i` minutes after 1970.
    let per = env_or("QRTAG_BENCH_PER", qrtag::console::PAGE_SIZE as u64);
    let page_end = links.saturating_sub(per);
    let newest_page_end = format!("{}:{}", (28_000_000 + page_end) * 60, key(page_end));
    // A piece of a tenth to a twentieth of the destinations, in capitals
    // (the search of everything ignores case): `POSTER-01` at a million.
    let digits = links.to_string().len();
    let many = format!("POSTER-{:07}", links / 10);
    let many = &many[..("POSTER-".len() + (9 - digits.min(7))).min(many.len())];
    let query = |pairs: &[(&str, &str)]| {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish()
    };
    let mut pages: Vec<(&str, String)> = vec![
        ("baseline: /healthz", format!("{base}/healthz")),
        ("links, first page", format!("{console}/links")),
        (
            "links, middle page (cursor)",
            format!("{console}/links?{}", query(&[("after", middle)])),
        ),
        (
            "links, newest first",
            format!("{console}/links?{}", query(&[("sort", "created")])),
        ),
        (
            "links, never scanned",
            format!("{console}/links?{}", query(&[("state", "never-scanned")])),
        ),
        (
            "key prefix search",
            format!("{console}/links?{}", query(&[("q", &middle[..2])])),
        ),
        (
            "destination search, 1 match",
            format!("{console}/links?{}", query(&[("q", rare), ("by", "url")])),
        ),
        // Issue 33: the search box's first choice, every link's key, title,
        // notes and destination, ignoring case (the same match, upper case).
        (
            "search of everything, 1 match",
            format!(
                "{console}/links?{}",
                query(&[("q", &rare.to_uppercase()), ("by", "any")])
            ),
        ),
        // Issue 33: the pages a person clicks, in every order.
        (
            "links, newest first, page 2",
            format!(
                "{console}/links?{}",
                query(&[("sort", "created"), ("after", &newest_page_end)])
            ),
        ),
        (
            "links, changed oldest",
            format!("{console}/links?{}", query(&[("sort", "changed-oldest")])),
        ),
        (
            "everything, many, newest first",
            format!(
                "{console}/links?{}",
                query(&[("q", many), ("by", "any"), ("sort", "created")])
            ),
        ),
        (
            "destination, 1 match, newest",
            format!(
                "{console}/links?{}",
                query(&[("q", rare), ("by", "url"), ("sort", "created")])
            ),
        ),
        (
            "expired, newest first",
            format!(
                "{console}/links?{}",
                query(&[("state", "expired"), ("sort", "created")])
            ),
        ),
        (
            "link page (QR, chart, breakdowns)",
            format!("{console}/link?{}", query(&[("key", &key(0))])),
        ),
        ("dashboard", format!("{console}/dashboard")),
        (
            "dashboard, a year",
            format!("{console}/dashboard?{}", query(&[("days", "365")])),
        ),
    ];
    // The list pages at the size asked for (issue 33's console shows 100).
    if per != qrtag::console::PAGE_SIZE as u64 {
        for (_, url) in &mut pages {
            if url.contains("/console/links") {
                let join = if url.contains('?') { '&' } else { '?' };
                url.push_str(&format!("{join}per={per}"));
            }
        }
    }
    // Only the pages asked for, the baseline always.
    if let Ok(only) = std::env::var("QRTAG_BENCH_PAGES") {
        let pieces: Vec<&str> = only.split(',').filter(|p| !p.is_empty()).collect();
        let mut i = 0;
        pages.retain(|(name, _)| {
            i += 1;
            i == 1 || pieces.iter().any(|p| name.contains(p))
        });
    }
    println!("{} rows a list page", per);
    // The first list request after the start: the console's own thread has
    // sorted the keys meanwhile (the index's first pass takes longer).
    let first = get(&client, &pages[1].1).await?;
    println!(
        "first list request after the start: {:.2} ms",
        first.as_secs_f64() * 1e3
    );
    for (_, url) in &pages {
        get(&client, url).await?;
        get(&client, url).await?;
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); pages.len()];
    for _ in 0..rounds {
        for (i, (_, url)) in pages.iter().enumerate() {
            times[i].push(get(&client, url).await?.as_secs_f64() * 1e3);
        }
    }

    println!(
        "\n{links} links, {lines} log lines, {rounds} rounds; whole GETs on one kept-alive connection"
    );
    println!(
        "{:<34} {:>9} {:>9} {:>9} {:>9} {:>12}",
        "page", "p50 ms", "p95 ms", "p50/base", "p95/base", "p95 < 100ms"
    );
    let base_p50 = quantile(times[0].clone(), 0.5);
    let base_p95 = quantile(times[0].clone(), 0.95);
    for ((name, _), t) in pages.iter().zip(&times) {
        let (p50, p95) = (quantile(t.clone(), 0.5), quantile(t.clone(), 0.95));
        println!(
            "{name:<34} {p50:>9.2} {p95:>9.2} {:>9.1} {:>9.1} {:>12}",
            p50 / base_p50,
            p95 / base_p95,
            if p95 < BOUND_MS { "yes" } else { "NO" }
        );
    }
    Ok(())
}

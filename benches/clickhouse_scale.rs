//! Issue 38's scale check: many scan rows over many links loaded into a
//! real ClickHouse with `qrtag stats --load-into`, then a link's scans read
//! back through `serve --scans-from`, side by side with `serve` answering
//! from its embedded scan index over the same log.
//!
//! Everything runs through the real binary (`CARGO_BIN_EXE_qrtag`, built
//! with the bench profile) against Debian's `clickhouse-server`, started in
//! a temporary directory on free ports as the tests start it
//! (`tests/support/clickhouse.rs`, included here). Without the server the
//! bench says so and stops.
//!
//! Steps, each timed, each with a baseline from the same run:
//!
//! 1. A synthetic access log written with the crate's own line writer
//!    (`access_log::format::write_record`), streamed to disk: ROWS lines
//!    over LINKS links over DAYS days ending now. The mix: phones and
//!    desktops by User-Agent (a scanner keeps its device), 5% bots, 2%
//!    HEAD, 3% 404s, 80% of scans carrying a tracking ID drawn from a pool
//!    of twice the links (so scanners return), links skewed (a few
//!    posters scanned a lot, most a little). The links are in an SQLite
//!    store made through the library's bulk path, as `qrtag import` writes.
//! 2. `setup-clickhouse`, then `stats --load-into` of the log: rows/s,
//!    against `qrtag stats` (the embedded reader) over the same file.
//! 3. After ClickHouse's background merges settle, `serve --scans-from`
//!    and `serve` with the scan index over the log (while ROWS is at most
//!    `QRTAG_CH_EMBEDDED_ROWS`, the largest log the index is to hold here)
//!    each answer [`targets`] round-robin, one of each a round, the same
//!    random keys in the same order; p50/p95 of whole GETs on one kept-alive
//!    connection, and their ratio to `/healthz` on the same server (the
//!    baseline). The index's first pass and its peak memory are reported.
//!    `serve --scans-from` first rolls up the log's closed days
//!    (`clickhouse::rollup`; timed) and sums the periods' windows
//!    (`clickhouse::windows`; timed), as it does at start in service; a
//!    console page that rendered without its numbers (ClickHouse past the
//!    page's timeout) is counted beside its target.
//!
//! The REST API admits 100 requests a second per key (a link's scans
//! counted twice until `4fb865d`): each REST target has a key of its own
//! and a round lasts at least 25 ms, so no request is refused; that pacing is not in the figures (each
//! request is timed alone). A request refused all the same is asked again
//! after its `Retry-After`, untimed, and counted.
//!
//! `cargo bench --config 'profile.bench.package.qrtag.codegen-units=16' --bench clickhouse_scale`
//! (defaults: 200,000 rows over 20,000 links over 90 days, 200 rounds).
//! Sizes from the environment: `QRTAG_CH_ROWS`, `QRTAG_CH_LINKS`,
//! `QRTAG_CH_DAYS`, `QRTAG_CH_ROUNDS`, `QRTAG_CH_EMBEDDED_ROWS` (skip the
//! embedded server above it), `QRTAG_CH_GZIP=1` (write the log gzipped, for
//! sizes whose plain log would not fit on disk; the embedded server is then
//! skipped), `QRTAG_CH_CONSOLE=1` (also the console's pages, once they read
//! ClickHouse with `--scans-from`), `QRTAG_CH_DIR` (where the log, the
//! store and ClickHouse's data go; default the target's temporary
//! directory; removed at the end).

#[path = "support/keys.rs"]
mod keys;
#[path = "support/load.rs"]
mod load;

#[path = "../tests/support/clickhouse.rs"]
#[allow(clippy::all)]
mod clickhouse;

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use qrtag::access_log::format::{Record, write_record};
use qrtag::link::Link;
use qrtag::store::sqlite::SqliteStore;
use qrtag::store::{Access, BulkDoc, BulkOutcome, LinkStore, OnExisting};
use qrtag::tracking::id::TrackingId;
use qrtag::values::destination::Destination;
use qrtag::values::link_key::LinkKey;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use keys::key;
use load::quantile;

type Error = Box<dyn std::error::Error + Send + Sync>;

const BIN: &str = env!("CARGO_BIN_EXE_qrtag");
const CONSOLE_PASSWORD: &str = "bench-console-password";
/// The REST API's 100 requests a second per key, with room: a link's
/// scans count twice against it (the links route and the scans handler
/// each admit the key), so one a round is at most 80 a second.
const MIN_ROUND: Duration = Duration::from_millis(25);

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1" || v == "true")
}

fn url(i: u64) -> String {
    format!("https://www.example.com/campaigns/spring/poster-{i:07}?src=qr")
}

// ---------------------------------------------------------------- the log

/// Devices as their User-Agents say; a scanner keeps one (its index
/// modulo this list, weighted by repetition: phones most).
const DEVICES: &[&str] = &[
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 13; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (iPad; CPU OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
];

const BOTS: &[&str] = &[
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
    "curl/8.5.0",
];

const REFERERS: &[&str] = &[
    "https://www.google.com/",
    "https://t.co/",
    "https://www.facebook.com/",
];

/// Writes the synthetic log line by line into `out` (a buffer of about a
/// megabyte at a time: memory does not grow with the rows). Returns bytes.
fn write_log(
    rows: u64,
    links: u64,
    days: i64,
    end: DateTime<Utc>,
    out: &mut impl Write,
) -> std::io::Result<u64> {
    let mut rng = StdRng::seed_from_u64(38);
    let scanners = links * 2;
    let ids: Vec<TrackingId> = (0..scanners)
        .map(|i| TrackingId::generate_at(1_790_000_000_000 + i, &mut rng))
        .collect();
    let keys: Vec<String> = (0..links).map(|i| format!("/{}", key(i))).collect();
    let start = end - chrono::Duration::days(days);
    let step_ms = days * 86_400_000 / rows.max(1) as i64;
    let mut buf = Vec::with_capacity(1 << 20);
    let mut target = Vec::new();
    let mut location = String::new();
    let mut bytes = 0;
    for n in 0..rows {
        let time = start + chrono::Duration::milliseconds(step_ms * n as i64);
        let roll = rng.random_range(0..100u32);
        // Skewed: key 0 the busiest, most keys scanned a little.
        let link = (rng.random_range(0.0f64..1.0).powi(3) * links as f64) as u64;
        let scanner = rng.random_range(0..scanners) as usize;
        target.clear();
        location.clear();
        let (ua, status, method, tracked) = match roll {
            0..5 => (BOTS[rng.random_range(0..BOTS.len())], 302, "GET", false),
            5..8 => (DEVICES[scanner % DEVICES.len()], 404, "GET", false),
            8..10 => (DEVICES[scanner % DEVICES.len()], 302, "HEAD", true),
            _ => (DEVICES[scanner % DEVICES.len()], 302, "GET", true),
        };
        if status == 404 {
            if rng.random_bool(0.5) {
                write!(target, "/wp-login{}.php", rng.random_range(0..1000))?;
            } else {
                // A key no link has (links use keys below `links`).
                write!(target, "/{}", key(links + rng.random_range(0..links)))?;
            }
        } else {
            target.extend_from_slice(keys[link as usize].as_bytes());
            use std::fmt::Write as _;
            let _ = write!(
                location,
                "https://www.example.com/campaigns/spring/poster-{link:07}?src=qr"
            );
        }
        let tracking = (tracked && rng.random_bool(0.8)).then(|| &ids[scanner]);
        let referer = (roll >= 10 && scanner.is_multiple_of(7))
            .then(|| REFERERS[scanner % REFERERS.len()].as_bytes());
        write_record(
            &Record {
                time,
                client_ip: Some(IpAddr::V4(Ipv4Addr::from(
                    0x0a00_0000 | (scanner as u32 & 0x00ff_ffff),
                ))),
                tracking,
                user_agent: Some(ua.as_bytes()),
                target: &target,
                status,
                location: (status == 302).then_some(location.as_str()),
                fallback: false,
                method,
                referer,
            },
            &mut buf,
        );
        if buf.len() > (1 << 20) - 16_384 {
            out.write_all(&buf)?;
            bytes += buf.len() as u64;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    bytes += buf.len() as u64;
    Ok(bytes)
}

/// LINKS links in an SQLite store, through the store's bulk path.
async fn make_store(db: &Path, links: u64) -> Result<(), Error> {
    let store = SqliteStore::open_with(db, Access::Create)?;
    let batch = store.batch_size() as u64;
    for from in (0..links).step_by(batch as usize) {
        let docs = (from..(from + batch).min(links))
            .map(|i| -> Result<BulkDoc, Error> {
                let doc = Link::new_document(&Destination::parse(&url(i))?, false);
                Ok(BulkDoc::new(LinkKey::parse(&key(i))?, doc))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let outcomes = store.write_batch(docs, OnExisting::Refuse).await?;
        if let Some(bad) = outcomes.iter().find(|o| **o != BulkOutcome::Created) {
            return Err(format!("bulk write: {bad:?}").into());
        }
    }
    Ok(())
}

// --------------------------------------------------------- the processes

/// `qrtag --db DB ARGS`, its stdout; an error with its stderr if it fails.
fn qrtag(db: &Path, args: &[&str]) -> Result<String, Error> {
    let out = Command::new(BIN)
        .arg("--db")
        .arg(db)
        .args(args)
        .env("QRTAG_CONFIG", "/dev/null")
        .env("QRTAG_LOG", "warn")
        .stdin(Stdio::null())
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "qrtag {}: {}: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// A `qrtag serve` of the bench's: its addresses, killed when dropped.
struct Server {
    child: Child,
    admin: SocketAddr,
    api: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    fn spawn(db: &Path, args: &[&str]) -> Result<Server, Error> {
        let mut child = Command::new(BIN)
            .arg("--db")
            .arg(db)
            .arg("serve")
            .args(["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
            .args(["--api-listen", "127.0.0.1:0", "--workers", "2"])
            .args(["--no-snapshot-file"])
            .args(args)
            .env("QRTAG_CONFIG", "/dev/null")
            .env("QRTAG_LOG", "warn")
            .env("QRTAG_SHUTDOWN_GRACE", "0")
            .env_remove("QRTAG_DB")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let (tx, rx) = std::sync::mpsc::channel();
        let seen = Arc::new(Mutex::new(String::new()));
        let keep = Arc::clone(&seen);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some((_, admin)) = qrtag::startup::parse_listening_line(&line) {
                    let api = line
                        .split(' ')
                        .find_map(|w| w.strip_prefix("api="))
                        .and_then(|a| a.parse::<SocketAddr>().ok());
                    let _ = tx.send((admin, api));
                }
                if let Ok(mut s) = keep.lock() {
                    s.push_str(&line);
                    s.push('\n');
                }
            }
        });
        let (admin, api) = match rx.recv_timeout(Duration::from_secs(600)) {
            Ok(addrs) => addrs,
            Err(_) => {
                let _ = child.kill();
                let said = seen.lock().map(|s| s.clone()).unwrap_or_default();
                return Err(format!("serve did not start: {said}").into());
            }
        };
        Ok(Server {
            child,
            admin,
            api: api.ok_or("no api= address")?,
            stderr: seen,
        })
    }

    /// Peak resident memory so far (`VmHWM`), in bytes.
    fn peak_rss(&self) -> u64 {
        peak_rss(self.child.id())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn peak_rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn pid_of(name: &str) -> Option<u32> {
    // Only the ClickHouse this bench started: its config file names its
    // directory.
    std::fs::read_dir("/proc").ok()?.find_map(|e| {
        let e = e.ok()?;
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        String::from_utf8_lossy(&cmd).contains(name).then_some(pid)
    })
}

// -------------------------------------------------------------- the pages

/// Which listener a target is on and how it is let in.
#[derive(Clone, Copy, PartialEq)]
enum Door {
    /// The admin listener, no login: the baseline.
    Admin,
    /// The REST API with a read key of the target's own.
    Api,
    /// The console (admin listener, logged in), with `QRTAG_CH_CONSOLE=1`.
    Console,
}

/// Which link a target asks about.
#[derive(Clone, Copy)]
enum Pick {
    None,
    /// A link drawn at random (uniformly) each round: most are scanned a
    /// little.
    Random,
    /// Key 0, the busiest link.
    Busiest,
}

struct Target {
    name: &'static str,
    door: Door,
    pick: Pick,
    /// The path and query; `{key}` and `{since}` (the log's first day) are
    /// filled in.
    path: &'static str,
}

/// What is timed, in this order every round. To time more pages (the
/// console's, once they answer from `--scans-from`), add a row.
fn targets() -> Vec<Target> {
    let t = |name, door, pick, path| Target {
        name,
        door,
        pick,
        path,
    };
    vec![
        t("baseline: /healthz", Door::Admin, Pick::None, "/healthz"),
        t(
            "REST link scans, random key, 30 days",
            Door::Api,
            Pick::Random,
            "/api/v1/links/{key}/scans",
        ),
        t(
            "REST link scans, random key, all days",
            Door::Api,
            Pick::Random,
            "/api/v1/links/{key}/scans?since={since}",
        ),
        t(
            "REST link scans, busiest, all days",
            Door::Api,
            Pick::Busiest,
            "/api/v1/links/{key}/scans?since={since}",
        ),
        t(
            "console link page, random key",
            Door::Console,
            Pick::Random,
            "/console/link?key={key}",
        ),
        t(
            "console link page, busiest",
            Door::Console,
            Pick::Busiest,
            "/console/link?key={key}",
        ),
        t(
            "console dashboard",
            Door::Console,
            Pick::None,
            "/console/dashboard",
        ),
        t(
            "console dashboard, a year",
            Door::Console,
            Pick::None,
            "/console/dashboard?days=365",
        ),
    ]
}

/// One whole GET: status checked, body read to its end.
async fn get(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
) -> Result<(Duration, Vec<u8>), Error> {
    let t = Instant::now();
    let mut req = client.get(url);
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    let res = req.send().await?;
    let status = res.status();
    let body = res.bytes().await?;
    let took = t.elapsed();
    if status != reqwest::StatusCode::OK {
        return Err(format!("GET {url}: {status}: {}", String::from_utf8_lossy(&body)).into());
    }
    Ok((took, body.to_vec()))
}

fn csrf(html: &str) -> Option<&str> {
    let field = r#"name="csrf" value=""#;
    let rest = &html[html.find(field)? + field.len()..];
    rest.split('"').next()
}

async fn login(client: &reqwest::Client, admin: SocketAddr) -> Result<(), Error> {
    let console = format!("http://{admin}/console");
    let form = client
        .get(format!("{console}/login"))
        .send()
        .await?
        .text()
        .await?;
    let token = csrf(&form).ok_or("no CSRF token on the login page")?;
    let res = client
        .post(format!("{console}/login"))
        .form(&[("csrf", token), ("password", CONSOLE_PASSWORD)])
        .send()
        .await?;
    if res.status() != reqwest::StatusCode::SEE_OTHER {
        return Err(format!("console login: {}", res.status()).into());
    }
    Ok(())
}

/// The p50 and p95 of each target, in ms, and how many of its pages
/// rendered without their numbers (ClickHouse did not answer in time).
struct Timings {
    rows: Vec<(f64, f64)>,
    away: Vec<u64>,
}

/// Times `targets` on `server`, `rounds` rounds, keys from `seed`.
async fn time_targets(
    server: &Server,
    targets: &[&Target],
    tokens: &[String],
    links: u64,
    since: &str,
    rounds: u64,
) -> Result<Timings, Error> {
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(1)
        .build()?;
    if targets.iter().any(|t| t.door == Door::Console) {
        login(&client, server.admin).await?;
    }
    let mut rng = StdRng::seed_from_u64(3838);
    let url_of = |t: &Target, k: u64| {
        let base = match t.door {
            Door::Api => format!("http://{}", server.api),
            Door::Admin | Door::Console => format!("http://{}", server.admin),
        };
        format!(
            "{base}{}",
            t.path.replace("{key}", &key(k)).replace("{since}", since)
        )
    };
    let token_of = |i: usize, t: &Target| (t.door == Door::Api).then(|| tokens[i].as_str());
    // Two warm-up rounds, not counted.
    for (i, t) in targets.iter().enumerate() {
        for k in [1, 2] {
            get(&client, &url_of(t, k), token_of(i, t)).await?;
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); targets.len()];
    let mut away = vec![0u64; targets.len()];
    let mut refused = 0u64;
    let started = Instant::now();
    for r in 0..rounds {
        let round = Instant::now();
        for (i, t) in targets.iter().enumerate() {
            let k = match t.pick {
                Pick::None | Pick::Busiest => 0,
                Pick::Random => rng.random_range(0..links),
            };
            let url = url_of(t, k);
            let took = loop {
                match get(&client, &url, token_of(i, t)).await {
                    Err(e) if e.to_string().contains(": 429 ") => {
                        // Refused by the rate limit: not timed, asked again
                        // after its Retry-After, and counted.
                        if refused == 0 {
                            eprintln!(
                                "first 429 at round {r} of {rounds}, {:.1?} into the rounds: {e}",
                                started.elapsed()
                            );
                        }
                        refused += 1;
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    other => break other?,
                }
            };
            if t.door == Door::Console
                && String::from_utf8_lossy(&took.1).contains("id=\"scans-away\"")
            {
                away[i] += 1;
            }
            times[i].push(took.0.as_secs_f64() * 1e3);
        }
        if let Some(rest) = MIN_ROUND.checked_sub(round.elapsed()) {
            tokio::time::sleep(rest).await;
        }
    }
    if refused > 0 {
        println!(
            "{refused} requests refused by the REST API's rate limit, asked again (not timed)"
        );
    }
    Ok(Timings {
        rows: times
            .into_iter()
            .map(|t| (quantile(t.clone(), 0.5), quantile(t, 0.95)))
            .collect(),
        away,
    })
}

/// A link's numbers as the REST API gives them, for the side-by-side check.
async fn numbers(server: &Server, token: &str, k: u64, since: &str) -> Result<String, Error> {
    let client = reqwest::Client::new();
    let url = format!(
        "http://{}/api/v1/links/{}/scans?since={since}",
        server.api,
        key(k)
    );
    let (_, body) = get(&client, &url, Some(token)).await?;
    let v: serde_json::Value = serde_json::from_slice(&body)?;
    Ok(format!(
        "scans {} unique {} bots {} head {} 404 {}",
        v["scans"], v["unique_scanners"], v["bots"], v["head"], v["not_found"]
    ))
}

/// Until `rolled_days` names every closed day `link_days` has rows of.
async fn roll_wait(ch: &clickhouse::ClickHouse) -> Result<Duration, Error> {
    let days = ch
        .query("SELECT DISTINCT day FROM qrtag.link_days FORMAT TSV")
        .await?;
    let now = Utc::now();
    let due = days
        .lines()
        .filter_map(|d| d.trim().parse::<chrono::NaiveDate>().ok())
        .filter(|d| qrtag::clickhouse::rollup::closed(*d, now))
        .count();
    until(
        "the closed days rolled up",
        Duration::from_secs(7200),
        || async {
            ch.query("SELECT count(DISTINCT day) FROM qrtag.rolled_days FORMAT TSV")
                .await
                .ok()
                .and_then(|n| n.trim().parse::<usize>().ok())
                .is_some_and(|n| n >= due)
        },
    )
    .await
}

/// Polls `ok` every 100 ms up to `limit`; how long it took.
async fn until<F, Fut>(what: &str, limit: Duration, ok: F) -> Result<Duration, Error>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let t = Instant::now();
    while !ok().await {
        if t.elapsed() > limit {
            return Err(format!("{what}: not within {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(t.elapsed())
}

/// ClickHouse asked directly over HTTP, as `default`: the parts of
/// `link_days` (one a batch until merges join them), and p50/p95 of a
/// link's totals query (the states `clickhouse::link_page` merges for a day not kept busy)
/// against `SELECT 1`, so a slow page can be told from a slow query; and
/// the same query with `PREWHERE`.
async fn direct(ch: &clickhouse::ClickHouse, links: u64) -> Result<(), Error> {
    let parts = ch
        .query(
            "SELECT count(), sum(rows) FROM system.parts \
             WHERE database = 'qrtag' AND table = 'link_days' AND active FORMAT TSV",
        )
        .await?;
    let mut rng = StdRng::seed_from_u64(383838);
    let (mut one, mut totals, mut prewhere) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..50 {
        // The same with the link read first (`PREWHERE`): the states of
        // only that link's rows are read, not a whole granule's.
        let t = Instant::now();
        ch.query(&format!(
            "SELECT uniqExactIfMerge(scans), uniqExactIfMerge(scanners), uniqExactIfMerge(bots), \
             uniqExactIfMerge(heads), uniqExactIfMerge(not_found) \
             FROM qrtag.link_days PREWHERE link = '{}' FORMAT TSV",
            key(rng.random_range(0..links))
        ))
        .await?;
        prewhere.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        ch.query("SELECT 1").await?;
        one.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        ch.query(&format!(
            "SELECT uniqExactIfMerge(scans), uniqExactIfMerge(scanners), uniqExactIfMerge(bots), \
             uniqExactIfMerge(heads), uniqExactIfMerge(not_found) \
             FROM qrtag.link_days WHERE link = '{}' FORMAT TSV",
            key(rng.random_range(0..links))
        ))
        .await?;
        totals.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (parts, rows) = parts.trim().split_once('\t').unwrap_or(("?", "?"));
    println!(
        "link_days: {parts} active parts, {rows} rows; asked directly: SELECT 1 p50 {:.2} ms p95 {:.2} ms, a random link's totals p50 {:.2} ms p95 {:.2} ms, with PREWHERE p50 {:.2} ms p95 {:.2} ms",
        quantile(one.clone(), 0.5),
        quantile(one, 0.95),
        quantile(totals.clone(), 0.5),
        quantile(totals, 0.95),
        quantile(prewhere.clone(), 0.5),
        quantile(prewhere, 0.95)
    );
    Ok(())
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn du(path: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(path) {
        for e in entries.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => total += du(&e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

fn main() -> Result<(), Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> Result<(), Error> {
    if !clickhouse::available() {
        return Ok(());
    }
    let rows = env_or("QRTAG_CH_ROWS", 200_000);
    let links = env_or("QRTAG_CH_LINKS", 20_000).max(1);
    let days = env_or("QRTAG_CH_DAYS", 90).max(1) as i64;
    let rounds = env_or("QRTAG_CH_ROUNDS", 200).max(1);
    let embedded_max = env_or("QRTAG_CH_EMBEDDED_ROWS", u64::MAX);
    let gzip = flag("QRTAG_CH_GZIP");
    let console = flag("QRTAG_CH_CONSOLE");
    let parent = std::env::var_os("QRTAG_CH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    std::fs::create_dir_all(&parent)?;
    let dir = tempfile::Builder::new()
        .prefix("clickhouse-scale-")
        .tempdir_in(&parent)?;
    println!(
        "{rows} rows over {links} links over {days} days; {rounds} rounds; in {}",
        dir.path().display()
    );
    println!(
        "load average at the start: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );

    // 1. The store and the log.
    let db = dir.path().join("links.db");
    let t = Instant::now();
    make_store(&db, links).await?;
    println!("{links} links stored in {:.1?}", t.elapsed());
    let log = dir
        .path()
        .join(if gzip { "access.log.gz" } else { "access.log" });
    let end = Utc::now();
    let since = (end - chrono::Duration::days(days))
        .format("%Y-%m-%d")
        .to_string();
    let t = Instant::now();
    let file = BufWriter::with_capacity(1 << 20, File::create(&log)?);
    let bytes = if gzip {
        let mut enc = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
        let bytes = write_log(rows, links, days, end, &mut enc)?;
        enc.finish()?.flush()?;
        bytes
    } else {
        let mut file = file;
        let bytes = write_log(rows, links, days, end, &mut file)?;
        file.flush()?;
        bytes
    };
    let took = t.elapsed();
    println!(
        "log: {:.0} MB of lines ({:.0} bytes a line){} in {:.1?}, {:.0} lines/s",
        mb(bytes),
        bytes as f64 / rows.max(1) as f64,
        if gzip {
            format!(", {:.0} MB gzipped", mb(std::fs::metadata(&log)?.len()))
        } else {
            String::new()
        },
        took,
        rows as f64 / took.as_secs_f64()
    );
    let log_arg = log.to_str().ok_or("a UTF-8 path")?;

    // 2. Loading, against the embedded reader.
    let ch = clickhouse::ClickHouse::start(&dir.path().join("clickhouse")).await;
    let ch_url = ch.url("qrtag");
    qrtag(&db, &["setup-clickhouse", "--clickhouse", &ch_url])?;
    let t = Instant::now();
    let said = qrtag(&db, &["stats", "--load-into", &ch_url, log_arg])?;
    let load_time = t.elapsed();
    let loaded: u64 = said
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("--load-into said: {said}"))?;
    if loaded != rows {
        return Err(format!("{loaded} rows loaded of {rows}: {said}").into());
    }
    let t = Instant::now();
    qrtag(&db, &["stats", "--format", "json", log_arg])?;
    let stats_time = t.elapsed();
    let load_rate = rows as f64 / load_time.as_secs_f64();
    let stats_rate = rows as f64 / stats_time.as_secs_f64();
    println!(
        "stats --load-into: {load_time:.1?}, {load_rate:.0} rows/s; qrtag stats (embedded reader): {stats_time:.1?}, {stats_rate:.0} lines/s; load/stats time {:.2}",
        load_time.as_secs_f64() / stats_time.as_secs_f64()
    );
    let merges = until("ClickHouse's merges", Duration::from_secs(3600), || async {
        ch.query("SELECT count() FROM system.merges")
            .await
            .is_ok_and(|n| n.trim() == "0")
    })
    .await?;
    let ch_pid = pid_of(
        &dir.path()
            .join("clickhouse/config.xml")
            .display()
            .to_string(),
    );
    println!(
        "merges settled {merges:.1?} after the load; ClickHouse data {:.0} MB on disk (log {:.0} MB), its peak memory {:.0} MB",
        mb(du(&dir.path().join("clickhouse/data"))),
        mb(std::fs::metadata(&log)?.len()),
        mb(ch_pid.map_or(0, peak_rss))
    );

    direct(&ch, links).await?;

    // 3. Reading.
    let all = targets();
    let targets: Vec<&Target> = all
        .iter()
        .filter(|t| console || t.door != Door::Console)
        .collect();
    let tokens = targets
        .iter()
        .map(|t| {
            qrtag(
                &db,
                &["api-key", "create", "--name", t.name, "--scope", "read"],
            )
            .map(|s| s.trim().to_owned())
        })
        .collect::<Result<Vec<_>, _>>()?;
    if console {
        qrtag::console::password::set(&SqliteStore::open(&db)?, CONSOLE_PASSWORD).await?;
    }
    // A key of its own for the probes, so they take nothing from the
    // targets' rate.
    let probe_token = qrtag(
        &db,
        &["api-key", "create", "--name", "probe", "--scope", "read"],
    )?;
    let busiest_token = probe_token.trim();
    let console_arg: &[&str] = if console { &["--console"] } else { &[] };
    let own_log = |name: &str| dir.path().join(name).display().to_string();

    let from_ch = Server::spawn(
        &db,
        &[
            &[
                "--scans-from",
                &ch_url,
                "--access-log",
                &own_log("ch-serve.log"),
            ],
            console_arg,
        ]
        .concat(),
    )?;
    // Its closed days rolled up (`clickhouse::rollup`) before anything is
    // timed, so the dashboard reads `day_totals`, as it would after the
    // first round in service.
    let rolled = roll_wait(&ch).await?;
    println!("closed days rolled up by serve --scans-from in {rolled:.1?}");
    // Then the periods' windows (`clickhouse::windows`) the busiest links
    // are ranked from.
    let summed = until(
        "the periods' windows built",
        Duration::from_secs(7200),
        || async {
            ch.query("SELECT count() FROM qrtag.windows FORMAT TSV")
                .await
                .is_ok_and(|n| {
                    n.trim().parse::<usize>().unwrap_or(0)
                        >= qrtag::clickhouse::windows::PERIODS.len()
                })
        },
    )
    .await?;
    println!("periods' windows built {summed:.1?} after that");
    let ch_numbers = numbers(&from_ch, busiest_token, 0, &since).await?;
    let ch_times = time_targets(&from_ch, &targets, &tokens, links, &since, rounds).await?;
    let ch_rss = from_ch.peak_rss();
    drop(from_ch);

    let embedded = if gzip || rows > embedded_max {
        println!(
            "embedded index: skipped ({})",
            if gzip {
                "the log is gzipped"
            } else {
                "above QRTAG_CH_EMBEDDED_ROWS"
            }
        );
        None
    } else {
        let t = Instant::now();
        let index_file = own_log("scan-index");
        let server = Server::spawn(
            &db,
            &[
                &[
                    "--scan-log",
                    log_arg,
                    "--scan-index-file",
                    &index_file,
                    "--access-log",
                    &own_log("index-serve.log"),
                ],
                console_arg,
            ]
            .concat(),
        )?;
        let client = reqwest::Client::new();
        let probe = format!("http://{}/api/v1/links/{}/scans", server.api, key(0));
        let caught_up = until("the index's first pass", Duration::from_secs(7200), || {
            let req = client.get(&probe).bearer_auth(busiest_token).send();
            async move {
                req.await
                    .is_ok_and(|r| r.status() == reqwest::StatusCode::OK)
            }
        })
        .await?;
        println!(
            "embedded index: caught up {:.1?} after the start ({:.1?} in all), peak memory {:.0} MB",
            caught_up,
            t.elapsed(),
            mb(server.peak_rss())
        );
        let said = numbers(&server, busiest_token, 0, &since).await?;
        let times = time_targets(&server, &targets, &tokens, links, &since, rounds).await?;
        let rss = server.peak_rss();
        if server.stderr.lock().is_ok_and(|s| s.contains("panicked")) {
            return Err("the embedded server panicked".into());
        }
        Some((said, times, rss))
    };

    println!(
        "\n{rows} rows, {links} links, {days} days, {rounds} rounds; whole GETs on one kept-alive connection"
    );
    println!("busiest link, ClickHouse: {ch_numbers}");
    if let Some((said, _, _)) = &embedded {
        println!("busiest link, index:      {said}");
    }
    println!(
        "{:<40} {:>16} {:>16} {:>10} {:>10} {:>10}",
        "target", "ClickHouse p50", "ClickHouse p95", "p95/base", "index p50", "index p95"
    );
    let base = ch_times.rows[0].1;
    let index_base = embedded.as_ref().map(|(_, t, _)| t.rows[0].1);
    for (i, t) in targets.iter().enumerate() {
        let (p50, p95) = ch_times.rows[i];
        let index = match (&embedded, index_base) {
            (Some((_, times, _)), Some(b)) => {
                let (ip50, ip95) = times.rows[i];
                format!("{ip50:>7.2} ms {ip95:>7.2} ms ({:.1}x base)", ip95 / b)
            }
            _ => format!("{:>10} {:>10}", "-", "-"),
        };
        let away = match ch_times.away[i] {
            0 => String::new(),
            n => format!(" ({n} of {rounds} from ClickHouse without numbers)"),
        };
        println!(
            "{:<40} {p50:>13.2} ms {p95:>13.2} ms {:>10.1} {index}{away}",
            t.name,
            p95 / base,
        );
    }
    println!(
        "peak memory: serve --scans-from {:.0} MB{}",
        mb(ch_rss),
        embedded
            .as_ref()
            .map_or(String::new(), |(_, _, rss)| format!(
                ", serve with the index {:.0} MB",
                mb(*rss)
            ))
    );
    println!(
        "load average at the end: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    drop(ch);
    Ok(())
}

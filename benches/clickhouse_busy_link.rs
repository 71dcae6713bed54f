//! A very busy link's page from ClickHouse (issue 38, schema version 6):
//! what `clickhouse::link_page::read` costs for one link with SCANS scans
//! over DAYS closed days, before its days are rolled (every day read from
//! the `uniqExact` states, as before version 6) and after (its busy days
//! read from `link_counts`, `clickhouse::busy`), against a quiet link's
//! page and `SELECT 1` in the same run.
//!
//! The rows are written by ClickHouse itself (`INSERT … SELECT … FROM
//! numbers(n)`), with the mix of `clickhouse_scale`: 5% bots, 2% HEAD,
//! 3% 404s, 80% of scans carrying a tracking ID from a pool of two
//! million (so scanners return), three devices, four systems, five
//! countries, a referrer on a seventh, two destinations.
//!
//! `QRTAG_BUSY_SCANS` (default 1,000,000), `QRTAG_BUSY_DAYS` (90),
//! `QRTAG_BUSY_ROUNDS` (20). Needs Debian's clickhouse-server; says so
//! and stops without it.
//!
//!     cargo bench --bench clickhouse_busy_link

#[path = "../tests/support/clickhouse.rs"]
#[allow(clippy::all, dead_code)]
mod clickhouse;
#[path = "support/load.rs"]
mod load;

use std::time::{Duration, Instant};

use chrono::{Days, Utc};
use qrtag::clickhouse::read::DomainScans;
use qrtag::clickhouse::schema::Layout;
use qrtag::clickhouse::{ClickHouseUrl, Client, link_page, rollup, setup};
use qrtag::scan_index::Basis;

type Error = Box<dyn std::error::Error + Send + Sync>;

const DOMAIN: &str = "0x1f.ie";

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// `n` rows of `link` spread over the `days` days before today.
fn rows(link: &str, n: u64, days: u64, first_offset: u64) -> String {
    let start = Utc::now().date_naive() - Days::new(days);
    format!(
        "INSERT INTO qrtag.scans SELECT 'bench', 1, {first_offset} + number, \
         toDateTime('{start} 00:00:00') + intDiv(number * {days} * 86400, {n}) AS t, 0, toDate(t), \
         '10.0.0.1', if(number % 5 = 0, '', concat('trk', toString(cityHash64(number, 7) % 2000000))), \
         'ua', '/{link}', if(number % 33 = 0, 404, 302), \
         if(number % 2 = 0, 'https://example.com/a', 'https://example.com/b'), 0, \
         if(number % 50 = 1, 'HEAD', 'GET'), '', '{link}', \
         if(number % 20 = 3 OR number % 50 = 1 OR number % 33 = 0, 0, 1), 0, if(number % 20 = 3, 1, 0), \
         ['phone', 'desktop', 'tablet'][number % 3 + 1], ['iOS', 'Android', 'Windows', 'macOS'][number % 4 + 1], \
         ['Safari', 'Chrome', 'Firefox'][number % 3 + 1], ['IE', 'GB', 'US', 'FR', 'DE'][number % 5 + 1], \
         '', '', if(number % 7 = 0, 'example.org', ''), '{DOMAIN}' FROM numbers({n})"
    )
}

/// p50 and p95 of `rounds` runs of `f`, in milliseconds.
async fn timed<F, Fut, T>(rounds: u64, mut f: F) -> Result<(f64, f64, T), Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let mut ms = Vec::new();
    let mut last = None;
    for _ in 0..rounds {
        let t = Instant::now();
        last = Some(f().await?);
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let last = last.ok_or("no round")?;
    Ok((
        load::quantile(ms.clone(), 0.5),
        load::quantile(ms, 0.95),
        last,
    ))
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
    let (scans, days, rounds) = (
        env("QRTAG_BUSY_SCANS", 1_000_000),
        env("QRTAG_BUSY_DAYS", 90),
        env("QRTAG_BUSY_ROUNDS", 20).max(1),
    );
    let dir = tempfile::tempdir()?;
    let ch = clickhouse::ClickHouse::start(&dir.path().join("ch")).await;
    let client = Client::new(
        ClickHouseUrl::parse(&ch.url("qrtag"))?,
        Duration::from_secs(600),
    );
    setup::setup(&client, None, &Layout::Single, DOMAIN).await?;
    let t = Instant::now();
    ch.query(&rows("busy1", scans, days, 0)).await?;
    ch.query(&rows("quiet", 3 * days, days, scans)).await?;
    println!(
        "{scans} scans of one link over {days} days written in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let from = DomainScans {
        client: client.clone(),
        domain: DOMAIN.to_owned(),
        basis: Basis {
            time_zone: chrono_tz::UTC,
            geoip: None,
        },
    };
    let today = Utc::now().date_naive();
    let since = today - Days::new(364);
    let page = |key: &'static str| {
        let from = from.clone();
        move || {
            let from = from.clone();
            async move {
                link_page::read(&from, key, since, today)
                    .await
                    .map_err(Error::from)
            }
        }
    };
    let one = || async { ch.query("SELECT 1").await.map_err(Error::from) };
    let mut table = Vec::new();
    let (b50, b95, _) = timed(rounds, one).await?;
    table.push(("`SELECT 1`, before the roll", b50, b95, b95));
    let (p50, p95, before) = timed(rounds, page("busy1")).await?;
    table.push(("busy link's page, every day from the states", p50, p95, b95));
    let (q50, q95, _) = timed(rounds, page("quiet")).await?;
    table.push(("quiet link's page", q50, q95, b95));

    let t = Instant::now();
    let rolled = rollup::roll_due(&client, DOMAIN, Utc::now()).await?;
    println!("{rolled} days rolled in {:.1} s", t.elapsed().as_secs_f64());
    let (a50, a95, _) = timed(rounds, one).await?;
    table.push(("`SELECT 1`, after the roll", a50, a95, a95));
    let (p50, p95, after) = timed(rounds, page("busy1")).await?;
    table.push((
        "busy link's page, busy days from `link_counts`",
        p50,
        p95,
        a95,
    ));
    let (q50, q95, _) = timed(rounds, page("quiet")).await?;
    table.push(("quiet link's page", q50, q95, a95));
    let same = before.numbers.scans == after.numbers.scans
        && before.numbers.bots == after.numbers.bots
        && before.numbers.daily == after.numbers.daily
        && before.shares == after.shares
        && before.destinations == after.destinations;
    let exact = ch
        .query(
            "SELECT uniqExactIf(tracking, scan = 1 AND tracking != '') FROM qrtag.scans \
             WHERE link = 'busy1' FORMAT TSV",
        )
        .await?;
    let exact: f64 = exact.trim().parse()?;
    println!(
        "scans {}, unique scanners {} (exactly {exact}: {:+.2}%), the same numbers before and \
         after the roll: {same}",
        after.numbers.scans,
        after.numbers.unique_scanners,
        (after.numbers.unique_scanners as f64 - exact) / exact * 100.0
    );
    println!("| what | p50 ms | p95 ms | p95 / `SELECT 1` p95 |");
    println!("|---|---|---|---|");
    for (what, p50, p95, base) in table {
        println!("| {what} | {p50:.1} | {p95:.1} | {:.1} |", p95 / base);
    }
    if !same {
        return Err("the page's numbers changed with the roll".into());
    }
    Ok(())
}

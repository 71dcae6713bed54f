//! Aggregation throughput on a generated in-memory log, against a baseline that
//! only splits the same bytes into lines and counts spaces, so the figure can be
//! read as a ratio independent of the machine.
//!
//! `cargo bench --bench stats -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use chrono::{DateTime, Duration, Utc};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use flate2::Compression;
use flate2::write::GzEncoder;
use qrtag::access_log::format::{Record, parse_line_bytes, write_record};
use qrtag::stats::aggregate::{Aggregator, Filter, Period};
use qrtag::stats::breakdown::{Breakdowns, Wanted};
use qrtag::stats::dimensions::device::Parser;
use qrtag::stats::dimensions::place::GeoDb;
use qrtag::stats::dimensions::{Deriver, Dimension};
use qrtag::stats::{feed, read};
use qrtag::tracking::id::TrackingId;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const LINES: usize = 200_000;

const BROWSERS: &[&str] = &[
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.6045.163 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 12; moto g(60)) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:121.0) Gecko/20100101 Firefox/121.0",
];

const BOTS: &[&str] = &[
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
    "curl/8.5.0",
];

/// A log shaped like the service's: mostly phone scans of a few popular keys, some
/// repeat scanners, bots, HEAD checks and 404 probes, about 240 bytes a line.
fn generate_log(lines: usize) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(42);
    let keys: Vec<String> = (0..500)
        .map(|i| {
            let mut k = [b'0'; 5];
            let mut n: u32 = 916_132_831 / 500 * i + 7;
            for b in k.iter_mut().rev() {
                *b = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                    [(n % 62) as usize];
                n /= 62;
            }
            format!("/{}", String::from_utf8_lossy(&k))
        })
        .collect();
    let ids: Vec<TrackingId> = (0..20_000)
        .map(|i| TrackingId::generate_at(1_790_000_000_000 + i * 1000, &mut rng))
        .collect();
    let mut time: DateTime<Utc> = DateTime::from_timestamp(1_793_491_200, 0).unwrap_or_default();
    let mut out = Vec::with_capacity(lines * 260);
    let mut target = Vec::new();
    for _ in 0..lines {
        time += Duration::milliseconds(rng.random_range(0..30_000));
        // Popular keys much more often than the rest.
        let key = &keys[(rng.random_range(0.0f64..1.0).powi(3) * keys.len() as f64) as usize];
        let roll = rng.random_range(0..100);
        let bot = roll < 6;
        let ua = if bot {
            BOTS[rng.random_range(0..BOTS.len())]
        } else {
            BROWSERS[rng.random_range(0..BROWSERS.len())]
        };
        let (status, location, method) = match roll {
            6..=8 => (404, None, "GET"),
            9..=10 => (302, Some("https://example.com/menu?table=12"), "HEAD"),
            _ => (302, Some("https://example.com/menu?table=12"), "GET"),
        };
        target.clear();
        if status == 404 {
            write!(target, "/wp-login{}.php", rng.random_range(0..1000)).ok();
        } else {
            target.extend_from_slice(key.as_bytes());
            if rng.random_bool(0.2) {
                target.extend_from_slice(b"?utm_source=qr");
            }
        }
        let tracking = (!bot && rng.random_bool(0.8)).then(|| &ids[rng.random_range(0..ids.len())]);
        let rec = Record {
            time,
            client_ip: Some(IpAddr::V4(Ipv4Addr::from(rng.random::<u32>()))),
            tracking,
            user_agent: Some(ua.as_bytes()),
            target: &target,
            status,
            location,
            fallback: false,
            method,
            referer: None,
        };
        write_record(&rec, &mut out);
    }
    out
}

/// Lines of an in-memory log, plain or gzip, through the reader `stats` uses.
fn each_line(data: &[u8], f: impl FnMut(u64, Result<&[u8], read::LineError>)) {
    if let Ok(mut r) = read::decompressing(data) {
        let _ = read::for_each_line(&mut *r, f);
    }
}

fn aggregate(data: &[u8], agg: &mut Aggregator) {
    if let Ok(mut r) = read::decompressing(data) {
        let _ = feed(&mut *r, Path::new("bench"), agg);
    }
}

fn bench(c: &mut Criterion) {
    if let Ok(which) = std::env::var("QRTAG_STATS_ONCE") {
        return once(&which);
    }
    if let Ok(which) = std::env::var("QRTAG_STATS_RATIO") {
        return ratios(&which);
    }
    let log = generate_log(LINES);
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&log).ok();
    let gz = gz.finish().unwrap_or_default();
    eprintln!(
        "log: {LINES} lines, {} bytes ({} per line), gzip {} bytes",
        log.len(),
        log.len() / LINES,
        gz.len()
    );

    let mut g = c.benchmark_group("stats");
    g.throughput(Throughput::Elements(LINES as u64));
    g.bench_function("baseline: read lines, count spaces", |b| {
        b.iter(|| {
            let mut spaces = 0usize;
            each_line(black_box(&log), |_, line| {
                spaces += line.map_or(0, |l| l.iter().filter(|&&b| b == b' ').count());
            });
            spaces
        })
    });
    g.bench_function("read + parse", |b| {
        b.iter(|| {
            let mut ok = 0usize;
            each_line(black_box(&log), |_, line| {
                ok += usize::from(line.is_ok_and(|l| parse_line_bytes(l).is_ok()));
            });
            ok
        })
    });
    // Aggregator::new compiles the bot patterns: setup, outside the timing.
    g.bench_function("read + parse + aggregate", |b| {
        b.iter_batched_ref(
            || Aggregator::new(Filter::default()),
            |agg| aggregate(black_box(&log), agg),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("read + parse + aggregate --by week", |b| {
        b.iter_batched_ref(
            || {
                Aggregator::new(Filter {
                    series: Some(Period::Week),
                    ..Filter::default()
                })
            },
            |agg| aggregate(black_box(&log), agg),
            BatchSize::LargeInput,
        )
    });
    // Breakdowns over the same lines: each line's device (a User-Agent
    // parsed once, then a cache hit) or country (a lookup in the test
    // database per new address; every address here is new, the worst case).
    // Compiling the uap-core rules (about 0.25 s, once a run) is setup.
    for dim in [Dimension::Device, Dimension::Country] {
        let name = format!("read + parse + aggregate --by {dim}");
        g.bench_function(name.as_str(), |b| {
            b.iter_batched_ref(
                || with_breakdown(dim),
                |agg| aggregate(black_box(&log), agg),
                BatchSize::LargeInput,
            )
        });
    }
    g.bench_function("gunzip + read + parse + aggregate", |b| {
        b.iter_batched_ref(
            || Aggregator::new(Filter::default()),
            |agg| aggregate(black_box(&gz), agg),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// One aggregation of a generated log and nothing else, for an instruction
/// profile whose counts do not depend on the machine's load:
///
/// `QRTAG_STATS_ONCE=country QRTAG_STATS_LINES=100000 valgrind --tool=callgrind
/// --toggle-collect='qrtag::stats::feed' target/release/deps/stats-HASH --bench`
///
/// `which` is `plain` or a dimension's name (`device`, `country`, …).
fn once(which: &str) {
    let lines = std::env::var("QRTAG_STATS_LINES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(LINES);
    let log = generate_log(lines);
    let mut agg = match Dimension::ALL.iter().find(|d| d.name() == which) {
        Some(&dim) => with_breakdown(dim),
        None => Aggregator::new(Filter::default()),
    };
    aggregate(&log, &mut agg);
    let report = agg.finish();
    eprintln!(
        "{which}: {} lines, {} scans, {} breakdown rows",
        report.lines_read,
        report.total.scans,
        report.breakdowns.first().map_or(0, |b| b.rows.len())
    );
}

/// Throughput of breakdowns against plain aggregation, measured in turns
/// so that a machine whose load drifts over minutes (criterion runs one
/// benchmark after the other) slows both alike:
///
/// `QRTAG_STATS_RATIO=device,country cargo bench --bench stats`
///
/// Each of `QRTAG_STATS_ROUNDS` rounds (15) aggregates the log plainly and
/// once per dimension named, right after one another (in the reverse
/// order every other round); a round's ratio is plain's time over the
/// breakdown's, and the figure is the median of the rounds' ratios: on a
/// shared machine the fastest times of the two need not come from equally
/// quiet moments, while a round's two runs share theirs.
fn ratios(which: &str) {
    let dims: Vec<Dimension> = which
        .split(',')
        .filter_map(|w| {
            Dimension::ALL
                .iter()
                .copied()
                .find(|d| d.name() == w.trim())
        })
        .collect();
    let rounds: usize = std::env::var("QRTAG_STATS_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(15)
        .max(1);
    let log = generate_log(LINES);
    let time = |mut agg: Aggregator| {
        let start = std::time::Instant::now();
        aggregate(black_box(&log), &mut agg);
        let took = start.elapsed();
        drop(black_box(agg));
        took.as_secs_f64()
    };
    let mut plain_best = f64::MAX;
    let mut best = vec![f64::MAX; dims.len()];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); dims.len()];
    for round in 0..rounds {
        for (i, &dim) in dims.iter().enumerate() {
            let aggs = (Aggregator::new(Filter::default()), with_breakdown(dim));
            let (plain, by) = if round % 2 == 0 {
                let plain = time(aggs.0);
                (plain, time(aggs.1))
            } else {
                let by = time(aggs.1);
                (time(aggs.0), by)
            };
            plain_best = plain_best.min(plain);
            best[i] = best[i].min(by);
            ratios[i].push(plain / by);
        }
    }
    eprintln!(
        "plain: fastest {:.1} ms for {LINES} lines ({rounds} rounds)",
        plain_best * 1e3
    );
    for ((r, b), dim) in ratios.iter_mut().zip(&best).zip(&dims) {
        r.sort_by(f64::total_cmp);
        eprintln!(
            "--by {dim}: fastest {:.1} ms; throughput x plain: median {:.3} (quartiles {:.3} to {:.3})",
            b * 1e3,
            r[r.len() / 2],
            r[r.len() / 4],
            r[r.len() * 3 / 4]
        );
    }
}

/// An aggregator that also breaks the scans down by `dim`.
fn with_breakdown(dim: Dimension) -> Aggregator {
    let tz = chrono_tz::Tz::UTC;
    let parser = dim.is_device().then(|| Parser::new().expect("rules"));
    let geo = dim.is_place().then(|| {
        GeoDb::open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/geoip/test.mmdb"))
            .expect("test database")
    });
    let wanted = Wanted {
        dimensions: vec![dim],
        bots: false,
        time_zone: tz,
    };
    Aggregator::new(Filter::default()).with_breakdowns(Breakdowns::new(
        wanted,
        Deriver::new(tz, parser, geo),
        false,
    ))
}

criterion_group! {
    name = benches;
    // Figures only: criterion is built without its plotters backend
    // (Cargo.toml), and a gnuplot found on the machine would only slow runs.
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);

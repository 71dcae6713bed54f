use super::*;
use crate::access_log::format::{LogTime, parse_line};
use crate::scan_index::checkpoint;
use crate::stats::aggregate::{Aggregator, Filter, Period, Report};
use crate::stats::attribute::LinkKeys;
use proptest::prelude::*;
use std::path::Path;

const IPHONE: &str =
    "Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29";
const GOOGLEBOT: &str = "Mozilla%2F5.0%20%28compatible%3B%20Googlebot%2F2.1%3B%20%2Bhttp%3A%2F%2Fwww.google.com%2Fbot.html%29";
const IDS: [&str; 3] = ["0Vh3kY2s4fLq9ZxA01b", "0Vh3kY2s4fLq9ZxA01c", "-"];
const UAS: [&str; 3] = [IPHONE, GOOGLEBOT, "-"];
const TARGETS: [&str; 8] = [
    "/H83if",
    "/H83if?utm=qr",
    "/zzzzz",
    "/docs/api",
    "/docs/api/v1?x=1",
    "/",
    "/a%20b",
    "/wp-login.php",
];
const STATUSES: [u16; 5] = [302, 301, 404, 200, 400];
const METHODS: [&str; 3] = ["GET", "HEAD", "POST"];

/// A line from the pools above, on one of four days, times out of order;
/// one in twenty is malformed.
fn any_line() -> impl Strategy<Value = String> {
    (
        0usize..4,
        0u32..86_400,
        0usize..IDS.len(),
        0usize..UAS.len(),
        0usize..TARGETS.len(),
        0usize..STATUSES.len(),
        0usize..METHODS.len(),
        0u8..20,
    )
        .prop_map(|(day, secs, id, ua, target, status, method, bad)| {
            if bad == 0 {
                return "20261121 not a line".to_owned();
            }
            let status = STATUSES[status];
            let location = if (300..400).contains(&status) {
                "https://example.com/"
            } else {
                "-"
            };
            format!(
                "202611{:02}{:02}{:02}{:02}.0 192.0.2.1 {} {} {} {status} {location} {} -",
                20 + day,
                secs / 3600,
                secs / 60 % 60,
                secs % 60,
                IDS[id],
                UAS[ua],
                TARGETS[target],
                METHODS[method],
            )
        })
}

fn report(lines: &[String], filter: Filter) -> Report {
    report_with(lines, filter, &LinkKeys::default())
}

/// `qrtag stats` with the store's links.
fn report_with(lines: &[String], filter: Filter, links: &LinkKeys) -> Report {
    let mut agg = Aggregator::new(filter).with_links(links.clone());
    for (n, l) in lines.iter().enumerate() {
        match parse_line(l) {
            Ok(p) => agg.add(&p),
            Err(e) => agg.add_malformed(Path::new("t"), n as u64 + 1, &e),
        }
    }
    agg.finish()
}

fn feed(state: &mut IndexState, bots: &mut BotFilter, lines: &[String]) {
    feed_with(state, bots, lines, &LinkKeys::default());
}

/// As the follower counts with the server's links.
fn feed_with(state: &mut IndexState, bots: &mut BotFilter, lines: &[String], links: &LinkKeys) {
    for l in lines {
        match parse_line(l) {
            Ok(p) => state.add_as(&p, links.link_key(p.key()), bots),
            Err(_) => state.add_malformed(),
        }
    }
}

/// As a restart sees it: the state through a checkpoint, a new bot cache.
fn restart(state: &IndexState) -> IndexState {
    let mut bytes = Vec::new();
    checkpoint::encode(state, &[], "access.log", &mut bytes).expect("encode");
    let basis = state.breakdown_basis().cloned();
    checkpoint::decode(&bytes[..], bytes.len() as u64, "access.log", basis.as_ref())
        .expect("decode")
        .state
}

fn date(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").expect("date")
}

/// Everything the index answers, against `qrtag stats` over the same lines:
/// the totals and days, and every key that can be a link; the other paths
/// only together.
fn assert_agrees(state: &IndexState, lines: &[String], links: &LinkKeys) {
    let report = |lines: &[String], filter: Filter| report_with(lines, filter, links);
    let r = report(
        lines,
        Filter {
            series: Some(Period::Day),
            ..Filter::default()
        },
    );
    assert_eq!(state.lines_read(), r.lines_read);
    assert_eq!(state.malformed(), r.malformed);
    assert_eq!(state.totals(), r.total);
    let (links, others): (Vec<_>, Vec<_>) = r.keys.iter().partition(|k| LinkKey::is_valid(&k.key));
    assert_eq!(state.key_count(), links.len());
    let mut other = KeyStats::default();
    for k in &others {
        aggregate::add_into(&mut other, &k.stats);
        assert_eq!(
            state.key(&k.key),
            KeyStats::default(),
            "{} has no key",
            k.key
        );
    }
    assert_eq!(state.other_paths(), other);
    let (first, last) = (date("2026-11-01"), date("2026-11-30"));
    for k in &links {
        assert_eq!(state.key(&k.key), k.stats, "key {}", k.key);
        let series: Vec<DayScans> = k
            .series
            .iter()
            .map(|p| DayScans {
                day: p.start,
                scans: p.scans,
            })
            .collect();
        assert_eq!(state.key_days(&k.key, first, last), series);
        for since in ["2026-11-20", "2026-11-22", "2026-11-23", "2026-11-24"] {
            let since = date(since);
            let want: u64 = series
                .iter()
                .filter(|d| d.day >= since)
                .map(|d| d.scans)
                .sum();
            assert_eq!(state.scans_since(&k.key, since), want);
        }
    }
    // Per day, against `qrtag stats --since DAY --until DAY`.
    for day in 20..24 {
        let bound = |t: &str| LogTime::parse(&format!("202611{day}{t}")).expect("time");
        let want = report(
            lines,
            Filter {
                since: Some(bound("000000.0")),
                until: Some(bound("235959.9")),
                ..Filter::default()
            },
        )
        .total;
        let d = date(&format!("2026-11-{day}"));
        let got = state.daily_totals(d, d);
        let got = got.first().copied().unwrap_or(DayTotals {
            day: d,
            scans: 0,
            requests: 0,
            head: 0,
            bot: 0,
            not_found: 0,
            fallback: 0,
        });
        assert_eq!(
            (
                got.scans,
                got.requests,
                got.head,
                got.bot,
                got.not_found,
                got.fallback
            ),
            (
                want.scans,
                want.requests,
                want.head,
                want.bot,
                want.not_found,
                want.fallback
            ),
            "day {day}"
        );
    }
    // The busiest since the 22nd, as the report's series rank them.
    let since = date("2026-11-22");
    let mut want: Vec<TopKey> = links
        .iter()
        .map(|k| TopKey {
            key: k.key.clone(),
            scans: k
                .series
                .iter()
                .filter(|p| p.start >= since)
                .map(|p| p.scans)
                .sum(),
        })
        .filter(|t| t.scans > 0)
        .collect();
    want.sort_by(|a, b| b.scans.cmp(&a.scans).then_with(|| a.key.cmp(&b.key)));
    want.truncate(3);
    assert_eq!(state.top_keys(3, since), want);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Split anywhere, each part after a restart from a checkpoint: the
    /// index still says what `qrtag stats` says over all the lines, both
    /// counting each line under the same links (none, or some of the
    /// hierarchical ones).
    #[test]
    fn index_agrees_with_stats_for_any_split(
        lines in prop::collection::vec(any_line(), 0..120),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
        links in prop::sample::subsequence(vec!["docs", "docs/api", "H83if"], 0..=3),
    ) {
        let links: LinkKeys = links.into_iter().collect();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(lines.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.push(lines.len());
        let mut state = IndexState::new();
        let mut start = 0;
        for cut in cuts {
            state = restart(&state);
            feed_with(&mut state, &mut BotFilter::new(), &lines[start..cut], &links);
            start = cut;
        }
        assert_agrees(&state, &lines, &links);
    }
}

/// Past the cap, a new key's 404s go to the other paths; a key redirected
/// at its first request always gets its own counts, and the totals stay
/// exact.
#[test]
fn never_redirected_keys_are_capped_and_links_are_not() {
    let line = |key: &str, status: u16| {
        let location = if status == 302 {
            "https://e.example/"
        } else {
            "-"
        };
        format!(
            "20261121100000.0 192.0.2.1 0Vh3kY2s4fLq9ZxA01b {IPHONE} /{key} {status} {location} GET -"
        )
    };
    let lines: Vec<String> = [
        ("probe1", 404),
        ("probe2", 404),
        ("probe3", 404),
        ("probe3", 404),
        ("link1", 302),
        ("probe1", 302),
        ("link1", 404),
        ("probe4", 404),
        ("link2", 302),
        ("probe3", 302),
        ("wp-login.php", 404),
    ]
    .iter()
    .map(|&(k, s)| line(k, s))
    .collect();
    let mut state = IndexState::new().with_probe_cap(2);
    feed(&mut state, &mut BotFilter::new(), &lines);
    let r = report(&lines, Filter::default());
    assert_eq!(state.totals(), r.total);
    let want = |key: &str| {
        r.keys
            .iter()
            .find(|k| k.key == key)
            .map(|k| k.stats)
            .expect("in the report")
    };
    // probe1 (under the cap, later a link), probe4 (a slot freed by
    // probe1's redirect) and the links are whole.
    for key in ["probe1", "probe2", "probe4", "link1", "link2"] {
        assert_eq!(state.key(key), want(key), "{key}");
    }
    // probe3's two 404s came past the cap: only its redirect is its own.
    assert_eq!(state.key("probe3").requests, 1);
    assert_eq!(state.folded_lines(), 2);
    assert_eq!(state.other_paths().requests, 3);
    assert_eq!(state.key_count(), 6);
    // A restart keeps the count of never-redirected keys (probe2, probe4).
    let mut state = restart(&state).with_probe_cap(2);
    feed(&mut state, &mut BotFilter::new(), &[line("probe5", 404)]);
    assert_eq!(state.key("probe5"), KeyStats::default());
    feed(&mut state, &mut BotFilter::new(), &[line("link3", 302)]);
    assert_eq!(state.key("link3").scans, 1);
}

/// A tracking ID of its own for each `n`: 19 base-62 characters.
fn tracking_id(n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut tail = [b'0'; 11];
    let mut rest = n;
    for c in tail.iter_mut().rev() {
        *c = DIGITS[(rest % 62) as usize];
        rest /= 62;
    }
    format!("0Vh3kY2s{}", std::str::from_utf8(&tail).expect("ASCII"))
}

/// Feeds `from..to` scans of `/H83if`, each by a new scanner (a client that
/// drops its cookie every time), and one scan of `/other` by the first.
fn cookieless_scans(state: &mut IndexState, bots: &mut BotFilter, from: u64, to: u64) {
    for n in from..to {
        let line = format!(
            "20261121100000.0 192.0.2.1 {} {IPHONE} /H83if 302 https://example.com/ GET -",
            tracking_id(n)
        );
        let line = parse_line(&line).expect("line");
        state.add(&line, bots);
    }
}

fn checkpoint_bytes(state: &IndexState) -> usize {
    let mut bytes = Vec::new();
    checkpoint::encode(state, &[], "access.log", &mut bytes).expect("encode");
    bytes.len()
}

/// Issue 30: two million cookie-less scans of one link held hundreds of
/// megabytes. The second million must add (next to) nothing to the index
/// or its checkpoint, and the unique scanners, of the link and in total,
/// must be within four standard errors of the sketch of the truth.
#[test]
fn a_million_new_scanners_cost_no_more_memory_than_the_first() {
    const MILLION: u64 = 1_000_000;
    let mut state = IndexState::new();
    let mut bots = BotFilter::new();
    cookieless_scans(&mut state, &mut bots, 0, 10);
    let line = format!(
        "20261121100000.0 192.0.2.1 {} {IPHONE} /other 302 https://example.com/ GET -",
        tracking_id(0)
    );
    let line = parse_line(&line).expect("line");
    state.add(&line, &mut bots);
    assert_eq!(state.key("H83if").unique_scanners, 10, "exact while few");
    assert_eq!(state.key("other").unique_scanners, 1);
    cookieless_scans(&mut state, &mut bots, 10, MILLION);
    let (bytes_1m, file_1m) = (state.approx_bytes(), checkpoint_bytes(&state));
    cookieless_scans(&mut state, &mut bots, MILLION, 2 * MILLION);
    let (bytes_2m, file_2m) = (state.approx_bytes(), checkpoint_bytes(&state));
    let per_scan = |a: usize, b: usize| (b as f64 - a as f64) / MILLION as f64;
    eprintln!(
        "the second million scans: {:.3} bytes of tables and {:.3} of checkpoint a scan; \
         after 2M: {bytes_2m} bytes of tables, a checkpoint of {file_2m}",
        per_scan(bytes_1m, bytes_2m),
        per_scan(file_1m, file_2m),
    );
    assert!(
        bytes_2m <= bytes_1m + 64 * 1024 && bytes_2m < 4 << 20,
        "tables grew from {bytes_1m} to {bytes_2m} bytes over a million scans"
    );
    assert!(
        file_2m <= file_1m + 4096 && file_2m < 2 << 20,
        "the checkpoint grew from {file_1m} to {file_2m} bytes over a million scans"
    );
    let within = |got: u64, want: u64| {
        let error = (got as f64 - want as f64).abs() / want as f64 * 100.0;
        error < 4.0 * crate::scan_index::sketch::STANDARD_ERROR_PERCENT
    };
    let key = state.key("H83if");
    assert_eq!(key.scans, 2 * MILLION);
    assert!(
        within(key.unique_scanners, 2 * MILLION),
        "{}",
        key.unique_scanners
    );
    assert!(within(state.totals().unique_scanners, 2 * MILLION));
    assert_eq!(state.key("other").unique_scanners, 1, "still exact");
    // The sketches through a checkpoint: the same numbers.
    let back = restart(&state);
    assert_eq!(back.key("H83if"), key);
    assert_eq!(back.totals(), state.totals());
    // A scanner seen before adds nothing; one counted exactly neither.
    let mut again = back.clone();
    cookieless_scans(&mut again, &mut bots, 0, 20_000);
    assert_eq!(again.key("H83if").unique_scanners, key.unique_scanners);
}

#[test]
fn an_unknown_key_is_zeros() {
    let state = IndexState::new();
    assert_eq!(state.key("nope"), KeyStats::default());
    assert_eq!(state.scans_since("nope", date("2026-01-01")), 0);
    assert!(
        state
            .key_days("nope", date("2026-01-01"), date("2026-12-31"))
            .is_empty()
    );
    assert!(state.top_keys(10, date("2026-01-01")).is_empty());
}

#[test]
fn top_keys_breaks_ties_by_key_and_stops_at_n() {
    let mut state = IndexState::new();
    let mut bots = BotFilter::new();
    let scan = |key: &str| {
        format!("20261121100000.0 192.0.2.1 - {IPHONE} /{key} 302 https://e.example/ GET -")
    };
    let lines: Vec<String> = ["b", "a", "c", "a", "c", "d"]
        .iter()
        .map(|k| scan(k))
        .collect();
    feed(&mut state, &mut bots, &lines);
    let top = state.top_keys(3, date("2026-11-21"));
    let names: Vec<(&str, u64)> = top.iter().map(|t| (t.key.as_str(), t.scans)).collect();
    assert_eq!(names, [("a", 2), ("c", 2), ("b", 1)]);
    assert!(state.top_keys(3, date("2026-11-22")).is_empty());
    assert!(state.top_keys(0, date("2026-11-21")).is_empty());
}

#[test]
fn days_arriving_out_of_order_stay_sorted() {
    let mut days = Vec::new();
    for d in [20261121, 20261123, 20261122, 20261120, 20261123, 20261122] {
        bump_day(&mut days, d);
    }
    let got: Vec<(u32, u32)> = days.iter().map(|d| (d.day, d.scans)).collect();
    assert_eq!(
        got,
        [(20261120, 1), (20261121, 1), (20261122, 2), (20261123, 2)]
    );
}

#[test]
fn day_codes_round_trip() {
    let d = date("2026-02-28");
    assert_eq!(day_code(d), 20260228);
    assert_eq!(day_date(day_code(d)), Some(d));
    assert_eq!(day_date(20260230), None);
}

const TOP_KEYS: [&str; 12] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"];

/// A line of one of [`TOP_KEYS`], the first ones far more often (the least
/// of three draws), on one of six days; mostly scans, some not.
fn skewed_line() -> impl Strategy<Value = String> {
    (
        (0usize..12, 0usize..12, 0usize..12),
        0u32..6,
        0u32..86_400,
        0u8..10,
    )
        .prop_map(|((x, y, z), day, secs, kind)| {
            let key = TOP_KEYS[x.min(y).min(z)];
            let (ua, status, location, method) = match kind {
                0 => (GOOGLEBOT, 302, "https://e.example/", "GET"),
                1 => (IPHONE, 302, "https://e.example/", "HEAD"),
                2 => (IPHONE, 404, "-", "GET"),
                _ => (IPHONE, 302, "https://e.example/", "GET"),
            };
            format!(
                "202611{:02}{:02}{:02}{:02}.0 192.0.2.1 - {ua} /{key} {status} {location} {method} -",
                20 + day,
                secs / 3600,
                secs / 60 % 60,
                secs % 60,
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The buckets change how many keys `top_keys` looks at, never what it
    /// answers: the same keys, counts and order (ties by key) as a pass over
    /// every key, for any `n` and any day, before and after a restart.
    #[test]
    fn top_keys_by_buckets_equals_a_full_scan(
        lines in prop::collection::vec(skewed_line(), 0..400),
        cut in any::<prop::sample::Index>(),
    ) {
        let cut = cut.index(lines.len() + 1);
        let mut state = IndexState::new();
        feed(&mut state, &mut BotFilter::new(), &lines[..cut]);
        state = restart(&state);
        prop_assert!(state.buckets_consistent());
        feed(&mut state, &mut BotFilter::new(), &lines[cut..]);
        prop_assert!(state.buckets_consistent());
        for day in 19..=27 {
            let since = date(&format!("2026-11-{day}"));
            for n in 0..=13 {
                prop_assert_eq!(
                    state.top_keys(n, since),
                    state.top_keys_full_scan(n, since),
                    "n {} since {}", n, since
                );
            }
        }
    }
}

mod breakdowns {
    //! The breakdowns against `qrtag stats --by` over the same lines.

    use super::*;
    use crate::scan_index::breakdowns::Basis;
    use crate::stats::breakdown::{Breakdowns, Wanted};
    use crate::stats::dimensions::place::GeoDb;
    use crate::stats::dimensions::{Deriver, Dimension, device::Parser};

    const ANDROID: &str = "Mozilla%2F5.0%20%28Linux%3B%20Android%2014%3B%20Pixel%208%29%20AppleWebKit%2F537.36%20%28KHTML%2C%20like%20Gecko%29%20Chrome%2F120.0.0.0%20Mobile%20Safari%2F537.36";
    const FIREFOX: &str = "Mozilla%2F5.0%20%28X11%3B%20Linux%20x86_64%3B%20rv%3A128.0%29%20Gecko%2F20100101%20Firefox%2F128.0";
    const AGENTS: [&str; 5] = [IPHONE, ANDROID, FIREFOX, GOOGLEBOT, "-"];
    const ADDRESSES: [&str; 6] = [
        "203.0.113.7",
        "198.51.100.9",
        "192.0.2.1",
        "2001:db8:1::5",
        "2001:db8:2::9",
        "-",
    ];
    const REFERERS: [&str; 3] = [
        "-",
        "https%3A%2F%2Fwww.google.com%2Fsearch%3Fq%3Dx",
        "https%3A%2F%2Fexample.org%2Fposter",
    ];
    const TARGETS: [&str; 5] = [
        "/H83if",
        "/H83if?utm=qr",
        "/docs/api/v1",
        "/zzzzz",
        "/x.php",
    ];

    fn tz() -> chrono_tz::Tz {
        chrono_tz::America::New_York
    }

    fn geo_path() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/geoip/test.mmdb")
    }

    /// The rules compile in a quarter of a second: once for every case.
    fn deriver() -> Deriver {
        static INPUTS: std::sync::OnceLock<(Parser, GeoDb)> = std::sync::OnceLock::new();
        let (parser, geo) = INPUTS.get_or_init(|| {
            (
                Parser::new().expect("rules"),
                GeoDb::open(&geo_path()).expect("the test database"),
            )
        });
        Deriver::new(tz(), Some(parser.clone()), Some(geo.clone()))
    }

    fn basis() -> Basis {
        Basis {
            time_zone: tz(),
            geoip: Some(geo_path().to_string_lossy().into_owned()),
        }
    }

    fn any_scan_line() -> impl Strategy<Value = String> {
        (
            (0usize..4, 0u32..86_400),
            0usize..IDS.len(),
            0usize..AGENTS.len(),
            0usize..ADDRESSES.len(),
            0usize..REFERERS.len(),
            0usize..TARGETS.len(),
            prop::sample::select(vec![302u16, 302, 404, 301]),
            prop::sample::select(vec!["GET", "GET", "HEAD"]),
            // Issue 34: an A/B split's two destinations and a fallback.
            prop::sample::select(vec![
                "https://example.com/",
                "https://example.com/b",
                "~https://example.com/gone",
            ]),
        )
            .prop_map(
                |((day, secs), id, ua, ip, referer, target, status, method, sent)| {
                    let location = if status == 404 { "-" } else { sent };
                    format!(
                        "202611{:02}{:02}{:02}{:02}.0 {} {} {} {} {status} {location} {method} {}",
                        20 + day,
                        secs / 3600,
                        secs / 60 % 60,
                        secs % 60,
                        ADDRESSES[ip],
                        IDS[id],
                        AGENTS[ua],
                        TARGETS[target],
                        REFERERS[referer],
                    )
                },
            )
    }

    /// `qrtag stats --by device,…,weekday` with `filter`.
    fn stats_by(lines: &[String], filter: Filter, links: &LinkKeys) -> Report {
        let wanted = Wanted {
            dimensions: Dimension::ALL.to_vec(),
            bots: false,
            time_zone: tz(),
        };
        let mut agg = Aggregator::new(filter)
            .with_links(links.clone())
            .with_breakdowns(Breakdowns::new(wanted, deriver(), true));
        for l in lines {
            match parse_line(l) {
                Ok(p) => agg.add(&p),
                Err(e) => agg.add_malformed(Path::new("t"), 1, &e),
            }
        }
        agg.finish()
    }

    /// Every row of every breakdown and the heat map, as the index has them
    /// and as the report does.
    fn assert_same(got: &crate::scan_index::Shares, r: &Report, what: &str) {
        for b in &r.breakdowns {
            let want: Vec<(String, u64)> = b
                .rows
                .iter()
                .filter(|row| row.scans > 0)
                .map(|row| (row.value.clone(), row.scans))
                .collect();
            let have: Vec<(String, u64)> = match b.dimension {
                Dimension::Hour => (0..24)
                    .map(|h| {
                        let n = got.heat.iter().map(|d| d[h]).sum();
                        (crate::stats::dimensions::time::hour_name(h as u32), n)
                    })
                    .filter(|(_, n)| *n > 0)
                    .collect(),
                Dimension::Weekday => Dimension::Weekday
                    .cycle()
                    .into_iter()
                    .zip(got.heat.iter().map(|d| d.iter().sum::<u64>()))
                    .filter(|(_, n)| *n > 0)
                    .collect(),
                // Kept per link only: compared by `assert_same_destinations`.
                Dimension::Destination => continue,
                d => got.get(d).map(|s| s.rows.clone()).unwrap_or_default(),
            };
            assert_eq!(have, want, "{what}: {}", b.dimension);
        }
        assert_eq!(Some(got.heat), r.heat_map, "{what}: the heat map");
    }

    /// A link's scans per destination as the index has them and as the
    /// report's destination breakdown does (issue 34).
    fn assert_same_destinations(
        got: &[crate::scan_index::DestinationScans],
        r: &Report,
        what: &str,
    ) {
        let mut have: Vec<(String, u64)> = got
            .iter()
            .map(|d| {
                let name = d
                    .destination
                    .as_deref()
                    .unwrap_or(crate::stats::dimensions::destination::OTHER);
                let mark = if d.fallback { "~" } else { "" };
                (format!("{mark}{name}"), d.scans)
            })
            .collect();
        let mut want: Vec<(String, u64)> = r
            .breakdowns
            .iter()
            .filter(|b| b.dimension == Dimension::Destination)
            .flat_map(|b| b.rows.iter().map(|row| (row.value.clone(), row.scans)))
            .collect();
        have.sort();
        want.sort();
        assert_eq!(have, want, "{what}: destinations");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Split anywhere, each part after a restart from a checkpoint:
        /// the breakdowns of every key, of every day and of all of them are
        /// `qrtag stats --by`'s over all the lines.
        #[test]
        fn breakdowns_agree_with_stats_for_any_split(
            lines in prop::collection::vec(any_scan_line(), 0..150),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
            links in prop::sample::subsequence(vec!["docs", "docs/api", "H83if"], 0..=3),
        ) {
            let links: LinkKeys = links.into_iter().collect();
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(lines.len() + 1)).collect();
            cuts.sort_unstable();
            cuts.push(lines.len());
            let mut state = IndexState::new().with_breakdowns(basis());
            let mut start = 0;
            for cut in cuts {
                state = restart(&state);
                let (mut bots, mut deriver) = (BotFilter::new(), deriver());
                for (i, l) in lines[start..cut].iter().enumerate() {
                    // A follower renews its deriver (new value ids, the
                    // same state): more of them than the state keeps
                    // tables of tags for.
                    if i % 5 == 4 {
                        deriver = deriver.renewed();
                    }
                    match parse_line(l) {
                        Ok(p) => state.add_with(&p, links.link_key(p.key()), &mut bots, Some(&mut deriver)),
                        Err(_) => state.add_malformed(),
                    }
                }
                start = cut;
            }
            let (first, last) = (date("2026-11-01"), date("2026-11-30"));
            let all = state.day_shares(first, last).expect("kept");
            assert_same(&all, &stats_by(&lines, Filter::default(), &links), "all");
            for key in ["H83if", "docs", "docs/api", "docs/api/v1", "zzzzz"] {
                let r = stats_by(&lines, Filter { key: Some(key.into()), ..Filter::default() }, &links);
                let got = state.key_shares(key).expect("kept");
                assert_same(&got, &r, key);
                assert_same_destinations(&state.key_destinations(key), &r, key);
            }
            for day in 20..24 {
                let bound = |t: &str| LogTime::parse(&format!("202611{day}{t}")).expect("time");
                let r = stats_by(&lines, Filter {
                    since: Some(bound("000000.0")),
                    until: Some(bound("235959.9")),
                    ..Filter::default()
                }, &links);
                let d = date(&format!("2026-11-{day}"));
                assert_same(&state.day_shares(d, d).expect("kept"), &r, &format!("day {day}"));
            }
        }
    }
}

/// Issue 34: what each link's scans per destination add to the index's
/// tables at one destination a link (most links), measured here against
/// the rest of the tables of the same state, without the breakdowns and
/// with them (as `serve` keeps them by default).
#[test]
fn destinations_cost_a_bounded_share_of_the_tables() {
    let basis = Basis {
        time_zone: chrono_tz::UTC,
        geoip: None,
    };
    let mut deriver = Deriver::new(
        chrono_tz::UTC,
        crate::stats::dimensions::device::Parser::new().ok(),
        None,
    );
    for kept in [false, true] {
        let mut state = IndexState::new();
        if kept {
            state = state.with_breakdowns(basis.clone());
        }
        let mut bots = BotFilter::new();
        for i in 0..20_000 {
            for day in 21..24 {
                let line = format!(
                    "202611{day}100000.0 192.0.2.1 - {IPHONE} /k{i:05} 302 https://www.example.com/campaigns/2026/spring/poster-{i:05}?utm_source=qr GET -"
                );
                let line = parse_line(&line).expect("line");
                state.add_with(&line, line.key(), &mut bots, Some(&mut deriver));
            }
        }
        let all = state.approx_bytes();
        let destinations = state.destinations.approx_bytes();
        let rest = all - destinations;
        println!(
            "20,000 links of one 85-byte destination each, breakdowns {}: destinations {} bytes a link, the rest of the tables {} ({:.2}x with them)",
            if kept { "kept" } else { "not kept" },
            destinations / 20_000,
            rest / 20_000,
            all as f64 / rest as f64
        );
        assert!(destinations < rest, "{destinations} against {rest}");
    }
}

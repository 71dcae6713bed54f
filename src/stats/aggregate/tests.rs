use super::*;
use crate::access_log::format::parse_line;

const IPHONE: &str = "Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1";
const GOOGLEBOT: &str = "Mozilla%2F5.0%20%28compatible%3B%20Googlebot%2F2.1%3B%20%2Bhttp%3A%2F%2Fwww.google.com%2Fbot.html%29";
const ID_A: &str = "0Vh3kY2s4fLq9ZxA01b";
const ID_B: &str = "0Vh3kY2s4fLq9ZxA01c";

fn line(time: &str, id: &str, ua: &str, target: &str, status: u16, method: &str) -> String {
    let location = if (300..400).contains(&status) {
        "https://example.com/"
    } else {
        "-"
    };
    format!("{time} 192.0.2.1 {id} {ua} {target} {status} {location} {method} -")
}

fn feed(filter: Filter, lines: &[String]) -> Report {
    let mut agg = Aggregator::new(filter);
    for (n, l) in lines.iter().enumerate() {
        match parse_line(l) {
            Ok(parsed) => agg.add(&parsed),
            Err(e) => agg.add_malformed(Path::new("test.log"), n as u64 + 1, &e),
        }
    }
    agg.finish()
}

fn sample() -> Vec<String> {
    vec![
        line("20261121100000.0", ID_A, IPHONE, "/H83if", 302, "GET"),
        line(
            "20261121100500.0",
            ID_A,
            IPHONE,
            "/H83if?utm=qr",
            302,
            "GET",
        ),
        line("20261122090000.0", ID_B, IPHONE, "/H83if", 302, "GET"),
        line("20261120080000.5", "-", IPHONE, "/H83if", 302, "GET"),
        line("20261121110000.0", "-", GOOGLEBOT, "/H83if", 302, "GET"),
        line("20261121110001.0", ID_A, IPHONE, "/H83if", 302, "HEAD"),
        line("20261121120000.0", ID_B, IPHONE, "/zzzzz", 404, "GET"),
        line("20261121120001.0", "-", GOOGLEBOT, "/zzzzz", 404, "HEAD"),
        line("20261121130000.0", ID_B, IPHONE, "/docs/api", 301, "GET"),
        line("20261121130000.0", ID_B, "-", "/docs/api", 302, "GET"),
        line("20261121130000.0", ID_B, IPHONE, "/docs/api", 200, "GET"),
        "20261121 garbage".to_owned(),
    ]
}

fn key<'r>(r: &'r Report, k: &str) -> &'r KeyStats {
    &r.keys.iter().find(|kr| kr.key == k).unwrap().stats
}

fn t(s: &str) -> LogTime {
    LogTime::parse(s).unwrap()
}

#[test]
fn counts_per_key() {
    let r = feed(Filter::default(), &sample());
    assert_eq!(r.lines_read, 12);
    assert_eq!(r.malformed, 1);
    assert_eq!(r.malformed_examples[0].line, 12);
    assert_eq!(
        r.keys.iter().map(|k| k.key.as_str()).collect::<Vec<_>>(),
        ["H83if", "docs/api", "zzzzz"]
    );
    assert_eq!(
        *key(&r, "H83if"),
        KeyStats {
            scans: 4,
            unique_scanners: 2,
            first_scan: Some(t("20261120080000.5")),
            last_scan: Some(t("20261122090000.0")),
            head: 1,
            bot: 1,
            not_found: 0,
            requests: 6,
            fallback: 0,
        }
    );
    assert_eq!(
        *key(&r, "zzzzz"),
        KeyStats {
            head: 1,
            bot: 1,
            not_found: 2,
            requests: 2,
            ..KeyStats::default()
        }
    );
    let docs = key(&r, "docs/api");
    assert_eq!((docs.scans, docs.unique_scanners, docs.bot), (1, 1, 1));
    assert_eq!(r.total.scans, 5);
    // ID_B scanned both H83if and docs/api: one scanner overall.
    assert_eq!(r.total.unique_scanners, 2);
    assert_eq!(r.total.requests, 11);
    assert_eq!(r.total.first_scan, Some(t("20261120080000.5")));
    assert_eq!(r.total.last_scan, Some(t("20261122090000.0")));
}

#[test]
fn order_of_lines_does_not_matter() {
    let mut lines = sample();
    let forward = feed(Filter::default(), &lines);
    lines.reverse();
    let mut backward = feed(Filter::default(), &lines);
    backward.malformed_examples[0].line = 12;
    assert_eq!(forward, backward);
}

#[test]
fn key_and_time_filters() {
    let r = feed(
        Filter {
            key: Some("H83if".into()),
            since: Some(t("20261121000000.0")),
            until: Some(t("20261121235959.9")),
            series: None,
        },
        &sample(),
    );
    assert_eq!(r.keys.len(), 1);
    let s = key(&r, "H83if");
    assert_eq!(
        (s.scans, s.unique_scanners, s.head, s.bot, s.requests),
        (2, 1, 1, 1, 4)
    );
    assert_eq!(r.lines_read, 12);

    let r = feed(
        Filter {
            key: Some("nope".into()),
            ..Filter::default()
        },
        &sample(),
    );
    assert_eq!(r.keys.len(), 1);
    assert_eq!(*key(&r, "nope"), KeyStats::default());
}

#[test]
fn bounds_are_inclusive() {
    let lines = sample();
    let r = feed(
        Filter {
            since: Some(t("20261120080000.5")),
            until: Some(t("20261122090000.0")),
            ..Filter::default()
        },
        &lines,
    );
    assert_eq!(r.total.scans, 5);
    let r = feed(
        Filter {
            since: Some(t("20261120080000.6")),
            until: Some(t("20261122085959.9")),
            ..Filter::default()
        },
        &lines,
    );
    assert_eq!(r.total.scans, 3);
}

#[test]
fn series_by_day_week_month() {
    let lines = vec![
        line("20261231235959.9", ID_A, IPHONE, "/a", 302, "GET"),
        line("20270101000000.0", ID_A, IPHONE, "/a", 302, "GET"),
        line("20270103120000.0", ID_A, IPHONE, "/a", 302, "GET"),
        line("20270104000000.0", ID_A, IPHONE, "/a", 302, "GET"),
        line("20270104000000.0", ID_A, GOOGLEBOT, "/a", 302, "GET"),
    ];
    let labels = |p: Period| -> Vec<(String, u64)> {
        let r = feed(
            Filter {
                series: Some(p),
                ..Filter::default()
            },
            &lines,
        );
        r.keys[0]
            .series
            .iter()
            .map(|c| (c.label.clone(), c.scans))
            .collect()
    };
    let owned = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
        v.iter().map(|(l, n)| (l.to_string(), *n)).collect()
    };
    assert_eq!(
        labels(Period::Day),
        owned(&[
            ("2026-12-31", 1),
            ("2027-01-01", 1),
            ("2027-01-03", 1),
            ("2027-01-04", 1)
        ])
    );
    // 2026-12-31 to 2027-01-03 are ISO week 53 of 2026.
    assert_eq!(
        labels(Period::Week),
        owned(&[("2026-W53", 3), ("2027-W01", 1)])
    );
    assert_eq!(
        labels(Period::Month),
        owned(&[("2026-12", 1), ("2027-01", 3)])
    );

    let r = feed(
        Filter {
            series: Some(Period::Week),
            ..Filter::default()
        },
        &lines,
    );
    assert_eq!(
        r.keys[0].series[0].start,
        NaiveDate::from_ymd_opt(2026, 12, 28).unwrap()
    );
    let r = feed(Filter::default(), &lines);
    assert!(r.keys[0].series.is_empty());
}

#[test]
fn bot_filter() {
    let mut bots = BotFilter::new();
    assert!(bots.is_bot(Some(GOOGLEBOT)));
    assert!(bots.is_bot(Some(GOOGLEBOT)));
    assert!(!bots.is_bot(Some(IPHONE)));
    assert!(bots.is_bot(Some("curl%2F8.5.0")));
    assert!(bots.is_bot(None));
    assert_eq!(bots.verdicts.len(), 3);
}

#[test]
fn only_first_malformed_lines_are_kept() {
    let mut agg = Aggregator::new(Filter::default());
    for n in 1..=8 {
        agg.add_malformed(Path::new("x.log"), n, &"bad");
    }
    let r = agg.finish();
    assert_eq!(r.malformed, 8);
    assert_eq!(r.malformed_examples.len(), MALFORMED_EXAMPLES);
    assert_eq!(r.malformed_examples[4].line, 5);
}

#[test]
fn week_of_year_zero_does_not_overflow() {
    let lines = vec![line("00000101000000.0", ID_A, IPHONE, "/a", 302, "GET")];
    let r = feed(
        Filter {
            series: Some(Period::Week),
            ..Filter::default()
        },
        &lines,
    );
    assert_eq!(r.total.scans, 1);
}

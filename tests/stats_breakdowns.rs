//! `qrtag stats --by device|os|browser|country|region|city|referrer|hour|weekday`:
//! the User-Agent answers against an independent reference, places from a
//! test MaxMind database through a real server's log, and bad input.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use qrtag::stats::aggregate::BotFilter;
use qrtag::stats::dimensions::device::Parser;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// Real User-Agent strings (uap-core's test corpus) with the answers of
/// the Python `ua-parser` and `user-agents` packages
/// (`tests/fixtures/ua/make_reference.py`): qrtag's OS family and device
/// class agree with them on at least 95% of the strings.
#[test]
fn device_and_os_agree_with_an_independent_reference() {
    let text = std::fs::read_to_string(fixture("ua/reference.tsv")).expect("reference");
    let parser = Parser::new().expect("rules");
    let mut bots = BotFilter::new();
    let (mut n, mut os, mut class, mut browser) = (0usize, 0usize, 0usize, 0usize);
    let mut class_with_isbot = 0usize;
    let mut class_misses: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut os_misses: BTreeMap<(String, String), usize> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 5, "{line}");
        let (ua, ref_os, ref_browser, ref_class) = (f[0], f[1], f[3], f[4]);
        // The class from the User-Agent rules alone, as the reference
        // decides it; `qrtag stats` also calls bot what the `isbot` patterns
        // match (HTTP libraries, monitors), counted apart below.
        let d = parser.parse(ua, false);
        let bot = bots.is_bot(Some(ua));
        class_with_isbot += usize::from(parser.parse(ua, bot).class.name() == ref_class);
        n += 1;
        if d.os_family == ref_os {
            os += 1;
        } else {
            *os_misses
                .entry((ref_os.into(), d.os_family.clone()))
                .or_default() += 1;
        }
        if d.browser == ref_browser {
            browser += 1;
        }
        if d.class.name() == ref_class {
            class += 1;
        } else {
            *class_misses
                .entry((ref_class.into(), d.class.name().into()))
                .or_default() += 1;
        }
    }
    let rate = |k: usize| k as f64 * 100.0 / n as f64;
    println!(
        "{n} User-Agents: OS family {:.1}%, device class {:.1}% ({:.1}% with isbot's bots), browser family {:.1}% agree with the reference",
        rate(os),
        rate(class),
        rate(class_with_isbot),
        rate(browser)
    );
    let mut misses: Vec<_> = class_misses.into_iter().collect();
    misses.sort_by_key(|(_, k)| std::cmp::Reverse(*k));
    println!("device class (reference, qrtag): {misses:?}");
    let mut misses: Vec<_> = os_misses.into_iter().collect();
    misses.sort_by_key(|(_, k)| std::cmp::Reverse(*k));
    println!(
        "OS family (reference, qrtag): {:?}",
        &misses[..misses.len().min(10)]
    );
    assert!(n >= 2000, "{n} strings");
    assert!(rate(os) >= 95.0, "OS family agreement {:.1}%", rate(os));
    assert!(
        rate(class) >= 95.0,
        "device class agreement {:.1}%",
        rate(class)
    );
}

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const PIXEL: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36";
const WINDOWS: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

use support::qrtag_in as qrtag;

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// A breakdown's rows as (value, scans).
fn rows(report: &serde_json::Value, by: &str) -> Vec<(String, u64)> {
    let b = report["breakdowns"]
        .as_array()
        .expect("breakdowns")
        .iter()
        .find(|b| b["by"] == by)
        .unwrap_or_else(|| panic!("no breakdown by {by}: {report}"));
    b["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["value"].as_str().expect("value").to_owned(),
                r["scans"].as_u64().expect("scans"),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|(v, n)| ((*v).to_owned(), *n)).collect()
}

/// Scans sent to a real server behind a trusted proxy (the addresses in
/// `X-Forwarded-For`), then counted by the real binary per country, region
/// and city from a test database: IPv4, IPv6, a country-only record, a city
/// without a region, and addresses the database does not hold.
#[tokio::test]
async fn places_from_a_test_database_for_a_real_servers_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = support::test_settings(dir.path());
    settings.trusted_proxies = vec!["127.0.0.1/32".parse().expect("cidr")];
    let qrtag::settings::AccessLogTarget::Path(log) = settings.access_log.clone() else {
        panic!("a log file");
    };
    let app = support::spawn_with(settings, dir).await;
    app.link("H83if", "https://example.com/menu").await;
    app.wait_for_status("/H83if", 302).await;
    let sent = [
        ("203.0.113.9", IPHONE),
        ("203.0.113.200", PIXEL),
        ("2001:db8:1::5", IPHONE),
        ("2001:db8:2::1", WINDOWS),
        ("198.51.100.1", IPHONE),
        ("192.0.2.5", IPHONE),
        ("2001:db8:ffff::1", PIXEL),
    ];
    for (client, ua) in sent {
        let res = app
            .client
            .get(app.url("/H83if"))
            .header("user-agent", ua)
            .header("x-forwarded-for", client)
            .send()
            .await
            .expect("request");
        assert_eq!(res.status(), 302);
    }
    // The wait above logged one line of its own (reqwest, no User-Agent: a bot).
    support::eventually(std::time::Duration::from_secs(5), || async {
        std::fs::read_to_string(&log).is_ok_and(|t| t.lines().count() > sent.len())
    })
    .await;
    let db = fixture("geoip/test.mmdb");
    let log_arg = log.display().to_string();
    let out = qrtag(
        app.dir.path(),
        &[
            "stats",
            "--by",
            "country,region,city,device",
            "--geoip-db",
            db.to_str().expect("path"),
            "--format",
            "json",
            &log_arg,
        ],
    );
    let report = json(&out);
    assert_eq!(report["total"]["scans"], 7, "{report}");
    assert_eq!(
        rows(&report, "country"),
        pairs(&[("IE", 2), ("unknown", 2), ("FR", 1), ("JP", 1), ("US", 1)])
    );
    assert_eq!(
        rows(&report, "region"),
        pairs(&[("unknown", 4), ("Leinster, IE", 2), ("California, US", 1)])
    );
    assert_eq!(
        rows(&report, "city"),
        pairs(&[
            ("unknown", 3),
            ("Dublin, IE", 2),
            ("San Francisco, US", 1),
            ("Tokyo, JP", 1),
        ])
    );
    assert_eq!(
        rows(&report, "device"),
        pairs(&[("phone", 6), ("desktop", 1)])
    );
}

/// A log written by hand: two scanners and one without cookies, a bot, a
/// 404, at hours that read differently in Dublin and in Sydney.
const LOG: &str = "\
20261125233000.0 203.0.113.9 0VhAAAAA0000000000a Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1 /H83if 302 https://example.com/menu GET -
20261126083000.0 203.0.113.9 0VhAAAAA0000000000a Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1 /H83if 302 https://example.com/menu GET https%3A%2F%2Fl.instagram.com%2F
20261126090000.0 2001:db8:1::5 0VhBBBBB0000000000b Mozilla%2F5.0%20%28Windows%20NT%2010.0%3B%20Win64%3B%20x64%29%20AppleWebKit%2F537.36%20%28KHTML%2C%20like%20Gecko%29%20Chrome%2F120.0.0.0%20Safari%2F537.36 /H83if 302 https://example.com/menu GET -
20261126091000.0 192.0.2.5 - Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2016_6%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F16.6%20Mobile%2F15E148%20Safari%2F604.1 /Xy12Z 302 https://example.com/ GET -
20261126100000.0 66.249.66.1 - Mozilla%2F5.0%20%28compatible%3B%20Googlebot%2F2.1%3B%20%2Bhttp%3A%2F%2Fwww.google.com%2Fbot.html%29 /H83if 302 https://example.com/menu GET -
20261126100100.0 198.51.100.7 0VhAAAAA0000000000a Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1 /zzzzz 404 - GET -
";

fn log_dir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("access.log");
    std::fs::write(&log, LOG).expect("write log");
    let log = log.display().to_string();
    (dir, log)
}

#[test]
fn devices_sources_and_times_in_every_format() {
    let (dir, log) = log_dir();
    let report = json(&qrtag(
        dir.path(),
        &[
            "stats",
            "--by",
            "device,os,browser,referrer",
            "--format",
            "json",
            &log,
        ],
    ));
    assert_eq!(
        rows(&report, "device"),
        pairs(&[("phone", 3), ("desktop", 1)])
    );
    assert_eq!(
        rows(&report, "os"),
        pairs(&[("iOS 17", 2), ("Windows 10", 1), ("iOS 16", 1)])
    );
    assert_eq!(
        rows(&report, "browser"),
        pairs(&[("Mobile Safari", 3), ("Chrome", 1)])
    );
    assert_eq!(
        rows(&report, "referrer"),
        pairs(&[("none", 3), ("l.instagram.com", 1)])
    );
    // New and returning: A twice (new, then returning), B once, one without an ID.
    let phone = &report["breakdowns"][0]["rows"][0];
    assert_eq!(
        (&phone["new"], &phone["returning"]),
        (&1.into(), &1.into()),
        "{phone}"
    );
    let desktop = &report["breakdowns"][0]["rows"][1];
    assert_eq!(
        (&desktop["new"], &desktop["returning"]),
        (&1.into(), &0.into())
    );

    // Bots only when asked.
    let with_bots = json(&qrtag(
        dir.path(),
        &[
            "stats", "--by", "device", "--bots", "--format", "json", &log,
        ],
    ));
    assert_eq!(
        rows(&with_bots, "device"),
        pairs(&[("phone", 3), ("bot", 1), ("desktop", 1)])
    );

    // Hours and weekdays in the zone asked for: 23:30 UTC on Wednesday is
    // 10:30 on Thursday in Sydney.
    let utc = json(&qrtag(
        dir.path(),
        &["stats", "--by", "hour,weekday", "--format", "json", &log],
    ));
    let sydney = json(&qrtag(
        dir.path(),
        &[
            "stats",
            "--by",
            "hour,weekday",
            "--tz",
            "Australia/Sydney",
            "--format",
            "json",
            &log,
        ],
    ));
    assert_eq!(rows(&utc, "hour")[23], ("23:00".to_owned(), 1));
    assert_eq!(rows(&utc, "weekday")[2], ("Wednesday".to_owned(), 1));
    assert_eq!(rows(&sydney, "hour")[10], ("10:00".to_owned(), 1));
    assert_eq!(rows(&sydney, "hour")[20], ("20:00".to_owned(), 2));
    assert_eq!(rows(&sydney, "weekday")[3], ("Thursday".to_owned(), 4));
    assert_eq!(sydney["hour_by_weekday"]["time_zone"], "Australia/Sydney");
    assert_eq!(sydney["hour_by_weekday"]["scans"][3][10], 1);

    // CSV: one row per value.
    let csv = qrtag(
        dir.path(),
        &["stats", "--by", "device", "--format", "csv", &log],
    );
    assert!(csv.status.success(), "{csv:?}");
    assert_eq!(
        String::from_utf8_lossy(&csv.stdout),
        "dimension,value,scans,new,returning\ndevice,phone,3,1,1\ndevice,desktop,1,1,0\n"
    );

    // The table: the key table, then a section per breakdown.
    let table = qrtag(
        dir.path(),
        &["stats", "--by", "device", "--key", "H83if", &log],
    );
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(table.status.success(), "{table:?}");
    assert!(text.contains("Scans by device, bots left out:"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["phone", "2", "66.7%", "1", "1"]),
        "{text}"
    );
}

/// Each mistake is one line naming it, exit code 2, nothing on standard
/// output and no chart file.
#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    let (dir, log) = log_dir();
    let not_mmdb = dir.path().join("not.mmdb");
    std::fs::write(&not_mmdb, "this is not a database\n").expect("write");
    let chart = dir.path().join("c.svg");
    let chart_arg = chart.display().to_string();
    let not_mmdb = not_mmdb.display().to_string();
    let cases: [(&[&str], &str); 6] = [
        (
            &["--by", "country", "--geoip-db", "missing.mmdb"],
            "cannot read --geoip-db missing.mmdb",
        ),
        (
            &["--by", "country", "--geoip-db", &not_mmdb],
            "is not a MaxMind DB (MMDB) file",
        ),
        (
            &["--by", "country", "--geoip-db", &log],
            "is not a MaxMind DB (MMDB) file",
        ),
        (&["--by", "city"], "--by city needs --geoip-db FILE"),
        (
            &["--by", "hour", "--tz", "Mars/Olympus"],
            "`Mars/Olympus` is not a time zone",
        ),
        (&["--by", "planet"], "invalid value 'planet' for '--by"),
    ];
    for (args, said) in cases {
        let mut argv = vec!["stats", "--chart", &chart_arg];
        argv.extend(args);
        argv.push(&log);
        let out = qrtag(dir.path(), &argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("qrtag: ") && err.contains(said),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!chart.exists(), "{args:?}");
    }
}

/// `--chart` with a breakdown draws its bars (an "other" row past the top
/// values), with `--by hour,weekday` the heat map; a chart of two
/// breakdowns, or of a breakdown and a period, is refused before anything
/// is written.
#[test]
fn charts_of_breakdowns() {
    let (dir, log) = log_dir();
    let svg = dir.path().join("devices.svg");
    let svg_arg = svg.display().to_string();
    let out = qrtag(
        dir.path(),
        &["stats", "--by", "os", "--chart", &svg_arg, &log],
    );
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&svg).expect("chart written");
    // plotters writes each text on a line of its own.
    let texts: Vec<&str> = text.lines().map(str::trim).collect();
    for said in [
        "Scans by os, bots left out, access.log",
        "iOS 17",
        "Windows 10",
        "2",
    ] {
        assert!(texts.contains(&said), "{said}: {text}");
    }
    let heat = dir.path().join("heat.svg");
    let heat_arg = heat.display().to_string();
    let out = qrtag(
        dir.path(),
        &[
            "stats",
            "--by",
            "weekday,hour",
            "--tz",
            "Europe/Dublin",
            "--chart",
            &heat_arg,
            &log,
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&heat).expect("heat map written");
    let texts: Vec<&str> = text.lines().map(str::trim).collect();
    for said in [
        "Scans by weekday and hour (Europe/Dublin), bots left out, access.log",
        "Thursday",
        "23",
        // Thursday 09:00 and 09:10 in one cell.
        "2",
    ] {
        assert!(texts.contains(&said), "{said}: {text}");
    }

    let refused = dir.path().join("refused.svg");
    let refused_arg = refused.display().to_string();
    for by in ["device,os", "week,device"] {
        let out = qrtag(
            dir.path(),
            &["stats", "--by", by, "--chart", &refused_arg, &log],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{by}: {err}");
        assert!(
            err.starts_with("qrtag: --chart draws") && err.lines().count() == 1,
            "{err}"
        );
        assert!(out.stdout.is_empty() && !refused.exists(), "{by}");
    }
}

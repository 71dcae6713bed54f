//! ClickHouse per domain (schema version 3, issue 38), against a real
//! ClickHouse 18.16 (`support/clickhouse.rs`): the real binary serving two
//! domains sends each domain's scans with its host, and `stats
//! --load-into` names the domain of the logs it loads; the breakdowns read
//! from `link_shares` equal the scan index's; `stats --scans-from` prints
//! what `stats LOG` prints.

#[path = "support/clickhouse.rs"]
mod clickhouse;
mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use clickhouse::ClickHouse;
use support::process::ServerProcess;
use support::qrtag_bin;

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const PIXEL: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// The binary with `dir`'s configuration file.
fn qrtag(dir: &Path, args: &[&str]) -> std::process::Output {
    qrtag_bin()
        .env("QRTAG_CONFIG", dir.join("qrtag.toml"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run qrtag")
}

/// Two domains: `0x1f.ie`, the default (`a.db`, its log `access.log`),
/// and `qr.brand-b.ie` (`b.db`, `b.log`), each with `H83if` and `docs`.
fn two_domains(dir: &Path) -> PathBuf {
    std::fs::write(
        dir.join("qrtag.toml"),
        r#"public_url = "https://0x1f.ie"

[[domains]]
host = "0x1f.ie"

[[domains]]
host = "qr.brand-b.ie"
public_url = "https://qr.brand-b.ie"
sqlite = "b.db"
access_log = "b.log"
"#,
    )
    .expect("config");
    let db = dir.join("a.db");
    for (db, url) in [
        (&db, "https://0x1f.ie"),
        (&dir.join("b.db"), "https://qr.brand-b.ie"),
    ] {
        let db = db.to_str().unwrap();
        let mut all = vec![vec!["--db", db, "--public-url", url, "init"]];
        for (key, to) in [
            ("H83if", "https://example.com/poster"),
            ("docs", "https://example.com/docs"),
        ] {
            all.push(vec!["--db", db, "new", to, "--key", key]);
        }
        for args in all {
            let out = qrtag_bin()
                .current_dir(dir)
                .args(&args)
                .stdin(Stdio::null())
                .output()
                .expect("run qrtag");
            assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        }
    }
    db
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// Scans of both domains: phones and a bot, some with the tracking cookie
/// back, a path below `docs`, a 404. Returns when both logs hold them.
async fn traffic(server: &ServerProcess, dir: &Path) {
    let c = client();
    let get = |host: &'static str, path: &'static str, ua: &'static str, cookie: bool| {
        let c = c.clone();
        let url = server.url(path);
        async move {
            let r = c
                .get(url)
                .header("host", host)
                .header("user-agent", ua)
                .send()
                .await
                .expect("answered");
            let status = r.status().as_u16();
            let set = r
                .headers()
                .get("set-cookie")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(';').next())
                .map(str::to_owned);
            if cookie && let Some(set) = set {
                c.get(server.url(path))
                    .header("host", host)
                    .header("user-agent", ua)
                    .header("cookie", set)
                    .send()
                    .await
                    .expect("answered");
            }
            status
        }
    };
    // Each domain's own links are there before any scan counts.
    for host in ["0x1f.ie", "qr.brand-b.ie"] {
        support::poll::until(Duration::from_secs(10), "the links served", || async {
            let r = client()
                .head(server.url("/H83if"))
                .header("host", host)
                .send()
                .await
                .ok()?;
            (r.status().as_u16() == 302).then_some(())
        })
        .await;
    }
    assert_eq!(get("0x1f.ie", "/H83if", IPHONE, true).await, 302);
    assert_eq!(get("0x1f.ie", "/docs/api", PIXEL, false).await, 302);
    assert_eq!(get("0x1f.ie", "/H83if", GOOGLEBOT, false).await, 302);
    assert_eq!(get("qr.brand-b.ie", "/H83if", PIXEL, true).await, 302);
    assert_eq!(get("qr.brand-b.ie", "/H83if", IPHONE, false).await, 302);
    assert_eq!(get("qr.brand-b.ie", "/nope1", IPHONE, false).await, 404);
    // The last request of each domain logged.
    for (log, last) in [("access.log", "Googlebot"), ("b.log", "/nope1 404")] {
        let path = dir.join(log);
        support::poll::until(Duration::from_secs(10), "the access log's lines", || {
            let lines = std::fs::read_to_string(&path).unwrap_or_default();
            std::future::ready(lines.contains(last).then_some(()))
        })
        .await;
    }
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .expect("a log")
        .lines()
        .count()
}

/// Waits until ClickHouse answers `sql` with `want`.
async fn answers(ch: &ClickHouse, sql: &str, want: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    loop {
        let last = ch.query(sql).await.unwrap_or_default();
        if last == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{sql}: {last:?}, not {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `serve --scans-to` with two domains: every domain's log reaches
/// `scans`, each row with its domain's host, and the per-link aggregates
/// keep the domains apart (the same key in both counts in each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sink_sends_every_domains_scans_with_its_host() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let db = two_domains(d);
    let ch = ClickHouse::start(&d.join("ch")).await;
    let url = ch.url("qrtag");
    let out = qrtag(d, &["setup-clickhouse", "--clickhouse", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let config = d.join("qrtag.toml");
    let env = [("QRTAG_CONFIG", config.to_str().unwrap())];
    let server = ServerProcess::spawn(&db, &["--scans-to", &url], &env, false)
        .await
        .loaded()
        .await;
    traffic(&server, d).await;
    // Stopped, each log holds every line (each worker's buffer written),
    // and the sink has sent what waited.
    server.stop().await;

    let (a, b) = (lines(&d.join("access.log")), lines(&d.join("b.log")));
    answers(
        &ch,
        "SELECT domain, count() FROM qrtag.scans FINAL GROUP BY domain ORDER BY domain FORMAT TSV",
        &format!("0x1f.ie\t{a}\nqr.brand-b.ie\t{b}\n"),
    )
    .await;
    assert_eq!(
        ch.must(
            "SELECT domain, uniqExactIfMerge(scans), uniqExactIfMerge(scanners) FROM qrtag.link_days \
             WHERE link = 'H83if' GROUP BY domain ORDER BY domain FORMAT TSV"
        )
        .await,
        "0x1f.ie\t2\t1\nqr.brand-b.ie\t3\t2\n",
        "{}",
        ch.must("SELECT domain, link, target, scan, bot, tracking FROM qrtag.scans FORMAT TSV")
            .await
    );
    assert_eq!(
        ch.must(
            "SELECT domain, value, uniqExactMerge(scans) FROM qrtag.link_shares \
             WHERE link = 'docs' AND dimension = 'device' GROUP BY domain, value FORMAT TSV"
        )
        .await,
        "0x1f.ie\tphone\t1\n",
        "a path below docs counts under docs, of its domain"
    );

    // `--load-into` of brand B's log with its `--domain`: the same rows.
    let out = qrtag(
        d,
        &[
            "--domain",
            "qr.brand-b.ie",
            "stats",
            "--load-into",
            &url,
            d.join("b.log").to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        ch.must("SELECT domain, count() FROM qrtag.scans FINAL GROUP BY domain ORDER BY domain FORMAT TSV")
            .await,
        format!("0x1f.ie\t{a}\nqr.brand-b.ie\t{b}\n"),
        "a back-fill of the log the sink sent adds nothing"
    );

    // `--scans-from`: each domain reads its own rows, the same key on two
    // domains two links.
    let out = qrtag(
        d,
        &[
            "--db",
            db.to_str().unwrap(),
            "api-key",
            "create",
            "--name",
            "t",
            "--scope",
            "read",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let token = text(&out.stdout).trim().to_owned();
    let reader = ServerProcess::spawn(
        &db,
        &[
            "--scans-from",
            &url,
            "--access-log",
            d.join("reader.log").to_str().unwrap(),
            "--no-snapshot-file",
            "--api-listen",
            "127.0.0.1:0",
        ],
        &env,
        false,
    )
    .await
    .loaded()
    .await;
    let api = reader.api_addr().await;
    for (domain, scans, scanners) in [("", 2, 1), ("&domain=qr.brand-b.ie", 3, 2)] {
        let url = format!("http://{api}/api/v1/links/H83if/scans?since=2020-01-01{domain}");
        let body: serde_json::Value =
            support::poll::until(Duration::from_secs(10), "the link's scans", || async {
                let r = reqwest::Client::new()
                    .get(&url)
                    .bearer_auth(&token)
                    .send()
                    .await
                    .ok()?;
                (r.status() == 200).then_some(r.json().await.ok()?)
            })
            .await;
        assert_eq!(
            (&body["scans"], &body["unique_scanners"]),
            (&scans.into(), &scanners.into()),
            "{domain}: {body}"
        );
        assert!(body["breakdowns"].is_object(), "{domain}: {body}");
    }
    reader.stop().await;
}

/// A log of `n` lines over three days around the end of Irish summer time
/// (2026-10-25 01:00 UTC): phones, desktops, bots and a client without a
/// User-Agent, HEADs, 404s, referrers, some tracking IDs seen again.
fn synthetic_log(n: u32) -> String {
    use qrtag::access_log::format::{Record, write_record};
    use qrtag::tracking::id::TrackingId;
    const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
    let agents: [Option<&str>; 5] = [
        Some(IPHONE),
        Some(PIXEL),
        Some(DESKTOP),
        Some(GOOGLEBOT),
        None,
    ];
    let ids: Vec<TrackingId> = [
        "0VcJYALRGflpFUq6mT0",
        "0VcJYALXxtw24rnISjc",
        "0VcJYBHaiJ1uagp0HTR",
    ]
    .iter()
    .map(|s| TrackingId::parse(s).expect("an ID"))
    .collect();
    let referers: [Option<&str>; 3] = [
        None,
        Some("https://t.co/x"),
        Some("https://www.google.com/"),
    ];
    let start = chrono::DateTime::parse_from_rfc3339("2026-10-24T00:07:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let mut out = Vec::new();
    for i in 0..n {
        let target = ["/H83if", "/docs", "/menu", "/nope1"][(i % 7 % 4) as usize];
        let head = i % 11 == 5;
        let ua = agents[(i % 5) as usize];
        let rec = Record {
            time: start + chrono::Duration::minutes(i64::from(i) * 17),
            client_ip: Some(std::net::IpAddr::from([203, 0, 113, (i % 3) as u8])),
            tracking: (i % 4 != 3).then(|| &ids[(i % 3) as usize]),
            user_agent: ua.map(str::as_bytes),
            target: target.as_bytes(),
            status: if target == "/nope1" { 404 } else { 302 },
            location: (target != "/nope1").then_some("https://example.com/x"),
            fallback: false,
            method: if head { "HEAD" } else { "GET" },
            referer: referers[(i % 3) as usize].map(str::as_bytes),
        };
        write_record(&rec, &mut out);
    }
    String::from_utf8(out).expect("UTF-8")
}

/// `key_shares` and `day_shares` read from ClickHouse equal the embedded
/// scan index's over the same lines (bots and non-scans left out), in a
/// time zone with summer time and a change of offset inside the log, for
/// each key and for all keys over all days and over one day, with the
/// log loaded twice (a row sent twice counts once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn breakdowns_from_clickhouse_equal_the_scan_index() {
    use qrtag::access_log::format::parse_line;
    use qrtag::scan_index::Basis;
    use qrtag::scan_index::index::IndexState;
    use qrtag::stats::aggregate::BotFilter;
    use qrtag::stats::dimensions::{Deriver, device};
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ch = ClickHouse::start(&d.join("ch")).await;
    let url = ch.url("qrtag");
    let out = support::qrtag_in(d, &["setup-clickhouse", "--clickhouse", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = synthetic_log(400);
    let path = d.join("access.log");
    std::fs::write(&path, &log).unwrap();
    for _ in 0..2 {
        let out = qrtag_bin()
            .current_dir(d)
            .args(["--public-url", "https://0x1f.ie", "--db", "none.db"])
            .args(["stats", "--load-into", &url, path.to_str().unwrap()])
            .stdin(Stdio::null())
            .output()
            .expect("run qrtag");
        assert!(out.status.success(), "{}", text(&out.stderr));
    }

    let tz = chrono_tz::Europe::Dublin;
    let basis = Basis {
        time_zone: tz,
        geoip: None,
    };
    let mut index = IndexState::new().with_breakdowns(basis.clone());
    let mut bots = BotFilter::new();
    let mut deriver = Deriver::new(tz, Some(device::Parser::new().unwrap()), None);
    for line in log.lines() {
        let line = parse_line(line).expect("a log line");
        index.add_with(&line, line.key(), &mut bots, Some(&mut deriver));
    }

    let client = qrtag::clickhouse::Client::new(
        qrtag::clickhouse::ClickHouseUrl::parse(&url).unwrap(),
        Duration::from_secs(30),
    );
    use qrtag::clickhouse::shares::key_shares;
    let mut scanned = 0;
    for key in ["H83if", "docs", "menu", "nope1", "never"] {
        let want = index.key_shares(key).expect("kept");
        let got = key_shares(&client, "0x1f.ie", key, &[], &basis)
            .await
            .unwrap();
        assert_eq!(got, want, "{key}");
        scanned += got.scans();
    }
    let day = |d: u32| chrono::NaiveDate::from_ymd_opt(2026, 10, d).unwrap();
    // As a page of all links asks: which days are rolled up (the load
    // rolled the closed ones), then the breakdowns.
    let day_shares = |domain: &str, from, to| {
        let scans = qrtag::clickhouse::read::DomainScans {
            client: client.clone(),
            domain: domain.to_owned(),
            basis: basis.clone(),
        };
        async move {
            let rolled = scans.rolled(from, to).await.unwrap();
            scans.day_shares(from, to, &rolled).await.unwrap()
        }
    };
    for (from, to) in [(day(1), day(31)), (day(25), day(25)), (day(26), day(24))] {
        let want = index.day_shares(from, to).expect("kept");
        let got = day_shares("0x1f.ie", from, to).await;
        assert_eq!(got, want, "{from}..={to}");
    }
    let all = day_shares("0x1f.ie", day(1), day(31)).await;
    assert_eq!(all.scans(), scanned, "every scan in one key");
    assert!(
        scanned > 100 && scanned < 400,
        "bots and 404s left out: {scanned}"
    );
    let other = day_shares("b.example", day(1), day(31)).await;
    assert_eq!(other.scans(), 0, "another domain's are its own");
}

/// `qrtag stats --scans-from` prints what `qrtag stats LOG` prints of the
/// same lines, through the binary: the table, JSON and CSV; one key;
/// whole days; the scans a day and a week; and the breakdowns with new and
/// returning scanners and the hours and weekdays in a zone with summer
/// time. A flag without a counterpart, and a key in no row, are one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_from_clickhouse_prints_what_stats_prints_of_the_log() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ch = ClickHouse::start(&d.join("ch")).await;
    let url = ch.url("qrtag");
    let run = |args: &[&str]| {
        qrtag_bin()
            .current_dir(d)
            .args(["--public-url", "https://0x1f.ie", "--db", "none.db"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run qrtag")
    };
    let out = run(&["setup-clickhouse", "--clickhouse", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let path = d.join("access.log");
    std::fs::write(&path, synthetic_log(400)).unwrap();
    let log = path.to_str().unwrap();
    let out = run(&["stats", "--load-into", &url, log]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    for asked in [
        &[][..],
        &["--format", "json"],
        &["--format", "csv"],
        &["--key", "H83if", "--format", "json"],
        &["--since", "2026-10-25", "--until", "2026-10-25"],
        &["--by", "day", "--format", "json"],
        &["--by", "week", "--key", "docs"],
        &[
            "--by",
            "device,os,browser,referrer,hour,weekday",
            "--format",
            "json",
        ],
        &[
            "--by",
            "hour,device",
            "--key",
            "menu",
            "--since",
            "2026-10-25",
        ],
    ] {
        let mut from_log = vec!["--tz", "Europe/Dublin", "stats"];
        from_log.extend(asked);
        let mut from_ch = from_log.clone();
        from_log.push(log);
        from_ch.extend(["--scans-from", &url]);
        let want = run(&from_log);
        assert!(want.status.success(), "{asked:?}: {}", text(&want.stderr));
        let got = run(&from_ch);
        assert!(got.status.success(), "{asked:?}: {}", text(&got.stderr));
        assert_eq!(text(&got.stdout), text(&want.stdout), "{asked:?}");
        assert!(!text(&want.stdout).is_empty());
    }

    for (asked, says) in [
        (&["--bots"][..], "--bots"),
        (&["--by", "destination"], "--by destination"),
        (&["--since", "2026-10-25 10:00:00"], "give a date"),
    ] {
        let mut args = vec!["stats", "--scans-from", &url];
        args.extend(asked);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{asked:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains(says) && err.trim_end().lines().count() == 1,
            "{err}"
        );
    }
    let out = run(&["stats", "--scans-from", &url, "--key", "zzz"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no requests for key zzz"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["stats", "--scans-from", &ch.url("empty")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("run qrtag setup-clickhouse first"),
        "{}",
        text(&out.stderr)
    );
}

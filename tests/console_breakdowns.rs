//! The console's breakdowns (issue 21): scans through the real server from
//! phones, desktops and a crawler, at addresses in the test GeoIP database
//! (behind a trusted proxy), with and without a referrer; the link page,
//! the dashboard and their CSV downloads then show what
//! `qrtag stats --by …` says over the same access log.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use qrtag::console::ConsoleSettings;
use qrtag::console::pages::breakdowns::shown;
use qrtag::scan_index::{BreakdownSettings, ScanIndexSettings};
use qrtag::settings::AccessLogTarget;
use qrtag::stats::dimensions::place::GeoDb;
use reqwest::StatusCode;
use serde_json::Value;
use support::console::logged_in;
use support::{TestApp, qrtag_cmd, spawn_with, test_settings};

const PASSWORD: &str = "poster-printing-42";
const TZ: &str = "America/New_York";

const AGENTS: [&str; 4] = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
];
const ADDRESSES: [&str; 5] = [
    "203.0.113.7",
    "198.51.100.9",
    "192.0.2.1",
    "2001:db8:1::5",
    "2001:db8:2::9",
];
const REFERERS: [Option<&str>; 3] = [
    None,
    Some("https://www.google.com/search?q=poster"),
    Some("https://example.org/events"),
];

fn geoip() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/geoip/test.mmdb")
}

/// `serve --console --geoip-db test.mmdb --time-zone America/New_York
/// --trusted-proxy 127.0.0.1`, the scan index polling every 20 ms.
async fn console() -> (TestApp, PathBuf, reqwest::Client) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.console = Some(ConsoleSettings::default());
    settings.trusted_proxies =
        vec![qrtag::tracking::client_ip::parse_trusted_proxy("127.0.0.1").expect("cidr")];
    let AccessLogTarget::Path(log) = settings.access_log.clone() else {
        panic!("a log file");
    };
    let mut index = ScanIndexSettings::beside(&log);
    index.poll_interval = Duration::from_millis(20);
    let db = GeoDb::open(&geoip()).expect("the test database");
    let path = geoip();
    index.breakdowns = Some(BreakdownSettings::new(
        TZ.parse().expect("zone"),
        Some((path.as_path(), db)),
    ));
    settings.scan_index = Some(index);
    let app = spawn_with(settings, dir).await;
    qrtag::console::password::set(&app.store(), PASSWORD)
        .await
        .expect("password set");
    let http = logged_in(&format!("http://{}/console", app.admin), PASSWORD).await;
    (app, log, http)
}

async fn page(app: &TestApp, http: &reqwest::Client, path: &str) -> reqwest::Response {
    http.get(format!("http://{}/console{path}", app.admin))
        .send()
        .await
        .expect("GET")
}

/// `data-NAME="…"` values in order, in `html` from `from` to its end tag.
fn attrs(html: &str, name: &str) -> Vec<String> {
    html.split(&format!(r#" {name}=""#))
        .skip(1)
        .map(|r| r[..r.find('"').expect("end")].replace("&amp;", "&"))
        .collect()
}

/// The part of `html` from the element with `id` to the end of its figure.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let Some(from) = html.find(&format!(r#"id="{id}""#)) else {
        return "";
    };
    let rest = &html[from..];
    &rest[..rest.find("</figure>").unwrap_or(rest.len())]
}

/// The rows a breakdown figure shows: (value, scans).
fn shown_rows(html: &str, dim: &str) -> Vec<(String, u64)> {
    let part = figure(html, &format!("by-{dim}"));
    let values = attrs(part, "data-value");
    let scans = attrs(part, "data-scans");
    values
        .into_iter()
        .zip(scans)
        .map(|(v, n)| (v, n.parse().expect("a count")))
        .collect()
}

/// The heat map's cells with scans: ((weekday, hour), scans).
fn heat_cells(html: &str) -> Vec<((String, u32), u64)> {
    let part = figure(html, "heat-map");
    let days = attrs(part, "data-day");
    let hours = attrs(part, "data-hour");
    let scans = attrs(part, "data-scans");
    days.into_iter()
        .zip(hours)
        .zip(scans)
        .map(|((d, h), n)| ((d, h.parse().expect("hour")), n.parse().expect("count")))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// `qrtag stats --by every breakdown` over `log`, as JSON.
fn stats_by(db: &Path, log: &Path, key: Option<&str>) -> Value {
    let log = log.to_str().expect("utf-8");
    let geoip = geoip();
    let mut args = vec![
        "stats",
        "--by",
        "device,os,browser,country,region,city,referrer,hour,weekday",
        "--geoip-db",
        geoip.to_str().expect("utf-8"),
        "--time-zone",
        TZ,
        "--format",
        "json",
    ];
    if let Some(key) = key {
        args.extend(["--key", key]);
    }
    args.push(log);
    let out = qrtag_cmd(db, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The page's breakdowns are the report's: each dimension's top eight and
/// the rest, and every cell of the heat map.
fn assert_page_is_report(html: &str, report: &Value, what: &str) {
    let breakdowns = report["breakdowns"].as_array().expect("breakdowns");
    for b in breakdowns {
        let dim = b["by"].as_str().expect("by");
        if dim == "hour" || dim == "weekday" {
            continue;
        }
        let rows: Vec<(String, u64)> = b["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| {
                (
                    r["value"].as_str().expect("value").to_owned(),
                    r["scans"].as_u64().expect("scans"),
                )
            })
            .collect();
        let (top, rest) = shown(&rows);
        let mut want: Vec<(String, u64)> = top.iter().map(|(v, n)| ((*v).to_owned(), *n)).collect();
        if rest > 0 {
            want.push(("Other".to_owned(), rest));
        }
        assert_eq!(shown_rows(html, dim), want, "{what}: {dim}");
    }
    let heat = &report["hour_by_weekday"];
    let weekdays = heat["weekdays"].as_array().expect("weekdays");
    let mut want = Vec::new();
    for (d, day) in weekdays.iter().enumerate() {
        let name = &day.as_str().expect("day")[..3];
        for h in 0..24 {
            let n = heat["scans"][d][h].as_u64().expect("count");
            if n > 0 {
                want.push(((name.to_owned(), h as u32), n));
            }
        }
    }
    assert_eq!(heat_cells(html), want, "{what}: the heat map");
}

#[tokio::test]
async fn breakdowns_on_the_console_equal_qrtag_stats_by() {
    let (app, log, http) = console().await;
    for key in ["poster", "flyer"] {
        app.link(key, "https://example.com/poster").await;
        app.wait_for_status(&format!("/{key}"), 302).await;
    }
    // The two waits above were scans too (no User-Agent: bots).
    let mut poster_scans = 0;
    for i in 0..36usize {
        let key = if i % 3 == 0 { "flyer" } else { "poster" };
        let agent = AGENTS[i % AGENTS.len()];
        let mut req = app
            .client
            .get(app.url(&format!("/{key}")))
            .header("user-agent", agent)
            .header("x-forwarded-for", ADDRESSES[i % ADDRESSES.len()]);
        if let Some(r) = REFERERS[i % REFERERS.len()] {
            req = req.header("referer", r);
        }
        assert_eq!(req.send().await.expect("scan").status(), StatusCode::FOUND);
        if key == "poster" && !agent.contains("Googlebot") {
            poster_scans += 1;
        }
    }
    let counted = format!(r#"id="breakdowns" data-available="true" data-scans="{poster_scans}""#);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let html = loop {
        let html = page(&app, &http, "/link?key=poster")
            .await
            .text()
            .await
            .expect("body");
        if html.contains(&counted) {
            break html;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never counted: {html}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let report = stats_by(&app.db, &log, Some("poster"));
    assert_page_is_report(&html, &report, "the link page");
    assert!(
        shown_rows(&html, "country").iter().any(|(v, _)| v == "IE"),
        "{html}"
    );
    assert!(html.contains("in America/New_York"), "{html}");

    let dashboard = page(&app, &http, "/dashboard?days=7")
        .await
        .text()
        .await
        .expect("body");
    let all = stats_by(&app.db, &log, None);
    assert_page_is_report(&dashboard, &all, "the dashboard");

    // The downloads hold what the pages show.
    let res = page(&app, &http, "/link/breakdowns.csv?key=poster").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .expect("type")
            .starts_with("text/csv")
    );
    let csv = res.text().await.expect("csv");
    for (value, n) in shown_rows(&html, "os") {
        assert!(
            csv.contains(&format!("os,\"{value}\",{n}\n")),
            "{value}: {csv}"
        );
    }
    let cells: u64 = heat_cells(&html).iter().map(|(_, n)| n).sum();
    let csv_cells: u64 = csv
        .lines()
        .filter(|l| l.starts_with("hour-weekday,"))
        .map(|l| {
            l.rsplit(',')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .expect("n")
        })
        .sum();
    assert_eq!((cells, csv_cells), (poster_scans, poster_scans));
    let res = page(&app, &http, "/dashboard/breakdowns.csv?days=90").await;
    assert_eq!(res.status(), StatusCode::OK);
    let res = page(&app, &http, "/dashboard/breakdowns.csv?days=8").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);

    // A page view changes nothing: the numbers are the index's.
    let again = page(&app, &http, "/link?key=poster")
        .await
        .text()
        .await
        .expect("body");
    assert_eq!(shown_rows(&again, "device"), shown_rows(&html, "device"));
}

/// Issue 33: scans a fallback answered are counted apart, so the
/// dashboard says how many beside its totals and in its busiest links, and
/// both breakdowns CSVs carry them in a row of their own; the numbers equal
/// `qrtag stats` over the same access log.
#[tokio::test]
async fn the_dashboard_and_the_breakdowns_say_how_many_scans_a_fallback_answered() {
    let (app, log, http) = console().await;
    let (event, home) = ("https://event.example/gig", "https://venue.example/home");
    let mut doc = qrtag::link::Link::new_document(
        &qrtag::values::destination::Destination::parse(event).expect("url"),
        false,
    );
    qrtag::link::set_fallback_url(
        &mut doc,
        Some(&qrtag::values::destination::Destination::parse_absolute(home).expect("url")),
    );
    qrtag::links::create_document(
        &app.store(),
        &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
        &doc,
        Some(&qrtag::values::link_key::LinkKey::parse("gig01").expect("key")),
    )
    .await
    .expect("create");
    app.link("home", home).await;
    let scan = |key: &'static str, want: &'static str| {
        let req = app
            .client
            .get(app.url(&format!("/{key}")))
            .header("user-agent", AGENTS[0])
            .header("x-forwarded-for", ADDRESSES[0]);
        async move {
            let res = req.send().await.expect("scan");
            assert_eq!(res.status(), StatusCode::FOUND, "/{key}");
            assert_eq!(res.headers()["location"], want, "/{key}");
        }
    };
    app.wait_for_status("/gig01", 302).await;
    app.wait_for_status("/home", 302).await;
    for _ in 0..2 {
        scan("gig01", event).await;
    }
    scan("home", home).await;
    let out = qrtag_cmd(&app.db, &["disable", "gig01"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    support::eventually(Duration::from_secs(5), || async {
        let res = app
            .client
            .get(app.url("/gig01"))
            .send()
            .await
            .expect("scan");
        res.headers().get("location").is_some_and(|l| l == home)
    })
    .await;
    for _ in 0..3 {
        scan("gig01", home).await;
    }
    // The waits' own requests had no User-Agent (bots); one of them, after
    // the disable, was answered by the fallback too: `qrtag stats` says,
    // once the log holds the three scans (its lines are written after the
    // answers, so a loaded machine may read it before them).
    let stats = || {
        let out = qrtag_cmd(
            &app.db,
            &["stats", "--format", "json", log.to_str().expect("utf-8")],
        );
        serde_json::from_slice::<Value>(&out.stdout).expect("JSON")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let report = loop {
        let report = stats();
        if report["total"]["fallback"].as_u64().expect("a total") >= 3 {
            break report;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the log never held the three fallback scans: {report}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let fallback = report["total"]["fallback"].as_u64().expect("a total");

    let totals = format!(r#"<dd data-fallback="{fallback}">"#);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let html = loop {
        let html = page(&app, &http, "/dashboard")
            .await
            .text()
            .await
            .expect("body");
        if html.contains(&totals) {
            break html;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never counted: {html}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let scans = report["total"]["scans"].as_u64().expect("scans");
    assert!(
        html.contains(&format!(r#"<dd data-scans="{scans}">"#)),
        "{html}"
    );
    // The busiest links, each with its fallback answers.
    let row = |key: &str| {
        let at = html
            .find(&format!(r#"<tr data-key="{key}""#))
            .unwrap_or_else(|| panic!("{key} among the busiest: {html}"));
        html[at..].split("</tr>").next().expect("a row").to_owned()
    };
    assert!(
        row("gig01").contains(&format!(r#"data-fallback="{fallback}""#)),
        "{}",
        row("gig01")
    );
    assert!(
        row("home").contains(r#"data-fallback="0""#),
        "{}",
        row("home")
    );
    assert!(
        html.contains(&format!(
            r#"id="breakdowns-fallback" data-fallback="{fallback}""#
        )),
        "{html}"
    );

    let row = format!("\nfallback,all,{fallback}\n");
    let csv = page(&app, &http, "/dashboard/breakdowns.csv?days=7")
        .await
        .text()
        .await
        .expect("csv");
    assert!(csv.ends_with(&row[1..]) && csv.contains(&row), "{csv}");
    let csv = page(&app, &http, "/link/breakdowns.csv?key=gig01")
        .await
        .text()
        .await
        .expect("csv");
    assert!(
        csv.starts_with("dimension,value,scans\nlink,\"gig01\","),
        "{csv}"
    );
    assert!(csv.ends_with(&row[1..]), "{csv}");
    let csv = page(&app, &http, "/link/breakdowns.csv?key=home")
        .await
        .text()
        .await
        .expect("csv");
    assert!(csv.ends_with("\nfallback,all,0\n"), "{csv}");
}

/// A `--geoip-db` that is not there or not an MMDB is one line, exit 2,
/// before anything starts.
#[test]
fn a_bad_geoip_db_on_serve_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let junk = dir.path().join("junk.mmdb");
    std::fs::write(&junk, "not a database").expect("write");
    for db in [dir.path().join("missing.mmdb"), junk] {
        let out = qrtag_cmd(
            &dir.path().join("qrtag.db"),
            &[
                "serve",
                "--console",
                "--geoip-db",
                db.to_str().expect("utf-8"),
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{db:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--geoip-db"), "{err}");
        assert!(!dir.path().join("qrtag.db").exists(), "nothing written");
    }
}

//! `serve --scans-from` (issue 38): the console's pages and the REST
//! scans endpoints answered from a real ClickHouse 18.16
//! (`support/clickhouse.rs`) show the embedded index's numbers over the
//! same traffic, and with ClickHouse away the pages still render and say
//! so, while the REST API answers 503.

#[path = "support/clickhouse.rs"]
mod clickhouse;
mod support;

use std::time::Duration;

use chrono::{Days, NaiveDate, Utc};
use clickhouse::ClickHouse;
use support::console::{get_page, logged_in, set_password};
use support::process::ServerProcess;
use support::{qrtag_cmd, qrtag_in};

const PASSWORD: &str = "a long console password";
const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
/// The same agents as the access log writes them.
const IPHONE_LOGGED: &str =
    "Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29";
const BOT_LOGGED: &str = "Mozilla%2F5.0%20%28compatible%3B%20Googlebot%2F2.1%29";
const WAIT: Duration = Duration::from_secs(40);

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

fn scanner(n: u8) -> String {
    format!("0Vh3kY2s4fLq9ZxA0{n:02}")
}

/// One line of [`old_log`]: days ago, scanner, agent, target, status, method.
type OldLine = (
    u64,
    Option<u8>,
    &'static str,
    &'static str,
    u16,
    &'static str,
);

/// Scans of `/crowd` on [`CROWD_AGO`], past `clickhouse::busy::BUSY`, so
/// the roll keeps its day as plain counts: scans from 40 scanners, two
/// bots, a HEAD, two destinations.
const CROWD: u64 = 123;
const CROWD_AGO: u64 = 40;
/// The scans of `/crowd` in [`CROWD`].
const CROWD_SCANS: u64 = CROWD - 3;

/// Lines of days before today, as an older node's log would hold them.
fn old_log(today: NaiveDate) -> (String, u64) {
    let lines: &[OldLine] = &[
        (40, Some(1), IPHONE_LOGGED, "/tag01", 302, "GET"),
        (40, Some(2), IPHONE_LOGGED, "/tag01", 302, "GET"),
        (9, Some(1), IPHONE_LOGGED, "/docs", 302, "GET"),
        (9, Some(3), IPHONE_LOGGED, "/promo", 302, "GET"),
        (5, Some(1), IPHONE_LOGGED, "/tag01", 302, "GET"),
        (5, Some(4), BOT_LOGGED, "/tag01", 302, "GET"),
        (5, Some(2), IPHONE_LOGGED, "/docs/api", 302, "GET"),
        (2, Some(3), IPHONE_LOGGED, "/promo", 302, "GET"),
        (2, Some(3), IPHONE_LOGGED, "/promo", 302, "GET"),
        (2, Some(5), IPHONE_LOGGED, "/promo", 302, "GET"),
        (2, Some(1), IPHONE_LOGGED, "/tag01", 302, "HEAD"),
        (2, Some(1), IPHONE_LOGGED, "/nosuch", 404, "GET"),
        (1, None, IPHONE_LOGGED, "/tag01", 302, "GET"),
    ];
    let crowd = (0..CROWD).map(|i| {
        let (ua, method) = match i {
            0 | 1 => (BOT_LOGGED, "GET"),
            2 => (IPHONE_LOGGED, "HEAD"),
            _ => (IPHONE_LOGGED, "GET"),
        };
        (
            CROWD_AGO,
            Some((i % 40) as u8 + 10),
            ua,
            "/crowd",
            302,
            method,
        )
    });
    let lines: Vec<OldLine> = lines.iter().copied().chain(crowd).collect();
    let mut out = String::new();
    for (i, (ago, id, ua, target, status, method)) in lines.iter().enumerate() {
        let day = today - Days::new(*ago);
        let id = id.map_or("-".to_owned(), scanner);
        let location = match (*status, *target) {
            (302, "/crowd") if i % 3 == 0 => "https://example.com/crowd/a",
            (302, "/crowd") => "https://example.com/crowd/b",
            (302, _) => "https://example.com/",
            _ => "-",
        };
        out.push_str(&format!(
            "{}{:02}{:02}{:02}.0 192.0.2.1 {id} {ua} {target} {status} {location} {method} -\n",
            day.format("%Y%m%d"),
            12 + i / 3600,
            i / 60 % 60,
            i % 60
        ));
    }
    (out, lines.len() as u64)
}

/// `GET path` of the REST API at `api`: its status and JSON body.
async fn rest(api: &str, token: &str, path: &str) -> (u16, serde_json::Value) {
    let r = client()
        .get(format!("http://{api}/api/v1{path}"))
        .bearer_auth(token)
        .send()
        .await
        .expect("the REST API answers");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or_default())
}

/// The numbers a page fragment shows: every `data-` attribute that
/// carries one (or names the row it is in), in document order, between
/// the first `from` and the next `to` after it.
fn shown(html: &str, from: &str, to: &str) -> Vec<String> {
    const NAMES: &[&str] = &[
        "key",
        "scans",
        "unique",
        "last",
        "day",
        "period",
        "total",
        "fallback",
        "link",
        "destination",
    ];
    let start = html
        .find(from)
        .unwrap_or_else(|| panic!("no {from} in {html}"));
    let rest = &html[start..];
    let part = &rest[..rest.find(to).unwrap_or_else(|| panic!("no {to} in {rest}"))];
    let mut out = Vec::new();
    let mut at = part;
    while let Some(i) = at.find(" data-") {
        at = &at[i + " data-".len()..];
        let Some((name, after)) = at.split_once("=\"") else {
            break;
        };
        let value = &after[..after.find('"').expect("a closing quote")];
        if NAMES.contains(&name) {
            out.push(format!("{name}={value}"));
        }
    }
    out
}

/// One console page from each server.
async fn both(
    (a, a_console): (&reqwest::Client, &str),
    (b, b_console): (&reqwest::Client, &str),
    path: &str,
) -> (String, String) {
    (
        get_page(a, &format!("{a_console}{path}")).await,
        get_page(b, &format!("{b_console}{path}")).await,
    )
}

fn value_of(shown: &[String], name: &str) -> Option<u64> {
    shown
        .iter()
        .find_map(|s| s.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.parse().ok())
}

/// Every view of all links answers the same on both servers: the REST
/// API's `/scans` (the last 30 days and since `year`), the dashboard and
/// its breakdowns download (30 days and a year).
async fn all_links_agree(
    index_side: (&reqwest::Client, &str),
    ch_side: (&reqwest::Client, &str),
    (index_api, ch_api, token): (&str, &str, &str),
    year: &str,
) {
    for range in [String::new(), format!("?since={year}")] {
        let (s1, index) = rest(index_api, token, &format!("/scans{range}")).await;
        let (s2, answered) = rest(ch_api, token, &format!("/scans{range}")).await;
        assert_eq!((s1, s2), (200, 200), "{index} {answered}");
        for field in ["in_range", "daily", "top", "breakdowns"] {
            assert_eq!(answered[field], index[field], "/scans{range} {field}");
        }
    }
    for days in ["30", "365"] {
        let (index, answered) = both(
            index_side,
            ch_side,
            &format!("/dashboard/breakdowns.csv?days={days}"),
        )
        .await;
        assert_eq!(answered, index, "all links' breakdowns, {days} days");
        let (index, answered) = both(index_side, ch_side, &format!("/dashboard?days={days}")).await;
        let want = shown(&index, "<h1>", "id=\"breakdowns\"");
        assert_eq!(
            shown(&answered, "<h1>", "id=\"breakdowns\""),
            want,
            "dashboard, {days} days"
        );
    }
}

/// What one link's console pages show, as the index answered them.
#[derive(Debug)]
struct LinkShown {
    numbers: Vec<String>,
    destinations: Vec<String>,
    breakdowns: String,
}

/// Every link's page answers the same on both servers: the REST API's
/// `/links/{key}/scans`, the console's link page (its numbers and chart
/// for 30 days and a year, its destinations) and its breakdowns download.
/// What the index's pages showed, by key.
async fn links_agree(
    index_side: (&reqwest::Client, &str),
    ch_side: (&reqwest::Client, &str),
    (index_api, ch_api, token): (&str, &str, &str),
    year: &str,
) -> std::collections::HashMap<&'static str, LinkShown> {
    let mut out = std::collections::HashMap::new();
    for key in ["tag01", "docs", "promo", "quiet", "gig", "crowd"] {
        let path = format!("/links/{key}/scans?since={year}");
        let (_, index) = rest(index_api, token, &path).await;
        let (status, answered) = rest(ch_api, token, &path).await;
        assert_eq!(status, 200, "{answered}");
        for field in [
            "scans",
            "unique_scanners",
            "head",
            "bots",
            "not_found",
            "in_range",
            "daily",
            "breakdowns",
            "destinations",
        ] {
            assert_eq!(answered[field], index[field], "{key} {field}");
        }
        let mut numbers = Vec::new();
        for days in ["30", "365"] {
            let (index, answered) =
                both(index_side, ch_side, &format!("/link?key={key}&days={days}")).await;
            let want = shown(&index, "id=\"scans\"", "id=\"top\"");
            assert_eq!(
                shown(&answered, "id=\"scans\"", "id=\"top\""),
                want,
                "{key}, {days} days"
            );
            assert!(!answered.contains("id=\"scans-away\""), "{answered}");
            numbers = want;
        }
        // Its scans per destination (issue 34).
        let (index, answered) = both(index_side, ch_side, &format!("/link?key={key}")).await;
        let destinations = if key == "quiet" {
            for page in [&index, &answered] {
                assert!(page.contains("No scans sent anywhere yet."), "{page}");
            }
            Vec::new()
        } else {
            let want = shown(&index, "id=\"destinations-heading\"", "</table>");
            assert_eq!(
                shown(&answered, "id=\"destinations-heading\"", "</table>"),
                want,
                "{key}'s destinations"
            );
            want
        };
        // The breakdowns, as the page's CSV download gives them.
        let (breakdowns, answered) = both(
            index_side,
            ch_side,
            &format!("/link/breakdowns.csv?key={key}"),
        )
        .await;
        assert_eq!(answered, breakdowns, "{key}'s breakdowns");
        out.insert(
            key,
            LinkShown {
                numbers,
                destinations,
                breakdowns,
            },
        );
    }
    out
}

/// The same traffic (lines of earlier days in an older log, loaded into
/// ClickHouse with `stats --load-into` and followed by the index with
/// `--scan-log`, and live scans sent with `--scans-to`) seen by a server
/// with the embedded index and by one with `--scans-from`, which reads no
/// log: the link pages, the dashboard, the list's scans column and the
/// REST scans endpoints are equal. ClickHouse stopped: the pages still
/// render, saying the numbers are unavailable, and the REST API is 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_and_rest_api_answer_from_clickhouse_as_the_index_does() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut ch = ClickHouse::start(&dir.path().join("ch")).await;
    let url = ch.url("qrtag");
    let out = qrtag_in(dir.path(), &["setup-clickhouse", "--clickhouse", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let db = dir.path().join("qrtag.db");
    for (key, to) in [
        ("tag01", "https://example.com/poster"),
        ("docs", "https://example.com/docs"),
        ("promo", "https://example.com/promo"),
        ("quiet", "https://example.com/quiet"),
        ("crowd", "https://example.com/crowd/a"),
    ] {
        let out = qrtag_cmd(&db, &["new", to, "--key", key]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    // Disabled, with a fallback: its scans are sent there, counted apart.
    let out = qrtag_cmd(
        &db,
        &[
            "new",
            "https://example.com/gig",
            "--key",
            "gig",
            "--inactive",
            "--fallback",
            "https://venue.example/home",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    set_password(&db, PASSWORD);
    let out = qrtag_cmd(
        &db,
        &["api-key", "create", "--name", "t", "--scope", "read"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let token = text(&out.stdout).trim().to_owned();

    let today = Utc::now().date_naive();
    let (old, old_lines) = old_log(today);
    let old_path = dir.path().join("old.log");
    std::fs::write(&old_path, old).expect("old.log");
    let old_arg = old_path.to_str().unwrap();
    let out = qrtag_cmd(&db, &["stats", "--load-into", &url, old_arg]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let log = dir.path().join("access.log");
    let indexed = ServerProcess::spawn(
        &db,
        &[
            "--console",
            "--scans-to",
            &url,
            "--scan-log",
            old_arg,
            "--scan-log",
            log.to_str().unwrap(),
            "--api-listen",
            "127.0.0.1:0",
        ],
        &[],
        false,
    )
    .await
    .loaded()
    .await;
    // Live traffic: a bot, a HEAD, a 404 and two scans a fallback
    // answers, then scans: one phone three
    // times (its cookie kept), two phones once each. A scan is the last
    // line, so an index that counts every scan has read every line.
    let c = client();
    let get = |path: &str, ua: &str| c.get(indexed.url(path)).header("user-agent", ua.to_owned());
    assert_eq!(
        get("/docs", GOOGLEBOT).send().await.expect("bot").status(),
        302
    );
    let head = c
        .head(indexed.url("/promo"))
        .header("user-agent", IPHONE)
        .send()
        .await
        .expect("HEAD");
    assert_eq!(head.status(), 302);
    assert_eq!(
        get("/nope", IPHONE).send().await.expect("404").status(),
        404
    );
    for _ in 0..2 {
        let r = get("/gig", IPHONE).send().await.expect("fallback");
        assert_eq!(
            (r.status().as_u16(), r.headers().get("location").cloned()),
            (302, Some("https://venue.example/home".parse().unwrap()))
        );
    }
    let first = get("/tag01", IPHONE).send().await.expect("scan");
    let cookie = first
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::to_owned)
        .expect("a tracking cookie");
    for _ in 0..2 {
        let r = get("/tag01", IPHONE)
            .header("cookie", &cookie)
            .send()
            .await
            .expect("scan");
        assert_eq!(r.status(), 302);
    }
    for path in ["/docs", "/docs", "/promo"] {
        assert_eq!(get(path, IPHONE).send().await.expect("scan").status(), 302);
    }
    let live_lines = 11;
    ch.holds_rows(old_lines + live_lines, WAIT).await;

    // The index has read every line: 10 scans from the old log, 6 live.
    let index_api = indexed.api_addr().await;
    let year = (today - Days::new(364)).format("%Y-%m-%d").to_string();
    support::poll::until(WAIT, "the index to count every scan", || async {
        let (status, v) = rest(&index_api, &token, &format!("/scans?since={year}")).await;
        (status == 200 && v["in_range"] == 16 + CROWD_SCANS).then_some(())
    })
    .await;

    let from_ch = ServerProcess::spawn(
        &db,
        &[
            "--console",
            "--scans-from",
            &url,
            "--access-log",
            dir.path().join("other.log").to_str().unwrap(),
            "--no-snapshot-file",
            "--api-listen",
            "127.0.0.1:0",
        ],
        &[],
        false,
    )
    .await
    .loaded()
    .await;
    let ch_api = from_ch.api_addr().await;
    let index_console = indexed.admin_url("/console");
    let ch_console = from_ch.admin_url("/console");
    let (index_http, ch_http) = (
        logged_in(&index_console, PASSWORD).await,
        logged_in(&ch_console, PASSWORD).await,
    );
    let index_side = (&index_http, index_console.as_str());
    let ch_side = (&ch_http, ch_console.as_str());
    // The REST API and the dashboard: every link's numbers and breakdowns.
    let apis = (index_api.as_str(), ch_api.as_str(), token.as_str());
    all_links_agree(index_side, ch_side, apis, &year).await;
    let (_, top) = rest(&ch_api, &token, "/scans").await;
    assert_eq!(
        top["top"],
        serde_json::json!([
            {"key": "promo", "scans": 5},
            {"key": "tag01", "scans": 5},
            {"key": "docs", "scans": 4}
        ])
    );
    let pages = links_agree(index_side, ch_side, apis, &year).await;
    let (_, gig) = rest(&ch_api, &token, "/links/gig/scans").await;
    assert_eq!(
        gig["destinations"],
        serde_json::json!([
            {"destination": "https://venue.example/home", "fallback": true, "scans": 2}
        ]),
        "a dead link's fallback answers, per destination from ClickHouse: {gig}"
    );
    let (_, tag01) = rest(&ch_api, &token, &format!("/links/tag01/scans?since={year}")).await;
    assert_eq!(
        tag01["breakdowns"]["dimensions"][0]["values"],
        serde_json::json!([{"value": "phone", "scans": 7}]),
        "breakdowns from ClickHouse: {tag01}"
    );
    let tag01 = &pages["tag01"];
    assert_eq!(value_of(&tag01.numbers, "scans"), Some(7), "{tag01:?}");
    assert_eq!(value_of(&tag01.numbers, "unique"), Some(3), "{tag01:?}");
    assert_eq!(
        tag01.destinations,
        [
            "destination=https://example.com/",
            "fallback=false",
            "scans=4",
            "destination=https://example.com/poster",
            "fallback=false",
            "scans=3"
        ]
    );
    assert!(tag01.breakdowns.lines().count() > 3, "{}", tag01.breakdowns);
    assert_eq!(value_of(&pages["gig"].numbers, "fallback"), Some(2));
    let crowd = &pages["crowd"];
    assert_eq!(value_of(&crowd.numbers, "scans"), Some(CROWD_SCANS));
    assert_eq!(value_of(&crowd.numbers, "unique"), Some(40));
    let (index, _) = both(index_side, ch_side, "/dashboard?days=30").await;
    let want = shown(&index, "<h1>", "id=\"breakdowns\"");
    assert_eq!(value_of(&want, "scans"), Some(14), "{want:?}");
    assert_eq!(value_of(&want, "fallback"), Some(2), "{want:?}");
    // The list's scans column.
    let (index, answered) = both(index_side, ch_side, "/links").await;
    let want = shown(&index, "id=\"links\"", "</table>");
    assert_eq!(shown(&answered, "id=\"links\"", "</table>"), want);
    let column: Vec<&String> = want.iter().filter(|s| s.starts_with("scans=")).collect();
    assert_eq!(
        column,
        [
            "scans=0", "scans=4", "scans=0", "scans=5", "scans=0", "scans=5"
        ],
        "{want:?}"
    );
    // "Never scanned" needs every link's scans: not available from
    // ClickHouse, and said so.
    let (index, answered) = both(index_side, ch_side, "/links?state=never-scanned").await;
    assert_eq!(
        shown(&index, "id=\"links\"", "</table>"),
        ["key=gig", "scans=0", "key=quiet", "scans=0"]
    );
    assert!(
        answered.contains("come from ClickHouse), so links cannot be filtered by them"),
        "{answered}"
    );

    // Rolled up (`clickhouse::rollup`): once the server has rolled every
    // closed day with rows, the same numbers come from `day_totals`.
    let now = Utc::now();
    let closed = |ago: u64| {
        let end = (today - Days::new(ago) + Days::new(1))
            .and_hms_opt(1, 0, 0)
            .unwrap();
        end.and_utc() <= now
    };
    let due = [40u64, 9, 5, 2, 1].iter().filter(|a| closed(**a)).count();
    support::poll::until(WAIT, "every closed day rolled up", || async {
        let n = ch
            .must("SELECT count(DISTINCT day) FROM qrtag.rolled_days FORMAT TSV")
            .await;
        (n.trim() == due.to_string()).then_some(())
    })
    .await;
    // And then each period's window (`clickhouse::windows`), which the
    // dashboard's and `/scans`' busiest links are ranked from.
    support::poll::until(WAIT, "the four periods' windows built", || async {
        let n = ch
            .must("SELECT count() FROM qrtag.windows FORMAT TSV")
            .await;
        (n.trim() == "4").then_some(())
    })
    .await;
    // The crowd's day kept as its own plain counts (`clickhouse::busy`),
    // which its page reads in place of the day's states.
    assert_eq!(
        ch.must("SELECT link, count() FROM qrtag.busy_days GROUP BY link FORMAT TSV")
            .await,
        "crowd\t1\n"
    );
    all_links_agree(index_side, ch_side, apis, &year).await;
    links_agree(index_side, ch_side, apis, &year).await;
    // A back-fill of a closed day: the load rolls it again, and the
    // dashboard counts what it added, as the index does.
    let mut lines = std::fs::read_to_string(&old_path).expect("old.log");
    lines.push_str(&format!(
        "{}120000.0 192.0.2.1 {} {IPHONE_LOGGED} /promo 302 https://example.com/ GET -\n",
        (today - Days::new(9)).format("%Y%m%d"),
        scanner(9)
    ));
    // And one on the crowd's day, whose plain counts the roll replaces:
    // with merges stopped, so the page must pick the new roll's rows
    // itself rather than count both.
    ch.must("SYSTEM STOP MERGES qrtag.link_counts").await;
    lines.push_str(&format!(
        "{}130000.0 192.0.2.1 {} {IPHONE_LOGGED} /crowd 302 https://example.com/crowd/c GET -\n",
        (today - Days::new(CROWD_AGO)).format("%Y%m%d"),
        scanner(99)
    ));
    std::fs::write(&old_path, lines).expect("old.log");
    support::poll::until(WAIT, "the index to count the back-filled scan", || async {
        let (status, v) = rest(&index_api, &token, &format!("/scans?since={year}")).await;
        (status == 200 && v["in_range"] == 18 + CROWD_SCANS).then_some(())
    })
    .await;
    let out = qrtag_cmd(&db, &["stats", "--load-into", &url, old_arg]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!(
            "{due} closed day{} rolled up again",
            if due == 1 { "" } else { "s" }
        )),
        "{}",
        text(&out.stdout)
    );
    // Every period's window holds a day the log has rows of.
    assert!(
        text(&out.stdout).contains("4 periods summed again"),
        "{}",
        text(&out.stdout)
    );
    let (_, v) = rest(&ch_api, &token, &format!("/scans?since={year}")).await;
    assert_eq!(v["in_range"], 18 + CROWD_SCANS, "{v}");
    all_links_agree(index_side, ch_side, apis, &year).await;
    let pages = links_agree(index_side, ch_side, apis, &year).await;
    let crowd = &pages["crowd"];
    assert_eq!(value_of(&crowd.numbers, "scans"), Some(CROWD_SCANS + 1));
    assert_eq!(value_of(&crowd.numbers, "unique"), Some(41));
    assert!(
        crowd
            .destinations
            .contains(&"destination=https://example.com/crowd/c".to_owned()),
        "{crowd:?}"
    );

    // ClickHouse away: the pages render with their numbers left out and
    // one line saying why; the REST API answers 503.
    ch.stop();
    for path in [
        "/link?key=tag01".to_owned(),
        "/dashboard".to_owned(),
        "/links".to_owned(),
    ] {
        let page = get_page(&ch_http, &format!("{ch_console}{path}")).await;
        assert!(
            page.contains("id=\"scans-away\"") && page.contains("Scan numbers are unavailable"),
            "{path}: {page}"
        );
        assert!(!page.contains("data-scans=\"7\""), "{path}: {page}");
    }
    for path in ["/scans", "/links/tag01/scans"] {
        let r = client()
            .get(format!("http://{ch_api}/api/v1{path}"))
            .bearer_auth(&token)
            .send()
            .await
            .expect("answered");
        assert_eq!(r.status(), 503, "{path}");
        assert_eq!(
            r.headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("application/problem+json"),
            "{path}"
        );
    }
    from_ch.stop().await;
    indexed.stop().await;
}

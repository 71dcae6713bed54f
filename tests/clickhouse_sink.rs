//! `serve --scans-to` (issue 38): the real binary's scans in a real
//! ClickHouse 18.16 (`support/clickhouse.rs`), compared with what `qrtag
//! stats` and `stats --load-into` make of the same access log.

#[path = "support/clickhouse.rs"]
mod clickhouse;
mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clickhouse::ClickHouse;
use support::process::ServerProcess;
use support::promtool::promtool_check;
use support::{qrtag_cmd, qrtag_in};

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/// How long rows may take to arrive: a batch a second, and after an
/// outage the back-off's cap (5 s) before the next attempt.
const ARRIVAL: Duration = Duration::from_secs(40);

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// A ClickHouse with qrtag's schema in `qrtag`, and a database with the
/// links `tag01` and `docs` (a path below it counts under it).
/// A ClickHouse with qrtag's schema in database `qrtag`.
async fn with_schema(dir: &Path) -> ClickHouse {
    let ch = ClickHouse::start(&dir.join("ch")).await;
    let out = qrtag_in(dir, &["setup-clickhouse", "--clickhouse", &ch.url("qrtag")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    ch
}

/// `serve` sending its scans to `url` as node `edge-1`.
async fn sending_to(db: &Path, url: &str) -> ServerProcess {
    ServerProcess::spawn(
        db,
        &["--scans-to", url, "--node-name", "edge-1"],
        &[],
        false,
    )
    .await
    .loaded()
    .await
}

/// `stats --load-into url` of `log` as node `edge-1`, the sink's node.
fn load_as_edge_1(dir: &Path, db: &Path, url: &str, log: &Path) {
    let out = qrtag_in(
        dir,
        &[
            "--db",
            db.to_str().unwrap(),
            "stats",
            "--load-into",
            url,
            "--node-name",
            "edge-1",
            log.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

async fn setup(dir: &Path) -> (ClickHouse, PathBuf) {
    let ch = with_schema(dir).await;
    let db = dir.join("qrtag.db");
    for args in [
        ["new", "https://example.com/poster", "--key", "tag01"],
        ["new", "https://example.com/docs", "--key", "docs"],
    ] {
        let out = qrtag_cmd(&db, &args);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    (ch, db)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

async fn scan(c: &reqwest::Client, server: &ServerProcess, path: &str, ua: &str) -> u16 {
    c.get(server.url(path))
        .header("user-agent", ua)
        .send()
        .await
        .expect("the scan is answered")
        .status()
        .as_u16()
}

fn log_lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .count()
}

/// Waits until the access log holds `n` lines.
async fn logged(path: &Path, n: usize) {
    support::poll::until(Duration::from_secs(10), "the access log's lines", || {
        std::future::ready((log_lines(path) >= n).then_some(()))
    })
    .await;
}

/// Per link, ClickHouse's `link_days` says what `qrtag stats` says of the logs.
async fn counts_equal_stats(ch: &ClickHouse, db: &Path, logs: &[&Path]) {
    let mut args = vec!["stats", "--format", "json"];
    args.extend(logs.iter().map(|p| p.to_str().unwrap()));
    let out = qrtag_cmd(db, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys = report["keys"].as_array().expect("keys");
    assert!(!keys.is_empty(), "{report}");
    // An insert reaches `scans` a moment before its view's rows reach
    // `link_days` (a retry after ClickHouse was killed mid-insert, say):
    // a count short of the log's is asked again, up to ARRIVAL.
    let deadline = Instant::now() + ARRIVAL;
    for entry in keys {
        let key = entry["key"].as_str().unwrap();
        let want = format!(
            "{}\t{}\t{}\t{}\n",
            entry["requests"], entry["scans"], entry["bot"], entry["unique_scanners"]
        );
        loop {
            let got = ch
                .must(&format!(
                    "SELECT uniqExactMerge(requests), uniqExactIfMerge(scans), uniqExactIfMerge(bots), \
                     uniqExactIfMerge(scanners) FROM qrtag.link_days WHERE link = '{key}' FORMAT TSV"
                ))
                .await;
            if got == want || Instant::now() > deadline {
                assert_eq!(got, want, "{key}: {entry}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

async fn admin_text(server: &ServerProcess, path: &str) -> (u16, String) {
    let r = reqwest::get(server.admin_url(path))
        .await
        .expect("admin answers");
    (r.status().as_u16(), r.text().await.expect("body"))
}

fn metric(exposition: &str, name: &str) -> u64 {
    exposition
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} not in\n{exposition}"))
}

/// Scans through `serve --scans-to` arrive as the rows `stats --load-into`
/// makes of the same log (a load afterwards adds no row), before and
/// after a rotation, with the derived fields and the truncated address,
/// and per link ClickHouse counts what `qrtag stats` counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_arrive_as_the_rows_a_load_of_the_log_makes() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (ch, db) = setup(dir.path()).await;
    let url = ch.url("qrtag");
    let server = ServerProcess::spawn(
        &db,
        &[
            "--scans-to",
            &url,
            "--node-name",
            "edge-1",
            "--client-ip",
            "truncated",
        ],
        &[],
        false,
    )
    .await
    .loaded()
    .await;
    let log = dir.path().join("access.log");
    let c = client();
    assert_eq!(scan(&c, &server, "/tag01", IPHONE).await, 302);
    assert_eq!(scan(&c, &server, "/tag01", IPHONE).await, 302);
    assert_eq!(scan(&c, &server, "/docs/api?x=1", IPHONE).await, 302);
    assert_eq!(scan(&c, &server, "/tag01", GOOGLEBOT).await, 302);
    assert_eq!(scan(&c, &server, "/nope1", IPHONE).await, 404);
    logged(&log, 5).await;
    ch.holds_rows(5, ARRIVAL).await;

    // logrotate: renamed, then SIGHUP; the new file names itself.
    let rotated = dir.path().join("access.log.1");
    std::fs::rename(&log, &rotated).unwrap();
    server.signal("HUP");
    support::poll::until(Duration::from_secs(10), "the new log", || {
        std::future::ready(log.exists().then_some(()))
    })
    .await;
    assert_eq!(scan(&c, &server, "/tag01", IPHONE).await, 302);
    assert_eq!(scan(&c, &server, "/docs", IPHONE).await, 302);
    logged(&log, 2).await;
    let lines = log_lines(&rotated) + log_lines(&log);
    assert_eq!(lines, 7);
    ch.holds_rows(lines as u64, ARRIVAL).await;

    let row = ch
        .must(
            "SELECT node, device, os, browser, client_ip, link, scan FROM qrtag.scans FINAL \
             WHERE target = '/docs/api?x=1' FORMAT TSV",
        )
        .await;
    assert_eq!(
        row, "edge-1\tphone\tiOS 17\tMobile Safari\t127.0.0.0\tdocs\t1\n",
        "derived as a load derives, the address as the log keeps it"
    );
    let files = ch
        .must("SELECT uniqExact(log_id), min(line_offset) FROM qrtag.scans FORMAT TSV")
        .await;
    assert_eq!(files, "2\t0\n", "two files, each from its first byte");

    // The same lines loaded from the logs are the same rows: nothing added.
    let out = qrtag_in(
        dir.path(),
        &[
            "--db",
            db.to_str().unwrap(),
            "stats",
            "--load-into",
            &url,
            "--node-name",
            "edge-1",
            rotated.to_str().unwrap(),
            log.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        ch.must("SELECT count() FROM qrtag.scans FINAL").await,
        format!("{lines}\n"),
        "a load of the same log adds no row"
    );
    counts_equal_stats(&ch, &db, &[&rotated, &log]).await;

    let (status, metrics) = admin_text(&server, "/metrics").await;
    assert_eq!(status, 200);
    promtool_check(&metrics);
    assert_eq!(metric(&metrics, "qrtag_scan_sink_rows_sent_total"), 7);
    assert_eq!(metric(&metrics, "qrtag_scan_sink_rows_dropped_total"), 0);
    assert_eq!(metric(&metrics, "qrtag_scan_sink_rows_waiting"), 0);
    let (status, ready) = admin_text(&server, "/readyz").await;
    assert_eq!(status, 200, "{ready}");
    assert!(ready.starts_with("ready:"), "{ready}");
    assert!(
        ready.contains("7 rows sent, 0 waiting (queue 100000), 0 dropped"),
        "{ready}"
    );
    server.stop().await;

    // A restart appends to the log it finds: its lines keep that file's
    // name (its first line, read back) and continue its offsets.
    let args = [
        "--scans-to",
        url.as_str(),
        "--node-name",
        "edge-1",
        "--client-ip",
        "truncated",
    ];
    let server = ServerProcess::spawn(&db, &args, &[], false)
        .await
        .loaded()
        .await;
    assert_eq!(scan(&c, &server, "/tag01", IPHONE).await, 302);
    logged(&log, 3).await;
    ch.holds_rows(lines as u64 + 1, ARRIVAL).await;
    load_as_edge_1(dir.path(), &db, &url, &log);
    assert_eq!(
        ch.must("SELECT count() FROM qrtag.scans FINAL").await,
        format!("{}\n", lines + 1),
        "the restarted server's row is the one a load makes"
    );
    server.stop().await;
}

/// ClickHouse killed while scans flow, and started again on the same
/// ports and data: every scan answered 302 and no slower than before, and
/// every line arrives once it is back, none twice.
///
/// Stopped for [`OUTAGE`], not the 30 s: by then the sink's
/// back-off has reached its cap (0.25 + 0.5 + 1 + 2 + 4 s, then 5 s a
/// try), which is the state it stays in for any longer outage; a longer
/// one only queues more rows, which the queue test covers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clickhouse_away_while_scans_flow_slows_no_scan_and_loses_no_row() {
    const OUTAGE: Duration = Duration::from_secs(12);
    const PHASE: Duration = Duration::from_secs(3);
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut ch, db) = setup(dir.path()).await;
    let url = ch.url("qrtag");
    let server = sending_to(&db, &url).await;
    let c = client();
    // Warm: the first scan compiles nothing on the request path, but
    // connections and caches settle.
    for _ in 0..5 {
        assert_eq!(scan(&c, &server, "/tag01", IPHONE).await, 302);
    }

    /// Scans for `d`, each timed; every one must be a 302.
    async fn scans_for(c: &reqwest::Client, server: &ServerProcess, d: Duration) -> Vec<Duration> {
        let end = Instant::now() + d;
        let mut times = Vec::new();
        let mut i = 0u32;
        while Instant::now() < end {
            let path = if i.is_multiple_of(3) {
                "/docs/x"
            } else {
                "/tag01"
            };
            let started = Instant::now();
            assert_eq!(scan(c, server, path, IPHONE).await, 302, "scan {i}");
            times.push(started.elapsed());
            i += 1;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        times
    }
    fn p95(mut t: Vec<Duration>) -> Duration {
        t.sort_unstable();
        t[(t.len() * 95 / 100).min(t.len() - 1)]
    }

    let before = scans_for(&c, &server, PHASE).await;
    ch.stop();
    let during = scans_for(&c, &server, OUTAGE).await;
    ch.resume().await;
    let after = scans_for(&c, &server, Duration::from_secs(1)).await;
    let (p_before, p_during) = (p95(before.clone()), p95(during.clone()));
    assert!(
        p_during <= p_before * 5 + Duration::from_millis(20),
        "p95 {p_during:?} while ClickHouse was away, {p_before:?} before"
    );

    // Every scan made is in the log once; ClickHouse must then hold the
    // log's lines, each once. A line that is none of this test's scans
    // (another test's stray request to this port, say) is shown, not
    // counted as one: the log is the record of truth.
    let log = dir.path().join("access.log");
    let scans = 5 + before.len() + during.len() + after.len();
    let ours =
        |l: &&str| (l.contains(" /tag01 ") || l.contains(" /docs/x ")) && l.contains(" 302 ");
    // Until this test's own lines are all written: a line that is none of
    // them must not end the wait early.
    let text = support::poll::until(Duration::from_secs(10), "this test's scans logged", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        std::future::ready((text.lines().filter(ours).count() >= scans).then_some(text))
    })
    .await;
    let others: Vec<&str> = text.lines().filter(|l| !ours(l)).collect();
    assert_eq!(
        text.lines().filter(ours).count(),
        scans,
        "{} before, {} during, {} after; other lines: {others:#?}",
        before.len(),
        during.len(),
        after.len()
    );
    if !others.is_empty() {
        eprintln!("lines that are no scan of this test: {others:#?}");
    }
    let lines = text.lines().count();
    ch.holds_rows(lines as u64, ARRIVAL).await;
    assert_eq!(
        ch.must("SELECT uniqExact(node, log_id, line_offset) FROM qrtag.scans FORMAT TSV")
            .await,
        format!("{lines}\n"),
        "one identity a line"
    );
    counts_equal_stats(&ch, &db, &[&log]).await;
    let (_, metrics) = admin_text(&server, "/metrics").await;
    assert_eq!(metric(&metrics, "qrtag_scan_sink_rows_dropped_total"), 0);
    assert_eq!(metric(&metrics, "qrtag_scan_sink_failing"), 0);
    eprintln!("{lines} scans; p95 {p_before:?} before, {p_during:?} during a {OUTAGE:?} outage");
    server.stop().await;
}

/// A queue of 5 rows, ClickHouse away from the start: `serve` serves
/// anyway, keeps 5 lines, counts the rest as dropped on `/metrics` and
/// `/readyz` (still ready), sends the 5 once ClickHouse is back, and
/// `stats --load-into` of the log then makes the counts the log's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_counts_its_drops_and_a_load_fills_them_in() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut ch, db) = setup(dir.path()).await;
    let url = ch.url("qrtag");
    ch.stop();
    let server = ServerProcess::spawn(
        &db,
        &[
            "--scans-to",
            &url,
            "--node-name",
            "edge-1",
            "--scans-queue",
            "5",
        ],
        &[],
        false,
    )
    .await
    .loaded()
    .await;
    assert!(
        server
            .stderr()
            .contains("ClickHouse cannot be reached; serving anyway"),
        "{}",
        server.stderr()
    );
    let c = client();
    for i in 0..20u32 {
        let path = if i.is_multiple_of(4) {
            "/docs/a"
        } else {
            "/tag01"
        };
        assert_eq!(scan(&c, &server, path, IPHONE).await, 302);
    }
    let log = dir.path().join("access.log");
    logged(&log, 20).await;
    let metrics = support::poll::until(Duration::from_secs(10), "15 drops counted", || async {
        let (_, m) = admin_text(&server, "/metrics").await;
        (metric(&m, "qrtag_scan_sink_rows_dropped_total") == 15).then_some(m)
    })
    .await;
    promtool_check(&metrics);
    assert_eq!(metric(&metrics, "qrtag_scan_sink_rows_waiting"), 5);
    let (status, ready) = admin_text(&server, "/readyz").await;
    assert_eq!(status, 200, "{ready}");
    assert!(
        ready.starts_with("ready:"),
        "a sink keeps the node ready: {ready}"
    );
    assert!(
        ready.contains(
            "warning: 15 scans dropped for ClickHouse: its queue (--scans-queue 5) was full"
        ),
        "{ready}"
    );

    ch.resume().await;
    ch.holds_rows(5, ARRIVAL).await;
    load_as_edge_1(dir.path(), &db, &url, &log);
    ch.holds_rows(20, ARRIVAL).await;
    counts_equal_stats(&ch, &db, &[&log]).await;
    // The back-fill, given no public URL, takes the one recorded with the
    // links, as `serve` did: one domain, so `--scans-from` reads them all.
    assert_eq!(
        ch.must("SELECT domain, count() FROM qrtag.scans FINAL GROUP BY domain FORMAT TSV")
            .await,
        "0x1f.ie\t20\n"
    );
    server.stop().await;
}

/// Links with no public URL anywhere (imported, never printed), served
/// on a listener's address: the sink's rows and a back-fill of the same
/// log carry the same host, none, so each line is one row of one domain
/// and the aggregates count it once. Before, the sink wrote the
/// listener's host and the back-fill none, and every count was doubled
/// across the two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_public_url_the_sink_and_a_back_fill_write_one_domain() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ch = with_schema(dir.path()).await;
    let url = ch.url("qrtag");
    let db = dir.path().join("qrtag.db");
    let db_arg = db.to_str().unwrap();
    let csv = dir.path().join("links.csv");
    std::fs::write(&csv, "key,url\ntag01,https://example.com/poster\n").unwrap();
    for args in [
        &["--db", db_arg, "init"][..],
        &["--db", db_arg, "import", csv.to_str().unwrap()],
    ] {
        let out = qrtag_in(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    }
    let server = sending_to(&db, &url).await;
    let c = client();
    for _ in 0..3 {
        assert_eq!(scan(&c, &server, "/tag01", IPHONE).await, 302);
    }
    ch.holds_rows(3, ARRIVAL).await;
    server.stop().await;
    let log = dir.path().join("access.log");
    load_as_edge_1(dir.path(), &db, &url, &log);
    assert_eq!(
        ch.must(
            "SELECT domain, uniqExactIfMerge(scans) FROM qrtag.link_days GROUP BY domain FORMAT TSV"
        )
        .await,
        "\t3\n",
        "one domain, each scan once"
    );
}

/// What the operator must change stops the start in one line, exit 2:
/// not a URL, refused credentials, no schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_that_cannot_work_stops_the_start_in_one_line() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (ch, db) = setup(dir.path()).await;
    let wrong_password = format!(
        "clickhouse://qrtag:hunter2@127.0.0.1:{}/qrtag",
        ch.http_port
    );
    for (url, said) in [
        ("ch.internal:8123".to_owned(), "scheme"),
        (wrong_password, "refused the user"),
        (ch.url("empty"), "run qrtag setup-clickhouse first"),
    ] {
        let out = qrtag_cmd(
            &db,
            &[
                "serve",
                "--access-log",
                dir.path().join("access.log").to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
                "--admin-listen",
                "127.0.0.1:0",
                "--scans-to",
                &url,
            ],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {err}");
        assert!(err.contains(said), "{url}: {err}");
        assert!(!err.contains("hunter2"), "{err}");
        assert_eq!(
            err.lines()
                .filter(|l| l.starts_with("qrtag:") || l.starts_with("error"))
                .count(),
            1,
            "{err}"
        );
    }
}

/// A link's scans through the REST API, once they account for `lines`
/// lines (scans, HEADs, bots and 404s together) where given: an index
/// still reading the log answers 200 with fewer.
async fn link_scans(api: &str, token: &str, key: &str, lines: Option<u64>) -> serde_json::Value {
    let url = format!("http://{api}/api/v1/links/{key}/scans?since=2020-01-01");
    support::poll::until(Duration::from_secs(20), "the link's scans", || async {
        let r = client().get(&url).bearer_auth(token).send().await.ok()?;
        if r.status() != 200 {
            return None;
        }
        let v = r.json::<serde_json::Value>().await.ok()?;
        let counted: u64 = ["scans", "head", "bots", "not_found"]
            .iter()
            .filter_map(|f| v[f].as_u64())
            .sum();
        lines.is_none_or(|l| l == counted).then_some(v)
    })
    .await
}

/// `--scans-from`: a link's scans through the REST API answered from
/// ClickHouse are the embedded index's numbers over the same traffic,
/// both asked in one run (a server with the index and `--scans-to`, and
/// one reading ClickHouse).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rest_api_answers_a_links_scans_from_clickhouse_as_the_index_does() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (ch, db) = setup(dir.path()).await;
    let url = ch.url("qrtag");
    let out = qrtag_cmd(
        &db,
        &["api-key", "create", "--name", "t", "--scope", "read"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let token = text(&out.stdout).trim().to_owned();
    let index = dir.path().join("scan-index");
    let counted = ServerProcess::spawn(
        &db,
        &[
            "--scans-to",
            &url,
            "--scan-index-file",
            index.to_str().unwrap(),
            "--api-listen",
            "127.0.0.1:0",
        ],
        &[],
        false,
    )
    .await
    .loaded()
    .await;
    let c = client();
    let first = c
        .get(counted.url("/tag01"))
        .header("user-agent", IPHONE)
        .send()
        .await
        .expect("scan");
    let cookie = first
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::to_owned)
        .expect("a tracking cookie");
    for _ in 0..2 {
        let r = c
            .get(counted.url("/tag01"))
            .header("user-agent", IPHONE)
            .header("cookie", &cookie)
            .send()
            .await
            .expect("scan");
        assert_eq!(r.status(), 302);
    }
    assert_eq!(scan(&c, &counted, "/tag01", IPHONE).await, 302);
    assert_eq!(scan(&c, &counted, "/tag01", GOOGLEBOT).await, 302);
    let head = c
        .head(counted.url("/tag01"))
        .header("user-agent", IPHONE)
        .send()
        .await
        .expect("HEAD");
    assert_eq!(head.status(), 302);
    let log = dir.path().join("access.log");
    logged(&log, 6).await;
    ch.holds_rows(6, ARRIVAL).await;
    let from_index = link_scans(&counted.api_addr().await, &token, "tag01", Some(6)).await;

    let from_clickhouse = ServerProcess::spawn(
        &db,
        &[
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
    let answered = link_scans(&from_clickhouse.api_addr().await, &token, "tag01", None).await;
    for field in [
        "scans",
        "unique_scanners",
        "head",
        "bots",
        "not_found",
        "in_range",
        "daily",
    ] {
        assert_eq!(
            answered[field], from_index[field],
            "{field}: ClickHouse {answered}, index {from_index}"
        );
    }
    assert_eq!(
        (
            &from_index["scans"],
            &from_index["unique_scanners"],
            &from_index["head"],
            &from_index["bots"]
        ),
        (&4.into(), &2.into(), &1.into(), &1.into()),
        "{from_index}"
    );
    from_clickhouse.stop().await;
    counted.stop().await;
}

/// Rows a sink delivers of a day no longer rolled again on a timer (as
/// after an outage of more than 6 hours) are rolled up by the sink itself,
/// with the domain's windows: the dashboard's numbers of that day count
/// them without a `stats --load-into`. Driven through the library's sink
/// and tap, since a server writes only lines of now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_rolls_up_again_a_settled_day_it_delivers_rows_of() {
    use qrtag::access_log::tap::Landed;
    use qrtag::clickhouse::rows::LogSource;
    use qrtag::clickhouse::sink::{ScanSink, SinkSettings, TappedLog};

    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ch = with_schema(dir.path()).await;
    let now = chrono::Utc::now();
    let day = now.date_naive() - chrono::Days::new(3);
    let domain = "qr.example";
    // The day rolled up already, with one scan.
    let line = |n: u32| {
        format!(
            "{}12000{n}.0 192.0.2.1 - Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29 \
             /tag01 302 https://example.com/ GET -\n",
            day.format("%Y%m%d")
        )
    };
    let url: qrtag::clickhouse::ClickHouseUrl = ch.url("qrtag").parse().expect("a URL");
    let client = qrtag::clickhouse::Client::new(url.clone(), Duration::from_secs(30));
    ch.must(&format!(
        "INSERT INTO qrtag.scans (domain, node, log_id, line_offset, time, day, link, scan) \
         VALUES ('{domain}', 'edge-0', 1, 0, '{day} 11:00:00', '{day}', 'tag01', 1)"
    ))
    .await;
    qrtag::clickhouse::rollup::roll_day(&client, domain, day, now - chrono::TimeDelta::hours(1))
        .await
        .expect("rolled");
    let marked = || async {
        ch.must(&format!(
            "SELECT argMax(scans, rolled) FROM qrtag.rolled_days WHERE day = '{day}' FORMAT TSV"
        ))
        .await
    };
    assert_eq!(marked().await, "1\n");

    let sink = ScanSink::start(
        &SinkSettings {
            url,
            queue_rows: 1000,
        },
        "edge-1".to_owned(),
        None,
    )
    .expect("the sink starts");
    let tap = sink.tap(TappedLog {
        source: LogSource {
            domain: domain.to_owned(),
            is_link: Box::new(|key| key == "tag01"),
        },
        ready: Box::new(|| true),
    });
    let first = line(0);
    let lines = format!("{first}{}", line(1));
    tap.landed(Landed {
        first_line: first.as_bytes(),
        offset: 0,
        lines: lines.as_bytes(),
    });
    ch.holds_rows(3, ARRIVAL).await;
    support::poll::until(ARRIVAL, "the day rolled up with the late rows", || async {
        (marked().await == "3\n").then_some(())
    })
    .await;
    support::poll::until(ARRIVAL, "the windows summed with them", || async {
        let n = ch
            .must("SELECT max(scans) FROM qrtag.windows WHERE days = 6 FORMAT TSV")
            .await;
        (n == "3\n").then_some(())
    })
    .await;
    sink.finish(Duration::from_secs(5));
}

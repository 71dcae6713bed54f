//! ClickHouse as the scan store (issue 38), against a real ClickHouse
//! 18.16 started by the test (`support/clickhouse.rs`), through the real
//! binary.

#[path = "support/clickhouse.rs"]
mod clickhouse;
mod support;

use clickhouse::ClickHouse;
use support::qrtag_in;

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// Runs qrtag with `args` in `dir`: it succeeds and its output says `want`.
fn says(dir: &std::path::Path, args: &[&str], want: &str) {
    let out = qrtag_in(dir, args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(want), "{}", text(&out.stdout));
}

/// A ClickHouse of its own with this qrtag's schema made in `db`.
async fn with_schema(db: &str) -> (tempfile::TempDir, ClickHouse) {
    let dir = tempfile::tempdir().unwrap();
    let ch = ClickHouse::start(&dir.path().join("ch")).await;
    says(
        dir.path(),
        &["setup-clickhouse", "--clickhouse", &ch.url(db)],
        "schema version 6: created",
    );
    (dir, ch)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_clickhouse_makes_checks_and_keeps_the_schema() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ch = ClickHouse::start(&dir.path().join("ch")).await;
    let url = ch.url("scans_db");

    says(
        dir.path(),
        &["setup-clickhouse", "--clickhouse", &url],
        "schema version 6: created",
    );
    let tables = ch
        .must("SELECT name FROM system.tables WHERE database = 'scans_db' ORDER BY name FORMAT TSV")
        .await;
    assert_eq!(
        tables,
        "busy_days\nday_totals\nlink_counts\nlink_days\nlink_days_mv\nlink_destinations\n\
         link_destinations_mv\nlink_scanners\nlink_scanners_mv\nlink_shares\nlink_shares_mv\n\
         rolled_days\nscans\nschema_version\nwindow_totals\nwindows\n"
    );

    // Again: nothing to do, the version recorded once.
    says(
        dir.path(),
        &["setup-clickhouse", "--clickhouse", &url],
        "schema version 6: already current",
    );
    assert_eq!(
        ch.must("SELECT count() FROM scans_db.schema_version").await,
        "1\n"
    );

    // A row sent twice counts once in the aggregates at once, before any merge.
    for _ in 0..2 {
        ch.must(
            "INSERT INTO scans_db.scans (domain, node, log_id, line_offset, time, day, link, scan, tracking, device) \
             VALUES ('0x1f.ie', 'a', 7, 0, '2026-11-28 10:00:00', '2026-11-28', 'H83if', 1, 'id1', 'phone')",
        )
        .await;
    }
    assert_eq!(
        ch.must(
            "SELECT uniqExactMerge(requests), uniqExactIfMerge(scans), uniqExactIfMerge(scanners) \
             FROM scans_db.link_days WHERE domain = '0x1f.ie' AND link = 'H83if' FORMAT TSV"
        )
        .await,
        "1\t1\t1\n"
    );
    // Schema version 3: the breakdowns per link and day, a value's scans
    // counted once however often its row was sent.
    assert_eq!(
        ch.must(
            "SELECT dimension, value, uniqExactMerge(scans) FROM scans_db.link_shares \
             WHERE domain = '0x1f.ie' AND link = 'H83if' AND dimension IN ('device', 'quarter') \
             GROUP BY dimension, value ORDER BY dimension FORMAT TSV"
        )
        .await,
        "device\tphone\t1\nquarter\t40\t1\n",
        "10:00 UTC is the day's 40th quarter-hour"
    );
    assert_eq!(
        ch.must("SELECT count() FROM scans_db.scans FINAL").await,
        "1\n"
    );

    // Retention on 18.16: the tables stay as they are, and setup says why.
    let out = qrtag_in(
        dir.path(),
        &[
            "setup-clickhouse",
            "--clickhouse",
            &url,
            "--retention-days",
            "30",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("19.6 or later"),
        "{}",
        text(&out.stderr)
    );
}

/// Version 1's schema as `setup-clickhouse` made it before version 2
/// (`0a78f87`): the fixture an upgrade starts from.
fn version_1(db: &str) -> Vec<String> {
    use qrtag::clickhouse::schema::{LINK_DAYS_V1_COLUMNS, VERSION_COLUMNS, scans_v2_columns};
    let cols = |c: &[(&str, &str)]| {
        c.iter()
            .map(|(n, t)| format!("{n} {t}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        format!("CREATE DATABASE {db}"),
        format!(
            "CREATE TABLE {db}.schema_version ({}) ENGINE = MergeTree() ORDER BY version",
            cols(VERSION_COLUMNS)
        ),
        format!(
            "CREATE TABLE {db}.scans ({}) ENGINE = ReplacingMergeTree() \
             PARTITION BY toYYYYMM(day) ORDER BY (node, log_id, line_offset)",
            cols(scans_v2_columns())
        ),
        format!(
            "CREATE TABLE {db}.link_days ({}) ENGINE = AggregatingMergeTree() \
             PARTITION BY toYYYYMM(day) ORDER BY (link, day)",
            cols(LINK_DAYS_V1_COLUMNS)
        ),
        format!(
            "CREATE MATERIALIZED VIEW {db}.link_days_mv TO {db}.link_days AS SELECT \
             link, day, \
             uniqExactState(cityHash64(node, log_id, line_offset)) AS requests, \
             uniqExactIfState(cityHash64(node, log_id, line_offset), scan = 1) AS scans, \
             uniqExactIfState(cityHash64(node, log_id, line_offset), fallback_scan = 1) AS fallback, \
             uniqExactIfState(cityHash64(node, log_id, line_offset), bot = 1) AS bots, \
             uniqExactIfState(tracking, scan = 1 AND tracking != '') AS scanners \
             FROM {db}.scans GROUP BY link, day"
        ),
        format!("INSERT INTO {db}.schema_version VALUES (1, now())"),
    ]
}

/// A database of version 1 with scans in it is upgraded to version 2:
/// `link_days` gains HEAD and 404 states filled from the rows already
/// there (two months of them), the counts it had stay as they were (the
/// refill adds states, which merge by union), and rows sent afterwards
/// reach the new columns through the view made again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_clickhouse_upgrades_version_1_and_fills_its_new_counts() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ch = ClickHouse::start(&dir.path().join("ch")).await;
    for statement in version_1("old") {
        ch.must(&statement).await;
    }
    let row = |offset: u32, day: &str, method: &str, status: u32, scan: u8| {
        format!(
            "INSERT INTO old.scans (node, log_id, line_offset, time, day, method, status, link, scan, tracking) \
             VALUES ('a', 7, {offset}, '{day} 10:00:00', '{day}', '{method}', {status}, 'H83if', {scan}, 'id{offset}')"
        )
    };
    for sql in [
        row(0, "2026-10-05", "GET", 302, 1),
        row(100, "2026-11-27", "GET", 302, 1),
        row(100, "2026-11-27", "GET", 302, 1),
        row(200, "2026-11-27", "HEAD", 302, 0),
        row(300, "2026-11-27", "GET", 404, 0),
    ] {
        ch.must(&sql).await;
    }
    let counts = || {
        ch.must(
            "SELECT uniqExactMerge(requests), uniqExactIfMerge(scans), uniqExactIfMerge(scanners), \
             uniqExactIfMerge(heads), uniqExactIfMerge(not_found) \
             FROM old.link_days WHERE link = 'H83if' FORMAT TSV",
        )
    };

    // Before the upgrade, a writer of rows is refused in one line.
    let log = dir.path().join("access.log");
    std::fs::write(
        &log,
        "20261128100000.3 203.0.113.0 - - /H83if 302 https://example.com/a GET -\n",
    )
    .unwrap();
    let out = qrtag_in(
        dir.path(),
        &[
            "stats",
            "--load-into",
            &ch.url("old"),
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "holds schema version 1; this qrtag writes 6: run this qrtag's setup-clickhouse"
        ),
        "{}",
        text(&out.stderr)
    );

    // Upgrading needs the host the old rows are of, said in one line.
    let out = qrtag_in(
        dir.path(),
        &["setup-clickhouse", "--clickhouse", &ch.url("old")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr)
            .contains("give the default domain's host (--domain HOST, or --public-url)"),
        "{}",
        text(&out.stderr)
    );
    let setup = [
        "--public-url",
        "https://0x1f.ie",
        "setup-clickhouse",
        "--clickhouse",
        &ch.url("old"),
    ];
    says(dir.path(), &setup, "schema version 6: upgraded from 1");
    assert_eq!(
        counts().await,
        "4\t2\t2\t1\t1\n",
        "requests, scans, scanners, HEADs, 404s"
    );

    // A row sent after the upgrade reaches the new columns.
    ch.must(&row(400, "2026-11-28", "HEAD", 302, 0)).await;
    assert_eq!(counts().await, "5\t2\t2\t2\t1\n");

    // Again: nothing to do, and nothing counted twice.
    says(dir.path(), &setup, "schema version 6: already current");
    assert_eq!(counts().await, "5\t2\t2\t2\t1\n");
    assert_eq!(
        ch.must("SELECT version FROM old.schema_version ORDER BY version FORMAT TSV")
            .await,
        "1\n6\n"
    );
    assert_eq!(
        ch.must("SELECT DISTINCT domain FROM old.link_days FORMAT TSV")
            .await,
        "0x1f.ie\n",
        "the old rows are the default domain's"
    );
}

/// Version 2's schema (`5c45642`): version 1's tables with `link_days`'
/// HEAD and 404 states and the view that fills them.
fn version_2(db: &str) -> Vec<String> {
    use qrtag::clickhouse::schema::LINK_DAYS_V2_COLUMNS;
    let mut out = version_1(db);
    out.truncate(3);
    let cols = LINK_DAYS_V2_COLUMNS
        .iter()
        .map(|(n, t)| format!("{n} {t}"))
        .collect::<Vec<_>>()
        .join(", ");
    out.push(format!(
        "CREATE TABLE {db}.link_days ({cols}) ENGINE = AggregatingMergeTree() \
         PARTITION BY toYYYYMM(day) ORDER BY (link, day)"
    ));
    out.push(format!(
        "CREATE MATERIALIZED VIEW {db}.link_days_mv TO {db}.link_days AS SELECT \
         link, day, \
         uniqExactState(cityHash64(node, log_id, line_offset)) AS requests, \
         uniqExactIfState(cityHash64(node, log_id, line_offset), scan = 1) AS scans, \
         uniqExactIfState(cityHash64(node, log_id, line_offset), fallback_scan = 1) AS fallback, \
         uniqExactIfState(cityHash64(node, log_id, line_offset), bot = 1) AS bots, \
         uniqExactIfState(tracking, scan = 1 AND tracking != '') AS scanners, \
         uniqExactIfState(cityHash64(node, log_id, line_offset), method = 'HEAD') AS heads, \
         uniqExactIfState(cityHash64(node, log_id, line_offset), status = 404) AS not_found \
         FROM {db}.scans GROUP BY link, day"
    ));
    out.push(format!("INSERT INTO {db}.schema_version VALUES (2, now())"));
    out
}

/// A database of version 2 with scans in two months is upgraded to
/// version 3: its rows become the default domain's (`--domain`), every
/// count of `link_days` stays what it was, now under that domain, and
/// `link_shares` holds the breakdowns of the rows already there (bots
/// left out, a row sent twice counted once); rows sent afterwards, of
/// another domain too, reach both through the views.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_clickhouse_upgrades_version_2_to_3_with_domains_and_breakdowns() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ch = ClickHouse::start(&dir.path().join("ch")).await;
    for statement in version_2("v2") {
        ch.must(&statement).await;
    }
    let row = |offset: u32, day: &str, device: &str, scan: u8, bot: u8| {
        format!(
            "INSERT INTO v2.scans (node, log_id, line_offset, time, day, method, status, link, scan, bot, tracking, device, os) \
             VALUES ('a', 7, {offset}, '{day} 10:00:00', '{day}', 'GET', 302, 'H83if', {scan}, {bot}, 'id{offset}', '{device}', 'iOS 17')"
        )
    };
    for sql in [
        row(0, "2026-10-05", "phone", 1, 0),
        row(100, "2026-11-27", "tablet", 1, 0),
        row(100, "2026-11-27", "tablet", 1, 0),
        row(200, "2026-11-27", "phone", 1, 0),
        row(300, "2026-11-27", "bot", 0, 1),
    ] {
        ch.must(&sql).await;
    }
    let numbers = "uniqExactMerge(requests), uniqExactIfMerge(scans), uniqExactIfMerge(bots), \
                   uniqExactIfMerge(scanners), uniqExactIfMerge(heads)";
    let before = ch
        .must(&format!(
            "SELECT {numbers} FROM v2.link_days WHERE link = 'H83if' FORMAT TSV"
        ))
        .await;
    assert_eq!(before, "4\t3\t1\t3\t0\n");

    says(
        dir.path(),
        &[
            "--domain",
            "0x1f.ie",
            "setup-clickhouse",
            "--clickhouse",
            &ch.url("v2"),
        ],
        "schema version 6: upgraded from 2",
    );
    let ch = &ch;
    let of = |domain: &str| {
        let sql = format!(
            "SELECT {numbers} FROM v2.link_days WHERE domain = '{domain}' AND link = 'H83if' FORMAT TSV"
        );
        async move { ch.must(&sql).await }
    };
    assert_eq!(
        of("0x1f.ie").await,
        before,
        "the counts it had, under the domain"
    );
    let shares = |domain: &str| {
        let sql = format!(
            "SELECT value, uniqExactMerge(scans) FROM v2.link_shares \
             WHERE domain = '{domain}' AND link = 'H83if' AND dimension = 'device' \
             GROUP BY value ORDER BY value FORMAT TSV"
        );
        async move { ch.must(&sql).await }
    };
    assert_eq!(shares("0x1f.ie").await, "phone\t2\ntablet\t1\n");
    assert_eq!(
        ch.must(
            "SELECT uniqExactMerge(scans) FROM v2.link_shares WHERE dimension = 'os' \
             AND day = '2026-11-27' FORMAT TSV"
        )
        .await,
        "2\n",
        "a day's rows"
    );

    // Rows sent after it: the default domain's and another's, apart.
    for domain in ["0x1f.ie", "b.example"] {
        ch.must(&format!(
            "INSERT INTO v2.scans (domain, node, log_id, line_offset, time, day, method, status, link, scan, tracking, device) \
             VALUES ('{domain}', 'a', 8, {}, '2026-11-28 10:00:00', '2026-11-28', 'GET', 302, 'H83if', 1, 'n', 'phone')",
            domain.len()
        ))
        .await;
    }
    assert_eq!(shares("0x1f.ie").await, "phone\t3\ntablet\t1\n");
    assert_eq!(shares("b.example").await, "phone\t1\n");
    assert_eq!(of("b.example").await, "1\t1\t0\t1\t0\n");
}

/// Version 3's schema as `setup-clickhouse` made it before version 4:
/// this version's statements but those of the tables versions 4 and 5
/// added.
fn version_3(db: &str) -> Vec<String> {
    before(db, 3, &["link_destinations", "day_totals", "rolled_days"])
}

/// This version's statements but those naming `left_out` and the tables
/// of versions after `version` (5's windows, 6's scanners and busy
/// days' counts), recorded as `version`.
fn before(db: &str, version: u32, left_out: &[&str]) -> Vec<String> {
    use qrtag::clickhouse::schema::{Layout, create_statements};
    let mut newer: Vec<&str> = left_out.to_vec();
    if version < 5 {
        newer.push("window");
    }
    if version < 6 {
        newer.extend(["link_scanners", "link_counts", "busy_days"]);
    }
    let mut out: Vec<String> = create_statements(db, None, (18, 16), &Layout::Single)
        .into_iter()
        .filter(|s| !newer.iter().any(|t| s.contains(t)))
        .collect();
    out.push(format!(
        "INSERT INTO {db}.schema_version VALUES ({version}, now())"
    ));
    out
}

/// A database of version 4 or 5 gains the tables since (the windows of
/// `clickhouse::windows`, the busy days' counts of `clickhouse::busy`)
/// and `link_scanners`, filled from the rows of `scans` (a scanner seen
/// twice, a row sent twice, counted once); the other aggregates keep
/// their counts, not refilled, and rows sent afterwards reach
/// `link_scanners`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_clickhouse_upgrades_versions_4_and_5() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ch = ClickHouse::start(&dir.path().join("ch")).await;
    for version in [4, 5] {
        let db = format!("v{version}");
        for statement in before(&db, version, &[]) {
            ch.must(&statement).await;
        }
        let row = |offset: u32, tracking: &str| {
            format!(
                "INSERT INTO {db}.scans (domain, node, log_id, line_offset, time, day, link, scan, tracking) \
                 VALUES ('0x1f.ie', 'a', 7, {offset}, '2026-11-27 10:00:00', '2026-11-27', 'H83if', 1, '{tracking}')"
            )
        };
        for (offset, tracking) in [(0, "t1"), (1, "t2"), (1, "t2"), (2, "t1"), (3, "")] {
            ch.must(&row(offset, tracking)).await;
        }
        // A busy link's day, rolled up before the upgrade (as version 4's
        // roll wrote it): 120 scans of `busy`.
        ch.must(&format!(
            "INSERT INTO {db}.scans (domain, node, log_id, line_offset, time, day, link, scan) \
             SELECT '0x1f.ie', 'a', 8, number, toDateTime('2026-11-20 10:00:00'), \
             toDate('2026-11-20'), 'busy', 1 FROM numbers(120)"
        ))
        .await;
        ch.must(&format!(
            "INSERT INTO {db}.day_totals VALUES \
             ('0x1f.ie', '2026-11-20', 'link', 'busy', 120, 0, toDateTime(1000))"
        ))
        .await;
        ch.must(&format!(
            "INSERT INTO {db}.rolled_days VALUES ('0x1f.ie', '2026-11-20', toDateTime(1000), 120, 0)"
        ))
        .await;
        let days = format!(
            "SELECT uniqExactIfMerge(scans) FROM {db}.link_days WHERE link = 'H83if' FORMAT TSV"
        );
        assert_eq!(ch.must(&days).await, "4\n");
        let out = qrtag_in(
            dir.path(),
            &["setup-clickhouse", "--clickhouse", &ch.url(&db)],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).ends_with(&format!(
                "schema version 6: upgraded from {version}\n\
                 1 rolled-up day kept again with their busy links' own counts\n"
            )),
            "{}",
            text(&out.stdout)
        );
        says(
            dir.path(),
            &["setup-clickhouse", "--clickhouse", &ch.url(&db)],
            "schema version 6: already current",
        );
        // The rolled day's busy link kept as its own counts, once.
        assert_eq!(
            ch.must(&format!(
                "SELECT link, day, value, n, rolled = toDateTime(1000) FROM {db}.link_counts \
                 WHERE kind = 'total' AND value = 'scans' FORMAT TSV"
            ))
            .await,
            "busy\t2026-11-20\tscans\t120\t1\n"
        );
        assert_eq!(
            ch.must(&format!("SELECT link, day FROM {db}.busy_days FORMAT TSV"))
                .await,
            "busy\t2026-11-20\n"
        );
        assert_eq!(
            ch.must(&format!(
                "SELECT name FROM system.tables WHERE database = '{db}' AND (name LIKE 'window%' \
                 OR name IN ('link_scanners', 'link_counts', 'busy_days')) ORDER BY name FORMAT TSV"
            ))
            .await,
            "busy_days\nlink_counts\nlink_scanners\nwindow_totals\nwindows\n"
        );
        assert_eq!(ch.must(&days).await, "4\n", "counted once, not refilled");
        let scanners = format!(
            "SELECT uniqCombinedIfMerge(scanners) FROM {db}.link_scanners \
             WHERE link = 'H83if' FORMAT TSV"
        );
        assert_eq!(ch.must(&scanners).await, "2\n", "filled from scans");
        ch.must(&row(4, "t3")).await;
        assert_eq!(ch.must(&scanners).await, "3\n", "and from its view");
        assert_eq!(
            ch.must(&format!(
                "SELECT version FROM {db}.schema_version ORDER BY version FORMAT TSV"
            ))
            .await,
            format!("{version}\n6\n")
        );
    }
}

/// A database of version 3 is upgraded with no domain given
/// (its rows have theirs): `link_destinations` holds the destinations of
/// the rows already there, scans and fallback answers apart (bots, and
/// lines sent nowhere, left out; a row sent twice counted once), the
/// other aggregates keep their counts, and rows sent afterwards reach it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_clickhouse_upgrades_version_3_with_destinations() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ch = ClickHouse::start(&dir.path().join("ch")).await;
    for statement in version_3("v3") {
        ch.must(&statement).await;
    }
    let row = |offset: u32, location: &str, scan: u8, fallback: u8, bot: u8| {
        format!(
            "INSERT INTO v3.scans (domain, node, log_id, line_offset, time, day, method, status, location, link, scan, fallback_scan, bot) \
             VALUES ('0x1f.ie', 'a', 7, {offset}, '2026-11-27 10:00:00', '2026-11-27', 'GET', 302, '{location}', 'H83if', {scan}, {fallback}, {bot})"
        )
    };
    for sql in [
        row(0, "https://a.example/", 1, 0, 0),
        row(100, "https://a.example/", 1, 0, 0),
        row(100, "https://a.example/", 1, 0, 0),
        row(200, "https://b.example/", 0, 1, 0),
        row(300, "https://a.example/", 0, 0, 1),
        row(400, "", 1, 0, 0),
    ] {
        ch.must(&sql).await;
    }
    let ch = &ch;
    let days = || async move {
        ch.must(
            "SELECT uniqExactMerge(requests), uniqExactIfMerge(scans), uniqExactIfMerge(fallback), \
             uniqExactIfMerge(bots) FROM v3.link_days WHERE link = 'H83if' FORMAT TSV",
        )
        .await
    };
    assert_eq!(days().await, "5\t3\t1\t1\n");

    says(
        dir.path(),
        &["setup-clickhouse", "--clickhouse", &ch.url("v3")],
        "schema version 6: upgraded from 3",
    );
    let destinations = || async move {
        ch.must(
            "SELECT location, fallback_scan, uniqExactMerge(scans) FROM v3.link_destinations \
             WHERE domain = '0x1f.ie' AND link = 'H83if' GROUP BY location, fallback_scan \
             ORDER BY location FORMAT TSV",
        )
        .await
    };
    assert_eq!(
        destinations().await,
        "https://a.example/\t0\t2\nhttps://b.example/\t1\t1\n"
    );
    assert_eq!(days().await, "5\t3\t1\t1\n", "link_days as it was");

    // A row sent after the upgrade reaches it through its view.
    ch.must(&row(500, "https://a.example/", 1, 0, 0)).await;
    assert_eq!(
        destinations().await,
        "https://a.example/\t0\t3\nhttps://b.example/\t1\t1\n"
    );
    assert_eq!(
        ch.must("SELECT version FROM v3.schema_version ORDER BY version FORMAT TSV")
            .await,
        "3\n6\n"
    );
}

/// A read the client stops waiting for is stopped in ClickHouse too, so a
/// slow page reloaded does not pile queries up on the server: an endless
/// query asked with a 1 s timeout is gone from `system.processes` soon
/// after the client gives up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_given_up_on_is_stopped_in_clickhouse() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ch = ClickHouse::start(&dir.path().join("ch")).await;
    let url: qrtag::clickhouse::ClickHouseUrl = ch.url("system").parse().expect("a URL");
    let client = qrtag::clickhouse::Client::new(url, std::time::Duration::from_secs(1));
    let endless =
        "SELECT count() FROM system.numbers WHERE NOT ignore(sipHash64(number, 'endless'))";
    assert!(client.query(endless).await.is_err(), "it never ends");
    let running = || async {
        ch.must(
            "SELECT count() FROM system.processes WHERE query LIKE '%endless%' \
             AND query NOT LIKE '%system.processes%'",
        )
        .await
    };
    support::eventually(std::time::Duration::from_secs(10), || async {
        running().await == "0\n"
    })
    .await;
    // A read-only user may not set the limit: its reads are answered
    // all the same, without it.
    let url: qrtag::clickhouse::ClickHouseUrl = ch.reader_url("system").parse().expect("a URL");
    let reader = qrtag::clickhouse::Client::new(url, std::time::Duration::from_secs(3));
    for _ in 0..2 {
        assert_eq!(reader.query("SELECT 1").await.expect("answered"), "1\n");
    }
}

/// Bad input: one line, exit 2, and nothing made beside a foreign table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_clickhouse_refuses_bad_input_in_one_line() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ch = ClickHouse::start(&dir.path().join("ch")).await;
    let one_line_exit_2 = |args: &[&str], want: &str| {
        let out = qrtag_in(dir.path(), args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(
            !err.contains(clickhouse::PASSWORD) && !err.contains("hunter2"),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        err
    };
    one_line_exit_2(
        &["setup-clickhouse", "--clickhouse", "ch.internal:8123"],
        "scheme",
    );
    one_line_exit_2(
        &[
            "setup-clickhouse",
            "--clickhouse",
            "clickhouse://h/no-dashes",
        ],
        "database name",
    );
    let wrong = format!("clickhouse://qrtag:hunter2@127.0.0.1:{}/x", ch.http_port);
    let err = one_line_exit_2(
        &["setup-clickhouse", "--clickhouse", &wrong],
        "refused the user \"qrtag\"",
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    ch.must("CREATE DATABASE byhand").await;
    ch.must(
        "CREATE TABLE byhand.scans (node String, offset UInt64) ENGINE = MergeTree() ORDER BY node",
    )
    .await;
    let err = one_line_exit_2(
        &["setup-clickhouse", "--clickhouse", &ch.url("byhand")],
        "not a table qrtag made",
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(
        ch.must("SELECT name FROM system.tables WHERE database = 'byhand' FORMAT TSV")
            .await,
        "scans\n",
        "nothing made beside it"
    );
}

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/// `qrtag stats --load-into`: the server's own log loaded twice, once
/// plain and once gzip-compressed (the same log after rotation), gives
/// per link exactly what `qrtag stats` counts in it, and one row a line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_loaded_twice_counts_as_stats_counts_it_once() {
    if !clickhouse::available() {
        return;
    }
    let app = support::spawn_app().await;
    let ch = ClickHouse::start(&app.dir.path().join("ch")).await;
    let url = ch.url("qrtag");
    let out = app.cli(&["setup-clickhouse", "--clickhouse", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    app.link("tag01", "https://example.com/poster").await;
    app.link("docs", "https://example.com/docs").await;
    app.wait_for_status("/tag01", 302).await;
    app.wait_for_status("/docs", 302).await;
    let get = |ua: &'static str, path: &str, cookie: Option<String>| {
        let mut req = app.client.get(app.url(path)).header("user-agent", ua);
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        req.send()
    };
    let first = get(IPHONE, "/tag01", None).await.expect("scan");
    let cookie = first
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::to_owned)
        .expect("a tracking cookie");
    get(IPHONE, "/tag01", Some(cookie.clone()))
        .await
        .expect("scan");
    get(IPHONE, "/tag01", None).await.expect("scan");
    get(IPHONE, "/docs/api?x=1", Some(cookie))
        .await
        .expect("scan below docs");
    get(GOOGLEBOT, "/tag01", None).await.expect("bot");
    get(IPHONE, "/nope1", None).await.expect("404");

    let log = app.dir.path().join("access.log");
    let lines = || std::fs::read_to_string(&log).unwrap_or_default();
    support::eventually(std::time::Duration::from_secs(5), || async {
        lines().contains("/nope1 404")
    })
    .await;
    let plain = app.dir.path().join("copy.log");
    std::fs::write(&plain, lines()).unwrap();
    let gz = app.dir.path().join("copy.log.1.gz");
    {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        enc.write_all(lines().as_bytes()).unwrap();
        enc.finish().unwrap();
    }
    let line_count = lines().lines().count();

    let out = app.cli(&["stats", "--format", "json", plain.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    for file in [&plain, &gz, &plain] {
        let out = app.cli(&[
            "stats",
            "--load-into",
            &url,
            "--node-name",
            "edge-1",
            file.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).starts_with(&format!("{line_count} rows from 1 file into")),
            "{}",
            text(&out.stdout)
        );
    }

    assert_eq!(
        ch.must("SELECT count() FROM qrtag.scans FINAL").await,
        format!("{line_count}\n")
    );
    for entry in report["keys"].as_array().expect("keys") {
        let key = entry["key"].as_str().unwrap();
        let got = ch
            .must(&format!(
                "SELECT uniqExactMerge(requests), uniqExactIfMerge(scans), uniqExactIfMerge(bots), \
                 uniqExactIfMerge(scanners) FROM qrtag.link_days WHERE link = '{key}' FORMAT TSV"
            ))
            .await;
        let want = format!(
            "{}\t{}\t{}\t{}\n",
            entry["requests"], entry["scans"], entry["bot"], entry["unique_scanners"]
        );
        assert_eq!(got, want, "{key}: {entry}");
    }
    let tag = report["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "tag01")
        .unwrap();
    assert_eq!(tag["scans"], 3, "{tag}");
    let docs = ch
        .must("SELECT uniqExactIfMerge(scans) FROM qrtag.link_days WHERE link = 'docs' FORMAT TSV")
        .await;
    assert_eq!(docs, "1\n", "a path below a link counts under it");
    let row = ch
        .must(
            "SELECT node, device, os, browser, client_ip != '', domain FROM qrtag.scans FINAL \
             WHERE link = 'tag01' AND scan = 1 LIMIT 1 FORMAT TSV",
        )
        .await;
    assert!(
        row.starts_with("edge-1\tphone\tiOS 17\tMobile Safari\t1\t0x1f.ie\n"),
        "the default domain's host: {row}"
    );
}

/// Loading into a database without qrtag's schema says so in one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loading_needs_the_schema() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ch = ClickHouse::start(&dir.path().join("ch")).await;
    let log = dir.path().join("access.log");
    std::fs::write(
        &log,
        "20261128100000.3 203.0.113.0 - - /H83if 302 https://example.com/a GET -\n",
    )
    .unwrap();
    let out = qrtag_in(
        dir.path(),
        &[
            "stats",
            "--load-into",
            &ch.url("empty"),
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("run qrtag setup-clickhouse first"),
        "{}",
        text(&out.stderr)
    );
    // Every line goes: an option that would choose some is refused, not ignored.
    let url = ch.url("empty");
    let out = qrtag_in(
        dir.path(),
        &[
            "stats",
            "--load-into",
            &url,
            "--key",
            "H83if",
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// The busiest links of a period ranked from a window (`clickhouse::windows`:
/// its closed days summed once a link, the rest added) are exactly those
/// of the days summed one by one: over random traffic with ties, a link
/// scanned only today, one that overtakes the window's leaders today, for
/// periods that hold a window, start inside one or hold none; and a window
/// whose day was rolled again after it is left for the days themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_busiest_links_from_a_window_are_those_of_the_days_summed() {
    use chrono::{Days, NaiveDate, Utc};
    use qrtag::clickhouse::{read, windows};
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    if !clickhouse::available() {
        return;
    }
    let (_dir, ch) = with_schema("w").await;
    let domain = "qr.example";
    let now = Utc::now();
    let today = now.date_naive();
    let rolled_at = now.timestamp() - 3600;

    // Each closed day's counts as the roll-up writes them: five leaders,
    // then a long tail of small counts that tie often.
    let mut rng = rand::rngs::StdRng::seed_from_u64(38);
    let mut counts: BTreeMap<(NaiveDate, String), u64> = BTreeMap::new();
    let (mut rows, mut marks) = (Vec::new(), Vec::new());
    for ago in 1..=400u64 {
        let day = today - Days::new(ago);
        for link in 0..60 {
            let n = match link {
                0..5 => rng.random_range(20..40),
                _ if rng.random_bool(0.3) => rng.random_range(1..4),
                _ => 0,
            };
            if n > 0 {
                let key = format!("k{link:02}");
                rows.push(format!(
                    "('{domain}', '{day}', 'link', '{key}', {n}, 0, toDateTime({rolled_at}))"
                ));
                counts.insert((day, key), n);
            }
        }
        let total: u64 = counts
            .range((day, String::new())..)
            .take_while(|((d, _), _)| *d == day)
            .map(|(_, n)| n)
            .sum();
        marks.push(format!(
            "('{domain}', '{day}', toDateTime({rolled_at}), {total}, 0)"
        ));
    }
    for (table, rows) in [("day_totals", rows), ("rolled_days", marks)] {
        ch.must(&format!("INSERT INTO w.{table} VALUES {}", rows.join(", ")))
            .await;
    }
    // Today, in the states: a link seen only today, and one of the tail
    // that overtakes the leaders.
    for (i, (key, n)) in [("today-only", 3000u64), ("k42", 2700), ("k01", 1)]
        .into_iter()
        .enumerate()
    {
        ch.must(&format!(
            "INSERT INTO w.scans (domain, node, log_id, line_offset, time, day, link, scan) \
             SELECT '{domain}', 'a', {i}, number, now(), toDate('{today}'), '{key}', 1 \
             FROM system.numbers LIMIT {n}"
        ))
        .await;
        counts.insert((today, key.to_owned()), n);
    }
    let url: qrtag::clickhouse::ClickHouseUrl = ch.url("w").parse().expect("a URL");
    let client = qrtag::clickhouse::Client::new(url, std::time::Duration::from_secs(60));
    // Five days before, a day before, then today's from those: each from
    // the one a day before where there is one; ends past `KEEP` dropped.
    let long_ago = now - chrono::TimeDelta::days(5);
    let built = windows::build_due(&client, domain, long_ago)
        .await
        .expect("built");
    assert_eq!((built.whole, built.next), (4, 0));
    let day_before = now - chrono::TimeDelta::days(1);
    let built = windows::build_due(&client, domain, day_before)
        .await
        .expect("built");
    assert_eq!((built.whole, built.next), (4, 0));
    let built = windows::build_due(&client, domain, now)
        .await
        .expect("built");
    assert_eq!((built.whole, built.next), (0, 4));
    let again = windows::build_due(&client, domain, now)
        .await
        .expect("none due");
    assert_eq!(again.total(), 0, "built once");
    let end = windows::settled_end(now);
    for table in ["window_totals", "windows"] {
        assert_eq!(
            ch.must(&format!(
                "SELECT DISTINCT toString(end) AS e FROM w.{table} ORDER BY e FORMAT TSV"
            ))
            .await,
            format!("{}\n{end}\n", end - Days::new(1)),
            "{table}: the end five days back dropped"
        );
    }
    let scans = read::DomainScans {
        client: client.clone(),
        domain: domain.to_owned(),
        basis: qrtag::scan_index::Basis {
            time_zone: chrono_tz::UTC,
            geoip: None,
        },
    };
    let expected = |counts: &BTreeMap<(NaiveDate, String), u64>, since: NaiveDate, n: usize| {
        let mut by_link: BTreeMap<&str, u64> = BTreeMap::new();
        for ((day, key), c) in counts {
            if *day >= since && *day <= today {
                *by_link.entry(key).or_default() += c;
            }
        }
        let mut ranked: Vec<(String, u64)> = by_link
            .into_iter()
            .map(|(k, c)| (k.to_owned(), c))
            .collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ranked.truncate(n);
        ranked
    };
    // The week's window starts 6 days before today after 06:00 UTC, 7
    // before.
    let week_start = windows::settled_end(now) - Days::new(5);
    let check = |counts: BTreeMap<(NaiveDate, String), u64>, window_wanted: bool| {
        let scans = &scans;
        async move {
            for ago in [0u64, 3, 6, 7, 29, 35, 89, 364, 399] {
                let since = today - Days::new(ago);
                let rolled = scans.rolled(since, today).await.expect("rolled");
                let chosen = windows::best(&rolled.windows, &rolled.days, since, today);
                if window_wanted {
                    assert_eq!(
                        chosen.is_some(),
                        since <= week_start,
                        "{ago} days back: {chosen:?}"
                    );
                }
                for n in [1usize, 3, 10, 70] {
                    let got = read::top_keys(scans, since, today, n, &rolled)
                        .await
                        .expect("ranked");
                    assert_eq!(got, expected(&counts, since, n), "{ago} days, top {n}");
                    let none = read::Rolled {
                        days: rolled.days.clone(),
                        windows: Vec::new(),
                    };
                    let plain = read::top_keys(scans, since, today, n, &none)
                        .await
                        .expect("ranked");
                    assert_eq!(plain, got, "{ago} days, top {n}, no window");
                }
            }
        }
    };
    check(counts.clone(), true).await;

    // A day of the month's window rolled again with more scans after it
    // was built: the window is not used, and the numbers stay right.
    let again = today - Days::new(10);
    let later = now.timestamp() + 60;
    ch.must(&format!(
        "INSERT INTO w.day_totals VALUES ('{domain}', '{again}', 'link', 'k59', 500, 0, toDateTime({later}))"
    ))
    .await;
    ch.must(&format!(
        "INSERT INTO w.rolled_days VALUES ('{domain}', '{again}', toDateTime({later}), 0, 0)"
    ))
    .await;
    counts.insert((again, "k59".to_owned()), 500);
    let rolled = scans
        .rolled(today - Days::new(29), today)
        .await
        .expect("rolled");
    let chosen = windows::best(&rolled.windows, &rolled.days, today - Days::new(29), today);
    assert_eq!(
        chosen.map(|w| w.days),
        Some(6),
        "the month's window predates the roll; the week's does not hold the day"
    );
    check(counts.clone(), false).await;
    // The next round builds the three again.
    let next = Utc::now() + chrono::TimeDelta::seconds(120);
    let want = if windows::settled_end(next) == windows::settled_end(now) {
        3
    } else {
        4
    };
    let built = windows::build_due(&client, domain, next)
        .await
        .expect("built");
    // Each from every day: the day before's windows hold the day too.
    assert_eq!((built.whole, built.next), (want, 0));
    check(counts, true).await;

    // A tie at the bound: `a` reaches the window's best (`b`, 10) only
    // with today's 3, and wins it by its key.
    let ties = "ties.example";
    let day = today - Days::new(3);
    ch.must(&format!(
        "INSERT INTO w.day_totals VALUES ('{ties}', '{day}', 'link', 'b', 10, 0, toDateTime({rolled_at})), \
         ('{ties}', '{day}', 'link', 'a', 7, 0, toDateTime({rolled_at}))"
    ))
    .await;
    ch.must(&format!(
        "INSERT INTO w.rolled_days VALUES ('{ties}', '{day}', toDateTime({rolled_at}), 17, 0)"
    ))
    .await;
    ch.must(&format!(
        "INSERT INTO w.scans (domain, node, log_id, line_offset, time, day, link, scan) \
         SELECT '{ties}', 'a', 9, number, now(), toDate('{today}'), 'a', 1 FROM system.numbers LIMIT 3"
    ))
    .await;
    windows::build_due(&client, ties, now).await.expect("built");
    let scans = read::DomainScans {
        domain: ties.to_owned(),
        ..scans
    };
    let since = today - Days::new(7);
    let rolled = scans.rolled(since, today).await.expect("rolled");
    assert!(windows::best(&rolled.windows, &rolled.days, since, today).is_some());
    let got = read::top_keys(&scans, since, today, 1, &rolled)
        .await
        .expect("ranked");
    assert_eq!(got, [("a".to_owned(), 10)]);
}

/// A busy link's closed days (`clickhouse::busy`): once rolled, its page
/// (`clickhouse::link_page`) and the list's scans column (`read::scans_since`)
/// read them from `link_counts` and say what they said from the states,
/// a quiet link's day stays in the states, and a day rolled again after
/// a late row replaces its counts (merges stopped, so the read itself
/// must take the latest roll's rows).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_links_days_are_read_from_their_counts_as_from_their_states() {
    use chrono::{Days, Utc};
    use qrtag::clickhouse::read::{self, DomainScans};
    use qrtag::clickhouse::{link_page, rollup};

    if !clickhouse::available() {
        return;
    }
    let (_dir, ch) = with_schema("b").await;
    let now = Utc::now();
    let today = now.date_naive();
    let (busy_day, quiet_day) = (today - Days::new(3), today - Days::new(2));
    // `n` rows of `link` on `day` from line `offset` on: scans from 40
    // scanners on three devices, a bot and a HEAD each tenth, two
    // destinations.
    let rows = |link: &str, day: chrono::NaiveDate, n: u32, offset: u32| {
        format!(
            "INSERT INTO b.scans (domain, node, log_id, line_offset, time, day, link, scan, bot, \
             method, tracking, device, location, status) \
             SELECT 'qr.example', 'n', 1, {offset} + number, toDateTime('{day} 10:00:00') + number, \
             toDate('{day}'), '{link}', number % 10 > 1, number % 10 = 0, \
             if(number % 10 = 1, 'HEAD', 'GET'), concat('t', toString(number % 40)), \
             ['phone', 'desktop', 'tablet'][number % 3 + 1], \
             if(number % 2 = 0, 'https://a.example/', 'https://b.example/'), 302 FROM numbers({n})"
        )
    };
    ch.must(&rows("busy", busy_day, 150, 0)).await;
    ch.must(&rows("busy", quiet_day, 5, 1000)).await;
    ch.must(&rows("busy", today, 7, 2000)).await;
    ch.must(&rows("quiet", busy_day, 30, 3000)).await;
    let client = qrtag::clickhouse::Client::new(
        qrtag::clickhouse::ClickHouseUrl::parse(&ch.url("b")).unwrap(),
        std::time::Duration::from_secs(30),
    );
    let scans = DomainScans {
        client: client.clone(),
        domain: "qr.example".to_owned(),
        basis: qrtag::scan_index::Basis {
            time_zone: chrono_tz::UTC,
            geoip: None,
        },
    };
    let since = today - Days::new(30);
    let keys = ["busy", "quiet", "none"];
    let read_all = || async {
        let page = link_page::read(&scans, "busy", since, today).await.unwrap();
        let list = read::scans_since(&scans, &keys, since).await.unwrap();
        (page, list)
    };
    let (before, list_before) = read_all().await;
    // 150 rows: 120 scans (two in ten are a bot or a HEAD), 5 rows: 3, 7: 5;
    // 15 + 1 + 1 bots and as many HEADs.
    assert_eq!(before.numbers.scans, 128, "{:?}", before.numbers);
    assert_eq!(before.numbers.bots, 17);
    assert_eq!(before.numbers.head, 17);
    assert_eq!(
        before.numbers.unique_scanners, 32,
        "t0…t39 but those of bots and HEADs"
    );
    assert_eq!(list_before, [128, 24, 0]);

    for day in [busy_day, quiet_day] {
        rollup::roll_day(&client, "qr.example", day, now)
            .await
            .unwrap();
    }
    assert_eq!(
        ch.must("SELECT link, day FROM b.busy_days FORMAT TSV")
            .await,
        format!("busy\t{busy_day}\n"),
        "only the busy link's day past 100 scans"
    );
    let (after, list_after) = read_all().await;
    assert_eq!(after.numbers, before.numbers);
    assert_eq!(after.shares, before.shares);
    assert_eq!(after.destinations, before.destinations);
    assert_eq!(list_after, list_before);

    // A late row of the busy day, rolled again with merges stopped.
    ch.must("SYSTEM STOP MERGES b.link_counts").await;
    ch.must(&rows("busy", busy_day, 3, 5000)).await;
    let later = now + chrono::TimeDelta::seconds(5);
    rollup::roll_day(&client, "qr.example", busy_day, later)
        .await
        .unwrap();
    let (again, list_again) = read_all().await;
    assert_eq!(again.numbers.scans, 129, "one scan more, not the day twice");
    assert_eq!(again.numbers.bots, 18);
    assert_eq!(list_again, [129, 24, 0]);
    let phones: u64 = again.shares.dimensions[0].rows.iter().map(|(_, n)| n).sum();
    assert_eq!(phones, 129, "every scan's device, once");
}

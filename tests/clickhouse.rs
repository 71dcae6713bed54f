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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_clickhouse_makes_checks_and_keeps_the_schema() {
    if !clickhouse::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ch = ClickHouse::start(&dir.path().join("ch")).await;
    let url = ch.url("scans_db");

    let out = qrtag_in(dir.path(), &["setup-clickhouse", "--clickhouse", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("schema version 1: created"),
        "{}",
        text(&out.stdout)
    );
    let tables = ch
        .must("SELECT name FROM system.tables WHERE database = 'scans_db' ORDER BY name FORMAT TSV")
        .await;
    assert_eq!(tables, "link_days\nlink_days_mv\nscans\nschema_version\n");

    // Again: nothing to do, the version recorded once.
    let out = qrtag_in(dir.path(), &["setup-clickhouse", "--clickhouse", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("schema version 1: already current"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        ch.must("SELECT count() FROM scans_db.schema_version").await,
        "1\n"
    );

    // A row sent twice counts once in the aggregates at once, before any merge.
    for _ in 0..2 {
        ch.must(
            "INSERT INTO scans_db.scans (node, log_id, line_offset, time, day, link, scan, tracking) \
             VALUES ('a', 7, 0, '2026-11-28 10:00:00', '2026-11-28', 'H83if', 1, 'id1')",
        )
        .await;
    }
    assert_eq!(
        ch.must(
            "SELECT uniqExactMerge(requests), uniqExactIfMerge(scans), uniqExactIfMerge(scanners) \
             FROM scans_db.link_days WHERE link = 'H83if' FORMAT TSV"
        )
        .await,
        "1\t1\t1\n"
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

//! `qrtag stats --export scans.parquet|scans.csv`: one row per request with
//! the derived columns, read back by DuckDB and chDB (Python, installed by
//! `.ci/test` into `tests/stats_export/.venv`), which count the same scans
//! per key, device and country as `qrtag stats` does.

mod support;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use chrono::{Duration, TimeZone, Utc};
use qrtag::access_log::format::{Record, write_record};
use qrtag::tracking::id::TrackingId;
use serde_json::Value;

const AGENTS: [&str; 5] = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
];
const CLIENTS: [&str; 6] = [
    "203.0.113.9",
    "2001:db8:1::5",
    "198.51.100.1",
    "2001:db8:2::1",
    "192.0.2.5",
    "203.0.113.77",
];
const KEYS: [&str; 3] = ["/H83if", "/Xy12Z", "/zzzzz"];

/// 600 lines mixing every agent, address and key, scanners with and
/// without IDs, 404s and HEAD requests; written by the log's own writer.
fn log(dir: &Path) -> PathBuf {
    let mut rng = rand::rng();
    let ids: Vec<TrackingId> = (0..40)
        .map(|i| TrackingId::generate_at(1_790_000_000_000 + i * 1000, &mut rng))
        .collect();
    let start = Utc
        .with_ymd_and_hms(2026, 11, 20, 6, 0, 0)
        .single()
        .expect("time");
    let mut out = Vec::new();
    for i in 0..600usize {
        let key = KEYS[i % 7 % 3];
        let (status, location) = if key == "/zzzzz" {
            (404, None)
        } else {
            (302, Some("https://example.com/menu"))
        };
        let client: IpAddr = CLIENTS[i % 11 % 6].parse().expect("address");
        let rec = Record {
            time: start + Duration::minutes(i as i64 * 17),
            client_ip: Some(client),
            tracking: (i % 5 != 0).then(|| &ids[i % 13 % ids.len()]),
            user_agent: Some(AGENTS[i % 5].as_bytes()),
            target: key.as_bytes(),
            status,
            location,
            fallback: false,
            method: if i % 23 == 0 { "HEAD" } else { "GET" },
            referer: None,
        };
        write_record(&rec, &mut out);
    }
    let path = dir.join("access.log");
    std::fs::write(&path, out).expect("write log");
    path
}

use support::qrtag_in as qrtag;

fn test_db() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/geoip/test.mmdb")
        .display()
        .to_string()
}

/// `qrtag stats`'s own counts: scans per key, device and country.
fn stats_counts(report: &Value) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut counts = BTreeMap::new();
    let keys = report["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .filter(|k| k["scans"].as_u64() > Some(0))
        .map(|k| {
            (
                k["key"].as_str().expect("key").to_owned(),
                k["scans"].as_u64().expect("n"),
            )
        })
        .collect();
    counts.insert("key".to_owned(), keys);
    for b in report["breakdowns"].as_array().expect("breakdowns") {
        let rows = b["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| {
                (
                    r["value"].as_str().expect("value").to_owned(),
                    r["scans"].as_u64().expect("n"),
                )
            })
            .collect();
        counts.insert(b["by"].as_str().expect("by").to_owned(), rows);
    }
    counts
}

#[test]
fn duckdb_and_chdb_count_the_parquet_file_as_stats_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log(dir.path()).display().to_string();
    let parquet = dir.path().join("scans.parquet");
    let parquet_arg = parquet.display().to_string();
    let db = test_db();
    let out = qrtag(
        dir.path(),
        &[
            "stats",
            "--by",
            "device,country",
            "--geoip-db",
            &db,
            "--format",
            "json",
            "--export",
            &parquet_arg,
            &log,
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let ours = stats_counts(&report);
    assert!(
        ours["key"].len() == 2 && ours["device"].len() == 3,
        "{ours:?}"
    );

    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stats_export/.venv/bin/python");
    assert!(
        venv.exists(),
        "{} is missing: run `bash .ci/test` once, which installs tests/stats_export/requirements.txt",
        venv.display()
    );
    let counted = std::process::Command::new(venv)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stats_export/count.py"))
        .arg(&parquet)
        .output()
        .expect("run count.py");
    assert!(counted.status.success(), "{counted:?}");
    let engines: BTreeMap<String, BTreeMap<String, BTreeMap<String, u64>>> =
        serde_json::from_slice(&counted.stdout).expect("engines' JSON");
    for engine in ["duckdb", "chdb"] {
        assert_eq!(engines[engine], ours, "{engine}");
    }
}

#[test]
fn csv_export_has_a_row_per_request_and_no_place_columns_without_a_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log(dir.path()).display().to_string();
    let csv = dir.path().join("scans.csv");
    let csv_arg = csv.display().to_string();
    let out = qrtag(
        dir.path(),
        &["stats", "--key", "H83if", "--export", &csv_arg, &log],
    );
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&csv).expect("export written");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("time,key,status,method,scan,bot,scanner,device,os,browser,referrer")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let requests = serde_json::from_slice::<Value>(
        &qrtag(
            dir.path(),
            &["stats", "--key", "H83if", "--format", "json", &log],
        )
        .stdout,
    )
    .expect("JSON")["keys"][0]["requests"]
        .as_u64()
        .expect("requests");
    assert_eq!(rows.len() as u64, requests);
    assert!(rows.iter().all(|r| r[1] == "H83if"));
    assert!(rows.iter().any(|r| r[7] == "tablet" && r[8] == "iOS 16"));
    assert!(rows.iter().any(|r| r[5] == "true" && r[7] == "bot"));
    // Nothing left beside it.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");

    let bad = qrtag(dir.path(), &["stats", "--export", "scans.xlsx", &log]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("must end in .parquet or .csv") && err.lines().count() == 1,
        "{err}"
    );
}

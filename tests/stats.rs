//! `qrtag stats` end to end, on logs written by hand: the expected numbers below
//! are counted from these literal lines, not produced by the log writer.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Parser;
use flate2::Compression;
use flate2::write::GzEncoder;
use qrtag::stats::{StatsArgs, run};
use serde_json::{Value, json};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    stats: StatsArgs,
}

/// Rotated log, gzip-compressed but named without `.gz`: November 20th and 21st.
const OLDER: &str = "\
20261120091500.2 198.51.100.7 0VhAAAAA0000000000a Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1 /H83if 302 https://example.com/menu GET -
20261120091503.9 198.51.100.7 0VhAAAAA0000000000a Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1 /H83if?utm=qr 302 https://example.com/menu GET -
20261120100000.0 66.249.66.1 - Mozilla%2F5.0%20%28compatible%3B%20Googlebot%2F2.1%3B%20%2Bhttp%3A%2F%2Fwww.google.com%2Fbot.html%29 /H83if 302 https://example.com/menu GET -
20261120100001.0 66.249.66.1 - Mozilla%2F5.0%20%28compatible%3B%20Googlebot%2F2.1%3B%20%2Bhttp%3A%2F%2Fwww.google.com%2Fbot.html%29 /robots.txt 404 - GET -
20261121083000.5 2001:db8::1 0VhBBBBB0000000000b Mozilla%2F5.0%20%28Linux%3B%20Android%2014%3B%20Pixel%208%29%20AppleWebKit%2F537.36%20%28KHTML%2C%20like%20Gecko%29%20Chrome%2F120.0.0.0%20Mobile%20Safari%2F537.36 /H83if 302 https://example.com/menu GET https%3A%2F%2Fsearch.example%2F
20261121083001.0 2001:db8::1 0VhBBBBB0000000000b Mozilla%2F5.0%20%28Linux%3B%20Android%2014%3B%20Pixel%208%29%20AppleWebKit%2F537.36%20%28KHTML%2C%20like%20Gecko%29%20Chrome%2F120.0.0.0%20Mobile%20Safari%2F537.36 /docs/api 302 https://example.com/docs GET -
20261121090000.0 192.0.2.44 - Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1 /H83if 302 https://example.com/menu HEAD -
this is not a log line
20261121120000.0 192.0.2.45 - Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1 /H83if 302 https://example.com/menu GET -
";

/// Current log, plain: November 22nd; its last line was cut short.
const NEWER: &str = "\
20261122070000.0 198.51.100.7 0VhAAAAA0000000000a Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1 /H83if 302 https://example.com/menu GET -
20261122070100.0 198.51.100.8 0VhCCCCC0000000000c Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1 /zzzzz 404 - GET -
20261122070200.0 ::1 - curl%2F8.5.0 /H83if 302 https://example.com/menu HEAD -
2026-11-22T07:03:00 198.51.100.9 - - /H83if 302 https://example.com/menu GET -
20261122080000.0 198.51.100.9 0VhDDDDD0000000000d Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1 /docs/api 301 https://example.com/docs GET -
20261122080500.0 198.51.100.9 0VhDDDDD0000000000d Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1 /docs/api 200 - POST -
20261122090000.0 198.51.100.9";

struct Logs {
    dir: tempfile::TempDir,
    newer: PathBuf,
    older: PathBuf,
}

fn logs() -> Logs {
    let dir = tempfile::tempdir().unwrap();
    let newer = dir.path().join("access.log");
    let older = dir.path().join("access.log.1");
    std::fs::write(&newer, NEWER).unwrap();
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(OLDER.as_bytes()).unwrap();
    std::fs::write(&older, gz.finish().unwrap()).unwrap();
    Logs { dir, newer, older }
}

/// Runs `qrtag stats` on the two logs, newest first, with extra options.
fn stats(logs: &Logs, options: &[&str]) -> anyhow::Result<String> {
    let mut argv = vec![
        "stats".to_owned(),
        logs.newer.display().to_string(),
        logs.older.display().to_string(),
    ];
    argv.extend(options.iter().map(|s| s.to_string()));
    let cli = Cli::try_parse_from(argv)?;
    let mut out = Vec::new();
    run(&cli.stats, &mut out)?;
    Ok(String::from_utf8(out)?)
}

fn json_of(logs: &Logs, options: &[&str]) -> Value {
    let mut all = vec!["--format", "json"];
    all.extend(options);
    serde_json::from_str(&stats(logs, &all).unwrap()).unwrap()
}

#[test]
fn json_counts_everything() {
    let logs = logs();
    let v = json_of(&logs, &[]);
    let file = |p: &Path| p.display().to_string();
    assert_eq!(
        v,
        json!({
            "lines_read": 16,
            "malformed": {
                "count": 3,
                "first": [
                    {"file": file(&logs.newer), "line": 4, "error": "time field is invalid"},
                    {"file": file(&logs.newer), "line": 7, "error": "last line has no newline (cut short?)"},
                    {"file": file(&logs.older), "line": 8, "error": "expected 9 fields separated by single spaces, found 6"},
                ],
            },
            "period": null,
            "total": {
                "scans": 7, "unique_scanners": 3,
                "first_scan": "2026-11-20T09:15:00.2Z", "last_scan": "2026-11-22T08:00:00.0Z",
                "head": 2, "bot": 3, "not_found": 2, "requests": 13, "fallback": 0,
            },
            "keys": [
                {
                    "key": "H83if", "scans": 5, "unique_scanners": 2,
                    "first_scan": "2026-11-20T09:15:00.2Z", "last_scan": "2026-11-22T07:00:00.0Z",
                    "head": 2, "bot": 2, "not_found": 0, "requests": 8, "fallback": 0,
                },
                {
                    "key": "docs/api", "scans": 2, "unique_scanners": 2,
                    "first_scan": "2026-11-21T08:30:01.0Z", "last_scan": "2026-11-22T08:00:00.0Z",
                    "head": 0, "bot": 0, "not_found": 0, "requests": 3, "fallback": 0,
                },
                {
                    "key": "robots.txt", "scans": 0, "unique_scanners": 0,
                    "first_scan": null, "last_scan": null,
                    "head": 0, "bot": 1, "not_found": 1, "requests": 1, "fallback": 0,
                },
                {
                    "key": "zzzzz", "scans": 0, "unique_scanners": 0,
                    "first_scan": null, "last_scan": null,
                    "head": 0, "bot": 0, "not_found": 1, "requests": 1, "fallback": 0,
                },
            ],
        })
    );
}

#[test]
fn csv_counts() {
    let logs = logs();
    assert_eq!(
        stats(&logs, &["--format", "csv"]).unwrap(),
        "key,scans,unique_scanners,first_scan,last_scan,head,bot,not_found,requests,fallback\n\
         H83if,5,2,2026-11-20T09:15:00.2Z,2026-11-22T07:00:00.0Z,2,2,0,8,0\n\
         docs/api,2,2,2026-11-21T08:30:01.0Z,2026-11-22T08:00:00.0Z,0,0,0,3,0\n\
         robots.txt,0,0,,,0,1,1,1,0\n\
         zzzzz,0,0,,,0,0,1,1,0\n"
    );
}

#[test]
fn file_order_does_not_matter() {
    let logs = logs();
    let reversed = Logs {
        newer: logs.older.clone(),
        older: logs.newer.clone(),
        dir: tempfile::tempdir().unwrap(),
    };
    let a = json_of(&logs, &[]);
    let b = json_of(&reversed, &[]);
    assert_eq!(a["total"], b["total"]);
    assert_eq!(a["keys"], b["keys"]);
}

#[test]
fn key_and_day_range() {
    let logs = logs();
    assert_eq!(
        stats(
            &logs,
            &[
                "--format",
                "csv",
                "--key",
                "H83if",
                "--since",
                "2026-11-21",
                "--until",
                "2026-11-21"
            ]
        )
        .unwrap(),
        "key,scans,unique_scanners,first_scan,last_scan,head,bot,not_found,requests,fallback\n\
         H83if,2,1,2026-11-21T08:30:00.5Z,2026-11-21T12:00:00.0Z,1,0,0,3,0\n"
    );
    // A leading slash is accepted; RFC 3339 bounds are inclusive, offsets honoured.
    let v = json_of(
        &logs,
        &[
            "--key",
            "/H83if",
            "--since",
            "2026-11-21T13:00:00+01:00",
            "--until",
            "2026-11-22T07:00:00Z",
        ],
    );
    assert_eq!(v["keys"].as_array().unwrap().len(), 1);
    assert_eq!(v["keys"][0]["scans"], 2);
    assert_eq!(v["keys"][0]["first_scan"], "2026-11-21T12:00:00.0Z");
}

#[test]
fn series_by_day() {
    let logs = logs();
    assert_eq!(
        stats(&logs, &["--format", "csv", "--by", "day"]).unwrap(),
        "key,period,period_start,scans\n\
         H83if,2026-11-20,2026-11-20,2\n\
         H83if,2026-11-21,2026-11-21,2\n\
         H83if,2026-11-22,2026-11-22,1\n\
         docs/api,2026-11-21,2026-11-21,1\n\
         docs/api,2026-11-22,2026-11-22,1\n"
    );
    let v = json_of(&logs, &["--by", "week", "--key", "H83if"]);
    assert_eq!(v["period"], "week");
    assert_eq!(
        v["keys"][0]["series"],
        json!([{"period": "2026-W47", "start": "2026-11-16", "scans": 5}])
    );
}

#[test]
fn table_is_the_default() {
    let logs = logs();
    let text = stats(&logs, &[]).unwrap();
    assert!(text.starts_with("KEY "), "{text}");
    assert!(text.contains("16 lines read, 3 malformed"), "{text}");
}

#[test]
fn charts_are_written() {
    let logs = logs();
    let svg = logs.dir.path().join("scans.svg");
    let png = logs.dir.path().join("scans.png");
    stats(&logs, &["--chart", svg.to_str().unwrap()]).unwrap();
    stats(&logs, &["--by", "week", "--chart", png.to_str().unwrap()]).unwrap();
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(100)]);
    assert!(svg.contains("Scans per day") && svg.contains("H83if"));
    let png = std::fs::read(png).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(png.len() > 1000);
}

#[test]
fn bad_chart_name_fails_before_reading() {
    let logs = logs();
    let err = stats(&logs, &["--chart", "scans.jpg"]).unwrap_err();
    assert!(err.to_string().contains("scans.jpg"), "{err}");
}

#[test]
fn missing_file_is_named() {
    let logs = logs();
    let missing = logs.dir.path().join("nope.log");
    let err = stats(&logs, &[missing.to_str().unwrap()]).unwrap_err();
    assert!(format!("{err:#}").contains("nope.log"), "{err:#}");
}

//! The REST API's outside checkers, run the same way against a server on
//! either store (`tests/rest_api.rs` on SQLite, `tests/couchdb/rest.rs` on
//! PouchDB Server): `openapi-spec-validator` on the served document,
//! `schemathesis` against the live server, and `life.py`, an `httpx`
//! client walking a tag's life. All from `tests/rest/python/`, pinned in
//! its `requirements.txt` and installed into a git-ignored venv by
//! `bash .ci/test`. Included with `#[path]` by the crates that do not use
//! `support`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A program of the checkers' virtual environment.
pub fn venv_bin(name: &str) -> PathBuf {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/rest/python/.venv/bin")
        .join(name);
    assert!(
        bin.exists(),
        "{} is missing: run `bash .ci/test` once, which installs tests/rest/python/requirements.txt",
        bin.display()
    );
    bin
}

/// Runs `cmd` to success; its standard output.
pub async fn run(cmd: &mut tokio::process::Command) -> String {
    let out = cmd.output().await.expect("run");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{cmd:?}\n{stdout}\n{stderr}");
    stdout.into_owned()
}

/// `openapi-spec-validator` on the document served at `document`.
pub async fn validate(document: &str) {
    let validate = "import json, sys, urllib.request\n\
                    from openapi_spec_validator import validate\n\
                    validate(json.load(urllib.request.urlopen(sys.argv[1])))\n\
                    print('valid')";
    let said =
        run(tokio::process::Command::new(venv_bin("python")).args(["-c", validate, document]))
            .await;
    assert_eq!(said.trim(), "valid");
}

/// The server the checkers run against: no rate limit in their way
/// (schemathesis sends as fast as it can, many requests without a key),
/// and the scan index with every breakdown, places from the test GeoIP
/// database, so each `by` the document offers is answered; and a logo
/// for `logo=true`.
pub fn configure(settings: &mut qrtag::settings::Settings) {
    let api = settings.api.as_mut().expect("the API listener");
    api.rate_per_second = 1_000_000;
    api.strangers_per_second = 1_000_000;
    let qrtag::settings::AccessLogTarget::Path(log) = settings.access_log.clone() else {
        panic!("a log file");
    };
    let mut index = qrtag::scan_index::ScanIndexSettings::beside(&log);
    index.poll_interval = std::time::Duration::from_millis(20);
    let geoip = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/geoip/test.mmdb");
    let db = qrtag::stats::dimensions::place::GeoDb::open(&geoip).expect("the test GeoIP database");
    index.breakdowns = Some(qrtag::scan_index::BreakdownSettings::new(
        "UTC".parse().expect("zone"),
        Some((geoip.as_path(), db.clone())),
    ));
    settings.scan_index = Some(index);
    // As `serve --geoip-db` opens it for the rules too: a country rule is
    // taken.
    settings.geoip = Some(qrtag::settings::GeoIp(db));
    // `serve --print-logo`: a small two-colour square, so `logo=true` is
    // answered as the document says.
    let logo = image::RgbaImage::from_fn(48, 48, |x, y| {
        if (x / 12 + y / 12) % 2 == 0 {
            image::Rgba([200, 30, 30, 255])
        } else {
            image::Rgba([255, 255, 255, 255])
        }
    });
    let mut png = Vec::new();
    logo.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .expect("the logo as PNG");
    settings.print_logo = Some(std::sync::Arc::new(qrtag::print::tag_image::ServerLogo {
        image: std::sync::Arc::new(logo),
        png,
    }));
}

/// Examples per operation and phase: `--checks all` in about a minute
/// on two cores (README, tests/rest_api.rs).
pub const EXAMPLES: &str = "15";

/// `schemathesis --checks all` against the server whose document is at
/// `document`, with a write key: no server error, every answer as
/// documented (status, media type, headers, body), data the document
/// allows accepted and data it forbids refused, a 405 with `Allow` for a
/// method a path does not declare, a missing or wrong key a 401, and the
/// links it creates found again. A fixed seed, `tests/rest/python/
/// schemathesis.toml` (413 is a refusal too) and `hooks.py` (the refusals
/// of rules the document states in words, each named there). Runs in
/// `dir` (it writes there).
pub async fn schemathesis(document: &str, write_key: &str, dir: &Path) {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rest/python");
    run(tokio::process::Command::new(venv_bin("schemathesis"))
        .arg("--config-file")
        .arg(python.join("schemathesis.toml"))
        .args([
            "run",
            document,
            "--seed",
            "1",
            "--max-examples",
            EXAMPLES,
            "--checks",
            "all",
        ])
        .args(["--header", &format!("Authorization: Bearer {write_key}")])
        .env("SCHEMATHESIS_HOOKS", python.join("hooks.py"))
        .env("NO_COLOR", "1")
        .current_dir(dir))
    .await;
}

/// `life.py`: bulk create, images, repoint with `If-Match` (a stale one
/// refused), the scan following and counted, a read key refused a write,
/// a revoked key refused. `api` is the `/api/v1` base, `public` the
/// public listener's origin.
pub async fn life(api: &str, public: &str, write: &str, read: &str, revoked: &str) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/rest/python/life.py");
    let said = run(tokio::process::Command::new(venv_bin("python"))
        .arg(script)
        .args([api, public, write, read, revoked]))
    .await;
    assert_eq!(said.trim(), "ok");
}

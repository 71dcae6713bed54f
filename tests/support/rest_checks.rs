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

/// `schemathesis` against the server whose document is at `document`,
/// with a write key: no server error, and every answer as documented
/// (status, media type, headers, body). Bounded: a fixed seed and few
/// examples, a few seconds on two cores. Runs in `dir` (it writes there).
pub async fn schemathesis(document: &str, write_key: &str, dir: &Path) {
    run(tokio::process::Command::new(venv_bin("schemathesis"))
        .args([
            "run",
            document,
            "--seed",
            "1",
            "--max-examples",
            "10",
            "--checks",
        ])
        .arg(
            "not_a_server_error,status_code_conformance,content_type_conformance,\
             response_headers_conformance,response_schema_conformance",
        )
        .args(["--header", &format!("Authorization: Bearer {write_key}")])
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

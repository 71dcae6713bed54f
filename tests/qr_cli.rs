//! `qrtag qr` and `qrtag batch` as a user runs them: the real binary on a
//! real database, checked against the running admin listener and decoded
//! back the way a scanner reads the codes.

#[path = "support/qr_decode.rs"]
mod qr_decode;
mod support;

use std::collections::HashSet;
use std::process::Output;
use std::time::Duration;

use qr_decode::{attr, decode_png, decode_sheet_path, decode_svg};
use support::{
    PUBLIC_URL, TestApp, eventually, qrtag_cmd_env, spawn_app, spawn_with, test_settings,
};

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

async fn admin_bytes(app: &TestApp, path: &str) -> Vec<u8> {
    let r = app.admin_get(path).await.expect("admin listener answers");
    assert_eq!(r.status(), 200, "{path}");
    r.bytes().await.expect("body").to_vec()
}

/// Waits until the running server has loaded `n` links.
async fn wait_for_links(app: &TestApp, n: usize) {
    let want = format!("ready: {n} links");
    eventually(Duration::from_secs(2), || async {
        match app.admin_get("/readyz").await {
            Some(r) => r.text().await.is_ok_and(|t| t.starts_with(&want)),
            None => false,
        }
    })
    .await;
}

#[tokio::test]
async fn cli_and_http_give_identical_bytes() {
    let app = spawn_app().await;
    ok(app.cli(&["new", "https://example.com/", "--key", "H83if"]));
    ok(app.cli(&["new", "/documentation", "--key", "docs/api", "--inactive"]));
    wait_for_links(&app, 2).await;
    let dir = app.dir.path();

    let cases: [(&str, &[&str], &str); 4] = [
        ("png", &[], ""),
        (
            "png",
            &["--scale", "3", "--margin", "0", "--ec", "H"],
            "?scale=3&margin=0&ec=H",
        ),
        ("svg", &[], ""),
        (
            "svg",
            &["--scale", "5", "--margin", "2", "--ec", "q"],
            "?scale=5&margin=2&ec=q",
        ),
    ];
    for key in ["H83if", "docs/api"] {
        let mut seen = HashSet::new();
        for (ext, flags, query) in cases {
            let http = admin_bytes(&app, &format!("/qr/{key}.{ext}{query}")).await;

            let mut args = vec!["qr", key, "--format", ext];
            args.extend_from_slice(flags);
            let piped = ok(qrtag_cmd_env(&app.db, &args, &[])).stdout;
            assert!(piped == http, "{key} {ext} {flags:?}: stdout differs");

            let file = dir.join(format!("tag.{ext}"));
            let file_arg = file.to_str().expect("utf-8 path");
            let mut args = vec!["qr", key, "-o", file_arg];
            args.extend_from_slice(flags);
            let out = ok(qrtag_cmd_env(&app.db, &args, &[]));
            assert!(out.stdout.is_empty(), "nothing on stdout with -o");
            let written = std::fs::read(&file).expect("written");
            assert!(written == http, "{key} {ext} {flags:?}: file differs");

            assert!(
                seen.insert(http),
                "{key} {ext} {flags:?}: parameters changed nothing"
            );
        }
        let want = format!("{PUBLIC_URL}/{key}");
        let png = admin_bytes(&app, &format!("/qr/{key}.png")).await;
        assert_eq!(decode_png(&png).0, want);
        let svg = admin_bytes(&app, &format!("/qr/{key}.svg")).await;
        assert_eq!(decode_svg(&String::from_utf8(svg).expect("utf-8")), want);
    }
}

#[tokio::test]
async fn uppercase_prefix_matches_the_service_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.qr_uppercase_prefix = true;
    let app = spawn_with(settings, dir).await;
    ok(app.cli(&["new", "https://example.com/", "--key", "H83if"]));
    wait_for_links(&app, 1).await;

    let http = admin_bytes(&app, "/qr/H83if.png").await;
    assert_eq!(decode_png(&http).0, "HTTPS://0X1F.IE/H83if");
    let flag = ok(qrtag_cmd_env(
        &app.db,
        &["qr", "H83if", "--uppercase-prefix"],
        &[],
    ))
    .stdout;
    assert!(flag == http, "--uppercase-prefix differs from the service");
    let env = ok(qrtag_cmd_env(
        &app.db,
        &["qr", "H83if"],
        &[("QRTAG_QR_UPPERCASE_PREFIX", "1")],
    ))
    .stdout
    .clone();
    assert!(env == http, "the shared variable differs from the service");
    let plain = ok(qrtag_cmd_env(&app.db, &["qr", "H83if"], &[])).stdout;
    assert_eq!(decode_png(&plain).0, format!("{PUBLIC_URL}/H83if"));
}

#[test]
fn qr_refuses_missing_keys_and_unknown_formats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    ok(qrtag_cmd_env(
        &db,
        &["new", "https://example.com/", "--key", "H83if"],
        &[],
    ));
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();

    let out = qrtag_cmd_env(&db, &["qr", "zzzzz", "-o", &path("z.png")], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "qrtag: no link zzzzz\n");
    assert!(!dir.path().join("z.png").exists());

    let out = qrtag_cmd_env(&db, &["qr", "H83if", "-o", &path("tag.txt")], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("--format"), "{}", stderr(&out));
    assert!(!dir.path().join("tag.txt").exists());

    let out = ok(qrtag_cmd_env(
        &db,
        &["qr", "H83if", "-o", &path("tag.txt"), "--format", "svg"],
        &[],
    ));
    assert!(out.stdout.is_empty());
    let svg = std::fs::read_to_string(dir.path().join("tag.txt")).expect("written");
    assert_eq!(decode_svg(&svg), format!("{PUBLIC_URL}/H83if"));

    for args in [
        &["qr", "H83if", "--scale", "65"][..],
        &["qr", "H83if", "--scale", "1"],
        &["qr", "H83if", "--margin", "17"],
        &["qr", "H83if", "--ec", "X"],
        &["qr", "H83if", "--format", "gif"],
        &["qr", "no key"],
    ] {
        let out = qrtag_cmd_env(&db, args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.starts_with("qrtag: ") && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
}

/// The short URLs `batch` printed, as keys, checked for shape and uniqueness.
fn printed_keys(out: &Output, n: usize) -> Vec<String> {
    let keys: Vec<String> = stdout(out)
        .lines()
        .map(|line| {
            let key = line
                .strip_prefix(&format!("{PUBLIC_URL}/"))
                .unwrap_or_else(|| panic!("a short URL: {line}"));
            assert!(
                qrtag::values::short_id::ShortId::parse(key).is_ok(),
                "{key}"
            );
            key.to_owned()
        })
        .collect();
    assert_eq!(keys.len(), n);
    assert_eq!(keys.iter().collect::<HashSet<_>>().len(), n, "keys repeat");
    keys
}

/// Checks a sheet holds exactly `keys`, in order, each code decoding to `text(key)`.
fn check_sheet(sheet: &str, keys: &[String], text: impl Fn(&str) -> String) {
    assert!(sheet.contains(r#"width="210mm" height="297mm""#));
    let paths: Vec<&str> = sheet.split("<path").skip(1).collect();
    let labels: Vec<&str> = sheet.split("<text").skip(1).collect();
    assert_eq!(paths.len(), keys.len());
    assert_eq!(labels.len(), keys.len());
    for ((key, path), label) in keys.iter().zip(paths).zip(labels) {
        let shown = &label
            [label.find('>').expect("text opens") + 1..label.find("</text>").expect("text closes")];
        assert_eq!(shown, key, "label under the code");
        assert_eq!(decode_sheet_path(attr(path, "d")), text(key));
    }
}

#[tokio::test]
async fn batch_creates_inactive_links_and_a_sheet_that_scans() {
    let app = spawn_app().await;
    let sheet = app.dir.path().join("f.svg");
    let out = ok(app.cli(&["batch", "24", "--sheet", sheet.to_str().expect("utf-8")]));
    let keys = printed_keys(&out, 24);

    let listed: HashSet<String> = stdout(&app.cli(&["list"]))
        .lines()
        .map(String::from)
        .collect();
    let want: HashSet<String> = keys
        .iter()
        .map(|k| format!("{k}\t{PUBLIC_URL}/\tinactive"))
        .collect();
    assert_eq!(listed, want);

    wait_for_links(&app, 24).await;
    for key in &keys {
        assert_eq!(app.get(&format!("/{key}")).await.status(), 404, "{key}");
    }

    let svg = std::fs::read_to_string(&sheet).expect("sheet written");
    check_sheet(&svg, &keys, |k| format!("{PUBLIC_URL}/{k}"));
    let files: Vec<_> = std::fs::read_dir(app.dir.path())
        .expect("dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    assert_eq!(files, ["f.svg"], "one page, under the name given");
}

#[test]
fn a_batch_past_one_page_goes_on_numbered_sheets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let sheet = dir.path().join("t.svg");
    let out = qrtag_cmd_env(
        &db,
        &[
            "batch",
            "25",
            "--sheet",
            sheet.to_str().expect("utf-8"),
            "--url",
            "https://example.com/soon",
            "--uppercase-prefix",
            "--ec",
            "M",
        ],
        &[],
    );
    let keys = printed_keys(&ok(out), 25);
    assert!(!sheet.exists());
    let upper = |k: &str| format!("HTTPS://0X1F.IE/{k}");
    let page = |n| std::fs::read_to_string(dir.path().join(format!("t-{n}.svg"))).expect("page");
    check_sheet(&page(1), &keys[..24], upper);
    check_sheet(&page(2), &keys[24..], upper);

    let list = stdout(&qrtag_cmd_env(&db, &["list"], &[]));
    assert_eq!(list.lines().count(), 25);
    assert!(
        list.lines()
            .all(|l| l.ends_with("\thttps://example.com/soon\tinactive")),
        "{list}"
    );
}

#[test]
fn batch_refuses_bad_requests_before_creating_anything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let at = |name: &str| dir.path().join(name).to_string_lossy().into_owned();

    for (args, code) in [
        (vec!["batch", "0", "--sheet", &at("a.svg")], 2),
        (vec!["batch", "1001", "--sheet", &at("a.svg")], 2),
        (vec!["batch", "ten", "--sheet", &at("a.svg")], 2),
        (vec!["batch", "2"], 2),
        (vec!["batch", "2", "--sheet", &at("a.pdf")], 2),
        (
            vec![
                "batch",
                "2",
                "--sheet",
                &at("a.svg"),
                "--url",
                "//evil.example",
            ],
            2,
        ),
        (vec!["batch", "2", "--sheet", &at("missing/a.svg")], 1),
    ] {
        let out = qrtag_cmd_env(&db, &args, &[]);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("qrtag: "), "{err}");
    }
    // Nothing at all: no sheet, and no link in the database (which the
    // helper made with `qrtag init`, as a user does once).
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    assert!(left.iter().all(|f| f.starts_with("links.db")), "{left:?}");
    let list = qrtag_cmd_env(&db, &["list"], &[]);
    assert!(list.status.success() && list.stdout.is_empty(), "{list:?}");
}

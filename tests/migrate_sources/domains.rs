//! A source of several domains through `qrtag import --from` into a qrtag
//! of two `[[domains]]` (issue 37): `--domain-map OLD=NEW` sends each old
//! domain's links to its qrtag domain's own store, an unmapped one is
//! refused by name, and `--domain HOST` says where the links that name no
//! domain go. Checked through the binary: `qrtag try --domain` and a real
//! `qrtag serve` asked by `--verify` with each domain's Host.

use std::path::Path;
use std::process::Output;

use crate::support;
use support::output::{stderr, stdout};
use support::process::ServerProcess;

const A: &str = "0x1f.ie";
const B: &str = "qr.brand-b.ie";

/// Bitly's export of links on bit.ly (no domain of the user's), on two
/// custom domains holding the same back-half to two places, on a custom
/// domain qrtag does not serve, and on qrtag's own default domain.
const EXPORT: &str = "Title,Link,Custom Link,Destination URL,Date Created,Tags,Clicks,Archived
,https://bit.ly/plain7,,https://example.com/plain,2020-01-01,,3,false
,https://bit.ly/x1,https://old-a.co/poster,https://a.example/poster,2020-01-01,,1,false
,https://bit.ly/x2,https://old-b.co/poster,https://b.example/poster,2020-01-01,,2,false
,https://bit.ly/x3,https://old-b.co/Menu_12,https://b.example/menu,2020-01-01,,0,false
,https://bit.ly/x4,https://stray.co/lost,https://s.example/lost,2020-01-01,,0,false
,https://bit.ly/x5,https://0x1f.ie/named,https://a.example/named,2020-01-01,,0,false
";

/// A directory with `qrtag.toml` naming two domains (the default `A` in
/// `a.db`, `B` in `b.db` with `b.log`), both stores made, and the export.
fn two_domains() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(
        d.join("qrtag.toml"),
        // Whole paths: the server runs in the test's working directory.
        format!(
            "db = \"{d}/a.db\"\npublic_url = \"https://{A}\"\naccess_log = \"{d}/access.log\"\n\n\
             [[domains]]\nhost = \"{A}\"\n\n\
             [[domains]]\nhost = \"{B}\"\npublic_url = \"https://{B}\"\nsqlite = \"{d}/b.db\"\naccess_log = \"{d}/b.log\"\n",
            d = d.display()
        ),
    )
    .expect("config");
    for (db, url) in [("a.db", A), ("b.db", B)] {
        let out = support::qrtag_bin()
            .arg("--db")
            .arg(d.join(db))
            .args(["--public-url", &format!("https://{url}"), "init"])
            .output()
            .expect("init");
        assert!(out.status.success(), "{out:?}");
    }
    std::fs::write(d.join("bitly.csv"), EXPORT).expect("export");
    dir
}

/// `qrtag ARGS` in `dir` with its `qrtag.toml`.
fn cli(dir: &Path, args: &[&str]) -> Output {
    support::qrtag_bin()
        .args(args)
        .env("QRTAG_CONFIG", dir.join("qrtag.toml"))
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run qrtag")
}

/// `import --from bitly bitly.csv` with `more` before the file.
fn import(dir: &Path, more: &[&str]) -> Output {
    cli(
        dir,
        &[&["import", "--from", "bitly"], more, &["bitly.csv"]].concat(),
    )
}

/// What a scan of `key` on `domain` gets: the destination, or `None`.
fn scan(dir: &Path, key: &str, domain: &str) -> Option<String> {
    let out = cli(dir, &["try", key, "--domain", domain]);
    match out.status.code() {
        Some(0) => stdout(&out).lines().next().map(str::to_owned),
        Some(1) => None,
        _ => panic!("try {key} --domain {domain}: {out:?}"),
    }
}

/// The keys of a domain's store.
fn keys(dir: &Path, domain: &str) -> Vec<String> {
    let out = cli(dir, &["export", "--domain", domain]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut keys: Vec<String> = stdout(&out)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            v["_id"].as_str().expect("_id").to_owned()
        })
        .collect();
    keys.sort();
    keys
}

fn report(o: &Output) -> String {
    stdout(o)
}

#[test]
fn without_a_domain_map_the_custom_domains_are_refused_by_name() {
    let dir = two_domains();
    let d = dir.path();
    let out = import(d, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = report(&out);
    assert!(text.contains("  new: 2\n"), "{text}");
    assert!(text.contains("  refused: 4\n"), "{text}");
    for old in ["old-a.co", "old-b.co", "stray.co"] {
        assert!(
            text.contains(&format!(
                "its domain {old} is not a domain of this qrtag (map it with --domain-map {old}=HOST)"
            )),
            "{old}: {text}"
        );
    }
    // bit.ly's back-half and the link on the default domain's own host.
    assert_eq!(keys(d, A), ["named", "plain7"]);
    assert!(keys(d, B).is_empty());
}

#[tokio::test]
async fn domain_map_sends_each_old_domain_to_its_own_store_and_each_host_answers_its_own() {
    let dir = two_domains();
    let d = dir.path();
    let maps = [
        "--domain-map",
        "old-a.co=0x1f.ie",
        "--domain-map",
        "https://OLD-B.co/=qr.brand-b.ie",
    ];
    let dry = import(d, &[&maps[..], &["--dry-run"]].concat());
    let out = import(d, &maps);
    assert_eq!(out.status.code(), Some(1), "stray.co: {}", stderr(&out));
    let text = report(&out);
    assert!(
        text.starts_with(&stdout(&dry).replace("dry run: nothing written\n", "")),
        "the dry run says what the run does:\n{}\n{text}",
        stdout(&dry)
    );
    assert!(text.contains("  new: 5\n"), "{text}");
    assert!(text.contains("  refused: 1\n"), "{text}");
    assert!(
        text.contains("\"stray.co/lost\": its domain stray.co is not a domain of this qrtag (map it with --domain-map stray.co=HOST)"),
        "{text}"
    );
    assert_eq!(keys(d, A), ["named", "plain7", "poster"]);
    assert_eq!(keys(d, B), ["Menu_12", "poster"]);
    for (key, domain, want) in [
        ("poster", A, Some("https://a.example/poster")),
        ("poster", B, Some("https://b.example/poster")),
        ("Menu_12", B, Some("https://b.example/menu")),
        ("Menu_12", A, None),
        ("plain7", A, Some("https://example.com/plain")),
        ("plain7", B, None),
        ("named", A, Some("https://a.example/named")),
        ("lost", A, None),
        ("lost", B, None),
    ] {
        assert_eq!(scan(d, key, domain).as_deref(), want, "{key} on {domain}");
    }

    // A real server for both domains, asked for every key with its
    // domain's Host: each answers its own destination.
    let config = d.join("qrtag.toml");
    let server = ServerProcess::spawn(
        &d.join("a.db"),
        &["--access-log", d.join("access.log").to_str().expect("path")],
        &[("QRTAG_CONFIG", config.to_str().expect("path"))],
        false,
    )
    .await;
    let base = server.url("");
    let verify = cli(
        d,
        &[
            &["import", "--from", "bitly"],
            &maps[..],
            &["--verify", base.trim_end_matches('/'), "bitly.csv"],
        ]
        .concat(),
    );
    assert!(
        verify.status.success(),
        "{}\n{}",
        stdout(&verify),
        stderr(&verify)
    );
    assert!(
        stdout(&verify).contains("verified 5 keys at"),
        "{}",
        stdout(&verify)
    );
    // The check can fail: B's links sent to A are not there.
    let wrong = support::qrtag_bin()
        .args(["--db", d.join("a.db").to_str().expect("path")])
        .args([
            "import",
            "--from",
            "bitly",
            "--domain-map",
            "old-a.co=0x1f.ie",
            "--domain-map",
            "old-b.co=0x1f.ie",
            "--dry-run",
            "--verify",
            base.trim_end_matches('/'),
        ])
        .arg(d.join("bitly.csv"))
        .env("QRTAG_CONFIG", &config)
        .output()
        .expect("run");
    assert_eq!(wrong.status.code(), Some(1), "{}", stdout(&wrong));
    assert!(
        stdout(&wrong)
            .contains("Menu_12: the source sent https://b.example/menu; qrtag answers 404"),
        "{}",
        stdout(&wrong)
    );
    server.stop().await;

    // A second run adds nothing to either store.
    let again = import(d, &maps);
    let text = report(&again);
    assert!(
        text.contains("  new: 0\n  already there and equal: 5\n"),
        "{text}"
    );
}

#[test]
fn a_domain_map_to_a_host_qrtag_does_not_serve_is_refused() {
    let dir = two_domains();
    let d = dir.path();
    let out = import(d, &["--domain-map", "old-a.co=elsewhere.example"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        report(&out).contains("--domain-map sends old-a.co to elsewhere.example, which the configuration's [[domains]] do not list"),
        "{}",
        report(&out)
    );
}

/// `--domain B`: the links that name no domain (bit.ly's) go to B's store;
/// a link naming the default domain, or mapped to it, still goes there.
#[test]
fn domain_chooses_where_the_links_that_name_no_domain_go() {
    let dir = two_domains();
    let d = dir.path();
    let args = [
        "--domain",
        B,
        "--domain-map",
        "old-a.co=0x1f.ie",
        "--domain-map",
        "old-b.co=qr.brand-b.ie",
    ];
    let dry = import(d, &[&args[..], &["--dry-run"]].concat());
    let out = import(d, &args);
    assert_eq!(out.status.code(), Some(1), "stray.co: {}", stderr(&out));
    assert!(
        report(&out).starts_with(&stdout(&dry).replace("dry run: nothing written\n", "")),
        "{}\n{}",
        stdout(&dry),
        report(&out)
    );
    assert_eq!(keys(d, B), ["Menu_12", "plain7", "poster"]);
    assert_eq!(keys(d, A), ["named", "poster"]);
    assert_eq!(
        scan(d, "plain7", B).as_deref(),
        Some("https://example.com/plain")
    );
    assert_eq!(scan(d, "plain7", A), None);
    assert_eq!(
        scan(d, "named", A).as_deref(),
        Some("https://a.example/named")
    );
    assert_eq!(scan(d, "named", B), None);

    // A domain the configuration does not list: one line, exit 2.
    let out = import(d, &["--domain", "nope.example"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        stderr(&out),
        "qrtag: no domain nope.example (domains: 0x1f.ie, qr.brand-b.ie)\n"
    );
}

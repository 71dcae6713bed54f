//! The README's walk-through (the guide's getting-started chapter shows the
//! same), run as written: its `qrtag.toml` in a fresh directory, a real `qrtag serve`, every command of the walk-through with
//! the real binary (`cargo run --release --` is the binary), every `curl` as
//! an HTTP request whose answer is checked against the comment lines under
//! it. Then the traps it must not fall into: no loopback URL printed into a
//! tag by a command that was not allowed to, and no stray database.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use support::process::ServerProcess;
use support::qrtag_bin;

/// The README's section under `heading`: its fenced blocks by language, in order.
fn blocks(readme: &str, heading: &str) -> Vec<(String, String)> {
    let start = readme.find(heading).expect("the heading");
    let section = &readme[start + heading.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut out = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        let Some(lang) = line.strip_prefix("```").filter(|l| !l.is_empty()) else {
            continue;
        };
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        out.push((lang.to_owned(), body.join("\n")));
    }
    out
}

/// One step: a command line and the output lines the README shows under it.
struct Step {
    command: String,
    expected: Vec<String>,
}

fn steps(sh: &str) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    for line in sh.lines() {
        if let Some(shown) = line.strip_prefix("#   ") {
            if let Some(step) = out.last_mut() {
                step.expected.push(shown.trim().to_owned());
            }
        } else if !line.trim().is_empty() && !line.starts_with('#') {
            out.push(Step {
                command: line.to_owned(),
                expected: Vec::new(),
            });
        }
    }
    out
}

fn dbs_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            found.extend(dbs_under(&path));
        } else if path.extension().is_some_and(|e| e == "db") {
            found.push(path);
        }
    }
    found
}

#[tokio::test]
async fn the_walkthrough_works_in_a_fresh_directory() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    // The guide's getting-started chapter shows the same walk-through.
    let guide = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/getting-started.md"),
    )
    .expect("docs/src/getting-started.md");
    assert_eq!(
        blocks(&guide, "## Walk-through\n"),
        blocks(&readme, "## Walk-through\n"),
        "the guide's walk-through equals the README's"
    );
    let blocks = blocks(&readme, "## Walk-through\n");
    let toml = &blocks
        .iter()
        .find(|(l, _)| l == "toml")
        .expect("a toml block")
        .1;
    let sh = &blocks
        .iter()
        .find(|(l, _)| l == "sh")
        .expect("an sh block")
        .1;

    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().canonicalize().expect("dir");
    let db = home.join("qrtag.db");
    // The server first, on free ports; the README's 8080 and 8081 are
    // these ports from here on.
    let server = ServerProcess::spawn(&db, &[], &[], false).await;
    let ports = BTreeMap::from([
        ("127.0.0.1:8080".to_owned(), server.public.to_string()),
        ("127.0.0.1:8081".to_owned(), server.admin.to_string()),
    ]);
    let here = |s: &str| {
        ports
            .iter()
            .fold(s.to_owned(), |s, (from, to)| s.replace(from, to))
    };
    let config = home.join("qrtag.toml");
    std::fs::write(&config, here(toml)).expect("qrtag.toml");
    let allowed = toml.contains("allow_local_url = true");

    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let mut key: Option<String> = None;
    let mut printed = Vec::new();
    for step in steps(sh) {
        let with_key = |s: &str| {
            let s = here(s);
            match &key {
                Some(k) => s.replace("aZ3k9", k),
                None => s,
            }
        };
        let command = with_key(&step.command);
        let command = command
            .split(" # ")
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        let expected_location = step
            .command
            .split_once("# -> ")
            .map(|(_, to)| to.trim().to_owned());
        if let Some(args) = command.strip_prefix("cargo run --release -- ") {
            let args: Vec<&str> = args.split_whitespace().collect();
            // Run in the directory of the configuration file, found there
            // as ./qrtag.toml (no variable names it).
            let out = qrtag_bin()
                .env_remove("QRTAG_CONFIG")
                .args(&args)
                .current_dir(&home)
                .stdin(Stdio::null())
                .output()
                .expect("run qrtag");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(out.status.success(), "{command}: {out:?}");
            if args[0] == "new" && key.is_none() {
                let url = stdout.trim();
                key = url.rsplit('/').next().map(str::to_owned);
                let shown = step.expected.first().expect("the README shows the URL");
                let shown = here(shown);
                assert_eq!(
                    url.rsplit_once('/').map(|(o, _)| o),
                    shown.rsplit_once('/').map(|(o, _)| o),
                    "{command}"
                );
            } else {
                for line in &step.expected {
                    assert!(
                        stdout.contains(&with_key(line)),
                        "{command}: {line:?} not in {stdout}"
                    );
                }
            }
            printed.push(stdout);
        } else if let Some(url) = command
            .strip_prefix("curl -i ")
            .or_else(|| command.strip_prefix("curl "))
        {
            let url = url.trim().to_owned();
            let resp = support::poll::until(
                std::time::Duration::from_secs(5),
                "the server's answer as the README shows it",
                || {
                    let (client, url) = (client.clone(), url.clone());
                    let expected: Vec<String> = step.expected.iter().map(|l| with_key(l)).collect();
                    let location = expected_location.clone();
                    async move {
                        let r = client.get(&url).send().await.ok()?;
                        let status_ok = match expected.first().and_then(|l| l.split(' ').nth(1)) {
                            Some(code) => r.status().as_str() == code,
                            None => r.status().is_success() || r.status().is_redirection(),
                        };
                        let headers_ok = expected.iter().skip(1).all(|l| {
                            l.split_once(": ")
                                .is_some_and(|(n, v)| support::header(&r, n) == Some(v))
                        });
                        let location_ok = location
                            .as_deref()
                            .is_none_or(|to| support::header(&r, "location") == Some(to));
                        (status_ok && headers_ok && location_ok).then_some(())
                    }
                },
            );
            resp.await;
        } else {
            panic!("the walk-through runs a command this test does not know: {command}");
        }
    }
    assert!(key.is_some(), "the walk-through creates a link");

    // Printed tags: loopback only because the file allows it.
    let loopback = printed.iter().any(|p| p.contains("http://127.0.0.1"));
    assert!(!loopback || allowed, "a loopback tag printed without leave");
    // Without that leave, the same command prints nothing.
    let out = qrtag_bin()
        .env_remove("QRTAG_CONFIG")
        .env("QRTAG_ALLOW_LOCAL_URL", "false")
        .args(["new", "https://example.com/autumn-poster"])
        .current_dir(&home)
        .output()
        .expect("run qrtag");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");

    // From another directory, naming the file: the same database, the
    // same origin, and no new file there.
    let elsewhere = home.join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let out = qrtag_bin()
        .env("QRTAG_CONFIG", &config)
        .args([
            "new",
            "https://example.com/winter-poster",
            "--key",
            "winter",
        ])
        .current_dir(&elsewhere)
        .output()
        .expect("run qrtag");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("http://{}/winter\n", server.public)
    );
    let r = support::poll::until(std::time::Duration::from_secs(5), "winter served", || {
        let (client, url) = (client.clone(), server.url("/winter"));
        async move {
            let r = client.get(url).send().await.ok()?;
            (r.status() == 302).then_some(r)
        }
    })
    .await;
    assert_eq!(
        support::header(&r, "location"),
        Some("https://example.com/winter-poster")
    );
    // Without it, no database there either: a clear error instead.
    let out = qrtag_bin()
        .args(["--allow-local-url", "list"])
        .current_dir(&elsewhere)
        .output()
        .expect("run qrtag");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(dbs_under(&home), [db], "no stray database");
    server.stop().await;
}

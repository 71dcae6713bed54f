//! The web console in a real browser: headless Chromium, steered through
//! Selenium by `tests/console/browser/driver.py` one command at a time, goes
//! through one person's journey against the real application, while this
//! test checks what the browser cannot see (the QR code's text, where a scan
//! goes). Chromium and chromedriver are Debian's `chromium` and
//! `chromium-driver`, the venv comes from `.ci/test`
//! (tests/console/browser/requirements.txt).
//!
//! Screenshots of the list, a link's page and the dashboard are written to
//! `console-screenshots/` in the Cargo target directory (`target/` or
//! `$CARGO_TARGET_DIR`).

mod support;

#[path = "support/qr_decode.rs"]
mod qr_decode;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{PUBLIC_URL, TestApp, eventually, header, spawn_console_with_scan_index};

const PASSWORD: &str = "poster-printing-42";
/// One browser command (a page load, a wait) never takes longer than this.
const COMMAND: Duration = Duration::from_secs(30);
/// The promise: a console edit reaches scans within a second.
const PROPAGATION: Duration = Duration::from_secs(1);
const PHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0)";

/// The first of `names` on `PATH`.
fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

/// The driver script, running: answers one JSON line per command.
struct Browser {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start() -> Self {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/console/browser");
        let python = dir.join(".venv/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run `bash .ci/test` once, which installs tests/console/browser/requirements.txt",
            python.display()
        );
        let chromium = on_path(&["chromium", "chromium-browser"]).expect(
            "chromium is missing: install Debian's chromium and chromium-driver (`bash .ci/test` does as root)",
        );
        let chromedriver = on_path(&["chromedriver"]).expect(
            "chromedriver is missing: install Debian's chromium-driver (`bash .ci/test` does as root)",
        );
        let profile = tempfile::tempdir().expect("profile dir");
        let mut child = Command::new(python)
            .arg(dir.join("driver.py"))
            .arg(&chromium)
            .arg(&chromedriver)
            .arg(profile.path())
            .env("SE_OFFLINE", "true")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the driver");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut b = Browser {
            stdin: child.stdin.take(),
            child,
            lines,
            _profile: profile,
        };
        let version = b.answer("start");
        eprintln!("chromium {version}");
        b
    }

    fn answer(&mut self, what: &str) -> Value {
        let line = self
            .lines
            .recv_timeout(COMMAND)
            .unwrap_or_else(|e| panic!("no answer to {what} in {COMMAND:?}: {e}"));
        let mut v: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: {line:?}: {e}"));
        if let Some(err) = v.get("error") {
            panic!(
                "{what} failed at {}: {}",
                v["url"],
                err.as_str().unwrap_or("")
            );
        }
        v["ok"].take()
    }

    /// Sends one command and returns its answer; a failure fails the test.
    fn run(&mut self, cmd: Value) -> Value {
        let what = cmd.to_string();
        tokio::task::block_in_place(|| {
            let stdin = self.stdin.as_mut().expect("driver running");
            writeln!(stdin, "{cmd}").expect("write to the driver");
            stdin.flush().expect("flush");
            self.answer(&what)
        })
    }

    fn get(&mut self, url: &str) {
        self.run(json!({"op": "get", "url": url}));
    }

    /// Waits (up to 10 s, polling) for an element matching `css`.
    fn wait(&mut self, css: &str) {
        self.run(json!({"op": "wait", "css": css, "timeout": 10}));
    }

    fn count(&mut self, css: &str) -> u64 {
        self.run(json!({"op": "count", "css": css}))
            .as_u64()
            .expect("count")
    }

    fn fill(&mut self, css: &str, text: &str) {
        self.run(json!({"op": "type", "css": css, "text": text}));
    }

    fn click(&mut self, css: &str) {
        self.run(json!({"op": "click", "css": css}));
    }

    fn attr(&mut self, css: &str, name: &str) -> String {
        self.run(json!({"op": "attr", "css": css, "name": name}))
            .as_str()
            .unwrap_or_else(|| panic!("no {name} on {css}"))
            .to_owned()
    }

    fn text(&mut self, css: &str) -> String {
        self.run(json!({"op": "text", "css": css}))
            .as_str()
            .expect("text")
            .to_owned()
    }

    fn current_url(&mut self) -> String {
        self.run(json!({"op": "url"}))
            .as_str()
            .expect("url")
            .to_owned()
    }

    /// `fetch(url)` from the page, with the browser's cookies: status,
    /// content type and body.
    fn fetch(&mut self, url: &str) -> (u64, String, Vec<u8>) {
        use base64::Engine;
        let got = self.run(json!({"op": "fetch", "url": url}));
        let body = base64::engine::general_purpose::STANDARD
            .decode(got["body"].as_str().expect("body"))
            .expect("base64");
        (
            got["status"].as_u64().expect("status"),
            got["type"].as_str().unwrap_or_default().to_owned(),
            body,
        )
    }

    fn screenshot(&mut self, path: &Path) {
        self.run(json!({"op": "screenshot", "path": path}));
    }

    /// Reloads `url` until `css` matches, or fails after 10 s.
    fn reload_until(&mut self, url: &str, css: &str) -> Duration {
        let start = Instant::now();
        loop {
            self.get(url);
            if self.count(css) > 0 {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{url} never showed {css}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Browser {
    /// Closing standard input makes the script quit Chromium and
    /// chromedriver; killed only if it does not within 10 s.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn screenshots() -> PathBuf {
    // CARGO_TARGET_TMPDIR is `<target dir>/tmp`.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("console-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    dir
}

/// Where a scan of `key` goes now (a bot's user agent, so the scan
/// counts the console shows are the phones' alone).
async fn location(app: &TestApp, key: &str) -> (StatusCode, Option<String>) {
    let res = app
        .client
        .get(app.url(&format!("/{key}")))
        .header("user-agent", "curl/8")
        .send()
        .await
        .expect("scan");
    (res.status(), header(&res, "location").map(str::to_owned))
}

async fn wait_location(app: &TestApp, key: &str, want: &str) -> Duration {
    eventually(PROPAGATION, || async {
        location(app, key).await == (StatusCode::FOUND, Some(want.to_owned()))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_manages_a_tag_in_a_real_browser() {
    let started = Instant::now();
    let (app, _log) = spawn_console_with_scan_index(PASSWORD).await;
    let console = |path: &str| format!("http://{}/console{path}", app.admin);
    let shots = screenshots();
    let mut b = Browser::start();

    // Not logged in: the list sends the browser to the login page, where a
    // wrong password is refused with a message.
    b.get(&console("/links"));
    b.wait("form#login");
    assert!(b.current_url().ends_with("/console/login"));
    b.fill("#password", "not-the-password");
    b.click("form#login button[type=submit]");
    b.wait("#problem");
    assert!(b.text("#problem").contains("wrong"), "the login error");

    b.fill("#password", PASSWORD);
    b.click("form#login button[type=submit]");
    b.wait("form#create");
    assert!(b.current_url().ends_with("/console/links"));

    // A link with a chosen key, through the form: its page opens.
    let key = "spring-poster";
    let first = "https://example.com/spring";
    b.fill("#new-url", first);
    b.fill("#new-key", key);
    b.click("form#create button[type=submit]");
    b.wait(&format!(r#"h1#key[data-key="{key}"]"#));
    assert_eq!(b.attr("#destination", "data-url"), first);
    let short = format!("{PUBLIC_URL}/{key}");
    assert_eq!(b.text("#short-url"), short);
    wait_location(&app, key, first).await;

    // The PNG download, fetched by the browser with its session, is the
    // short URL as a scanner reads it.
    let href = b.attr("#download-png", "href");
    let (status, content_type, png) = b.fetch(&href);
    assert_eq!(status, 200, "{href}");
    assert_eq!(content_type, "image/png", "{href}");
    let (text, _) = qr_decode::decode_png(&png);
    assert_eq!(text, short, "the downloaded tag");

    // A new destination: scans follow it within a second.
    let second = "https://example.com/summer";
    b.fill("#url", second);
    b.click("form#edit-destination button[type=submit]");
    b.wait(&format!(r#"#destination[data-url="{second}"]"#));
    wait_location(&app, key, second).await;

    // Scans from phones move the link's numbers (the index follows the
    // access log; the page is reloaded until it shows them).
    let link_page = console(&format!("/link?key={key}"));
    for n in 0..3 {
        let res = app
            .client
            .get(app.url(&format!("/{key}")))
            .header("user-agent", PHONE)
            .header("cookie", format!("x={n}"))
            .send()
            .await
            .expect("scan");
        assert_eq!(res.status(), StatusCode::FOUND);
    }
    let counted = b.reload_until(&link_page, r#"#scans dd[data-scans="3"]"#);
    eprintln!("scans on the link page after {counted:?}");
    assert_eq!(b.count(r#"#scans dd[data-unique="3"]"#), 1);
    b.screenshot(&shots.join("link.png"));

    b.get(&console("/links"));
    b.wait(&format!(r#"tr[data-key="{key}"] td.scans[data-scans="3"]"#));
    b.screenshot(&shots.join("list.png"));

    b.get(&console("/dashboard"));
    b.wait(&format!(r#"tr[data-key="{key}"] td[data-scans="3"]"#));
    b.screenshot(&shots.join("dashboard.png"));

    // Disabled: a scan finds nothing.
    b.get(&link_page);
    b.click("form#edit-state button[type=submit]");
    b.wait(r#"#state[data-state="inactive"]"#);
    eventually(PROPAGATION, || async {
        location(&app, key).await.0 == StatusCode::NOT_FOUND
    })
    .await;

    // Logged out: the login page, and the list is closed again.
    b.click("form#logout button[type=submit]");
    b.wait("form#login");
    b.get(&console("/links"));
    b.wait("form#login");
    assert!(b.current_url().ends_with("/console/login"));

    drop(b);
    eprintln!(
        "journey done in {:?}; screenshots in {}",
        started.elapsed(),
        shots.display()
    );
}

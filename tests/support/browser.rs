//! The console's browser tests' one helper: headless Chromium, steered
//! through Selenium by `tests/console/browser/driver.py` one command at a
//! time. Shared by `tests/console_browser.rs` (SQLite) and the CouchDB
//! binary's console tests, so both drive the same browser the same way.
//! Chromium and chromedriver are Debian's `chromium` and `chromium-driver`,
//! the venv comes from `.ci/test` (tests/console/browser/requirements.txt).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One browser command (a page load, a wait) never takes longer than this.
const COMMAND: Duration = Duration::from_secs(30);

/// A screen the page is laid out for, in CSS pixels.
#[derive(Clone, Copy, Debug)]
pub struct Screen {
    /// What screenshots taken on it are named after.
    pub name: &'static str,
    pub width: u32,
    pub height: u32,
    /// Device pixels per CSS pixel (screenshots are this much larger).
    pub scale: f64,
    /// A phone: the page's `<meta name="viewport">` is honoured and touch is on.
    pub mobile: bool,
}

/// An iPhone 14's screen in CSS pixels, which is what pages are laid out
/// in (most phones are within a few pixels of it). The real one has 3
/// device pixels to a CSS pixel; 2 keeps the screenshots small and sharp.
pub const PHONE: Screen = Screen {
    name: "phone",
    width: 390,
    height: 844,
    scale: 2.0,
    mobile: true,
};

/// The window the driver opens with (`--window-size` in driver.py).
pub const DESKTOP: Screen = Screen {
    name: "desktop",
    width: 1100,
    height: 1400,
    scale: 1.0,
    mobile: false,
};

/// The first of `names` on `PATH`.
pub fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

/// The driver script, running: answers one JSON line per command.
pub struct Browser {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub fn start() -> Self {
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
    pub fn run(&mut self, cmd: Value) -> Value {
        let what = cmd.to_string();
        tokio::task::block_in_place(|| {
            let stdin = self.stdin.as_mut().expect("driver running");
            writeln!(stdin, "{cmd}").expect("write to the driver");
            stdin.flush().expect("flush");
            self.answer(&what)
        })
    }

    pub fn get(&mut self, url: &str) {
        self.run(json!({"op": "get", "url": url}));
    }

    /// Waits (up to 10 s, polling) for an element matching `css`.
    pub fn wait(&mut self, css: &str) {
        self.run(json!({"op": "wait", "css": css, "timeout": 10}));
    }

    pub fn count(&mut self, css: &str) -> u64 {
        self.run(json!({"op": "count", "css": css}))
            .as_u64()
            .expect("count")
    }

    pub fn fill(&mut self, css: &str, text: &str) {
        self.run(json!({"op": "type", "css": css, "text": text}));
    }

    pub fn click(&mut self, css: &str) {
        self.run(json!({"op": "click", "css": css}));
    }

    pub fn attr(&mut self, css: &str, name: &str) -> String {
        self.run(json!({"op": "attr", "css": css, "name": name}))
            .as_str()
            .unwrap_or_else(|| panic!("no {name} on {css}"))
            .to_owned()
    }

    pub fn text(&mut self, css: &str) -> String {
        self.run(json!({"op": "text", "css": css}))
            .as_str()
            .expect("text")
            .to_owned()
    }

    pub fn current_url(&mut self) -> String {
        self.run(json!({"op": "url"}))
            .as_str()
            .expect("url")
            .to_owned()
    }

    /// `fetch(url)` from the page, with the browser's cookies: status,
    /// content type and body.
    pub fn fetch(&mut self, url: &str) -> (u64, String, Vec<u8>) {
        let got = self.run(json!({"op": "fetch", "url": url}));
        answer(&got)
    }

    /// Sends the list's bulk form (issue 33) as the browser would with
    /// the button `button` (a CSS selector) pressed (the form's own fields,
    /// the ticked boxes among them, and the button's name and value), from
    /// the page with its cookies: status, content type and body. A PDF or
    /// CSV download leaves no page to look at, so the test reads the answer
    /// this way. (`f.action` would be the buttons named `action`, so the
    /// attribute is read.)
    pub fn submit_bulk(&mut self, button: &str) -> (u64, String, Vec<u8>) {
        let got = self.script(
            "const f = document.querySelector('form#bulk');\
             const s = f.querySelector(arguments[0]);\
             return fetch(f.getAttribute('action'), {method: 'POST', credentials: 'same-origin',\
                                     body: new URLSearchParams(new FormData(f, s))})\
               .then(r => r.arrayBuffer().then(b => {\
                 let t = ''; const u = new Uint8Array(b);\
                 for (let i = 0; i < u.length; i++) t += String.fromCharCode(u[i]);\
                 return {status: r.status, type: r.headers.get('content-type'), body: btoa(t)};\
               }));",
            json!([button]),
        );
        answer(&got)
    }

    /// The whole page (not only what the screen shows) as a PNG at `path`.
    pub fn screenshot(&mut self, path: &Path) {
        self.run(json!({"op": "screenshot", "path": path}));
    }

    /// Runs `js` as a function body in the page (`arguments` are `args`)
    /// and returns what it returns.
    pub fn script(&mut self, js: &str, args: Value) -> Value {
        self.run(json!({"op": "script", "js": js, "args": args}))
    }

    /// Waits (up to 10 s, polling) until the text of `css` contains `text`:
    /// for an answer that is not one of the console's pages (a plain 403).
    pub fn wait_text(&mut self, css: &str, text: &str) {
        self.run(json!({"op": "wait_text", "css": css, "text": text, "timeout": 10}));
    }

    /// Lays pages out for `screen` from now on (Chromium's device
    /// emulation, as its developer tools do it).
    pub fn screen(&mut self, screen: Screen) {
        let Screen {
            name: _,
            width,
            height,
            scale,
            mobile,
        } = screen;
        self.run(json!({"op": "screen", "width": width, "height": height,
                        "scale": scale, "mobile": mobile}));
    }

    /// Reloads `url` until `css` matches, or fails after 10 s.
    pub fn reload_until(&mut self, url: &str, css: &str) -> Duration {
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

/// A fetch's answer as the page hands it back (`status`, `type` and the
/// body in base64, which is how bytes cross the driver's JSON lines):
/// status, content type and body.
fn answer(got: &Value) -> (u64, String, Vec<u8>) {
    use base64::Engine;
    let body = base64::engine::general_purpose::STANDARD
        .decode(got["body"].as_str().expect("body"))
        .expect("base64");
    (
        got["status"].as_u64().expect("status"),
        got["type"].as_str().unwrap_or_default().to_owned(),
        body,
    )
}

/// Accessibility (issue 33): axe-core's rules, and the keyboard.
impl Browser {
    /// axe-core's standard rules run over the page shown: `violations`,
    /// and `incomplete`, what it could not decide, each a list of rules
    /// (`id`, `impact`, `help`, and `nodes`, each with its `target`
    /// selectors and the `data` its checks measured). axe-core is the
    /// pinned npm package in `tests/console/axe/`, injected through the
    /// driver.
    pub fn axe(&mut self) -> Value {
        let path = axe_script();
        self.run(json!({"op": "axe", "path": path}))
    }

    /// Presses keys on whatever has the focus, one after another: names of
    /// selenium's `Keys` (`TAB`, `ENTER`), or a chord (`CONTROL+a`).
    pub fn press(&mut self, keys: &[&str]) {
        self.run(json!({"op": "press", "keys": keys}));
    }

    /// Types `text` into whatever has the focus.
    pub fn type_focused(&mut self, text: &str) {
        self.run(json!({"op": "type_focused", "text": text}));
    }

    /// The focused element (`tag`, `id`, `href`, `name`, `text`, its
    /// computed `outline` and `shadow`, which show the focus, and its
    /// `rect` on the screen), or `null` when nothing is.
    pub fn focused(&mut self) -> Value {
        self.run(json!({"op": "focused"}))
    }
}

/// `tests/console/axe/node_modules/axe-core/axe.min.js`, which must be
/// installed.
pub fn axe_script() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/console/axe");
    let script = dir.join("node_modules/axe-core/axe.min.js");
    assert!(
        script.is_file(),
        "{} is missing: run `bash .ci/test` once, or `npm ci --prefix {}`",
        script.display(),
        dir.display()
    );
    script
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

/// `<target dir>/console-screenshots/`, created.
pub fn screenshots() -> PathBuf {
    // CARGO_TARGET_TMPDIR is `<target dir>/tmp`.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("console-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    dir
}

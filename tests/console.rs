//! The web console over HTTP: the real application on port 0, a client
//! with a cookie store as a browser has, and the real binary where the
//! console must agree with the CLI.

mod support;

#[path = "console/setup.rs"]
mod setup;

use std::time::Duration;

use qrtag::console::ConsoleSettings;
use qrtag::console::password;
use qrtag::store::LinkStore;
use qrtag::values::destination::Destination;
use qrtag::values::link_key::LinkKey;
use reqwest::StatusCode;
use support::console::{browser, csrf, get_page, log_in_with, post_form};
use support::{
    TestApp, eventually, header, qrtag_cmd, spawn_console_with_scan_index, spawn_with,
    test_settings,
};

const PASSWORD: &str = "poster-printing-42";
/// The promise: a console edit reaches scans within a second.
const PROPAGATION: Duration = Duration::from_secs(1);

struct Console {
    app: TestApp,
    http: reqwest::Client,
}

/// The console as a newcomer finds it: no password set yet.
async fn first_run_console(secure_cookie: bool) -> Console {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.console = Some(ConsoleSettings {
        secure_cookie,
        ..ConsoleSettings::default()
    });
    Console {
        app: spawn_with(settings, dir).await,
        http: browser(),
    }
}

async fn console_with(secure_cookie: bool) -> Console {
    let c = first_run_console(secure_cookie).await;
    password::set(&c.app.store(), PASSWORD)
        .await
        .expect("password set");
    c
}

async fn console() -> Console {
    console_with(false).await
}

/// The number in `data-NAME="N"` after `#id` on a page.
fn data_after(html: &str, id: &str, name: &str) -> Option<u64> {
    let from = html.find(&format!(r#"id="{id}""#))?;
    let rest = &html[from..];
    let at = rest.find(&format!(r#"data-{name}=""#))? + name.len() + 7;
    rest[at..].split('"').next()?.parse().ok()
}

/// A logged-in console with its scan index, a link `poster` and `n` scans
/// of it by phones, each with a fresh cookie; and the access log's path.
async fn console_with_scans(n: u32) -> (Console, std::path::PathBuf) {
    let (app, log) = spawn_console_with_scan_index(PASSWORD).await;
    let c = Console {
        app,
        http: browser(),
    };
    c.app.link("poster", "https://example.com/poster").await;
    c.app.wait_for_status("/poster", 302).await;
    c.login().await;
    for i in 0..n {
        let scan = c
            .app
            .client
            .get(c.app.url("/poster"))
            .header("user-agent", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0)")
            .header("cookie", format!("x={i}"))
            .send()
            .await
            .expect("scan");
        assert_eq!(scan.status(), StatusCode::FOUND);
    }
    (c, log)
}

/// With the scan index on (as `serve --console` turns it), a link's page,
/// the list and the dashboard show the numbers `qrtag stats` gives for the
/// same log.
#[tokio::test]
async fn scan_numbers_come_from_the_log_and_agree_with_qrtag_stats() {
    let (c, log) = console_with_scans(7).await;
    // A bot and a HEAD are counted apart.
    let bot = c
        .app
        .client
        .get(c.app.url("/poster"))
        .header("user-agent", "curl/8")
        .send();
    assert_eq!(bot.await.expect("bot").status(), StatusCode::FOUND);

    let page = eventually_page(&c, "/link?key=poster", |html| {
        data_after(html, "scans", "scans") == Some(7)
    })
    .await;
    assert_eq!(
        data_after(&page, "scans", "unique"),
        Some(7),
        "each scan had a fresh cookie"
    );

    let out = qrtag_cmd(
        &c.app.db,
        &[
            "stats",
            "--format",
            "csv",
            "--key",
            "poster",
            log.to_str().expect("utf-8"),
        ],
    );
    let csv = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(csv.contains("\nposter,7,7,"), "qrtag stats agrees: {csv}");

    let list = c.page("/links").await;
    assert!(
        list.contains(r#"data-scans="7""#),
        "the list's 30-day column: {list}"
    );
    let dashboard = c.page("/dashboard").await;
    assert!(dashboard.contains(r#"data-key="poster""#), "{dashboard}");
}

/// Every chart has a value axis, labelled periods, its numbers in a table
/// under it, and a period picker of plain links (7, 30, 90 days, a year);
/// a period not offered is a 400 that names the ones that are.
#[tokio::test]
async fn charts_have_an_axis_numbers_a_table_and_a_period_picker() {
    let (c, _log) = console_with_scans(3).await;
    eventually_page(&c, "/link?key=poster", |html| {
        data_after(html, "scans", "scans") == Some(3)
    })
    .await;
    let today = chrono::Utc::now().date_naive().to_string();
    for (page, base) in [
        ("/dashboard", "/console/dashboard?days="),
        ("/link?key=poster", "/console/link?key=poster&amp;days="),
    ] {
        let sep = if page.contains('?') { '&' } else { '?' };
        for (days, bars, unit) in [
            ("", 30, "day"),
            ("7", 7, "day"),
            ("30", 30, "day"),
            ("90", 0, "week"),
            ("365", 0, "month"),
        ] {
            let path = if days.is_empty() {
                page.to_owned()
            } else {
                format!("{page}{sep}days={days}")
            };
            let html = c.page(&path).await;
            let chart = &html[html.find(r#"<svg class="chart""#).expect("a chart")..];
            let chart = &chart[..chart.find("</figure>").expect("its end")];
            assert!(
                chart.contains(&format!(r#"data-unit="{unit}""#)),
                "{path}: {chart}"
            );
            if bars > 0 {
                assert_eq!(chart.matches("<rect").count(), bars, "{path}");
            } else {
                let n = chart.matches("<rect").count();
                assert!((12..=14).contains(&n), "{path}: {n} bars");
            }
            // The axis: 0 to 3 in steps of 1, labelled.
            for t in 0..=3 {
                assert!(
                    chart.contains(&format!(r#"data-tick="{t}">{t}</text>"#)),
                    "{path}: {chart}"
                );
            }
            assert!(chart.contains(r#"class="period""#), "{path}: period labels");
            // The table: every bar's number, the total, today's scans.
            assert_eq!(
                chart.matches("<tr data-period=").count(),
                chart.matches("<rect").count()
            );
            assert!(chart.contains(r#"data-total="3""#), "{path}");
            assert!(chart.contains("3 in all"), "{path}: the summary");
            // The picker: four links, the current one marked.
            let current = if days.is_empty() { "30" } else { days };
            for d in ["7", "30", "90", "365"] {
                let link = format!(r#"href="{base}{d}""#);
                assert!(html.contains(&link), "{path}: {link}");
            }
            assert!(
                html.contains(&format!(r#"aria-current="page" data-days="{current}""#)),
                "{path}"
            );
            if days == "7" || days == "30" || days.is_empty() {
                assert!(
                    chart.contains(&format!(r#"<tr data-period="{today}"><td>{today}</td><td data-scans="3">3</td></tr>"#)),
                    "{path}: {chart}"
                );
            }
            if days == "7" {
                // A week's bars carry their numbers.
                assert!(chart.contains(r#"class="value""#), "{path}: {chart}");
                assert!(chart.contains(">3</text>"), "{path}");
            }
        }
        for bad in ["14", "0", "x"] {
            let res = c.get(&format!("{page}{sep}days={bad}")).await;
            assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{page} days={bad}");
            let body = res.text().await.expect("body");
            assert!(body.contains("give 7, 30, 90 or 365"), "{body}");
        }
    }
}

/// Polls a console page until `ok` holds of it.
async fn eventually_page(c: &Console, path: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let html = c.page(path).await;
        if ok(&html) {
            return html;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{path} never got there:\n{html}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn rows(html: &str) -> Vec<String> {
    html.split(r#"<tr data-key=""#)
        .skip(1)
        .map(|r| r[..r.find('"').expect("end of key")].to_owned())
        .collect()
}

impl Console {
    fn url(&self, path: &str) -> String {
        format!("http://{}/console{path}", self.app.admin)
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.http.get(self.url(path)).send().await.expect("GET")
    }

    async fn page(&self, path: &str) -> String {
        get_page(&self.http, &self.url(path)).await
    }

    async fn post_raw(&self, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        post_form(&self.http, &self.url(path), form).await
    }

    /// Posts a form with the token of the page the form is on.
    async fn post(&self, from: &str, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        let token = csrf(&self.page(from).await);
        let mut fields = vec![("csrf", token.as_str())];
        fields.extend_from_slice(form);
        self.post_raw(path, &fields).await
    }

    async fn login_with(&self, password: &str) -> reqwest::Response {
        log_in_with(&self.http, &self.url(""), password).await
    }

    async fn login(&self) {
        let res = self.login_with(PASSWORD).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        assert_eq!(header(&res, "location"), Some("/console/links"));
    }

    async fn location(&self, key: &str) -> Option<String> {
        let res = self.app.get(&format!("/{key}")).await;
        (res.status() == StatusCode::FOUND)
            .then(|| header(&res, "location").map(str::to_owned))
            .flatten()
    }

    async fn wait_location(&self, key: &str, want: Option<&str>) {
        eventually(PROPAGATION, || async {
            self.location(key).await.as_deref() == want
        })
        .await;
    }

    /// Creates a link with the form; returns the link page it leads to.
    async fn create(&self, key: &str, url: &str) -> String {
        let res = self
            .post("/links", "/links", &[("key", key), ("url", url)])
            .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "create {key}");
        header(&res, "location").expect("to the link").to_owned()
    }

    fn key(s: &str) -> LinkKey {
        LinkKey::parse(s).expect("key")
    }
}

#[tokio::test]
async fn login_with_the_right_password_only_and_logout_ends_the_session() {
    let c = console().await;
    let res = c.get("/links").await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "no login, no list");
    assert_eq!(header(&res, "location"), Some("/console/login"));

    let res = c.login_with("not-the-password").await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let body = res.text().await.expect("body");
    assert!(
        body.contains(r#"id="problem""#) && body.contains("wrong"),
        "{body}"
    );
    assert_eq!(c.get("/links").await.status(), StatusCode::SEE_OTHER);

    c.login().await;
    let list = c.page("/links").await;
    assert!(list.contains(r#"data-user="admin""#), "{list}");

    let res = c.post("/links", "/logout", &[]).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(c.get("/links").await.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn the_password_is_set_with_the_cli_from_standard_input_and_stored_hashed() {
    let c = console().await;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_qrtag"))
        .arg("--db")
        .arg(&c.app.db)
        .arg("console-password")
        .env_remove("QRTAG_COUCHDB_URL")
        .env("QRTAG_CONFIG", "/dev/null")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run qrtag");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(b"a-new-password-7\n").expect("write");
    }
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!printed.contains("a-new-password-7"), "{printed}");
    // Issue 35: the password is the user admin's.
    let stored = c
        .app
        .store()
        .account("admin")
        .await
        .expect("read")
        .and_then(|a| a.hash)
        .expect("set");
    assert!(stored.starts_with("$argon2id$") && !stored.contains("a-new-password-7"));

    assert_eq!(
        c.login_with(PASSWORD).await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        c.login_with("a-new-password-7").await.status(),
        StatusCode::SEE_OTHER
    );

    let short = c.app.cli(&["console-password"]);
    assert_eq!(short.status.code(), Some(1), "an empty password is refused");
}

#[tokio::test]
async fn a_post_without_the_csrf_token_is_403_and_writes_nothing() {
    let c = console().await;
    c.login().await;
    let form = [("url", "https://example.com/csrf"), ("key", "csrf-test")];
    let res = c.post_raw("/links", &form).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let body = res.text().await.expect("body");
    assert_eq!(body.lines().count(), 1, "{body}");
    let res = c
        .post_raw("/links", &[("csrf", "made-up"), form[0], form[1]])
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let res = c.post_raw("/login", &[("password", PASSWORD)]).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "the login form too");
    assert!(
        c.app
            .store()
            .get(&Console::key("csrf-test"))
            .await
            .expect("read")
            .is_none()
    );
}

#[tokio::test]
async fn create_repoint_expire_disable_and_enable_reach_scans_within_a_second() {
    let c = console().await;
    c.login().await;
    let res = c
        .post(
            "/links",
            "/links",
            &[
                ("url", "https://example.com/spring"),
                ("key", "spring/poster"),
                ("notes", "bus stop, Main St"),
                ("expires", ""),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        header(&res, "location"),
        Some("/console/link?key=spring%2Fposter")
    );
    c.wait_location("spring/poster", Some("https://example.com/spring"))
        .await;
    let page = c.page("/link?key=spring%2Fposter").await;
    assert!(page.contains(r#"data-state="active""#), "{page}");
    assert!(page.contains("bus stop, Main St"));

    let key = [("key", "spring/poster")];
    let from = "/link?key=spring%2Fposter";
    let res = c
        .post(
            from,
            "/link/destination",
            &[key[0], ("url", "https://example.com/summer")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    c.wait_location("spring/poster", Some("https://example.com/summer"))
        .await;

    let res = c
        .post(from, "/link/expiry", &[key[0], ("expires", "30d")])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let page = c.page(from).await;
    assert!(page.contains(r#"data-state="expires""#), "{page}");
    let doc = c
        .app
        .store()
        .get(&Console::key("spring/poster"))
        .await
        .expect("read")
        .expect("exists")
        .doc;
    assert!(doc.contains_key("expires"), "{doc:?}");
    assert_eq!(
        doc.get("notes").and_then(|n| n.as_str()),
        Some("bus stop, Main St")
    );

    let res = c.post(from, "/link/expiry", &[key[0]]).await;
    assert_eq!(
        res.status(),
        StatusCode::BAD_REQUEST,
        "a form without the field clears nothing"
    );
    assert!(c.page(from).await.contains(r#"data-state="expires""#));

    let res = c
        .post(from, "/link/expiry", &[key[0], ("expires", "yesterday")])
        .await;
    assert_eq!(
        res.status(),
        StatusCode::BAD_REQUEST,
        "a bad expiry is said"
    );
    assert!(res.text().await.expect("body").contains("30d"));

    let res = c
        .post(from, "/link/expiry", &[key[0], ("expires", "never")])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(c.page(from).await.contains(r#"data-state="active""#));

    let res = c
        .post(from, "/link/state", &[key[0], ("active", "false")])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    c.app.wait_for_status("/spring/poster", 404).await;
    assert!(c.page(from).await.contains(r#"data-state="inactive""#));

    let res = c
        .post(from, "/link/state", &[key[0], ("active", "true")])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    c.wait_location("spring/poster", Some("https://example.com/summer"))
        .await;

    let res = c
        .post(
            "/links",
            "/links",
            &[("url", "https://example.com/x"), ("key", "spring/poster")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT, "a taken key is said");
    let res = c
        .post("/links", "/links", &[("url", "//evil.example/")])
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn tag_downloads_are_the_bytes_qrtag_qr_writes() {
    let c = console().await;
    c.app.link("H83if", "https://example.com/a").await;
    c.app.wait_for_status("/H83if", 302).await;
    c.login().await;
    let page = c
        .page("/link?key=H83if&format=svg&ec=M&scale=4&margin=2")
        .await;
    assert!(
        page.contains(r#"src="/qr/H83if.svg?ec=M&amp;scale=4&amp;margin=2""#),
        "the preview shows the chosen parameters: {page}"
    );
    for (format, ext) in [("png", "png"), ("svg", "svg")] {
        let res = c
            .get(&format!(
                "/link/download?key=H83if&format={format}&ec=M&scale=4&margin=2"
            ))
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(
            header(&res, "content-disposition"),
            Some(format!("attachment; filename=\"H83if.{ext}\"").as_str())
        );
        let got = res.bytes().await.expect("body");
        let file = c.app.dir.path().join(format!("cli.{ext}"));
        let out = c.app.cli(&[
            "qr",
            "H83if",
            "--ec",
            "M",
            "--scale",
            "4",
            "--margin",
            "2",
            "-o",
            file.to_str().expect("path"),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            got.as_ref(),
            std::fs::read(&file).expect("file"),
            "{format}"
        );
    }
    let res = c.get("/link/download?key=H83if&scale=1").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(res.text().await.expect("body").starts_with("bad scale"));
    let res = c.get("/link/download?key=nope1").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    // Straight after a create, before the redirects' snapshot may have it:
    // the download reads the store, as the link's page does.
    c.create("fresh", "https://example.com/fresh").await;
    let res = c.get("/link/download?key=fresh").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(header(&res, "content-type"), Some("image/png"));
}

#[tokio::test]
async fn a_print_run_makes_inactive_links_and_sheets_of_their_codes() {
    let c = console().await;
    c.login().await;
    let res = c.post("/sheet", "/sheet", &[("count", "30")]).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let location = header(&res, "location").expect("to the run").to_owned();
    let page = c.page(location.trim_start_matches("/console")).await;
    assert!(
        page.contains(r#"data-count="30" data-sheets="2""#),
        "{page}"
    );
    let run = location
        .strip_prefix("/console/sheet?batch=")
        .expect("the run's number");
    let mut keys = Vec::new();
    for (sheet, want) in [(0, 24), (1, 6)] {
        let res = c
            .get(&format!("/sheet/download?batch={run}&page={sheet}"))
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        assert!(header(&res, "content-disposition").is_some_and(|d| d.starts_with("attachment")));
        let (labels, codes) = sheet_labels_and_codes(&res.text().await.expect("svg"));
        assert_eq!((labels.len(), codes), (want, want));
        keys.extend(labels);
    }
    let store = c.app.store();
    for key in &keys {
        let doc = store
            .get(&Console::key(key))
            .await
            .expect("read")
            .expect("created")
            .doc;
        assert_eq!(doc.get("inactive"), Some(&serde_json::Value::Bool(true)));
    }
    let res = c.post("/sheet", "/sheet", &[("count", "1001")]).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
}

/// The key labels on a sheet and the number of codes drawn.
fn sheet_labels_and_codes(svg: &str) -> (Vec<String>, usize) {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    let labels = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::to_owned))
        .collect();
    let codes = doc.descendants().filter(|n| n.has_tag_name("path")).count();
    (labels, codes)
}

/// A session keeps its last print runs, each under the number its page
/// showed: past the cap, an old run's download is a 404 that says so,
/// never another run's sheet.
#[tokio::test]
async fn print_runs_past_the_cap_keep_their_numbers_and_old_ones_say_they_are_gone() {
    let c = console().await;
    c.login().await;
    let cap = qrtag::console::session::BATCHES;
    let mut runs = Vec::new();
    for _ in 0..=cap {
        let res = c.post("/sheet", "/sheet", &[("count", "1")]).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        let location = header(&res, "location").expect("to the run").to_owned();
        let page = c.page(location.trim_start_matches("/console")).await;
        let at = page.find(r#"<ul class="keys"><li><a href="/console/link?key="#);
        let key = at
            .map(|at| &page[at..])
            .and_then(|rest| rest.split('>').nth(3))
            .and_then(|k| k.split('<').next())
            .unwrap_or_else(|| panic!("the run's key on {page}"))
            .to_owned();
        let number = location
            .strip_prefix("/console/sheet?batch=")
            .expect("the run's number")
            .to_owned();
        runs.push((number, key));
    }
    let (first, _) = &runs[0];
    let res = c
        .get(&format!("/sheet/download?batch={first}&page=0"))
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let body = res.text().await.expect("body");
    assert!(body.contains("no longer kept"), "{body}");
    let res = c.get(&format!("/sheet?batch={first}")).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let page = res.text().await.expect("body");
    assert!(page.contains(r#"id="problem""#) && page.contains("no longer kept"));
    assert!(page.contains(r#"id="sheet""#), "the form to make a new one");

    for (number, key) in &runs[1..] {
        let res = c
            .get(&format!("/sheet/download?batch={number}&page=0"))
            .await;
        assert_eq!(res.status(), StatusCode::OK, "run {number}");
        let (labels, _) = sheet_labels_and_codes(&res.text().await.expect("svg"));
        assert_eq!(labels, vec![key.clone()], "run {number} is the run it was");
    }

    let res = c.get("/sheet/download?batch=999&page=0").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert!(
        res.text()
            .await
            .expect("body")
            .contains("no such print run")
    );
    let (last, _) = &runs[cap];
    let res = c.get(&format!("/sheet/download?batch={last}&page=1")).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND, "one sheet only");
    let res = c.get("/sheet/download?batch=x&page=0").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        c.get("/sheet?batch=-1").await.status(),
        StatusCode::BAD_REQUEST
    );
}

/// Notes are edited on the link's page (as `qrtag set --notes` does), shown
/// escaped, cleared by an empty field, and never written without the
/// form's token.
#[tokio::test]
async fn notes_are_edited_shown_and_cleared_on_the_link_page() {
    let c = console().await;
    c.app.link("poster", "https://example.com/p").await;
    c.login().await;
    let from = "/link?key=poster";
    let page = c.page(from).await;
    assert!(page.contains(r#"id="edit-notes""#), "{page}");
    assert!(!page.contains(r#"id="notes""#), "no notes yet");
    let stored = || async {
        c.app
            .store()
            .get(&Console::key("poster"))
            .await
            .expect("read")
            .expect("exists")
            .doc
    };

    let res = c
        .post(
            from,
            "/link/notes",
            &[("key", "poster"), ("notes", " <b>bus</b> stop\r\nMain St ")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(header(&res, "location"), Some("/console/link?key=poster"));
    let doc = stored().await;
    assert_eq!(
        doc.get("notes").and_then(|n| n.as_str()),
        Some("<b>bus</b> stop\nMain St")
    );
    assert_eq!(
        doc.get("url").and_then(|u| u.as_str()),
        Some("https://example.com/p"),
        "the other fields are kept"
    );
    let page = c.page(from).await;
    assert!(
        page.contains("&lt;b&gt;bus&lt;/b&gt; stop\nMain St</dd>"),
        "shown escaped: {page}"
    );
    assert!(!page.contains("<b>bus"), "{page}");

    let before = stored().await;
    let too_long = "x".repeat(qrtag::link::MAX_NOTES + 1);
    let res = c
        .post(
            from,
            "/link/notes",
            &[("key", "poster"), ("notes", &too_long)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(res.text().await.expect("body").contains("at most 2000"));
    let res = c.post(from, "/link/notes", &[("key", "poster")]).await;
    assert_eq!(
        res.status(),
        StatusCode::BAD_REQUEST,
        "no notes field at all"
    );
    let res = c
        .post_raw("/link/notes", &[("key", "poster"), ("notes", "")])
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "no token");
    let res = c
        .post_raw(
            "/link/notes",
            &[("csrf", "made-up"), ("key", "poster"), ("notes", "")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "a wrong token");
    assert_eq!(stored().await, before, "nothing was written");

    let res = c
        .post(from, "/link/notes", &[("key", "poster"), ("notes", "  ")])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let doc = stored().await;
    assert!(!doc.contains_key("notes"), "cleared: {doc:?}");
    assert!(!c.page(from).await.contains(r#"id="notes""#));

    // The CLI takes the same notes, under the same rule.
    let out = c
        .app
        .cli(&["set", "poster", "--notes", "from the terminal"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(c.page(from).await.contains("from the terminal</dd>"));
    let out = c.app.cli(&["set", "poster", "--notes", &too_long]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let out = c.app.cli(&["set", "poster", "--notes", ""]);
    assert!(out.status.success());
    assert!(!stored().await.contains_key("notes"));
    let res = c
        .post(
            "/link?key=poster",
            "/link/notes",
            &[("key", "nope1"), ("notes", "x")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

/// Text as maud writes it into a page.
fn escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A console create, repoint or enable that leaves a key in a loop of
/// internal redirects is done, and the link's page says so in the words
/// the CLI uses, for as long as the loop lasts.
#[tokio::test]
async fn a_loop_made_in_the_console_is_warned_of_on_the_link_page() {
    let c = console().await;
    c.login().await;
    let warning = |page: &str| page.contains(r#"id="chain-warning""#);

    let a_page = c.create("a", "https://a.example/").await;
    let b_page = c.create("b", "/a").await;
    assert!(!warning(
        &c.page(b_page.trim_start_matches("/console")).await
    ));
    c.wait_location("b", Some("https://a.example/")).await;

    // Repoint: a -> /b closes the loop.
    let a_from = a_page.trim_start_matches("/console");
    let res = c
        .post(a_from, "/link/destination", &[("key", "a"), ("url", "/b")])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "the write is done");
    let page = c.page(a_from).await;
    assert!(
        page.contains(
            "scans of a will answer 404: too many internal redirects: a -&gt; /b, b -&gt; /a"
        ),
        "{page}"
    );
    let out = c.app.cli(&["enable", "a"]);
    let cli = String::from_utf8_lossy(&out.stderr);
    let said = cli
        .trim()
        .strip_prefix("qrtag: warning: ")
        .unwrap_or_else(|| panic!("the CLI warns too: {cli}"));
    assert!(page.contains(&escaped(said)), "the CLI's words: {said}");
    c.wait_location("b", None).await;
    assert_eq!(c.app.get("/b").await.status(), StatusCode::NOT_FOUND);
    assert_eq!(c.app.get("/a").await.status(), StatusCode::NOT_FOUND);
    // b's page says it too: the check is of the link as it is, whoever wrote it.
    let b_from = b_page.trim_start_matches("/console");
    assert!(c.page(b_from).await.contains("scans of b will answer 404"));

    // Disabled, b ends the chain (a dead end, not a loop); enabling it again
    // brings the loop and the warning back.
    let res = c
        .post(b_from, "/link/state", &[("key", "b"), ("active", "false")])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(!warning(&c.page(b_from).await));
    assert!(!warning(&c.page(a_from).await));
    let res = c
        .post(b_from, "/link/state", &[("key", "b"), ("active", "true")])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(c.page(b_from).await.contains("scans of b will answer 404"));

    // Create: a link that points at itself.
    let self_page = c.create("self", "/self").await;
    let page = c.page(self_page.trim_start_matches("/console")).await;
    assert!(page.contains("scans of self will answer 404"), "{page}");

    // Repointed out of the loop, the warning goes.
    let res = c
        .post(
            a_from,
            "/link/destination",
            &[("key", "a"), ("url", "https://a.example/")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(!warning(&c.page(a_from).await));
    assert!(!warning(&c.page(b_from).await));
    c.wait_location("b", Some("https://a.example/")).await;
}

#[tokio::test]
async fn login_attempts_past_the_limit_get_429_with_retry_after() {
    let c = console().await;
    // Logging in right gives its attempt back: only failures count.
    for _ in 0..=qrtag::console::limiter::PER_ADDRESS {
        c.login().await;
        let res = c.post("/links", "/logout", &[]).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "logged out");
    }
    for _ in 0..qrtag::console::limiter::PER_ADDRESS {
        assert_eq!(
            c.login_with("guess").await.status(),
            StatusCode::UNAUTHORIZED
        );
    }
    let res = c.login_with(PASSWORD).await;
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = header(&res, "retry-after")
        .and_then(|s| s.parse().ok())
        .expect("Retry-After in seconds");
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(c.get("/links").await.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn pages_carry_a_strict_policy_and_the_cookie_its_flags() {
    let c = console().await;
    let res = c.get("/login").await;
    let csp = header(&res, "content-security-policy").expect("CSP");
    for part in [
        "default-src 'self'",
        "img-src 'self' data:",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(header(&res, "x-content-type-options"), Some("nosniff"));
    assert_eq!(header(&res, "referrer-policy"), Some("same-origin"));
    let cookie = header(&res, "set-cookie").expect("a session cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(
        !cookie.contains("Secure"),
        "plain http by default: {cookie}"
    );
    let html = res.text().await.expect("body");
    assert!(
        !html.contains("<script") && !html.contains("style="),
        "{html}"
    );
    // The stylesheet, by an address that names its version.
    let href = html
        .split(r#"rel="stylesheet" href=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a stylesheet link");
    assert!(href.starts_with("/console/assets/console.css?v="), "{href}");
    let res = c
        .http
        .get(format!("http://{}{href}", c.app.admin))
        .send()
        .await
        .expect("GET the stylesheet");
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        header(&res, "content-type"),
        Some("text/css; charset=utf-8")
    );
    assert!(res.text().await.expect("css").contains("body"));

    let secure = console_with(true).await;
    let res = secure.get("/login").await;
    let cookie = header(&res, "set-cookie").expect("a session cookie");
    assert!(cookie.contains("Secure"), "{cookie}");

    // The QR and health endpoints need no login.
    c.app.link("H83if", "https://example.com/a").await;
    eventually(PROPAGATION, || async {
        c.app.admin_get("/qr/H83if.svg").await.map(|r| r.status()) == Some(StatusCode::OK)
    })
    .await;
    assert_eq!(
        c.app.admin_get("/healthz").await.map(|r| r.status()),
        Some(StatusCode::OK)
    );
}

#[tokio::test]
async fn the_console_is_off_unless_asked_for() {
    let app = support::spawn_app().await;
    let res = app.admin_get("/console/login").await.expect("answer");
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_list_pages_forward_and_back_and_searches_keys_and_destinations() {
    let c = console().await;
    let store = c.app.store();
    for i in 0..120 {
        let url = if i % 10 == 0 {
            format!("https://shop.example/tens/{i}")
        } else {
            format!("https://example.com/{i}")
        };
        qrtag::links::create(
            &store,
            &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
            &Destination::parse(&url).expect("url"),
            Some(&Console::key(&format!("p{i:03}"))),
            i % 7 == 0,
        )
        .await
        .expect("create");
    }
    c.login().await;
    eventually(Duration::from_secs(2), || async {
        c.page("/links").await.contains(r#"data-total="120""#)
    })
    .await;

    // Pages of 50 rows (`per=50`), the size kept in the pager's links.
    let first = c.page("/links?per=50").await;
    assert_eq!(rows(&first).len(), 50);
    assert_eq!(rows(&first)[0], "p000");
    assert!(!first.contains(r#"id="prev""#));
    assert!(first.contains(r#"data-state="inactive""#));
    let second = c.page("/links?q=&by=key&per=50&after=p049").await;
    assert_eq!(rows(&second)[0], "p050");
    assert!(second.contains(r#"href="/console/links?q=&amp;by=key&amp;per=50&amp;after=p099""#));
    let third = c.page("/links?q=&by=key&per=50&after=p099").await;
    assert_eq!(rows(&third).len(), 20);
    assert!(!third.contains(r#"id="next""#));
    let back = c.page("/links?q=&by=key&per=50&before=p100").await;
    assert_eq!(rows(&back), rows(&second));

    let prefix = c.page("/links?q=p10&by=key").await;
    assert_eq!(
        rows(&prefix),
        (100..110).map(|i| format!("p{i}")).collect::<Vec<_>>()
    );
    let tens = c.page("/links?q=shop.example%2Ftens&by=url").await;
    assert_eq!(
        rows(&tens),
        (0..12)
            .map(|i| format!("p{:03}", i * 10))
            .collect::<Vec<_>>()
    );
    let none = c.page("/links?q=zzz&by=key").await;
    assert!(none.contains(r#"id="empty""#) && rows(&none).is_empty());
    // The thumbnails are drawn into the page, not asked of the render gate.
    assert_eq!(
        first.matches(r#"<img src="data:image/svg+xml,"#).count(),
        50
    );
    assert!(!first.contains(r#"src="/qr/"#), "a thumbnail from /qr/");
    assert!(first.contains(r#"data-scans="—""#), "no scan index yet");
}

/// Issue 33: a list page shows 100 rows unless the address asks for 25,
/// 50 or 200 (`per`), a choice the search form offers and the pager's
/// links keep; any other size is a 400 with a line naming the sizes.
#[tokio::test]
async fn a_list_page_shows_a_hundred_rows_or_the_size_asked_for() {
    let c = console().await;
    let store = c.app.store();
    for i in 0..230 {
        qrtag::links::create(
            &store,
            &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
            &Destination::parse(&format!("https://example.com/{i}")).expect("url"),
            Some(&Console::key(&format!("p{i:03}"))),
            false,
        )
        .await
        .expect("create");
    }
    c.login().await;
    eventually(Duration::from_secs(2), || async {
        c.page("/links").await.contains(r#"data-total="230""#)
    })
    .await;
    let key = |i: usize| format!("p{i:03}");
    let keys = |r: std::ops::Range<usize>| r.map(key).collect::<Vec<_>>();

    let first = c.page("/links").await;
    eprintln!("per=100: the first page is {} bytes of HTML", first.len());
    assert_eq!(rows(&first), keys(0..100));
    assert_eq!(
        first.matches(r#"<img src="data:image/svg+xml,"#).count(),
        100,
        "a thumbnail a row"
    );
    assert!(first.contains(r#"<option value="100" selected>"#));
    assert!(
        first.contains(r#"href="/console/links?q=&amp;by=key&amp;after=p099""#),
        "the default size is left out of the pager's links"
    );
    let second = c.page("/links?q=&by=key&after=p099").await;
    assert_eq!(rows(&second), keys(100..200));

    for (per, pages) in [(25, 10), (50, 5), (200, 2)] {
        let mut path = format!("/links?per={per}");
        let mut seen = Vec::new();
        for page in 1.. {
            let html = c.page(&path).await;
            assert!(
                html.contains(&format!(r#"<option value="{per}" selected>"#)),
                "per={per}: the form shows the size"
            );
            let got = rows(&html);
            if page == 1 {
                eprintln!("per={per}: the first page is {} bytes of HTML", html.len());
            }
            assert_eq!(
                got.len(),
                per.min(230 - seen.len()),
                "per={per}, page {page}"
            );
            seen.extend(got);
            let Some(next) = html
                .split(r#"id="next" rel="next" href=""#)
                .nth(1)
                .and_then(|s| s.split('"').next())
            else {
                assert_eq!(page, pages, "per={per}");
                break;
            };
            let next = next.replace("&amp;", "&");
            assert!(next.contains(&format!("&per={per}&")), "{next}");
            path = next.trim_start_matches("/console").to_owned();
        }
        assert_eq!(seen, keys(0..230), "per={per}: every link once, in order");
    }

    for bad in ["7", "0", "100000", "", "all"] {
        let res = c.get(&format!("/links?per={bad}")).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "per={bad}");
        let body = res.text().await.expect("body");
        assert_eq!(
            body.trim_end(),
            format!("bad per: `{bad}`; one of 25, 50, 100, 200")
        );
    }
}

/// Issue 31: the list sorted `table-10` before `table-2`. Keys come in
/// natural order, pages and cursors follow it, and a prefix search still
/// finds every key with the prefix (`table-1` is `table-1`, `table-1x`
/// and `table-10`…, with `table-2` between them in the order).
#[tokio::test]
async fn the_list_sorts_numbered_keys_by_their_numbers() {
    let c = console().await;
    let store = c.app.store();
    let mut keys: Vec<String> = (1..=60).map(|i| format!("table-{i}")).collect();
    keys.extend([
        "table-1x".to_owned(),
        "table-01".to_owned(),
        "menu".to_owned(),
    ]);
    for key in &keys {
        qrtag::links::create(
            &store,
            &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
            &Destination::parse("https://example.com/t").expect("url"),
            Some(&Console::key(key)),
            false,
        )
        .await
        .expect("create");
    }
    c.login().await;
    eventually(Duration::from_secs(2), || async {
        c.page("/links").await.contains(r#"data-total="63""#)
    })
    .await;
    let mut want = vec![
        "menu".to_owned(),
        "table-01".to_owned(),
        "table-1".to_owned(),
        "table-1x".to_owned(),
    ];
    want.extend((2..=60).map(|i| format!("table-{i}")));
    let first = c.page("/links?per=50").await;
    let size = 50;
    assert_eq!(rows(&first), want[..size]);
    let last = &want[size - 1];
    let second = c
        .page(&format!("/links?q=&by=key&per=50&after={last}"))
        .await;
    assert_eq!(rows(&second), want[size..]);
    let back = c
        .page(&format!("/links?q=&by=key&per=50&before={}", want[size]))
        .await;
    assert_eq!(rows(&back), rows(&first));
    let prefix = c.page("/links?q=table-1&by=key").await;
    let mut ones = vec!["table-1".to_owned(), "table-1x".to_owned()];
    ones.extend((10..=19).map(|i| format!("table-{i}")));
    assert_eq!(rows(&prefix), ones);
    // With a state filter too.
    let active = c.page("/links?q=table-1&by=key&state=active").await;
    assert_eq!(rows(&active), ones);
}

/// The element with `id="ID"`: its opening tag, to read its attributes.
fn tag_of<'a>(html: &'a str, id: &str) -> &'a str {
    let at = html
        .find(&format!(r#"id="{id}""#))
        .unwrap_or_else(|| panic!("no #{id} in {html}"));
    let start = html[..at].rfind('<').expect("tag start");
    let end = at + html[at..].find('>').expect("tag end");
    &html[start..=end]
}

/// The field `id` is marked as the one at fault: `aria-invalid`, the
/// `invalid` class, and its message beside it, which says `says`.
fn assert_marked(html: &str, id: &str, says: &str) {
    let tag = tag_of(html, id);
    assert!(
        tag.contains(r#"aria-invalid="true""#) && tag.contains(r#"class="invalid""#),
        "#{id} is not marked: {tag}"
    );
    assert!(
        tag.contains(&format!(r#"aria-describedby="{id}-problem""#)),
        "{tag}"
    );
    let message = tag_of(html, &format!("{id}-problem"));
    assert!(message.contains(r#"role="alert""#), "{message}");
    let from = html
        .find(&format!(r#"id="{id}-problem""#))
        .expect("message");
    let text = &html[from..from + html[from..].find("</p>").expect("end")];
    assert!(text.contains(says), "#{id}'s message: {text}");
}

fn assert_unmarked(html: &str, id: &str) {
    let tag = tag_of(html, id);
    assert!(!tag.contains("aria-invalid"), "#{id} is marked: {tag}");
}

/// A create, an edit or a print run the server refuses comes back with
/// what was typed, the field at fault marked (message beside it,
/// `aria-invalid`, a class), and nothing written.
#[tokio::test]
async fn a_refused_form_keeps_what_was_typed_and_marks_the_field_at_fault() {
    let c = console().await;
    c.app.link("taken", "https://example.com/t").await;
    c.login().await;
    let typed = [
        ("url", "https://example.com/spring"),
        ("key", "bad key!"),
        ("expires", "30d"),
        ("notes", "bus stop & <Main St>"),
    ];
    let res = c.post("/links", "/links", &typed).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let page = res.text().await.expect("body");
    assert_marked(&page, "new-key", "Key:");
    assert_unmarked(&page, "new-url");
    assert!(tag_of(&page, "new-url").contains(r#"value="https://example.com/spring""#));
    assert!(tag_of(&page, "new-key").contains(r#"value="bad key!""#));
    assert!(tag_of(&page, "new-expires").contains(r#"value="30d""#));
    assert!(
        page.contains(">bus stop &amp; &lt;Main St&gt;</textarea>"),
        "the notes, escaped: {page}"
    );
    assert!(
        c.app.store().list().await.expect("list").len() == 1,
        "nothing written"
    );

    let res = c
        .post(
            "/links",
            "/links",
            &[
                ("url", "https://example.com/x"),
                ("key", "taken"),
                ("expires", "2w"),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let page = res.text().await.expect("body");
    assert_marked(&page, "new-key", "already taken");
    assert!(tag_of(&page, "new-expires").contains(r#"value="2w""#));

    // Issue 19, item 8: a key below an existing link would take over its
    // URLs (`/taken/login` now leads to taken's destination + `/login`).
    let res = c
        .post(
            "/links",
            "/links",
            &[
                ("url", "https://evil.example/phish"),
                ("key", "taken/login"),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let page = res.text().await.expect("body");
    assert_marked(&page, "new-key", "would change where /taken/login leads");
    assert!(tag_of(&page, "new-key").contains(r#"value="taken/login""#));

    let res = c
        .post(
            "/links",
            "/links",
            &[("url", "//evil.example/"), ("key", "fine")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let page = res.text().await.expect("body");
    assert_marked(&page, "new-url", "Destination:");
    assert!(tag_of(&page, "new-url").contains(r#"value="//evil.example/""#));
    assert!(tag_of(&page, "new-key").contains(r#"value="fine""#));

    let res = c
        .post(
            "/links",
            "/links",
            &[("url", "https://example.com/y"), ("expires", "yesterday")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert_marked(&res.text().await.expect("body"), "new-expires", "Expires:");

    // The link's own forms.
    let from = "/link?key=taken";
    let res = c
        .post(
            from,
            "/link/destination",
            &[("key", "taken"), ("url", "https://user@evil.example/")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let page = res.text().await.expect("body");
    assert_marked(&page, "url", "Destination:");
    assert!(
        tag_of(&page, "url").contains(r#"value="https://user@evil.example/""#),
        "{page}"
    );
    assert!(
        page.contains(r#"data-url="https://example.com/t""#),
        "the stored one is still shown"
    );
    let res = c
        .post(
            from,
            "/link/expiry",
            &[("key", "taken"), ("expires", "next week")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let page = res.text().await.expect("body");
    assert_marked(&page, "expires", "30d");
    assert!(tag_of(&page, "expires").contains(r#"value="next week""#));
    assert_unmarked(&page, "url");
    let too_long = format!("{} end", "x".repeat(qrtag::link::MAX_NOTES));
    let res = c
        .post(
            from,
            "/link/notes",
            &[("key", "taken"), ("notes", &too_long)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let page = res.text().await.expect("body");
    assert_marked(&page, "notes-text", "at most 2000");
    assert!(
        page.contains(&format!("{too_long}</textarea>")),
        "the notes typed"
    );
    let doc = c
        .app
        .store()
        .get(&Console::key("taken"))
        .await
        .expect("read")
        .expect("exists")
        .doc;
    assert_eq!(
        doc.get("url").and_then(|u| u.as_str()),
        Some("https://example.com/t")
    );
    assert!(
        !doc.contains_key("notes") && !doc.contains_key("expires"),
        "{doc:?}"
    );

    // A print run.
    let res = c.post("/sheet", "/sheet", &[("count", "5000")]).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let page = res.text().await.expect("body");
    assert_marked(&page, "count", "1 to 1000");
    assert!(tag_of(&page, "count").contains(r#"value="5000""#), "{page}");
    assert_eq!(
        c.app.store().list().await.expect("list").len(),
        1,
        "nothing made"
    );
}

/// Issue 35: the embedded store has users, so its login asks for a user
/// name too (empty is `admin`, as the single password of earlier versions
/// was), and a failed login does not say which of the two was wrong.
#[tokio::test]
async fn a_wrong_password_is_called_a_wrong_user_name_or_password() {
    let c = console().await;
    let res = c.login_with("not-the-password").await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let body = res.text().await.expect("body");
    assert!(body.contains(r#"name="user""#), "a user name field");
    let problem = tag_of(&body, "problem");
    assert!(problem.contains("alert"), "{problem}");
    assert!(body.contains(">wrong user name or password</p>"), "{body}");
}

/// A link document as qrtag writes it, with its times (`None`: a document
/// from before times were kept) and other fields.
fn timed(
    url: &str,
    created: Option<&str>,
    changed: Option<&str>,
    more: serde_json::Value,
) -> qrtag::link::Document {
    let mut doc = serde_json::json!({ "url": url, "inactive": false });
    if let Some(t) = created {
        doc["created_at"] = t.into();
    }
    if let Some(t) = changed {
        doc["changed_at"] = t.into();
    }
    if let (Some(doc), serde_json::Value::Object(more)) = (doc.as_object_mut(), more) {
        doc.extend(more);
    }
    match doc {
        serde_json::Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    }
}

/// The list sorts by creation and change time both ways (links without
/// times last), filters by state (deleted links in no list, never
/// scanned from the scan index), keeps the choices in the pager's and the
/// search's addresses, and has the create form above the table.
#[tokio::test]
async fn the_list_sorts_by_time_filters_by_state_and_keeps_the_choices() {
    let (app, _log) = spawn_console_with_scan_index(PASSWORD).await;
    let c = Console {
        app,
        http: browser(),
    };
    let store = c.app.store();
    let day = |d: &str| format!("2026-{d}T00:00:00Z");
    let links = [
        (
            "a-old",
            Some(day("01-01")),
            Some(day("03-01")),
            serde_json::json!({}),
        ),
        (
            "b-mid",
            Some(day("01-02")),
            Some(day("01-02")),
            serde_json::json!({}),
        ),
        (
            "c-new",
            Some(day("01-03")),
            Some(day("01-05")),
            serde_json::json!({}),
        ),
        ("d-hand", None, None, serde_json::json!({})),
        (
            "e-past",
            Some(day("01-04")),
            Some(day("01-04")),
            serde_json::json!({"expires": "2020-01-01T00:00:00Z"}),
        ),
        (
            "f-soon",
            Some(day("01-06")),
            Some(day("01-06")),
            serde_json::json!({"expires": "2099-01-01T00:00:00Z"}),
        ),
        (
            "g-off",
            Some(day("01-07")),
            Some(day("01-07")),
            serde_json::json!({"inactive": true}),
        ),
        (
            "h-gone",
            Some(day("01-08")),
            Some(day("01-08")),
            serde_json::json!({"deleted_at": day("01-08")}),
        ),
    ];
    for (key, created, changed, more) in links {
        let doc = timed(
            "https://example.com/",
            created.as_deref(),
            changed.as_deref(),
            more,
        );
        store
            .create(&Console::key(key), &doc)
            .await
            .expect("create");
    }
    // Sixty more, created a minute apart in February: past a page.
    for i in 0..60 {
        let t = format!("2026-02-01T00:{i:02}:00Z");
        let doc = timed(
            "https://example.com/p",
            Some(&t),
            Some(&t),
            serde_json::json!({}),
        );
        store
            .create(&Console::key(&format!("p{i:02}")), &doc)
            .await
            .expect("create");
    }
    c.login().await;
    c.app.wait_for_status("/c-new", 302).await;
    let scan = c
        .app
        .client
        .get(c.app.url("/c-new"))
        .header("user-agent", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0)")
        .send()
        .await
        .expect("scan");
    assert_eq!(scan.status(), StatusCode::FOUND);
    let scanned = eventually_page(&c, "/link?key=c-new", |html| {
        data_after(html, "scans", "scans") == Some(1)
    })
    .await;
    assert!(scanned.contains(r#"id="scans""#));

    let plain = c.page("/links").await;
    assert!(
        plain.find(r#"id="create""#) < plain.find(r#"id="links""#),
        "the form is above the table"
    );
    let first: Vec<String> = rows(&plain);
    assert_eq!(
        first[..7],
        [
            "a-old", "b-mid", "c-new", "d-hand", "e-past", "f-soon", "g-off"
        ],
        "no deleted link"
    );

    let feb: Vec<String> = (0..60).rev().map(|i| format!("p{i:02}")).collect();
    let newest = c.page("/links?sort=created&state=active&per=50").await;
    assert_eq!(rows(&newest), feb[..50]);
    assert!(
        newest.contains(r#"<option value="created" selected>"#),
        "{newest}"
    );
    assert!(newest.contains(r#"<option value="active" selected>"#));
    let next = newest
        .split(r#"id="next" rel="next" href=""#)
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("a next page")
        .replace("&amp;", "&");
    assert!(
        next.contains("sort=created&state=active&per=50&after="),
        "{next}"
    );
    let second = c.page(next.trim_start_matches("/console")).await;
    let mut want: Vec<&str> = feb[50..].iter().map(String::as_str).collect();
    want.extend(["f-soon", "c-new", "b-mid", "a-old", "d-hand"]);
    assert_eq!(rows(&second), want, "active, newest first, no time last");
    let prev = second
        .split(r#"id="prev" rel="prev" href=""#)
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("a previous page")
        .replace("&amp;", "&");
    assert_eq!(
        rows(&c.page(prev.trim_start_matches("/console")).await),
        feb[..50]
    );

    let oldest = c.page("/links?q=&by=key&sort=created-oldest").await;
    assert_eq!(
        rows(&oldest)[..6],
        ["a-old", "b-mid", "c-new", "e-past", "f-soon", "g-off"]
    );
    let changed = c.page("/links?sort=changed&q=").await;
    assert_eq!(rows(&changed)[0], "a-old", "changed last in March");
    assert_eq!(rows(&changed)[1..5], ["p59", "p58", "p57", "p56"]);
    let least = c.page("/links?sort=changed-oldest&state=all").await;
    assert_eq!(rows(&least)[..3], ["b-mid", "e-past", "c-new"]);
    for (state, want) in [
        ("inactive", vec!["g-off"]),
        ("expiring", vec!["f-soon"]),
        ("expired", vec!["e-past"]),
    ] {
        let page = c.page(&format!("/links?state={state}")).await;
        assert_eq!(rows(&page), want, "state={state}");
    }
    let never = eventually_page(&c, "/links?state=never-scanned&q=p5", |html| {
        !rows(html).is_empty()
    })
    .await;
    assert_eq!(
        rows(&never),
        (50..60).map(|i| format!("p{i}")).collect::<Vec<_>>()
    );
    let never = c
        .page("/links?state=never-scanned&by=url&q=example.com%2F&sort=created-oldest")
        .await;
    let never = rows(&never);
    assert!(
        !never.contains(&"c-new".to_owned()) && never.contains(&"a-old".to_owned()),
        "{never:?}"
    );
    assert_eq!(never[..2], ["a-old", "b-mid"]);

    for bad in [
        "/links?sort=size",
        "/links?state=lost",
        "/links?state=deleted",
        "/links?per=7",
        "/links?per=all",
    ] {
        let res = c.get(bad).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{bad}");
        let body = res.text().await.expect("body");
        assert!(
            body.starts_with("bad ") && body.lines().count() == 1,
            "{body}"
        );
    }
}

/// Issue 18: the console deletes a link after a second step (a ticked box),
/// the page then says when, scans get 404, and the key is never taken
/// again; a past expiry is refused in the form with the time and now.
#[tokio::test]
async fn delete_takes_a_ticked_box_and_leaves_a_tombstone_page() {
    let c = console().await;
    c.login().await;
    let page = c.create("menu", "https://example.com/menu").await;
    assert_eq!(page, "/console/link?key=menu");
    let from = "/link?key=menu";
    c.wait_location("menu", Some("https://example.com/menu"))
        .await;
    let html = c.page(from).await;
    assert!(html.contains(r#"id="delete-link""#), "{html}");

    let res = c.post(from, "/link/delete", &[("key", "menu")]).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST, "not without the box");
    let body = res.text().await.expect("body");
    assert!(
        body.contains("menu was not deleted: tick the box"),
        "{body}"
    );
    assert_eq!(
        c.location("menu").await.as_deref(),
        Some("https://example.com/menu")
    );

    let res = c
        .post(from, "/link/delete", &[("key", "menu"), ("confirm", "yes")])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(header(&res, "location"), Some("/console/link?key=menu"));
    c.app.wait_for_status("/menu", 404).await;
    let html = c.page(from).await;
    let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert!(html.contains(r#"data-state="deleted""#), "{html}");
    assert!(
        html.contains(&format!("This link was deleted on {day}")),
        "{html}"
    );
    assert!(
        !html.contains(r#"id="edit-destination""#),
        "no edits: {html}"
    );
    assert!(!html.contains(r#"id="tag""#), "no tag: {html}");
    let res = c.get("/link/download?key=menu&format=png").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);

    let res = c
        .post(
            "/links",
            "/links",
            &[("url", "https://other.example/"), ("key", "menu")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let body = res.text().await.expect("body");
    assert!(
        body.contains(&format!(
            "Key menu was deleted on {day}; a deleted key is never reused"
        )),
        "{body}"
    );
    let res = c
        .post(from, "/link/state", &[("key", "menu"), ("active", "true")])
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT, "no edit revives it");
    let out = qrtag_cmd(&c.app.db, &["list", "--deleted"]);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        listed.starts_with("menu\thttps://example.com/menu\tdeleted "),
        "{listed}"
    );

    c.create("later", "https://example.com/later").await;
    let res = c
        .post(
            "/link?key=later",
            "/link/expiry",
            &[("key", "later"), ("expires", "2020-01-01")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let body = res.text().await.expect("body");
    assert!(
        body.contains("Expires: 2020-01-01 23:59 UTC is in the past (it is now "),
        "{body}"
    );
    let res = c
        .post(
            "/links",
            "/links",
            &[
                ("url", "https://example.com/"),
                ("expires", "2020-01-01T00:00:00Z"),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
}

/// With the console on, `/` on the admin listener leads to it (issue 18).
#[tokio::test]
async fn the_admin_root_leads_to_the_console() {
    let c = console().await;
    let r = c.app.admin_get("/").await.expect("answered");
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(support::header(&r, "location"), Some("/console"));
}

#[tokio::test]
async fn ten_thousand_anonymous_visits_leave_room_for_a_login() {
    let c = console().await;
    // Each visit a new visitor: no cookie kept, so each is given one.
    let visitor = reqwest::Client::new();
    for i in 0..10_050 {
        let res = visitor
            .get(c.url("/login"))
            .send()
            .await
            .expect("GET /login");
        assert_eq!(res.status(), StatusCode::OK, "visit {i}");
    }
    c.login().await;
    assert_eq!(c.get("/links").await.status(), StatusCode::OK);
}

/// A browser whose connections come from `source` (a loopback address).
pub(crate) fn browser_from(source: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .local_address(std::net::IpAddr::from(source))
        .build()
        .expect("client")
}

#[tokio::test]
async fn the_login_form_s_token_belongs_to_its_cookie() {
    let c = console().await;
    let token = csrf(&c.page("/login").await);
    // Another visitor's cookie with this token: refused.
    let other = Console {
        app: c.app,
        http: browser(),
    };
    let _ = other.page("/login").await;
    let res = other
        .post_raw("/login", &[("csrf", &token), ("password", PASSWORD)])
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    // No cookie at all: refused.
    let res = reqwest::Client::new()
        .post(other.url("/login"))
        .form(&[("csrf", token.as_str()), ("password", PASSWORD)])
        .send()
        .await
        .expect("POST");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    other.login().await;
}

/// Read-your-writes (issue 22): once the console has answered a create, a
/// new destination or a disable, a scan sent right after (no sleep, no
/// retry) already gets the new answer, a thousand times each.
#[tokio::test]
async fn a_scan_right_after_each_answered_edit_gets_the_new_answer() {
    const PAIRS: usize = 1000;
    let c = console().await;
    c.login().await;
    // The synchronizer token is the session's: read once, sent with each form.
    let token = csrf(&c.page("/links").await);
    let started = std::time::Instant::now();
    let keys: Vec<String> = (0..PAIRS).map(|i| format!("ryw/{i}")).collect();
    for (i, key) in keys.iter().enumerate() {
        let url = format!("https://example.com/first/{i}");
        let res = c
            .post_raw("/links", &[("csrf", &token), ("key", key), ("url", &url)])
            .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "create {key}");
        assert_eq!(
            c.location(key).await.as_deref(),
            Some(url.as_str()),
            "scan of new {key}"
        );
    }
    let created = started.elapsed();
    for (i, key) in keys.iter().enumerate() {
        let url = format!("https://example.com/second/{i}");
        let res = c
            .post_raw(
                "/link/destination",
                &[("csrf", &token), ("key", key), ("url", &url)],
            )
            .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "repoint {key}");
        assert_eq!(
            c.location(key).await.as_deref(),
            Some(url.as_str()),
            "scan of repointed {key}"
        );
    }
    let repointed = started.elapsed();
    for key in &keys {
        let res = c
            .post_raw(
                "/link/state",
                &[("csrf", &token), ("key", key), ("active", "false")],
            )
            .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "disable {key}");
        let scan = c.app.get(&format!("/{key}")).await;
        assert_eq!(
            scan.status(),
            StatusCode::NOT_FOUND,
            "scan of disabled {key}"
        );
    }
    eprintln!(
        "{PAIRS} pairs each: create {created:?}, repoint {:?}, disable {:?}",
        repointed - created,
        started.elapsed() - repointed
    );
}

/// Issue 33: the fallback is set on the link's page, shown beside the
/// state, refused beside its field when it is no absolute URL (nothing
/// written), followed by a scan once the link is disabled, and cleared by
/// an empty field.
#[tokio::test]
async fn a_fallback_is_set_refused_and_cleared_on_the_link_page() {
    let c = console().await;
    c.app.link("gig", "https://event.example/").await;
    c.login().await;
    let from = "/link?key=gig";
    let page = c.page(from).await;
    assert!(page.contains(r#"id="edit-fallback""#), "{page}");
    assert!(!page.contains(r#"id="fallback""#), "no fallback yet");
    let stored = || async {
        c.app
            .store()
            .get(&Console::key("gig"))
            .await
            .expect("read")
            .expect("exists")
            .doc
    };

    let before = stored().await;
    // The last: the link's own short URL, which would loop (issue 33).
    for bad in [
        "/gig",
        "venue.example",
        "javascript:alert(1)",
        "https://0x1f.ie/gig",
    ] {
        let res = c
            .post(
                from,
                "/link/fallback",
                &[("key", "gig"), ("fallback_url", bad)],
            )
            .await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{bad}");
        let page = res.text().await.expect("body");
        assert!(
            page.contains(r#"id="fallback-url-problem""#),
            "beside the field: {page}"
        );
        assert!(page.contains("Fallback: "), "{bad}: {page}");
        assert!(page.contains(r#"aria-invalid="true""#), "{page}");
    }
    assert_eq!(stored().await, before, "nothing was written");

    let res = c
        .post(
            from,
            "/link/fallback",
            &[
                ("key", "gig"),
                ("fallback_url", "https://venue.example/home"),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let doc = stored().await;
    assert_eq!(
        doc.get("fallback_url").and_then(|f| f.as_str()),
        Some("https://venue.example/home")
    );
    let page = c.page(from).await;
    assert!(
        page.contains(r#"id="fallback" data-url="https://venue.example/home""#),
        "{page}"
    );

    let res = c
        .post(from, "/link/state", &[("key", "gig"), ("active", "false")])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    eventually(Duration::from_secs(2), || async {
        let r = c.app.get("/gig").await;
        r.status() == 302 && header(&r, "location") == Some("https://venue.example/home")
    })
    .await;
    assert!(c.page(from).await.contains("scans go here now"));

    let res = c
        .post(
            from,
            "/link/fallback",
            &[("key", "gig"), ("fallback_url", "")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(!stored().await.contains_key("fallback_url"));
    c.app.wait_for_status("/gig", 404).await;
}

/// Issue 33: a title is given in the create form and edited on the link's
/// page, which it heads; a bad one is said beside its field and nothing is
/// written.
#[tokio::test]
async fn titles_are_made_edited_and_head_the_link_page() {
    let c = console().await;
    c.login().await;
    let stored = |key: &'static str| {
        let store = c.app.store();
        async move {
            store
                .get(&Console::key(key))
                .await
                .expect("read")
                .map(|s| s.doc)
        }
    };
    let res = c
        .post(
            "/links",
            "/links",
            &[
                ("url", "https://example.com/s"),
                ("key", "spring"),
                ("title", " Spring <poster> "),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let doc = stored("spring").await.expect("created");
    assert_eq!(qrtag::link::title(&doc), Some("Spring <poster>"));
    let from = "/link?key=spring";
    let page = c.page(from).await;
    assert!(
        page.contains(r#"<span id="title">Spring &lt;poster&gt;</span>"#),
        "{page}"
    );
    assert!(tag_of(&page, "key").contains(r#"data-key="spring""#));

    let long = "🎟".repeat(201);
    for bad in [long.as_str(), "two\r\nlines"] {
        let res = c
            .post(from, "/link/title", &[("key", "spring"), ("title", bad)])
            .await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        let page = res.text().await.expect("body");
        let says = if bad == long {
            "a title may be at most 200 characters, not 201"
        } else {
            "a title is one line"
        };
        assert_marked(&page, "title-text", says);
        let res = c
            .post(
                "/links",
                "/links",
                &[
                    ("url", "https://example.com/b"),
                    ("key", "bad"),
                    ("title", bad),
                ],
            )
            .await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        assert_marked(&res.text().await.expect("body"), "new-title", says);
    }
    assert_eq!(stored("spring").await, Some(doc), "nothing written");
    assert_eq!(stored("bad").await, None, "nothing created");

    let res = c
        .post(
            from,
            "/link/title",
            &[("key", "spring"), ("title", "Bus stop")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(
        c.page(from)
            .await
            .contains(r#"<span id="title">Bus stop</span>"#)
    );
    let res = c
        .post(from, "/link/title", &[("key", "spring"), ("title", " ")])
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let doc = stored("spring").await.expect("kept");
    assert!(!doc.contains_key("title"), "cleared: {doc:?}");
    assert!(!c.page(from).await.contains(r#"id="title""#));
}

/// Issue 33: the list names each link by its title, shows its notes' first
/// line, and one search box finds a link by a piece of its key, title,
/// notes or destination, whatever the case; all from the snapshot.
#[tokio::test]
async fn the_list_shows_titles_and_searches_titles_notes_keys_and_destinations() {
    let c = console().await;
    for args in [
        &[
            "new",
            "https://example.com/menu",
            "--key",
            "t1",
            "--title",
            "Table one menu",
        ][..],
        &[
            "new",
            "https://example.com/s",
            "--key",
            "poster",
            "--title",
            "Spring <poster> 🎟",
            "--notes",
            "\n  Bus stop, Main St\nsecond line",
        ],
        &["new", "https://shop.example/autumn", "--key", "p2"],
        &[
            "new",
            "https://example.com/x",
            "--key",
            "zz",
            "--notes",
            "été à Paris",
        ],
    ] {
        let out = c.app.cli(args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    c.login().await;
    let all = eventually_page(&c, "/links", |p| p.contains(r#"data-total="4""#)).await;
    assert!(
        all.contains(
            r#"<a class="title" href="/console/link?key=poster">Spring &lt;poster&gt; 🎟</a>"#
        ),
        "{all}"
    );
    assert!(
        all.contains(r#"<small class="notes-line">Bus stop, Main St</small>"#),
        "{all}"
    );
    assert!(!all.contains("second line"), "the first line only");
    assert!(all.contains(r#"<option value="any" selected>"#), "{all}");
    for (query, want) in [
        ("bus+STOP", vec!["poster"]),
        ("spring", vec!["poster"]),
        ("MENU", vec!["t1"]),
        ("SHOP.example", vec!["p2"]),
        ("ÉTÉ", vec!["zz"]),
        ("AUTUMN", vec!["p2"]),
        ("nothing-like-it", vec![]),
    ] {
        let page = c.page(&format!("/links?q={query}&by=any")).await;
        assert_eq!(rows(&page), want, "{query}");
    }
    // The key prefix and destination searches are as they were.
    assert_eq!(rows(&c.page("/links?q=p&by=key").await), ["p2", "poster"]);
    assert_eq!(
        rows(&c.page("/links?q=Bus&by=url").await),
        Vec::<String>::new()
    );

    // An edit reaches the list within the snapshot's second.
    let out = c.app.cli(&["set", "p2", "--title", "Autumn sale"]);
    assert!(out.status.success());
    eventually_page(&c, "/links?q=autumn+SALE&by=any", |p| rows(p) == ["p2"]).await;
}

/// Issue 33: the dashboard's busiest links are named by their titles with
/// their destinations beside them, and a link's breakdowns CSV says which
/// link and title it is about.
#[tokio::test]
async fn the_busiest_links_and_a_link_s_breakdowns_carry_the_title() {
    let (c, _log) = console_with_scans(3).await;
    let out = c
        .app
        .cli(&["set", "poster", "--title", "Spring \"poster\" 🎟"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dashboard = eventually_page(&c, "/dashboard", |html| {
        html.contains(r#"href="/console/link?key=poster">Spring &quot;poster&quot; 🎟</a> <small class="key-beside">poster</small>"#)
    })
    .await;
    assert!(
        dashboard.contains(r#"<td class="url">https://example.com/poster</td>"#),
        "{dashboard}"
    );
    let csv = eventually_page(&c, "/link/breakdowns.csv?key=poster", |csv| {
        csv.contains("title,")
    })
    .await;
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("dimension,value,scans"));
    assert_eq!(lines.next(), Some(r#"link,"poster","#));
    assert_eq!(lines.next(), Some(r#"title,"Spring ""poster"" 🎟","#));
}

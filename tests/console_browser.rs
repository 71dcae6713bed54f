//! The web console in a real browser: headless Chromium, steered through
//! Selenium by `tests/console/browser/driver.py` (through
//! `tests/support/browser.rs`) one command at a time, against the real
//! application, while these tests check what the browser cannot see (the QR
//! code's text, where a scan goes, what the store holds):
//!
//! - one person's journey, from a wrong password to logging out;
//! - every page on a phone screen and a desktop one, measured by
//!   `tests/console/browser/fits.js` (no sideways scrolling, controls inside
//!   the screen and tall enough to tap, text large enough to read);
//! - a form whose CSRF token is taken out, refused and writing nothing.
//!
//! Screenshots (`list`, `link`, `dashboard` from the journey, and
//! `phone-*`/`desktop-*` of every page) are written to
//! `console-screenshots/` in the Cargo target directory (`target/` or
//! `$CARGO_TARGET_DIR`).

mod support;

#[path = "support/browser.rs"]
mod browser;
#[path = "support/pdf_decode.rs"]
mod pdf_decode;
#[path = "support/qr_decode.rs"]
mod qr_decode;

use std::time::{Duration, Instant};

use browser::{Browser, DESKTOP, PHONE, Screen, screenshots};
use reqwest::StatusCode;
use serde_json::json;
use support::{
    PUBLIC_URL, TestApp, eventually, header, spawn_console_with_scan_index,
    spawn_first_run_console_with_scan_index,
};

const PASSWORD: &str = "poster-printing-42";
/// The promise: a console edit reaches scans within a second.
const PROPAGATION: Duration = Duration::from_secs(1);
/// A phone's user agent, so a scan counts as a person's.
const PHONE_AGENT: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0)";

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

/// Pages that send people to tags, with the host names that broke
/// mid-word in a narrow column (issue 31, item 12).
const REFERRERS: [&str; 3] = [
    "https://l.instagram.com/",
    "https://www.facebook.com/",
    "https://www.google.com/",
];

/// One scan of `key` from the `n`th phone (its own cookie, so its own
/// scanner), coming from one of [`REFERRERS`]; it must redirect.
async fn scan_by_phone(app: &TestApp, key: &str, n: usize) {
    let res = app
        .client
        .get(app.url(&format!("/{key}")))
        .header("user-agent", PHONE_AGENT)
        .header("referer", REFERRERS[n % REFERRERS.len()])
        .header("cookie", format!("x={n}"))
        .send()
        .await
        .expect("scan");
    assert_eq!(res.status(), StatusCode::FOUND, "/{key}");
}

/// Logs in from the login page already shown; the list opens.
fn log_in(b: &mut Browser) {
    b.fill("#password", PASSWORD);
    b.click("form#login button[type=submit]");
    b.wait("form#create");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_manages_a_tag_in_a_real_browser() {
    let started = Instant::now();
    // A first start: no password, and the setup link serve prints.
    let (app, _log) = spawn_first_run_console_with_scan_index().await;
    let setup = app
        .console_setup_url
        .clone()
        .expect("a first-run setup link");
    let console = |path: &str| format!("http://{}/console{path}", app.admin);
    let shots = screenshots();
    let mut b = Browser::start();

    // Not logged in: the list sends the browser to the login page, which
    // says where the first-run link is.
    b.get(&console("/links"));
    b.wait("form#login");
    assert!(b.current_url().ends_with("/console/login"));
    assert!(b.text("#first-run").contains("setup link"), "the hint");

    // The link: the password chosen there (a typo first) logs the person in.
    b.get(&setup);
    b.wait("form#setup");
    b.fill("#password", PASSWORD);
    b.fill("#again", "poster-printing-24");
    b.click("form#setup button[type=submit]");
    b.wait("#problem");
    assert!(b.text("#problem").contains("differ"), "the typo is said");
    b.fill("#password", PASSWORD);
    b.fill("#again", PASSWORD);
    b.click("form#setup button[type=submit]");
    b.wait("form#create");
    assert!(b.current_url().ends_with("/console/links"));

    // A link with a chosen key, through the form (a bad key first: the
    // form comes back with what was typed, the key marked): its page opens.
    let key = "spring-poster";
    let first = "https://example.com/spring";
    b.fill("#new-url", first);
    b.fill("#new-key", "spring poster");
    b.fill("#new-notes", "bus stop, Main St");
    b.click("form#create button[type=submit]");
    b.wait("#new-key-problem");
    assert_eq!(b.attr("#new-key", "aria-invalid"), "true");
    assert_eq!(b.attr("#new-key", "value"), "spring poster");
    assert_eq!(b.attr("#new-url", "value"), first, "kept");
    assert_eq!(b.attr("#new-notes", "value"), "bus stop, Main St", "kept");
    assert_eq!(b.count("[aria-invalid]"), 1, "only the key is marked");
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

    // The label PDF form, filled in and sent as the browser sends it: the
    // file `qrtag print` writes (tests/print_web.rs compares the bytes).
    b.script(
        "document.querySelector('#label-pdf-template').value = 'L7160';",
        json!([]),
    );
    b.fill("#label-pdf-skip", "4");
    // 24 mm: with its quiet zone and the URL below it, the largest code
    // L7160 takes inside the 1.5 mm safe area is 24.7 mm (issue 31).
    b.fill("#label-pdf-code-size", "24mm");
    let href = b
        .script(
            "const f = document.querySelector('#label-pdf'); \
             return f.action + '?' + new URLSearchParams(new FormData(f)).toString();",
            json!([]),
        )
        .as_str()
        .expect("the form's address")
        .to_owned();
    assert!(href.contains("template=L7160&skip=4"), "{href}");
    let (status, content_type, pdf) = b.fetch(&href);
    assert_eq!(status, 200, "{href}");
    assert_eq!(content_type, "application/pdf", "{href}");
    assert!(pdf.starts_with(b"%PDF-"), "{href}");

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
        scan_by_phone(&app, key, n).await;
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

    // Logged out: the login page, and the list is closed again; the setup
    // link is spent, a wrong password is refused, the chosen one logs in.
    b.click("form#logout button[type=submit]");
    b.wait("form#login");
    b.get(&console("/links"));
    b.wait("form#login");
    assert!(b.current_url().ends_with("/console/login"));
    assert_eq!(b.count("#first-run"), 0, "no hint once a password is set");
    b.fill("#password", "not-the-password");
    b.click("form#login button[type=submit]");
    b.wait("#problem");
    assert!(b.text("#problem").contains("wrong"), "the login error");
    log_in(&mut b);
    b.get(&setup);
    b.wait("#problem");
    assert!(
        b.text("#problem").contains("used already"),
        "the spent link"
    );

    drop(b);
    eprintln!(
        "journey done in {:?}; screenshots in {}",
        started.elapsed(),
        shots.display()
    );
}

/// A tap target's least height in CSS pixels, as `fits.js` checks it:
/// Apple asks for 44 and Google for 48, which the stylesheet gives; 40 is
/// where a thumb starts to miss.
const MIN_TAP: f64 = 40.0;
/// The least text size in CSS pixels: smaller, and a phone user zooms.
const MIN_TEXT: f64 = 14.0;
/// A destination as campaign tools write them: wider than any phone, with
/// nowhere to break but anywhere.
const LONG_URL: &str = "https://example.com/campaigns/2025/spring/city-centre/bus-shelters?\
    utm_source=qrtag&utm_medium=poster&utm_campaign=spring-2025-city-centre-bus-shelters\
    &utm_content=main-street-north";
/// A hand-chosen hierarchical key near the longest a segment may be.
const LONG_KEY: &str = "campaigns/spring-2025-city-centre-bus-shelter-main-street-north";

/// Saves a screenshot of the page shown as `<screen>-<page>.png` (to look
/// at, and to see why when this fails), then fails with every way the page
/// does not fit the screen, as `fits.js` measures it.
fn assert_fits(b: &mut Browser, screen: Screen, page: &str) {
    b.screenshot(&screenshots().join(format!("{}-{page}.png", screen.name)));
    let problems = b.script(
        include_str!("console/browser/fits.js"),
        json!([screen.width, MIN_TAP, MIN_TEXT]),
    );
    let problems = problems.as_array().expect("a list of problems");
    assert!(
        problems.is_empty(),
        "{page} on a {} screen:\n{}",
        screen.name,
        problems
            .iter()
            .map(|p| p.as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_fits_a_phone_and_a_desktop() {
    let started = Instant::now();
    let (app, _log) = spawn_console_with_scan_index(PASSWORD).await;
    let console = |path: &str| format!("http://{}/console{path}", app.admin);
    app.link("spring-poster", "https://example.com/spring")
        .await;
    app.link(LONG_KEY, LONG_URL).await;
    app.link("menu", "https://example.com/menu").await;
    wait_location(&app, LONG_KEY, LONG_URL).await;
    for n in 0..3 {
        scan_by_phone(&app, LONG_KEY, n).await;
    }
    let mut b = Browser::start();

    for screen in [PHONE, DESKTOP] {
        b.screen(screen);
        b.get(&console("/login"));
        b.wait("form#login");
        assert_fits(&mut b, screen, "login");
    }
    b.screen(PHONE);
    log_in(&mut b);

    // The pages as they look with something on them: scans counted (the
    // chart drawn) and a print run made, through its form on the phone.
    let link_page = console(&format!("/link?key={LONG_KEY}"));
    b.reload_until(&link_page, r#"#scans dd[data-scans="3"]"#);
    b.get(&console("/sheet"));
    b.fill("#count", "3");
    b.click("form#sheet button[type=submit]");
    b.wait("section#batch");
    let print_run = b.current_url();
    let pages = [
        (
            "links",
            console("/links"),
            format!(r#"tr[data-key="{LONG_KEY}"]"#),
        ),
        ("link", link_page, r#"#scans dd[data-scans="3"]"#.to_owned()),
        ("sheet", print_run.clone(), "form#run-pdf".to_owned()),
        (
            "links-newest-active",
            console("/links?sort=created&state=active"),
            format!(r#"tr[data-key="{LONG_KEY}"]"#),
        ),
        (
            "dashboard",
            console("/dashboard"),
            format!(r#"tr[data-key="{LONG_KEY}"] td[data-scans="3"]"#),
        ),
    ];
    for screen in [PHONE, DESKTOP] {
        b.screen(screen);
        for (name, url, shown) in &pages {
            b.get(url);
            b.wait(shown);
            assert_fits(&mut b, screen, name);
        }
        // Issue 35 (i35-users): one's account and the admins' users page.
        for (name, path, shown) in [
            ("account", "/account", "table#sessions"),
            ("users", "/users", "form#invite-user"),
        ] {
            b.get(&console(path));
            b.wait(shown);
            assert_fits(&mut b, screen, name);
        }
        // A refused create: the list again, the field marked, its message
        // beside it.
        b.get(&console("/links"));
        b.wait("form#create");
        b.fill("#new-url", LONG_URL);
        b.fill("#new-key", LONG_KEY);
        b.click("form#create button[type=submit]");
        b.wait("#new-key-problem");
        assert_fits(&mut b, screen, "links-refused-create");
        // A print run's PDF form refused (more labels skipped than the
        // sheet has): the run's page again, the field marked.
        b.get(&print_run);
        b.wait("form#run-pdf");
        b.fill("#run-pdf-skip", "99");
        b.click("form#run-pdf button[type=submit]");
        b.wait("#run-pdf-skip-problem");
        assert_fits(&mut b, screen, "sheet-refused-pdf");
    }
    drop(b);
    eprintln!("every page fits, checked in {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_without_its_csrf_token_is_refused_and_changes_nothing() {
    let (app, _log) = spawn_console_with_scan_index(PASSWORD).await;
    let console = |path: &str| format!("http://{}/console{path}", app.admin);
    let (key, old, new) = (
        "poster",
        "https://example.com/old",
        "https://example.com/new",
    );
    app.link(key, old).await;
    let stored = || async {
        let key = qrtag::values::link_key::LinkKey::parse(key).expect("key");
        qrtag::store::LinkStore::get(&app.store(), &key)
            .await
            .expect("read")
            .expect("the link")
    };
    let before = stored().await;
    let mut b = Browser::start();
    b.get(&console("/login"));
    b.wait("form#login");
    log_in(&mut b);

    // The destination form as a forged one from another site would arrive:
    // everything but the token.
    let link_page = console(&format!("/link?key={key}"));
    b.get(&link_page);
    b.wait("form#edit-destination");
    let removed = b.script(
        "const t = document.querySelectorAll('form#edit-destination input[name=csrf]');\
         t.forEach(e => e.remove()); return t.length;",
        json!([]),
    );
    assert_eq!(removed, json!(1), "the form carried one token");
    b.fill("#url", new);
    b.click("form#edit-destination button[type=submit]");
    b.wait_text("body", "CSRF token");
    assert_eq!(
        b.text("body"),
        qrtag::console::csrf::REFUSED.trim(),
        "the 403's one line and nothing else"
    );

    // Nothing written: the same revision in the store, scans go where they went.
    assert_eq!(stored().await.rev, before.rev, "the link was written");
    assert_eq!(
        location(&app, key).await,
        (StatusCode::FOUND, Some(old.to_owned()))
    );

    // The same form with its token goes through: the token was all it lacked.
    b.get(&link_page);
    b.wait("form#edit-destination");
    b.fill("#url", new);
    b.click("form#edit-destination button[type=submit]");
    b.wait(&format!(r#"#destination[data-url="{new}"]"#));
    wait_location(&app, key, new).await;
}

// Bulk actions (issue 33).

/// A person ticks rows in the list and prints them as one PDF on L7160
/// (its codes read back), then disables two with a click and deletes one
/// after the page that asks; each effect seen by a scan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticked_rows_are_printed_disabled_and_deleted_in_a_real_browser() {
    let (app, _log) = spawn_console_with_scan_index(PASSWORD).await;
    let console = |path: &str| format!("http://{}/console{path}", app.admin);
    let keys = ["stall-1", "stall-2", "stall-3", "stall-4"];
    for k in keys {
        app.link(k, &format!("https://example.com/{k}")).await;
    }
    wait_location(&app, "stall-4", "https://example.com/stall-4").await;
    let shots = screenshots();
    let mut b = Browser::start();
    b.get(&console("/login"));
    b.wait("form#login");
    log_in(&mut b);
    b.wait("form#bulk");

    // Print three on L7160, the first two labels of the sheet used.
    for k in ["stall-1", "stall-2", "stall-4"] {
        b.click(&format!("#pick-{k}"));
    }
    b.script(
        "document.querySelector('#bulk-template').value = 'L7160';",
        json!([]),
    );
    b.fill("#bulk-skip", "2");
    b.screenshot(&shots.join("bulk-ticked.png"));
    let (status, content_type, pdf) = b.submit_bulk("button[value=print]");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&pdf));
    assert_eq!(content_type, "application/pdf");
    let dir = tempfile::tempdir().expect("dir");
    assert_eq!(
        pdf_decode::decode_pdf(dir.path(), &pdf),
        ["stall-1", "stall-2", "stall-4"].map(|k| format!("{PUBLIC_URL}/{k}"))
    );

    // Disable two with the button itself: the report, then 404s.
    b.get(&console("/links"));
    b.wait("form#bulk");
    b.click("#pick-stall-2");
    b.click("#pick-stall-3");
    b.click("#bulk-state button[value=disable]");
    b.wait("table#bulk-report");
    assert_eq!(b.count(r#"#bulk-report tr[data-outcome="done"]"#), 2);
    assert_eq!(b.attr("#bulk-summary", "data-done"), "2");
    b.screenshot(&shots.join("bulk-report.png"));
    // The report and the confirmation fit a phone and a desktop, as every
    // page does (laid out again in place: a reload would send the form again).
    for screen in [PHONE, DESKTOP] {
        b.screen(screen);
        assert_fits(&mut b, screen, "bulk-report");
    }
    for k in ["stall-2", "stall-3"] {
        eventually(PROPAGATION, || async {
            location(&app, k).await.0 == StatusCode::NOT_FOUND
        })
        .await;
    }
    assert_eq!(location(&app, "stall-1").await.0, StatusCode::FOUND);

    // Delete asks first; only the confirmation deletes.
    b.get(&console("/links"));
    b.wait("form#bulk");
    b.click("#pick-stall-4");
    b.click("#bulk-delete button[value=delete]");
    b.wait("form#confirm-delete");
    assert_eq!(b.count("#to-delete li"), 1);
    for screen in [PHONE, DESKTOP] {
        b.screen(screen);
        assert_fits(&mut b, screen, "bulk-confirm-delete");
    }
    assert_eq!(location(&app, "stall-4").await.0, StatusCode::FOUND);
    b.click("form#confirm-delete button[type=submit]");
    b.wait(r#"#bulk-report tr[data-key="stall-4"][data-outcome="done"]"#);
    eventually(PROPAGATION, || async {
        location(&app, "stall-4").await.0 == StatusCode::NOT_FOUND
    })
    .await;

    // Nothing ticked: the list again, the bar says why.
    b.get(&console("/links"));
    b.wait("form#bulk");
    b.click("#bulk-state button[value=enable]");
    b.wait("#bulk-problem");
    assert!(b.text("#bulk-problem").contains("No link is ticked"));
    for screen in [PHONE, DESKTOP] {
        b.screen(screen);
        assert_fits(&mut b, screen, "links-bulk-refused");
    }
    assert_eq!(location(&app, "stall-2").await.0, StatusCode::NOT_FOUND);
}

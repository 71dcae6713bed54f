//! The web console's reach (issue 33): every page it serves, in headless
//! Chromium at a laptop's 1440 × 900 and a phone's 390 × 844, holds to
//! axe-core's standard rules with no serious or critical violation
//! (`tests/support/a11y.rs` keeps the verdicts), and a link is edited with
//! the keyboard alone: log in, open it, change its destination, disable it,
//! each by Tab and Enter, the focus always drawn, the first Tab on a page a
//! link past the navigation.
//!
//! axe-core is the npm package pinned in `tests/console/axe/` (installed
//! by `.ci/test`), injected into each page through the Selenium driver
//! (`tests/support/browser.rs`), so the console's Content-Security-Policy
//! is the one people get. The pages are those `src/console/mod.rs` routes
//! to, in the states people see them in: logged out (first run, setup, a
//! refused password, a spent setup link), an empty list and a full one, a
//! link with scans and breakdowns and without, inactive with an expiry,
//! deleted, every form refused, the print sheet and a print run, the
//! dashboard, and the pages that say what went wrong. An answer that is not
//! a page (a download, a plain-text refusal such as the 404 of an unknown
//! console path) has no markup of the console's to check; the test checks
//! that it is plain text.

mod support;

#[path = "support/a11y.rs"]
mod a11y;
#[path = "support/browser.rs"]
mod browser;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use a11y::{Findings, LAPTOP, tab_to};
use browser::{Browser, PHONE};
use qrtag::access_log::format::{Record, write_record};
use qrtag::console::ConsoleSettings;
use qrtag::scan_index::{BreakdownSettings, ScanIndexSettings};
use qrtag::settings::AccessLogTarget;
use qrtag::stats::dimensions::place::GeoDb;
use reqwest::StatusCode;
use serde_json::json;
use support::{PUBLIC_URL, TestApp, eventually, header, spawn_with, test_settings};

const PASSWORD: &str = "poster-printing-42";

/// Phones' user agents, so scans count as people's and the breakdowns
/// have devices, systems and browsers to show.
const AGENTS: [&str; 3] = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
];
const REFERRERS: [&str; 3] = [
    "https://l.instagram.com/",
    "https://www.facebook.com/",
    "https://www.google.com/",
];

/// Addresses the test GeoIP database places (tests/fixtures/geoip/).
const ADDRESSES: [&str; 5] = [
    "203.0.113.7",
    "198.51.100.9",
    "192.0.2.1",
    "2001:db8:1::5",
    "2001:db8:2::9",
];

/// `serve --console` on a first run (no password, the setup link offered),
/// the scan index polling every 20 ms with every breakdown on (the test
/// GeoIP database, so countries, regions and cities too). Returns the log.
async fn first_run() -> (TestApp, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.console = Some(ConsoleSettings::default());
    let AccessLogTarget::Path(log) = settings.access_log.clone() else {
        panic!("a log file");
    };
    let mut index = ScanIndexSettings::beside(&log);
    index.poll_interval = Duration::from_millis(20);
    let geoip = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/geoip/test.mmdb");
    let db = GeoDb::open(&geoip).expect("the test database");
    index.breakdowns = Some(BreakdownSettings::new(
        chrono_tz::Europe::Dublin,
        Some((geoip.as_path(), db)),
    ));
    settings.scan_index = Some(index);
    (spawn_with(settings, dir).await, log)
}

/// Scans of `key` over the past year appended to the log as the server
/// writes them: uneven over hours, weekdays, days and months, from the
/// addresses, phones and referrers above, so every bar, label and shade of
/// the charts and the hour × weekday map is drawn. Returns how many.
fn scans_of_a_year(log: &Path, key: &str) -> u64 {
    let now = chrono::Utc::now();
    let mut lines = Vec::new();
    let mut n = 0;
    let target = format!("/{key}");
    let mut line = |back: chrono::Duration, i: usize| {
        let ip: std::net::IpAddr = ADDRESSES[i % ADDRESSES.len()].parse().expect("address");
        write_record(
            &Record {
                time: now - back,
                client_ip: Some(ip),
                tracking: None,
                user_agent: Some(AGENTS[i % AGENTS.len()].as_bytes()),
                target: target.as_bytes(),
                status: 302,
                location: Some("https://example.com/spring"),
                fallback: false,
                method: "GET",
                referer: Some(REFERRERS[i % REFERRERS.len()].as_bytes()),
            },
            &mut lines,
        );
        n += 1;
    };
    // The last few weeks, bunched into some hours more than others.
    for i in 0..160 {
        line(chrono::Duration::hours(((i * i) % 500) as i64 + 1), i);
    }
    // One to eleven months back, more in some months than others.
    for month in 1..12 {
        for i in 0..(month * 7) % 12 {
            line(chrono::Duration::days(month as i64 * 30 + i as i64), i);
        }
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(log)
        .expect("the access log");
    file.write_all(&lines).expect("append");
    n
}

/// One scan of `key` by the `n`th phone (its own cookie), which must redirect.
async fn scan(app: &TestApp, key: &str, n: usize) {
    let res = app
        .client
        .get(app.url(&format!("/{key}")))
        .header("user-agent", AGENTS[n % AGENTS.len()])
        .header("referer", REFERRERS[n % REFERRERS.len()])
        .header("cookie", format!("x={n}"))
        .send()
        .await
        .expect("scan");
    assert_eq!(res.status(), StatusCode::FOUND, "/{key}");
}

/// Submits form `css` without the browser's own checks (`min`, `required`),
/// as a browser that does not make them would: what the server answers to a
/// bad value is what is checked.
fn submit_unchecked(b: &mut Browser, css: &str) {
    b.script(
        "const f = document.querySelector(arguments[0]); f.noValidate = true; \
         f.querySelector('button[type=submit]').click();",
        json!([css]),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_console_page_passes_axe_core_on_a_laptop_and_a_phone() {
    let started = std::time::Instant::now();
    let (app, log) = first_run().await;
    let setup = app
        .console_setup_url
        .clone()
        .expect("a first-run setup link");
    let console = |path: &str| format!("http://{}/console{path}", app.admin);
    let screens = [LAPTOP, PHONE];
    let mut found = Findings::default();
    let mut b = Browser::start();

    // The checker finds what it is there to find.
    b.get(&console("/login"));
    b.wait("form#login");
    a11y::assert_axe_finds_a_planted_fault(&mut b);

    // Logged out, before a password is set: the login page with its hint,
    // the setup form, and the form refused (the two passwords differ).
    for screen in screens {
        b.screen(screen);
        b.get(&console("/login"));
        b.wait("#first-run");
        found.check(&mut b, screen, "login-first-run");
        b.get(&setup);
        b.wait("form#setup");
        found.check(&mut b, screen, "setup");
        b.fill("#password", PASSWORD);
        b.fill("#again", "poster-printing-24");
        b.click("form#setup button[type=submit]");
        b.wait("#problem");
        found.check(&mut b, screen, "setup-refused");
    }
    // The password set: the list opens, with no links yet.
    b.get(&setup);
    b.wait("form#setup");
    b.fill("#password", PASSWORD);
    b.fill("#again", PASSWORD);
    b.click("form#setup button[type=submit]");
    b.wait("form#create");
    for screen in screens {
        b.screen(screen);
        b.get(&console("/links"));
        b.wait("#empty");
        found.check(&mut b, screen, "links-empty");
        b.get(&console("/dashboard"));
        b.wait("h1");
        found.check(&mut b, screen, "dashboard-no-scans");
    }

    // Links, scans of one (breakdowns by device, system, browser and
    // referrer), and one of each state.
    let (busy, quiet) = ("spring-poster", "menu");
    app.link(busy, "https://example.com/spring").await;
    app.link(quiet, "https://example.com/menu").await;
    app.link("old-event", "https://example.com/old").await;
    app.link("gone", "https://example.com/gone").await;
    app.wait_for_status(&format!("/{busy}"), 302).await;
    for n in 0..6 {
        scan(&app, busy, n).await;
    }
    let link_page = |key: &str| console(&format!("/link?key={key}"));
    b.reload_until(&link_page(busy), r#"#scans dd[data-scans="6"]"#);
    let all = 6 + scans_of_a_year(&log, busy);
    b.reload_until(
        &console(&format!("/link?key={busy}&days=365")),
        &format!(r#"#scans dd[data-scans="{all}"]"#),
    );
    // Disabled with an expiry, through the console's forms.
    b.get(&link_page("old-event"));
    b.fill("#expires", "30d");
    b.click("form#edit-expiry button[type=submit]");
    b.wait("#clear-expiry");
    b.click("form#edit-state button[type=submit]");
    b.wait(r#"#state[data-state="inactive"]"#);
    // Deleted: its page is the tombstone's.
    b.get(&link_page("gone"));
    b.click("#confirm-delete");
    b.click("form#delete-link button[type=submit]");
    b.wait("#deleted");
    // A print run, made through the form.
    b.get(&console("/sheet"));
    b.fill("#count", "3");
    b.click("form#sheet button[type=submit]");
    b.wait("section#batch");
    let print_run = b.current_url();

    for screen in screens {
        b.screen(screen);
        let pages = [
            (
                "links",
                console("/links"),
                format!(r#"tr[data-key="{busy}"]"#),
            ),
            (
                "links-newest-inactive",
                console("/links?sort=created&state=inactive"),
                r#"tr[data-key="old-event"]"#.to_owned(),
            ),
            (
                "links-no-match",
                console("/links?q=no-such-thing&by=url"),
                "#empty".to_owned(),
            ),
            (
                "link-scans-breakdowns",
                link_page(busy),
                r#"#breakdowns[data-available="true"] #heat-map"#.to_owned(),
            ),
            (
                "link-a-year",
                console(&format!("/link?key={busy}&days=365")),
                "svg.chart".to_owned(),
            ),
            ("link-no-scans", link_page(quiet), "#scans".to_owned()),
            (
                "link-inactive-expiring",
                link_page("old-event"),
                "#clear-expiry".to_owned(),
            ),
            ("link-deleted", link_page("gone"), "#deleted".to_owned()),
            (
                "link-unknown",
                link_page("no-such-key"),
                "#problem".to_owned(),
            ),
            ("sheet", console("/sheet"), "form#sheet".to_owned()),
            ("sheet-run", print_run.clone(), "form#run-pdf".to_owned()),
            (
                "dashboard",
                console("/dashboard"),
                format!(r#"tr[data-key="{busy}"]"#),
            ),
            (
                "dashboard-a-week",
                console("/dashboard?days=7"),
                format!(r#"tr[data-key="{busy}"]"#),
            ),
            (
                "dashboard-bad-period",
                console("/dashboard?days=5"),
                "#problem".to_owned(),
            ),
        ];
        for (name, url, shown) in &pages {
            b.get(url);
            b.wait(shown);
            found.check(&mut b, screen, name);
        }

        // Every form refused: shown again as typed, the field marked.
        b.get(&console("/links"));
        b.fill("#new-url", "not a url");
        b.click("form#create button[type=submit]");
        b.wait("#new-url-problem");
        found.check(&mut b, screen, "links-refused-create");
        b.get(&link_page(busy));
        b.fill("#url", "ftp://example.com/x");
        b.click("form#edit-destination button[type=submit]");
        b.wait("#url-problem");
        found.check(&mut b, screen, "link-refused-destination");
        b.get(&link_page(busy));
        b.fill("#label-pdf-skip", "99");
        b.click("form#label-pdf button[type=submit]");
        b.wait("#label-pdf-skip-problem");
        found.check(&mut b, screen, "link-refused-pdf");
        b.get(&console("/sheet"));
        b.fill("#count", "0");
        submit_unchecked(&mut b, "form#sheet");
        b.wait("#count-problem");
        found.check(&mut b, screen, "sheet-refused-count");
        b.get(&print_run);
        b.fill("#run-pdf-skip", "99");
        b.click("form#run-pdf button[type=submit]");
        b.wait("#run-pdf-skip-problem");
        found.check(&mut b, screen, "sheet-refused-pdf");
        // The list's bulk actions: refused with no row ticked, the delete
        // confirmation (not confirmed), and a report (enabling an active
        // link changes nothing).
        b.get(&console("/links"));
        b.wait("form#bulk");
        b.click("#bulk-state button[value=disable]");
        b.wait("form#bulk [role=alert]");
        found.check(&mut b, screen, "bulk-refused-nothing-ticked");
        b.get(&console("/links"));
        b.wait("form#bulk");
        b.click(&format!("#pick-{quiet}"));
        b.click("#bulk-delete button[value=delete]");
        b.wait("form#confirm-delete");
        found.check(&mut b, screen, "bulk-confirm-delete");
        b.get(&console("/links"));
        b.wait("form#bulk");
        b.click(&format!("#pick-{quiet}"));
        b.click("#bulk-state button[value=enable]");
        b.wait("table#bulk-report");
        found.check(&mut b, screen, "bulk-report");
        // What a phone's browser shows for a tag that is not active: the
        // public listener's dead-tag page (issue 33), not the console's.
        b.get(&app.url("/no-such-tag"));
        b.wait("h1");
        found.check(&mut b, screen, "dead-tag-page");
        // Issue 35 (i35-users): one's account and the users page, an
        // invitation's link shown once, and the invitation page itself.
        b.get(&console("/account"));
        b.wait("table#sessions");
        found.check(&mut b, screen, "account");
        b.get(&console("/users"));
        b.wait("form#invite-user");
        found.check(&mut b, screen, "users");
        let invited = format!("a11y-{}", screen.width);
        b.fill("#invite-name", &invited);
        submit_unchecked(&mut b, "form#invite-user");
        b.wait("#invitation-link");
        found.check(&mut b, screen, "users-invitation-link");
        let invitation = b.script(
            "return document.querySelector('#invitation-link').textContent;",
            json!([]),
        );
        b.get(invitation.as_str().unwrap_or_default());
        b.wait("form#invite");
        found.check(&mut b, screen, "invitation");
        // Issue 35: the audit log, with the invitations and logins above.
        b.get(&console("/audit"));
        b.wait("table#audit");
        found.check(&mut b, screen, "audit");
        // Back on the console's origin: what follows fetches from its pages.
        b.get(&console("/links"));
        b.wait("form#bulk");
    }

    // What is not a page is plain text, with nothing of the console's to
    // check: an unknown console path, a download of an unknown link.
    for path in ["/no-such-page", "/link/download?key=no-such-key"] {
        let (status, kind, _) = b.fetch(&console(path));
        assert!((400..500).contains(&status), "{path}: {status}");
        assert!(kind.starts_with("text/plain"), "{path}: {kind}");
    }

    // Logged out again: the login page, a wrong password, the spent setup link.
    b.click("form#logout button[type=submit]");
    b.wait("form#login");
    for screen in screens {
        b.screen(screen);
        b.get(&console("/login"));
        b.wait("form#login");
        found.check(&mut b, screen, "login");
        b.fill("#password", "not-the-password");
        b.click("form#login button[type=submit]");
        b.wait("#problem");
        found.check(&mut b, screen, "login-refused");
        b.get(&setup);
        b.wait("#problem");
        found.check(&mut b, screen, "setup-spent");
    }

    drop(b);
    found.assert_none(started.elapsed());
}

/// The first Tab on a page reaches a link past the header's navigation,
/// shown on the screen while it has the focus; Enter follows it, so the
/// next Tab is inside the page's content (the first thing there, which is
/// never what the test looks for). Returns the presses (3).
fn skip_to_content(b: &mut Browser, page: &str) -> usize {
    b.press(&["TAB"]);
    let f = b.focused();
    assert_eq!(f["href"], "#main", "the first Tab on {page} reached {f}");
    let (width, height, top) = (
        f["rect"]["width"].as_f64().unwrap_or(0.0),
        f["rect"]["height"].as_f64().unwrap_or(0.0),
        f["rect"]["top"].as_f64().unwrap_or(-1.0),
    );
    assert!(
        width > 40.0 && height > 20.0 && top >= 0.0,
        "the skip link on {page} is not seen while focused: {f}"
    );
    let name = page.replace(|c: char| !c.is_ascii_alphanumeric(), "-");
    b.screenshot(&browser::screenshots().join(format!("a11y-skip-link-{name}.png")));
    b.press(&["ENTER"]);
    b.press(&["TAB"]);
    let inside = b.script(
        "return document.querySelector('main').contains(document.activeElement);",
        json!([]),
    );
    assert_eq!(
        inside,
        json!(true),
        "after the skip link on {page}: {}",
        b.focused()
    );
    3
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_edits_a_link_with_the_keyboard_alone() {
    let (app, _log) = support::spawn_console_with_scan_index(PASSWORD).await;
    let console = |path: &str| format!("http://{}/console{path}", app.admin);
    let (key, old, new) = (
        "spring-poster",
        "https://example.com/spring",
        "https://example.com/summer",
    );
    app.link("menu", "https://example.com/menu").await;
    app.link(key, old).await;
    app.wait_for_status(&format!("/{key}"), 302).await;
    let mut b = Browser::start();
    b.screen(LAPTOP);

    // Log in: Tab to the password, type it, Enter.
    b.get(&console("/links"));
    b.wait("form#login");
    let mut presses = tab_to(&mut b, "the password", 10, |f| f["id"] == "password");
    b.type_focused(PASSWORD);
    b.press(&["ENTER"]);
    b.wait("form#create");
    presses += 1;

    // Open the link: past the navigation, then Tab to its row's link, Enter.
    presses += skip_to_content(&mut b, "the list");
    let href = format!("/console/link?key={key}");
    presses += tab_to(&mut b, "the link in the list", 40, |f| {
        f["href"].as_str() == Some(href.as_str())
    });
    b.press(&["ENTER"]);
    b.wait(&format!(r#"h1#key[data-key="{key}"]"#));
    presses += 1;

    // Change the destination: past the navigation, Tab to the field,
    // replace what it holds, Enter.
    presses += skip_to_content(&mut b, "the link's page");
    // Issue 34: the section links name the rules too.
    presses += tab_to(&mut b, "the destination field", 12, |f| f["id"] == "url");
    b.press(&["CONTROL+a"]);
    b.type_focused(new);
    b.press(&["ENTER"]);
    b.wait(&format!(r#"#destination[data-url="{new}"]"#));
    presses += 3;
    eprintln!("logged in, opened {key} and changed its destination in {presses} key presses");

    // Scans follow, as after a click.
    eventually(Duration::from_secs(1), || async {
        let res = app
            .client
            .get(app.url(&format!("/{key}")))
            .header("user-agent", "curl/8")
            .send()
            .await
            .expect("scan");
        res.status() == StatusCode::FOUND && header(&res, "location") == Some(new)
    })
    .await;
    assert_eq!(
        b.text("#short-url"),
        format!("{PUBLIC_URL}/{key}"),
        "the link's page"
    );

    // Disable it: past the navigation, Tab to the button, Enter; scans
    // then find nothing.
    let mut presses = skip_to_content(&mut b, "the link's page again");
    presses += tab_to(&mut b, "the Disable button", 20, |f| {
        f["tag"] == "button" && f["text"] == "Disable"
    });
    b.press(&["ENTER"]);
    b.wait(r#"#state[data-state="inactive"]"#);
    eprintln!("disabled it in {} key presses", presses + 1);
    eventually(Duration::from_secs(1), || async {
        app.get(&format!("/{key}")).await.status() == StatusCode::NOT_FOUND
    })
    .await;
}

/// Issue 36: a console over two domains, each page with its domain
/// switcher in the header: the list, a link page and the dashboard at
/// both screens, then a domain picked with the keyboard alone (Tab to the
/// switcher, arrow to the other domain, Enter), which shows the same page
/// on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_domain_switcher_passes_axe_core_and_works_by_keyboard() {
    use qrtag::settings::domains::{DomainSettings, ServedDomains};
    use qrtag::store::options::StoreSettings;
    use qrtag::values::host::Host;
    use qrtag::values::public_url::PublicUrl;
    const B: &str = "qr.brand-b.ie";
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    support::init_db(&db);
    support::console::set_password(&db, PASSWORD);
    let mut settings = test_settings(dir.path());
    settings.console = Some(ConsoleSettings::default());
    settings.domains = ServedDomains {
        default_host: Some(Host::parse("0x1f.ie").expect("host")),
        others: vec![DomainSettings {
            host: Host::parse(B).expect("host"),
            public_url: PublicUrl::parse("https://qr.brand-b.ie").expect("url"),
            store: StoreSettings::Sqlite {
                path: dir.path().join("b.db"),
            },
            access_log: dir.path().join("b.log"),
            snapshot_file: None,
            dead_tag: Default::default(),
            root: None,
        }],
        unknown_host: Default::default(),
    };
    let app = spawn_with(settings, dir).await;
    app.link("poster", "https://example.com/poster").await;
    let console = |path: &str| format!("http://{}/console{path}", app.admin);
    let screens = [LAPTOP, PHONE];
    let mut found = Findings::default();
    let mut b = Browser::start();
    b.get(&console("/login"));
    b.wait("form#login");
    b.fill("#password", PASSWORD);
    b.click("form#login button[type=submit]");
    b.wait("form#create");
    for screen in screens {
        b.screen(screen);
        for (name, path) in [
            ("switcher-links", "/links"),
            ("switcher-link", "/link?key=poster"),
            ("switcher-dashboard", "/dashboard"),
        ] {
            b.get(&console(path));
            b.wait(r#"select#domain-select[data-current="0x1f.ie"]"#);
            found.check(&mut b, screen, name);
        }
    }
    b.screen(LAPTOP);
    b.get(&console("/links?q=poster"));
    b.wait("form#domain-switcher");
    // Past the skip link, the brand and the navigation to the switcher.
    let mut presses = 0;
    loop {
        b.press(&["TAB"]);
        presses += 1;
        if b.focused()["id"] == "domain-select" {
            break;
        }
        assert!(presses < 12, "the switcher is not reached by Tab");
    }
    b.press(&["ARROW_DOWN"]);
    b.press(&["TAB"]);
    b.press(&["ENTER"]);
    b.wait(&format!(r#"select#domain-select[data-current="{B}"]"#));
    let url = b.current_url();
    assert!(url.contains("/console/links?"), "{url}");
    assert!(
        url.contains("q=poster"),
        "the same page, its search kept: {url}"
    );
    found.check(&mut b, LAPTOP, "switcher-switched");
    drop(b);
    found.assert_none(started.elapsed());
}

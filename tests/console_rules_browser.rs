//! Issue 34: the link page's rules in headless Chromium against the real
//! application: a rule added with the keyboard alone (Tab, typing, Space
//! on the tick boxes, Enter), and axe-core over a link page with rules, a
//! refused rule and a tester's answer at a laptop's and a phone's width,
//! with no serious or critical violation (`tests/support/a11y.rs`), each
//! page also fitting the screen as `tests/console_browser.rs` asks
//! (`fits.js`: no sideways scrolling, tap targets of 40 px, text of 14 px).

mod support;

#[path = "support/a11y.rs"]
mod a11y;
#[path = "support/browser.rs"]
mod browser;

use a11y::{Findings, LAPTOP, tab_to};
use browser::{Browser, PHONE, Screen};
use qrtag::store::LinkStore;
use qrtag::values::link_key::LinkKey;
use serde_json::{Value, json};
use support::{TestApp, spawn_console_with_scan_index};

const PASSWORD: &str = "poster-printing-42";

/// `fits.js`'s problems with the page shown, as `tests/console_browser.rs`
/// checks every other page: 40 px tap targets, 14 px text.
fn fit_problems(b: &mut Browser, width: u32, page: &str) -> Vec<String> {
    let problems = b.script(
        include_str!("console/browser/fits.js"),
        json!([width, 40.0, 14.0]),
    );
    problems
        .as_array()
        .expect("a list of problems")
        .iter()
        .map(|p| format!("{page} at {width} px: {}", p.as_str().unwrap_or_default()))
        .collect()
}

/// The page shown judged as every console page is: axe-core's verdict kept
/// in `found`, `fits.js`'s problems added to `unfit`.
fn judge(
    b: &mut Browser,
    screen: Screen,
    page: &str,
    found: &mut Findings,
    unfit: &mut Vec<String>,
) {
    found.check(b, screen, page);
    unfit.extend(fit_problems(b, screen.width, page));
}

fn set_value(b: &mut Browser, css: &str, value: &str) {
    b.script(
        "document.querySelector(arguments[0]).value = arguments[1];",
        json!([css, value]),
    );
}

fn log_in(b: &mut Browser, app: &TestApp) {
    b.get(&format!("http://{}/console/login", app.admin));
    b.wait("form#login");
    b.fill("#password", PASSWORD);
    b.click("form#login button[type=submit]");
    b.wait("form#create");
}

async fn rules(app: &TestApp, key: &str) -> Value {
    let stored = app
        .store()
        .get(&LinkKey::parse(key).expect("key"))
        .await
        .expect("read")
        .expect("exists");
    stored.doc.get("rules").cloned().unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_adds_a_rule_with_the_keyboard_alone() {
    let (app, _log) = spawn_console_with_scan_index(PASSWORD).await;
    app.link("menu", "https://example.com/dinner").await;
    let mut b = Browser::start();
    b.screen(LAPTOP);
    log_in(&mut b, &app);
    b.get(&format!("http://{}/console/link?key=menu", app.admin));
    b.wait("#no-rules");

    // The page's own "Rules" link, Enter: the next Tab is in the section.
    let mut presses = tab_to(&mut b, "the Rules link", 40, |f| {
        f["href"].as_str().is_some_and(|h| h.ends_with("#rules"))
    });
    b.press(&["ENTER"]);
    presses += 1;
    presses += tab_to(&mut b, "the rule's destination", 10, |f| {
        f["id"] == "rule-url"
    });
    b.type_focused("https://apps.apple.com/app/id1");
    presses += 1;
    presses += tab_to(&mut b, "the iOS box", 3, |f| f["id"] == "rule-os-ios");
    b.press(&["SPACE"]);
    presses += tab_to(&mut b, "the iPadOS box", 3, |f| f["id"] == "rule-os-ipados");
    b.press(&["SPACE"]);
    presses += 2;
    presses += tab_to(&mut b, "the Add rule button", 40, |f| {
        f["tag"] == "button" && f["text"] == "Add rule"
    });
    b.press(&["ENTER"]);
    presses += 1;
    b.wait(r#"li.rule[data-index="1"][data-url="https://apps.apple.com/app/id1"]"#);
    eprintln!("added a rule in {presses} key presses");
    assert_eq!(
        rules(&app, "menu").await,
        json!([{"url": "https://apps.apple.com/app/id1", "os": ["ios", "ipados"]}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_page_with_rules_passes_axe_core_on_a_laptop_and_a_phone() {
    let started = std::time::Instant::now();
    let (app, _log) = spawn_console_with_scan_index(PASSWORD).await;
    app.link("menu", "https://example.com/dinner").await;
    let mut b = Browser::start();
    log_in(&mut b, &app);
    let page = format!("http://{}/console/link?key=menu", app.admin);
    // Two rules through the form: one on devices, one on the time.
    b.get(&page);
    b.wait("#add-rule");
    b.fill("#rule-url", "https://apps.apple.com/app/id1");
    b.click("#rule-os-ios");
    b.click("#add-rule button[type=submit]");
    b.wait(r#"li.rule[data-index="1"]"#);
    b.fill("#rule-url", "https://example.com/lunch");
    b.click("#rule-days-mon");
    // A time field types as the browser's locale writes times: set whole.
    set_value(&mut b, "#rule-hours-start", "11:00");
    set_value(&mut b, "#rule-hours-end", "15:00");
    b.fill("#rule-tz", "Europe/Dublin");
    b.click("#add-rule button[type=submit]");
    b.wait(r#"li.rule[data-index="2"]"#);
    assert_eq!(rules(&app, "menu").await.as_array().map(Vec::len), Some(2));

    let mut found = Findings::default();
    let mut unfit = Vec::new();
    for screen in [LAPTOP, PHONE] {
        b.screen(screen);
        b.get(&page);
        b.wait("#rules-now");
        judge(&mut b, screen, "link-with-rules", &mut found, &mut unfit);
        // A rule refused: the message beside its fields (days without a zone).
        b.fill("#rule-url", "https://example.com/x");
        b.click("#rule-days-sat");
        b.click("#add-rule button[type=submit]");
        b.wait("#rule-tz-problem");
        judge(&mut b, screen, "link-rule-refused", &mut found, &mut unfit);
        // The tester's answer, and a question it refuses.
        b.get(&format!(
            "http://{}/console/link/try?key=menu&device=android-phone&at=2026-11-30T12%3A00",
            app.admin
        ));
        b.wait("#try-answer");
        judge(&mut b, screen, "link-rule-tested", &mut found, &mut unfit);
        b.get(&format!(
            "http://{}/console/link/try?key=menu&device=desktop&bucket=200",
            app.admin
        ));
        b.wait("#try-bucket-problem");
        judge(
            &mut b,
            screen,
            "link-rule-test-refused",
            &mut found,
            &mut unfit,
        );
    }
    drop(b);
    assert!(unfit.is_empty(), "{}", unfit.join("\n"));
    found.assert_none(started.elapsed());
}

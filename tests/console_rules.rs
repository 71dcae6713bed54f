//! Issue 34: a link's rules on the console's link page, over HTTP against
//! the real application: added through the form (every refusal beside its
//! field, nothing saved), moved and removed, recorded as the console's
//! edits; and the "what would this scan get" tester.

mod support;

use qrtag::console::ConsoleSettings;
use qrtag::console::password;
use qrtag::store::LinkStore;
use qrtag::values::link_key::LinkKey;
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{TestApp, header, spawn_with, test_settings};

const PASSWORD: &str = "poster-printing-42";

struct Console {
    app: TestApp,
    http: reqwest::Client,
}

impl Console {
    async fn start(geoip: bool) -> Console {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut settings = test_settings(dir.path());
        settings.console = Some(ConsoleSettings::default());
        if geoip {
            // `serve --geoip-db`, which the console asks before taking a
            // country rule.
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/geoip/test.mmdb");
            let db = qrtag::stats::dimensions::place::GeoDb::open(&path).expect("test MMDB");
            settings.geoip = Some(qrtag::settings::GeoIp(db));
        }
        let app = spawn_with(settings, dir).await;
        password::set(&app.store(), PASSWORD)
            .await
            .expect("password set");
        let http = reqwest::Client::builder()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let c = Console { app, http };
        let res = c.post("/login", "/login", &[("password", PASSWORD)]).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "logged in");
        c
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}/console{path}", self.app.admin)
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.http.get(self.url(path)).send().await.expect("GET")
    }

    async fn page(&self, path: &str) -> String {
        let res = self.get(path).await;
        assert_eq!(res.status(), StatusCode::OK, "GET {path}");
        res.text().await.expect("body")
    }

    /// Posts a form with the token of the page it is on.
    async fn post(&self, from: &str, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        let page = self.page(from).await;
        let at = page.find(r#"name="csrf" value=""#).expect("a CSRF field") + 19;
        let token = page[at..].split('"').next().expect("token").to_owned();
        let mut fields = vec![("csrf", token.as_str())];
        fields.extend_from_slice(form);
        self.http
            .post(self.url(path))
            .form(&fields)
            .send()
            .await
            .expect("POST")
    }

    async fn stored(&self, key: &str) -> qrtag::link::Document {
        self.app
            .store()
            .get(&LinkKey::parse(key).expect("key"))
            .await
            .expect("read")
            .expect("exists")
            .doc
    }

    async fn rules(&self, key: &str) -> Value {
        self.stored(key)
            .await
            .get("rules")
            .cloned()
            .unwrap_or(Value::Null)
    }
}

const PAGE: &str = "/link?key=menu";

/// Adds a rule through the form; the answer.
async fn add(c: &Console, fields: &[(&str, &str)]) -> reqwest::Response {
    let mut form = vec![("key", "menu")];
    form.extend_from_slice(fields);
    c.post(PAGE, "/link/rules/add", &form).await
}

/// The first rule's Down button pressed on a page that showed the rule
/// as `was`.
async fn move_first_down(c: &Console, was: &str) -> reqwest::Response {
    let form = [
        ("key", "menu"),
        ("index", "1"),
        ("was", was),
        ("to", "down"),
    ];
    c.post(PAGE, "/link/rules/move", &form).await
}

#[tokio::test]
async fn rules_are_added_refused_moved_and_removed_on_the_link_page() {
    let c = Console::start(false).await;
    c.app.link("menu", "https://example.com/dinner").await;
    let page = c.page(PAGE).await;
    assert!(page.contains(r#"id="rules""#), "a rules section: {page}");
    assert!(page.contains(r#"id="no-rules""#), "{page}");
    assert!(page.contains(r#"id="add-rule""#), "{page}");
    assert!(
        !page.contains(r#"id="rules-now""#),
        "no time rules, no line"
    );
    let before = c.stored("menu").await;

    // Each refusal: a 400, the page again with the message beside the
    // field the core named, what was typed kept, nothing saved.
    let own = "https://0x1f.ie/menu/x";
    for (fields, id, says) in [
        (
            vec![("url", "https://example.com/a")],
            "add-rule-problem",
            "at least one condition",
        ),
        (
            vec![("url", "/a"), ("os", "ios")],
            "rule-url-problem",
            "absolute",
        ),
        (
            vec![("url", own), ("os", "ios")],
            "rule-url-problem",
            "own short URL",
        ),
        (
            vec![("url", "https://e.com/"), ("country", "IE")],
            "rule-country-problem",
            "--geoip-db",
        ),
        (
            vec![("url", "https://e.com/"), ("lang", "en_GB!")],
            "rule-lang-problem",
            "language tag",
        ),
        (
            vec![
                ("url", "https://e.com/"),
                ("hours_start", "11:00"),
                ("hours_end", "11:00"),
                ("tz", "Europe/Dublin"),
            ],
            "rule-hours-problem",
            "empty",
        ),
        (
            vec![("url", "https://e.com/"), ("days", "mon")],
            "rule-tz-problem",
            "tz",
        ),
        (
            vec![
                ("url", "https://e.com/"),
                ("split_from", "50"),
                ("split_to", "150"),
            ],
            "rule-split-problem",
            "percentages",
        ),
        (
            vec![
                ("url", "https://e.com/"),
                ("from", "2026-12-02T09:00"),
                ("until", "2026-12-01T09:00"),
            ],
            "rule-until-problem",
            "after",
        ),
    ] {
        let res = add(&c, &fields).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{fields:?}");
        let page = res.text().await.expect("body");
        let at = page
            .find(&format!(r#"id="{id}""#))
            .unwrap_or_else(|| panic!("{fields:?}: no #{id} in {page}"));
        let message = &page[at..at + page[at..].find("</p>").expect("end")];
        assert!(message.contains(says), "{fields:?}: {message}");
        let url = fields[0].1;
        assert!(
            page.contains(&format!(
                r#"id="rule-url" type="url" name="url" value="{url}""#
            )),
            "what was typed is kept: {page}"
        );
    }
    assert_eq!(c.stored("menu").await, before, "nothing was saved");

    let res = add(
        &c,
        &[
            ("url", "https://apps.apple.com/app/id1"),
            ("os", "ios"),
            ("os", "ipados"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        header(&res, "location"),
        Some("/console/link?key=menu#rules")
    );
    let res = add(
        &c,
        &[
            ("url", "https://example.com/lunch"),
            ("days", "mon"),
            ("days", "fri"),
            ("hours_start", "11:00"),
            ("hours_end", "15:00"),
            ("tz", "Europe/Dublin"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let ios = json!({"url": "https://apps.apple.com/app/id1", "os": ["ios", "ipados"]});
    let lunch = json!({"url": "https://example.com/lunch", "days": ["mon", "fri"],
        "hours": ["11:00", "15:00"], "tz": "Europe/Dublin"});
    assert_eq!(c.rules("menu").await, json!([ios, lunch]));
    let doc = c.stored("menu").await;
    assert_eq!(doc.get("changed_via"), Some(&json!("console")));
    assert_eq!(doc.get("url"), Some(&json!("https://example.com/dinner")));

    let page = c.page(PAGE).await;
    assert_eq!(page.matches(r#"<li class="rule""#).count(), 2, "{page}");
    assert!(
        page.contains("os: ios, ipados"),
        "conditions in words: {page}"
    );
    assert!(
        page.contains("days: mon, fri; hours: 11:00–15:00; tz: Europe/Dublin"),
        "{page}"
    );
    assert!(
        page.contains(r#"id="rules-now""#),
        "time rules: the now line: {page}"
    );

    // Moved down, with the rule as the page showed it.
    let was = ios.to_string();
    let res = move_first_down(&c, &was).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(c.rules("menu").await, json!([lunch, ios]));
    // The same button again, from a page shown before the move: refused.
    let res = move_first_down(&c, &was).await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let page = res.text().await.expect("body");
    assert!(page.contains(r#"id="rules-problem""#), "{page}");
    assert_eq!(
        c.rules("menu").await,
        json!([lunch, ios]),
        "nothing changed"
    );
    // Past the end: refused too.
    let res = c
        .post(
            PAGE,
            "/link/rules/move",
            &[
                ("key", "menu"),
                ("index", "2"),
                ("was", &was),
                ("to", "down"),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);

    let res = c
        .post(
            PAGE,
            "/link/rules/remove",
            &[("key", "menu"), ("index", "1"), ("was", &lunch.to_string())],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(c.rules("menu").await, json!([ios]));
    let res = c
        .post(
            PAGE,
            "/link/rules/remove",
            &[("key", "menu"), ("index", "1"), ("was", &was)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(
        !c.stored("menu").await.contains_key("rules"),
        "no rules, no field"
    );
    assert!(c.page(PAGE).await.contains(r#"id="no-rules""#));

    // Without the CSRF token: refused before anything is read.
    let res = c
        .http
        .post(c.url("/link/rules/add"))
        .form(&[("key", "menu"), ("url", "https://e.com/"), ("os", "ios")])
        .send()
        .await
        .expect("POST");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(!c.stored("menu").await.contains_key("rules"));
}

/// The attribute `name` of the element with `id` on a page.
fn attr(page: &str, id: &str, name: &str) -> Option<String> {
    let at = page.find(&format!(r#"id="{id}""#))?;
    let tag = &page[page[..at].rfind('<')?..at + page[at..].find('>')?];
    let from = tag.find(&format!(r#" {name}=""#))? + name.len() + 3;
    Some(tag[from..from + tag[from..].find('"')?].to_owned())
}

/// Asserts each attribute `(name, value)` of the element with `id` on
/// `page` (the tester's answer, its next change), the page in the message.
fn assert_attrs(page: &str, id: &str, want: &[(&str, &str)]) {
    for (name, value) in want {
        assert_eq!(
            attr(page, id, name).as_deref(),
            Some(*value),
            "#{id} {name}: {page}"
        );
    }
}

#[tokio::test]
async fn the_tester_answers_which_rule_where_and_what_changes_next() {
    let c = Console::start(true).await;
    c.app.link("menu", "https://example.com/dinner").await;
    c.app.link("apps", "https://example.com/apps").await;
    for fields in [
        vec![("url", "https://0x1f.ie/apps"), ("os", "ios")],
        vec![
            ("url", "https://example.com/lunch"),
            ("hours_start", "11:00"),
            ("hours_end", "15:00"),
            ("tz", "Europe/Dublin"),
        ],
        // With the server's GeoIP database, a country rule is taken.
        vec![("url", "https://example.com/ie"), ("country", "ie")],
    ] {
        let res = add(&c, &fields).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{fields:?}");
    }
    assert_eq!(
        c.rules("menu").await[2],
        json!({"url": "https://example.com/ie", "country": ["IE"]})
    );
    c.app.wait_for_status("/apps", 302).await;

    let c = &c;
    let tried = |query: &str| {
        let path = format!("/link/try?key=menu&{query}");
        async move { c.page(&path).await }
    };
    // An iPhone: rule 1, followed through the link it points at, as the
    // server follows an internal redirect.
    let page = tried("device=iphone").await;
    assert_attrs(
        &page,
        "try-answer",
        &[
            ("data-rule", "1"),
            ("data-location", "https://example.com/apps"),
        ],
    );
    assert!(
        page.contains("Nothing changes with time for this scan"),
        "{page}"
    );

    // A desktop at 14:30 in Dublin (UTC in November, the console's zone):
    // the lunch rule, until 15:00.
    let page = tried("device=desktop&at=2026-11-30T14%3A30").await;
    assert_attrs(&page, "try-answer", &[("data-rule", "2")]);
    assert_attrs(
        &page,
        "try-next",
        &[
            ("data-next-at", "2026-11-30T15:00:00+00:00"),
            ("data-next-rule", "url"),
        ],
    );
    let page = tried("device=desktop&country=IE&at=2026-11-30T16%3A00").await;
    assert_attrs(&page, "try-answer", &[("data-rule", "3")]);
    // A User-Agent of one's own wins over the preset.
    let page = tried("device=iphone&ua=curl%2F8&at=2026-11-30T16%3A00").await;
    assert_attrs(
        &page,
        "try-answer",
        &[
            ("data-rule", "url"),
            ("data-location", "https://example.com/dinner"),
        ],
    );

    // Bad input: a 400, the message beside the field.
    for (query, id) in [
        ("device=desktop&bucket=100", "try-bucket-problem"),
        ("device=desktop&at=noon", "try-at-problem"),
        ("device=desktop&country=Ireland", "try-country-problem"),
    ] {
        let res = c.get(&format!("/link/try?key=menu&{query}")).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{query}");
        let page = res.text().await.expect("body");
        assert!(page.contains(&format!(r#"id="{id}""#)), "{query}: {page}");
    }
    let res = c.get("/link/try?key=menu").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);

    // The line near the top: what a scan gets now, and what next.
    let page = c.page(PAGE).await;
    assert!(attr(&page, "rules-now", "data-rule").is_some(), "{page}");
    assert!(attr(&page, "rules-now", "data-next-at").is_some(), "{page}");
}

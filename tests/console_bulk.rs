//! Bulk actions on the console's list (issue 33) over HTTP against the
//! real application on port 0: rows ticked in the list's one form (or "all
//! matching" its filter), one POST with the CSRF token, a report per link;
//! the effects checked through the public listener, the store and the
//! tools that read a PDF the way a printer's customer would.

#[path = "support/pdf_decode.rs"]
mod pdf_decode;
mod support;

use std::time::Duration;

use qrtag::console::ConsoleSettings;
use qrtag::console::password;
use qrtag::store::LinkStore;
use qrtag::values::link_key::LinkKey;
use reqwest::StatusCode;
use support::console::{browser, csrf, get_page, log_in, post_form};
use support::{PUBLIC_URL, TestApp, eventually, header, qrtag_cmd, spawn_with, test_settings};

const PASSWORD: &str = "poster-printing-42";
/// The promise: a console edit reaches scans within a second.
const PROPAGATION: Duration = Duration::from_secs(1);

struct Console {
    app: TestApp,
    http: reqwest::Client,
}

async fn console() -> Console {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.console = Some(ConsoleSettings::default());
    let app = spawn_with(settings, dir).await;
    password::set(&app.store(), PASSWORD)
        .await
        .expect("password set");
    let c = Console {
        app,
        http: browser(),
    };
    log_in(&c.http, &c.url(""), PASSWORD).await;
    c
}

/// The report's rows: (key, outcome).
fn report(html: &str) -> Vec<(String, String)> {
    html.split(r#"<tr data-key=""#)
        .skip(1)
        .map(|r| {
            let key = &r[..r.find('"').expect("end of key")];
            let at = r.find(r#"data-outcome=""#).expect("an outcome") + 14;
            let outcome = &r[at..at + r[at..].find('"').expect("end")];
            (key.to_owned(), outcome.to_owned())
        })
        .collect()
}

fn outcomes(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, o)| ((*k).to_owned(), (*o).to_owned()))
        .collect()
}

impl Console {
    fn url(&self, path: &str) -> String {
        format!("http://{}/console{path}", self.app.admin)
    }

    async fn page(&self, path: &str) -> String {
        get_page(&self.http, &self.url(path)).await
    }

    async fn post_raw(&self, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        post_form(&self.http, &self.url(path), form).await
    }

    /// The list's bulk form sent with `fields`, its token from the list.
    async fn bulk(&self, fields: &[(&str, &str)]) -> reqwest::Response {
        let token = csrf(&self.page("/links").await);
        let mut all = vec![("csrf", token.as_str())];
        all.extend_from_slice(fields);
        self.post_raw("/links/bulk", &all).await
    }

    async fn bulk_text(&self, fields: &[(&str, &str)], want: StatusCode) -> String {
        let res = self.bulk(fields).await;
        assert_eq!(res.status(), want, "{fields:?}");
        res.text().await.expect("body")
    }

    async fn location(&self, key: &str) -> (u16, Option<String>) {
        let res = self.app.get(&format!("/{key}")).await;
        (
            res.status().as_u16(),
            header(&res, "location").map(str::to_owned),
        )
    }

    async fn wait_location(&self, key: &str, want: (u16, Option<&str>)) {
        let want = (want.0, want.1.map(str::to_owned));
        eventually(PROPAGATION, || async { self.location(key).await == want }).await;
    }

    async fn doc(&self, key: &str) -> qrtag::link::Document {
        let key = LinkKey::parse(key).expect("key");
        self.app
            .store()
            .get(&key)
            .await
            .expect("get")
            .expect("stored")
            .doc
    }

    async fn revs(&self, keys: &[&str]) -> Vec<String> {
        let store = self.app.store();
        let mut revs = Vec::new();
        for k in keys {
            let key = LinkKey::parse(k).expect("key");
            let stored = store.get(&key).await.expect("get").expect("stored");
            revs.push(stored.rev);
        }
        revs
    }
}

/// Ticked rows: disable, enable (all matching a search), repoint, set and
/// clear expiry, delete behind a second page, download as CSV; each a
/// report per link that tells changed from already so, each effect seen by
/// a scan. The form's mistakes (no row ticked, a deleted key, a bad
/// destination or expiry, no token) change nothing and come back with the
/// message beside the field.
#[tokio::test]
async fn ticked_rows_are_disabled_repointed_expired_deleted_and_downloaded() {
    let c = console().await;
    let keys = ["bus-1", "bus-2", "bus-3", "bus-4", "bus-5", "menu"];
    for k in keys {
        c.app.link(k, &format!("https://example.com/{k}")).await;
    }
    c.app.wait_for_status("/menu", 302).await;
    let list = c.page("/links").await;
    assert!(list.contains(r#"<form id="bulk" method="post""#), "{list}");
    for k in keys {
        assert!(
            list.contains(&format!(r#"name="key" value="{k}""#)),
            "a box for {k}: {list}"
        );
    }
    assert!(list.contains(r#"data-matching="6""#), "all 6: {list}");

    // No row ticked: the list again, the bar says so, nothing written.
    let before = c.revs(&keys).await;
    let html = c
        .bulk_text(&[("action", "disable")], StatusCode::BAD_REQUEST)
        .await;
    assert!(html.contains(r#"id="bulk-problem""#), "{html}");
    assert!(html.contains("No link is ticked"), "{html}");
    // Without the token: refused before anything is read.
    let res = c
        .post_raw("/links/bulk", &[("key", "bus-1"), ("action", "disable")])
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(c.revs(&keys).await, before, "nothing written");

    // Disable two: both done, scans answer 404.
    let html = c
        .bulk_text(
            &[("key", "bus-1"), ("key", "bus-2"), ("action", "disable")],
            StatusCode::OK,
        )
        .await;
    assert_eq!(
        report(&html),
        outcomes(&[("bus-1", "done"), ("bus-2", "done")])
    );
    c.wait_location("bus-1", (404, None)).await;
    c.wait_location("bus-2", (404, None)).await;
    // Again with a third: the first is already so, and is not written.
    let rev = c.revs(&["bus-1"]).await;
    let html = c
        .bulk_text(
            &[("key", "bus-1"), ("key", "bus-3"), ("action", "disable")],
            StatusCode::OK,
        )
        .await;
    assert_eq!(
        report(&html),
        outcomes(&[("bus-1", "unchanged"), ("bus-3", "done")])
    );
    assert_eq!(c.revs(&["bus-1"]).await, rev, "unchanged is not written");
    assert!(c.doc("bus-3").await["changed_at"].is_string(), "stamped");
    // Issue 33: by the console, over the binary's stamp from the setup.
    assert_eq!(c.doc("bus-3").await["changed_via"], "console", "stamped");

    // Enable all that a key search matches: the form carries the query.
    let html = c
        .bulk_text(
            &[
                ("scope", "matching"),
                ("q", "bus-"),
                ("by", "key"),
                ("action", "enable"),
            ],
            StatusCode::OK,
        )
        .await;
    assert_eq!(
        report(&html),
        outcomes(&[
            ("bus-1", "done"),
            ("bus-2", "done"),
            ("bus-3", "done"),
            ("bus-4", "unchanged"),
            ("bus-5", "unchanged"),
        ])
    );
    c.wait_location("bus-1", (302, Some("https://example.com/bus-1")))
        .await;

    // Repoint: a bad destination is marked beside its field, kept as
    // typed, the rows still ticked; then a good one.
    let html = c
        .bulk_text(
            &[
                ("key", "bus-4"),
                ("key", "bus-5"),
                ("action", "repoint"),
                ("url", "javascript:alert(1)"),
            ],
            StatusCode::BAD_REQUEST,
        )
        .await;
    assert!(html.contains(r#"id="bulk-url-problem""#), "{html}");
    assert!(
        html.contains(r#"value="javascript:alert(1)""#),
        "kept: {html}"
    );
    assert!(
        html.contains(r#"id="pick-bus-4" aria-label="Select bus-4" checked"#),
        "still ticked: {html}"
    );
    c.bulk_text(
        &[
            ("key", "bus-4"),
            ("key", "bus-5"),
            ("action", "repoint"),
            ("url", "https://example.com/after"),
        ],
        StatusCode::OK,
    )
    .await;
    c.wait_location("bus-4", (302, Some("https://example.com/after")))
        .await;
    c.wait_location("bus-5", (302, Some("https://example.com/after")))
        .await;

    // Expiry: a past date refused beside the field; a future one set, then
    // cleared.
    let html = c
        .bulk_text(
            &[
                ("key", "bus-1"),
                ("action", "expire"),
                ("expires", "2020-01-01"),
            ],
            StatusCode::BAD_REQUEST,
        )
        .await;
    assert!(html.contains(r#"id="bulk-expires-problem""#), "{html}");
    assert!(c.doc("bus-1").await.get("expires").is_none());
    c.bulk_text(
        &[
            ("key", "bus-1"),
            ("key", "bus-2"),
            ("action", "expire"),
            ("expires", "30d"),
        ],
        StatusCode::OK,
    )
    .await;
    assert!(c.doc("bus-2").await["expires"].is_string(), "set");
    let html = c
        .bulk_text(
            &[("key", "bus-1"), ("key", "bus-3"), ("action", "never")],
            StatusCode::OK,
        )
        .await;
    assert_eq!(
        report(&html),
        outcomes(&[("bus-1", "done"), ("bus-3", "unchanged")])
    );
    assert!(c.doc("bus-1").await.get("expires").is_none(), "cleared");

    // Delete asks first, listing what would go; nothing goes until then.
    let html = c
        .bulk_text(
            &[("key", "menu"), ("key", "bus-5"), ("action", "delete")],
            StatusCode::OK,
        )
        .await;
    assert!(html.contains(r#"id="confirm-delete""#), "{html}");
    assert!(html.contains(r#"<li data-key="menu">"#), "{html}");
    assert!(html.contains(r#"<li data-key="bus-5">"#), "{html}");
    assert_eq!(c.location("menu").await.0, 302, "not yet");
    let token = csrf(&html);
    let res = c
        .post_raw(
            "/links/bulk",
            &[
                ("csrf", &token),
                ("scope", "ticked"),
                ("confirm", "yes"),
                ("key", "menu"),
                ("key", "bus-5"),
                ("action", "delete"),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let html = res.text().await.expect("body");
    assert_eq!(
        report(&html),
        outcomes(&[("menu", "done"), ("bus-5", "done")])
    );
    c.wait_location("menu", (404, None)).await;
    assert!(c.doc("menu").await["deleted_at"].is_string(), "a tombstone");

    // A deleted key among the ticked ones: nothing is done to any.
    let before = c.revs(&["bus-1"]).await;
    let html = c
        .bulk_text(
            &[("key", "bus-1"), ("key", "menu"), ("action", "disable")],
            StatusCode::BAD_REQUEST,
        )
        .await;
    assert!(html.contains(r#"id="bulk-problem""#), "{html}");
    assert!(html.contains("was deleted on"), "{html}");
    assert!(html.contains("Untick menu; nothing was changed."), "{html}");
    assert_eq!(c.revs(&["bus-1"]).await, before, "bus-1 untouched");
    assert_eq!(c.location("bus-1").await.0, 302);

    // CSV: the export's columns, read back by `qrtag import`.
    let res = c
        .bulk(&[("key", "bus-4"), ("key", "bus-1"), ("action", "csv")])
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        header(&res, "content-type"),
        Some("text/csv; charset=utf-8")
    );
    let body = res.text().await.expect("body");
    let lines: Vec<&str> = body.lines().collect();
    assert!(
        lines[0].starts_with("key,url,inactive,expires,notes"),
        "{body}"
    );
    assert_eq!(lines.len(), 3, "{body}");
    assert!(
        lines[1].starts_with("bus-4,https://example.com/after,false,"),
        "{body}"
    );
    assert!(
        lines[2].starts_with("bus-1,https://example.com/bus-1,false,"),
        "{body}"
    );
    let dir = tempfile::tempdir().expect("dir");
    let csv = dir.path().join("links.csv");
    std::fs::write(&csv, &body).expect("write");
    let other = dir.path().join("other.db");
    let out = qrtag_cmd(&other, &["import", csv.to_str().expect("path")]);
    assert!(out.status.success(), "import: {out:?}");
    let out = qrtag_cmd(&other, &["list"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("bus-4\thttps://example.com/after"),
        "{listed}"
    );
}

/// "All matching" is resolved when the form is sent and refused past the
/// cap, with the count said on the list beforehand.
#[tokio::test]
async fn all_matching_says_how_many_and_stops_past_a_thousand() {
    let c = console().await;
    let store = c.app.store();
    let url = qrtag::values::destination::Destination::parse("https://example.com/").expect("url");
    for i in 0..1001 {
        let key = LinkKey::parse(&format!("t{i}")).expect("key");
        qrtag::links::create(
            &store,
            &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
            &url,
            Some(&key),
            false,
        )
        .await
        .expect("create");
    }
    c.app.wait_for_status("/t1000", 302).await;
    let list = c.page("/links").await;
    assert!(list.contains(r#"data-matching="more""#), "{list}");
    assert!(list.contains("more than 1000"), "{list}");
    let newest = c.page("/links?sort=created&state=active").await;
    assert!(newest.contains(r#"data-matching="more""#), "{newest}");
    let html = c
        .bulk_text(
            &[("scope", "matching"), ("q", ""), ("action", "disable")],
            StatusCode::BAD_REQUEST,
        )
        .await;
    assert!(
        html.contains("More than 1000 links match this list"),
        "{html}"
    );
    assert_eq!(c.location("t5").await.0, 302, "nothing disabled");
    // A narrower search: its count on the list, and the action on all.
    let list = c.page("/links?q=t99&by=key").await;
    assert!(
        list.contains(r#"data-matching="11""#),
        "t99, t990..t999: {list}"
    );
    let html = c
        .bulk_text(
            &[
                ("scope", "matching"),
                ("q", "t99"),
                ("by", "key"),
                ("action", "disable"),
            ],
            StatusCode::OK,
        )
        .await;
    assert_eq!(report(&html).len(), 11, "{html}");
    c.wait_location("t995", (404, None)).await;
    assert_eq!(c.location("t5").await.0, 302, "outside the search");
}

/// Existing links printed together: one PDF on the stock chosen, with the
/// labels already used skipped and the caption chosen; the file is the one
/// `qrtag print` makes for the same keys and options, and its codes read
/// back. A bad option is marked beside its field.
#[tokio::test]
async fn ticked_rows_print_as_one_pdf_that_qrtag_print_would_make() {
    let c = console().await;
    for k in ["door-1", "door-2", "door-3"] {
        c.app.link(k, &format!("https://example.com/{k}")).await;
    }
    c.app.wait_for_status("/door-3", 302).await;
    let fields = [
        ("key", "door-1"),
        ("key", "door-2"),
        ("key", "door-3"),
        ("action", "print"),
        ("template", "L7160"),
        ("skip", "2"),
        ("caption", "key"),
    ];
    let res = c.bulk(&fields).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(header(&res, "content-type"), Some("application/pdf"));
    let pdf = res.bytes().await.expect("body").to_vec();
    let dir = tempfile::tempdir().expect("dir");
    assert_eq!(
        pdf_decode::decode_pdf(dir.path(), &pdf),
        ["door-1", "door-2", "door-3"].map(|k| format!("{PUBLIC_URL}/{k}"))
    );
    let out_file = dir.path().join("cli.pdf");
    let out = qrtag_cmd(
        &c.app.db,
        &[
            "print",
            "--template",
            "L7160",
            "--skip",
            "2",
            "--caption",
            "key",
            "-o",
            out_file.to_str().expect("path"),
            "door-1",
            "door-2",
            "door-3",
        ],
    );
    assert!(out.status.success(), "qrtag print: {out:?}");
    assert!(
        std::fs::read(&out_file).expect("cli pdf") == pdf,
        "the console's PDF is qrtag print's"
    );
    // All that a search matches, the same file: the list's order is the
    // keys' order.
    let res = c
        .bulk(&[
            ("scope", "matching"),
            ("q", "door-"),
            ("by", "key"),
            ("action", "print"),
            ("template", "L7160"),
            ("skip", "2"),
            ("caption", "key"),
        ])
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.bytes().await.expect("body") == pdf, "all matching");

    let html = c
        .bulk_text(
            &[("key", "door-1"), ("action", "print"), ("template", "NOPE")],
            StatusCode::BAD_REQUEST,
        )
        .await;
    assert!(html.contains(r#"id="bulk-template-problem""#), "{html}");
    let html = c
        .bulk_text(
            &[
                ("key", "door-1"),
                ("action", "print"),
                ("template", "L7160"),
                ("skip", "65"),
            ],
            StatusCode::BAD_REQUEST,
        )
        .await;
    assert!(html.contains(r#"id="bulk-skip-problem""#), "{html}");
}

/// The most one action takes, 1,000 links, against the same 1,000 edits
/// made one form at a time in the same run: every link done and reported
/// in order, in less time than the single forms took (edits are written a
/// few at a time, so one publication of the snapshot serves several).
#[tokio::test]
async fn a_thousand_links_in_one_action_beat_a_thousand_single_edits() {
    let c = console().await;
    let store = c.app.store();
    let url = qrtag::values::destination::Destination::parse("https://example.com/").expect("url");
    for i in 0..1000 {
        for prefix in ["a", "b"] {
            let key = LinkKey::parse(&format!("{prefix}{i}")).expect("key");
            qrtag::links::create(
                &store,
                &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
                &url,
                Some(&key),
                false,
            )
            .await
            .expect("create");
        }
    }
    c.app.wait_for_status("/b999", 302).await;
    let token = csrf(&c.page("/links").await);
    let started = std::time::Instant::now();
    for i in 0..1000 {
        let key = format!("a{i}");
        let fields = [("csrf", token.as_str()), ("key", &key), ("active", "false")];
        let res = c.post_raw("/link/state", &fields).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
    }
    let single = started.elapsed();
    let started = std::time::Instant::now();
    let html = c
        .bulk_text(
            &[
                ("scope", "matching"),
                ("q", "b"),
                ("by", "key"),
                ("action", "disable"),
            ],
            StatusCode::OK,
        )
        .await;
    let bulk = started.elapsed();
    let rows = report(&html);
    let keys: Vec<String> = rows.iter().map(|(k, _)| k.clone()).collect();
    let mut want: Vec<String> = (0..1000).map(|i| format!("b{i}")).collect();
    want.sort_by(|a, b| qrtag::link::natural_order::cmp(a, b));
    assert_eq!(keys, want, "every link, in the list's order");
    assert!(rows.iter().all(|(_, o)| o == "done"), "all done");
    assert_eq!(c.location("b999").await.0, 404, "answered once served");
    eprintln!(
        "1,000 single disable forms: {single:?}; one bulk disable of 1,000: {bulk:?} ({:.2}×)",
        bulk.as_secs_f64() / single.as_secs_f64()
    );
    assert!(bulk < single, "bulk {bulk:?}, singles {single:?}");
}

//! Issue 35: the link page's history timeline and its Revert buttons,
//! through the real binary on port 0 with real accounts: an editor
//! repoints a link twice, the admin reverts it from the timeline, scans
//! follow, and the timeline says who did what, newest first. A viewer sees
//! the timeline without buttons; bad input is a 4xx that changes nothing.

mod support;

use std::time::Duration;

use qrtag::values::role::Role;
use reqwest::StatusCode;
use support::console::{browser, csrf, get_page, invited, logged_in, post_form, set_password};
use support::process::ServerProcess;
use support::{header, poll, qrtag_cmd};

const PASSWORD: &str = "poster-printing-42";
const KEY: &str = "poster";
const FIRST: &str = "https://example.com/spring";
const SECOND: &str = "https://example.com/summer";
const THIRD: &str = "https://example.com/autumn";
const WITHIN: Duration = Duration::from_secs(5);

/// Every link document, tombstones too: what a refused revert must not change.
fn stored(db: &std::path::Path) -> String {
    let out = qrtag_cmd(db, &["export", "--deleted"]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The value of the first `name="NAME" value="…"` in `html`.
fn field(html: &str, name: &str) -> Option<String> {
    let at = format!(r#"name="{name}" value=""#);
    let rest = &html[html.find(&at)? + at.len()..];
    Some(rest[..rest.find('"')?].to_owned())
}

/// The history section of a link page.
fn history(page: &str) -> &str {
    let start = page
        .find(r#"id="history""#)
        .unwrap_or_else(|| panic!("no history section in {page}"));
    let rest = &page[start..];
    &rest[..rest.find("</section>").unwrap_or(rest.len())]
}

/// The timeline's entries, newest first: each entry's number and its text.
fn entries(page: &str) -> Vec<(u64, String)> {
    let section = history(page);
    section
        .split(r#"<li class="entry""#)
        .skip(1)
        .map(|li| {
            let n = li
                .split_once(r#"data-n=""#)
                .and_then(|(_, r)| r.split('"').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("an entry's number in {li}"));
            (n, li.to_owned())
        })
        .collect()
}

struct Console {
    srv: ServerProcess,
}

impl Console {
    fn at(&self, path: &str) -> String {
        self.srv.admin_url(&format!("/console{path}"))
    }

    async fn link_page(&self, http: &reqwest::Client) -> String {
        get_page(http, &self.at(&format!("/link?key={KEY}"))).await
    }

    /// `form` posted to `path` with the link page's token.
    async fn post(
        &self,
        http: &reqwest::Client,
        path: &str,
        form: &[(&str, &str)],
    ) -> reqwest::Response {
        let token = csrf(&self.link_page(http).await);
        let mut form = form.to_vec();
        form.push(("csrf", &token));
        post_form(http, &self.at(path), &form).await
    }

    async fn repoint(&self, http: &reqwest::Client, url: &str) {
        let res = self
            .post(http, "/link/destination", &[("key", KEY), ("url", url)])
            .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "repointed");
    }

    /// A revert as the timeline's form posts it, the revision given.
    async fn revert(
        &self,
        http: &reqwest::Client,
        to: &str,
        rev: &str,
    ) -> (StatusCode, Option<String>, String) {
        let res = self
            .post(
                http,
                "/link/revert",
                &[("key", KEY), ("to", to), ("rev", rev)],
            )
            .await;
        let status = res.status();
        let location = header(&res, "location").map(str::to_owned);
        (status, location, res.text().await.expect("body"))
    }

    /// Where a scan of the short URL goes now, once it goes to `url`.
    async fn scan_follows(&self, url: &str) {
        let scan = self.srv.url(&format!("/{KEY}"));
        let http = browser();
        poll::until(WITHIN, &format!("a scan goes to {url}"), || {
            let (http, scan) = (http.clone(), scan.clone());
            async move {
                let res = http.get(&scan).send().await.ok()?;
                (header(&res, "location") == Some(url)).then_some(())
            }
        })
        .await;
    }
}

#[tokio::test]
async fn the_admin_reverts_an_editors_repoints_from_the_timeline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let out = qrtag_cmd(&db, &["new", FIRST, "--key", KEY]);
    assert!(out.status.success(), "{out:?}");
    set_password(&db, PASSWORD);
    let c = Console {
        srv: ServerProcess::spawn(&db, &["--console"], &[], false).await,
    };
    let console = c.at("");

    let editor = browser();
    invited(&editor, &db, &console, "ed", Role::Editor, PASSWORD).await;
    c.repoint(&editor, SECOND).await;
    c.repoint(&editor, THIRD).await;
    c.scan_follows(THIRD).await;

    let page = c.link_page(&editor).await;
    let shown = entries(&page);
    let numbers: Vec<u64> = shown.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, [3, 2, 1], "newest first");
    for (n, li) in &shown[..2] {
        assert!(li.contains("ed (console)"), "entry {n} by the editor: {li}");
        assert!(li.contains(r#"data-via="console""#), "entry {n} via: {li}");
    }
    assert!(
        shown[0].1.contains(SECOND) && shown[0].1.contains(THIRD),
        "before and after: {}",
        shown[0].1
    );
    assert!(!history(&page).contains("dropped"), "nothing dropped yet");

    // The admin reverts to entry 1 from the timeline.
    let admin = logged_in(&console, PASSWORD).await;
    let page = c.link_page(&admin).await;
    let rev = field(history(&page), "rev").expect("the page's revision");
    let shown = entries(&page);
    assert!(
        shown[0].1.find(r#"name="to""#).is_none(),
        "no revert to the state the link is in: {}",
        shown[0].1
    );
    assert!(
        shown[2].1.contains(r#"name="to" value="1""#),
        "a revert button on entry 1: {}",
        shown[2].1
    );
    let (status, location, body) = c.revert(&admin, "1", &rev).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    assert_eq!(
        location.as_deref(),
        Some(format!("/console/link?key={KEY}#history").as_str())
    );
    c.scan_follows(FIRST).await;
    let page = c.link_page(&admin).await;
    let shown = entries(&page);
    assert_eq!(shown.first().map(|(n, _)| *n), Some(4), "the revert is one");
    let newest = &shown[0].1;
    assert!(newest.contains("admin (console)"), "by the admin: {newest}");
    assert!(newest.contains(THIRD) && newest.contains(FIRST), "{newest}");

    // A viewer reads the timeline, with no buttons, and a forged revert is
    // refused.
    let viewer = browser();
    invited(&viewer, &db, &console, "vi", Role::Viewer, PASSWORD).await;
    let page = c.link_page(&viewer).await;
    assert_eq!(entries(&page).len(), 4, "the viewer sees the timeline");
    assert!(
        !page.contains("/console/link/revert"),
        "a viewer sees a revert button"
    );
    let before = stored(&db);
    let (status, _, body) = c.revert(&viewer, "2", &rev).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(stored(&db), before);

    // Bad input: a clear 4xx, the link as it was.
    let page = c.link_page(&admin).await;
    let rev = field(history(&page), "rev").expect("the page's revision");
    for (to, rev, want, says) in [
        (
            "999",
            rev.as_str(),
            StatusCode::NOT_FOUND,
            "entry 999 does not exist",
        ),
        (
            "two",
            rev.as_str(),
            StatusCode::BAD_REQUEST,
            "is no entry number",
        ),
        (
            "0",
            rev.as_str(),
            StatusCode::BAD_REQUEST,
            "is no entry number",
        ),
        (
            "2",
            "1",
            StatusCode::CONFLICT,
            "changed this link meanwhile",
        ),
    ] {
        let (status, _, body) = c.revert(&admin, to, rev).await;
        assert_eq!(status, want, "to={to} rev={rev}: {body}");
        assert!(body.contains(says), "to={to}: {body}");
        assert!(
            body.contains(r#"id="history""#),
            "the page again, with the timeline: {body}"
        );
        assert_eq!(stored(&db), before, "to={to} changed the link");
    }
    let res = c
        .post(&admin, "/link/revert", &[("key", KEY), ("to", "2")])
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST, "no revision");
    assert_eq!(stored(&db), before);
    c.srv.stop().await;
}

/// Past the bound of 200 the page says how many older entries were
/// dropped, and a revert to one of them is a 404 that says so.
#[tokio::test]
async fn the_timeline_says_what_was_dropped_past_the_bound() {
    use qrtag::link::{Author, Via};
    use qrtag::values::destination::Destination;
    use qrtag::values::link_key::LinkKey;

    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("links.db");
    let out = qrtag_cmd(&db, &["new", FIRST, "--key", KEY]);
    assert!(out.status.success(), "{out:?}");
    let store = qrtag::store::sqlite::SqliteStore::open(&db).expect("open");
    let cli = Author::cli(Via::Cli, "test", "host");
    let key = LinkKey::parse(KEY).expect("key");
    for i in 2..=205 {
        let url = Destination::parse(&format!("{FIRST}/{i}")).expect("url");
        qrtag::links::set_url(&store, &cli, &key, &url)
            .await
            .expect("repoint");
    }
    drop(store);
    set_password(&db, PASSWORD);
    let c = Console {
        srv: ServerProcess::spawn(&db, &["--console"], &[], false).await,
    };
    let admin = logged_in(&c.at(""), PASSWORD).await;
    let page = c.link_page(&admin).await;
    let shown = entries(&page);
    assert_eq!(shown.len(), 200);
    assert_eq!(shown.first().map(|(n, _)| *n), Some(205));
    assert_eq!(shown.last().map(|(n, _)| *n), Some(6));
    assert!(
        history(&page).contains(r#"data-dropped="5""#)
            && history(&page).contains("5 older entries were dropped"),
        "{}",
        history(&page)
    );
    let rev = field(history(&page), "rev").expect("the page's revision");
    let before = stored(&db);
    let (status, _, body) = c.revert(&admin, "5", &rev).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body.contains("entry 5 was dropped"), "{body}");
    assert_eq!(stored(&db), before);
    c.srv.stop().await;
}

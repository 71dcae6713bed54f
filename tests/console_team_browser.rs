//! Issue 35 ("How it is checked", first bullet): three people in three
//! headless Chromium sessions against one real server. The admin (the
//! password `qrtag console-password` set) invites an editor and a viewer
//! through the Users page; each opens their link in their own browser and
//! chooses a password. The viewer sees the scans and prints but has no
//! edit form, and a forged repoint from their session is refused with 403;
//! the editor repoints the tag, the admin reverts it from the timeline,
//! and a scan follows each within a second; the history says who did what,
//! in order, and the audit page shows the invitations and the logins.

mod support;

#[path = "support/browser.rs"]
mod browser;

use std::time::{Duration, Instant};

use browser::Browser;
use serde_json::json;
use support::console::set_password;
use support::{TestApp, spawn_first_run_console_with_scan_index};

const ADMIN_PASSWORD: &str = "poster-printing-42";
const EDITOR_PASSWORD: &str = "ed-repoints-tags";
const VIEWER_PASSWORD: &str = "vi-only-looks-at-numbers";
const KEY: &str = "spring";
const FIRST: &str = "https://example.com/spring";
const WRONG: &str = "https://example.com/autumn";
/// How soon a scan must follow a repoint or a revert (the bound).
const FOLLOWS: Duration = Duration::from_secs(1);

fn log_in(b: &mut Browser, app: &TestApp, user: &str, password: &str) {
    b.get(&format!("http://{}/console/login", app.admin));
    b.wait("form#login");
    b.fill("#user", user);
    b.fill("#password", password);
    b.click("form#login button[type=submit]");
    b.wait("#account-link");
    let shown = if user.is_empty() { "admin" } else { user };
    assert_eq!(b.attr("#account-link", "data-user"), shown);
}

/// The admin invites `name` as `role` on the Users page: the link it shows
/// once.
fn invite(admin: &mut Browser, app: &TestApp, name: &str, role: &str) -> String {
    admin.get(&format!("http://{}/console/users", app.admin));
    admin.wait("form#invite-user");
    admin.fill("#invite-name", name);
    admin.script(
        "document.querySelector('#invite-role').value = arguments[0];",
        json!([role]),
    );
    admin.click("form#invite-user button[type=submit]");
    admin.wait("#invitation-link");
    admin.text("#invitation-link").trim().to_owned()
}

/// `name` opens their invitation in a browser of their own and chooses
/// `password`; the new session is theirs.
fn accept(link: &str, app: &TestApp, name: &str, password: &str) -> Browser {
    // The link names the address the console was configured with; the
    // test's console listens on a port of its own.
    let query = link.split_once('?').expect("a query in the link").1;
    let mut b = Browser::start();
    b.get(&format!("http://{}/console/invite?{query}", app.admin));
    b.wait("form#invite");
    assert_eq!(b.text("#invited-name"), name);
    b.fill("#password", password);
    b.fill("#again", password);
    b.click("form#invite button[type=submit]");
    // Accepting logs them in: the header names them, with their role.
    b.wait("#account-link");
    assert_eq!(b.attr("#account-link", "data-user"), name);
    b
}

/// A phone's user agent: a scan the link's counts show (a tool's, such
/// as the checks' below, counts as a bot's).
const PHONE_AGENT: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0)";

/// Where the short URL sends a scan now: its Location, redirects off.
async fn scan_as(app: &TestApp, agent: &str) -> String {
    let res = app
        .client
        .get(format!("http://{}/{KEY}", app.public))
        .header("user-agent", agent)
        .send()
        .await
        .expect("scan");
    assert!(res.status().is_redirection(), "{}", res.status());
    res.headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

async fn scan(app: &TestApp) -> String {
    scan_as(app, "curl/8").await
}

/// How long until a scan goes to `url`; fails past [`FOLLOWS`].
async fn scan_follows(app: &TestApp, url: &str) -> Duration {
    let start = Instant::now();
    loop {
        let now = scan(app).await;
        if now == url {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < FOLLOWS,
            "a scan still goes to {now}, not {url}, after {:?}",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The history as the page shows it, newest first: (entry, who, fields).
fn history(b: &mut Browser) -> Vec<(u64, String, String)> {
    let rows = b.script(
        "return [...document.querySelectorAll('#timeline li.entry')].map(e => [
           Number(e.dataset.n),
           e.querySelector('.who').textContent,
           [...e.querySelectorAll('.changes li')].map(c => c.textContent).join('; ')]);",
        json!([]),
    );
    rows.as_array()
        .expect("entries")
        .iter()
        .map(|r| {
            (
                r[0].as_u64().expect("n"),
                r[1].as_str().unwrap_or_default().to_owned(),
                r[2].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_an_editor_and_a_viewer_share_a_tag() {
    let started = Instant::now();
    let (app, _log) = spawn_first_run_console_with_scan_index().await;
    set_password(&app.db, ADMIN_PASSWORD);
    let page = format!("http://{}/console/link?key={KEY}", app.admin);

    // The admin logs in (no user name: the first admin) and makes the tag.
    let mut admin = Browser::start();
    log_in(&mut admin, &app, "", ADMIN_PASSWORD);
    admin.get(&format!("http://{}/console/", app.admin));
    admin.wait("form#create");
    admin.fill("#new-url", FIRST);
    admin.fill("#new-key", KEY);
    admin.click("form#create button[type=submit]");
    // Made, the console shows the new link's page.
    admin.wait(&format!("h1#key[data-key='{KEY}']"));
    assert_eq!(admin.attr("#destination", "data-url"), FIRST);
    assert_eq!(scan_as(&app, PHONE_AGENT).await, FIRST);

    // Two invitations through the Users page, each accepted in a browser
    // of its own.
    let link = invite(&mut admin, &app, "eddie", "editor");
    let mut editor = accept(&link, &app, "eddie", EDITOR_PASSWORD);
    let link = invite(&mut admin, &app, "vera", "viewer");
    let mut viewer = accept(&link, &app, "vera", VIEWER_PASSWORD);
    assert_eq!(editor.attr("#account-link", "data-role"), "editor");
    assert_eq!(viewer.attr("#account-link", "data-role"), "viewer");

    // The viewer: the scan above counted, the PDF printed, no edit form.
    let waited = viewer.reload_until(&page, "#scans dd[data-scans='1']");
    eprintln!("the viewer saw the scan counted after {waited:?}");
    assert_eq!(viewer.count("#edit"), 0, "a viewer sees no edit section");
    assert_eq!(viewer.count("form#edit-destination"), 0);
    assert_eq!(viewer.count("form.revert"), 0, "nor a Revert button");
    let pdf = viewer
        .script(
            "const f = document.querySelector('#label-pdf');
             return f.action + '?' + new URLSearchParams(new FormData(f));",
            json!([]),
        )
        .as_str()
        .expect("the label form's query")
        .to_owned();
    let (status, kind, body) = viewer.fetch(&pdf);
    assert_eq!((status, kind.as_str()), (200, "application/pdf"), "{pdf}");
    assert!(body.starts_with(b"%PDF"), "a PDF");

    // A forged repoint from the viewer's session, with the page's token.
    let forged = viewer.script(
        "const token = document.querySelector('input[name=csrf]').value;
         const x = new XMLHttpRequest();
         x.open('POST', '/console/link/destination', false);
         x.setRequestHeader('Content-Type', 'application/x-www-form-urlencoded');
         x.send(new URLSearchParams({csrf: token, key: arguments[0], url: arguments[1]}).toString());
         return x.status;",
        json!([KEY, WRONG]),
    );
    assert_eq!(forged, json!(403), "a viewer's forged repoint");
    assert_eq!(scan(&app).await, FIRST, "the link is unchanged");
    viewer.get(&page);
    viewer.wait("#destination");
    assert_eq!(viewer.attr("#destination", "data-url"), FIRST);

    // The editor repoints the tag; a scan follows.
    editor.get(&page);
    editor.wait("form#edit-destination");
    editor.fill("#url", WRONG);
    editor.click("form#edit-destination button[type=submit]");
    let repointed = scan_follows(&app, WRONG).await;
    eprintln!("a scan followed the editor's repoint in {repointed:?}");

    // The admin reverts it from the timeline: back to entry #1.
    admin.get(&page);
    admin.wait("#timeline li.entry[data-n='2']");
    admin.click("#entry-1 form.revert button[type=submit]");
    let reverted = scan_follows(&app, FIRST).await;
    eprintln!("a scan followed the admin's revert in {reverted:?}");

    // Who did what, in order (the page lists the newest first).
    admin.get(&page);
    admin.wait("#timeline li.entry[data-n='3']");
    let seen = history(&mut admin);
    let who: Vec<(u64, &str)> = seen.iter().map(|(n, w, _)| (*n, w.as_str())).collect();
    assert_eq!(
        who,
        [
            (3, "admin (console)"),
            (2, "eddie (console)"),
            (1, "admin (console)")
        ],
        "{seen:?}"
    );
    let (from, to) = (seen[1].2.find(FIRST), seen[1].2.find(WRONG));
    assert!(
        from.is_some() && to.is_some() && from < to,
        "the editor's repoint, {FIRST} → {WRONG}: {seen:?}"
    );
    let (from, to) = (seen[0].2.find(WRONG), seen[0].2.find(FIRST));
    assert!(
        from.is_some() && to.is_some() && from < to,
        "the admin's revert, {WRONG} → {FIRST}: {seen:?}"
    );
    // The viewer reads the same history.
    viewer.get(&page);
    viewer.wait("#timeline li.entry[data-n='3']");
    assert_eq!(history(&mut viewer), seen);

    // The audit page: both invitations, and each person's logins.
    admin.get(&format!("http://{}/console/audit", app.admin));
    admin.wait("table#audit");
    let rows = admin.script(
        "return [...document.querySelectorAll('#audit tbody tr')].map(r =>
           [r.dataset.kind, r.cells[1].textContent, r.cells[3].textContent]);",
        json!([]),
    );
    let rows: Vec<(String, String, String)> = serde_json::from_value(rows).expect("audit rows");
    let has = |kind: &str, who: &str, what: &str| {
        rows.iter()
            .any(|(k, w, d)| k == kind && w.contains(who) && d.contains(what))
    };
    assert!(has("user_invited", "admin", "eddie as editor"), "{rows:?}");
    assert!(has("user_invited", "admin", "vera as viewer"), "{rows:?}");
    for who in ["admin", "eddie", "vera"] {
        assert!(has("login", who, ""), "{who}'s login: {rows:?}");
    }
    drop((admin, editor, viewer));
    eprintln!("three people, one tag: {:?}", started.elapsed());
}

//! The web console on CouchDB: users log in with their CouchDB accounts,
//! and every write is made as them, so CouchDB's roles decide.

use qrtag::console::ConsoleSettings;
use qrtag::values::secret::Secret;
use reqwest::StatusCode;

use serde_json::json;

use crate::browser::{self, Browser as Chromium};
use crate::harness::{
    ConsoleClient, Couch, TestApp, accounts, couch_settings, qrtag, stderr, user_env,
};
use crate::pouchdb::PouchDb;
use crate::{PROPAGATION, START};

/// The console on CouchDB, as the role tests need it: `qrtag setup` done,
/// the accounts of [`accounts`], the link `H83if` to
/// `https://a.example/one` made by the editor, and the service (reading as
/// `rd`) ready with the console on.
struct ConsoleOnCouch {
    app: TestApp,
    /// The server admin `boss`, to read what is really stored.
    admin: Couch,
    _dir: tempfile::TempDir,
    _pouch: PouchDb,
}

async fn console_on_couchdb() -> ConsoleOnCouch {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let admin = accounts(&url).await;
    let env = user_env(&url, "boss", "boss-pw-1");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let env = user_env(&url, "ed", "ed-pw-1");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = qrtag(&["new", "--key", "H83if", "https://a.example/one"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = qrtag(&["set", "H83if", "--notes", "by the <door>"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));

    let service =
        couch_settings(&url, "links").with_credentials("rd", Some(Secret::new("rd-pw-1")));
    let dir = tempfile::tempdir().expect("tempdir");
    let app = TestApp::spawn_with(service, dir.path(), |s| {
        s.console = Some(ConsoleSettings::default());
    })
    .await;
    app.wait_ready(START).await;
    ConsoleOnCouch {
        app,
        admin,
        _dir: dir,
        _pouch: pouch,
    }
}

/// axe-core over what only a CouchDB console shows (issue 33; the rest is
/// `tests/console_a11y.rs`'s): the login form with a user name, a wrong
/// one, a reader's list, link, print sheet and dashboard (no edit forms,
/// no scan index), at 1440 and 390 px.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readers_pages_pass_axe_core_on_a_laptop_and_a_phone() {
    let started = std::time::Instant::now();
    let ConsoleOnCouch { app, .. } = &console_on_couchdb().await;
    let console = |path: &str| format!("{}/console{path}", app.admin);
    let mut found = crate::a11y::Findings::default();
    let mut b = Chromium::start();
    for screen in [crate::a11y::LAPTOP, browser::PHONE] {
        b.screen(screen);
        b.get(&console("/login"));
        b.wait("form#login #user");
        found.check(&mut b, screen, "couchdb-login");
        b.fill("#user", "rd");
        b.fill("#password", "not-rd-pw");
        b.click("form#login button[type=submit]");
        b.wait("#problem");
        found.check(&mut b, screen, "couchdb-login-refused");
        b.fill("#user", "rd");
        b.fill("#password", "rd-pw-1");
        b.click("form#login button[type=submit]");
        b.wait(r#"tr[data-key="H83if"]"#);
        found.check(&mut b, screen, "couchdb-reader-links");
        b.get(&console("/link?key=H83if"));
        b.wait("#notes");
        found.check(&mut b, screen, "couchdb-reader-link");
        b.get(&console("/sheet"));
        b.wait("h1");
        found.check(&mut b, screen, "couchdb-reader-sheet");
        b.get(&console("/dashboard"));
        b.wait("h1");
        found.check(&mut b, screen, "couchdb-reader-dashboard");
        b.get(&console("/link?key=H83if"));
        b.wait("#notes");
        b.script(EDITOR_FORM, json!([console("/link/destination"), "H83if"]));
        b.fill("#url", "https://evil.example/");
        b.click("form#edit-destination button[type=submit]");
        // Issue 35: refused by the console's gate in one plain line (no
        // page to check), then back to a page with the logout form.
        b.wait_text("body", "your role (viewer) may not change links");
        b.get(&console("/link?key=H83if"));
        b.wait("#notes");
        b.click("form#logout button[type=submit]");
        b.wait("form#login");
    }
    drop(b);
    found.assert_none(started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_sees_a_read_only_console_and_is_refused_its_writes() {
    let ConsoleOnCouch { app, .. } = &console_on_couchdb().await;

    let reader = ConsoleClient::new(&app.admin);
    let (_, form) = reader.get("/login").await;
    assert!(
        form.contains(r#"name="user""#),
        "CouchDB accounts have names"
    );
    // No console password, so no first-run setup either.
    assert!(!form.contains(r#"id="first-run""#), "{form}");
    assert_eq!(
        reader.get("/setup?token=anything").await.0,
        StatusCode::NOT_FOUND
    );
    let (status, refused) = reader
        .post("/login", "/login", &[("user", "rd"), ("password", "wrong")])
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        refused.contains(">wrong user name or password</p>"),
        "CouchDB does not say which: {refused}"
    );
    assert_eq!(reader.login("rd", "rd-pw-1").await, StatusCode::SEE_OTHER);
    // Each node holds its own CouchDB sessions: the account page says
    // "log out everywhere" reaches this server's, not every server's.
    let (status, account) = reader.get("/account").await;
    assert_eq!(status, StatusCode::OK);
    assert!(account.contains(r#"data-reach="this-server""#), "{account}");
    assert!(!account.contains("on every server"), "{account}");
    let (status, list) = reader.get("/links").await;
    assert_eq!(status, StatusCode::OK);
    assert!(list.contains(r#"data-can-edit="false""#), "{list}");
    assert!(list.contains(r#"data-key="H83if""#), "{list}");
    assert!(
        !list.contains(r#"id="create""#),
        "no create form for a reader"
    );
    let (_, page) = reader.get("/link?key=H83if").await;
    assert!(
        page.contains(r#"data-url="https://a.example/one""#),
        "{page}"
    );
    assert!(!page.contains(r#"id="edit-destination""#), "no edit forms");
    assert!(
        page.contains("by the &lt;door&gt;</dd>"),
        "notes shown: {page}"
    );
    assert!(!page.contains(r#"id="edit-notes""#), "but not editable");

    // A write made anyway is refused by the console's gate (issue 35)
    // before CouchDB is asked (which refuses it too: tests/couchdb/roles.rs).
    let (status, body) = reader
        .post(
            "/link?key=H83if",
            "/link/destination",
            &[("key", "H83if"), ("url", "https://evil.example/")],
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        body.contains("your role (viewer) may not change links"),
        "{body}"
    );
    assert!(!body.contains("rd-pw-1"));
    assert_eq!(
        app.location("H83if").await.as_deref(),
        Some("https://a.example/one")
    );

    let editor = ConsoleClient::new(&app.admin);
    assert_eq!(editor.login("ed", "ed-pw-1").await, StatusCode::SEE_OTHER);
    let (_, list) = editor.get("/links").await;
    assert!(list.contains(r#"id="create""#), "{list}");
    let (status, _) = editor
        .post(
            "/link?key=H83if",
            "/link/notes",
            &[("key", "H83if"), ("notes", "by the side door")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "notes written as the editor");
    let (_, page) = reader.get("/link?key=H83if").await;
    assert!(page.contains("by the side door</dd>"), "{page}");
    let (status, _) = editor
        .post(
            "/link?key=H83if",
            "/link/destination",
            &[("key", "H83if"), ("url", "https://a.example/two")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    app.wait_location("H83if", Some("https://a.example/two"), PROPAGATION)
        .await;
}

/// Writes into the page the destination form an editor's page has (the
/// session's own token taken from the logout form), so the console passes
/// the edit on to CouchDB as an editor's would be.
const EDITOR_FORM: &str = "
const [action, key] = arguments;
const token = document.querySelector('form#logout input[name=csrf]').value;
const form = document.createElement('form');
form.id = 'edit-destination';
form.method = 'post';
form.action = action;
for (const [type, name, value] of [['hidden', 'csrf', token], ['hidden', 'key', key], ['text', 'url', '']]) {
  const input = document.createElement('input');
  Object.assign(input, {type, name, value, id: name});
  form.append(input);
}
const button = document.createElement('button');
button.type = 'submit';
button.textContent = 'Save destination';
form.append(button);
document.querySelector('main').append(form);
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_in_a_real_browser_is_refused_an_edit() {
    let ConsoleOnCouch { app, admin, .. } = &console_on_couchdb().await;
    let console = |path: &str| format!("{}/console{path}", app.admin);
    let stored = admin.get("H83if").await.expect("H83if is stored");
    let mut b = Chromium::start();

    b.get(&console("/login"));
    b.wait("form#login");
    b.fill("#user", "rd");
    b.fill("#password", "rd-pw-1");
    b.click("form#login button[type=submit]");
    b.wait(r#"tr[data-key="H83if"]"#);
    assert_eq!(b.attr("[data-user]", "data-can-edit"), "false");
    assert!(b.text("header.top").contains("rd (read-only)"));
    assert_eq!(b.count("form#create"), 0, "no create form for a reader");

    b.get(&console("/link?key=H83if"));
    b.wait(r#"#destination[data-url="https://a.example/one"]"#);
    assert_eq!(
        b.count(r#"main form[method="post"]"#),
        0,
        "no edit forms for a reader"
    );

    // The edit made anyway, through the real server path: token, session,
    // then the console's role gate (issue 35), which refuses it in one line.
    let written = b.script(EDITOR_FORM, json!([console("/link/destination"), "H83if"]));
    assert!(written.is_null(), "{written}");
    b.fill("#url", "https://evil.example/");
    b.click("form#edit-destination button[type=submit]");
    b.wait_text("body", "your role (viewer) may not change links");
    b.screenshot(&browser::screenshots().join("couchdb-reader-refused.png"));
    assert!(!b.text("body").contains("rd-pw-1"), "the password shown");

    // Nothing changed, in CouchDB or where scans go.
    let after = admin.get("H83if").await.expect("H83if is stored");
    assert_eq!(after["_rev"], stored["_rev"], "written: {after}");
    assert_eq!(
        app.location("H83if").await.as_deref(),
        Some("https://a.example/one")
    );
}

/// Bulk actions (issue 33) as a reader: the bar offers print and CSV only,
/// and a disable sent anyway is refused whole by the console's role gate
/// (issue 35), nothing written; the same action as the editor is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_s_bulk_action_is_refused_whole() {
    let ConsoleOnCouch { app, .. } = &console_on_couchdb().await;
    let reader = ConsoleClient::new(&app.admin);
    assert_eq!(reader.login("rd", "rd-pw-1").await, StatusCode::SEE_OTHER);
    let (_, list) = reader.get("/links").await;
    assert!(list.contains(r#"id="pick-H83if""#), "{list}");
    assert!(list.contains(r#"value="print""#), "a reader may print");
    assert!(!list.contains(r#"value="disable""#), "but not disable");
    let disable = [("key", "H83if"), ("action", "disable")];
    let (status, refused) = reader.post("/links", "/links/bulk", &disable).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        refused.contains("your role (viewer) may not change links"),
        "{refused}"
    );
    assert_eq!(
        app.location("H83if").await.as_deref(),
        Some("https://a.example/one"),
        "not disabled"
    );

    let editor = ConsoleClient::new(&app.admin);
    assert_eq!(editor.login("ed", "ed-pw-1").await, StatusCode::SEE_OTHER);
    let (status, report) = editor.post("/links", "/links/bulk", &disable).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        report.contains(r#"<tr data-key="H83if" data-outcome="done">"#),
        "{report}"
    );
    app.wait_location("H83if", None, PROPAGATION).await;
}

// Issue 35 (i35-timeline, i35-couch-history): the link page's history on CouchDB.

/// CouchDB keeps a link's history (the follower records it): an edit made
/// directly to the document shows on the link page's timeline, and its
/// Revert puts the earlier url back, which a scan follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_shows_an_outside_edit_on_couchdb_and_reverts_it() {
    let ConsoleOnCouch { app, admin, .. } = &console_on_couchdb().await;
    let editor = ConsoleClient::new(&app.admin);
    assert_eq!(editor.login("ed", "ed-pw-1").await, StatusCode::SEE_OTHER);
    for url in ["https://a.example/two", "https://a.example/three"] {
        let mut doc = admin.get("H83if").await.expect("the link");
        doc["url"] = json!(url);
        let (status, body) = admin.try_put("H83if", doc).await;
        assert_eq!(status, 201, "{body}");
    }
    let page = crate::harness::eventually(START, "two entries on the timeline", || async {
        let (status, page) = editor.get("/link?key=H83if").await;
        (status == StatusCode::OK && page.contains("Revert to #1")).then_some(page)
    })
    .await;
    let history = &page[page.find(r#"id="history""#).expect("a history section")..];
    let history = &history[..history.find("</section>").expect("its end")];
    assert!(history.contains("https://a.example/three"), "{history}");
    let rev = history
        .split(r#"name="rev" value=""#)
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the revert form's revision");
    let revert = [("key", "H83if"), ("to", "1"), ("rev", rev)];
    let (status, body) = editor
        .post("/link?key=H83if", "/link/revert", &revert)
        .await;
    assert!(
        status.is_redirection() || status.is_success(),
        "{status}: {body}"
    );
    app.wait_location("H83if", Some("https://a.example/two"), PROPAGATION)
        .await;
}

/// Issue 35: an admin's Users link leads, on CouchDB, to where the people
/// are managed and how their CouchDB roles map, not to a bare 404; an
/// editor has no link and is refused the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_s_users_page_on_couchdb_says_where_people_are_managed() {
    let ConsoleOnCouch { app, .. } = &console_on_couchdb().await;
    let boss = ConsoleClient::new(&app.admin);
    assert_eq!(boss.login("boss", "boss-pw-1").await, StatusCode::SEE_OTHER);
    let (_, list) = boss.get("/links").await;
    assert!(list.contains(r#"id="nav-users""#), "{list}");
    let (status, page) = boss.get("/users").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains(r#"id="users-elsewhere""#), "{page}");
    for (couch, here) in [("qrtag_admin, _admin", "admin"), ("qrtag_editor", "editor")] {
        assert!(
            page.contains(&format!("<td>{couch}</td><td>{here}</td>")),
            "{couch} → {here}: {page}"
        );
    }
    assert!(
        !page.contains(r#"id="invite-user""#),
        "no invitations here: {page}"
    );

    let editor = ConsoleClient::new(&app.admin);
    assert_eq!(editor.login("ed", "ed-pw-1").await, StatusCode::SEE_OTHER);
    let (_, list) = editor.get("/links").await;
    assert!(!list.contains(r#"id="nav-users""#), "{list}");
    assert_eq!(editor.get("/users").await.0, StatusCode::FORBIDDEN);
}

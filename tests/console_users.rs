//! Issue 35 (i35-users): accounts on the embedded store, through the real
//! binary (`qrtag user …`, `qrtag console-password`) and the real server
//! (the invitation page, the login by name, sessions following their
//! users), and the upgrade of a database with the single password of
//! earlier versions.

mod support;

use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use support::console::{
    browser, console_with_admin, csrf, get_page, log_in_as, post_form, set_password,
};
use support::{TestApp, init_db, poll, qrtag_cmd, spawn_with, test_settings};

const ADMIN_PASSWORD: &str = "poster-printing-42";
const ANN_PASSWORD: &str = "ann-repoints-tags";
const WITHIN: Duration = Duration::from_secs(10);

/// A browser connecting from its own loopback address (any of
/// 127.0.0.0/8 is this machine): failed attempts count per address
/// (`limiter::PER_ADDRESS`, 5 a minute), and this test makes more.
fn browser_at(last: u8) -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .local_address(std::net::IpAddr::from([127, 0, 0, last]))
        .timeout(WITHIN)
        .build()
        .expect("client")
}

fn out_text(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `qrtag user …` (or any command) on `db`; asserts it succeeded and
/// returns its standard output.
fn ok(db: &Path, args: &[&str]) -> String {
    let out = qrtag_cmd(db, args);
    let (stdout, stderr) = out_text(&out);
    assert!(out.status.success(), "qrtag {args:?}: {stderr}");
    stdout
}

/// Runs a command that must be refused as a usage error: exit 2 and one
/// line on standard error containing `says`.
fn refused(db: &Path, args: &[&str], says: &str) {
    let out = qrtag_cmd(db, args);
    let (stdout, stderr) = out_text(&out);
    assert_eq!(out.status.code(), Some(2), "qrtag {args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    assert!(stderr.contains(says), "qrtag {args:?}: {stderr:?}");
    assert!(stdout.is_empty(), "{stdout:?}");
}

fn list(db: &Path) -> Vec<Vec<String>> {
    ok(db, &["user", "list"])
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

#[test]
fn user_commands_invite_list_change_and_refuse_with_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    init_db(&db);
    let link = ok(&db, &["user", "add", "ann", "--role", "editor"]);
    let link = link.trim();
    assert!(
        link.starts_with("http://127.0.0.1:8081/console/invite?token=") && link.len() > 80,
        "{link}"
    );
    let again = ok(
        &db,
        &[
            "user",
            "add",
            "bob",
            "--role",
            "viewer",
            "--console-url",
            "https://console.example",
        ],
    );
    assert!(
        again.starts_with("https://console.example/console/invite?token="),
        "{again}"
    );
    let users = list(&db);
    assert_eq!(users.len(), 2, "{users:?}");
    assert_eq!(users[0][..3], ["ann", "editor", "invited"]);
    assert_eq!(users[1][..3], ["bob", "viewer", "invited"]);
    assert!(users[0][3].ends_with('Z'), "created: {users:?}");

    let before = list(&db);
    refused(
        &db,
        &["user", "add", "cy", "--role", "owner"],
        "unknown role \"owner\"",
    );
    refused(&db, &["user", "add", "ann", "--role", "viewer"], "taken");
    refused(
        &db,
        &["user", "add", "Ann Lee", "--role", "viewer"],
        "is not a user name",
    );
    refused(
        &db,
        &["user", "role", "zed", "viewer"],
        "there is no user zed",
    );
    refused(&db, &["user", "role", "ann", "boss"], "unknown role");
    refused(&db, &["user", "remove", "zed"], "there is no user zed");
    refused(&db, &["user", "reset", "zed"], "there is no user zed");
    assert_eq!(list(&db), before, "nothing changed");

    // The last admin stays: neither removed nor demoted.
    set_password(&db, ADMIN_PASSWORD);
    refused(&db, &["user", "remove", "admin"], "last admin");
    refused(&db, &["user", "role", "admin", "editor"], "last admin");
    ok(&db, &["user", "role", "ann", "admin"]);
    ok(&db, &["user", "role", "admin", "editor"]);
    refused(&db, &["user", "remove", "ann"], "last admin");
    ok(&db, &["user", "role", "bob", "editor"]);
    ok(&db, &["user", "remove", "bob"]);
    let users = list(&db);
    let names: Vec<(&str, &str, &str)> = users
        .iter()
        .map(|u| (u[0].as_str(), u[1].as_str(), u[2].as_str()))
        .collect();
    assert_eq!(
        names,
        [("admin", "editor", "active"), ("ann", "admin", "invited")]
    );
}

/// The console as `serve --console` runs it, on a new database whose
/// admin's password is [`ADMIN_PASSWORD`]: the server and the database.
async fn with_admin() -> (TestApp, std::path::PathBuf) {
    console_with_admin(ADMIN_PASSWORD, Default::default()).await
}

/// The console on `db`'s directory, as `serve --console` runs it.
async fn console_on(dir: tempfile::TempDir) -> TestApp {
    let mut settings = test_settings(dir.path());
    settings.console = Some(qrtag::console::ConsoleSettings::default());
    spawn_with(settings, dir).await
}

/// Logs in by name: the login's status.
async fn log_in(http: &reqwest::Client, app: &TestApp, user: &str, password: &str) -> StatusCode {
    let console = format!("http://{}/console", app.admin);
    log_in_as(http, &console, user, password).await.status()
}

/// The logged-in page's user marker (`data-user`, `data-can-edit`), or
/// `None` when the session is gone (the list redirects to the login).
async fn who(http: &reqwest::Client, app: &TestApp) -> Option<(String, bool)> {
    let res = http
        .get(format!("http://{}/console/links", app.admin))
        .send()
        .await
        .expect("GET");
    if res.status() == StatusCode::SEE_OTHER {
        return None;
    }
    let html = res.text().await.expect("body");
    let attr = |name: &str| {
        let at = html.find(&format!("{name}=\"")).expect(name) + name.len() + 2;
        html[at..].split('"').next().expect("value").to_owned()
    };
    Some((attr("data-user"), attr("data-can-edit") == "true"))
}

/// The invitation page's answer to the link and a form posted from it.
async fn accept(
    http: &reqwest::Client,
    link: &str,
    password: &str,
    again: &str,
) -> reqwest::Response {
    let page = http.get(link).send().await.expect("GET invitation");
    assert_eq!(page.status(), StatusCode::OK, "{link}");
    let html = page.text().await.expect("body");
    let token = link.split_once("token=").expect("token").1;
    post_form(
        http,
        link.split_once('?').expect("query").0,
        &[
            ("csrf", &csrf(&html)),
            ("token", token),
            ("password", password),
            ("again", again),
        ],
    )
    .await
}

#[tokio::test]
async fn an_invitation_works_once_then_the_person_logs_in_by_name() {
    let (app, db) = with_admin().await;
    let admin = app.admin.to_string();
    let link = ok(
        &db,
        &[
            "user",
            "add",
            "ann",
            "--role",
            "editor",
            "--admin-listen",
            &admin,
        ],
    );
    let link = link.trim().to_owned();

    // The page names the person; a typo is a 400 and spends nothing.
    let http = browser();
    let page = get_page(&http, &link).await;
    assert!(page.contains("id=\"invited-name\">ann<"), "{page}");
    let typo = accept(&http, &link, ANN_PASSWORD, "something-else-1").await;
    assert_eq!(typo.status(), StatusCode::BAD_REQUEST);
    let res = accept(&http, &link, ANN_PASSWORD, ANN_PASSWORD).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "logged in");
    assert_eq!(who(&http, &app).await, Some(("ann".into(), true)));
    // The audit log tells the accepted invitation from the login it led to.
    let anns: Vec<(String, String)> = ok(&db, &["audit"])
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .filter(|e| e["actor"]["user"] == "ann")
        .map(|e| {
            let field = |f: &str| e["event"][f].as_str().unwrap_or_default().to_owned();
            (field("kind"), field("user"))
        })
        .collect();
    assert_eq!(
        anns,
        [
            ("invitation_accepted".to_owned(), "ann".to_owned()),
            ("login".to_owned(), String::new())
        ]
    );

    // Used once: the link is refused with a page saying so.
    let stranger = browser_at(2);
    let again = stranger.get(&link).send().await.expect("GET");
    assert_eq!(again.status(), StatusCode::FORBIDDEN);
    assert!(
        again.text().await.expect("body").contains("used already"),
        "used"
    );
    let users = list(&db);
    assert_eq!(users[1][..3], ["ann", "editor", "active"]);

    // Login by name; the name matters, and a wrong one says no more.
    let other = browser_at(3);
    assert_eq!(
        log_in(&other, &app, "ann", ADMIN_PASSWORD).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        log_in(&other, &app, "nobody", ANN_PASSWORD).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        log_in(&other, &app, "ann", ANN_PASSWORD).await,
        StatusCode::SEE_OTHER
    );
    assert_eq!(who(&other, &app).await, Some(("ann".into(), true)));

    // An expired invitation is refused with a page saying so.
    let bob = ok(
        &db,
        &[
            "user",
            "add",
            "bob",
            "--role",
            "viewer",
            "--admin-listen",
            &admin,
        ],
    );
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute(
        "UPDATE invitations SET expires_at = '2020-01-01T00:00:00Z' WHERE name = 'bob'",
        [],
    )
    .expect("expire");
    let res = browser_at(4).get(bob.trim()).send().await.expect("GET");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(
        res.text()
            .await
            .expect("body")
            .contains("expired at 2020-01-01T00:00:00Z"),
        "expired"
    );
    // A made-up token too.
    let res = browser_at(4)
        .get(format!("http://{admin}/console/invite?token=made-up"))
        .send()
        .await
        .expect("GET");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);

    // A reset: the old password stops working and the sessions end.
    let reset = ok(&db, &["user", "reset", "ann", "--admin-listen", &admin]);
    poll::until(WITHIN, "ann's sessions ended", || async {
        (who(&http, &app).await.is_none() && who(&other, &app).await.is_none()).then_some(())
    })
    .await;
    assert_eq!(
        log_in(&browser_at(5), &app, "ann", ANN_PASSWORD).await,
        StatusCode::UNAUTHORIZED
    );
    let fresh = browser_at(6);
    let res = accept(
        &fresh,
        reset.trim(),
        "ann-has-a-new-one",
        "ann-has-a-new-one",
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(who(&fresh, &app).await, Some(("ann".into(), true)));
}

#[tokio::test]
async fn a_role_change_or_removal_reaches_the_sessions_within_a_second() {
    let (app, db) = with_admin().await;
    let link = ok(
        &db,
        &[
            "user",
            "add",
            "ann",
            "--role",
            "editor",
            "--admin-listen",
            &app.admin.to_string(),
        ],
    );
    let http = browser();
    let res = accept(&http, link.trim(), ANN_PASSWORD, ANN_PASSWORD).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(who(&http, &app).await, Some(("ann".into(), true)));

    ok(&db, &["user", "role", "ann", "viewer"]);
    let took = std::time::Instant::now();
    poll::until(WITHIN, "ann a viewer", || async {
        (who(&http, &app).await == Some(("ann".into(), false))).then_some(())
    })
    .await;
    // The sync reads the users every second; a loaded machine may add a little.
    assert!(
        took.elapsed() < Duration::from_secs(3),
        "{:?}",
        took.elapsed()
    );

    ok(&db, &["user", "remove", "ann"]);
    poll::until(WITHIN, "ann's session ended", || async {
        who(&http, &app).await.is_none().then_some(())
    })
    .await;
    assert_eq!(
        log_in(&browser(), &app, "ann", ANN_PASSWORD).await,
        StatusCode::UNAUTHORIZED
    );
}

/// A database as versions before accounts left it: the links and `meta`
/// tables, the console password's hash in `meta` (as `qrtag
/// console-password` stored it).
fn old_database(db: &Path, password: &str) {
    let conn = rusqlite::Connection::open(db).expect("create");
    conn.execute_batch(
        "CREATE TABLE links (
            key TEXT PRIMARY KEY, doc TEXT NOT NULL, rev INTEGER NOT NULL,
            seq INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0);
         CREATE INDEX links_seq ON links(seq);
         CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO meta VALUES ('db_id', '0123456789abcdef0123456789abcdef');
         INSERT INTO links VALUES ('menu', '{\"url\":\"https://example.com/menu\"}', 1, 1, 0);",
    )
    .expect("old schema");
    let hash = qrtag::console::password::hash(password).expect("hash");
    conn.execute(
        "INSERT INTO meta VALUES ('console_password', ?1)",
        [hash.as_str()],
    )
    .expect("old password");
}

#[tokio::test]
async fn a_database_with_the_old_single_password_logs_in_with_it_as_admin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    old_database(&db, ADMIN_PASSWORD);
    let app = console_on(dir).await;
    assert!(app.console_setup_url.is_none(), "no first-run link");
    // With the name, and as before with none.
    for name in ["admin", ""] {
        let http = browser();
        assert_eq!(
            log_in(&http, &app, name, ADMIN_PASSWORD).await,
            StatusCode::SEE_OTHER,
            "{name:?}"
        );
        assert_eq!(who(&http, &app).await, Some(("admin".into(), true)));
    }
    assert_eq!(
        log_in(&browser(), &app, "admin", "not-the-password").await,
        StatusCode::UNAUTHORIZED
    );
    let users = list(&db);
    assert_eq!(users.len(), 1);
    assert_eq!(users[0][..3], ["admin", "admin", "active"]);
    // Moved, not copied: no second place the old hash lives on.
    let conn = rusqlite::Connection::open(&db).expect("open");
    let left: i64 = conn
        .query_row(
            "SELECT count(*) FROM meta WHERE name = 'console_password'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(left, 0);
    assert_eq!(app.get("/menu").await.status(), StatusCode::FOUND);
    // console-password still sets the admin's password.
    set_password(&db, "a-newer-password-9");
    assert_eq!(
        log_in(&browser(), &app, "admin", "a-newer-password-9").await,
        StatusCode::SEE_OTHER
    );
}

/// A browser with its own `User-Agent`, as a person's second device.
fn browser_named(agent: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(agent)
        .timeout(WITHIN)
        .build()
        .expect("client")
}

/// Posts `form` to the console page `path` with the CSRF token of the
/// logged-in page `from`.
async fn post_as(
    http: &reqwest::Client,
    app: &TestApp,
    from: &str,
    path: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    let token = csrf(&get_page(http, &format!("http://{}/console{from}", app.admin)).await);
    let mut fields = vec![("csrf", token.as_str())];
    fields.extend_from_slice(form);
    post_form(
        http,
        &format!("http://{}/console{path}", app.admin),
        &fields,
    )
    .await
}

/// The console with the admin's password set and ann invited as `role`
/// and logged in: the app, ann's browser, the database.
async fn with_ann(role: &str) -> (TestApp, reqwest::Client, std::path::PathBuf) {
    let (app, db) = with_admin().await;
    let link = ok(
        &db,
        &[
            "user",
            "add",
            "ann",
            "--role",
            role,
            "--admin-listen",
            &app.admin.to_string(),
        ],
    );
    let ann = browser_named("AnnPhone/1.0");
    let res = accept(&ann, link.trim(), ANN_PASSWORD, ANN_PASSWORD).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    (app, ann, db)
}

#[tokio::test]
async fn a_person_sees_their_own_sessions_and_logs_out_everywhere() {
    let (app, ann, _db) = with_ann("editor").await;
    let laptop = browser_named("AdminLaptop/2.0");
    let phone = browser_named("AdminPhone/3.0");
    for b in [&laptop, &phone] {
        assert_eq!(
            log_in(b, &app, "admin", ADMIN_PASSWORD).await,
            StatusCode::SEE_OTHER
        );
    }
    let page = get_page(&laptop, &format!("http://{}/console/account", app.admin)).await;
    assert_eq!(page.matches("class=\"session\"").count(), 2, "{page}");
    assert!(page.contains("AdminLaptop/2.0") && page.contains("AdminPhone/3.0"));
    assert!(!page.contains("AnnPhone"), "only one's own: {page}");
    assert_eq!(page.matches("data-this=\"true\"").count(), 1);
    assert!(page.contains("127.0.0.1"), "the address: {page}");
    assert!(
        page.contains(r#"data-reach="every-server""#),
        "every node follows the users' session counters: {page}"
    );
    assert!(
        page.contains("id=\"users-link\""),
        "an admin's way to the users"
    );

    let res = post_as(&laptop, &app, "/account", "/account/logout-everywhere", &[]).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(who(&laptop, &app).await, None);
    assert_eq!(who(&phone, &app).await, None, "the other device too");
    assert_eq!(who(&ann, &app).await, Some(("ann".into(), true)), "not ann");
    // Still after the sync's next pass, and a new login works.
    poll::until(WITHIN, "a new login after the sync's pass", || async {
        let b = browser();
        (log_in(&b, &app, "admin", ADMIN_PASSWORD).await == StatusCode::SEE_OTHER
            && who(&b, &app).await.is_some())
        .then_some(())
    })
    .await;

    // An editor's page has no way to the users page.
    let page = get_page(&ann, &format!("http://{}/console/account", app.admin)).await;
    assert!(!page.contains("id=\"users-link\""), "{page}");
}

fn users_of(page: &str) -> Vec<(String, String, String)> {
    page.split("<tr class=\"user\"")
        .skip(1)
        .map(|row| {
            let attr = |name: &str| {
                let at = row.find(&format!("{name}=\"")).expect(name) + name.len() + 2;
                row[at..].split('"').next().expect("value").to_owned()
            };
            (attr("data-name"), attr("data-role"), attr("data-state"))
        })
        .collect()
}

#[tokio::test]
async fn an_admin_manages_users_on_the_users_page_and_no_one_else_may() {
    let (app, ann, db) = with_ann("editor").await;
    let admin = browser();
    assert_eq!(
        log_in(&admin, &app, "admin", ADMIN_PASSWORD).await,
        StatusCode::SEE_OTHER
    );
    let users_url = format!("http://{}/console/users", app.admin);
    let t = |s: &str| s.to_owned();
    assert_eq!(
        users_of(&get_page(&admin, &users_url).await),
        [
            (t("admin"), t("admin"), t("active")),
            (t("ann"), t("editor"), t("active"))
        ]
    );

    // Invite: the link is shown once and works.
    let link = invite_on_page(&admin, &app, "cy", "viewer").await;
    assert!(
        link.starts_with(&format!("http://{}/console/invite?token=", app.admin)),
        "{link}"
    );
    assert_eq!(
        browser().get(&link).send().await.expect("GET").status(),
        StatusCode::OK
    );

    // Refusals: the page again with the reason, nothing changed.
    for (path, form, status, says) in [
        (
            "/users/invite",
            vec![("name", "cy"), ("role", "viewer")],
            StatusCode::CONFLICT,
            "taken",
        ),
        (
            "/users/invite",
            vec![("name", "dee"), ("role", "owner")],
            StatusCode::BAD_REQUEST,
            "unknown role",
        ),
        (
            "/users/invite",
            vec![("name", "Dee D"), ("role", "viewer")],
            StatusCode::BAD_REQUEST,
            "not a user name",
        ),
        (
            "/users/remove",
            vec![("name", "admin")],
            StatusCode::CONFLICT,
            "last admin",
        ),
        (
            "/users/role",
            vec![("name", "admin"), ("role", "viewer")],
            StatusCode::CONFLICT,
            "last admin",
        ),
        (
            "/users/role",
            vec![("name", "zed"), ("role", "viewer")],
            StatusCode::NOT_FOUND,
            "no user zed",
        ),
    ] {
        let before = ok(&db, &["user", "list"]);
        let res = post_as(&admin, &app, "/users", path, &form).await;
        assert_eq!(res.status(), status, "{path} {form:?}");
        let body = res.text().await.expect("body");
        assert!(body.contains(says), "{path} {form:?}: {body}");
        assert_eq!(ok(&db, &["user", "list"]), before, "{path} {form:?}");
    }

    // Role, reset, remove.
    let res = post_as(
        &admin,
        &app,
        "/users",
        "/users/role",
        &[("name", "ann"), ("role", "viewer")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    poll::until(WITHIN, "ann a viewer", || async {
        (who(&ann, &app).await == Some(("ann".into(), false))).then_some(())
    })
    .await;
    let res = post_as(&admin, &app, "/users", "/users/reset", &[("name", "ann")]).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        res.text()
            .await
            .expect("body")
            .contains("id=\"invitation-link\"")
    );
    assert_eq!(who(&ann, &app).await, None, "ann's session ended at once");
    let res = post_as(&admin, &app, "/users", "/users/remove", &[("name", "cy")]).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        users_of(&get_page(&admin, &users_url).await),
        [
            (t("admin"), t("admin"), t("active")),
            (t("ann"), t("viewer"), t("invited"))
        ]
    );

    // Not an admin: the page and its forms are refused, nothing changed.
    let link = ok(
        &db,
        &[
            "user",
            "reset",
            "ann",
            "--admin-listen",
            &app.admin.to_string(),
        ],
    );
    let ann = browser();
    assert_eq!(
        accept(&ann, link.trim(), ANN_PASSWORD, ANN_PASSWORD)
            .await
            .status(),
        StatusCode::SEE_OTHER
    );
    let res = ann.get(&users_url).send().await.expect("GET");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let before = ok(&db, &["user", "list"]);
    let res = post_as(
        &ann,
        &app,
        "/links",
        "/users/invite",
        &[("name", "eve"), ("role", "admin")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let res = post_as(
        &ann,
        &app,
        "/links",
        "/users/role",
        &[("name", "ann"), ("role", "admin")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    // And a POST without the CSRF token, even an admin's.
    let res = post_form(
        &admin,
        &format!("http://{}/console/users/remove", app.admin),
        &[("name", "ann")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(ok(&db, &["user", "list"]), before);
}

/// Invites `name` as `role` on the users page as the admin logged in with
/// `admin`: the link the page shows.
async fn invite_on_page(admin: &reqwest::Client, app: &TestApp, name: &str, role: &str) -> String {
    let form = [("name", name), ("role", role)];
    let res = post_as(admin, app, "/users", "/users/invite", &form).await;
    assert_eq!(res.status(), StatusCode::OK);
    let html = res.text().await.expect("body");
    let marker = "id=\"invitation-link\">";
    let at = html.find(marker).expect("the link") + marker.len();
    html[at..]
        .split('<')
        .next()
        .expect("link")
        .replace("&amp;", "&")
}

/// One rule decides where invitation links point: with `--console-url`
/// set, the users page and `qrtag user add` give the same link (but for
/// the token), not the address the admin's browser happened to use.
#[tokio::test]
async fn the_users_page_and_the_cli_point_invitations_at_the_console_url() {
    const CONSOLE_URL: &str = "https://console.example/";
    let console = qrtag::console::ConsoleSettings {
        console_url: Some(url::Url::parse(CONSOLE_URL).expect("url")),
        ..Default::default()
    };
    let (app, db) = console_with_admin(ADMIN_PASSWORD, console).await;
    let admin = browser();
    assert_eq!(
        log_in(&admin, &app, "admin", ADMIN_PASSWORD).await,
        StatusCode::SEE_OTHER
    );
    let from_page = invite_on_page(&admin, &app, "cy", "viewer").await;
    let from_cli = ok(
        &db,
        &[
            "user",
            "add",
            "dee",
            "--role",
            "viewer",
            "--console-url",
            CONSOLE_URL,
            "--admin-listen",
            &app.admin.to_string(),
        ],
    );
    let without_token = |link: &str| {
        link.trim()
            .split_once("token=")
            .expect("token")
            .0
            .to_owned()
    };
    assert_eq!(without_token(&from_page), without_token(&from_cli));
    assert_eq!(
        without_token(&from_page),
        "https://console.example/console/invite?"
    );
}

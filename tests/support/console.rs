//! The console as its HTTP tests meet it: the password set with the CLI,
//! a client that behaves as a browser's session, the CSRF token of a
//! page's form, and a login through the real form. One copy, so a change
//! to the login form or its token field is mended in one place. Takes the
//! console's base URL (`http://ADDR/console`), so it serves an in-process
//! `TestApp` and a spawned `qrtag serve` alike.

use std::path::Path;

use reqwest::StatusCode;

use super::qrtag_bin;

/// Where a form's token stands in the page.
const CSRF_FIELD: &str = r#"name="csrf" value=""#;

/// A client that keeps cookies and does not follow redirects, as a browser
/// session seen from the test (each 303 stays visible).
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// The synchronizer token in a page's first form.
pub fn csrf(html: &str) -> String {
    let at = html
        .find(CSRF_FIELD)
        .unwrap_or_else(|| panic!("no CSRF field in {html}"));
    let rest = &html[at + CSRF_FIELD.len()..];
    rest[..rest.find('"').expect("end of value")].to_owned()
}

/// Sets the console's password as an operator does: `qrtag
/// console-password` on the database `db`, `password` typed on its
/// standard input.
pub fn set_password(db: &Path, password: &str) {
    use std::io::Write as _;
    let mut child = qrtag_bin()
        .arg("--db")
        .arg(db)
        .arg("console-password")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("console-password");
    writeln!(child.stdin.take().expect("stdin"), "{password}").expect("password");
    assert!(child.wait().expect("wait").success());
}

/// The page at `url`, which must be there (200).
pub async fn get_page(http: &reqwest::Client, url: &str) -> String {
    let res = http.get(url).send().await.expect("GET");
    assert_eq!(res.status(), StatusCode::OK, "GET {url}");
    res.text().await.expect("body")
}

/// `form` posted to `url` as a browser posts it, and nothing added: the
/// token is the caller's to send, or to leave out.
pub async fn post_form(
    http: &reqwest::Client,
    url: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    http.post(url).form(form).send().await.expect("POST")
}

/// Opens the login form of the console at `console` with `http` and posts
/// `password` from it, with the form's token: the login's answer.
pub async fn log_in_with(
    http: &reqwest::Client,
    console: &str,
    password: &str,
) -> reqwest::Response {
    login_form(http, console, &[("password", password)]).await
}

/// The login form of the console at `console` opened with `http` and
/// posted with its token and `fields`.
async fn login_form(
    http: &reqwest::Client,
    console: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let url = format!("{console}/login");
    let token = csrf(&get_page(http, &url).await);
    let mut form = vec![("csrf", token.as_str())];
    form.extend_from_slice(fields);
    post_form(http, &url, &form).await
}

/// Logs `http` in to the console at `console` with `password`, which must
/// be the right one.
pub async fn log_in(http: &reqwest::Client, console: &str, password: &str) {
    let res = log_in_with(http, console, password).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "logged in");
}

/// A new [`browser`] session, logged in to the console at `console`.
pub async fn logged_in(console: &str, password: &str) -> reqwest::Client {
    let http = browser();
    log_in(&http, console, password).await;
    http
}

/// Invites `name` as `role` with `qrtag user add` on `db` and accepts the
/// invitation at `console` (the console's base URL) with `password`,
/// which logs `http` in as them (issue 35).
pub async fn invited(
    http: &reqwest::Client,
    db: &Path,
    console: &str,
    name: &str,
    role: qrtag::values::role::Role,
    password: &str,
) {
    let out = super::qrtag_cmd(db, &["user", "add", name, "--role", role.as_str()]);
    assert!(
        out.status.success(),
        "user add: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let link = String::from_utf8(out.stdout).expect("UTF-8");
    let token = link
        .trim()
        .split_once("token=")
        .expect("an invitation link")
        .1;
    let page = format!("{console}/invite");
    let html = get_page(http, &format!("{page}?token={token}")).await;
    let res = post_form(
        http,
        &page,
        &[
            ("csrf", csrf(&html).as_str()),
            ("token", token),
            ("password", password),
            ("again", password),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "invitation accepted");
}

/// Logs `http` in by name through the login form of the console at
/// `console` (the embedded store's accounts, issue 35): the login's answer.
pub async fn log_in_as(
    http: &reqwest::Client,
    console: &str,
    user: &str,
    password: &str,
) -> reqwest::Response {
    login_form(http, console, &[("user", user), ("password", password)]).await
}

/// A server with the console on, over a new database whose admin's
/// password is `password` (set with `qrtag console-password`), the
/// console's options as `console` gives them: the server and its
/// database (issue 35).
pub async fn console_with_admin(
    password: &str,
    console: qrtag::console::ConsoleSettings,
) -> (super::TestApp, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    super::init_db(&db);
    set_password(&db, password);
    let mut settings = super::test_settings(dir.path());
    settings.console = Some(console);
    (super::spawn_with(settings, dir).await, db)
}

//! The first-run setup link: `qrtag serve --console` on a database without
//! a console password prints a one-time link that lets whoever opens it
//! choose the password, so a newcomer needs no second terminal.
//!
//! Every setup request (a GET with a token, a POST past its CSRF check) and
//! every login counts against one address's attempts per minute
//! (`limiter::PER_ADDRESS`, 5), so each test here stays within five.

use std::time::Duration;

use qrtag::console::limiter::PER_ADDRESS;
use qrtag::console::password;
use qrtag::store::Access;
use qrtag::store::sqlite::SqliteStore;
use reqwest::StatusCode;

use super::support::process::ServerProcess;
use super::support::{header, poll, spawn_with, test_settings};
use super::{Console, PASSWORD, browser, browser_from, csrf, first_run_console};

const ANNOUNCED: &str = "console: first-time setup at ";

/// The token in a setup link.
fn token_of(url: &str) -> &str {
    url.split_once("?token=").expect("a token in the link").1
}

impl Console {
    fn setup_url(&self) -> String {
        self.app
            .console_setup_url
            .clone()
            .expect("a setup link while no password is set")
    }

    async fn open(&self, url: &str) -> reqwest::Response {
        self.http.get(url).send().await.expect("GET")
    }

    /// Posts the setup form with the session's `csrf` token.
    async fn choose(
        &self,
        csrf: &str,
        token: &str,
        chosen: &str,
        again: &str,
    ) -> reqwest::Response {
        let form = [
            ("csrf", csrf),
            ("token", token),
            ("password", chosen),
            ("again", again),
        ];
        self.post_raw("/setup", &form).await
    }

    async fn stored_password(&self) -> Option<String> {
        // Issue 35: the password is the user admin's.
        self.app
            .store()
            .account("admin")
            .await
            .expect("read the user")
            .and_then(|a| a.hash)
    }
}

#[tokio::test]
async fn the_setup_link_sets_the_password_once_and_logs_in() {
    let c = first_run_console(false).await;
    let url = c.setup_url();
    assert!(
        url.starts_with(&format!("http://{}/console/setup?token=", c.app.admin)),
        "the admin listener's bound address: {url}"
    );
    let token = token_of(&url);
    assert_eq!(token.len(), 43, "256 bits, base64url");

    let login = c.page("/login").await;
    assert!(
        login.contains(r#"id="first-run""#)
            && login.contains("/console/setup?token=")
            && login.contains("qrtag console-password"),
        "the login page says where the link is: {login}"
    );

    let res = c.open(&url).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(header(&res, "referrer-policy"), Some("no-referrer"));
    assert_eq!(header(&res, "cache-control"), Some("no-store"));
    let form = res.text().await.expect("body");
    assert!(form.contains(r#"id="setup""#), "{form}");
    let csrf = csrf(&form);

    // A typo or a short password shows the form again and spends nothing.
    let res = c.choose(&csrf, token, PASSWORD, "poster-printing-43").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let body = res.text().await.expect("body");
    assert!(
        body.contains(r#"id="problem""#) && body.contains("differ"),
        "{body}"
    );
    assert!(body.contains(token), "the form again, with its token");
    let res = c.choose(&csrf, token, "short", "short").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(res.text().await.expect("body").contains("at least 10"));
    assert_eq!(c.stored_password().await, None);

    let res = c.choose(&csrf, token, PASSWORD, PASSWORD).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(header(&res, "location"), Some("/console/links"));
    let list = c.page("/links").await;
    assert!(list.contains(r#"data-user="admin""#), "logged in: {list}");
    let stored = c.stored_password().await.expect("a password is set");
    assert!(stored.starts_with("$argon2id$") && !stored.contains(PASSWORD));

    let res = c.open(&url).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "the link works once");
    assert!(res.text().await.expect("body").contains("used already"));
    assert_eq!(c.stored_password().await.as_deref(), Some(stored.as_str()));
}

#[tokio::test]
async fn a_wrong_or_missing_token_or_csrf_is_refused_and_writes_nothing() {
    let c = first_run_console(false).await;
    let url = c.setup_url();
    let token = token_of(&url);

    for path in ["/setup?token=guess", "/setup"] {
        let res = c.get(path).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{path}");
        let body = res.text().await.expect("body");
        assert!(
            body.contains(r#"id="problem""#)
                && body.contains("qrtag serve --console")
                && body.contains("terminal"),
            "says where the link is: {body}"
        );
    }
    // A session's CSRF token (from the login page), a made-up setup token.
    let session_csrf = csrf(&c.page("/login").await);
    let res = c.choose(&session_csrf, "guess", PASSWORD, PASSWORD).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    // The right setup token without the session's CSRF token.
    let no_csrf = [
        ("token", token),
        ("password", PASSWORD),
        ("again", PASSWORD),
    ];
    let res = c.post_raw("/setup", &no_csrf).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        res.text().await.expect("body"),
        qrtag::console::csrf::REFUSED
    );
    let res = c.choose("made-up", token, PASSWORD, PASSWORD).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(c.stored_password().await, None, "nothing written");

    assert_eq!(c.open(&url).await.status(), StatusCode::OK, "still usable");
}

/// `qrtag console-password` in another process (here its library call on
/// the same database) closes the link, even for a form already on screen.
#[tokio::test]
async fn a_password_set_elsewhere_closes_the_link_and_is_not_replaced() {
    let c = first_run_console(false).await;
    let url = c.setup_url();
    let token = token_of(&url);
    let form = c.open(&url).await.text().await.expect("body");
    let csrf = csrf(&form);

    password::set(&c.app.store(), PASSWORD)
        .await
        .expect("password set");
    let res = c
        .choose(&csrf, token, "chosen-on-the-page", "chosen-on-the-page")
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.text().await.expect("body").contains("has been set"));
    assert_eq!(c.open(&url).await.status(), StatusCode::FORBIDDEN);
    let login = c.page("/login").await;
    assert!(!login.contains(r#"id="first-run""#), "{login}");
    assert_eq!(
        c.login_with("chosen-on-the-page").await.status(),
        StatusCode::UNAUTHORIZED
    );
    c.login().await;
    // The write itself never replaces a password set meanwhile.
    assert!(
        !password::set_first(&c.app.store(), "chosen-on-the-page")
            .await
            .expect("store")
    );
}

#[tokio::test]
async fn setup_attempts_past_the_limit_get_429() {
    let c = first_run_console(false).await;
    let url = c.setup_url();
    for _ in 0..PER_ADDRESS {
        assert_eq!(
            c.get("/setup?token=guess").await.status(),
            StatusCode::FORBIDDEN
        );
    }
    let res = c.open(&url).await;
    assert_eq!(
        res.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "even the right one"
    );
    assert!(header(&res, "retry-after").is_some());
}

/// The attack that locked the administrator out every minute: twelve
/// addresses spend their tries on wrong tokens; the right one, from an
/// address with no failures, still sets the password.
#[tokio::test]
async fn wrong_tokens_from_twelve_addresses_do_not_lock_out_a_thirteenth() {
    let mut c = first_run_console(false).await;
    let url = c.setup_url();
    for last in 1..=12 {
        c.http = browser_from([127, 0, 0, last]);
        for _ in 0..PER_ADDRESS {
            let res = c.get("/setup?token=guess").await;
            assert_eq!(res.status(), StatusCode::FORBIDDEN, "127.0.0.{last}");
        }
        let res = c.open(&url).await;
        assert_eq!(
            res.status(),
            StatusCode::TOO_MANY_REQUESTS,
            "127.0.0.{last}"
        );
    }
    c.http = browser_from([127, 0, 0, 13]);
    let res = c.open(&url).await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "the right token from a clean address"
    );
    let csrf = csrf(&res.text().await.expect("body"));
    let res = c.choose(&csrf, token_of(&url), PASSWORD, PASSWORD).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(c.get("/links").await.status(), StatusCode::OK);
}

#[tokio::test]
async fn with_a_password_at_start_there_is_no_setup_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.console = Some(Default::default());
    let db = SqliteStore::open_with(&dir.path().join("qrtag.db"), Access::Create).expect("db");
    password::set(&db, PASSWORD).await.expect("password set");
    let c = Console {
        app: spawn_with(settings, dir).await,
        http: browser(),
    };
    assert_eq!(c.app.console_setup_url, None);
    assert_eq!(
        c.get("/setup?token=anything").await.status(),
        StatusCode::FORBIDDEN
    );
    let login = c.page("/login").await;
    assert!(!login.contains(r#"id="first-run""#), "{login}");
    c.login().await;
}

/// The whole first run as a newcomer meets it: the real `qrtag serve
/// --console` on port 0, its link read from its terminal (stderr), followed
/// with a browser, then a login elsewhere with the password chosen there.
#[tokio::test]
async fn qrtag_serve_prints_the_link_and_the_password_chosen_there_logs_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    // Debug logging on: the token must still appear only in its own line.
    let srv = ServerProcess::spawn(&db, &["--console"], &[("QRTAG_LOG", "debug")], false).await;
    let line = poll::until(Duration::from_secs(5), "the setup link on stderr", || {
        let line = srv
            .stderr()
            .lines()
            .find(|l| l.starts_with(ANNOUNCED))
            .map(str::to_owned);
        std::future::ready(line)
    })
    .await;
    assert!(line.contains("qrtag console-password"), "{line}");
    let url = line[ANNOUNCED.len()..]
        .split_whitespace()
        .next()
        .expect("the link")
        .to_owned();
    assert!(
        url.starts_with(&srv.admin_url("/console/setup?token=")),
        "{url}"
    );
    let token = token_of(&url);

    let newcomer = browser();
    let form = newcomer.get(&url).send().await.expect("GET");
    assert_eq!(form.status(), StatusCode::OK);
    let csrf_token = csrf(&form.text().await.expect("body"));
    let res = newcomer
        .post(srv.admin_url("/console/setup"))
        .form(&[
            ("csrf", csrf_token.as_str()),
            ("token", token),
            ("password", PASSWORD),
            ("again", PASSWORD),
        ])
        .send()
        .await
        .expect("POST");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let list = newcomer
        .get(srv.admin_url("/console/links"))
        .send()
        .await
        .expect("GET");
    assert_eq!(list.status(), StatusCode::OK, "logged in by the setup");
    let again = newcomer.get(&url).send().await.expect("GET");
    assert_eq!(again.status(), StatusCode::FORBIDDEN, "the link works once");

    let later = browser();
    let login = later
        .get(srv.admin_url("/console/login"))
        .send()
        .await
        .expect("GET");
    let login_csrf = csrf(&login.text().await.expect("body"));
    let res = later
        .post(srv.admin_url("/console/login"))
        .form(&[("csrf", login_csrf.as_str()), ("password", PASSWORD)])
        .send()
        .await
        .expect("POST");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(header(&res, "location"), Some("/console/links"));

    let stderr = srv.stderr();
    assert_eq!(stderr.matches(token).count(), 1, "{stderr}");
    let log = std::fs::read_to_string(dir.path().join("access.log")).unwrap_or_default();
    assert!(!log.contains(token), "{log}");
    srv.stop().await;
}

/// The link is printed last of the start, on its own between a blank line
/// and a rule above and below (issue 18: it was lost among the log lines):
/// after the listening line and the links' loading.
#[tokio::test]
async fn the_setup_link_is_printed_last_and_framed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    let srv = ServerProcess::spawn(&db, &["--console"], &[("QRTAG_LOG", "info")], false).await;
    let lines: Vec<String> = poll::until(Duration::from_secs(5), "the framed setup link", || {
        let lines: Vec<String> = srv.stderr().lines().map(str::to_owned).collect();
        let at = lines.iter().position(|l| l.starts_with(ANNOUNCED));
        let closed = at.is_some_and(|i| lines.len() > i + 1);
        std::future::ready(closed.then_some(lines))
    })
    .await;
    let at = lines
        .iter()
        .position(|l| l.starts_with(ANNOUNCED))
        .expect("the link");
    assert!(at >= 3, "{lines:#?}");
    let rule = "=".repeat(lines[at].chars().count());
    assert_eq!(
        &lines[at - 2..=at + 1],
        ["", rule.as_str(), lines[at].as_str(), rule.as_str()],
        "{lines:#?}"
    );
    let before = &lines[..at - 2];
    assert!(
        before.iter().any(|l| l.starts_with("listening public=")),
        "{lines:#?}"
    );
    assert!(
        before.iter().any(|l| l.contains("links loaded")),
        "after the links are loaded: {lines:#?}"
    );
    srv.stop().await;
}

//! The console per domain (issue 36) over HTTP against the real
//! application on port 0: two domains whose stores hold the same key
//! leading to different places; each page shows the domain it names
//! (`?domain=`, a form's field, else the cookie the console sets), each
//! write goes to the shown domain's store, and a domain the service does
//! not serve is the 404 of a page that does not exist.

mod support;

use std::path::Path;
use std::time::Duration;

use qrtag::settings::Settings;
use qrtag::settings::domains::{DomainSettings, ServedDomains};
use qrtag::store::options::StoreSettings;
use qrtag::values::host::Host;
use qrtag::values::public_url::PublicUrl;
use reqwest::StatusCode;
use support::console::{browser, csrf, get_page, log_in, post_form};
use support::{TestApp, eventually, header, spawn_with, test_settings};

const A: &str = "0x1f.ie";
const B: &str = "qr.brand-b.ie";
const PASSWORD: &str = "two-brands-one-console";

/// `0x1f.ie`, the default (the test's database), and `qr.brand-b.ie` with
/// `b.db` and `b.log` beside it.
fn two_domains(dir: &Path, settings: &mut Settings) {
    settings.domains = ServedDomains {
        default_host: Some(Host::parse(A).expect("host")),
        others: vec![DomainSettings {
            host: Host::parse(B).expect("host"),
            public_url: PublicUrl::parse("https://qr.brand-b.ie").expect("url"),
            store: StoreSettings::Sqlite {
                path: dir.join("b.db"),
            },
            access_log: dir.join("b.log"),
            snapshot_file: None,
            dead_tag: Default::default(),
            root: None,
        }],
        unknown_host: Default::default(),
    };
}

/// The console over two domains, its admin logged in.
async fn console() -> (TestApp, reqwest::Client, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    support::init_db(&db);
    support::console::set_password(&db, PASSWORD);
    let mut settings = test_settings(dir.path());
    two_domains(dir.path(), &mut settings);
    settings.console = Some(qrtag::console::ConsoleSettings::default());
    let app = spawn_with(settings, dir).await;
    let base = format!("http://{}/console", app.admin);
    let http = browser();
    log_in(&http, &base, PASSWORD).await;
    (app, http, base)
}

/// A scan of `/key` on the public listener as `host`: its Location.
async fn scan(app: &TestApp, host: &str, key: &str) -> Option<String> {
    let r = app
        .client
        .get(app.url(&format!("/{key}")))
        .header(reqwest::header::HOST, host)
        .send()
        .await
        .expect("scan");
    header(&r, "location").map(str::to_owned)
}

/// Waits until a scan of `/key` as `host` leads to `to`.
async fn leads(app: &TestApp, host: &str, key: &str, to: &str) {
    eventually(Duration::from_secs(2), || async {
        scan(app, host, key).await.as_deref() == Some(to)
    })
    .await;
}

/// A form posted with the token of the page at `page`, and `fields`.
async fn post_from(
    http: &reqwest::Client,
    page: &str,
    to: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let token = csrf(&get_page(http, page).await);
    let mut form = vec![("csrf", token.as_str())];
    form.extend_from_slice(fields);
    post_form(http, to, &form).await
}

/// The options of the page's domain switcher.
fn switcher_options(page: &str) -> usize {
    page.split_once(r#"id="domain-switcher""#)
        .and_then(|(_, rest)| rest.split_once("</form>"))
        .map_or("", |(form, _)| form)
        .matches("<option value=")
        .count()
}

#[tokio::test]
async fn each_page_shows_and_writes_the_domain_it_names() {
    let (app, http, base) = console().await;
    let links = format!("{base}/links");

    // The same key on both domains, made through the console's create
    // form: the default's without a domain, B's with the form's field.
    let res = post_from(
        &http,
        &links,
        &links,
        &[("key", "poster"), ("url", "https://brand-a.example/poster")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "A's poster made");
    let res = post_from(
        &http,
        &links,
        &links,
        &[
            ("key", "poster"),
            ("url", "https://brand-b.example/poster"),
            ("domain", B),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "B's poster made");
    let res = post_from(
        &http,
        &links,
        &links,
        &[
            ("key", "menu"),
            ("url", "https://brand-b.example/menu"),
            ("domain", B),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "B's menu made");
    leads(&app, A, "poster", "https://brand-a.example/poster").await;
    leads(&app, B, "poster", "https://brand-b.example/poster").await;
    leads(&app, B, "menu", "https://brand-b.example/menu").await;
    assert_eq!(scan(&app, A, "menu").await, None, "menu is B's alone");

    // Each link page shows its own domain's link and short URL.
    let a_page = get_page(&http, &format!("{base}/link?key=poster&domain={A}")).await;
    assert!(
        a_page.contains("https://brand-a.example/poster"),
        "{a_page}"
    );
    assert!(!a_page.contains("brand-b.example"), "{a_page}");
    assert!(a_page.contains("https://0x1f.ie/poster"), "{a_page}");
    let b_page = get_page(&http, &format!("{base}/link?key=poster&domain={B}")).await;
    assert!(
        b_page.contains("https://brand-b.example/poster"),
        "{b_page}"
    );
    assert!(!b_page.contains("brand-a.example"), "{b_page}");
    assert!(b_page.contains("https://qr.brand-b.ie/poster"), "{b_page}");
    // Its forms carry the domain, so a write goes where the page was.
    assert!(
        b_page.contains(&format!(r#"name="domain" value="{B}""#)),
        "{b_page}"
    );

    // Its image, downloads and GET forms are B's too.
    assert!(
        b_page.contains(r#"src="/qr/poster.png?"#)
            && b_page.contains(&format!("&amp;domain={B}\" alt=")),
        "{b_page}"
    );
    let image = http
        .get(format!("http://{}/qr/poster.svg?domain={B}", app.admin))
        .send()
        .await
        .expect("GET");
    assert_eq!(image.status(), StatusCode::OK);
    for form in ["qr-options", "label-pdf", "poster-pdf"] {
        let at = b_page
            .find(&format!(r#"id="{form}""#))
            .unwrap_or_else(|| panic!("no {form} form: {b_page}"));
        let end = at + b_page[at..].find("</form>").expect("form end");
        assert!(
            b_page[at..end].contains(&format!(r#"name="domain" value="{B}""#)),
            "{form}: {}",
            &b_page[at..end]
        );
    }

    // The switcher lists the user's domains, the shown one selected, and
    // returns to the same page; the page names its domain.
    for (page, shown) in [(&a_page, A), (&b_page, B)] {
        assert!(page.contains(r#"id="domain-switcher""#), "{page}");
        assert!(
            page.contains(r#"<input type="hidden" name="key" value="poster">"#),
            "the switcher keeps the page's query: {page}"
        );
        assert!(
            page.contains(&format!(r#"<option value="{shown}" selected>"#)),
            "{page}"
        );
        assert!(
            page.contains(&format!("· {shown} · qrtag</title>")),
            "{page}"
        );
        assert_eq!(switcher_options(page), 2, "{page}");
    }

    // The cookie set by the page that named B keeps the list on B.
    let list = get_page(&http, &links).await;
    assert!(list.contains("data-key=\"menu\""), "B's list: {list}");
    let list = get_page(&http, &format!("{links}?domain={A}")).await;
    assert!(!list.contains("data-key=\"menu\""), "A's list: {list}");
    assert!(list.contains("data-key=\"poster\""), "A's list: {list}");

    // A repoint from B's page reaches B's scans only, though the cookie
    // now names A (another tab).
    let res = post_from(
        &http,
        &format!("{base}/link?key=poster&domain={B}"),
        &format!("{base}/link/destination"),
        &[
            ("key", "poster"),
            ("url", "https://brand-b.example/new-poster"),
            ("domain", B),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "B's poster repointed");
    leads(&app, B, "poster", "https://brand-b.example/new-poster").await;
    assert_eq!(
        scan(&app, A, "poster").await.as_deref(),
        Some("https://brand-a.example/poster")
    );

    // A print run is of the domain it was made on: its tags carry that
    // domain's URL, so asked for on another domain it is shown on its own.
    let res = post_from(
        &http,
        &format!("{base}/sheet"),
        &format!("{base}/sheet"),
        &[("count", "2"), ("domain", B)],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "B's print run");
    let run = header(&res, "location").expect("the run's page").to_owned();
    assert!(run.contains(&format!("domain={B}")), "{run}");
    let _ = get_page(&http, &format!("{links}?domain={A}")).await;
    for path in [
        "/sheet?batch=1",
        "/sheet/download?batch=1&page=0",
        "/sheet/pdf?batch=1",
    ] {
        let res = http.get(format!("{base}{path}")).send().await.expect("GET");
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{path}");
        let to = header(&res, "location").expect("location");
        assert!(to.ends_with(&format!("&domain={B}")), "{path}: {to}");
    }
    let sheet = get_page(
        &http,
        &format!("{base}/sheet/download?batch=1&page=0&domain={B}"),
    )
    .await;
    assert!(sheet.contains("<svg"), "{sheet}");

    // A domain not served is a page that does not exist, and says no more.
    let missing = http
        .get(format!("{base}/no-such-page"))
        .send()
        .await
        .expect("GET");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let missing = missing.text().await.expect("body");
    for path in [
        "/links?domain=brand-c.example".to_owned(),
        "/link?key=poster&domain=brand-c.example".to_owned(),
        "/dashboard?domain=brand-c.example".to_owned(),
    ] {
        let res = http.get(format!("{base}{path}")).send().await.expect("GET");
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(res.text().await.expect("body"), missing, "{path}");
    }
    let res = post_from(
        &http,
        &links,
        &links,
        &[
            ("key", "stray"),
            ("url", "https://brand-c.example/"),
            ("domain", "brand-c.example"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND, "no write elsewhere");
    assert_eq!(scan(&app, A, "stray").await, None);
}

#[tokio::test]
async fn a_console_of_one_domain_has_no_switcher() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    support::init_db(&db);
    support::console::set_password(&db, PASSWORD);
    let mut settings = test_settings(dir.path());
    settings.console = Some(qrtag::console::ConsoleSettings::default());
    let app = spawn_with(settings, dir).await;
    let base = format!("http://{}/console", app.admin);
    let http = browser();
    log_in(&http, &base, PASSWORD).await;
    let list = get_page(&http, &format!("{base}/links")).await;
    assert!(!list.contains("domain-switcher"), "{list}");
    assert!(!list.contains(r#"name="domain""#), "{list}");
    assert!(list.contains("<title>Links · qrtag</title>"), "{list}");
}

/// `qrtag ARGS` in `dir` with a `qrtag.toml` listing the two domains.
fn cli(dir: &Path, args: &[&str]) -> std::process::Output {
    std::fs::write(
        dir.join("qrtag.toml"),
        format!(
            r#"db = "qrtag.db"
public_url = "https://{A}"

[[domains]]
host = "{A}"

[[domains]]
host = "{B}"
public_url = "https://{B}"
sqlite = "b.db"
access_log = "b.log"
"#
        ),
    )
    .expect("config");
    support::qrtag_bin()
        .args(args)
        .env("QRTAG_CONFIG", dir.join("qrtag.toml"))
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run qrtag")
}

/// Accepts the invitation `qrtag user add` printed (`out`), logging
/// `http` in with `password`.
async fn accept(http: &reqwest::Client, base: &str, out: &std::process::Output, password: &str) {
    assert!(
        out.status.success(),
        "user add: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let link = String::from_utf8_lossy(&out.stdout).into_owned();
    let token = link
        .trim()
        .split_once("token=")
        .expect("an invitation link")
        .1
        .to_owned();
    let page = format!("{base}/invite");
    let html = get_page(http, &format!("{page}?token={token}")).await;
    let res = post_form(
        http,
        &page,
        &[
            ("csrf", csrf(&html).as_str()),
            ("token", token.as_str()),
            ("password", password),
            ("again", password),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "invitation accepted");
}

#[tokio::test]
async fn a_user_given_domain_b_sees_b_alone() {
    let (app, admin, base) = console().await;
    let dir = app.dir.path();
    let links = format!("{base}/links");
    for (domain, key) in [(A, "poster"), (B, "poster"), (B, "menu")] {
        let url = format!("https://{domain}.example/{key}");
        let res = post_from(
            &admin,
            &links,
            &links,
            &[("key", key), ("url", &url), ("domain", domain)],
        )
        .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{domain} {key}");
    }

    // A host the configuration does not list is refused in one line.
    let out = cli(
        dir,
        &[
            "user",
            "add",
            "stray",
            "--role",
            "viewer",
            "--domains",
            "brand-c.example",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no domain brand-c.example"), "{err}");

    let bee = browser();
    let out = cli(
        dir,
        &["user", "add", "bee", "--role", "editor", "--domains", B],
    );
    accept(&bee, &base, &out, "bee-keeps-brand-b").await;
    // `user list` says whom each user sees: bee B alone, the admin all.
    let out = cli(dir, &["user", "list"]);
    assert!(out.status.success());
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let domains_of = |name: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(&format!("{name}\t")))
            .and_then(|l| l.split('\t').nth(4))
            .map(str::to_owned)
    };
    assert_eq!(domains_of("bee").as_deref(), Some(B), "{listed}");
    assert_eq!(domains_of("admin").as_deref(), Some("*"), "{listed}");

    // Bee's list is B's, the switcher lists B alone.
    let list = get_page(&bee, &links).await;
    assert!(list.contains("data-key=\"menu\""), "{list}");
    assert_eq!(switcher_options(&list), 1, "{list}");
    assert!(
        list.contains(&format!(r#"<option value="{B}" selected>"#)),
        "{list}"
    );
    // A's pages are pages that do not exist, and A takes no write of bee's.
    let missing = bee
        .get(format!("{base}/no-such-page"))
        .send()
        .await
        .expect("GET")
        .text()
        .await
        .expect("body");
    for path in [
        format!("/links?domain={A}"),
        format!("/link?key=poster&domain={A}"),
        format!("/dashboard?domain={A}"),
    ] {
        let res = bee.get(format!("{base}{path}")).send().await.expect("GET");
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(res.text().await.expect("body"), missing, "{path}");
    }
    let res = post_from(
        &bee,
        &links,
        &links,
        &[
            ("key", "stray"),
            ("url", "https://a.example/"),
            ("domain", A),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert_eq!(scan(&app, A, "stray").await, None);
    // The admins' users page shows each user's domains.
    let users = get_page(&admin, &format!("{base}/users")).await;
    assert!(users.contains(&format!(r#"data-domains="{B}""#)), "{users}");
    assert!(users.contains("every domain"), "{users}");

    // Every domain again, from the users page: bee's session ends, and
    // the next login sees both.
    let res = post_from(
        &admin,
        &format!("{base}/users"),
        &format!("{base}/users/role"),
        &[("name", "bee"), ("role", "editor"), ("domains", "")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    eventually(Duration::from_secs(3), || async {
        bee.get(&links).send().await.expect("GET").status() == StatusCode::SEE_OTHER
    })
    .await;
    let res = support::console::log_in_as(&bee, &base, "bee", "bee-keeps-brand-b").await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let list = get_page(&bee, &format!("{links}?domain={A}")).await;
    assert_eq!(switcher_options(&list), 2, "{list}");
}

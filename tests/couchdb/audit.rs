//! Issue 35: the audit log on CouchDB, in its own database beside the
//! links (`LINKS-audit`, made by `qrtag setup`), on PouchDB Server and on
//! Apache CouchDB: entries appended through the store read back newest
//! first within their bounds, and CouchDB itself refuses to change or
//! delete one (`assets/couchdb/validate_audit.js`), even for a server admin.

use qrtag::store::options::StoreSettings;
use qrtag::store::{Access, open};
use qrtag::values::actor::Actor;
use qrtag::values::audit::{AuditQuery, Event, Surface};
use qrtag::values::secret::Secret;
use serde_json::json;

use crate::apache::{ADMIN, ApacheCouch};
use crate::harness::{
    ConsoleClient, Couch, couch_settings, editor_and_reader, qrtag, stderr, user_env,
};
use crate::pouchdb::PouchDb;

/// Appends three entries as `writer`, reads them back, then tries to
/// change and delete one through `audit_db` (the audit database, as a
/// server admin where there are accounts).
async fn check(url: &str, writer: Option<(&str, &str)>, audit_db: &Couch, server: &str) {
    let mut settings = couch_settings(url, "links");
    if let Some((user, password)) = writer {
        settings = settings.with_credentials(user, Some(Secret::new(password)));
    }
    let store = open(&StoreSettings::CouchDb(settings), Access::Write).expect("store");
    let before = chrono::Utc::now();
    let events = [
        Event::failed_login("mallory", "192.0.2.9"),
        Event::Login {
            address: Some("192.0.2.1".into()),
        },
        Event::bulk("disable", &["a", "b", "c"]),
    ];
    for event in events.clone() {
        assert!(
            qrtag::store::audit::record(
                &*store,
                Actor::Console { user: "ann".into() },
                Surface::Console,
                event,
            )
            .await,
            "{server}: the entry was not kept"
        );
    }
    let all = store
        .audit(&AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .expect("read");
    let kinds: Vec<&str> = all.iter().map(|e| e.event.kind()).collect();
    assert_eq!(
        kinds,
        ["bulk", "login", "failed_login"],
        "{server}: newest first"
    );
    assert_eq!(all[2].event, events[0], "{server}");
    // A page: the two after the newest; and --since, which drops nothing here.
    let page = store
        .audit(&AuditQuery {
            before: Some(all[0].id.clone()),
            limit: 1,
            since: Some(before),
        })
        .await
        .expect("page");
    assert_eq!(page, all[1..2], "{server}");
    let later = store
        .audit(&AuditQuery {
            since: Some(chrono::Utc::now() + chrono::Duration::seconds(5)),
            limit: 10,
            before: None,
        })
        .await
        .expect("since");
    assert!(later.is_empty(), "{server}: {later:?}");

    // CouchDB refuses a change and a deletion of an existing entry.
    let id = &all[1].id;
    let (status, body) = audit_db
        .try_put(
            id,
            json!({"at": "2020-01-01T00:00:00Z", "surface": "console",
                   "actor": {"kind": "console", "user": "someone else"},
                   "event": {"kind": "logout"}}),
        )
        .await;
    assert_eq!(status, 403, "{server}: an entry was changed: {body}");
    assert!(
        body["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("append-only"),
        "{server}: {body}"
    );
    let rev = audit_db.get(id).await.expect("the entry")["_rev"]
        .as_str()
        .expect("rev")
        .to_owned();
    let (status, body) = audit_db
        .call(
            reqwest::Method::DELETE,
            &format!("links-audit/{id}?rev={rev}"),
            None,
        )
        .await;
    assert_eq!(status, 403, "{server}: an entry was deleted: {body}");
    let (status, body) = audit_db
        .try_put("20990101T000000.000000Z-00000000", json!({"hello": 1}))
        .await;
    assert_eq!(status, 403, "{server}: not an entry, taken: {body}");
    let again = store
        .audit(&AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .expect("read");
    assert_eq!(again, all, "{server}: the log changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pouchdb_keeps_an_append_only_audit_log() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let env = [
        ("QRTAG_COUCHDB_URL", url.as_str()),
        ("QRTAG_PUBLIC_URL", crate::harness::PUBLIC_URL),
    ];
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("database links-audit (audit log): created"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    check(
        &url,
        None,
        &Couch::new(&url, "links-audit"),
        "PouchDB Server",
    )
    .await;
    // `qrtag audit` reads the same entries, oldest first.
    let out = qrtag(&["audit", "--limit", "2"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let kinds: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            v["event"]["kind"].as_str().unwrap_or("?").to_owned()
        })
        .collect();
    assert_eq!(kinds, ["login", "bulk"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_keeps_an_append_only_audit_log() {
    let Some(server) = ApacheCouch::start("apache_couchdb_keeps_an_append_only_audit_log").await
    else {
        return;
    };
    let url = server.url();
    editor_and_reader(&server.admin()).await;
    let env = user_env(&url, ADMIN.0, ADMIN.1);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("QRTAG_PUBLIC_URL", crate::harness::PUBLIC_URL));
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // The service's reader writes entries (a failed login has no user);
    // the server admin cannot change them.
    let admin = Couch::new(&url, "links-audit").with_user(ADMIN.0, ADMIN.1);
    check(&url, Some(("rd", "rd-pw-1")), &admin, "Apache CouchDB").await;
}

/// The console on CouchDB: the service (reading as `rd`) records logins
/// and failed logins in `links-audit`; the server admin `boss` reads them
/// on the Audit page, newest first and a page at a time; the editor `ed`
/// gets 403 there, and a CouchDB user with no qrtag role, whom no
/// database admits, is not let in (issue 36).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_records_logins_and_shows_the_audit_log_to_admins_only() {
    use crate::harness::{TestApp, accounts};
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let admin = accounts(&url).await;
    let env = user_env(&url, "boss", "boss-pw-1");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (status, body) = admin
        .call(
            reqwest::Method::PUT,
            "_users/org.couchdb.user:vi",
            Some(json!({"name": "vi", "password": "vi-pw-1", "roles": [], "type": "user"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let service =
        couch_settings(&url, "links").with_credentials("rd", Some(Secret::new("rd-pw-1")));
    let dir = tempfile::tempdir().expect("tempdir");
    let app = TestApp::spawn_with(service, dir.path(), |s| {
        s.console = Some(qrtag::console::ConsoleSettings::default());
    })
    .await;
    app.wait_ready(crate::START).await;

    let stranger = ConsoleClient::new(&app.admin);
    assert_eq!(stranger.login("mallory", "guess").await, 401);
    let s = ConsoleClient::new(&app.admin);
    assert_eq!(s.login("ed", "ed-pw-1").await, 303, "ed logs in");
    let (status, body) = s.get("/audit").await;
    assert_eq!(status, 403, "ed reads the audit log: {body}");
    // Issue 36: a CouchDB user no domain's database admits (no qrtag role,
    // not a member) opens no domain, so is not let in at all.
    let s = ConsoleClient::new(&app.admin);
    assert_eq!(s.login("vi", "vi-pw-1").await, 403, "vi logs in");
    assert_eq!(s.get("/audit").await.0, 303, "vi reads the audit log");
    // Not logged in: the way to the login, not the log.
    assert_eq!(stranger.get("/audit").await.0, 303);

    let boss = ConsoleClient::new(&app.admin);
    assert_eq!(boss.login("boss", "boss-pw-1").await, 303);
    let (status, page) = boss.get("/audit").await;
    assert_eq!(status, 200, "{page}");
    let kinds: Vec<&str> = page
        .split(r#"data-kind=""#)
        .skip(1)
        .map(|r| &r[..r.find('"').expect("end")])
        .collect();
    assert_eq!(kinds, ["login", "login", "failed_login"], "{page}");
    assert!(
        page.contains("failed login as &quot;mallory&quot;"),
        "{page}"
    );
    assert!(page.contains("boss (console)"), "{page}");
    assert!(!page.contains(r#"id="audit-older""#), "one page: {page}");

    // More than a page: the next page starts below the last entry shown.
    let store = qrtag::store::open(
        &qrtag::store::options::StoreSettings::CouchDb(
            couch_settings(&url, "links").with_credentials("rd", Some(Secret::new("rd-pw-1"))),
        ),
        Access::Write,
    )
    .expect("store");
    for n in 0..60 {
        qrtag::store::audit::record(
            &*store,
            Actor::Cli {
                os_user: format!("u{n}"),
                host: "box".into(),
            },
            Surface::Cli,
            Event::SettingsChanged {
                setting: "console_password".into(),
            },
        )
        .await;
    }
    let (_, first) = boss.get("/audit").await;
    assert_eq!(first.matches("<tr data-id=").count(), 50, "{first}");
    assert!(first.contains("cli (u59@box)"), "newest first: {first}");
    let marker = r#"id="audit-older" href=""#;
    let at = first.find(marker).expect("older") + marker.len();
    let href = first[at..at + first[at..].find('"').expect("end")].replace("&amp;", "&");
    let (status, second) = boss.get(href.trim_start_matches("/console")).await;
    assert_eq!(status, 200, "{second}");
    // The second page: the 10 oldest settings entries, the logins, no overlap.
    assert_eq!(second.matches("<tr data-id=").count(), 13, "{second}");
    assert!(
        second.contains("cli (u9@box)") && !second.contains("cli (u10@box)"),
        "{second}"
    );
    assert!(second.contains(r#"id="audit-newest""#), "{second}");
    let (status, _) = boss.get(&format!("/audit?before={}", "x".repeat(65))).await;
    assert_eq!(status, 400);
}

/// `qrtag_audit_write_failures_total` as the admin listener shows it.
async fn audit_failures(admin: &str) -> f64 {
    let text = reqwest::get(format!("{admin}/metrics"))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("body");
    text.lines()
        .find_map(|l| l.strip_prefix("qrtag_audit_write_failures_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no audit failure counter in {text}"))
}

/// A store that cannot take an entry (the audit database gone: a server
/// upgraded without `qrtag setup`) fails no login: the right password
/// still logs in, a wrong one is still a 401, not a 500, and each lost
/// entry is counted on `/metrics`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_audit_entry_fails_no_login_and_is_counted() {
    use crate::harness::{TestApp, accounts};
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let admin = accounts(&url).await;
    let env = user_env(&url, "boss", "boss-pw-1");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (status, body) = admin
        .call(reqwest::Method::DELETE, "links-audit", None)
        .await;
    assert_eq!(status, 200, "{body}");
    let service =
        couch_settings(&url, "links").with_credentials("rd", Some(Secret::new("rd-pw-1")));
    let dir = tempfile::tempdir().expect("tempdir");
    let app = TestApp::spawn_with(service, dir.path(), |s| {
        s.console = Some(qrtag::console::ConsoleSettings::default());
    })
    .await;
    app.wait_ready(crate::START).await;
    let before = audit_failures(&app.admin).await;
    let s = ConsoleClient::new(&app.admin);
    assert_eq!(s.login("ed", "wrong").await, 401);
    assert_eq!(s.login("ed", "ed-pw-1").await, 303);
    let after = audit_failures(&app.admin).await;
    assert!(after >= before + 2.0, "{before} -> {after}");
}

/// An `import --new-database` that fails while setting up the audit
/// database deletes it with the links and keys databases it made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_new_database_import_deletes_its_audit_database_too() {
    let pouch = PouchDb::start().await;
    let proxy = crate::proxy::RefusingProxy::start(
        pouch.url().replace("http://", ""),
        "PUT /links-audit/_design/",
    )
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("links.csv");
    std::fs::write(&path, "key,url\na,https://a.example/\n").expect("write");
    let out = qrtag(
        &["import", "--new-database", path.to_str().expect("utf-8")],
        &[("QRTAG_COUCHDB_URL", proxy.url().as_str())],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let couch = Couch::new(&pouch.url(), "links");
    for db in ["links", "links-keys", "links-audit", "links-history"] {
        let (status, body) = couch.call(reqwest::Method::GET, db, None).await;
        assert_eq!(status, 404, "{db} is left behind: {body}");
    }
}

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
use crate::harness::{Couch, couch_settings, editor_and_reader, qrtag, stderr, user_env};
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

//! Issue 36: several domains on CouchDB, one database a domain: the same
//! key in two databases leads to two places, each followed on its own.

use std::time::Duration;

use qrtag::settings::domains::{DomainSettings, ServedDomains};
use qrtag::store::options::StoreSettings;
use qrtag::values::host::Host;
use qrtag::values::public_url::PublicUrl;
use serde_json::json;

use crate::harness::{Couch, TestApp, couch_settings, eventually};
use crate::pouchdb::PouchDb;

/// Where `/key` on `host` leads (`None`: any answer but a redirect).
async fn location(app: &TestApp, host: &str, key: &str) -> Option<String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let res = http
        .get(format!("{}/{key}", app.public))
        .header(reqwest::header::HOST, host)
        .send()
        .await
        .expect("the public listener answers");
    (res.status() == 302)
        .then(|| {
            res.headers()
                .get("location")?
                .to_str()
                .ok()
                .map(str::to_owned)
        })
        .flatten()
}

#[tokio::test]
async fn two_databases_one_key_two_destinations() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    // The default domain's `links` (H83if → https://a.example/one) ...
    let _a = Couch::with_two_links(&url).await;
    // ... and the second domain's own database, the same key elsewhere.
    let b = Couch::new(&url, "links-b");
    b.create_db().await;
    b.put("H83if", json!({"url": "https://b.example/one"}))
        .await;
    let dir = tempfile::tempdir().expect("temporary directory");
    let b_log = dir.path().join("b.log");
    let app = TestApp::spawn_with(couch_settings(&url, "links"), dir.path(), |s| {
        s.domains = ServedDomains {
            default_host: Some(Host::parse("qr.test").expect("host")),
            others: vec![DomainSettings {
                host: Host::parse("qr.b.test").expect("host"),
                public_url: PublicUrl::parse("http://qr.b.test").expect("url"),
                store: StoreSettings::CouchDb(couch_settings(&url, "links-b")),
                access_log: b_log.clone(),
                snapshot_file: Some(dir.path().join("links-b.snapshot")),
                dead_tag: Default::default(),
                root: None,
            }],
            unknown_host: Default::default(),
        };
    })
    .await;
    let app = &app;
    let within = Duration::from_secs(10);
    let a_one = eventually(within, "qr.test's H83if", || async move {
        location(app, "qr.test", "H83if").await
    })
    .await;
    let b_one = eventually(within, "qr.b.test's H83if", || async move {
        location(app, "qr.b.test", "H83if").await
    })
    .await;
    assert_eq!(
        (a_one.as_str(), b_one.as_str()),
        ("https://a.example/one", "https://b.example/one")
    );
    // An edit in one database reaches that domain's scans only.
    b.put("fresh", json!({"url": "https://b.example/fresh"}))
        .await;
    let fresh = eventually(within, "qr.b.test's new link", || async move {
        location(app, "qr.b.test", "fresh").await
    })
    .await;
    assert_eq!(fresh, "https://b.example/fresh");
    assert_eq!(location(app, "qr.test", "fresh").await, None);
    assert_eq!(location(app, "elsewhere.test", "H83if").await, None);
}

/// Brand A's editor `ed-a` in `links`, brand B's `ed-b` in `links-b`, and
/// the service's reader `rd`: each database prepared by `qrtag setup`,
/// its `_security` members then named by hand (the brand's editor and the
/// reader, none of qrtag's roles), and setup run again, as the next deploy
/// would (which must keep them).
async fn two_brands(url: &str, admin: &Couch) {
    use crate::apache::ADMIN;
    use crate::harness::stderr;
    use reqwest::Method;

    for (name, role) in [
        ("ed-a", "qrtag_editor"),
        ("ed-b", "qrtag_editor"),
        ("rd", "qrtag_reader"),
    ] {
        let (status, body) = admin
            .call(
                Method::PUT,
                &format!("_users/org.couchdb.user:{name}"),
                Some(json!({"name": name, "password": format!("{name}-pw-1"),
                            "roles": [role], "type": "user"})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    let setup = |db: &'static str| async move {
        let out = qrtag_on(url, db, ADMIN, &["setup"]).await;
        assert!(out.status.success(), "setup of {db}: {}", stderr(&out));
    };
    for (db, editor) in [("links", "ed-a"), ("links-b", "ed-b")] {
        setup(db).await;
        let (status, mut security) = admin
            .call(Method::GET, &format!("{db}/_security"), None)
            .await;
        assert_eq!(status, 200, "{security}");
        security["members"] = json!({"names": [editor, "rd"], "roles": []});
        let (status, body) = admin
            .call(Method::PUT, &format!("{db}/_security"), Some(security))
            .await;
        assert_eq!(status, 200, "{body}");
        // The next deploy's setup.
        setup(db).await;
    }
}

// Issue 36: each domain's database kept to its own people by Apache
// CouchDB's `_security` (PouchDB Server does not enforce `_security` on
// reads or writes: every account reads and writes there, so this test is
// Apache CouchDB's alone).

/// `qrtag ARGS` as the CouchDB account `user` on the database `db`.
async fn qrtag_on(url: &str, db: &str, user: (&str, &str), args: &[&str]) -> std::process::Output {
    let env = crate::harness::user_env(url, user.0, user.1);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("QRTAG_COUCHDB_DB", db));
    crate::harness::qrtag(args, &env).await
}

/// Brand A's editor in `links`, brand B's in `links-b`, each database
/// prepared by `qrtag setup` and its `_security` then naming its editor
/// and the service's reader (a deploy runs setup again: that must keep
/// them). Each editor creates and repoints in its own database and is
/// refused in the other's in one line, through the CLI and through the
/// console; `serve` with both domains, following as the reader, scans
/// each key to its own destination and takes an edit in either database
/// within the usual bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_keeps_each_domains_database_to_its_own_editor() {
    use crate::apache::ApacheCouch;
    use crate::harness::{ConsoleClient, stderr};
    use qrtag::values::secret::Secret;
    use reqwest::Method;

    let Some(server) = ApacheCouch::start("apache_couchdb_domains_security").await else {
        return;
    };
    let url = server.url();
    let admin = server.admin();
    two_brands(&url, &admin).await;
    let (ed_a, ed_b) = (("ed-a", "ed-a-pw-1"), ("ed-b", "ed-b-pw-1"));

    // Each editor creates and repoints in its own database.
    for (db, editor, dest) in [("links", ed_a, "a"), ("links-b", ed_b, "b")] {
        let (one, two) = (
            format!("https://{dest}.example/one"),
            format!("https://{dest}.example/two"),
        );
        for args in [
            vec!["new", "--key", "H83if", one.as_str()],
            vec!["set", "H83if", two.as_str()],
        ] {
            let out = qrtag_on(&url, db, editor, &args).await;
            assert!(
                out.status.success(),
                "{} in {db}: {}",
                editor.0,
                stderr(&out)
            );
        }
    }
    // ... and is refused in the other's, in one line.
    for (db, editor) in [("links-b", ed_a), ("links", ed_b)] {
        for args in [
            vec!["new", "--key", "intruder", "https://evil.example/"],
            vec!["set", "H83if", "https://evil.example/"],
        ] {
            let out = qrtag_on(&url, db, editor, &args).await;
            let err = stderr(&out);
            assert!(
                !out.status.success(),
                "{} wrote in {db}: {args:?}",
                editor.0
            );
            assert_eq!(err.lines().count(), 1, "{} in {db}: {err}", editor.0);
        }
        let (status, _) = Couch::new(&url, db)
            .with_user(editor.0, editor.1)
            .call(Method::GET, &format!("{db}/H83if"), None)
            .await;
        assert_eq!(status, 403, "{} read {db}", editor.0);
    }

    // Both domains served, following as the reader.
    let reader =
        |db: &str| couch_settings(&url, db).with_credentials("rd", Some(Secret::new("rd-pw-1")));
    let dir = tempfile::tempdir().expect("temporary directory");
    let b_log = dir.path().join("b.log");
    let app = TestApp::spawn_with(reader("links"), dir.path(), |s| {
        s.console = Some(qrtag::console::ConsoleSettings::default());
        s.domains = ServedDomains {
            default_host: Some(Host::parse("qr.test").expect("host")),
            others: vec![DomainSettings {
                host: Host::parse("qr.b.test").expect("host"),
                public_url: PublicUrl::parse("http://qr.b.test").expect("url"),
                store: StoreSettings::CouchDb(reader("links-b")),
                access_log: b_log.clone(),
                snapshot_file: Some(dir.path().join("links-b.snapshot")),
                dead_tag: Default::default(),
                root: None,
            }],
            unknown_host: Default::default(),
        };
    })
    .await;
    let app = &app;
    let within = Duration::from_secs(20);
    for (host, to) in [
        ("qr.test", "https://a.example/two"),
        ("qr.b.test", "https://b.example/two"),
    ] {
        eventually(within, &format!("{host}'s H83if"), || async move {
            (location(app, host, "H83if").await.as_deref() == Some(to)).then_some(())
        })
        .await;
    }
    // An edit in each database reaches its own domain's scans within the
    // bound edits keep on Apache CouchDB (a second), and no other's.
    for (db, editor, host, other, to) in [
        (
            "links-b",
            ed_b,
            "qr.b.test",
            "qr.test",
            "https://b.example/three",
        ),
        (
            "links",
            ed_a,
            "qr.test",
            "qr.b.test",
            "https://a.example/three",
        ),
    ] {
        let out = qrtag_on(&url, db, editor, &["set", "H83if", to]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        eventually(Duration::from_secs(1), &format!("{host}'s edit"), || async move {
            (location(app, host, "H83if").await.as_deref() == Some(to)).then_some(())
        })
        .await;
        assert_ne!(location(app, other, "H83if").await.as_deref(), Some(to));
    }

    // The console: an editor logs in with their CouchDB account and sees
    // the domains whose database admits them (asked at login) and no
    // other. Brand B's editor gets the 404 of a missing page for brand
    // A's list, link and forms, sees B alone in the switcher, and
    // repoints B's key through the console as themself.
    let console = ConsoleClient::new(&app.admin);
    assert_eq!(console.login(ed_b.0, ed_b.1).await, 303);
    let (status, missing) = console.get("/no-such-page").await;
    assert_eq!(status, 404);
    for path in ["/links?domain=qr.test", "/link?key=H83if&domain=qr.test"] {
        let (status, body) = console.get(path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(body, missing, "{path}");
    }
    let (status, list) = console.get("/links").await;
    assert_eq!(status, 200, "{list}");
    assert!(
        list.contains(r#"<option value="qr.b.test" selected>"#),
        "{list}"
    );
    assert!(!list.contains(r#"<option value="qr.test""#), "{list}");
    let (status, body) = console
        .post(
            "/links",
            "/link/destination",
            &[
                ("key", "H83if"),
                ("url", "https://evil.example/"),
                ("domain", "qr.test"),
            ],
        )
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = console
        .post(
            "/link?key=H83if",
            "/link/destination",
            &[
                ("key", "H83if"),
                ("url", "https://b.example/four"),
                ("domain", "qr.b.test"),
            ],
        )
        .await;
    assert_eq!(status, 303, "{body}");
    eventually(Duration::from_secs(1), "B's console edit", || async move {
        (location(app, "qr.b.test", "H83if").await.as_deref() == Some("https://b.example/four"))
            .then_some(())
    })
    .await;
    assert_eq!(
        location(app, "qr.test", "H83if").await.as_deref(),
        Some("https://a.example/three")
    );
}

/// Issue 36: a brand's database kept to its own people keeps its side
/// databases to them too. `qrtag setup` gives `links-b-keys`,
/// `links-b-audit` and `links-b-history` the named members of `links-b`
/// that hold each one's roles (no server-wide role, which would admit
/// every brand's editors): brand A's editor can neither make an API key
/// in brand B's keys database nor read its audit log or history, B's
/// editor can, and the service's reader stays out of the keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_keeps_each_brands_keys_audit_and_history_to_its_people() {
    use crate::apache::ApacheCouch;
    use crate::harness::stderr;
    use reqwest::Method;

    let Some(server) = ApacheCouch::start("apache_couchdb_domains_side_databases").await else {
        return;
    };
    let url = server.url();
    let admin = server.admin();
    // The next deploy's setup, in it, passes the named people on.
    two_brands(&url, &admin).await;
    let (_, keys) = admin
        .call(Method::GET, "links-b-keys/_security", None)
        .await;
    assert_eq!(
        keys["members"],
        json!({"names": ["ed-b"], "roles": []}),
        "{keys}"
    );
    for side in ["links-b-audit", "links-b-history"] {
        let (_, sec) = admin
            .call(Method::GET, &format!("{side}/_security"), None)
            .await;
        assert_eq!(
            sec["members"],
            json!({"names": ["ed-b", "rd"], "roles": []}),
            "{side}: {sec}"
        );
    }

    // B's editor makes a key in B's keys database; A's is refused in one line.
    let make_key = |user: (&'static str, &'static str)| {
        let url = url.clone();
        async move {
            qrtag_on(
                &url,
                "links-b",
                user,
                &["api-key", "create", "--name", user.0, "--scope", "write"],
            )
            .await
        }
    };
    let out = make_key(("ed-b", "ed-b-pw-1")).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = make_key(("ed-a", "ed-a-pw-1")).await;
    assert!(!out.status.success(), "ed-a made a key in links-b-keys");
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));

    // Reads, as CouchDB answers them.
    for (user, db, want) in [
        ("ed-a", "links-b-audit", 403),
        ("ed-a", "links-b-history", 403),
        ("ed-a", "links-b-keys", 403),
        ("rd", "links-b-keys", 403),
        ("ed-b", "links-b-audit", 200),
        ("ed-b", "links-b-keys", 200),
        ("rd", "links-b-history", 200),
        ("ed-a", "links-audit", 200),
    ] {
        let (status, body) = Couch::new(&url, db)
            .with_user(user, &format!("{user}-pw-1"))
            .call(Method::GET, &format!("{db}/_all_docs?limit=1"), None)
            .await;
        assert_eq!(status, want, "{user} reading {db}: {body}");
    }
}

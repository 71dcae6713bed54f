//! qrtag against a real CouchDB-API server (PouchDB Server, see
//! `pouchdb.rs`): the live mirror, outages, `qrtag setup`, the
//! CLI and the access roles. Needs `npm ci` first; without it every test that
//! needs a server fails and says so.

#[path = "../support/a11y.rs"]
mod a11y;
// Issue 36: certificates shared through CouchDB.
mod acme;
mod apache;
mod audit;
#[path = "../support/browser.rs"]
mod browser;
mod cluster;
mod compose;
mod console;
#[path = "../support/deploy_kit.rs"]
mod deploy_kit;
// Issue 36: one database a domain.
mod domains;
mod hardening;
mod harness;
// Issue 35: a link's history on CouchDB.
mod history;
mod lifecycle;
mod nodes;
// Issue 36: Pebble, the ACME test CA.
#[path = "../acme/pebble.rs"]
mod pebble;
#[path = "../support/pipe.rs"]
mod pipe;
#[path = "../support/poll.rs"]
mod poll;
mod pouchdb;
#[path = "../support/process.rs"]
mod process;
mod proxy;
mod public_url;
mod read_your_writes;
mod rest;
// Issue 35: each role enforced by CouchDB itself.
mod roles;
// Issue 34: smart tags served from CouchDB.
#[path = "../support/rest_checks.rs"]
mod rest_checks;
mod rules;
mod rules_served;
mod transfer;

use std::sync::Arc;
use std::time::Duration;

use qrtag::store::options::StoreSettings;
use qrtag::store::{self, LinkStore, StoreError};
use qrtag::values::link_key::LinkKey;
use qrtag::values::secret::Secret;
use reqwest::Method;
use serde_json::{Value, json};

use harness::{
    Couch, TestApp, accounts, couch_settings, eventually, qrtag, stderr, stdout, user_env,
};
use pouchdb::PouchDb;
use proxy::{CutProxy, RecordingProxy};

/// The promise: an edit in CouchDB changes the redirect within a second.
const PROPAGATION: Duration = Duration::from_secs(1);
/// Generous limits for things that involve starting processes or backoff.
const START: Duration = Duration::from_secs(20);
const RECOVERY: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_follow_couchdb_edits_deletes_and_invalid_documents() {
    let pouch = PouchDb::start().await;
    let couch = Couch::new(&pouch.url(), "links");
    couch.create_db().await;
    couch
        .put(
            "H83if",
            json!({"url": "https://a.example/one", "inactive": false}),
        )
        .await;
    couch
        .put("gone1", json!({"url": "https://a.example/gone"}))
        .await;
    couch
        .put(
            "dead1",
            json!({"url": "https://a.example/dead", "inactive": true}),
        )
        .await;
    couch
        .put("docs/api", json!({"url": "https://a.example/api"}))
        .await;
    // Documents a person could get wrong by hand.
    couch.put("nourl", json!({"inactive": false})).await;
    couch
        .put("jsurl", json!({"url": "javascript:alert(1)"}))
        .await;
    couch
        .put(
            "yesno",
            json!({"url": "https://a.example/", "inactive": "yes"}),
        )
        .await;
    couch.put("slash", json!({"url": "//evil.example/"})).await;
    couch
        .put("_design/other", json!({"url": "https://a.example/design"}))
        .await;

    let app = TestApp::spawn(couch_settings(&pouch.url(), "links")).await;
    let ready = app.wait_ready(START).await;
    assert!(
        ready.contains("4 links, 4 invalid"),
        "design documents are neither links nor invalid: {ready}"
    );
    assert_eq!(
        app.location("H83if").await.as_deref(),
        Some("https://a.example/one")
    );
    assert_eq!(
        app.location("docs/api").await.as_deref(),
        Some("https://a.example/api")
    );
    for key in [
        "dead1",
        "nourl",
        "jsurl",
        "yesno",
        "slash",
        "nope1",
        "_design/other",
    ] {
        assert_eq!(app.location(key).await, None, "/{key}");
    }

    // An edit made with plain HTTP, not through qrtag.
    couch
        .put(
            "H83if",
            json!({"url": "https://a.example/two", "inactive": false}),
        )
        .await;
    app.wait_location("H83if", Some("https://a.example/two"), PROPAGATION)
        .await;
    couch
        .put(
            "dead1",
            json!({"url": "https://a.example/dead", "inactive": false}),
        )
        .await;
    app.wait_location("dead1", Some("https://a.example/dead"), PROPAGATION)
        .await;

    couch.delete("gone1").await;
    app.wait_location("gone1", None, PROPAGATION).await;

    // A broken edit takes that link out and nothing else; fixing it, or a
    // broken document, brings it back.
    couch
        .put("H83if", json!({"url": "javascript:void(0)"}))
        .await;
    app.wait_location("H83if", None, PROPAGATION).await;
    assert_eq!(
        app.location("docs/api").await.as_deref(),
        Some("https://a.example/api")
    );
    couch
        .put("jsurl", json!({"url": "https://a.example/fixed"}))
        .await;
    app.wait_location("jsurl", Some("https://a.example/fixed"), PROPAGATION)
        .await;
    couch
        .put("H83if", json!({"url": "https://a.example/three"}))
        .await;
    app.wait_location("H83if", Some("https://a.example/three"), PROPAGATION)
        .await;

    let (status, body) = app.readyz().await;
    assert_eq!(status, 200);
    assert!(
        body.contains("4 links, 3 invalid") && !body.contains("degraded"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loads_and_lists_more_than_one_page() {
    let pouch = PouchDb::start().await;
    let couch = Couch::new(&pouch.url(), "links");
    couch.create_db().await;
    let n = 2345;
    let docs = (0..n)
        .map(|i| json!({"_id": format!("k{i:04}"), "url": format!("https://a.example/{i}")}))
        .chain([json!({"_id": "_design/zz", "language": "javascript"})])
        .chain([json!({"_id": "broken", "url": 5})])
        .collect();
    couch.bulk(docs).await;

    let app = TestApp::spawn(couch_settings(&pouch.url(), "links")).await;
    let ready = app.wait_ready(START).await;
    assert!(ready.contains(&format!("{n} links, 1 invalid")), "{ready}");
    for i in [0, 999, 1000, 2000, n - 1] {
        assert_eq!(
            app.location(&format!("k{i:04}")).await,
            Some(format!("https://a.example/{i}"))
        );
    }

    let store = store::open(
        &StoreSettings::CouchDb(couch_settings(&pouch.url(), "links")),
        store::Access::Write,
    )
    .expect("open");
    let listed = store.list().await.expect("list");
    assert_eq!(listed.len(), n + 1, "every document but the design one");
    assert!(listed.windows(2).all(|w| w[0].0 < w[1].0), "sorted by key");
    assert!(listed.iter().all(|(_, d)| !d.contains_key("_rev")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_started_before_couchdb_becomes_ready_when_it_is() {
    let mut pouch = PouchDb::reserve(true);
    let app = TestApp::spawn(couch_settings(&pouch.url(), "links")).await;
    let why = eventually(RECOVERY, "/readyz says CouchDB is unreachable", || async {
        let (status, body) = app.readyz().await;
        (status == 503 && body.contains("unreachable")).then_some(body)
    })
    .await;
    assert!(why.contains(&pouch.url()), "{why}");
    // Nothing loaded yet: "try again", never "no such tag".
    assert_eq!(app.status("H83if").await, 503);

    pouch.run().await;
    let couch = Couch::new(&pouch.url(), "links");
    eventually(RECOVERY, "/readyz says the database is missing", || async {
        let (status, body) = app.readyz().await;
        assert_eq!(status, 503, "ready without a database: {body}");
        body.contains("does not exist").then_some(())
    })
    .await;
    couch.create_db().await;
    couch
        .put("H83if", json!({"url": "https://a.example/one"}))
        .await;
    app.wait_ready(RECOVERY).await;
    app.wait_location("H83if", Some("https://a.example/one"), RECOVERY)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_go_on_while_couchdb_restarts_and_later_edits_arrive() {
    let mut pouch = PouchDb::start_persistent().await;
    let couch = Couch::with_two_links(&pouch.url()).await;
    let app = TestApp::spawn(couch_settings(&pouch.url(), "links")).await;
    app.wait_ready(START).await;
    assert_eq!(
        app.location("H83if").await.as_deref(),
        Some("https://a.example/one")
    );

    pouch.stop();
    // Every request while CouchDB is away is answered from the snapshot,
    // and /readyz stays ready but names the problem.
    let mut answered = 0;
    let degraded = eventually(RECOVERY, "/readyz says degraded", || {
        answered += 1;
        let app = &app;
        async move {
            assert_eq!(
                app.location("H83if").await.as_deref(),
                Some("https://a.example/one")
            );
            let (status, body) = app.readyz().await;
            assert_eq!(status, 200, "{body}");
            body.contains("degraded").then_some(body)
        }
    })
    .await;
    for _ in 0..20 {
        assert_eq!(
            app.location("other").await.as_deref(),
            Some("https://a.example/other")
        );
    }
    assert!(answered > 0, "{degraded}");

    pouch.run().await;
    couch
        .put("H83if", json!({"url": "https://a.example/two"}))
        .await;
    couch.delete("other").await;
    app.wait_location("H83if", Some("https://a.example/two"), RECOVERY)
        .await;
    app.wait_location("other", None, PROPAGATION).await;
    eventually(RECOVERY, "/readyz no longer degraded", || async {
        let (status, body) = app.readyz().await;
        (status == 200 && !body.contains("degraded")).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_made_while_the_follower_is_cut_off_arrive_when_it_returns() {
    let pouch = PouchDb::start().await;
    let couch = Couch::with_two_links(&pouch.url()).await;
    let proxy = CutProxy::start(pouch.url().replace("http://", "")).await;
    let app = TestApp::spawn(couch_settings(&proxy.url(), "links")).await;
    app.wait_ready(START).await;

    proxy.cut();
    eventually(RECOVERY, "/readyz says degraded", || async {
        let (_, body) = app.readyz().await;
        body.contains("degraded").then_some(())
    })
    .await;
    couch
        .put("H83if", json!({"url": "https://a.example/two"}))
        .await;
    couch.delete("other").await;
    couch
        .put("new01", json!({"url": "https://a.example/new"}))
        .await;
    assert_eq!(
        app.location("H83if").await.as_deref(),
        Some("https://a.example/one"),
        "cut off, the snapshot keeps what it had"
    );

    proxy.restore();
    app.wait_location("H83if", Some("https://a.example/two"), RECOVERY)
        .await;
    app.wait_location("other", None, PROPAGATION).await;
    app.wait_location("new01", Some("https://a.example/new"), PROPAGATION)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_is_idempotent_and_every_command_works_on_couchdb() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let env = [
        ("QRTAG_COUCHDB_URL", url.as_str()),
        ("QRTAG_PUBLIC_URL", harness::PUBLIC_URL),
    ];
    let couch = Couch::new(&url, "links");

    let first = qrtag(&["setup"], &env).await;
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(
        stdout(&first),
        "database links: created\n_design/qrtag (validation, links view): created\n\
         _security (members: roles qrtag_reader, qrtag_editor, qrtag_viewer, qrtag_admin): updated\n\
         database links-keys (API keys): created\n\
         links-keys/_design/qrtag (API key validation): created\n\
         links-keys/_security (members: roles qrtag_editor, qrtag_admin): updated\n\
         database links-audit (audit log): created\n\
         links-audit/_design/qrtag (audit log validation, append-only): created\n\
         links-audit/_security (members: roles qrtag_reader, qrtag_editor, qrtag_admin): updated\n\
         database links-history (link history): created\n\
         links-history/_design/qrtag (link history validation, append-only): created\n\
         links-history/_security (members: roles qrtag_reader, qrtag_editor, qrtag_admin): updated\n\
         _users: not opened, this server is not Apache CouchDB (PouchDB Server answers a \
         member's read of _users with an error): an API key's user is not checked (its scope \
         alone decides)\n"
    );
    let again = qrtag(&["setup"], &env).await;
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        stdout(&again),
        "database links: unchanged\n_design/qrtag (validation, links view): unchanged\n\
         _security (members: roles qrtag_reader, qrtag_editor, qrtag_viewer, qrtag_admin): unchanged\n\
         database links-keys (API keys): unchanged\n\
         links-keys/_design/qrtag (API key validation): unchanged\n\
         links-keys/_security (members: roles qrtag_editor, qrtag_admin): unchanged\n\
         database links-audit (audit log): unchanged\n\
         links-audit/_design/qrtag (audit log validation, append-only): unchanged\n\
         links-audit/_security (members: roles qrtag_reader, qrtag_editor, qrtag_admin): unchanged\n\
         database links-history (link history): unchanged\n\
         links-history/_design/qrtag (link history validation, append-only): unchanged\n\
         links-history/_security (members: roles qrtag_reader, qrtag_editor, qrtag_admin): unchanged\n\
         _users: not opened, this server is not Apache CouchDB (PouchDB Server answers a \
         member's read of _users with an error): an API key's user is not checked (its scope \
         alone decides)\n"
    );
    // PouchDB Server has no cluster: copies and shards asked for are said
    // to have had no effect rather than silently dropped.
    let shards = qrtag(&["setup", "--shards", "4"], &env).await;
    assert!(shards.status.success(), "{}", stderr(&shards));
    assert!(
        stderr(&shards).contains("warning: this server reports no copies or shards"),
        "{}",
        stderr(&shards)
    );
    let (_, security) = couch.call(Method::GET, "links/_security", None).await;
    assert_eq!(
        security["members"]["roles"],
        json!([
            "qrtag_reader",
            "qrtag_editor",
            "qrtag_viewer",
            "qrtag_admin"
        ])
    );
    let (_, security) = couch.call(Method::GET, "links-keys/_security", None).await;
    assert_eq!(
        security["members"]["roles"],
        json!(["qrtag_editor", "qrtag_admin"]),
        "the API keys are the editors' and qrtag admins' alone"
    );

    // The validation refuses what the service could not use.
    let bad = [
        ("bad01", json!({"inactive": false})),
        ("bad02", json!({"url": "javascript:alert(1)"})),
        ("bad03", json!({"url": "//evil.example/"})),
        (
            "bad04",
            json!({"url": "https://a.example/", "inactive": "yes"}),
        ),
        ("bad05", json!({"url": "/x", "expires": 5})),
        ("bad06", json!({"url": "https://a.example/ x"})),
        ("bad07", json!({"url": "ftp://a.example/"})),
        ("bad 8", json!({"url": "https://a.example/"})),
        // Spellings that fool people (issue #10, item 9), as Destination::parse.
        (
            "bad09",
            json!({"url": "https://example.com:443@evil.example/"}),
        ),
        ("bad10", json!({"url": "/.//evil.example"})),
        ("bad11", json!({"url": "/..//evil.example"})),
        ("bad12", json!({"url": "/%2E%2e//evil.example"})),
        ("bad13", json!({"url": "/\\evil.example"})),
        ("bad14", json!({"url": "/a\\..\\..\\evil.example"})),
        ("bad15", json!({"url": "https://ｅｖｉｌ.example/"})),
        ("bad16", json!({"url": "https://EVIL.example/"})),
        ("bad17", json!({"url": "https://bücher.example/"})),
        ("bad18", json!({"url": "http://0x7f.1/"})),
        ("bad19", json!({"url": "https://ev\til.example/"})),
        // Issue 19, item 13: read differently from where they go.
        ("bad20", json!({"url": "https://a.example/\u{202E}fdp.exe"})),
        ("bad21", json!({"url": "https://a.example/\u{FEFF}x"})),
        ("bad22", json!({"url": "https://a.example/?t=\u{E0041}"})),
        ("bad23", json!({"url": "https://a.example:0443/"})),
        ("bad24", json!({"url": "https://a.example:/"})),
    ];
    // Issue 30: a key over 256 bytes, written straight to CouchDB.
    let segments = vec!["k".repeat(64); 5].join("/");
    let too_long = &segments[..qrtag::values::link_key::MAX_KEY_LEN + 1];
    let bad = bad
        .into_iter()
        .chain([(too_long, json!({"url": "https://a.example/"}))]);
    for (id, doc) in bad {
        let (status, body) = couch.try_put(id, doc).await;
        assert_eq!(status, 403, "{id} accepted: {body}");
        assert_eq!(body["error"], "forbidden", "{id}: {body}");
    }
    let good = [
        (
            "good1",
            json!({"url": "https://a.example/", "inactive": false,
                   "expires": "2030-01-01T00:00:00Z", "note": "kept"}),
        ),
        ("good2", json!({"url": "/internal/path"})),
        (
            "good/3",
            json!({"url": "http://[::1]:8080/x", "inactive": null}),
        ),
        (
            "good4",
            json!({"url": "https://xn--bcher-kva.example/@user"}),
        ),
        ("good5", json!({"url": "/a/.well-known/x?next=/../"})),
    ];
    for (id, doc) in good {
        let (status, body) = couch.try_put(id, doc).await;
        assert_eq!(status, 201, "{id} refused: {body}");
    }

    // new, with a random key and with a chosen one
    let out = qrtag(&["new", "https://a.example/one"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let short = stdout(&out);
    let key = short
        .trim()
        .strip_prefix("http://qr.test/")
        .expect("a short URL")
        .to_owned();
    assert!(
        qrtag::values::short_id::ShortId::parse(&key).is_ok(),
        "{short}"
    );
    let out = qrtag(
        &[
            "new",
            "--key",
            "docs/api",
            "--inactive",
            "https://a.example/api",
        ],
        &env,
    )
    .await;
    assert_eq!(
        stdout(&out),
        "http://qr.test/docs/api\n",
        "{}",
        stderr(&out)
    );
    let out = qrtag(&["new", "--key", "docs/api", "https://x.example/"], &env).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already taken"), "{}", stderr(&out));

    // The first `new` recorded the public URL with the links, in the design
    // document only an admin writes: not a link (the listing below counts 7).
    let (status, design) = couch.call(Method::GET, "links/_design/qrtag", None).await;
    assert_eq!(status, 200, "{design}");
    assert_eq!(design["public_url"], json!(harness::PUBLIC_URL));
    let out = qrtag(&["init"], &env).await;
    assert!(
        stdout(&out).contains(&format!("public URL: {} (recorded)", harness::PUBLIC_URL)),
        "{out:?}"
    );
    let other = [env[0], ("QRTAG_PUBLIC_URL", "https://other.example")];
    let out = qrtag(&["new", "https://a.example/x"], &other).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        stderr(&out).contains("is not http://qr.test, the one recorded with the links"),
        "{out:?}"
    );

    // set keeps the fields it does not own
    let mut doc = couch.get(&key).await.expect("created");
    doc["note"] = json!("poster at the bus stop");
    couch.put(&key, doc).await;
    let out = qrtag(&["set", &key, "https://a.example/two"], &env).await;
    assert_eq!(
        stdout(&out),
        format!("{key} -> https://a.example/two\n"),
        "{}",
        stderr(&out)
    );
    let out = qrtag(&["disable", &key], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = qrtag(&["enable", "docs/api"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = qrtag(&["show", &key], &env).await;
    let mut shown: Value = serde_json::from_str(&stdout(&out)).expect("show prints JSON");
    // The times qrtag stamps (tests/couchdb/lifecycle.rs checks them).
    for time in ["created_at", "changed_at"] {
        let stamped = shown.as_object_mut().and_then(|d| d.shift_remove(time));
        assert!(stamped.is_some_and(|t| t.is_string()), "{time}");
    }
    // And beside them the surface that wrote it: the command line.
    for via in ["created_via", "changed_via"] {
        let stamped = shown.as_object_mut().and_then(|d| d.shift_remove(via));
        assert_eq!(stamped, Some(json!("cli")), "{via}");
    }
    // Issue 35: and who: the command's OS user and host.
    let actor = shown
        .as_object_mut()
        .and_then(|d| d.shift_remove("changed_actor"));
    assert_eq!(
        actor.as_ref().map(|a| a["kind"].clone()),
        Some(json!("cli")),
        "{actor:?}"
    );
    // And the generation that write made (CouchDB's history tells qrtag's
    // writes from outside edits by it): the fourth revision.
    let generation = shown
        .as_object_mut()
        .and_then(|d| d.shift_remove("changed_gen"));
    assert_eq!(generation, Some(json!(4)));
    assert_eq!(
        shown,
        json!({"url": "https://a.example/two", "inactive": true, "note": "poster at the bus stop"})
    );
    let stored = couch.get(&key).await.expect("present");
    assert!(stored["_rev"].as_str().is_some_and(|r| r.starts_with("4-")));

    let out = qrtag(&["list"], &env).await;
    let listing = stdout(&out);
    assert!(
        listing.contains("docs/api\thttps://a.example/api\tactive\n"),
        "{listing}"
    );
    assert!(
        listing.contains(&format!("{key}\thttps://a.example/two\tinactive\n")),
        "{listing}"
    );
    assert!(!listing.contains("_design"), "{listing}");
    assert_eq!(listing.lines().count(), 7, "{listing}");

    let out = qrtag(&["set", "zzzzz", "https://x.example/"], &env).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no link zzzzz"), "{}", stderr(&out));

    // And the service reads the set-up database.
    let app = TestApp::spawn(couch_settings(&url, "links")).await;
    let ready = app.wait_ready(START).await;
    assert!(ready.contains("7 links, 0 invalid"), "{ready}");
    assert_eq!(
        app.location("docs/api").await.as_deref(),
        Some("https://a.example/api")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_editors_write_and_the_service_reads_with_a_member_account() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let admin = accounts(&url).await;
    let as_user = |user: &'static str, password: &'static str| user_env(&url, user, password);
    let run = |args: &'static [&'static str], env: [(&'static str, String); 3]| async move {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let out = qrtag(args, &env).await;
        let all = format!("{}{}", stdout(&out), stderr(&out));
        for pw in ["boss-pw-1", "ed-pw-1", "rd-pw-1"] {
            assert!(!all.contains(pw), "a password was printed: {all}");
        }
        out
    };

    let out = run(&["setup"], as_user("boss", "boss-pw-1")).await;
    assert!(out.status.success(), "{}", stderr(&out));

    let out = run(
        &["new", "--key", "H83if", "https://a.example/one"],
        as_user("ed", "ed-pw-1"),
    )
    .await;
    assert!(
        out.status.success(),
        "the editor may create: {}",
        stderr(&out)
    );

    let out = run(
        &["set", "H83if", "https://evil.example/"],
        as_user("rd", "rd-pw-1"),
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "a reader wrote: {}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("CouchDB refused") && stderr(&out).contains("writing H83if"),
        "{}",
        stderr(&out)
    );

    let out = run(&["list"], as_user("rd", "wrong-pw")).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("(401)") && stderr(&out).contains("--couchdb-password"),
        "{}",
        stderr(&out)
    );

    let out = run(&["list"], as_user("rd", "rd-pw-1")).await;
    assert_eq!(
        stdout(&out),
        "H83if\thttps://a.example/one\tactive\n",
        "{}",
        stderr(&out)
    );

    let reader = couch_settings(&url, "links").with_credentials("rd", Some(Secret::new("rd-pw-1")));
    let app = TestApp::spawn(reader).await;
    app.wait_ready(START).await;
    assert_eq!(
        app.location("H83if").await.as_deref(),
        Some("https://a.example/one")
    );
    let out = run(
        &["set", "H83if", "https://a.example/two"],
        as_user("ed", "ed-pw-1"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    app.wait_location("H83if", Some("https://a.example/two"), PROPAGATION)
        .await;

    // DIDComm links are written by the server itself: with the reader
    // account that is refused (503, nothing written), with an editor's it
    // works and the validation accepts the provenance fields.
    let didcomm_request = json!({
        "@type": "https://didcomm.org/shorten-url/1.0/request-shortened-url",
        "@id": "couch-req-1",
        "url": "https://a.example/invite",
        "goal_code": "shorten",
        "requested_validity_seconds": 3600
    });
    let post = |app_url: String, body: Value| async move {
        reqwest::Client::new()
            .post(app_url)
            .bearer_auth("couch-token")
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("the DIDComm listener answers")
    };
    let api = |dir: &std::path::Path| {
        let mut api = qrtag::server::api::ApiSettings::new("127.0.0.1:0", dir.join("keys.json"));
        api.token = Some(Secret::new("couch-token"));
        api
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let reader = couch_settings(&url, "links").with_credentials("rd", Some(Secret::new("rd-pw-1")));
    let as_reader = TestApp::spawn_with_api(reader, dir.path(), Some(api(dir.path()))).await;
    let r = post(
        as_reader.didcomm.clone().expect("listener"),
        didcomm_request.clone(),
    )
    .await;
    assert_eq!(r.status().as_u16(), 503);
    let dir = tempfile::tempdir().expect("tempdir");
    let editor = couch_settings(&url, "links").with_credentials("ed", Some(Secret::new("ed-pw-1")));
    let as_editor = TestApp::spawn_with_api(editor, dir.path(), Some(api(dir.path()))).await;
    as_editor.wait_ready(START).await;
    let r = post(
        as_editor.didcomm.clone().expect("listener"),
        didcomm_request,
    )
    .await;
    assert_eq!(r.status().as_u16(), 200);
    let reply: Value = r.json().await.expect("json");
    let short = reply["shortened_url"]
        .as_str()
        .expect("short URL")
        .to_owned();
    let key = short.rsplit('/').next().expect("key").to_owned();
    let doc = admin.get(&key).await.expect("the document is in CouchDB");
    assert_eq!(doc["created_by"], "token");
    assert_eq!(doc["goal_code"], "shorten");
    assert_eq!(doc["thid"], "couch-req-1");
    assert!(doc["expires"].is_string());
    as_editor
        .wait_location(&key, Some("https://a.example/invite"), PROPAGATION)
        .await;
    let r = post(
        as_editor.didcomm.clone().expect("listener"),
        json!({"@type": "https://didcomm.org/shorten-url/1.0/invalidate-shortened-url",
               "@id": "couch-inv-1", "shortened_url": short}),
    )
    .await;
    let ack: Value = r.json().await.expect("json");
    assert_eq!(ack["status"], "OK");
    as_editor.wait_location(&key, None, PROPAGATION).await;
    let doc = admin.get(&key).await.expect("kept");
    assert_eq!(
        (doc["inactive"].as_bool(), doc["invalidated_by"].as_str()),
        (Some(true), Some("token"))
    );
    // The validation refuses provenance fields of the wrong shape.
    let editor_http = Couch::new(&url, "links").with_user("ed", "ed-pw-1");
    let (status, body) = editor_http
        .try_put(
            "badprov",
            json!({"url": "https://a.example/", "created_by": 5}),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = editor_http
        .try_put(
            "badprov",
            json!({"url": "https://a.example/", "invalidated_at": "yesterday"}),
        )
        .await;
    assert_eq!(status, 403, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_maps_conflicts_and_concurrent_edits_all_land() {
    let pouch = PouchDb::start().await;
    Couch::new(&pouch.url(), "links").create_db().await;
    let store: Arc<dyn LinkStore> = store::open(
        &StoreSettings::CouchDb(couch_settings(&pouch.url(), "links")),
        store::Access::Write,
    )
    .expect("open");
    let key = LinkKey::parse("H83if").expect("key");
    let doc = |url: &str| match json!({"url": url, "inactive": false}) {
        Value::Object(m) => m,
        _ => unreachable!(),
    };

    store.create(&key, &doc("/a")).await.expect("create");
    assert!(matches!(
        store.create(&key, &doc("/b")).await,
        Err(StoreError::Conflict(_))
    ));
    let first = store.get(&key).await.expect("get").expect("present");
    assert_eq!(first.doc, doc("/a"));
    store
        .replace(&key, &doc("/c"), &first.rev)
        .await
        .expect("replace");
    assert!(
        matches!(
            store.replace(&key, &doc("/d"), &first.rev).await,
            Err(StoreError::Conflict(_))
        ),
        "a stale revision must conflict"
    );

    // Eight writers at once: each 409 re-reads and retries, and no writer's
    // field is lost to another's.
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let store = Arc::clone(&store);
            let key = key.clone();
            tokio::spawn(async move {
                qrtag::links::update(
                    store.as_ref(),
                    &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
                    &key,
                    |d| {
                        d.insert(format!("f{i}"), json!(i));
                    },
                )
                .await
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task").expect("update");
    }
    let last = store.get(&key).await.expect("get").expect("present");
    for i in 0..8 {
        assert_eq!(last.doc.get(&format!("f{i}")), Some(&json!(i)));
    }
    assert_eq!(last.doc.get("url"), Some(&json!("/c")));

    let missing = store::open(
        &StoreSettings::CouchDb(couch_settings(&pouch.url(), "nodb")),
        store::Access::Write,
    )
    .expect("open");
    for err in [
        missing.get(&key).await.err(),
        missing.list().await.err(),
        missing.create(&key, &doc("/a")).await.err(),
    ] {
        let msg = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg.contains("nodb does not exist") && msg.contains("qrtag setup"),
            "{msg}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_couchdb_and_bad_settings_are_clear_one_liners_without_secrets() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let url = format!("http://127.0.0.1:{port}");
    let env = [
        ("QRTAG_COUCHDB_URL", url.as_str()),
        ("QRTAG_COUCHDB_USER", "qrtag"),
        ("QRTAG_COUCHDB_PASSWORD", "hunter2-secret"),
    ];
    let out = qrtag(&["list"], &env).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("CouchDB unreachable at {url}")),
        "{}",
        stderr(&out)
    );
    let out = qrtag(&["show", "H83if"], &env).await;
    assert!(
        stderr(&out).contains("CouchDB unreachable"),
        "couch_rs's 501 for a refused connection: {}",
        stderr(&out)
    );

    let out = qrtag(&["--help"], &env).await;
    assert!(stdout(&out).contains("QRTAG_COUCHDB_PASSWORD"));

    let with_password = format!("http://qrtag:hunter2-secret@127.0.0.1:{port}");
    let out = qrtag(&["--couchdb-url", &with_password, "list"], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not in the URL"), "{}", stderr(&out));

    let out = qrtag(&["setup"], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("--couchdb-url"));

    let out = qrtag(
        &["list"],
        &[
            ("QRTAG_COUCHDB_URL", url.as_str()),
            ("QRTAG_COUCHDB_PASSWORD", "hunter2-secret"),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("--couchdb-user"));

    for out in [
        out,
        qrtag(&["list"], &env).await,
        qrtag(&["--help"], &env).await,
        qrtag(&["--couchdb-url", &with_password, "list"], &[]).await,
    ] {
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!all.contains("hunter2"), "a password was printed: {all}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_while_couchdb_is_down_serves_the_snapshot_file_then_catches_up() {
    let mut pouch = PouchDb::start_persistent().await;
    let couch = Couch::with_two_links(&pouch.url()).await;
    let dir = tempfile::tempdir().expect("temporary directory");
    let first = TestApp::spawn_in(couch_settings(&pouch.url(), "links"), dir.path()).await;
    first.wait_ready(START).await;
    let file = dir.path().join("links.snapshot");
    eventually(RECOVERY, "the snapshot file", || {
        std::future::ready(file.exists().then_some(()))
    })
    .await;

    pouch.stop();
    // A new server with CouchDB away: serving from the file at once.
    let second = TestApp::spawn_in(couch_settings(&pouch.url(), "links"), dir.path()).await;
    assert_eq!(
        second.location("H83if").await.as_deref(),
        Some("https://a.example/one")
    );
    assert_eq!(
        second.location("other").await.as_deref(),
        Some("https://a.example/other")
    );
    let (status, body) = second.readyz().await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("degraded"), "{body}");

    // CouchDB back: edits made since the file's sequence arrive.
    pouch.run().await;
    couch
        .put("H83if", json!({"url": "https://a.example/two"}))
        .await;
    couch.delete("other").await;
    second
        .wait_location("H83if", Some("https://a.example/two"), RECOVERY)
        .await;
    second.wait_location("other", None, PROPAGATION).await;
}

/// Issue 19, item 10: a snapshot file of a database that has since been
/// replaced (restored from a backup, re-created) and edited past the file's
/// sequence was believed: old destinations, a disabled link served, a new
/// one 404, until each key was edited again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_file_is_not_believed_for_a_replaced_database() {
    let pouch = PouchDb::start().await;
    let couch = Couch::with_two_links(&pouch.url()).await;
    for n in 0..10 {
        couch
            .put("pad01", json!({"url": format!("https://a.example/{n}")}))
            .await;
    }
    let (_first, _first_dir, dir) = node_and_a_copy_of_its_snapshot_file(&pouch.url()).await;

    // The database replaced by another state, with more changes than the
    // file's sequence.
    let (status, body) = couch.call(Method::DELETE, "links", None).await;
    assert_eq!(status, 200, "{body}");
    couch.create_db().await;
    couch
        .put("H83if", json!({"url": "https://a.example/two"}))
        .await;
    couch
        .put(
            "other",
            json!({"url": "https://a.example/other", "inactive": true}),
        )
        .await;
    couch
        .put("fresh", json!({"url": "https://a.example/fresh"}))
        .await;
    for n in 0..20 {
        couch
            .put("pad01", json!({"url": format!("https://a.example/{n}")}))
            .await;
    }

    let second = TestApp::spawn_in(couch_settings(&pouch.url(), "links"), dir.path()).await;
    second
        .wait_location("fresh", Some("https://a.example/fresh"), RECOVERY)
        .await;
    assert_eq!(
        second.location("H83if").await.as_deref(),
        Some("https://a.example/two")
    );
    assert_eq!(second.location("other").await, None);
    second.wait_ready(START).await;
}

/// A node on `url`'s `links`, started in a folder of its own and left
/// running once it has saved its snapshot file, that folder, and another
/// folder holding a copy of the file (a new node's, in the tests of
/// copies).
async fn node_and_a_copy_of_its_snapshot_file(
    url: &str,
) -> (TestApp, tempfile::TempDir, tempfile::TempDir) {
    let first_dir = tempfile::tempdir().expect("temporary directory");
    let first = TestApp::spawn_in(couch_settings(url, "links"), first_dir.path()).await;
    first.wait_ready(START).await;
    let saved = first_dir.path().join("links.snapshot");
    eventually(RECOVERY, "the snapshot file", || {
        std::future::ready(saved.exists().then_some(()))
    })
    .await;
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::copy(&saved, dir.path().join("links.snapshot")).expect("a copy of the file");
    (first, first_dir, dir)
}

/// Issue 24: a node added to a database of a million links starts from a
/// copy of another node's snapshot file instead of a full load (20 s of
/// 503s at 1M): it serves at once, reads no `_all_docs`, and follows the
/// edits made since the copy was saved and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_node_given_a_copy_of_a_snapshot_file_serves_at_once_without_a_full_load() {
    let pouch = PouchDb::start().await;
    let couch = Couch::with_two_links(&pouch.url()).await;
    // Both nodes reach CouchDB at the same URL (the file names the server
    // it was taken from), through a proxy that keeps their requests.
    let proxy = RecordingProxy::start(pouch.url().replace("http://", "")).await;
    let (first, _first_dir, dir) = node_and_a_copy_of_its_snapshot_file(&proxy.url()).await;
    assert!(
        proxy.sent().contains("GET /links/_all_docs?"),
        "the first node's full load is seen by the proxy"
    );
    // Edits the copy does not hold.
    couch
        .put("H83if", json!({"url": "https://a.example/two"}))
        .await;
    couch
        .put("new01", json!({"url": "https://a.example/new"}))
        .await;

    let before = proxy.sent().len();
    let second = TestApp::spawn_in(couch_settings(&proxy.url(), "links"), dir.path()).await;
    // Serving from the copy as soon as it listens: a 503 would fail here.
    assert_eq!(
        second.location("other").await.as_deref(),
        Some("https://a.example/other")
    );
    second
        .wait_location("H83if", Some("https://a.example/two"), RECOVERY)
        .await;
    second
        .wait_location("new01", Some("https://a.example/new"), PROPAGATION)
        .await;
    couch.delete("other").await;
    second.wait_location("other", None, PROPAGATION).await;
    let ready = second.wait_ready(START).await;
    assert!(ready.contains("2 links, 0 invalid"), "{ready}");
    let sent = proxy.sent();
    let since = sent.get(before..).unwrap_or_default();
    assert!(
        since.contains("/links/_changes?") && since.contains("qrtag-snapshot-marks"),
        "the second node checked the file's marker and followed the feed: {since}"
    );
    assert!(
        // The links database's: the history recorder (issue 35) reads its
        // own database's entries by key range.
        !since.contains("/links/_all_docs"),
        "the second node loaded every link instead of using the copy: {since}"
    );
    drop(first);
}

/// Issue 24: the file names the URL its node reached CouchDB at, and a new
/// node may reach the same database at another (`127.0.0.1` or a host
/// name, a proxy, another node of the cluster). Such a copy is served once
/// the database holds its marker, still without `_all_docs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_of_a_snapshot_file_saved_through_another_url_serves_once_its_marker_is_confirmed() {
    let pouch = PouchDb::start().await;
    let couch = Couch::with_two_links(&pouch.url()).await;
    let (first, _first_dir, dir) = node_and_a_copy_of_its_snapshot_file(&pouch.url()).await;
    drop(first);
    couch
        .put("new01", json!({"url": "https://a.example/new"}))
        .await;

    // The same database through a proxy: another URL than the file names.
    let proxy = RecordingProxy::start(pouch.url().replace("http://", "")).await;
    let second = TestApp::spawn_in(couch_settings(&proxy.url(), "links"), dir.path()).await;
    // 503 until the marker is read, like a full load.
    eventually(RECOVERY, "the copy served", || async {
        (second.status("other").await == 302).then_some(())
    })
    .await;
    assert_eq!(
        second.location("other").await.as_deref(),
        Some("https://a.example/other")
    );
    second
        .wait_location("new01", Some("https://a.example/new"), PROPAGATION)
        .await;
    let ready = second.wait_ready(START).await;
    assert!(ready.contains("3 links, 0 invalid"), "{ready}");
    let sent = proxy.sent();
    let marks = sent.find("qrtag-snapshot-marks");
    let feed = sent.find("/links/_changes?");
    assert!(
        marks.is_some() && feed.is_some() && marks < feed,
        "the marker was read before the feed: {sent}"
    );
    assert!(
        !sent.contains("/links/_all_docs"),
        "the copy was not used; every link was loaded instead: {sent}"
    );
    // Saved again under this node's own URL, so its next restart serves at
    // once even while CouchDB is away.
    eventually(RECOVERY, "the file saved under the node's URL", || {
        let bytes = std::fs::read(dir.path().join("links.snapshot")).unwrap_or_default();
        let named = qrtag::snapshot::file::named_store(&bytes).map(str::to_owned);
        std::future::ready(named.filter(|n| n.contains(&proxy.url())))
    })
    .await;
}

/// Issue 24: a copy of a snapshot file pointed at another database of the
/// same name (another server's `links`) is never served: its marker is not
/// there, so every link of that database is loaded instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_of_a_snapshot_file_pointed_at_another_database_of_the_same_name_is_not_believed() {
    let pouch = PouchDb::start().await;
    let _couch = Couch::with_two_links(&pouch.url()).await;
    let (first, _first_dir, dir) = node_and_a_copy_of_its_snapshot_file(&pouch.url()).await;
    drop(first);

    let elsewhere = PouchDb::start().await;
    let other = Couch::new(&elsewhere.url(), "links");
    other.create_db().await;
    other
        .put("H83if", json!({"url": "https://b.example/mine"}))
        .await;
    let proxy = RecordingProxy::start(elsewhere.url().replace("http://", "")).await;
    let second = TestApp::spawn_in(couch_settings(&proxy.url(), "links"), dir.path()).await;
    // Never the copy's links, from the first answer on.
    eventually(START, "the other database's links", || async {
        assert_ne!(
            second.status("other").await,
            302,
            "a link of the copy was served"
        );
        if second.status("H83if").await != 302 {
            return None;
        }
        match second.location("H83if").await.as_deref() {
            Some("https://a.example/one") => panic!("a link of the copy was served"),
            Some("https://b.example/mine") => Some(()),
            _ => None,
        }
    })
    .await;
    assert_eq!(second.location("other").await, None);
    let ready = second.wait_ready(START).await;
    assert!(ready.contains("1 links, 0 invalid"), "{ready}");
    assert!(
        proxy.sent().contains("GET /links/_all_docs?"),
        "every link of the other database was loaded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_over_the_size_limit_is_skipped_and_counted() {
    let pouch = PouchDb::start().await;
    let couch = Couch::new(&pouch.url(), "links");
    couch.create_db().await;
    let huge = "x".repeat(qrtag::store::MAX_DOCUMENT + 1000);
    couch
        .put("H83if", json!({"url": "https://a.example/one"}))
        .await;
    couch
        .put(
            "big01",
            json!({"url": "https://a.example/big", "note": huge}),
        )
        .await;
    // In the full load.
    let app = TestApp::spawn(couch_settings(&pouch.url(), "links")).await;
    let ready = app.wait_ready(START).await;
    assert!(ready.contains("1 links, 1 invalid"), "{ready}");
    assert_eq!(app.location("big01").await, None);
    assert_eq!(
        app.location("H83if").await.as_deref(),
        Some("https://a.example/one")
    );
    // And in the changes feed: a link that grows too large leaves the table.
    let mut doc = couch.get("H83if").await.expect("the document");
    doc["note"] = json!(huge);
    couch.put("H83if", doc).await;
    app.wait_location("H83if", None, PROPAGATION).await;
    couch
        .put("after", json!({"url": "https://a.example/after"}))
        .await;
    app.wait_location("after", Some("https://a.example/after"), PROPAGATION)
        .await;
    let (_, body) = app.readyz().await;
    assert!(body.contains("1 links, 2 invalid"), "{body}");
}

//! A link's life on CouchDB (issue 18): times stamped on every write and
//! accepted by the validation, deletion as a tombstone that the service
//! answers 404 for, no command reuses, and the database itself keeps from
//! an editor's hand edit.

use qrtag::values::secret::Secret;
use serde_json::json;

use super::harness::{Couch, TestApp, accounts, couch_settings, qrtag, stderr, stdout, user_env};
use super::pouchdb::PouchDb;
use super::{PROPAGATION, START};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_link_is_a_tombstone_the_database_keeps() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    accounts(&url).await;
    let boss = user_env(&url, "boss", "boss-pw-1");
    let boss: Vec<(&str, &str)> = boss.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = qrtag(&["setup"], &boss).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let ed = user_env(&url, "ed", "ed-pw-1");
    let mut ed: Vec<(&str, &str)> = ed.iter().map(|(k, v)| (*k, v.as_str())).collect();
    ed.push(("QRTAG_PUBLIC_URL", super::harness::PUBLIC_URL));
    let editor = Couch::new(&url, "links").with_user("ed", "ed-pw-1");

    for args in [
        &["new", "--key", "menu", "https://a.example/menu"][..],
        &[
            "new",
            "--key",
            "soon",
            "https://a.example/soon",
            "--expires",
            "2099-12-31",
        ],
        &["set", "soon", "--notes", "by the door"],
    ] {
        let out = qrtag(args, &ed).await;
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    let soon = editor.get("soon").await.expect("soon");
    assert_eq!(soon["expires"], "2099-12-31T23:59:59Z");
    assert!(
        soon["created_at"].is_string() && soon["changed_at"].is_string(),
        "{soon}"
    );

    let reader = couch_settings(&url, "links").with_credentials("rd", Some(Secret::new("rd-pw-1")));
    let app = TestApp::spawn(reader).await;
    app.wait_ready(START).await;
    app.wait_location("menu", Some("https://a.example/menu"), PROPAGATION)
        .await;

    // Issue 35: deleting is an admin's; CouchDB refuses the editor's.
    let out = qrtag(&["delete", "--yes", "menu"], &ed).await;
    assert_eq!(out.status.code(), Some(1), "an editor deleted");
    assert!(
        stderr(&out).contains("may delete links"),
        "{}",
        stderr(&out)
    );
    let mut admin = boss.clone();
    admin.push(("QRTAG_PUBLIC_URL", super::harness::PUBLIC_URL));
    let out = qrtag(&["delete", "--yes", "menu"], &admin).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("deleted menu: scans of "),
        "{}",
        stdout(&out)
    );
    app.wait_location("menu", None, PROPAGATION).await;
    assert_eq!(app.status("menu").await, 404);
    let tomb = editor.get("menu").await.expect("the document stays");
    assert!(tomb["deleted_at"].is_string(), "{tomb}");
    assert_eq!(tomb["inactive"], true);

    let out = qrtag(&["new", "--key", "menu", "https://b.example/"], &ed).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("key menu was deleted on ") && stderr(&out).contains("never reused"),
        "{}",
        stderr(&out)
    );
    let out = qrtag(&["list"], &ed).await;
    assert_eq!(
        stdout(&out),
        "soon\thttps://a.example/soon\tactive until 2099-12-31 23:59 UTC\n"
    );
    let out = qrtag(&["list", "--deleted"], &ed).await;
    assert!(
        stdout(&out).starts_with("menu\thttps://a.example/menu\tdeleted "),
        "{}",
        stdout(&out)
    );

    // An editor's hand edit cannot revive or remove a tombstone.
    let (status, body) = editor
        .try_put(
            "menu",
            json!({"url": "https://b.example/", "inactive": false}),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert!(body.to_string().contains("never reused"), "{body}");
    let rev = tomb["_rev"].as_str().expect("rev");
    let (status, body) = editor
        .call(
            reqwest::Method::DELETE,
            &format!("links/menu?rev={rev}"),
            None,
        )
        .await;
    assert_eq!(status, 403, "{body}");

    // Nor can an import, even with --update.
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("links.csv");
    std::fs::write(&input, "key,url,notes\nmenu,https://b.example/,x\n").expect("write");
    let path = input.to_str().expect("utf-8");
    let out = qrtag(&["import", "--update", path], &ed).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(":2: key menu was deleted on "),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        editor.get("menu").await.expect("menu")["url"],
        "https://a.example/menu"
    );
}

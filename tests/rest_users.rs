//! Issue 35 (i35-users): API keys belong to a user. Keys made by the real
//! binary (`qrtag api-key create --user`), users changed by it (`qrtag
//! user`), requests over real sockets: the key's user is read on every
//! request, so a lowered role or a removal holds from the very next one.

mod support;

use std::path::Path;

use qrtag::server::api::ApiSettings;
use serde_json::json;
use support::api::{api, post};
use support::console::set_password;
use support::{TestApp, qrtag_cmd, spawn_with, test_settings};

async fn spawn_api() -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.api = Some(ApiSettings::new(
        "127.0.0.1:0",
        dir.path().join("didcomm-keys.json"),
    ));
    spawn_with(settings, dir).await
}

fn run(db: &Path, args: &[&str]) -> std::process::Output {
    qrtag_cmd(db, args)
}

/// `qrtag api-key create …`: the key, printed once.
fn key(db: &Path, args: &[&str]) -> String {
    let mut all = vec!["api-key", "create", "--name", "script"];
    all.extend_from_slice(args);
    let out = run(db, &all);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

fn ok(db: &Path, args: &[&str]) {
    let out = run(db, args);
    assert!(out.status.success(), "qrtag {args:?}: {out:?}");
}

async fn create(app: &TestApp, key: &str, link: &str) -> u16 {
    let body = json!({"url": "https://example.com/x", "key": link});
    post(app, "/links", key, &body).await.status().as_u16()
}

async fn read(app: &TestApp, key: &str, link: &str) -> u16 {
    app.client
        .get(api(app, &format!("/links/{link}")))
        .bearer_auth(key)
        .send()
        .await
        .expect("GET")
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_key_does_at_most_what_its_user_may_and_dies_with_them() {
    let app = spawn_api().await;
    let db = app.db.clone();
    set_password(&db, "poster-printing-42");
    ok(&db, &["user", "add", "ann", "--role", "editor"]);
    let ann = key(&db, &["--scope", "write", "--user", "ann"]);
    assert_eq!(create(&app, &ann, "ann-1").await, 201);

    // Lowered: the very next write is refused, reads go on.
    ok(&db, &["user", "role", "ann", "viewer"]);
    assert_eq!(create(&app, &ann, "ann-2").await, 403);
    assert_eq!(read(&app, &ann, "ann-1").await, 200);
    ok(&db, &["user", "role", "ann", "editor"]);
    assert_eq!(create(&app, &ann, "ann-3").await, 201);

    // A read key of an admin stays a read key.
    let reader = key(&db, &["--scope", "read", "--user", "admin"]);
    assert_eq!(create(&app, &reader, "admin-1").await, 403);

    // Removed: 401 at once, for reads too.
    ok(&db, &["user", "remove", "ann"]);
    assert_eq!(read(&app, &ann, "ann-1").await, 401);
    assert_eq!(create(&app, &ann, "ann-4").await, 401);
    assert_eq!(read(&app, &reader, "ann-1").await, 200);

    // The list names each key's user.
    let listed = String::from_utf8(run(&db, &["api-key", "list"]).stdout).expect("utf-8");
    let users: Vec<&str> = listed
        .lines()
        .map(|l| l.rsplit('\t').next().expect("user"))
        .collect();
    assert_eq!(users.len(), 2, "{listed}");
    assert!(
        users.contains(&"ann") && users.contains(&"admin"),
        "{listed}"
    );
}

#[tokio::test]
async fn keys_from_before_users_belong_to_the_first_admin() {
    let app = spawn_api().await;
    let db = app.db.clone();
    // No user yet: a key as every earlier version made it, no owner.
    let old = key(&db, &["--scope", "write"]);
    assert_eq!(create(&app, &old, "old-1").await, 201);
    let listed = String::from_utf8(run(&db, &["api-key", "list"]).stdout).expect("utf-8");
    assert!(listed.trim_end().ends_with("\tadmin"), "{listed}");

    // Users come: it is the admin's, and ends with them.
    set_password(&db, "poster-printing-42");
    assert_eq!(create(&app, &old, "old-2").await, 201);
    ok(&db, &["user", "add", "bea", "--role", "admin"]);
    ok(&db, &["user", "role", "admin", "viewer"]);
    assert_eq!(create(&app, &old, "old-3").await, 403);
    ok(&db, &["user", "remove", "admin"]);
    assert_eq!(read(&app, &old, "old-1").await, 401);

    // Without --user once users exist and admin is gone: refused, exit 2.
    let out = run(
        &db,
        &["api-key", "create", "--name", "x", "--scope", "read"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("give --user NAME"));
    for (user, says) in [
        ("zed", "there is no user zed"),
        ("Zed Z", "not a user name"),
    ] {
        let out = run(
            &db,
            &[
                "api-key", "create", "--name", "x", "--scope", "read", "--user", user,
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says) && err.lines().count() == 1, "{err}");
    }
    let after = String::from_utf8(run(&db, &["api-key", "list"]).stdout).expect("utf-8");
    assert_eq!(after.lines().count(), 1, "nothing made: {after}");
}

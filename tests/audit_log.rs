//! The audit log (issue 35) through the real binary and server: `qrtag
//! api-key create|revoke` and `console-password` leave their entries, the
//! console's login, failed login, bulk action and logout theirs, and
//! `qrtag audit` prints them as JSON lines (oldest first, `--since`,
//! `--limit`), with no secret in any of them.

mod support;

use qrtag::console::ConsoleSettings;
use reqwest::StatusCode;
use serde_json::Value;
use support::console::{browser, csrf, get_page, log_in, log_in_with, post_form, set_password};
use support::{init_db, qrtag_cmd, spawn_with, test_settings};

/// `qrtag audit` on `db` with `args`: its lines, parsed.
fn audit(db: &std::path::Path, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["audit"];
    all.extend_from_slice(args);
    let out = qrtag_cmd(db, &all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn kinds(entries: &[Value]) -> Vec<&str> {
    entries
        .iter()
        .map(|e| e["event"]["kind"].as_str().unwrap_or("?"))
        .collect()
}

#[test]
fn api_keys_made_and_revoked_are_in_the_audit_log_without_their_secret() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("links.db");
    init_db(&db);
    assert!(
        audit(&db, &[]).is_empty(),
        "a new database has an empty log"
    );
    let out = qrtag_cmd(
        &db,
        &[
            "api-key",
            "create",
            "--name",
            "print-shop",
            "--scope",
            "write",
        ],
    );
    assert!(out.status.success());
    let secret = String::from_utf8(out.stdout)
        .expect("key")
        .trim()
        .to_owned();
    let id = secret.split('_').nth(1).expect("qrt_ID_SECRET").to_owned();
    let out = qrtag_cmd(&db, &["api-key", "revoke", &id]);
    assert!(out.status.success());
    // Revoking again changes nothing and records nothing.
    assert!(qrtag_cmd(&db, &["api-key", "revoke", &id]).status.success());

    let log = audit(&db, &[]);
    assert_eq!(kinds(&log), ["api_key_created", "api_key_revoked"]);
    assert_eq!(log[0]["event"]["key"], id.as_str());
    assert_eq!(log[0]["event"]["name"], "print-shop");
    assert_eq!(log[0]["event"]["scope"], "write");
    assert_eq!(log[0]["actor"]["kind"], "cli");
    assert_eq!(log[0]["surface"], "cli");
    assert!(log[0]["actor"]["os_user"].is_string() && log[0]["actor"]["host"].is_string());
    let text = String::from_utf8(qrtag_cmd(&db, &["audit"]).stdout).expect("text");
    assert!(!text.contains(&secret), "the secret is in the log: {text}");

    assert_eq!(kinds(&audit(&db, &["--limit", "1"])), ["api_key_revoked"]);
    assert!(audit(&db, &["--since", "2999-01-01"]).is_empty());
    assert_eq!(audit(&db, &["--since", "2000-01-01"]).len(), 2);

    // Bad input: one line, exit 2.
    for bad in [&["--since", "yesterday"][..], &["--limit", "0"]] {
        let mut args = vec!["audit"];
        args.extend_from_slice(bad);
        let out = qrtag_cmd(&db, &args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(out.stdout.is_empty());
    }
}

#[tokio::test]
async fn console_logins_failed_logins_bulk_actions_and_logouts_are_in_the_audit_log() {
    const PASSWORD: &str = "poster-printing-42";
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.console = Some(ConsoleSettings::default());
    let app = spawn_with(settings, dir).await;
    set_password(&app.db, PASSWORD);
    for k in ["bus-1", "bus-2", "menu"] {
        app.link(k, &format!("https://example.com/{k}")).await;
    }
    app.wait_for_status("/menu", 302).await;
    let console = format!("http://{}/console", app.admin);

    let http = browser();
    let wrong = log_in_with(&http, &console, "not-the-password").await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    log_in(&http, &console, PASSWORD).await;
    let token = csrf(&get_page(&http, &format!("{console}/links")).await);
    let res = post_form(
        &http,
        &format!("{console}/links/bulk"),
        &[
            ("csrf", token.as_str()),
            ("key", "bus-1"),
            ("key", "bus-2"),
            ("action", "disable"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    // The one-password admin reads the log in the console, newest first.
    let page = get_page(&http, &format!("{console}/audit")).await;
    let shown: Vec<&str> = page
        .split(r#"data-kind=""#)
        .skip(1)
        .map(|r| &r[..r.find('"').expect("end")])
        .collect();
    assert_eq!(
        shown,
        ["bulk", "login", "failed_login", "settings_changed"],
        "{page}"
    );
    assert!(page.contains("admin (console)"), "{page}");
    let token = csrf(&get_page(&http, &format!("{console}/links")).await);
    let res = post_form(
        &http,
        &format!("{console}/logout"),
        &[("csrf", token.as_str())],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);

    let log = audit(&app.db, &[]);
    assert_eq!(
        kinds(&log),
        [
            "settings_changed",
            "failed_login",
            "login",
            "bulk",
            "logout"
        ],
        "{log:#?}"
    );
    assert_eq!(log[0]["event"]["setting"], "console_password");
    assert!(
        !serde_json::to_string(&log)
            .expect("json")
            .contains(PASSWORD),
        "the password is in the log"
    );
    let failed = &log[1];
    assert_eq!(failed["event"]["address"], "127.0.0.1");
    assert_eq!(failed["actor"]["kind"], "anonymous");
    assert_eq!(
        log[2]["actor"],
        serde_json::json!({"kind": "console", "user": "admin"})
    );
    assert_eq!(log[2]["surface"], "console");
    let bulk = &log[3]["event"];
    assert_eq!(bulk["count"], 2);
    assert_eq!(bulk["keys"], serde_json::json!(["bus-1", "bus-2"]));
    assert!(bulk["action"].as_str().is_some_and(|a| !a.is_empty()));
    assert_eq!(log[4]["actor"]["user"], "admin");
}

/// A REST bulk create is one entry naming the key that made it and the
/// links it made (not the ones it refused).
#[tokio::test]
async fn a_rest_bulk_create_is_in_the_audit_log_with_its_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.api = Some(qrtag::server::api::ApiSettings::new(
        "127.0.0.1:0",
        dir.path().join("didcomm-keys.json"),
    ));
    let app = spawn_with(settings, dir).await;
    let out = app.cli(&["api-key", "create", "--name", "shop", "--scope", "write"]);
    assert!(out.status.success());
    let key = String::from_utf8(out.stdout)
        .expect("key")
        .trim()
        .to_owned();
    let id = key.split('_').nth(1).expect("qrt_ID_SECRET").to_owned();
    let links = serde_json::json!({"links": [
        {"url": "https://example.com/1", "key": "run/1"},
        {"url": "https://example.com/2", "key": "run/2"},
        {"url": "//evil.example"},
    ]});
    let res = app
        .client
        .post(format!(
            "http://{}/api/v1/links/bulk",
            app.api.expect("API")
        ))
        .bearer_auth(&key)
        .json(&links)
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::OK);
    let log = audit(&app.db, &[]);
    assert_eq!(kinds(&log), ["api_key_created", "bulk"]);
    assert_eq!(
        log[1]["actor"],
        serde_json::json!({"kind": "api_key", "key": id})
    );
    assert_eq!(log[1]["surface"], "api");
    assert_eq!(log[1]["event"]["action"], "create");
    assert_eq!(log[1]["event"]["count"], 2);
    assert_eq!(
        log[1]["event"]["keys"],
        serde_json::json!(["run/1", "run/2"])
    );
}

#[test]
fn user_commands_leave_their_entries_by_the_cli() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("links.db");
    init_db(&db);
    for args in [
        &["user", "add", "ann", "--role", "editor"][..],
        &["user", "role", "ann", "viewer"],
        &["user", "reset", "ann"],
        &["user", "remove", "ann"],
    ] {
        let out = qrtag_cmd(&db, args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A refused command (an unknown user) changes nothing and leaves no entry.
    assert_eq!(
        qrtag_cmd(&db, &["user", "remove", "nobody"]).status.code(),
        Some(2)
    );
    let entries = audit(&db, &[]);
    assert_eq!(
        kinds(&entries),
        [
            "user_invited",
            "role_changed",
            "invitation_reset",
            "user_removed"
        ]
    );
    assert_eq!(entries[0]["event"]["user"], "ann");
    assert_eq!(entries[0]["event"]["role"], "editor");
    assert_eq!(entries[1]["event"]["from"], "editor");
    assert_eq!(entries[1]["event"]["to"], "viewer");
    for e in &entries {
        assert_eq!(e["actor"]["kind"], "cli", "{e}");
        assert_eq!(e["surface"], "cli", "{e}");
        assert!(!e.to_string().contains("token="), "no invitation link: {e}");
    }
}

//! Issue 35: CouchDB enforces qrtag's roles itself, whoever writes. After
//! `qrtag setup`, a user of each role writes straight to the database (as
//! Fauxton or curl would): `qrtag_viewer` reads and is refused a write,
//! `qrtag_editor` writes but is refused a delete (a tombstone), and
//! `qrtag_admin` deletes; on PouchDB Server and on Apache CouchDB 3.5.0
//! (which alone enforces `_security`: a user of none of the roles reads
//! nothing there). The console on CouchDB shows a `qrtag_viewer` no forms.

use qrtag::console::ConsoleSettings;
use qrtag::values::secret::Secret;
use reqwest::Method;
use serde_json::{Value, json};

use crate::START;
use crate::apache::{ADMIN, ApacheCouch};
use crate::harness::{
    Couch, TestApp, couch_settings, editor_and_reader, qrtag, server_admin, stderr, user_env,
};
use crate::pouchdb::PouchDb;

/// `vi` (qrtag_viewer), `ad` (qrtag_admin) and `out` (no role), password
/// NAME-pw-1, beside [`editor_and_reader`]'s `ed` and `rd`.
async fn role_users(admin: &Couch) {
    editor_and_reader(admin).await;
    for (name, roles) in [
        ("vi", json!(["qrtag_viewer"])),
        ("ad", json!(["qrtag_admin"])),
        ("out", json!([])),
    ] {
        let (status, body) = admin
            .call(
                Method::PUT,
                &format!("_users/org.couchdb.user:{name}"),
                Some(json!({"name": name, "password": format!("{name}-pw-1"),
                            "roles": roles, "type": "user"})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
}

fn as_user(url: &str, name: &str) -> Couch {
    Couch::new(url, "links").with_user(name, &format!("{name}-pw-1"))
}

async fn setup(url: &str) {
    let env = user_env(url, ADMIN.0, ADMIN.1);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("QRTAG_PUBLIC_URL", crate::harness::PUBLIC_URL));
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
}

fn refused(server: &str, what: &str, (status, body): &(u16, Value), reason: &str) {
    assert_eq!(*status, 403, "{server}: {what}: {body}");
    assert_eq!(body["error"], "forbidden", "{server}: {what}: {body}");
    let said = body["reason"].as_str().unwrap_or_default();
    assert!(said.contains(reason), "{server}: {what}: {said}");
}

/// What every server enforces, through its validation function.
async fn check(url: &str, admin: &Couch, server: &str) {
    let (status, security) = admin.call(Method::GET, "links/_security", None).await;
    assert_eq!(status, 200, "{security}");
    for role in ["qrtag_viewer", "qrtag_editor", "qrtag_admin"] {
        assert!(
            security["members"]["roles"]
                .as_array()
                .is_some_and(|r| r.iter().any(|r| r == role)),
            "{server}: {role} is no member: {security}"
        );
    }
    let link = json!({"url": "https://a.example/one"});
    let ed = as_user(url, "ed");
    let answer = ed.try_put("H83if", link.clone()).await;
    assert_eq!(answer.0, 201, "{server}: the editor writes: {}", answer.1);
    let stored = admin.get("H83if").await.expect("stored");

    let vi = as_user(url, "vi");
    assert_eq!(
        vi.get("H83if").await.map(|d| d["url"].clone()),
        Some(json!("https://a.example/one")),
        "{server}: a viewer reads"
    );
    let answer = vi
        .try_put("H83if", json!({"url": "https://evil.example/"}))
        .await;
    refused(server, "a viewer's repoint", &answer, "may change links");
    let answer = vi.try_put("new01", link.clone()).await;
    refused(server, "a viewer's create", &answer, "may change links");

    let mut tombstone = link.clone();
    tombstone["deleted_at"] = json!("2026-11-28T12:00:00Z");
    let answer = ed.try_put("H83if", tombstone.clone()).await;
    refused(server, "an editor's delete", &answer, "may delete links");
    let after = admin.get("H83if").await.expect("stored");
    assert_eq!(after["_rev"], stored["_rev"], "{server}: changed: {after}");
    // An editor may still write every other field.
    let answer = ed
        .try_put(
            "H83if",
            json!({"url": "https://a.example/two", "inactive": true}),
        )
        .await;
    assert_eq!(answer.0, 201, "{server}: {}", answer.1);

    let ad = as_user(url, "ad");
    let answer = ad.try_put("made", link.clone()).await;
    assert_eq!(answer.0, 201, "{server}: an admin writes: {}", answer.1);
    let answer = ad.try_put("H83if", tombstone).await;
    assert_eq!(answer.0, 201, "{server}: an admin deletes: {}", answer.1);
    assert_eq!(
        admin.get("H83if").await.map(|d| d["deleted_at"].clone()),
        Some(json!("2026-11-28T12:00:00Z"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pouchdb_enforces_each_role_on_direct_writes() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let admin = server_admin(&url, ADMIN.0, ADMIN.1).await;
    role_users(&admin).await;
    setup(&url).await;
    check(&url, &admin, "PouchDB Server").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_enforces_each_role_on_direct_writes() {
    let Some(server) = ApacheCouch::start("apache_couchdb_enforces_each_role").await else {
        return;
    };
    let url = server.url();
    let admin = server.admin();
    role_users(&admin).await;
    setup(&url).await;
    check(&url, &admin, "Apache CouchDB").await;
    // `_security` holds: a user of none of the roles is no member.
    let (status, body) = as_user(&url, "out")
        .call(Method::GET, "links/made", None)
        .await;
    assert_eq!(status, 403, "an outsider read a link: {body}");
}

/// The console on CouchDB: a `qrtag_viewer` sees no form that writes and
/// is refused a forged one by qrtag before CouchDB is asked; a
/// `qrtag_editor` sees no delete form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_on_couchdb_shows_each_role_its_forms() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let admin = server_admin(&url, ADMIN.0, ADMIN.1).await;
    role_users(&admin).await;
    setup(&url).await;
    as_user(&url, "ed")
        .put("H83if", json!({"url": "https://a.example/one"}))
        .await;
    let service =
        couch_settings(&url, "links").with_credentials("rd", Some(Secret::new("rd-pw-1")));
    let dir = tempfile::tempdir().expect("tempdir");
    let app = TestApp::spawn_with(service, dir.path(), |s| {
        s.console = Some(ConsoleSettings::default());
    })
    .await;
    app.wait_ready(START).await;
    let stored = admin.get("H83if").await.expect("stored");

    for (user, role) in [("vi", "viewer"), ("ed", "editor"), ("ad", "admin")] {
        let http = reqwest::Client::builder()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let console = |path: &str| format!("{}/console{path}", app.admin);
        let token = |page: &str| {
            let marker = r#"name="csrf" value=""#;
            let at = page.find(marker).expect("a form") + marker.len();
            page[at..at + page[at..].find('"').expect("end")].to_owned()
        };
        let page = |path: String| {
            let http = http.clone();
            async move {
                let res = http.get(path).send().await.expect("GET");
                assert_eq!(res.status(), 200);
                res.text().await.expect("body")
            }
        };
        let login = page(console("/login")).await;
        let password = format!("{user}-pw-1");
        let res = http
            .post(console("/login"))
            .form(&[
                ("csrf", token(&login).as_str()),
                ("user", user),
                ("password", password.as_str()),
            ])
            .send()
            .await
            .expect("login");
        assert_eq!(res.status(), 303, "{user} logs in");
        let link = page(console("/link?key=H83if")).await;
        assert!(
            link.contains(&format!(r#"data-role="{role}""#)),
            "{user}: {link}"
        );
        assert_eq!(
            link.contains(r#"id="edit-destination""#),
            role != "viewer",
            "{user}"
        );
        assert_eq!(
            link.contains(r#"id="delete-link""#),
            role == "admin",
            "{user}"
        );
        assert!(link.contains(r#"id="print""#), "{user} prints");
        if role == "admin" {
            continue;
        }
        // The form the role may not post, forged with a valid token.
        let (path, form): (&str, Vec<(&str, &str)>) = if role == "viewer" {
            ("/link/destination", vec![("url", "https://evil.example/")])
        } else {
            ("/link/delete", vec![("confirm", "yes")])
        };
        let csrf = token(&link);
        let mut fields = vec![("csrf", csrf.as_str()), ("key", "H83if")];
        fields.extend(form);
        let res = http
            .post(console(path))
            .form(&fields)
            .send()
            .await
            .expect("POST");
        assert_eq!(res.status(), 403, "{user} POST {path}");
        let body = res.text().await.expect("body");
        assert!(
            body.contains(&format!("your role ({role}) may not")),
            "{body}"
        );
        let after = admin.get("H83if").await.expect("stored");
        assert_eq!(after["_rev"], stored["_rev"], "{user}: written: {after}");
    }
}

/// Runs `qrtag` as the CouchDB user `name` (password NAME-pw-1).
async fn qrtag_as(url: &str, name: &str, args: &[&str]) -> std::process::Output {
    let password = format!("{name}-pw-1");
    let env = user_env(url, name, &password);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    qrtag(args, &env).await
}

/// Issue 35: a `qrtag_admin` runs `qrtag api-key` (create, list, revoke)
/// like an editor, on a keys database an earlier `qrtag setup` left to
/// editors alone, once `setup` runs again; a viewer still may not.
async fn check_admin_keys(url: &str, admin: &Couch, server: &str) {
    // The keys database as an earlier setup left it: editors only.
    let (status, body) = admin
        .call(
            Method::PUT,
            "links-keys/_security",
            Some(json!({"admins": {"names": [], "roles": []},
                        "members": {"names": [], "roles": ["qrtag_editor"]}})),
        )
        .await;
    assert_eq!(status, 200, "{server}: {body}");
    setup(url).await;
    let (_, security) = admin.call(Method::GET, "links-keys/_security", None).await;
    assert_eq!(
        security["members"]["roles"],
        json!(["qrtag_editor", "qrtag_admin"]),
        "{server}: {security}"
    );

    let out = qrtag_as(
        url,
        "ad",
        &["api-key", "create", "--name", "shop", "--scope", "write"],
    )
    .await;
    assert!(out.status.success(), "{server}: {}", stderr(&out));
    let key = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let id = key.get(4..12).expect("qrt_ID_SECRET").to_owned();
    let out = qrtag_as(url, "ad", &["api-key", "list"]).await;
    assert!(out.status.success(), "{server}: {}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&id),
        "{server}: the admin lists the key"
    );
    let out = qrtag_as(url, "ad", &["api-key", "revoke", &id]).await;
    assert!(out.status.success(), "{server}: {}", stderr(&out));

    let out = qrtag_as(
        url,
        "vi",
        &["api-key", "create", "--name", "mine", "--scope", "read"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{server}: a viewer made a key");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{server}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pouchdb_lets_a_qrtag_admin_manage_api_keys() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let admin = server_admin(&url, ADMIN.0, ADMIN.1).await;
    role_users(&admin).await;
    setup(&url).await;
    check_admin_keys(&url, &admin, "PouchDB Server").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_lets_a_qrtag_admin_manage_api_keys() {
    let Some(server) = ApacheCouch::start("apache_couchdb_admin_api_keys").await else {
        return;
    };
    let url = server.url();
    let admin = server.admin();
    role_users(&admin).await;
    setup(&url).await;
    check_admin_keys(&url, &admin, "Apache CouchDB").await;
}

/// Issue 35: an API key's user is read on every request.
/// After `qrtag setup` (which lets the keys' members read each user's name
/// and roles), the server follows as the reader and its API reads keys and
/// users as the editor `ed`: a write key of `ann` (an editor) writes;
/// once an admin lowers `ann` to a viewer in `_users` the next write is
/// 403 while reads go on; once `bob` is deleted his key is 401.
async fn check_key_users(url: &str, admin: &Couch, server: &str) {
    use qrtag::server::api::ApiSettings;
    use qrtag::values::couch::Credentials;

    let url = url.to_owned();
    editor_and_reader(admin).await;
    for name in ["ann", "bob"] {
        let (status, body) = admin
            .call(
                Method::PUT,
                &format!("_users/org.couchdb.user:{name}"),
                Some(json!({"name": name, "password": format!("{name}-pw-1"),
                            "roles": ["qrtag_editor"], "type": "user"})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    setup(&url).await;
    let key = |user: &'static str| {
        let url = url.clone();
        async move {
            let out = qrtag_as(
                &url,
                "ed",
                &[
                    "api-key", "create", "--name", user, "--scope", "write", "--user", user,
                ],
            )
            .await;
            assert!(out.status.success(), "{}", stderr(&out));
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        }
    };
    let (ann, bob) = (key("ann").await, key("bob").await);

    let dir = tempfile::tempdir().expect("tempdir");
    let reader = couch_settings(&url, "links").with_credentials("rd", Some(Secret::new("rd-pw-1")));
    let app = TestApp::spawn_with(reader, dir.path(), |settings| {
        let mut api = ApiSettings::new("127.0.0.1:0", dir.path().join("didcomm-keys.json"));
        api.couch_writer = Some(Credentials {
            user: "ed".into(),
            password: Some(Secret::new("ed-pw-1")),
        });
        settings.api = Some(api);
    })
    .await;
    app.wait_ready(START).await;
    let api = app.api();
    let http = reqwest::Client::new();
    let create = |key: String, link: &'static str| {
        let http = http.clone();
        let api = api.clone();
        async move {
            http.post(format!("{api}/links"))
                .bearer_auth(key)
                .json(&json!({"url": "https://a.example/api", "key": link}))
                .send()
                .await
                .expect("the API answers")
                .status()
                .as_u16()
        }
    };
    assert_eq!(create(ann.clone(), "by-ann").await, 201, "{server}");
    assert_eq!(create(bob.clone(), "by-bob").await, 201, "{server}");

    // An admin lowers ann to a viewer: her next write is refused.
    let mut doc = admin
        .call(Method::GET, "_users/org.couchdb.user:ann", None)
        .await
        .1;
    doc["roles"] = json!(["qrtag_viewer"]);
    let (status, body) = admin
        .call(Method::PUT, "_users/org.couchdb.user:ann", Some(doc))
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        create(ann.clone(), "by-ann-2").await,
        403,
        "{server}: ann is a viewer now"
    );
    let r = http
        .get(format!("{api}/links/by-ann"))
        .bearer_auth(&ann)
        .send()
        .await
        .expect("the API answers");
    assert_eq!(r.status().as_u16(), 200, "{server}: a viewer still reads");

    // An admin deletes bob: his key is refused at once.
    let rev = admin
        .call(Method::GET, "_users/org.couchdb.user:bob", None)
        .await
        .1["_rev"]
        .as_str()
        .expect("a revision")
        .to_owned();
    let (status, body) = admin
        .call(
            Method::DELETE,
            &format!("_users/org.couchdb.user:bob?rev={rev}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        create(bob.clone(), "by-bob-2").await,
        401,
        "{server}: bob was removed"
    );
    let r = http
        .get(format!("{api}/links/by-bob"))
        .bearer_auth(&bob)
        .send()
        .await
        .expect("the API answers");
    assert_eq!(
        r.status().as_u16(),
        401,
        "{server}: bob's key reads nothing either"
    );
}

/// PouchDB Server answers a member's read of `_users` with a 500, so setup
/// leaves it closed there and a key's scope alone decides (the guide's
/// stated limit): a key of a user lowered to a viewer still writes, and
/// nothing answers 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pouchdb_leaves_an_api_keys_user_unchecked() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let admin = server_admin(&url, ADMIN.0, ADMIN.1).await;
    editor_and_reader(&admin).await;
    let (status, body) = admin
        .call(
            Method::PUT,
            "_users/org.couchdb.user:ann",
            Some(json!({"name": "ann", "password": "ann-pw-1",
                        "roles": ["qrtag_viewer"], "type": "user"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    setup(&url).await;
    let out = qrtag_as(
        &url,
        "ed",
        &[
            "api-key", "create", "--name", "ann", "--scope", "write", "--user", "ann",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let ann = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let dir = tempfile::tempdir().expect("tempdir");
    let app = TestApp::spawn_with(
        couch_settings(&url, "links").with_credentials("ed", Some(Secret::new("ed-pw-1"))),
        dir.path(),
        |settings| {
            settings.api = Some(qrtag::server::api::ApiSettings::new(
                "127.0.0.1:0",
                dir.path().join("didcomm-keys.json"),
            ));
        },
    )
    .await;
    app.wait_ready(START).await;
    let status = reqwest::Client::new()
        .post(format!("{}/links", app.api()))
        .bearer_auth(&ann)
        .json(&json!({"url": "https://a.example/api", "key": "by-ann"}))
        .send()
        .await
        .expect("the API answers")
        .status()
        .as_u16();
    assert_eq!(status, 201, "the scope alone decides on PouchDB Server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_checks_an_api_keys_user_on_every_request() {
    let Some(server) = ApacheCouch::start("apache_couchdb_checks_an_api_keys_user").await else {
        return;
    };
    check_key_users(&server.url(), &server.admin(), "Apache CouchDB").await;
}

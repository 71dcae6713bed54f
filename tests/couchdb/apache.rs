//! The same promises on the real Apache CouchDB 3.5.0 (single node, QuickJS),
//! where the project's `shared/couchdb/` release sits beside the repository
//! (CI has it). PouchDB Server speaks CouchDB's API, but only Apache CouchDB
//! enforces `_security`, runs the validation in QuickJS and hands out
//! clustered sequences; these tests hold qrtag to that.
//!
//! Where the release is missing (a fresh clone elsewhere), each test says so
//! on stderr and returns: PouchDB Server covers the rest there.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use qrtag::server::api::ApiSettings;
use qrtag::values::couch::Credentials;
use qrtag::values::secret::Secret;
use serde_json::json;

use crate::harness::{
    Couch, TestApp, couch_settings, editor_and_reader, qrtag, stderr, stdout, user_env,
};
use crate::proxy::RecordingProxy;

/// Apache CouchDB takes about 3 s to start; more on a busy machine.
const START_LIMIT: Duration = Duration::from_secs(60);
const PROPAGATION: Duration = Duration::from_secs(1);

/// The server admin every instance is started with.
pub const ADMIN: (&str, &str) = ("boss", "boss-pw-1");

/// One Apache CouchDB on a free loopback port, its release and data in a
/// temporary directory; `Drop` stops it.
pub struct ApacheCouch {
    dir: tempfile::TempDir,
    port: u16,
    /// Environment for `start-couchdb` (a cluster's `COUCHDB_EXTRA_INI`,
    /// `ERL_ZFLAGS`); a cluster node makes no system databases itself.
    env: Vec<(String, String)>,
}

/// `shared/couchdb/start-couchdb` beside the repository, or the script
/// `QRTAG_APACHE_COUCHDB` names.
fn start_script() -> Option<PathBuf> {
    let script = match std::env::var_os("QRTAG_APACHE_COUCHDB") {
        Some(path) => PathBuf::from(path),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/couchdb/start-couchdb"),
    };
    script.exists().then_some(script)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl ApacheCouch {
    /// A running server with [`ADMIN`] as its admin, or `None` (said on
    /// stderr) where the release is not there.
    pub async fn start(test: &str) -> Option<Self> {
        Self::start_with(test, Vec::new()).await
    }

    /// [`start`](Self::start) with this environment for `start-couchdb`.
    pub async fn start_with(test: &str, env: Vec<(String, String)>) -> Option<Self> {
        let Some(_) = start_script() else {
            eprintln!(
                "{test}: skipped, no Apache CouchDB release at ../shared/couchdb \
                 (set QRTAG_APACHE_COUCHDB to its start-couchdb script)"
            );
            return None;
        };
        let mut server = Self {
            dir: tempfile::tempdir().expect("temporary directory"),
            port: free_port(),
            env,
        };
        // Another test may take the port between free_port and the bind.
        for _ in 0..3 {
            if server.try_run().await.is_ok() {
                return Some(server);
            }
            server.port = free_port();
        }
        let why = server.try_run().await.err().unwrap_or_default();
        panic!("Apache CouchDB did not start: {why}");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Sends `signal` (`STOP`, `CONT`) to the server's Erlang VM.
    pub fn signal(&self, signal: &str) {
        let pid = std::fs::read_to_string(self.dir.path().join("couchdb.pid")).expect("pid file");
        let status = std::process::Command::new("kill")
            .args([&format!("-{signal}"), pid.trim()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} {pid}");
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A client for the database `links` as the server admin.
    pub fn admin(&self) -> Couch {
        Couch::new(&self.url(), "links").with_user(ADMIN.0, ADMIN.1)
    }

    /// Starts the server (again) on its port, over the data it has.
    pub async fn run(&mut self) {
        if let Err(why) = self.try_run().await {
            panic!("Apache CouchDB did not start on port {}: {why}", self.port);
        }
    }

    async fn try_run(&mut self) -> Result<(), String> {
        let script = start_script().ok_or("no start-couchdb script")?;
        let run = tokio::process::Command::new(script)
            .arg(self.dir.path())
            .arg(self.port.to_string())
            .args([ADMIN.0, ADMIN.1])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .output();
        let out = tokio::time::timeout(START_LIMIT, run)
            .await
            .map_err(|_| format!("no answer within {START_LIMIT:?}"))?
            .map_err(|e| format!("cannot run start-couchdb: {e}"))?;
        if out.status.success() && self.env.is_empty() {
            return self.system_databases().await;
        }
        if out.status.success() {
            return Ok(());
        }
        let log = std::fs::read_to_string(self.dir.path().join("couchdb.log")).unwrap_or_default();
        self.stop();
        Err(format!(
            "{}{}\nits log:\n{log}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }

    /// A single node makes `_users` and `_replicator` just after `/_up`
    /// first answers; accounts can be made once they are there.
    async fn system_databases(&self) -> Result<(), String> {
        let admin = self.admin();
        let deadline = Instant::now() + START_LIMIT;
        loop {
            let (users, _) = admin.call(reqwest::Method::GET, "_users", None).await;
            let (replicator, _) = admin.call(reqwest::Method::GET, "_replicator", None).await;
            if (users, replicator) == (200, 200) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "no _users and _replicator within {START_LIMIT:?} ({users}, {replicator})"
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills the server and waits until its port is free, as a crash would
    /// leave it.
    pub fn stop(&mut self) {
        let pid_file = self.dir.path().join("couchdb.pid");
        let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        else {
            return;
        };
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        let _ = std::fs::remove_file(&pid_file);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ApacheCouch {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn run_as(url: &str, user: &str, password: &str, args: &[&str]) -> std::process::Output {
    let env = user_env(url, user, password);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("QRTAG_PUBLIC_URL", crate::harness::PUBLIC_URL));
    let out = qrtag(args, &env).await;
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!all.contains(password), "a password was printed: {all}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_enforces_roles_and_validation_and_edits_reach_scans() {
    let Some(server) = ApacheCouch::start("apache_couchdb_enforces_roles").await else {
        return;
    };
    let url = server.url();
    let admin = server.admin();
    editor_and_reader(&admin).await;

    // Issue 23, item 3: the copies and shards asked for, and said.
    let out = run_as(
        &url,
        ADMIN.0,
        ADMIN.1,
        &["setup", "--replicas", "1", "--shards", "2"],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("database links: created\n")
            && stdout(&out).contains(
                "database links: n = 1 (copies of each link), q = 2 (shards) on a cluster of 1 node\n"
            ),
        "{}",
        stdout(&out)
    );
    assert_eq!(stderr(&out), "", "no warning for one copy on one node");
    // An existing database keeps what it was created with: said, exit 1.
    let out = run_as(&url, ADMIN.0, ADMIN.1, &["setup", "--replicas", "3"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--replicas 3 (it has n = 1) cannot be applied"),
        "{}",
        stderr(&out)
    );
    let out = run_as(&url, ADMIN.0, ADMIN.1, &["setup"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("q = 2 (shards)"), "{}", stdout(&out));

    let out = run_as(
        &url,
        "ed",
        "ed-pw-1",
        &["new", "--key", "H83if", "https://a.example/one"],
    )
    .await;
    assert!(
        out.status.success(),
        "the editor may create: {}",
        stderr(&out)
    );

    // Apache CouchDB enforces what PouchDB Server only stores: a reader's
    // write is refused by the validation, an outsider reads nothing.
    let out = run_as(
        &url,
        "rd",
        "rd-pw-1",
        &["set", "H83if", "https://evil.example/"],
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "a reader wrote: {}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("CouchDB refused"), "{}", stderr(&out));
    let (status, _) = Couch::new(&url, "links")
        .call(reqwest::Method::GET, "links/H83if", None)
        .await;
    assert_eq!(status, 401, "an anonymous reader read a link");

    // The validation runs in QuickJS: what qrtag could not use is refused
    // even from an editor, a plain link is taken.
    let editor = Couch::new(&url, "links").with_user("ed", "ed-pw-1");
    for (id, doc) in [
        ("bad01", json!({"url": "javascript:alert(1)"})),
        ("bad02", json!({"url": "//evil.example/"})),
        (
            "bad03",
            json!({"url": "https://example.com:443@evil.example/"}),
        ),
        (
            "bad04",
            json!({"url": "https://a.example/", "expires": "soon"}),
        ),
        ("_bad05", json!({"url": "https://a.example/"})),
        ("bad06", json!({"url": "https://a.example/\u{202E}fdp.exe"})),
        ("bad07", json!({"url": "https://a.example/?t=\u{E0041}"})),
        ("bad08", json!({"url": "https://a.example:0443/"})),
        // Issue 30: the length caps.
        (
            "bad09",
            json!({"url": format!("https://a.example/{}", "x".repeat(qrtag::values::destination::MAX_DESTINATION))}),
        ),
        (
            "bad10",
            json!({"url": "/x", "notes": "é".repeat(qrtag::link::MAX_NOTES + 1)}),
        ),
        (
            "bad11",
            json!({"url": "/x", "thid": "t".repeat(qrtag::link::MAX_TEXT + 1)}),
        ),
        // Issue 33: a title is a string of at most MAX_TITLE characters.
        (
            "bad12",
            json!({"url": "/x", "title": "🎟".repeat(qrtag::link::MAX_TITLE + 1)}),
        ),
        ("bad13", json!({"url": "/x", "title": 5})),
        // Issue 33: a surface is one of link::Via's names.
        ("bad14", json!({"url": "/x", "changed_via": "rest"})),
        ("bad15", json!({"url": "/x", "created_via": 1})),
    ] {
        let (status, body) = editor.try_put(id, doc).await;
        assert!(
            matches!(status, 400 | 403),
            "{id} was stored ({status}): {body}"
        );
    }
    let (status, body) = editor
        .try_put(
            "by-hand",
            json!({"url": "https://a.example/hand", "notes": "Fauxton"}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    // Issue 33: 200 emoji are 400 UTF-16 units and 200 characters, the limit.
    let (status, body) = editor
        .try_put(
            "titled",
            json!({"url": "/x", "title": "🎟".repeat(qrtag::link::MAX_TITLE)}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = editor
        .try_put(
            "surfaced",
            json!({"url": "/x", "created_via": "console", "changed_via": "api"}),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    // The service reads as the reader; edits reach scans within a second.
    let reader = couch_settings(&url, "links").with_credentials("rd", Some(Secret::new("rd-pw-1")));
    let app = TestApp::spawn(reader).await;
    app.wait_ready(START_LIMIT).await;
    assert_eq!(
        app.location("H83if").await.as_deref(),
        Some("https://a.example/one")
    );
    assert_eq!(
        app.location("by-hand").await.as_deref(),
        Some("https://a.example/hand")
    );

    let out = run_as(
        &url,
        "ed",
        "ed-pw-1",
        &["set", "H83if", "https://a.example/two"],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    app.wait_location("H83if", Some("https://a.example/two"), PROPAGATION)
        .await;
    let out = run_as(&url, "ed", "ed-pw-1", &["disable", "H83if"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    app.wait_location("H83if", None, PROPAGATION).await;
    admin.delete("by-hand").await;
    app.wait_location("by-hand", None, PROPAGATION).await;

    // The reader records the marker of its snapshot file's state: a member
    // may write local documents, which validate_doc_update does not see.
    crate::harness::eventually(Duration::from_secs(20), "the snapshot marker", || async {
        let marks = admin.get("_local/qrtag-snapshot-marks").await?;
        marks["marks"]
            .as_array()
            .is_some_and(|m| !m.is_empty())
            .then_some(())
    })
    .await;
}

/// Issue 30, item 10: the public URL every later tag is printed with is
/// kept where only an admin writes (`_design/qrtag`), not in
/// `_local/qrtag-service`, which any member, the reader `serve` uses
/// included, may write; one found only there is refused until an admin's
/// `qrtag setup` moves it, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_keeps_the_public_url_where_only_an_admin_writes() {
    let Some(server) = ApacheCouch::start("apache_couchdb_public_url").await else {
        return;
    };
    let url = server.url();
    let admin = server.admin();
    editor_and_reader(&admin).await;
    let out = run_as(&url, ADMIN.0, ADMIN.1, &["setup"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let reader = Couch::new(&url, "links").with_user("rd", "rd-pw-1");
    let public = crate::harness::PUBLIC_URL;

    // What an earlier version recorded: found only in the local document.
    let (status, body) = admin
        .call(
            reqwest::Method::PUT,
            "links/_local/qrtag-service",
            Some(json!({"public_url": public})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let new_tag = ["new", "--key", "Poster1", "https://a.example/one"];
    let out = run_as(&url, "ed", "ed-pw-1", &new_tag).await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("is recorded in _local/qrtag-service, which any member")
            && stderr(&out).contains("qrtag setup"),
        "{}",
        stderr(&out)
    );
    let out = run_as(&url, ADMIN.0, ADMIN.1, &["setup"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!(
            "_design/qrtag (public URL): {public}, moved from _local/qrtag-service"
        )),
        "{}",
        stdout(&out)
    );
    let (status, _) = admin
        .call(reqwest::Method::GET, "links/_local/qrtag-service", None)
        .await;
    assert_eq!(status, 404, "the local document is gone");
    let out = run_as(&url, "ed", "ed-pw-1", &new_tag).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{public}/Poster1\n"));

    // The reader may still write local documents, and cannot write the
    // design document: what it writes changes no printed tag.
    let (status, body) = reader
        .call(
            reqwest::Method::PUT,
            "links/_local/qrtag-service",
            Some(json!({"public_url": "https://evil.example"})),
        )
        .await;
    assert_eq!(
        status, 201,
        "CouchDB lets members write local documents: {body}"
    );
    let (_, mut design) = admin
        .call(reqwest::Method::GET, "links/_design/qrtag", None)
        .await;
    assert_eq!(design["public_url"], json!(public), "{design}");
    design["public_url"] = json!("https://evil.example");
    let (status, body) = reader
        .call(reqwest::Method::PUT, "links/_design/qrtag", Some(design))
        .await;
    assert!(
        matches!(status, 401 | 403),
        "a reader wrote the design document: {body}"
    );
    let out = run_as(
        &url,
        "ed",
        "ed-pw-1",
        &["new", "--key", "Poster2", "https://a.example/two"],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{public}/Poster2\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_crash_and_restart_keep_redirects_and_later_edits_arrive() {
    let Some(mut server) = ApacheCouch::start("apache_couchdb_crash_and_restart").await else {
        return;
    };
    let url = server.url();
    let admin = server.admin();
    admin.create_db().await;
    admin
        .put("H83if", json!({"url": "https://a.example/one"}))
        .await;
    let store = couch_settings(&url, "links").with_credentials(ADMIN.0, Some(Secret::new(ADMIN.1)));
    let app = TestApp::spawn(store).await;
    app.wait_ready(START_LIMIT).await;
    app.wait_location("H83if", Some("https://a.example/one"), PROPAGATION)
        .await;

    server.stop();
    // Redirects go on from memory while the store is away, and /readyz says so.
    assert_eq!(
        app.location("H83if").await.as_deref(),
        Some("https://a.example/one")
    );
    crate::harness::eventually(Duration::from_secs(20), "/readyz says degraded", || async {
        let (_, body) = app.readyz().await;
        body.contains("degraded").then_some(())
    })
    .await;
    assert_eq!(
        app.location("H83if").await.as_deref(),
        Some("https://a.example/one")
    );

    // Back over the same data: the follower resumes from Apache CouchDB's
    // clustered sequence, and an edit made now reaches scans.
    server.run().await;
    admin
        .put("H83if", json!({"url": "https://a.example/after"}))
        .await;
    admin
        .put("fresh", json!({"url": "https://a.example/fresh"}))
        .await;
    // The follower's backoff is capped; the edit arrives once it reconnects.
    app.wait_location(
        "H83if",
        Some("https://a.example/after"),
        Duration::from_secs(20),
    )
    .await;
    app.wait_location("fresh", Some("https://a.example/fresh"), PROPAGATION)
        .await;
    app.wait_ready(Duration::from_secs(20)).await;
}

/// Issue 24: after `qrtag setup`, a new node's full load reads the `links`
/// view (no document opened one by one, a third of CouchDB's CPU) and
/// serves the same links `_all_docs` would give; without the view it reads
/// `_all_docs` as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_full_load_reads_the_links_view_after_setup() {
    let Some(server) = ApacheCouch::start("apache_couchdb_full_load_reads_the_links_view").await
    else {
        return;
    };
    let url = server.url();
    let admin = server.admin();
    admin.create_db().await;
    for (key, doc) in [
        (
            "H83if",
            json!({"url": "https://a.example/one", "notes": "kept"}),
        ),
        ("Zz9", json!({"url": "https://a.example/upper"})),
        ("a1", json!({"url": "/local/path", "inactive": false})),
        (
            "off01",
            json!({"url": "https://a.example/off", "inactive": true}),
        ),
        ("9zz", json!({"url": "https://a.example/digit"})),
    ] {
        admin.put(key, doc).await;
    }
    let store = |url: &str| {
        couch_settings(url, "links").with_credentials(ADMIN.0, Some(Secret::new(ADMIN.1)))
    };
    let check = |app: TestApp| async move {
        let ready = app.wait_ready(START_LIMIT).await;
        assert!(ready.contains("5 links, 0 invalid"), "{ready}");
        for (key, want) in [
            ("H83if", Some("https://a.example/one")),
            ("Zz9", Some("https://a.example/upper")),
            ("a1", Some("/local/path")),
            ("off01", None),
            ("9zz", Some("https://a.example/digit")),
        ] {
            let got = app.location(key).await;
            assert!(
                got.as_deref() == want
                    || want.is_some_and(|w| got.as_deref().is_some_and(|g| g.ends_with(w))),
                "{key}: {got:?}"
            );
        }
        app
    };

    // Before setup: no view, `_all_docs`.
    let proxy = RecordingProxy::start(url.replace("http://", "")).await;
    drop(check(TestApp::spawn(store(&proxy.url())).await).await);
    assert!(proxy.sent().contains("GET /links/_all_docs?"));

    let out = run_as(&url, ADMIN.0, ADMIN.1, &["setup"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let proxy = RecordingProxy::start(url.replace("http://", "")).await;
    let app = check(TestApp::spawn(store(&proxy.url())).await).await;
    let sent = proxy.sent();
    assert!(
        sent.contains("GET /links/_design/qrtag/_view/links?"),
        "the view was read: {sent}"
    );
    assert!(
        !sent.contains("_all_docs"),
        "no document read one by one: {sent}"
    );
    // Edits after the load arrive through the feed as ever.
    admin
        .put("new01", json!({"url": "https://a.example/new"}))
        .await;
    app.wait_location("new01", Some("https://a.example/new"), PROPAGATION)
        .await;
}

/// Gives every shard of `db` a second copy on a node that does not exist,
/// as the shard map of a cluster with a node down reads: n becomes 2, the
/// write quorum 2, and CouchDB answers every write 202 (stored with fewer
/// copies than n), as it does while cluster nodes are away. A single node
/// cannot be made to do it otherwise: it creates a database with n = 1
/// whatever `?n=` asks for.
async fn add_copy_on_a_missing_node(server: &ApacheCouch, db: &str) {
    let admin = Couch::new(&server.url(), "_node/_local/_dbs").with_user(ADMIN.0, ADMIN.1);
    let mut map = admin.get(db).await.expect("the database's shard map");
    let gone = json!("gone@127.0.0.1");
    let ranges: Vec<String> = map["by_range"]
        .as_object()
        .expect("by_range")
        .keys()
        .cloned()
        .collect();
    for range in &ranges {
        map["by_range"][range]
            .as_array_mut()
            .expect("nodes")
            .push(gone.clone());
        map["changelog"]
            .as_array_mut()
            .expect("changelog")
            .push(json!(["add", range, gone]));
    }
    map["by_node"]["gone@127.0.0.1"] = json!(ranges);
    let (status, body) = admin
        .call(
            reqwest::Method::PUT,
            &format!("_node/_local/_dbs/{db}"),
            Some(map),
        )
        .await;
    assert!(matches!(status, 200 | 201), "{status}: {body}");
}

/// Issue 22 on the real thing: the API keys are in `links-keys`, whose
/// `_security` admits only editors, so a reader can neither mint, read nor
/// un-revoke a key; an editor creates and revokes, never un-revokes. The
/// server follows the links as the reader and the API writes as the editor
/// (`--api-couchdb-user`); and with a copy of the links on a node that is
/// down every write is a 202, which the REST answer says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_keeps_api_keys_from_readers_and_the_api_writes_as_the_editor() {
    let Some(server) = ApacheCouch::start("apache_couchdb_api_keys").await else {
        return;
    };
    let url = server.url();
    let admin = server.admin();
    editor_and_reader(&admin).await;
    let out = run_as(&url, ADMIN.0, ADMIN.1, &["setup"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("database links-keys (API keys): created\n"),
        "{}",
        stdout(&out)
    );

    // A reader mints no key and reads none, through qrtag or straight.
    let out = run_as(
        &url,
        "rd",
        "rd-pw-1",
        &["api-key", "create", "--name", "mine", "--scope", "write"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "a reader made a key");
    assert_eq!(stdout(&out), "", "no key printed");
    assert!(stderr(&out).contains("CouchDB refused"), "{}", stderr(&out));
    let out = run_as(&url, "rd", "rd-pw-1", &["api-key", "list"]).await;
    assert_eq!(out.status.code(), Some(1), "a reader listed the keys");

    let key = |scope: &'static str| {
        let url = url.clone();
        async move {
            let out = run_as(
                &url,
                "ed",
                "ed-pw-1",
                &["api-key", "create", "--name", "shop", "--scope", scope],
            )
            .await;
            assert!(out.status.success(), "{}", stderr(&out));
            stdout(&out).trim().to_owned()
        }
    };
    let write = key("write").await;
    let read = key("read").await;
    let (write_id, read_id) = (&write[4..12], &read[4..12]);

    let as_reader = Couch::new(&url, "links-keys").with_user("rd", "rd-pw-1");
    let forged = json!({"name": "forged", "scope": "write", "hash": "0".repeat(64),
                        "created_at": "2026-11-26T00:00:00Z"});
    let (status, body) = as_reader.try_put("Forged01", forged).await;
    assert_eq!(status, 403, "a reader wrote a key: {body}");
    let (status, _) = as_reader
        .call(
            reqwest::Method::GET,
            &format!("links-keys/{write_id}"),
            None,
        )
        .await;
    assert_eq!(status, 403, "a reader read a key");

    // The editor revokes; a revocation is final, and a key never changes.
    let out = run_as(&url, "ed", "ed-pw-1", &["api-key", "revoke", read_id]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let as_editor = Couch::new(&url, "links-keys").with_user("ed", "ed-pw-1");
    let mut revoked = as_editor.get(read_id).await.expect("the key's document");
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    revoked
        .as_object_mut()
        .expect("an object")
        .remove("revoked_at");
    let (status, body) = as_editor
        .call(
            reqwest::Method::PUT,
            &format!("links-keys/{read_id}"),
            Some(revoked),
        )
        .await;
    assert_eq!(status, 403, "an editor un-revoked a key: {body}");
    assert!(
        body["reason"]
            .as_str()
            .is_some_and(|r| r.contains("revocation is final")),
        "{body}"
    );
    let mut live = as_editor.get(write_id).await.expect("the key's document");
    live["scope"] = json!("read");
    let (status, body) = as_editor
        .call(
            reqwest::Method::PUT,
            &format!("links-keys/{write_id}"),
            Some(live),
        )
        .await;
    assert_eq!(status, 403, "an editor changed a key: {body}");

    // The service follows as the reader; its API writes as the editor,
    // each write a 202 from here on.
    add_copy_on_a_missing_node(&server, "links").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let reader = couch_settings(&url, "links").with_credentials("rd", Some(Secret::new("rd-pw-1")));
    let app = TestApp::spawn_with(reader.clone(), dir.path(), |settings| {
        let mut api = ApiSettings::new("127.0.0.1:0", dir.path().join("didcomm-keys.json"));
        api.couch_writer = Some(Credentials {
            user: "ed".into(),
            password: Some(Secret::new("ed-pw-1")),
        });
        settings.api = Some(api);
    })
    .await;
    app.wait_ready(START_LIMIT).await;
    let api = app.api();
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{api}/links"))
        .bearer_auth(&write)
        .json(&json!({"url": "https://a.example/api", "key": "via-api"}))
        .send()
        .await
        .expect("the API answers");
    assert_eq!(r.status().as_u16(), 201);
    let created: serde_json::Value = r.json().await.expect("JSON");
    assert!(
        created["warning"]
            .as_str()
            .is_some_and(|w| w.contains("fewer copies")),
        "the 202 is said: {created}"
    );
    // Answered once served: a scan right after gets the new link.
    assert_eq!(
        app.location("via-api").await.as_deref(),
        Some("https://a.example/api")
    );
    let r = http
        .patch(format!("{api}/links/via-api"))
        .bearer_auth(&write)
        .json(&json!({"url": "https://a.example/moved"}))
        .send()
        .await
        .expect("the API answers");
    assert_eq!(r.status().as_u16(), 200);
    let moved: serde_json::Value = r.json().await.expect("JSON");
    assert!(moved["warning"].is_string(), "{moved}");
    assert_eq!(
        app.location("via-api").await.as_deref(),
        Some("https://a.example/moved")
    );
    let r = http
        .get(format!("{api}/links/via-api"))
        .bearer_auth(&read)
        .send()
        .await
        .expect("the API answers");
    assert_eq!(r.status().as_u16(), 401, "the revoked key is refused");
    let r = http
        .get(format!("{api}/links/via-api"))
        .bearer_auth(&write)
        .send()
        .await
        .expect("the API answers");
    let read_back: serde_json::Value = r.json().await.expect("JSON");
    assert!(
        read_back.get("warning").is_none(),
        "a read warns of nothing"
    );

    // With only the reader's account, the API cannot read a key: 503,
    // never a 500 and never a key let in.
    let dir = tempfile::tempdir().expect("tempdir");
    let alone = TestApp::spawn_with(reader, dir.path(), |settings| {
        settings.api = Some(ApiSettings::new(
            "127.0.0.1:0",
            dir.path().join("didcomm-keys.json"),
        ));
    })
    .await;
    let r = http
        .get(format!("{}/links/via-api", alone.api()))
        .bearer_auth(&write)
        .send()
        .await
        .expect("the API answers");
    assert_eq!(r.status().as_u16(), 503);
}

/// Issue 24's `import --new-database` on the real thing: while it writes,
/// the database admits server admins only (Apache CouchDB enforces
/// `_security`); afterwards the reader reads and may not write, the
/// validation refuses a bad document, and the API keys database is there.
/// A failure part-way (a document over CouchDB's size limit, which no
/// check of qrtag's knows) deletes the database it made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_new_database_import_is_locked_then_set_up_or_removed() {
    let Some(server) = ApacheCouch::start("apache_couchdb_new_database_import").await else {
        return;
    };
    let url = server.url();
    let admin = server.admin();
    editor_and_reader(&admin).await;
    let reader = Couch::new(&url, "links").with_user("rd", "rd-pw-1");

    // The lock, through the library: a member reads nothing until it opens.
    let settings =
        couch_settings(&url, "links").with_credentials(ADMIN.0, Some(Secret::new(ADMIN.1)));
    let locked = qrtag::store::couch::setup::NewDatabase::create(&settings, Default::default())
        .await
        .expect("created")
        .expect("not there before");
    admin
        .put("early", json!({"url": "https://a.example/early"}))
        .await;
    let (status, body) = reader.call(reqwest::Method::GET, "links/early", None).await;
    assert_eq!(status, 403, "the reader read a locked database: {body}");
    locked.remove().await.expect("removed");
    let (status, _) = admin.call(reqwest::Method::GET, "links", None).await;
    assert_eq!(status, 404);

    let dir = tempfile::tempdir().expect("tempdir");
    let n = 600;
    let links = dir.path().join("links.csv");
    let csv = (0..n).fold("key,url\n".to_owned(), |mut csv, i| {
        csv.push_str(&format!("k{i:04},https://a.example/{i}\n"));
        csv
    });
    std::fs::write(&links, csv).expect("write");
    let links = links.to_str().expect("utf-8");
    let out = run_as(
        &url,
        ADMIN.0,
        ADMIN.1,
        &["import", "--new-database", "--shards", "2", links],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with(&format!(
            "{links} (CSV): {n} of {n} links imported, {n} created, 0 updated\n\
             database links: created\n\
             database links: n = 1 (copies of each link), q = 2 (shards) on a cluster of 1 node\n"
        )),
        "{}",
        stdout(&out)
    );
    let (_, info) = admin.call(reqwest::Method::GET, "links", None).await;
    assert_eq!(
        info["doc_count"],
        json!(n + 1),
        "the links and the design document"
    );

    // The reader reads and may not write; the validation refuses a bad
    // document from an editor; the keys database is there.
    let doc = reader.get("k0123").await.expect("the reader reads");
    assert_eq!(doc["url"], "https://a.example/123");
    let (status, body) = reader
        .try_put("k0123", json!({"url": "https://evil.example/"}))
        .await;
    assert_eq!(status, 403, "the reader wrote: {body}");
    let editor = Couch::new(&url, "links").with_user("ed", "ed-pw-1");
    let (status, body) = editor
        .try_put("k0124", json!({"url": "//evil.example/"}))
        .await;
    assert!(matches!(status, 400 | 403), "a bad link was stored: {body}");
    let (status, body) = editor
        .try_put("k0124", json!({"url": "https://a.example/fine"}))
        .await;
    assert_eq!(status, 201, "the editor writes: {body}");
    let (status, body) = admin.call(reqwest::Method::GET, "links-keys", None).await;
    assert_eq!(status, 200, "{body}");

    // A document CouchDB refuses as too large (its max_document_size is
    // 8 MB): the database made for it is deleted again.
    let big = dir.path().join("big.jsonl");
    let mut lines: String = (0..300)
        .map(|i| format!("{{\"_id\":\"b{i:04}\",\"url\":\"https://a.example/{i}\"}}\n"))
        .collect();
    lines.push_str(&format!(
        "{{\"_id\":\"huge\",\"url\":\"https://a.example/\",\"blob\":\"{}\"}}\n",
        "x".repeat(9_000_000)
    ));
    std::fs::write(&big, lines).expect("write");
    let out = run_as(
        &url,
        ADMIN.0,
        ADMIN.1,
        &[
            "--couchdb-db",
            "bigdb",
            "import",
            "--new-database",
            big.to_str().expect("utf-8"),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("database bigdb deleted again; nothing was imported"),
        "{}",
        stderr(&out)
    );
    let (status, _) = admin.call(reqwest::Method::GET, "bigdb", None).await;
    assert_eq!(status, 404, "the failed import's database is gone");
}

/// Issue 31: `setup --replicas 3` on a single node got n = 1 without a
/// word. It is said, with what the database has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_says_when_it_keeps_fewer_copies_than_asked() {
    let Some(server) = ApacheCouch::start("apache_couchdb_fewer_copies").await else {
        return;
    };
    let url = server.url();
    let out = run_as(&url, ADMIN.0, ADMIN.1, &["setup", "--replicas", "3"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("database links: n = 1 (copies of each link)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        stderr(&out),
        "qrtag: warning: --replicas 3 asked for 3 copies of each link, but CouchDB created \
         database links with n = 1 on a cluster of 1 node: each link has 1 copy\n"
    );
}

/// Issue 31: the first `serve` after `import --new-database` starts from
/// the snapshot file the import left, on the real thing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_first_serve_after_a_new_database_import_starts_from_its_snapshot_file() {
    let Some(server) = ApacheCouch::start("apache_couchdb_first_serve_after_import").await else {
        return;
    };
    crate::transfer::first_serve_after_a_new_database_import(&server.url(), ADMIN).await;
}

//! Helpers for the CouchDB integration tests: the application on free ports,
//! plain-HTTP access to CouchDB (as a person with curl would edit it), the
//! CLI binary, and polling instead of sleeping.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use qrtag::settings::Settings;
use qrtag::startup::Application;
use qrtag::store::options::{CouchSettings, StoreSettings};
use qrtag::values::couch::{CouchDbName, CouchUrl};
use qrtag::values::public_url::PublicUrl;
use serde_json::{Value, json};

pub const PUBLIC_URL: &str = "http://qr.test";

pub use crate::poll::until as eventually;

pub fn couch_settings(url: &str, db: &str) -> CouchSettings {
    CouchSettings::new(
        CouchUrl::parse(url).expect("CouchDB URL"),
        CouchDbName::parse(db).expect("database name"),
    )
}

/// The real application, on free loopback ports, serving in the background.
/// Its access log and snapshot file are in its own directory.
pub struct TestApp {
    pub public: String,
    pub admin: String,
    /// `http://ADDR/didcomm` when the DIDComm listener is on.
    pub didcomm: Option<String>,
    http: reqwest::Client,
    _dir: Option<tempfile::TempDir>,
}

impl TestApp {
    pub async fn spawn(store: CouchSettings) -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut app = Self::spawn_in(store, dir.path()).await;
        app._dir = Some(dir);
        app
    }

    /// An application whose access log and snapshot file are in `dir`, so a
    /// second one started there finds the first one's snapshot file.
    pub async fn spawn_in(store: CouchSettings, dir: &Path) -> Self {
        Self::spawn_with_api(store, dir, None).await
    }

    /// [`spawn_in`](Self::spawn_in), with the DIDComm listener when `api`.
    pub async fn spawn_with_api(
        store: CouchSettings,
        dir: &Path,
        api: Option<qrtag::server::api::ApiSettings>,
    ) -> Self {
        Self::spawn_with(store, dir, |s| s.api = api).await
    }

    /// [`spawn_in`](Self::spawn_in), with `tweak` applied to the settings.
    pub async fn spawn_with(
        store: CouchSettings,
        dir: &Path,
        tweak: impl FnOnce(&mut Settings),
    ) -> Self {
        let mut settings = Settings::local(dir.join("unused.db"));
        settings.listen = "127.0.0.1:0".into();
        settings.admin_listen = "127.0.0.1:0".into();
        settings.public_url = Some(PublicUrl::parse(PUBLIC_URL).expect("public URL"));
        settings.store = StoreSettings::CouchDb(store);
        settings.workers = Some(1);
        settings.snapshot_file = Some(dir.join("links.snapshot"));
        tweak(&mut settings);
        let app = Application::build(settings)
            .await
            .expect("the application starts");
        let didcomm = app.api_addr().map(|a| format!("http://{a}/didcomm"));
        let mut this = Self::at(app.public_addr(), app.admin_addr());
        this.didcomm = didcomm;
        tokio::spawn(app.run_until_stopped());
        this
    }

    /// A server already listening at these addresses, such as a `qrtag
    /// serve` process, spoken to like the in-process ones. Its public URL
    /// must be [`PUBLIC_URL`].
    pub fn at(public: SocketAddr, admin: SocketAddr) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("HTTP client");
        Self {
            public: format!("http://{public}"),
            admin: format!("http://{admin}"),
            didcomm: None,
            http,
            _dir: None,
        }
    }

    /// `http://ADDR/api/v1`, the REST API on the API listener.
    pub fn api(&self) -> String {
        let didcomm = self.didcomm.as_deref().expect("the API listener is on");
        let base = didcomm.strip_suffix("/didcomm").expect("its /didcomm");
        format!("{base}/api/v1")
    }

    /// The status `/key` answers with.
    pub async fn status(&self, key: &str) -> u16 {
        self.http
            .get(format!("{}/{key}", self.public))
            .send()
            .await
            .expect("the public listener answers")
            .status()
            .as_u16()
    }

    /// Where `/key` redirects to; `None` for a 404. Anything else fails the test.
    pub async fn location(&self, key: &str) -> Option<String> {
        let resp = self
            .http
            .get(format!("{}/{key}", self.public))
            .send()
            .await
            .expect("the public listener answers");
        match resp.status().as_u16() {
            302 => {
                let link = resp
                    .headers()
                    .get("link")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                assert_eq!(
                    link.as_deref(),
                    Some(format!("<{PUBLIC_URL}/{key}>; rel=\"shortlink\"").as_str())
                );
                resp.headers()
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            }
            404 => None,
            other => panic!("/{key} answered {other}"),
        }
    }

    /// `/readyz`: status and body.
    pub async fn readyz(&self) -> (u16, String) {
        let resp = self
            .http
            .get(format!("{}/readyz", self.admin))
            .send()
            .await
            .expect("the admin listener answers");
        let status = resp.status().as_u16();
        (status, resp.text().await.unwrap_or_default())
    }

    pub async fn wait_ready(&self, within: Duration) -> String {
        eventually(within, "/readyz says ready", || async {
            let (status, body) = self.readyz().await;
            (status == 200).then_some(body)
        })
        .await
    }

    /// Waits until `/key` redirects to `want` (`None`: answers 404).
    pub async fn wait_location(&self, key: &str, want: Option<&str>, within: Duration) {
        eventually(within, &format!("/{key} -> {want:?}"), || async {
            (self.location(key).await.as_deref() == want).then_some(())
        })
        .await;
    }
}

/// CouchDB over plain HTTP, the way a person with curl edits it.
pub struct Couch {
    pub url: String,
    pub db: String,
    http: reqwest::Client,
    auth: Option<(String, String)>,
}

impl Couch {
    pub fn new(url: &str, db: &str) -> Self {
        Self {
            url: url.to_owned(),
            db: db.to_owned(),
            http: reqwest::Client::new(),
            auth: None,
        }
    }

    /// The database `links`, created with the two links most tests start
    /// from: `H83if` to `https://a.example/one` and `other` to
    /// `https://a.example/other`.
    pub async fn with_two_links(url: &str) -> Self {
        let couch = Self::new(url, "links");
        couch.create_db().await;
        couch
            .put("H83if", json!({"url": "https://a.example/one"}))
            .await;
        couch
            .put("other", json!({"url": "https://a.example/other"}))
            .await;
        couch
    }

    pub fn with_user(mut self, user: &str, password: &str) -> Self {
        self.auth = Some((user.into(), password.into()));
        self
    }

    fn req(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.http.request(method, format!("{}/{path}", self.url));
        match &self.auth {
            Some((u, p)) => r.basic_auth(u, Some(p)),
            None => r,
        }
    }

    /// Sends a request; returns status and JSON body.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut r = self.req(method, path);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.expect("CouchDB answers");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    pub async fn create_db(&self) {
        let (status, body) = self.call(reqwest::Method::PUT, &self.db, None).await;
        assert_eq!(status, 201, "creating {}: {body}", self.db);
    }

    /// The document, or `None` when missing.
    pub async fn get(&self, id: &str) -> Option<Value> {
        let (status, body) = self
            .call(
                reqwest::Method::GET,
                &format!("{}/{}", self.db, enc(id)),
                None,
            )
            .await;
        (status == 200).then_some(body)
    }

    /// Writes `doc` as the new content of `id` (at its current revision, if
    /// any); returns the status and CouchDB's answer.
    pub async fn try_put(&self, id: &str, mut doc: Value) -> (u16, Value) {
        if let Some(rev) = self.get(id).await.and_then(|d| d.get("_rev").cloned()) {
            doc["_rev"] = rev;
        }
        self.call(
            reqwest::Method::PUT,
            &format!("{}/{}", self.db, enc(id)),
            Some(doc),
        )
        .await
    }

    pub async fn put(&self, id: &str, doc: Value) {
        let (status, body) = self.try_put(id, doc).await;
        assert_eq!(status, 201, "writing {id}: {body}");
    }

    pub async fn delete(&self, id: &str) {
        let rev = self
            .get(id)
            .await
            .and_then(|d| d.get("_rev").and_then(Value::as_str).map(str::to_owned))
            .expect("the document exists");
        let (status, body) = self
            .call(
                reqwest::Method::DELETE,
                &format!("{}/{}?rev={rev}", self.db, enc(id)),
                None,
            )
            .await;
        assert_eq!(status, 200, "deleting {id}: {body}");
    }

    /// Writes many link documents in one request.
    pub async fn bulk(&self, docs: Vec<Value>) {
        let (status, body) = self
            .call(
                reqwest::Method::POST,
                &format!("{}/_bulk_docs", self.db),
                Some(json!({ "docs": docs })),
            )
            .await;
        assert_eq!(status, 201, "bulk write: {body}");
        let failed: Vec<&Value> = body
            .as_array()
            .map(|rows| rows.iter().filter(|r| r.get("error").is_some()).collect())
            .unwrap_or_default();
        assert!(failed.is_empty(), "bulk write refused: {failed:?}");
    }
}

/// A document ID as one path segment; design documents keep their slash,
/// as CouchDB expects.
fn enc(id: &str) -> String {
    match id.strip_prefix("_design/") {
        Some(name) => format!("_design/{}", name.replace('/', "%2F")),
        None => id.replace('/', "%2F").replace(' ', "%20"),
    }
}

/// Runs the `qrtag` binary with only the given environment (plus PATH, no
/// configuration file and the tests' public URL).
pub async fn qrtag(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_qrtag"));
    cmd.args(args)
        .env_clear()
        .env("QRTAG_LOG", "warn")
        .env("QRTAG_CONFIG", "/dev/null")
        // The tests' public URL unless `env` names another.
        .env("QRTAG_PUBLIC_URL", PUBLIC_URL);
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    // `import --new-database` leaves a snapshot file where `serve` would
    // read it: not in the working directory of the tests.
    if !env.iter().any(|(k, _)| k.contains("SNAPSHOT_FILE")) {
        cmd.env("QRTAG_NO_SNAPSHOT_FILE", "true");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().await.expect("qrtag runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Accounts for the role tests: the server admin `boss` (password
/// `boss-pw-1`), the editor `ed` and the reader `rd` (`ed-pw-1`, `rd-pw-1`).
/// Returns the admin's client.
pub async fn accounts(url: &str) -> Couch {
    let admin = server_admin(url, "boss", "boss-pw-1").await;
    editor_and_reader(&admin).await;
    admin
}

/// The editor `ed` and the reader `rd` (`ed-pw-1`, `rd-pw-1`) in `_users`,
/// made by `admin`.
pub async fn editor_and_reader(admin: &Couch) {
    for (name, role) in [("ed", "qrtag_editor"), ("rd", "qrtag_reader")] {
        let (status, body) = admin
            .call(
                reqwest::Method::PUT,
                &format!("_users/org.couchdb.user:{name}"),
                Some(json!({"name": name, "password": format!("{name}-pw-1"),
                            "roles": [role], "type": "user"})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
}

/// Makes `user` a server admin (the first one ends the server's "admin
/// party") and returns a client for the database `links` as that admin.
pub async fn server_admin(url: &str, user: &str, password: &str) -> Couch {
    let (status, body) = Couch::new(url, "links")
        .call(
            reqwest::Method::PUT,
            &format!("_config/admins/{user}"),
            Some(json!(password)),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    Couch::new(url, "links").with_user(user, password)
}

/// The environment that points the CLI at CouchDB `url` as `user`.
pub fn user_env(url: &str, user: &str, password: &str) -> [(&'static str, String); 3] {
    [
        ("QRTAG_COUCHDB_URL", url.to_owned()),
        ("QRTAG_COUCHDB_USER", user.to_owned()),
        ("QRTAG_COUCHDB_PASSWORD", password.to_owned()),
    ]
}

/// The console on CouchDB as a test's browser session meets it: a client
/// that keeps cookies and sees each redirect, pages, a form posted with
/// its page's token, and the login by CouchDB account. One copy for the
/// console and audit tests, so a change to the login form is mended once.
pub struct ConsoleClient {
    admin: String,
    http: reqwest::Client,
}

impl ConsoleClient {
    /// A new session with the console on the admin listener at `admin`
    /// (`http://ADDR`).
    pub fn new(admin: &str) -> Self {
        Self {
            admin: admin.to_owned(),
            http: reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
        }
    }

    pub async fn get(&self, path: &str) -> (reqwest::StatusCode, String) {
        let res = self
            .http
            .get(format!("{}/console{path}", self.admin))
            .send()
            .await
            .expect("GET");
        (res.status(), res.text().await.expect("body"))
    }

    /// Posts a form to `path` with the token of the page `from`.
    pub async fn post(
        &self,
        from: &str,
        path: &str,
        form: &[(&str, &str)],
    ) -> (reqwest::StatusCode, String) {
        let (_, page) = self.get(from).await;
        let marker = r#"name="csrf" value=""#;
        let at = page.find(marker).expect("a form") + marker.len();
        let token = &page[at..at + page[at..].find('"').expect("end")];
        let mut fields = vec![("csrf", token)];
        fields.extend_from_slice(form);
        let res = self
            .http
            .post(format!("{}/console{path}", self.admin))
            .form(&fields)
            .send()
            .await
            .expect("POST");
        (res.status(), res.text().await.expect("body"))
    }

    /// Logs in as the CouchDB account `user`: the login's status.
    pub async fn login(&self, user: &str, password: &str) -> reqwest::StatusCode {
        self.post(
            "/login",
            "/login",
            &[("user", user), ("password", password)],
        )
        .await
        .0
    }
}

//! Shared test harness: the real application on port 0, spoken to over real
//! sockets, and a polling helper instead of sleeps.
#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use qrtag::settings::Settings;
use qrtag::startup::Application;
use qrtag::store::options::StoreSettings;
use qrtag::store::sqlite::SqliteStore;
use qrtag::values::destination::Destination;
use qrtag::values::link_key::LinkKey;
use qrtag::values::public_url::PublicUrl;

pub const PUBLIC_URL: &str = "https://0x1f.ie";

pub struct TestApp {
    pub public: SocketAddr,
    pub admin: SocketAddr,
    /// The DIDComm listener, when the settings turn it on.
    pub api: Option<SocketAddr>,
    /// The service's DID, when the DIDComm listener is on.
    pub did: Option<String>,
    pub db: PathBuf,
    pub dir: tempfile::TempDir,
    pub client: reqwest::Client,
    /// The scan counts, when the settings turn them on.
    pub scan_index: Option<std::sync::Arc<qrtag::scan_index::ScanIndex>>,
    /// The console's first-run setup link, when it offers one.
    pub console_setup_url: Option<String>,
}

/// Settings for a test: loopback port 0 for both listeners, a fresh database.
pub fn test_settings(dir: &Path) -> Settings {
    let mut s = Settings::local(dir.join("qrtag.db"));
    s.listen = "127.0.0.1:0".into();
    s.admin_listen = "127.0.0.1:0".into();
    s.public_url = Some(PublicUrl::parse(PUBLIC_URL).expect("valid public URL"));
    s.workers = Some(2);
    s
}

/// Starts the application on `settings` and waits until links are loaded.
pub async fn spawn_with(settings: Settings, dir: tempfile::TempDir) -> TestApp {
    let db = match &settings.store {
        StoreSettings::Sqlite { path } => path.clone(),
        #[allow(unreachable_patterns)]
        _ => dir.path().join("unused.db"),
    };
    let app = Application::build(settings)
        .await
        .expect("application builds");
    let (public, admin) = (app.public_addr(), app.admin_addr());
    let (api, did) = (app.api_addr(), app.didcomm_did().map(|d| d.to_string()));
    let scan_index = app.scan_index();
    let console_setup_url = app.console_setup_url().map(str::to_owned);
    tokio::spawn(app.run_until_stopped());
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let t = TestApp {
        public,
        admin,
        api,
        did,
        db,
        dir,
        client,
        scan_index,
        console_setup_url,
    };
    eventually(Duration::from_secs(5), || async {
        t.admin_get("/readyz").await.map(|r| r.status()) == Some(reqwest::StatusCode::OK)
    })
    .await;
    t
}

/// The application as `serve --console` runs it: the console on, with
/// `password` set, and the scan index following the access log (polled every
/// 20 ms). Returns the application and the log's path.
pub async fn spawn_console_with_scan_index(password: &str) -> (TestApp, PathBuf) {
    let (app, log) = spawn_first_run_console_with_scan_index().await;
    qrtag::console::password::set(&app.store(), password)
        .await
        .expect("password set");
    (app, log)
}

/// The console with its scan index and no password yet: the first run,
/// with the setup link `qrtag serve --console` prints.
pub async fn spawn_first_run_console_with_scan_index() -> (TestApp, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.console = Some(qrtag::console::ConsoleSettings::default());
    let qrtag::settings::AccessLogTarget::Path(log) = settings.access_log.clone() else {
        panic!("a log file");
    };
    let mut index = qrtag::scan_index::ScanIndexSettings::beside(&log);
    index.poll_interval = Duration::from_millis(20);
    settings.scan_index = Some(index);
    (spawn_with(settings, dir).await, log)
}

pub async fn spawn_app() -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = test_settings(dir.path());
    spawn_with(settings, dir).await
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.public, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request")
    }

    pub async fn admin_get(&self, path: &str) -> Option<reqwest::Response> {
        self.client
            .get(format!("http://{}{}", self.admin, path))
            .send()
            .await
            .ok()
    }

    pub fn store(&self) -> SqliteStore {
        SqliteStore::open(&self.db).expect("open store")
    }

    /// Creates a link through the library, as the CLI would.
    pub async fn link(&self, key: &str, url: &str) {
        let store = self.store();
        let key = LinkKey::parse(key).expect("valid key");
        let url = Destination::parse(url).expect("valid url");
        qrtag::links::create(
            &store,
            &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
            &url,
            Some(&key),
            false,
        )
        .await
        .expect("create link");
    }

    /// Waits until `path` answers with `status`, so a write has reached the snapshot.
    pub async fn wait_for_status(&self, path: &str, status: u16) {
        eventually(Duration::from_secs(2), || async {
            self.get(path).await.status().as_u16() == status
        })
        .await;
    }

    /// Runs the real binary against this app's database.
    pub fn cli(&self, args: &[&str]) -> Output {
        qrtag_cmd(&self.db, args)
    }
}

pub fn qrtag_cmd(db: &Path, args: &[&str]) -> Output {
    qrtag_cmd_env(db, args, &[])
}

/// The configuration file every test runs the binary with: an empty one,
/// so neither a developer's `./qrtag.toml` nor `/etc/qrtag/qrtag.toml` is
/// read. A test of the file names its own.
pub const NO_CONFIG: &str = "/dev/null";

/// The binary, isolated from the caller: no configuration file (see
/// [`NO_CONFIG`]) and none of the caller's qrtag variables.
pub fn qrtag_bin() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_qrtag"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("QRTAG_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("QRTAG_CONFIG", NO_CONFIG);
    cmd
}

/// Runs the binary in `dir` ([`qrtag_bin`]), no standard input, output
/// captured.
pub fn qrtag_in(dir: &Path, args: &[&str]) -> Output {
    qrtag_bin()
        .current_dir(dir)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run qrtag")
}

/// Creates the embedded database at `db` the way a user does, `qrtag init`
/// with the tests' public URL, unless it exists. Only `init` and `serve`
/// create one.
pub fn init_db(db: &Path) {
    if db.exists() {
        return;
    }
    let out = qrtag_bin()
        .arg("--db")
        .arg(db)
        .args(["--public-url", PUBLIC_URL, "init"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run qrtag init");
    assert!(out.status.success(), "qrtag init: {out:?}");
}

/// A database made by `qrtag init` ([`init_db`]) in a directory of its
/// own, which goes when the returned directory is dropped.
pub fn fresh_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    init_db(&db);
    (dir, db)
}

/// Whether `args` is a command that adds links to a database (which must
/// exist): the helpers create it first, as a user runs `qrtag init` once.
pub fn adds_links(args: &[&str]) -> bool {
    args.iter().any(|a| matches!(*a, "new" | "batch"))
        || (args.contains(&"import") && !args.contains(&"--dry-run"))
}

/// Runs the binary with stdout captured (so never a terminal), no standard
/// input, none of the caller's qrtag variables, and then `env`. A command
/// that adds links gets its database created first ([`init_db`]).
pub fn qrtag_cmd_env(db: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    if adds_links(args) {
        init_db(db);
    }
    qrtag_bin()
        .arg("--db")
        .arg(db)
        .args(["--public-url", PUBLIC_URL])
        .args(args)
        .env_remove("QRTAG_DB")
        .env_remove("QRTAG_PUBLIC_URL")
        .env_remove("QRTAG_QR_UPPERCASE_PREFIX")
        .env_remove("QRTAG_API_LISTEN")
        .env_remove("QRTAG_API_PUBLIC_URL")
        .env_remove("QRTAG_DIDCOMM_KEY_FILE")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run qrtag")
}

pub mod api;
pub mod console;
pub mod output;
pub mod pipe;
pub mod poll;
pub mod process;
pub mod promtool;
pub mod rest_checks;

/// Polls `check` until it is true; panics after `timeout`. Returns how long it took.
pub async fn eventually<F, Fut>(timeout: Duration, check: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    poll::until(timeout, "condition", || {
        let done = check();
        async move { done.await.then_some(()) }
    })
    .await;
    start.elapsed()
}

pub fn header<'a>(r: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    r.headers().get(name).and_then(|v| v.to_str().ok())
}

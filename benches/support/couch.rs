//! A CouchDB database of N links for the benchmarks: Apache CouchDB at a
//! URL given in the environment, or a PouchDB Server started here from
//! `tests/couchdb/node_modules` (what CI installs).
// Each bench uses a part of it.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::keys::key;

/// The i-th link's destination (the one `scale` uses).
pub fn url(i: u64) -> String {
    format!("https://www.example.com/campaigns/spring/poster-{i:07}?src=qr")
}

/// A CouchDB server: its URL, an admin account for filling it, and the
/// PouchDB Server process when it was started here.
pub struct CouchServer {
    pub url: String,
    pub user: Option<String>,
    pub password: Option<String>,
    /// The database to use instead of `qrtag-bench-load-N`.
    db: Option<String>,
    pouch: Option<Child>,
    /// The folder of an Apache CouchDB started here.
    apache_dir: Option<std::path::PathBuf>,
    http: reqwest::Client,
}

impl CouchServer {
    /// The server `{PREFIX}_URL` names (with `{PREFIX}_USER` and
    /// `{PREFIX}_PASSWORD`; `{PREFIX}_DB` for another database than
    /// [`db_for`](Self::db_for)'s), if set.
    pub fn from_env(prefix: &str) -> Option<Self> {
        let var = |name: &str| std::env::var(format!("{prefix}_{name}")).ok();
        let mut server = Self::new(var("URL")?, var("USER"), var("PASSWORD"), None);
        server.db = var("DB");
        Some(server)
    }

    /// Apache CouchDB from `../shared/couchdb/start-couchdb` beside the
    /// repository, started in a temporary folder on a free port with the
    /// admin `bench`, or `None` where that release is not there. Stopped
    /// (its process killed by its ID) when dropped.
    pub async fn apache() -> Option<Self> {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/couchdb/start-couchdb");
        if !script.exists() {
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let dir = std::env::temp_dir().join(format!("qrtag-bench-couchdb-{port}"));
        let out = Command::new(&script)
            .arg(&dir)
            .arg(port.to_string())
            .args(["bench", "bench-pw"])
            .stdin(Stdio::null())
            .output()
            .expect("run start-couchdb");
        assert!(
            out.status.success(),
            "start-couchdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut server = Self::new(
            format!("http://127.0.0.1:{port}"),
            Some("bench".into()),
            Some("bench-pw".into()),
            None,
        );
        server.apache_dir = Some(dir);
        for db in ["_users", "_replicator"] {
            server.call(reqwest::Method::PUT, db, None).await;
        }
        Some(server)
    }

    /// The process ID of the Apache CouchDB [`apache`](Self::apache) started.
    pub fn apache_pid(&self) -> Option<i32> {
        let dir = self.apache_dir.as_ref()?;
        std::fs::read_to_string(dir.join("couchdb.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// The database of `n` links: `qrtag-bench-load-N`, kept between runs.
    pub fn db_for(&self, n: u64) -> String {
        self.db
            .clone()
            .unwrap_or_else(|| format!("qrtag-bench-load-{n}"))
    }

    fn new(
        url: String,
        user: Option<String>,
        password: Option<String>,
        pouch: Option<Child>,
    ) -> Self {
        Self {
            url: url.trim_end_matches('/').to_owned(),
            user,
            password,
            db: None,
            pouch,
            apache_dir: None,
            http: reqwest::Client::new(),
        }
    }

    /// A PouchDB Server in memory on a free port.
    pub async fn pouchdb() -> Self {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/couchdb");
        let bin = root.join("node_modules/.bin/pouchdb-server");
        assert!(
            bin.exists(),
            "PouchDB Server is not installed: run `npm ci --prefix {}` (or .ci/test once)",
            root.display()
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let dir = std::env::temp_dir().join(format!("qrtag-bench-pouchdb-{port}"));
        std::fs::create_dir_all(&dir).expect("PouchDB Server's folder");
        let child = Command::new(bin)
            .current_dir(&dir)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .arg("--config")
            .arg(dir.join("config.json"))
            .args(["--no-stdout-logs", "--no-color", "--in-memory"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run PouchDB Server");
        let server = Self::new(format!("http://127.0.0.1:{port}"), None, None, Some(child));
        let start = Instant::now();
        while server.call(reqwest::Method::GET, "", None).await.0 != 200 {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "PouchDB Server did not start"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        server
    }

    /// A request as the admin: (status, JSON body).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let mut req = self.http.request(method, format!("{}/{path}", self.url));
        if let Some(user) = &self.user {
            req = req.basic_auth(user, self.password.as_deref());
        }
        if let Some(body) = body {
            req = req.json(body);
        }
        match req.send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                (status, r.json().await.unwrap_or(Value::Null))
            }
            Err(_) => (0, Value::Null),
        }
    }

    /// Makes `db` hold links 0..n (the `keys::key` IDs, `url(i)`), unless
    /// it already holds exactly n documents from an earlier run: returns
    /// whether it was filled now. `_bulk_docs` of 2,000, four in flight.
    pub async fn fill(&self, db: &str, n: u64) -> bool {
        let (status, info) = self.call(reqwest::Method::GET, db, None).await;
        let (_, designs) = self
            .call(reqwest::Method::GET, &format!("{db}/_design_docs"), None)
            .await;
        let designs = designs["rows"].as_array().map_or(0, Vec::len) as u64;
        if status == 200
            && info["doc_count"].as_u64() == Some(n + designs)
            && info["doc_del_count"] == json!(0)
        {
            return false;
        }
        if status == 200 {
            self.call(reqwest::Method::DELETE, db, None).await;
        }
        let (status, body) = self.call(reqwest::Method::PUT, db, None).await;
        assert!(
            status == 201 || status == 202,
            "creating {db}: {status} {body}"
        );
        const BATCH: u64 = 2000;
        let batches = (0..n.div_ceil(BATCH)).map(|b| {
            let docs: Vec<Value> = (b * BATCH..((b + 1) * BATCH).min(n))
                .map(|i| json!({"_id": key(i), "url": url(i)}))
                .collect();
            let path = format!("{db}/_bulk_docs");
            async move {
                let (status, body) = self
                    .call(reqwest::Method::POST, &path, Some(&json!({ "docs": docs })))
                    .await;
                assert!(
                    status == 201 || status == 202,
                    "_bulk_docs: {status} {body}"
                );
            }
        });
        futures_util::stream::iter(batches)
            .buffer_unordered(4)
            .collect::<Vec<()>>()
            .await;
        true
    }

    /// `qrtag setup` on `db` (the validation and the `links` view the full
    /// load reads), then waits until CouchDB has built the view's index
    /// (minutes at a million links, once: the database is kept). Returns
    /// whether it had to wait.
    pub async fn set_up_view(&self, db: &str) -> bool {
        qrtag::store::couch::setup::setup(&self.settings(db), Default::default())
            .await
            .expect("qrtag setup");
        let path = format!("{db}/_design/qrtag/_info");
        let mut waited = false;
        loop {
            let (_, info) = self.call(reqwest::Method::GET, &path, None).await;
            let (_, db_info) = self.call(reqwest::Method::GET, db, None).await;
            let view = info["view_index"]["update_seq"].as_u64();
            let at = db_info["update_seq"]
                .as_str()
                .and_then(|s| s.split('-').next())
                .and_then(|n| n.parse::<u64>().ok())
                .or_else(|| db_info["update_seq"].as_u64());
            match (view, at) {
                (Some(view), Some(at)) if at.saturating_sub(view) <= 100 => return waited,
                (None, _) => return waited, // no index information (PouchDB Server)
                _ => {}
            }
            // Ask for the view so CouchDB builds it now, not when it gets to it.
            let _ = self
                .http
                .get(format!(
                    "{}/{db}/_design/qrtag/_view/links?limit=0",
                    self.url
                ))
                .basic_auth(self.user.clone().unwrap_or_default(), self.password.clone())
                .timeout(Duration::from_secs(5))
                .send()
                .await;
            waited = true;
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }

    /// qrtag's settings for `db` on this server.
    pub fn settings(&self, db: &str) -> qrtag::store::options::CouchSettings {
        let mut s = qrtag::store::options::CouchSettings::new(
            qrtag::values::couch::CouchUrl::parse(&self.url).expect("CouchDB URL"),
            qrtag::values::couch::CouchDbName::parse(db).expect("database name"),
        );
        if let Some(user) = &self.user {
            s.credentials = Some(qrtag::values::couch::Credentials {
                user: user.clone(),
                password: self
                    .password
                    .clone()
                    .map(qrtag::values::secret::Secret::new),
            });
        }
        s
    }
}

impl Drop for CouchServer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.pouch {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(pid) = self.apache_pid() {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        if let Some(dir) = &self.apache_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

//! A real CouchDB-API server for the tests: PouchDB Server, installed by
//! `npm ci` from tests/couchdb/package-lock.json into `tests/couchdb/node_modules/`.
//!
//! Each test gets its own server on a free loopback port with its files in a
//! temporary directory; `Drop` kills it, so a failing test leaves nothing
//! running. A server can be stopped and started again on the same port, to
//! play CouchDB going away.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Node can be slow to start on a busy CI machine.
const START_LIMIT: Duration = Duration::from_secs(30);

pub struct PouchDb {
    port: u16,
    dir: tempfile::TempDir,
    in_memory: bool,
    child: Option<Child>,
}

fn server_bin() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/couchdb");
    let bin = root.join("node_modules/.bin/pouchdb-server");
    assert!(
        bin.exists(),
        "PouchDB Server is not installed ({} is missing): run `npm ci` in {}",
        bin.display(),
        root.display()
    );
    bin
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl PouchDb {
    /// A running server that keeps its data in memory.
    pub async fn start() -> Self {
        let mut db = Self::reserve(true);
        db.start_on_free_port().await;
        db
    }

    /// A running server that keeps its data on disk, so that it survives
    /// [`stop`](Self::stop) and [`run`](Self::run).
    pub async fn start_persistent() -> Self {
        let mut db = Self::reserve(false);
        db.start_on_free_port().await;
        db
    }

    /// A port and a directory for a server that is not started yet, for
    /// tests that start qrtag first. In-memory.
    pub fn reserve(in_memory: bool) -> Self {
        server_bin();
        Self {
            port: free_port(),
            dir: tempfile::tempdir().expect("temporary directory"),
            in_memory,
            child: None,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Another parallel test may take a port between `free_port` and the
    /// server binding it; try a few.
    async fn start_on_free_port(&mut self) {
        for _ in 0..4 {
            if self.try_start().await.is_ok() {
                return;
            }
            self.port = free_port();
        }
        let why = self.try_start().await.err().unwrap_or_default();
        panic!("PouchDB Server did not start: {why}");
    }

    /// Starts (again) on the reserved port; panics when it does not answer.
    pub async fn run(&mut self) {
        if let Err(why) = self.try_start().await {
            panic!("PouchDB Server did not start on port {}: {why}", self.port);
        }
    }

    async fn try_start(&mut self) -> Result<(), String> {
        self.stop();
        let dir = self.dir.path();
        let out = std::fs::File::create(dir.join("server.out")).map_err(|e| e.to_string())?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(server_bin());
        cmd.current_dir(dir)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .arg("--config")
            .arg(dir.join("config.json"))
            .args(["--no-stdout-logs", "--no-color"])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        if self.in_memory {
            cmd.arg("--in-memory");
        } else {
            let data = dir.join("data");
            std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
            cmd.arg("--dir").arg(data);
        }
        self.child = Some(
            cmd.spawn()
                .map_err(|e| format!("cannot run PouchDB Server: {e}"))?,
        );

        let http = reqwest::Client::new();
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if let Ok(r) = http.get(self.url()).send().await
                && r.status().is_success()
            {
                return Ok(());
            }
            let exited = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || Instant::now() > deadline {
                let log = std::fs::read_to_string(dir.join("server.out")).unwrap_or_default();
                self.stop();
                return Err(format!("exit status {exited:?}; its output:\n{log}"));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Kills the server (abruptly, as a crash or a pulled cable would).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PouchDb {
    fn drop(&mut self) {
        self.stop();
    }
}

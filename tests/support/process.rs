//! `qrtag serve` as a real process on port 0, for what only a process shows:
//! signals, restarts, what it prints. Included with `#[path]` by the test
//! crates that use it (with `support/poll.rs` beside it as `poll`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

const STARTUP: Duration = Duration::from_secs(20);

pub struct ServerProcess {
    pub child: Child,
    pub public: SocketAddr,
    pub admin: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl ServerProcess {
    /// Starts `qrtag --db DB serve` on loopback port 0 with two workers,
    /// then `args` (the access log beside the database unless they name one), and reads the bound addresses from its `listening
    /// public=... admin=...` line. Standard output is piped when asked.
    pub async fn spawn(db: &Path, args: &[&str], envs: &[(&str, &str)], pipe_stdout: bool) -> Self {
        Self::spawn_wrapped(&[], db, args, envs, pipe_stdout).await
    }

    /// As [`spawn`](Self::spawn), run through `wrapper` (a program and its
    /// arguments that ends by executing the rest of its command line, as
    /// `prlimit --fsize=N --` does); the process is the server after the exec.
    pub async fn spawn_wrapped(
        wrapper: &[&str],
        db: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
        pipe_stdout: bool,
    ) -> Self {
        let bin = env!("CARGO_BIN_EXE_qrtag");
        let mut cmd = match wrapper.split_first() {
            Some((program, rest)) => {
                let mut c = Command::new(program);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        cmd.arg("--db")
            .arg(db)
            .arg("serve")
            .args(["--admin-listen", "127.0.0.1:0"])
            .args(["--workers", "2"])
            .args(args)
            .env("QRTAG_LOG", "warn")
            // No configuration file: not a developer's ./qrtag.toml, nor
            // /etc/qrtag/qrtag.toml.
            .env("QRTAG_CONFIG", "/dev/null")
            // Tests stop servers at once; the drain has its own test.
            .env("QRTAG_SHUTDOWN_GRACE", "0")
            .env_remove("QRTAG_DB")
            .env_remove("QRTAG_SNAPSHOT_FILE")
            .env_remove("QRTAG_TRACKING_SECRET_FILE")
            .stdin(Stdio::null())
            .stdout(if pipe_stdout {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(Stdio::piped());
        // Loopback port 0 unless the test names a port (issue 36: the one
        // a CA validates TLS-ALPN-01 on).
        if !args.contains(&"--listen") {
            cmd.args(["--listen", "127.0.0.1:0"]);
        }
        // The access log goes beside the database, not into the working directory.
        if !args.contains(&"--access-log") {
            cmd.arg("--access-log").arg(db.with_file_name("access.log"));
        }
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn qrtag");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        let seen = Arc::new(Mutex::new(String::new()));
        let keep = Arc::clone(&seen);
        // Keeps draining stderr so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addrs) = qrtag::startup::parse_listening_line(&line) {
                    let _ = tx.send(addrs);
                }
                if let Ok(mut s) = keep.lock() {
                    s.push_str(&line);
                    s.push('\n');
                }
            }
        });
        let (public, admin) = tokio::task::spawn_blocking(move || rx.recv_timeout(STARTUP))
            .await
            .expect("join")
            .expect("the server printed its addresses");
        Self {
            public,
            admin,
            child,
            stderr: seen,
        }
    }

    pub fn url(&self, target: &str) -> String {
        format!("http://{}{target}", self.public)
    }

    pub fn admin_url(&self, target: &str) -> String {
        format!("http://{}{target}", self.admin)
    }

    /// The REST API's address from its `api=` word on stderr (`serve
    /// --api-listen`), once printed.
    pub async fn api_addr(&self) -> String {
        super::poll::until(
            std::time::Duration::from_secs(10),
            "the api= address",
            || {
                std::future::ready(self.stderr().lines().find_map(|l| {
                    l.split(' ')
                        .find_map(|w| w.strip_prefix("api="))
                        .map(str::to_owned)
                }))
            },
        )
        .await
    }

    /// Once its links are loaded (`/readyz` 200): until then a scan is
    /// answered 503, "starting", which a test that scans at once can meet
    /// on a loaded machine.
    pub async fn loaded(self) -> Self {
        let url = self.admin_url("/readyz");
        super::poll::until(
            std::time::Duration::from_secs(20),
            "the server's links loaded",
            || async {
                let r = reqwest::get(&url).await.ok()?;
                (r.status() == reqwest::StatusCode::OK).then_some(())
            },
        )
        .await;
        self
    }

    /// Everything the process wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{name} failed");
    }

    /// SIGTERM, then waits for a clean exit.
    pub async fn stop(mut self) {
        self.signal("TERM");
        let status = self.wait_exit().await;
        assert!(status.success(), "qrtag exited with {status}");
    }

    pub async fn wait_exit(&mut self) -> ExitStatus {
        let child = &mut self.child;
        super::poll::until(STARTUP, "the server to exit", || {
            std::future::ready(child.try_wait().expect("try_wait"))
        })
        .await
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

//! Debian's ClickHouse server (18.16) run by a test: its own config.xml and
//! users.xml in the test's temporary directory, free loopback ports, logs
//! to files there, a `default` user without a password and `qrtag` with
//! one. Started in the foreground as the test's child, waited for on
//! `/ping`, killed when dropped. Included with `#[path]` by the tests that
//! need it. Where the server is missing it skips, unless
//! `QRTAG_REQUIRE_CLICKHOUSE` is set (CI sets it after installing it).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const PASSWORD: &str = "ch-s3cret";
const BINARY: &str = "/usr/sbin/clickhouse-server";

pub struct ClickHouse {
    pub http_port: u16,
    /// Its ports, held for its whole life, stopped or not.
    _held: Vec<Held>,
    dir: PathBuf,
    child: Option<Child>,
    client: reqwest::Client,
}

/// A loopback port held by a bound socket that does not listen, for as
/// long as the test's server may use it. Several tests run at once: a port
/// only picked and let go, or freed while its server is stopped, could be
/// taken by another test's `serve` (port 0) or ClickHouse, and this test's
/// sink would then talk to that one. Held, no port-0 bind and no outgoing
/// connection gets it, a connection to it is refused as by a stopped
/// server, and ClickHouse, which binds with `SO_REUSEADDR`, still can.
#[derive(Clone)]
struct Held(std::sync::Arc<socket2::Socket>);

fn free_tcp() -> (u16, Held) {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("a socket");
    socket.set_reuse_address(true).expect("SO_REUSEADDR");
    let any = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    socket.bind(&any.into()).expect("a free TCP port");
    let port = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .map(|a| a.port())
        .expect("the bound port");
    (port, Held(std::sync::Arc::new(socket)))
}

/// Whether the tests can run: the binary, or a failure where CI requires it.
pub fn available() -> bool {
    if Path::new(BINARY).is_file() {
        return true;
    }
    assert!(
        std::env::var_os("QRTAG_REQUIRE_CLICKHOUSE").is_none(),
        "{BINARY} is missing (apt-get install clickhouse-server)"
    );
    eprintln!("skipped: {BINARY} is missing (apt-get install clickhouse-server)");
    false
}

/// A server's ports, chosen before its configuration is written (a
/// cluster's nodes name each other's TCP ports), and held (see [`Held`]).
#[derive(Clone)]
pub struct Ports {
    pub http: u16,
    pub tcp: u16,
    pub inter: u16,
    held: Vec<Held>,
}

impl Ports {
    pub fn free() -> Ports {
        let (http, h) = free_tcp();
        let (tcp, t) = free_tcp();
        let (inter, i) = free_tcp();
        Ports {
            http,
            tcp,
            inter,
            held: vec![h, t, i],
        }
    }
}

fn config(dir: &Path, http: u16, tcp: u16, inter: u16, extra: &str) -> String {
    let d = dir.display();
    format!(
        r#"<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/log/server.log</log><errorlog>{d}/log/err.log</errorlog><size>10M</size><count>1</count></logger>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <interserver_http_port>{inter}</interserver_http_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
{extra}
</yandex>
"#
    )
}

fn users() -> String {
    let user = |name: &str, password: &str, profile: &str| {
        format!(
            "<{name}><password>{password}</password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>\
             <profile>{profile}</profile><quota>default</quota></{name}>"
        )
    };
    format!(
        "<?xml version=\"1.0\"?>\n<yandex><profiles><default></default>\
         <reader><readonly>1</readonly></reader></profiles><users>{}{}{}</users>\
         <quotas><default></default></quotas></yandex>\n",
        user("default", "", "default"),
        user("qrtag", PASSWORD, "default"),
        user("reader", PASSWORD, "reader")
    )
}

impl ClickHouse {
    /// A server of its own in `dir` (made if missing), answering `/ping`.
    pub async fn start(dir: &Path) -> ClickHouse {
        ClickHouse::start_with(dir, Ports::free(), "").await
    }

    /// A server on `ports` with `extra` added to its config.xml (a
    /// cluster's `remote_servers`, `zookeeper`, `macros`).
    pub async fn start_with(dir: &Path, ports: Ports, extra: &str) -> ClickHouse {
        for sub in ["data", "tmp", "log"] {
            std::fs::create_dir_all(dir.join(sub)).expect("ClickHouse's directories");
        }
        let http_port = ports.http;
        std::fs::write(
            dir.join("config.xml"),
            config(dir, http_port, ports.tcp, ports.inter, extra),
        )
        .expect("config.xml");
        std::fs::write(dir.join("users.xml"), users()).expect("users.xml");
        let mut ch = ClickHouse {
            http_port,
            _held: ports.held,
            dir: dir.to_owned(),
            child: None,
            client: reqwest::Client::new(),
        };
        ch.resume().await;
        ch
    }

    /// Starts the server again on the same ports and data.
    pub async fn resume(&mut self) {
        let out = std::fs::File::create(self.dir.join("log/stdout")).expect("stdout file");
        let child = Command::new(BINARY)
            .arg(format!(
                "--config-file={}",
                self.dir.join("config.xml").display()
            ))
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("stdout file"))
            .stderr(out)
            .spawn()
            .expect("start clickhouse-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ping = self
                .client
                .get(format!("{}/ping", self.http()))
                .send()
                .await;
            if matches!(&ping, Ok(r) if r.status().is_success()) {
                return;
            }
            if let Some(Some(status)) = self.child.as_mut().map(|c| c.try_wait().ok().flatten()) {
                panic!("clickhouse-server exited ({status}): {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "ClickHouse not up within 60 s: {}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `qrtag.scans` holds exactly `n` distinct lines (a row
    /// sent twice counts once), for at most `within`.
    pub async fn holds_rows(&self, n: u64, within: Duration) {
        let want = format!("{n}\n");
        let mut last = String::new();
        let deadline = Instant::now() + within;
        loop {
            last = self
                .query("SELECT count() FROM qrtag.scans FINAL")
                .await
                .unwrap_or(last);
            if last == want {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{n} rows not in ClickHouse within {within:?}: {last}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops the server (SIGKILL: the tests mean "gone", not a clean stop).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn log(&self) -> String {
        ["log/stdout", "log/err.log"]
            .iter()
            .map(|f| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn http(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// `clickhouse://qrtag:PASSWORD@127.0.0.1:PORT/DB`.
    pub fn url(&self, db: &str) -> String {
        format!(
            "clickhouse://qrtag:{PASSWORD}@127.0.0.1:{}/{db}",
            self.http_port
        )
    }

    /// The same for `reader`, a user whose profile is `readonly = 1`.
    pub fn reader_url(&self, db: &str) -> String {
        format!(
            "clickhouse://reader:{PASSWORD}@127.0.0.1:{}/{db}",
            self.http_port
        )
    }

    /// Runs `sql` as `default`; the answer's text, or ClickHouse's error.
    pub async fn query(&self, sql: &str) -> Result<String, String> {
        let r = self
            .client
            .post(self.http())
            .body(sql.to_owned())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let ok = r.status().is_success();
        let text = r.text().await.map_err(|e| e.to_string())?;
        if ok { Ok(text) } else { Err(text) }
    }

    pub async fn must(&self, sql: &str) -> String {
        self.query(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

impl Drop for ClickHouse {
    fn drop(&mut self) {
        self.stop();
    }
}

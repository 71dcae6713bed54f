//! Debian's ZooKeeper run by a test, standalone on a free loopback port
//! with its data in the test's temporary directory: what a ClickHouse
//! cluster's `Replicated*` tables and `ON CLUSTER` statements coordinate
//! through. Killed when dropped. Included with `#[path]`; where it is
//! missing it skips, unless `QRTAG_REQUIRE_CLICKHOUSE` is set.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const JAR: &str = "/usr/share/java/zookeeper.jar";

pub struct ZooKeeper {
    pub port: u16,
    child: Child,
}

pub fn available() -> bool {
    if Path::new(JAR).is_file() {
        return true;
    }
    assert!(
        std::env::var_os("QRTAG_REQUIRE_CLICKHOUSE").is_none(),
        "{JAR} is missing (apt-get install zookeeper)"
    );
    eprintln!("skipped: {JAR} is missing (apt-get install zookeeper)");
    false
}

/// ZooKeeper's `srvr` answer (the one four-letter command it allows by
/// default): it answers once the server serves clients, which an open
/// port alone does not say.
fn serving(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"srvr").is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer.starts_with("Zookeeper version")
}

impl ZooKeeper {
    pub async fn start(dir: &Path) -> ZooKeeper {
        std::fs::create_dir_all(dir.join("data")).expect("ZooKeeper's directory");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let out = std::fs::File::create(dir.join("stdout")).expect("ZooKeeper's log");
        let child = Command::new("java")
            .args(["-Xmx256m", "-cp", JAR])
            .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
            .arg(port.to_string())
            .arg(dir.join("data"))
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("ZooKeeper's log"))
            .stderr(out)
            .spawn()
            .expect("start ZooKeeper (java)");
        let mut zk = ZooKeeper { port, child };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !serving(port) {
            if let Ok(Some(status)) = zk.child.try_wait() {
                panic!(
                    "ZooKeeper exited ({status}): {}",
                    std::fs::read_to_string(dir.join("stdout")).unwrap_or_default()
                );
            }
            assert!(Instant::now() < deadline, "ZooKeeper not up within 60 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        zk
    }
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

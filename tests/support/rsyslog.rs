//! Debian's rsyslogd run by a test, with the snippets of `deploy/rsyslog/`
//! as the README tells an operator to install them: each rsyslogd in the
//! foreground (`-n`) as the test's own user, with its own work directory,
//! main configuration and pid file under the test's temporary directory,
//! and the snippet included as it is but for what names this machine
//! (paths, the console host's address and port, the file owner). Included
//! with `#[path]` by `tests/scan_logs.rs`.
#![allow(dead_code)]

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// `deploy/rsyslog/NAME`.
fn snippet(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/rsyslog")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `text` with `from`, which must occur exactly once, replaced: a snippet
/// that no longer says what the test puts in place fails here, not later.
fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(text.matches(from).count(), 1, "{from:?} once in {text}");
    text.replacen(from, to, 1)
}

/// `qrtag-node.conf` for a node whose access log is `access_log`, shipping
/// to the central rsyslogd on loopback `port` (the only edits the README
/// asks for: the log's path if it differs, and the `Target`).
pub fn node_conf(access_log: &Path, port: u16) -> String {
    let text = snippet("qrtag-node.conf");
    let text = replace_once(
        &text,
        r#"File="/var/log/qrtag/access.log""#,
        &format!(r#"File="{}""#, access_log.display()),
    );
    let text = replace_once(
        &text,
        r#"Target="console.internal""#,
        r#"Target="127.0.0.1""#,
    );
    replace_once(&text, r#"Port="10514""#, &format!(r#"Port="{port}""#))
}

/// `qrtag-central.conf` writing one file per node into `nodes` (for
/// `/var/log/qrtag/nodes/`), listening on loopback `port` only, its files
/// owned by the test's user (there is no `qrtag` user here).
pub fn central_conf(nodes: &Path, port: u16) -> String {
    let text = snippet("qrtag-central.conf");
    let text = replace_once(
        &text,
        r#"string="/var/log/qrtag/nodes/"#,
        &format!(r#"string="{}/"#, nodes.display()),
    );
    let text = replace_once(
        &text,
        r#"port="10514""#,
        &format!(r#"port="{port}" address="127.0.0.1""#),
    );
    let me = std::fs::metadata(nodes.parent().unwrap_or(nodes)).expect("the test's directory");
    replace_once(
        &text,
        r#"fileOwner="qrtag" fileGroup="qrtag""#,
        &format!(r#"fileOwnerNum="{}" fileGroupNum="{}""#, me.uid(), me.gid()),
    )
}

/// rsyslogd on `PATH`, or where Debian puts it (`/usr/sbin`, not on a
/// user's `PATH`).
fn rsyslogd_binary() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("rsyslogd"))
            .find(|p| p.is_file())
    });
    on_path.unwrap_or_else(|| PathBuf::from("/usr/sbin/rsyslogd"))
}

/// One running rsyslogd, killed when dropped.
pub struct Rsyslogd {
    child: Child,
    dir: PathBuf,
}

impl Rsyslogd {
    /// Starts rsyslogd in `dir` (created) with `snippet` included from a main
    /// configuration that gives only its work directory (imfile's state
    /// files, the disk queue) and, on a node, the host name it sends as
    /// (which names the node's file on the central host). The configuration
    /// is checked first (`-N1`), so a snippet rsyslog refuses fails here
    /// with rsyslog's words.
    pub fn start(dir: &Path, host_name: Option<&str>, snippet: &str) -> Rsyslogd {
        let work = dir.join("work");
        std::fs::create_dir_all(&work).expect("rsyslog work directory");
        let included = dir.join("snippet.conf");
        std::fs::write(&included, snippet).expect("snippet");
        let mut global = format!(r#"workDirectory="{}""#, work.display());
        if let Some(name) = host_name {
            global.push_str(&format!(r#" localHostname="{name}""#));
        }
        let conf = dir.join("rsyslog.conf");
        std::fs::write(
            &conf,
            format!(
                "global({global})\ninclude(file=\"{}\")\n",
                included.display()
            ),
        )
        .expect("rsyslog.conf");
        let check = Command::new(rsyslogd_binary())
            .arg("-N1")
            .arg("-f")
            .arg(&conf)
            .output()
            .expect("rsyslogd runs (Debian's rsyslog package, installed by .ci/test)");
        assert!(
            check.status.success(),
            "rsyslogd -N1 refuses {}: {}",
            conf.display(),
            String::from_utf8_lossy(&check.stderr)
        );
        let out = File::create(dir.join("rsyslogd.out")).expect("output file");
        let child = Command::new(rsyslogd_binary())
            .arg("-n")
            .arg("-f")
            .arg(&conf)
            .arg("-i")
            .arg(dir.join("rsyslogd.pid"))
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("output file"))
            .stderr(out)
            .spawn()
            .expect("rsyslogd starts");
        Rsyslogd {
            child,
            dir: dir.to_owned(),
        }
    }

    /// What rsyslogd said so far, and whether it has exited: for a failing
    /// test's message.
    pub fn report(&mut self) -> String {
        let said = std::fs::read_to_string(self.dir.join("rsyslogd.out")).unwrap_or_default();
        match self.child.try_wait() {
            Ok(Some(status)) => format!("rsyslogd exited ({status}): {said}"),
            _ => format!("rsyslogd running: {said}"),
        }
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Rsyslogd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

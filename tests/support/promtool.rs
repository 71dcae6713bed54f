//! `promtool check metrics` over an exposition: the Prometheus project's
//! own parser judges what `/metrics` serves (Debian's prometheus package,
//! which `bash .ci/test` installs).
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Stdio};

/// Fails the test with promtool's words when it refuses `exposition`.
pub fn promtool_check(exposition: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs (Debian's prometheus package; `bash .ci/test` installs it)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(exposition.as_bytes())
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool finishes");
    assert!(
        out.status.success(),
        "promtool check metrics failed:\n{}{}\n--- exposition ---\n{exposition}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

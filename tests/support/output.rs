//! A finished `qrtag` command as the CLI tests read it: its streams as
//! text, and success asserted with stderr in the failure message, so a
//! test that expected a command to work says why it did not.

use std::process::Output;

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The stdout of a command that must have succeeded.
pub fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

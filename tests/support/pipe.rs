//! Two runs of the binary joined by a real pipe (`export | import -`), as a
//! person moves links. Included with `#[path]` by the test crates that do not
//! use `support`.
#![allow(dead_code)]

use std::process::{Command, Output, Stdio};

/// Runs `from` with its standard output piped into `to`'s standard input;
/// both outputs once both have finished.
pub fn pipe(mut from: Command, mut to: Command) -> (Output, Output) {
    let mut first = from
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the first command");
    let stdout = first.stdout.take().expect("its stdout");
    let second = to
        .stdin(stdout)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the second command");
    let second = second.wait_with_output().expect("the second finishes");
    let first = first.wait_with_output().expect("the first finishes");
    (first, second)
}

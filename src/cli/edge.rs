//! The command line's edge: every way `qrtag` ends, in one place.
//!
//! Convention (the guide's docs/src/configuration.md, "Exit codes"): 0 success; 1 a failure (the command
//! was right, something else went wrong); 2 a usage error (the command
//! itself is wrong: a bad argument, a missing one, options that contradict
//! each other). Either error is one line on stderr, `qrtag: ...`. A reader
//! that closes the pipe (`qrtag list | head -1`) ends the command quietly,
//! with success, as with any Unix filter.

use std::io::ErrorKind;
use std::process::ExitCode;

use crate::values::usage::UsageError;

pub const USAGE: u8 = 2;

/// How a failed command ends: the one line it prints (if any) and its code.
pub fn failure(err: &anyhow::Error) -> (Option<String>, ExitCode) {
    if is_broken_pipe(err) {
        return (None, ExitCode::SUCCESS);
    }
    let code = if err.downcast_ref::<UsageError>().is_some() {
        ExitCode::from(USAGE)
    } else {
        ExitCode::FAILURE
    };
    (Some(one_line(err.chain().map(ToString::to_string))), code)
}

/// The messages of an error chain joined by `: `, each said once: many
/// errors repeat their cause's text in their own (`cannot listen on X: {cause}`)
/// and libraries repeat theirs, so a message already said is left out.
pub fn one_line(chain: impl Iterator<Item = String>) -> String {
    let mut line = String::new();
    for message in chain {
        let message = message.trim();
        if message.is_empty() || line.contains(message) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(message);
    }
    line.replace('\n', " ")
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == ErrorKind::BrokenPipe)
    })
}

/// clap's error, which spans several lines (the error, a usage block, a
/// hint), as one line naming the command whose help to read.
pub fn clap_line(err: &clap::Error, command: &str) -> String {
    let rendered = err.render().to_string();
    let message: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    let message = message.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    let help = if command.is_empty() {
        "qrtag --help".to_owned()
    } else {
        format!("qrtag {command} --help")
    };
    format!("{message} (see {help})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_of_a_chain_is_said_once() {
        let chain = [
            "starting the server",
            "cannot listen on 127.0.0.1:8080: Address already in use (os error 98)",
            "Address already in use (os error 98)",
        ];
        assert_eq!(
            one_line(chain.iter().map(|s| s.to_string())),
            "starting the server: cannot listen on 127.0.0.1:8080: Address already in use (os error 98)"
        );
        let chain = ["a", "", "b\nc", "b\nc"];
        assert_eq!(one_line(chain.iter().map(|s| s.to_string())), "a: b c");
    }

    #[test]
    fn a_closed_pipe_ends_quietly_and_usage_errors_exit_2() {
        let pipe = anyhow::Error::new(std::io::Error::from(ErrorKind::BrokenPipe)).context("x");
        assert_eq!(failure(&pipe), (None, ExitCode::SUCCESS));
        let usage = anyhow::Error::new(UsageError("bad".into()));
        assert_eq!(failure(&usage), (Some("bad".into()), ExitCode::from(USAGE)));
        let other = anyhow::anyhow!("broken");
        assert_eq!(failure(&other), (Some("broken".into()), ExitCode::FAILURE));
    }
}

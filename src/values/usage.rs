//! The error a command's own checks raise when the command itself is wrong.

/// A usage error found after parsing (options that contradict each other,
/// a file name whose extension names no format): the
/// CLI's edge exits with code 2 for it, like clap's. Library code that checks a
/// command's input (`qrtag stats`' options) raises it without knowing the CLI.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

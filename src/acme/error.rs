//! What went wrong getting a certificate, each in one line: the renewal
//! status, `/readyz` and the log show it as it is.

use std::path::PathBuf;

use thiserror::Error;

use super::store::StoreError;

#[derive(Debug, Error)]
pub enum AcmeError {
    #[error("the ACME CA refused the order for {names}: {detail}")]
    Refused { names: String, detail: String },
    #[error("the ACME CA could not validate {name} over HTTP-01: {detail}")]
    Validation { name: String, detail: String },
    #[error("the ACME CA offers no HTTP-01 challenge for {name}")]
    NoHttp01 { name: String },
    /// Issue 36.
    #[error("the ACME CA offers no TLS-ALPN-01 challenge for {name}")]
    NoTlsAlpn01 { name: String },
    #[error("the order for {names} was not done within {secs} s")]
    Timeout { names: String, secs: u64 },
    #[error("ACME account at {directory}: {detail}")]
    Account { directory: String, detail: String },
    #[error("cannot read the ACME CA's root {}: {detail}", path.display())]
    CaRoot { path: PathBuf, detail: String },
    #[error("talking to the ACME CA: {0}")]
    Protocol(String),
    #[error("making the certificate's key: {0}")]
    Key(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An error of instant-acme in one line: an RFC 7807 problem as its detail,
/// its short type and its subproblems, anything else as it prints.
pub(crate) fn describe(error: &instant_acme::Error) -> String {
    match error {
        instant_acme::Error::Api(problem) => problem_line(problem),
        other => one_line(&other.to_string()),
    }
}

pub(crate) fn problem_line(problem: &instant_acme::Problem) -> String {
    let mut line = problem
        .detail
        .clone()
        .unwrap_or_else(|| "no detail given".into());
    if let Some(kind) = problem.r#type.as_deref() {
        let short = kind
            .strip_prefix("urn:ietf:params:acme:error:")
            .unwrap_or(kind);
        line.push_str(&format!(" ({short})"));
    }
    for sub in &problem.subproblems {
        line.push_str("; ");
        if let Some(id) = &sub.identifier {
            line.push_str(&format!("{}: ", id.authorized(false)));
        }
        line.push_str(sub.detail.as_deref().unwrap_or("no detail given"));
    }
    one_line(&line)
}

/// Collapses every run of white space (a CA's detail may hold newlines) into
/// one space, and bounds the length so a hostile CA cannot flood a log.
pub(crate) fn one_line(text: &str) -> String {
    const MAX: usize = 500;
    let mut out = String::with_capacity(text.len().min(MAX));
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() > MAX {
            let mut cut = MAX;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push('…');
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_collapses_and_bounds() {
        assert_eq!(one_line(" a\n b\t\tc \r\n"), "a b c");
        let long = "é".repeat(600);
        let cut = one_line(&long);
        assert!(cut.len() <= 504 && cut.ends_with('…'));
    }
}

//! `qrtag resolve --rules rules.json URL...`: check a ruleset offline.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use crate::redirect::policy;

/// Prints `URL -> RESULT` a line, or with `plain` only `RESULT` (a line per
/// URL, in order; `-` for one that does not resolve, whose error goes to
/// standard error). Exit code 1 if any URL did not resolve.
pub fn run(rules: &Path, urls: &[String], plain: bool) -> anyhow::Result<ExitCode> {
    let text =
        std::fs::read_to_string(rules).with_context(|| format!("reading {}", rules.display()))?;
    let rules: HashMap<String, String> = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} must be a JSON object of strings, like {{\"key\": \"https://...\"}}",
            rules.display()
        )
    })?;
    let mut out = std::io::stdout().lock();
    let mut failed = false;
    for url in urls {
        match policy::resolve_url_str(url, &rules) {
            Ok(dest) if plain => writeln!(out, "{dest}")?,
            Ok(dest) => writeln!(out, "{url} -> {dest}")?,
            Err(e) if plain => {
                failed = true;
                writeln!(out, "-")?;
                eprintln!("qrtag: {url}: {e}");
            }
            Err(e) => {
                failed = true;
                writeln!(out, "{url} -> error: {e}")?;
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

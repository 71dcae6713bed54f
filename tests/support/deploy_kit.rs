//! Reading the deploy kit (`deploy/`) the way its tools would: the compose
//! file with compose's variable substitution, environment files as systemd
//! and compose read them, and the variables the binary's `--help` names.
//! Included with `#[path]` by `tests/deploy_kit.rs` and the CouchDB tests.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_norway::Value;

/// A file of the repository.
pub fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

pub fn read(relative: &str) -> String {
    let path = repo_file(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `deploy/compose.yaml`, parsed.
pub fn compose() -> Value {
    serde_norway::from_str(&read("deploy/compose.yaml")).expect("compose.yaml is YAML")
}

/// The service `name` of a parsed compose file.
pub fn service<'a>(compose: &'a Value, name: &str) -> &'a Value {
    let service = &compose["services"][name];
    assert!(service.is_mapping(), "compose.yaml has no service {name}");
    service
}

/// A service's `environment`, either spelling (a map, or a list of
/// `NAME=value`), with compose's substitution from `vars` applied.
pub fn service_env(
    service: &Value,
    vars: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, String> {
    let mut env = BTreeMap::new();
    match &service["environment"] {
        Value::Mapping(map) => {
            for (k, v) in map {
                let k = k.as_str().ok_or("a variable name that is not a string")?;
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    other => return Err(format!("{k}: {other:?}")),
                };
                env.insert(k.to_owned(), interpolate(&v, vars)?);
            }
        }
        Value::Sequence(items) => {
            for item in items {
                let line = item
                    .as_str()
                    .ok_or("an environment entry that is not a string")?;
                let (k, v) = line.split_once('=').ok_or(format!("no `=` in {line}"))?;
                env.insert(k.to_owned(), interpolate(v, vars)?);
            }
        }
        Value::Null => {}
        other => return Err(format!("environment: {other:?}")),
    }
    Ok(env)
}

/// A service's `command` as a list of words (the exec form).
pub fn command(service: &Value) -> Vec<String> {
    service["command"]
        .as_sequence()
        .map(|words| {
            words
                .iter()
                .map(|w| w.as_str().expect("a command word").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Compose's substitution: `$$` is a `$`; `${NAME}`, `$NAME`, `${NAME:-default}`
/// and `${NAME-default}` take the value; `${NAME:?message}` and
/// `${NAME?message}` are an error when it is missing (the `:` forms also when
/// empty). A name that is missing without a default is an error too, since
/// the kit means every variable to be set.
pub fn interpolate(text: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}').ok_or(format!("unclosed ${{ in {text}"))?;
            out.push_str(&substitute(&braced[..end], vars)?);
            rest = &braced[end + 1..];
        } else {
            let len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            if len == 0 {
                return Err(format!("a lone $ in {text}: write $$"));
            }
            out.push_str(&substitute(&after[..len], vars)?);
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn substitute(expr: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let split = expr.find([':', '-', '?']).unwrap_or(expr.len());
    let (name, op) = expr.split_at(split);
    let value = vars.get(name);
    let (empty_counts, op) = match op.strip_prefix(':') {
        Some(op) => (true, op),
        None => (false, op),
    };
    let set = value.filter(|v| !(empty_counts && v.is_empty()));
    match (set, op.chars().next()) {
        (Some(v), _) => Ok(v.clone()),
        (None, Some('-')) => Ok(op[1..].to_owned()),
        (None, Some('?')) => Err(format!("{name} is not set: {}", &op[1..])),
        _ => Err(format!("{name} is not set and has no default")),
    }
}

/// The `NAME=value` lines of an environment file (`.env`, or a systemd
/// `EnvironmentFile`); comments and blank lines are skipped.
pub fn env_file(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("not NAME=value: {l}"));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// Every `QRTAG_…` name a text mentions, commented out or not.
pub fn qrtag_variables(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("QRTAG_") {
        let name_len = rest[at..]
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(rest.len() - at);
        names.insert(rest[at..at + name_len].to_owned());
        rest = &rest[at + name_len..];
    }
    names
}

/// What `qrtag SUBCOMMAND --help` prints, run as a real process with no
/// `QRTAG_…` variables of the caller's (which it would show as values).
pub fn help(subcommand: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qrtag"))
        .args([subcommand, "--help"])
        .env_clear()
        .env("QRTAG_CONFIG", "/dev/null")
        .output()
        .expect("qrtag runs");
    assert!(out.status.success(), "qrtag {subcommand} --help failed");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

//! The configuration file at the command line's edge: found and applied
//! before clap parses (see [`crate::cli::config`]), where each setting came from,
//! and `qrtag config`, which prints them.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory};

use super::Cli;
use crate::cli::config::{self, Config, ConfigError, Found, Site};

/// Where each setting came from, for messages (`db from /etc/qrtag/qrtag.toml`)
/// and `qrtag config`.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub config: Config,
    /// The top-level (global) options: how each got its value, and the
    /// values typed on the command line.
    sources: BTreeMap<String, ValueSource>,
    typed: BTreeMap<String, Vec<String>>,
    /// How each option of `serve` got its value.
    serve_sources: BTreeMap<String, ValueSource>,
}

impl Origin {
    pub fn new(config: Config, m: &ArgMatches) -> Self {
        let mut sources = BTreeMap::new();
        let mut typed = BTreeMap::new();
        for id in m.ids() {
            let id = id.as_str();
            let Some(source) = m.value_source(id) else {
                continue;
            };
            if source == ValueSource::CommandLine
                && let Ok(Some(raw)) = m.try_get_raw(id)
            {
                let values = raw.map(|v| v.to_string_lossy().into_owned()).collect();
                typed.insert(id.to_owned(), values);
            }
            sources.insert(id.to_owned(), source);
        }
        let serve_sources = m
            .subcommand_matches("serve")
            .map(|sub| {
                sub.ids()
                    .filter_map(|id| Some((id.as_str().to_owned(), sub.value_source(id.as_str())?)))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            config,
            sources,
            typed,
            serve_sources,
        }
    }

    /// Whether the operator chose a `serve` option's value (command line,
    /// environment or configuration file) rather than taking the default.
    pub fn serve_chose(&self, id: &str) -> bool {
        matches!(
            self.serve_sources.get(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) || self.config.sets(id)
    }

    /// Where a global option's value came from: `--db`, `QRTAG_DB`,
    /// `file /etc/qrtag/qrtag.toml` or `default`.
    pub fn source(&self, id: &str) -> String {
        match self.sources.get(id) {
            Some(ValueSource::CommandLine) => format!("--{}", id.replace('_', "-")),
            Some(ValueSource::EnvVariable) => format!("QRTAG_{}", id.to_ascii_uppercase()),
            _ => match self.config.path() {
                Some(path) if self.config.sets(id) => format!("file {}", path.display()),
                _ => "default".into(),
            },
        }
    }

    /// Whether a global option was typed on this command line.
    pub fn typed(&self, id: &str) -> bool {
        self.sources.get(id) == Some(&ValueSource::CommandLine)
    }

    /// How to set a key, for messages: the file in force if there is one.
    pub fn how_to_set(&self, key: &str) -> String {
        let env = format!("QRTAG_{}", key.to_ascii_uppercase());
        let flag = format!("--{}", key.replace('_', "-"));
        // `/dev/null` (no file, said explicitly) is not a file to edit.
        match self.config.path().filter(|p| p.is_file()) {
            Some(path) => format!("set {key} in {}, or {env}, or pass {flag}", path.display()),
            None => format!(
                "set {key} in a configuration file ({}), or {env}, or pass {flag}",
                config::LOCAL_FILE
            ),
        }
    }
}

/// A setting the file in force could not be brought to its new value.
#[derive(Debug, thiserror::Error)]
#[error("cannot change {key} in {path} ({why}): change {where_} to {key} = \"{new}\"")]
pub struct NotRewritten {
    pub key: String,
    pub path: String,
    pub why: String,
    /// `line 3`, or `the line that sets it` when the text cannot say.
    pub where_: String,
    pub new: String,
}

/// Sets `key` to `new` in the configuration file in force when the file
/// gives it a value `is_new` does not accept, so the next command does not
/// refuse the value this one changed. The file is rewritten in place
/// (the same inode: a symlinked or bind-mounted file stays one), keeping
/// its comments and layout. Returns the file and the value it held.
pub fn rewrite(
    origin: &Origin,
    key: &str,
    new: &str,
    is_new: impl Fn(&str) -> bool,
) -> Result<Option<(std::path::PathBuf, String)>, NotRewritten> {
    let (Some(path), Some(old)) = (
        origin.config.path(),
        origin.config.keys.get(key).and_then(|v| v.first()),
    ) else {
        return Ok(None);
    };
    if is_new(old) {
        return Ok(None);
    }
    let failed = |text: Option<&str>, why: String| NotRewritten {
        key: key.to_owned(),
        path: path.display().to_string(),
        why,
        where_: text.and_then(|t| config::line_of(t, key)).map_or_else(
            || "the line that sets it".to_owned(),
            |n| format!("line {n}"),
        ),
        new: new.to_owned(),
    };
    let text = std::fs::read_to_string(path).map_err(|e| failed(None, e.to_string()))?;
    let changed =
        config::with_string(&text, key, new).map_err(|e| failed(Some(&text), e.to_string()))?;
    std::fs::write(path, changed).map_err(|e| failed(Some(&text), e.to_string()))?;
    Ok(Some((path.to_owned(), old.clone())))
}

/// Finds the configuration file and sets what it holds as `cmd`'s
/// defaults. Warns when it holds a secret others can read.
pub fn load(cmd: clap::Command, args: &[OsString]) -> Result<(clap::Command, Config), ConfigError> {
    let flag = config::flag_in(args);
    let env = std::env::var_os(config::ENV);
    let (file, looked) = config::locate(flag.as_deref(), env.as_deref(), |p| p.exists())?;
    let Some((path, found)) = file else {
        return Ok((
            cmd,
            Config {
                looked,
                ..Config::default()
            },
        ));
    };
    let (cmd, mut config) = config::apply(cmd, &path)?;
    config.file = Some((path, found));
    config.looked = looked;
    warn_if_secrets_readable(&config, &cmd);
    Ok((cmd, config))
}

fn warn_if_secrets_readable(config: &Config, cmd: &clap::Command) {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = config.path() else {
        return;
    };
    let secrets = config::secrets_in(config, cmd);
    let mode = std::fs::metadata(path).map_or(0, |m| m.permissions().mode());
    if !secrets.is_empty() && mode & 0o044 != 0 {
        eprintln!(
            "qrtag: warning: {} holds {} and others can read it (mode {:o}): chmod 600 it, or keep secrets in the environment",
            path.display(),
            secrets.join(", "),
            mode & 0o777
        );
    }
}

/// `qrtag config`: the file used (or where it looked), every setting with
/// its value and source, and the public URL recorded with the store.
pub async fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let origin = &cli.origin;
    let mut out = std::io::stdout().lock();
    match &origin.config.file {
        Some((path, found)) => {
            let how = match found {
                Found::Flag => "named by --config",
                Found::Env => "named by QRTAG_CONFIG",
                Found::Searched => "found",
            };
            writeln!(out, "# configuration file: {} ({how})", path.display())?;
        }
        None => {
            let looked: Vec<String> = origin
                .config
                .looked
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            writeln!(
                out,
                "# configuration file: none (looked for {})",
                looked.join(", ")
            )?;
        }
    }
    for (key, sites) in config::keys(&Cli::command()) {
        let site = &sites[0];
        let (values, source) = setting(origin, &key, site);
        let line = match values {
            None => format!("# {key} is not set"),
            Some(_) if site.is_secret() => format!("{key} = (set)  # {source}"),
            Some(values) => format!("{key} = {}  # {source}", toml_value(site, &values)),
        };
        writeln!(out, "{line}")?;
    }
    let recorded = match cli.open_store(crate::store::Access::Read) {
        Ok(store) => match store.public_url().await {
            Ok(Some(url)) => url,
            Ok(None) => "none".into(),
            Err(e) => format!("unknown ({e})"),
        },
        Err(e) => format!("unknown ({e})"),
    };
    writeln!(out, "# public URL recorded with the links: {recorded}")?;
    Ok(ExitCode::SUCCESS)
}

/// A key's value in force and its source. Only the global options can have
/// been typed here; the others are as `serve` (or the command that reads
/// them) would get them without flags.
fn setting(origin: &Origin, key: &str, site: &Site) -> (Option<Vec<String>>, String) {
    if site.is_global()
        && let Some(values) = origin.typed.get(site.arg.get_id().as_str())
    {
        return (Some(values.clone()), site.flag());
    }
    let env = site.env();
    if let Some(value) = std::env::var_os(&env).filter(|v| !v.is_empty()) {
        return (Some(vec![value.to_string_lossy().into_owned()]), env);
    }
    if let (Some(values), Some(path)) = (origin.config.keys.get(key), origin.config.path()) {
        return (Some(values.clone()), format!("file {}", path.display()));
    }
    let defaults: Vec<String> = site
        .arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    let switch = matches!(
        site.arg.get_action(),
        clap::ArgAction::SetTrue | clap::ArgAction::SetFalse
    );
    match defaults.is_empty() {
        true if switch => (Some(vec!["false".into()]), "default".into()),
        true => (None, "default".into()),
        false => (Some(defaults), "default".into()),
    }
}

/// The values as the file would hold them.
fn toml_value(site: &Site, values: &[String]) -> String {
    let one = |v: &String| {
        let plain = matches!(
            site.arg.get_action(),
            clap::ArgAction::SetTrue | clap::ArgAction::SetFalse
        ) || config::is_integer(&site.arg);
        if plain {
            v.clone()
        } else {
            toml::Value::String(v.clone()).to_string()
        }
    };
    match site.arg.get_action() {
        clap::ArgAction::Append => {
            format!(
                "[{}]",
                values.iter().map(one).collect::<Vec<_>>().join(", ")
            )
        }
        _ => values.first().map(one).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_cannot_be_changed_is_named_with_what_to_write() {
        let mut origin = Origin::default();
        let path = std::path::PathBuf::from("/nonexistent/qrtag.toml");
        origin.config.file = Some((path, Found::Flag));
        origin
            .config
            .keys
            .insert("public_url".into(), vec!["https://a.example".into()]);
        let new = "https://b.example";
        let err = rewrite(&origin, "public_url", new, |s| s == new).expect_err("cannot write");
        assert!(
            err.to_string()
                .starts_with("cannot change public_url in /nonexistent/qrtag.toml (")
                && err.to_string().ends_with(
                    "): change the line that sets it to public_url = \"https://b.example\""
                ),
            "{err}"
        );
        // Naming the new value already: nothing to do.
        let same = rewrite(&origin, "public_url", "https://a.example", |s| {
            s == "https://a.example"
        });
        assert!(matches!(same, Ok(None)));
    }
}

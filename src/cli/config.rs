//! The configuration file, `qrtag.toml`: one place for the service's
//! settings, read by `serve` and by every other command, so a command run
//! from an operator's shell uses the database and public URL the service
//! uses.
//!
//! Its keys are not a table kept by hand: every option that reads an
//! environment variable `QRTAG_NAME` is the key `name`. A value from the file
//! becomes that option's default value in clap's `Command`, so clap still
//! parses it (the same value parsers as a flag), and an environment variable
//! or a flag still overrides it. Which settings came from the file is then
//! clap's `ValueSource::DefaultValue` for a key the file holds.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use clap::builder::{RangedI64ValueParser, RangedU64ValueParser, ValueHint, ValueParser};
use clap::{Arg, ArgAction, Command};

/// The variable that names the file, like `--config`.
pub const ENV: &str = "QRTAG_CONFIG";
/// Looked for in the working directory when neither names a file.
pub const LOCAL_FILE: &str = "qrtag.toml";
/// Looked for last: where the deploy kit installs it.
pub const SYSTEM_FILE: &str = "/etc/qrtag/qrtag.toml";

/// How the file in force was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Flag,
    Env,
    Searched,
}

/// The configuration in force: the file (if any) and what it set.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The file read, and how it was found; `None` when there was none.
    pub file: Option<(PathBuf, Found)>,
    /// Where a file was looked for, in order.
    pub looked: Vec<PathBuf>,
    /// Each key the file set, with the values as given to clap (relative
    /// paths already made relative to the file's directory).
    pub keys: BTreeMap<String, Vec<String>>,
    /// Issue 36: the file's `[[domains]]` (the default one's fields are in
    /// `keys`, under the top-level names they stand for).
    pub domains: crate::settings::domains::Domains,
}

impl Config {
    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|(p, _)| p.as_path())
    }

    /// Whether the file set `key`.
    pub fn sets(&self, key: &str) -> bool {
        self.keys.contains_key(key)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("the configuration file {path} (named by {by}) does not exist")]
    Missing { path: String, by: &'static str },
    #[error("cannot read the configuration file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: line {line}: not valid TOML: {message}")]
    Syntax {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: unknown key `{key}`{hint}")]
    UnknownKey {
        path: String,
        key: String,
        hint: String,
    },
    #[error("{path}: key `{key}`: {why}")]
    BadValue {
        path: String,
        key: String,
        why: String,
    },
}

/// The file found (and how), and every place looked.
pub type Located = (Option<(PathBuf, Found)>, Vec<PathBuf>);

/// Which file to read: `--config`, then `QRTAG_CONFIG` (both must exist),
/// then `./qrtag.toml`, then `/etc/qrtag/qrtag.toml`. `exists` is asked
/// about the searched ones only. Returns the file and the places looked.
pub fn locate(
    flag: Option<&OsStr>,
    env: Option<&OsStr>,
    exists: impl Fn(&Path) -> bool,
) -> Result<Located, ConfigError> {
    let named = [(flag, Found::Flag, "--config"), (env, Found::Env, ENV)];
    for (value, found, by) in named {
        let Some(value) = value.filter(|v| !v.is_empty()) else {
            continue;
        };
        let path = PathBuf::from(value);
        if !exists(&path) {
            return Err(ConfigError::Missing {
                path: path.display().to_string(),
                by,
            });
        }
        return Ok((Some((path.clone(), found)), vec![path]));
    }
    let looked = vec![PathBuf::from(LOCAL_FILE), PathBuf::from(SYSTEM_FILE)];
    let file = looked.iter().find(|p| exists(p)).cloned();
    Ok((file.map(|p| (p, Found::Searched)), looked))
}

/// The value of `--config` on a command line, found before clap parses it
/// (the file decides the defaults clap parses with).
pub fn flag_in(args: &[OsString]) -> Option<OsString> {
    let mut args = args.iter().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--" {
            return None;
        }
        if arg == "--config" {
            return args.next().cloned();
        }
        if let Some(value) = arg.to_str().and_then(|a| a.strip_prefix("--config=")) {
            return Some(value.into());
        }
    }
    None
}

/// One configurable option: where it is in the command tree.
#[derive(Debug, Clone)]
pub struct Site {
    /// Subcommand names from the top; empty for a global option.
    pub path: Vec<String>,
    pub arg: Arg,
}

impl Site {
    /// The option as a person types it, `--public-url`.
    pub fn flag(&self) -> String {
        match self.arg.get_long() {
            Some(long) => format!("--{long}"),
            None => self.arg.get_id().to_string(),
        }
    }

    pub fn env(&self) -> String {
        self.arg
            .get_env()
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Whether its value must not be shown (`hide_env_values`).
    pub fn is_secret(&self) -> bool {
        self.arg.is_hide_env_values_set()
    }

    pub fn is_global(&self) -> bool {
        self.path.is_empty()
    }
}

/// Every key the file may hold, from the options' environment variables:
/// `QRTAG_PUBLIC_URL` is `public_url`. An option that several commands
/// share (flattened into each) has a site in each.
pub fn keys(cmd: &Command) -> BTreeMap<String, Vec<Site>> {
    let mut built = cmd.clone();
    built.build();
    let mut out = BTreeMap::new();
    walk(&built, &mut Vec::new(), &mut out);
    out
}

fn walk(cmd: &Command, path: &mut Vec<String>, out: &mut BTreeMap<String, Vec<Site>>) {
    for arg in cmd.get_arguments() {
        // A global option is propagated into every subcommand: its one site
        // is the top.
        if !path.is_empty() && arg.is_global_set() {
            continue;
        }
        let Some(key) = arg.get_env().and_then(key_of_env) else {
            continue;
        };
        out.entry(key).or_default().push(Site {
            path: path.clone(),
            arg: arg.clone(),
        });
    }
    for sub in cmd.get_subcommands() {
        path.push(sub.get_name().to_owned());
        walk(sub, path, out);
        path.pop();
    }
}

/// `QRTAG_PUBLIC_URL` → `public_url`; `QRTAG_CONFIG` names the file itself.
fn key_of_env(env: &OsStr) -> Option<String> {
    let name = env.to_str()?.strip_prefix("QRTAG_")?;
    (name != "CONFIG").then(|| name.to_ascii_lowercase())
}

/// Reads the file at `path` and sets what it holds as default values of
/// `cmd`'s options. Returns the command and the keys set.
pub fn apply(cmd: Command, path: &Path) -> Result<(Command, Config), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.display().to_string(),
        source,
    })?;
    // Absolute, so messages name the file's directory wherever the command
    // runs (the file exists: it was just read).
    let dir = std::fs::canonicalize(path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| path.parent().unwrap_or(Path::new("")).to_owned());
    apply_text(cmd, path, &dir, &text)
}

/// [`apply`] on the file's text; `dir` is what relative paths in it are
/// relative to.
pub fn apply_text(
    mut cmd: Command,
    path: &Path,
    dir: &Path,
    text: &str,
) -> Result<(Command, Config), ConfigError> {
    let shown = path.display().to_string();
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map_or(1, |s| {
            text[..s.start.min(text.len())].matches('\n').count() + 1
        });
        ConfigError::Syntax {
            path: shown.clone(),
            line,
            message: e.message().trim().to_owned(),
        }
    })?;
    let mut table = table;
    let domains = match table.remove("domains") {
        Some(value) => {
            take_domains(&mut table, &value, dir).map_err(|e| ConfigError::BadValue {
                path: shown.clone(),
                key: "domains".into(),
                why: e.to_string(),
            })?
        }
        None => crate::settings::domains::Domains::default(),
    };
    let known = keys(&cmd);
    let table = flatten_tables(table);
    let mut set = BTreeMap::new();
    for (key, value) in &table {
        let Some(sites) = known.get(key) else {
            return Err(ConfigError::UnknownKey {
                path: shown,
                key: key.clone(),
                hint: closest(key, known.keys())
                    .map(|k| format!(" (did you mean `{k}`?)"))
                    .unwrap_or_default(),
            });
        };
        let bad = |why: String| ConfigError::BadValue {
            path: shown.clone(),
            key: key.clone(),
            why,
        };
        let site = &sites[0];
        let values = values_of(&site.arg, value)
            .map_err(bad)?
            .into_iter()
            .map(|v| relative_to(&site.arg, dir, v))
            .collect::<Vec<_>>();
        for v in &values {
            check(&site.arg, v).map_err(bad)?;
        }
        for site in sites {
            cmd = set_default(cmd, &site.path, site.arg.get_id().as_str(), &values);
        }
        set.insert(key.clone(), values);
    }
    Ok((
        cmd,
        Config {
            keys: set,
            domains,
            ..Config::default()
        },
    ))
}

/// Issue 36: a table, `tls = { cert = "…", key = "…" }` or `[acme]`, is
/// its keys joined with `_` (`tls_cert`, `tls_key`, `acme_email`), one
/// level deep, even under a key that is an option too (`tls = "acme"`: no
/// option takes a table); a key of it that is no option is then reported
/// by its full name (`tls_cret`).
fn flatten_tables(table: toml::Table) -> toml::Table {
    let mut out = toml::Table::new();
    for (key, value) in table {
        match value {
            toml::Value::Table(inner) => {
                for (sub, v) in inner {
                    out.insert(format!("{key}_{sub}"), v);
                }
            }
            value => {
                out.insert(key, value);
            }
        }
    }
    out
}

/// Issue 36: the `[[domains]]` of the file. The default domain's fields
/// are written into `table` as the top-level keys they stand for (set in
/// one place only), so they are read, checked and overridden as those
/// keys always were; the others are kept with their paths made relative
/// to `dir`.
fn take_domains(
    table: &mut toml::Table,
    value: &toml::Value,
    dir: &Path,
) -> Result<crate::settings::domains::Domains, crate::settings::domains::DomainError> {
    use crate::settings::domains::{self, DomainError, Domains};
    let mut found = Domains::default();
    for entry in domains::parse(value)? {
        if !entry.default {
            found.others.push(entry.relative_to(dir));
            continue;
        }
        for (field, key, value) in entry.top_level() {
            // Issue 36: the top level's `tls` is still a table here.
            if field == "tls" && table.contains_key("tls") {
                return Err(DomainError::SetTwice { field, key: "tls" });
            }
            if table.contains_key(key) {
                return Err(DomainError::SetTwice { field, key });
            }
            table.insert(key.to_owned(), toml::Value::String(value));
        }
        found.default_host = Some(entry.host);
    }
    Ok(found)
}

/// The nearest known key to a mistyped one, if any is near.
fn closest<'a>(key: &str, known: impl Iterator<Item = &'a String>) -> Option<&'a String> {
    known
        .map(|k| (strsim::jaro_winkler(key, k), k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// The TOML value as the strings clap parses, if it has the type the
/// option takes: a boolean for a switch, an integer for a number, an array
/// (or one string) for a repeatable option, a string otherwise.
fn values_of(arg: &Arg, value: &toml::Value) -> Result<Vec<String>, String> {
    use toml::Value as V;
    let switch = matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse);
    let many = matches!(arg.get_action(), ArgAction::Append);
    match value {
        V::Boolean(b) if switch => Ok(vec![b.to_string()]),
        _ if switch => Err("expected a boolean (true or false)".into()),
        V::Integer(i) if is_integer(arg) => Ok(vec![i.to_string()]),
        _ if is_integer(arg) => Err("expected an integer".into()),
        // Issue 36: `hsts = true` or `hsts = 600`, read by its own parser.
        V::Boolean(b) if takes_bool_or_number(arg) => Ok(vec![b.to_string()]),
        V::Integer(i) if takes_bool_or_number(arg) => Ok(vec![i.to_string()]),
        V::String(s) => Ok(vec![s.clone()]),
        V::Array(items) if many => items
            .iter()
            .map(|i| match i {
                V::String(s) => Ok(s.clone()),
                _ => Err("expected an array of strings".to_owned()),
            })
            .collect(),
        _ if many => Err("expected a string or an array of strings".into()),
        _ => Err("expected a string".into()),
    }
}

/// An option whose value is `true`, `false` or a number (`--hsts`).
fn takes_bool_or_number(arg: &Arg) -> bool {
    arg.get_value_names()
        .is_some_and(|n| n.len() == 1 && n[0] == crate::cli::HSTS_VALUE_NAME)
}

pub fn is_integer(arg: &Arg) -> bool {
    let t = arg.get_value_parser().type_id();
    [
        ValueParser::new(RangedU64ValueParser::<u64>::new()),
        ValueParser::new(RangedU64ValueParser::<usize>::new()),
        ValueParser::new(RangedU64ValueParser::<u32>::new()),
        ValueParser::new(RangedI64ValueParser::<u16>::new()),
        ValueParser::new(RangedI64ValueParser::<i64>::new()),
    ]
    .iter()
    .any(|p| p.type_id() == t)
}

/// A relative path in the file is relative to the file's directory, so a
/// command run from anywhere opens the same database. `-` (standard
/// output) is not a path.
fn relative_to(arg: &Arg, dir: &Path, value: String) -> String {
    let is_path = matches!(
        arg.get_value_hint(),
        ValueHint::AnyPath | ValueHint::FilePath | ValueHint::DirPath
    );
    if !is_path || value == "-" || value.is_empty() || Path::new(&value).is_absolute() {
        return value;
    }
    dir.join(&value).display().to_string()
}

/// Runs the option's own value parser, so a refused value is reported with
/// the file's name now rather than as if it had been typed. The option is
/// copied alone into an empty command: its relations to others (`requires`,
/// `conflicts_with`) are for the command line, and the environment must not
/// answer for it.
fn check(arg: &Arg, value: &str) -> Result<(), String> {
    if matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse) {
        return Ok(());
    }
    let mut alone = Arg::new(arg.get_id().clone())
        .long(arg.get_long().unwrap_or("value").to_owned())
        .value_parser(arg.get_value_parser().clone())
        .action(ArgAction::Set);
    if let Some(names) = arg.get_value_names() {
        alone = alone.value_names(names.to_vec());
    }
    Command::new("qrtag")
        .no_binary_name(true)
        .arg(alone)
        .try_get_matches_from([format!("--{}={value}", arg.get_long().unwrap_or("value"))])
        .map(|_| ())
        .map_err(|e| {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or_default().trim();
            first.strip_prefix("error: ").unwrap_or(first).to_owned()
        })
}

fn set_default(cmd: Command, path: &[String], id: &str, values: &[String]) -> Command {
    match path.split_first() {
        None => {
            let values = values.to_vec();
            cmd.mut_arg(id, move |a| a.default_values(values))
        }
        Some((first, rest)) => {
            cmd.mut_subcommand(first.as_str(), |sub| set_default(sub, rest, id, values))
        }
    }
}

/// The file's text with `key` set to the string `value`, everything else
/// (comments, order, spacing, a comment after the value) as it was, so an
/// operator's notes survive a command that changes a setting. A key the
/// text does not set is added at the end of its top level.
pub fn with_string(text: &str, key: &str, value: &str) -> Result<String, toml_edit::TomlError> {
    let mut doc: toml_edit::DocumentMut = text.parse()?;
    match doc.get_mut(key).and_then(toml_edit::Item::as_value_mut) {
        Some(old) => {
            let decor = old.decor().clone();
            *old = toml_edit::Value::from(value);
            *old.decor_mut() = decor;
        }
        None => doc[key] = toml_edit::value(value),
    }
    Ok(doc.to_string())
}

/// The line (from 1) of the text that sets top-level `key`, for a message
/// telling someone which line to change.
pub fn line_of(text: &str, key: &str) -> Option<usize> {
    let doc = toml_edit::Document::parse(text).ok()?;
    let (k, _) = doc.as_table().get_key_value(key)?;
    let start = k.span()?.start;
    Some(text.get(..start)?.matches('\n').count() + 1)
}

/// The secrets (options whose values are never shown) the file holds.
pub fn secrets_in(config: &Config, cmd: &Command) -> Vec<String> {
    let known = keys(cmd);
    config
        .keys
        .keys()
        .filter(|k| {
            known
                .get(*k)
                .is_some_and(|sites| sites.iter().any(Site::is_secret))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct T {
        #[arg(long, global = true, env = "QRTAG_DB", default_value = "qrtag.db")]
        db: PathBuf,
        #[arg(long, global = true, env = "QRTAG_CONFIG")]
        config: Option<PathBuf>,
        #[command(subcommand)]
        cmd: Sub,
    }

    #[derive(Debug, clap::Subcommand)]
    enum Sub {
        Serve {
            #[arg(long, env = "QRTAG_WORKERS", default_value_t = 2)]
            workers: u64,
            #[arg(long, env = "QRTAG_CONSOLE")]
            console: bool,
            #[arg(
                long = "trusted-proxy",
                env = "QRTAG_TRUSTED_PROXIES",
                value_delimiter = ','
            )]
            trusted_proxies: Vec<std::net::IpAddr>,
            #[arg(long, env = "QRTAG_ACCESS_LOG", value_hint = ValueHint::FilePath, default_value = "access.log")]
            access_log: String,
        },
    }

    fn parse(toml: &str, argv: &[&str]) -> Result<T, String> {
        use clap::{CommandFactory, FromArgMatches};
        let (cmd, _) = apply_text(
            T::command(),
            Path::new("/etc/q/q.toml"),
            Path::new("/etc/q"),
            toml,
        )
        .map_err(|e| e.to_string())?;
        let m = cmd.try_get_matches_from(argv).map_err(|e| e.to_string())?;
        T::from_arg_matches(&m).map_err(|e| e.to_string())
    }

    #[test]
    fn keys_come_from_the_environment_variables() {
        use clap::CommandFactory;
        let k: Vec<String> = keys(&T::command()).into_keys().collect();
        assert_eq!(
            k,
            ["access_log", "console", "db", "trusted_proxies", "workers"]
        );
    }

    #[test]
    fn file_values_are_defaults_and_flags_win() {
        let t = parse(
            "db = 'links.db'\nworkers = 7\nconsole = true\ntrusted_proxies = ['10.0.0.1', '::1']\naccess_log = '-'",
            &["t", "serve"],
        )
        .expect("parses");
        assert_eq!(
            t.db,
            PathBuf::from("/etc/q/links.db"),
            "relative to the file"
        );
        let Sub::Serve {
            workers,
            console,
            trusted_proxies,
            access_log,
        } = t.cmd;
        assert_eq!((workers, console, access_log.as_str()), (7, true, "-"));
        assert_eq!(trusted_proxies.len(), 2);
        let t = parse(
            "db = '/srv/x.db'\nworkers = 7",
            &["t", "--db", "y.db", "serve", "--workers", "3"],
        )
        .expect("parses");
        assert_eq!(
            t.db,
            PathBuf::from("y.db"),
            "a flag stays relative to the working directory"
        );
        let Sub::Serve { workers, .. } = t.cmd;
        assert_eq!(workers, 3);
    }

    #[test]
    fn mistakes_name_the_file_and_the_key() {
        for (toml, said) in [
            (
                "dbb = 'x'",
                "/etc/q/q.toml: unknown key `dbb` (did you mean `db`?)",
            ),
            ("zzz = 1", "/etc/q/q.toml: unknown key `zzz`"),
            ("workers = '7'", "key `workers`: expected an integer"),
            ("workers = -1", "key `workers`: invalid value '-1'"),
            ("console = 'yes'", "key `console`: expected a boolean"),
            (
                "trusted_proxies = ['nope']",
                "key `trusted_proxies`: invalid value 'nope'",
            ),
            ("config = 'x'", "unknown key `config`"),
            ("db = ", "line 1: not valid TOML"),
        ] {
            let err = parse(toml, &["t", "serve"]).expect_err(toml);
            assert!(err.contains(said), "{toml}: {err}");
        }
    }

    #[test]
    fn locating() {
        let none = |_: &Path| false;
        let all = |_: &Path| true;
        let (f, looked) = locate(None, None, none).expect("ok");
        assert!(f.is_none());
        assert_eq!(
            looked,
            [PathBuf::from("qrtag.toml"), PathBuf::from(SYSTEM_FILE)]
        );
        let (f, _) = locate(None, None, |p: &Path| p.is_absolute()).expect("ok");
        assert_eq!(f, Some((PathBuf::from(SYSTEM_FILE), Found::Searched)));
        let err = locate(Some(OsStr::new("a.toml")), None, none).expect_err("missing");
        assert_eq!(
            err.to_string(),
            "the configuration file a.toml (named by --config) does not exist"
        );
        let err = locate(None, Some(OsStr::new("b.toml")), none).expect_err("missing");
        assert!(err.to_string().contains("(named by QRTAG_CONFIG)"), "{err}");
        let (f, _) = locate(Some(OsStr::new("a")), Some(OsStr::new("b")), all).expect("ok");
        assert_eq!(f, Some((PathBuf::from("a"), Found::Flag)));
    }

    #[test]
    fn the_flag_is_found_before_parsing() {
        let v = |a: &[&str]| flag_in(&a.iter().map(OsString::from).collect::<Vec<_>>());
        assert_eq!(
            v(&["q", "--config", "x.toml", "new"]),
            Some("x.toml".into())
        );
        assert_eq!(v(&["q", "new", "--config=y.toml"]), Some("y.toml".into()));
        assert_eq!(v(&["q", "new", "--", "--config=y.toml"]), None);
        assert_eq!(v(&["q", "new"]), None);
    }

    #[test]
    fn a_value_is_changed_and_the_rest_kept() {
        let text = "# qrtag\n\n# printed on every tag\npublic_url = 'https://a.example'  # keep\ndb = \"x.db\"\n";
        let changed = with_string(text, "public_url", "https://b.example").expect("edits");
        assert_eq!(
            changed,
            "# qrtag\n\n# printed on every tag\npublic_url = \"https://b.example\"  # keep\ndb = \"x.db\"\n"
        );
        assert_eq!(line_of(text, "public_url"), Some(4));
        assert_eq!(line_of(text, "db"), Some(5));
        assert_eq!(line_of(text, "listen"), None);
        let added = with_string("db = 'x.db'\n", "public_url", "https://b.example").expect("adds");
        assert_eq!(added, "db = 'x.db'\npublic_url = \"https://b.example\"\n");
        assert!(with_string("db = ", "public_url", "x").is_err());
    }
}

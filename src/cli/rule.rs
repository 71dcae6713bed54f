//! `qrtag rule add|list|remove|move` (issue 34): a link's smart-tag rules
//! edited from the command line. Every change is judged whole by the core
//! (`Rules::from_json`) and saved at the revision it was computed from, so
//! the list written is the list checked; bad input is one line, exit 2,
//! nothing saved.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::Value;

use super::Cli;
use super::rule_flags::Conditions;
use crate::link::rules::{Capabilities, Problem, RuleError, Rules};
use crate::link::{Document, Via};
use crate::links::{self, LinkError};
use crate::store::{self, LinkStore, StoreError};
use crate::values::link_key::LinkKey;
use crate::values::usage::UsageError;

#[derive(Debug, Subcommand)]
pub enum RuleCommand {
    /// Add a rule: scans whose every condition holds go to URL instead of
    /// the link's url (the first rule that holds answers).
    #[command(after_help = "Examples:\n  \
        qrtag rule add menu --os ios,ipados https://apps.apple.com/app/id1\n  \
        qrtag rule add menu --days mon-fri --hours 11:00-15:00 --tz Europe/Dublin https://example.com/lunch\n  \
        qrtag rule add gig --from '2026-12-01 09:00' --tz Europe/Dublin https://example.com/recap\n  \
        qrtag rule add promo --split 50-100 https://example.com/b\n  \
        qrtag rule add menu --lang en https://example.com/en --at 1")]
    Add(Box<AddArgs>),
    /// List a link's rules, numbered from 1 in the order they are tried.
    #[command(after_help = "Example:\n  qrtag rule list menu")]
    List {
        /// The link's key.
        key: LinkKey,
    },
    /// Remove rule N (as `rule list` numbers it).
    #[command(after_help = "Example:\n  qrtag rule remove menu 2")]
    Remove {
        /// The link's key.
        key: LinkKey,
        /// The rule's number, from 1.
        #[arg(value_parser = clap::value_parser!(u32).range(1..))]
        n: u32,
    },
    /// Move rule N to place M (the rules after it move down one).
    #[command(after_help = "Example:\n  qrtag rule move menu 3 --to 1")]
    Move {
        /// The link's key.
        key: LinkKey,
        /// The rule's number, from 1.
        #[arg(value_parser = clap::value_parser!(u32).range(1..))]
        n: u32,
        /// Its new number.
        #[arg(long, value_name = "M", value_parser = clap::value_parser!(u32).range(1..))]
        to: u32,
    },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The link's key.
    pub key: LinkKey,
    /// Where the scans this rule answers go: an absolute http(s) URL.
    pub url: String,
    #[command(flatten)]
    pub conditions: Conditions,
    /// Insert it as rule N (from 1) instead of last: rules are tried in
    /// order.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub at: Option<u32>,
    /// The GeoIP database the server has (MaxMind format): a --country
    /// rule is refused without one, since no scan could ever match it.
    #[arg(
        long,
        value_name = "FILE",
        env = "QRTAG_GEOIP_DB",
        value_hint = clap::ValueHint::FilePath,
        value_parser = super::parse_geoip_db
    )]
    pub geoip_db: Option<super::GeoIpDb>,
}

pub async fn run(cli: &Cli, command: &RuleCommand) -> anyhow::Result<ExitCode> {
    let access = match command {
        RuleCommand::List { .. } => store::Access::Read,
        _ => store::Access::Write,
    };
    // A flag in a shape no rule has is said before the store is opened.
    let added = match command {
        RuleCommand::Add(args) => Some(
            args.conditions
                .to_rule(&args.url, cli.time_zone, chrono::Utc::now())
                .map_err(|e| UsageError(e.to_string()))?,
        ),
        _ => None,
    };
    let store = cli.open_store(access)?;
    let store = store.as_ref();
    let mut out = std::io::stdout().lock();
    match command {
        RuleCommand::List { key } => {
            let doc = links::get(store, key).await?;
            let rules = stored_rules(key, &doc)?;
            for line in lines(&rules, &doc) {
                writeln!(out, "{line}")?;
            }
        }
        RuleCommand::Add(args) => {
            let rule = added.unwrap_or(Value::Null);
            let caps = Capabilities {
                geoip: args.geoip_db.is_some(),
            };
            let key = &args.key;
            let (rules, index) = save(cli, store, key, |list| {
                let at = match args.at {
                    None => list.len(),
                    Some(n) => place(n, list.len() + 1, "--at")?,
                };
                // The new rule alone with what this service can answer (a
                // country rule needs a GeoIP database); the list whole as
                // stored ones are read, so a country rule saved where a
                // database was given does not block other edits.
                Rules::from_json(&Value::Array(vec![rule.clone()]), &caps)
                    .map_err(|e| said(&e, Some(0)))?;
                list.insert(at, rule.clone());
                Ok(at)
            })
            .await?;
            let url = rules
                .url(index)
                .map(ToString::to_string)
                .unwrap_or_default();
            let conditions = rules.conditions(index).unwrap_or_default();
            writeln!(out, "{key}: rule {}: {conditions} -> {url}", index + 1)?;
            if let Some(note) = rules.url(index).and_then(|d| d.lowered_note()) {
                eprintln!("qrtag: note: {note}");
            }
            super::links::warn_broken_chain(store, cli, key).await;
        }
        RuleCommand::Remove { key, n } => {
            let (_, removed) = save(cli, store, key, |list| {
                let i = place(*n, list.len(), "rule")?;
                Ok(list.remove(i))
            })
            .await?;
            let url = removed.get("url").and_then(Value::as_str).unwrap_or("-");
            writeln!(out, "{key}: rule {n} removed (it sent scans to {url})")?;
        }
        RuleCommand::Move { key, n, to } => {
            save(cli, store, key, |list| {
                let from = place(*n, list.len(), "rule")?;
                let to = place(*to, list.len(), "--to")?;
                let rule = list.remove(from);
                list.insert(to, rule);
                Ok(())
            })
            .await?;
            writeln!(out, "{key}: rule {n} is now rule {to}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Rule number `n` (from 1) as an index, when the list has `len` places
/// (`what` is `rule` for an existing rule, else the flag).
fn place(n: u32, len: usize, what: &str) -> anyhow::Result<usize> {
    let i = usize::try_from(n).unwrap_or(usize::MAX);
    if (1..=len).contains(&i) {
        return Ok(i - 1);
    }
    Err(UsageError(match (what, len) {
        ("rule", 0) => format!("no rule {n}: the link has no rules"),
        ("rule", 1) => format!("no rule {n}: the link has 1 rule"),
        ("rule", _) => format!("no rule {n}: the link has {len} rules"),
        (_, 1) => format!("{what} {n}: the only place is 1"),
        _ => format!("{what} {n}: give 1 to {len}"),
    })
    .into())
}

/// Reads the link, lets `edit` change its list of rules (as stored JSON),
/// judges the list whole, refuses a rule at the link's own short URL, and
/// writes it at the revision read; a write meanwhile reads and edits again.
async fn save<T>(
    cli: &Cli,
    store: &dyn LinkStore,
    key: &LinkKey,
    edit: impl Fn(&mut Vec<Value>) -> anyhow::Result<T>,
) -> anyhow::Result<(Rules, T)> {
    const ATTEMPTS: usize = 8;
    for _ in 0..ATTEMPTS {
        let Some(stored) = store.get(key).await? else {
            return Err(LinkError::NotFound(key.clone()).into());
        };
        if let Some(e) = links::deleted(key, &stored.doc) {
            return Err(e.into());
        }
        // The list as stored must be one before it is edited: a hand edit
        // that broke it is said, not built on.
        stored_rules(key, &stored.doc)?;
        let mut list = match stored.doc.get("rules") {
            Some(Value::Array(items)) => items.clone(),
            _ => Vec::new(),
        };
        let result = edit(&mut list)?;
        let rules = Rules::from_json(&Value::Array(list), &Capabilities { geoip: true })
            .map_err(|e| said(&e, None))?;
        refuse_loops(cli, store, key, &rules).await?;
        match links::update_at(
            store,
            &crate::cli::author::author(Via::Cli),
            key,
            &stored.rev,
            |d| rules.write_to(d),
        )
        .await
        {
            Ok(_) => return Ok((rules, result)),
            Err(LinkError::Store(StoreError::Conflict(_))) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(LinkError::TooManyConflicts(key.to_string()).into())
}

/// A rule at the link's own short URL, on any public URL the links are
/// known by, would send its scans back to it for ever: refused as a
/// looping `--fallback` is.
async fn refuse_loops(
    cli: &Cli,
    store: &dyn LinkStore,
    key: &LinkKey,
    rules: &Rules,
) -> anyhow::Result<()> {
    for public_url in super::public_url::known(cli, store).await? {
        rules
            .check_loops(key.as_str(), public_url.origin())
            .map_err(|e| {
                let text = e.to_string();
                let why = text.strip_prefix(&format!("{}: ", e.path)).unwrap_or(&text);
                let n = e
                    .path
                    .trim_start_matches("rules[")
                    .split(']')
                    .next()
                    .and_then(|i| i.parse::<usize>().ok())
                    .map_or(0, |i| i + 1);
                UsageError(format!("rule {n}: {why}"))
            })?;
    }
    Ok(())
}

/// A link's rules as stored; a list that does not parse (a hand edit) is a
/// failure naming the field.
pub fn stored_rules(key: &LinkKey, doc: &Document) -> anyhow::Result<Rules> {
    Rules::from_stored(doc).map_err(|e| anyhow::anyhow!("{key} has invalid rules: {e}"))
}

/// `rule list`'s lines: `N. CONDITIONS -> URL`, then `otherwise -> URL`.
pub fn lines(rules: &Rules, doc: &Document) -> Vec<String> {
    let url = doc.get("url").and_then(Value::as_str).unwrap_or("-");
    if rules.is_empty() {
        return vec![format!("no rules: every scan gets {url}")];
    }
    let mut lines: Vec<String> = (0..rules.len())
        .map(|i| {
            format!(
                "{}. {} -> {}",
                i + 1,
                rules.conditions(i).unwrap_or_default(),
                rules.url(i).map(ToString::to_string).unwrap_or_default()
            )
        })
        .collect();
    lines.push(format!("otherwise -> {url}"));
    lines
}

/// A `RuleError` in the command line's words: the new rule's field by its
/// flag (`--hours: ...`, `URL: ...`), another rule's by its number.
fn said(e: &RuleError, new: Option<usize>) -> anyhow::Error {
    let problem = &e.problem;
    let Some(rest) = e.path.strip_prefix("rules[") else {
        return UsageError(e.to_string()).into();
    };
    let (index, field) = match rest.split_once(']') {
        Some((i, field)) => (i.parse::<usize>().ok(), field.trim_start_matches('.')),
        None => (None, ""),
    };
    let field = field.split('[').next().unwrap_or_default();
    let text = match (index, new) {
        (Some(i), Some(n)) if i == n => match field {
            "" => format!("{problem}"),
            "country" if *problem == Problem::NoGeoip => format!(
                "--country: {problem}: give --geoip-db FILE (geoip_db in the configuration, \
                 QRTAG_GEOIP_DB), the database serve reads"
            ),
            "url" => format!("URL: {problem}"),
            f => format!("--{f}: {problem}"),
        },
        (Some(i), _) if field.is_empty() => format!("rule {}: {problem}", i + 1),
        (Some(i), _) => format!("rule {}: {field}: {problem}", i + 1),
        _ => e.to_string(),
    };
    UsageError(text).into()
}

// --- `qrtag show` and `qrtag list` (issue 34) ---

/// What `qrtag show` says of a link's rules on standard error (its
/// standard output stays the document, for scripts): the rules in order,
/// what a scan with no particular facts gets now, and the next scheduled
/// change. Nothing for a link without rules.
pub fn show_lines(
    key: &LinkKey,
    doc: &Document,
    now: chrono::DateTime<chrono::Utc>,
    tz: chrono_tz::Tz,
) -> Vec<String> {
    if crate::link::is_tombstone(doc) {
        return Vec::new();
    }
    let rules = match Rules::from_stored(doc) {
        Ok(rules) if rules.is_empty() => return Vec::new(),
        Ok(rules) => rules,
        Err(e) => return vec![format!("invalid rules (scans get the url): {e}")],
    };
    let mut out = vec![format!("rules, tried in order (qrtag rule list {key}):")];
    out.extend(lines(&rules, doc).into_iter().map(|l| format!("  {l}")));
    let mut scan = super::try_scan::Scan::without_facts();
    let scan = scan.for_link(key.as_str());
    let ms = now.timestamp_millis();
    let url = doc.get("url").and_then(Value::as_str).unwrap_or("-");
    let (dest, which) = match rules
        .choose(scan, ms)
        .and_then(|i| Some((rules.url(i)?, i)))
    {
        Some((d, i)) => (d.to_string(), format!("rule {}", i + 1)),
        None => (url.to_owned(), "the url".to_owned()),
    };
    out.push(format!(
        "now, a scan with no User-Agent, language, country or cookie: {dest} ({which})"
    ));
    let next = rules.next_change(scan, ms);
    out.push(super::try_scan::next_line(next, &rules, doc, tz));
    out
}

/// `qrtag list`'s mark after the state of a link with rules: `, 3 rules`
/// (`list | grep rules` finds them; the columns stay as scripts read them).
pub fn list_mark(doc: &Document) -> String {
    if crate::link::is_tombstone(doc) {
        return String::new();
    }
    match doc.get("rules").and_then(Value::as_array).map(Vec::len) {
        Some(1) => ", 1 rule".to_owned(),
        Some(n) if n > 1 => format!(", {n} rules"),
        _ => String::new(),
    }
}

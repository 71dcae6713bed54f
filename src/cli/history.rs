//! `qrtag history KEY` and `qrtag revert KEY --to N` (issue 35): a link's
//! kept entries as a table a person reads (or JSON lines for a script),
//! and one step back, which is itself an entry.

use std::io::Write;
use std::process::ExitCode;

use serde_json::Value;

use super::{Cli, Command};
use crate::link::Via;
use crate::link::history::{Change, Entry, Field, History, KEEP, Kind};
use crate::links::history::{RevertFailed, read, revert};
use crate::store;
use crate::values::usage::UsageError;

pub async fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match &cli.command {
        Command::History { key, json } => {
            let store = cli.open_store(store::Access::Read)?;
            let history = read(store.as_ref(), key).await?;
            if *json {
                for entry in &history.entries {
                    writeln!(out, "{}", serde_json::to_string(entry)?)?;
                }
            } else {
                write!(out, "{}", table(&history, cli.time_zone))?;
            }
        }
        Command::Revert { key, to } => {
            let store = cli.open_store(store::Access::Write)?;
            let author = super::author::author(Via::Cli);
            match revert(store.as_ref(), &author, key, *to, None).await {
                Ok(done) if done.fields.is_empty() => {
                    writeln!(out, "{key} is already as it was after entry {to}")?
                }
                Ok(done) => {
                    let names: Vec<&str> = done.fields.iter().map(|f| f.as_str()).collect();
                    writeln!(
                        out,
                        "{key} reverted to how it was after entry {to} ({})",
                        names.join(", ")
                    )?
                }
                Err(RevertFailed::Revert(e)) => return Err(UsageError(e.to_string()).into()),
                Err(RevertFailed::Link(e)) => return Err(e.into()),
            }
        }
        _ => unreachable!("only history and revert are sent here"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The history as a table: one line an entry, oldest first, after a line
/// that says how many were dropped past the bound.
pub fn table(history: &History, tz: chrono_tz::Tz) -> String {
    let mut s = String::new();
    if history.entries.is_empty() {
        s.push_str("no history kept for this link (written before qrtag kept history)\n");
        return s;
    }
    if history.dropped() > 0 {
        s.push_str(&format!(
            "{} older entries dropped (the last {KEEP} are kept)\n",
            history.dropped()
        ));
    }
    let rows: Vec<[String; 5]> = history.entries.iter().map(|e| row(e, tz)).collect();
    let head = ["N", "WHEN", "WHO", "VIA", "CHANGES"].map(String::from);
    let mut widths = [0usize; 4];
    for r in std::iter::once(&head).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for r in std::iter::once(&head).chain(&rows) {
        s.push_str(&format!(
            "{:>w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}\n",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
        ));
    }
    s
}

fn row(e: &Entry, tz: chrono_tz::Tz) -> [String; 5] {
    let when = crate::link::parse_expires(&e.at)
        .map(|t| crate::values::expiry::show(t, tz))
        .unwrap_or_else(|_| e.at.clone());
    let what = match (e.kind, e.reverted_to) {
        (Kind::Create, _) => "created: ".to_owned(),
        (Kind::Delete, _) => "deleted: ".to_owned(),
        (Kind::Edit, Some(n)) => format!("reverted to #{n}: "),
        (Kind::Edit, None) => String::new(),
    };
    let changes: Vec<String> = e.changes.iter().map(change).collect();
    [
        e.n.to_string(),
        when,
        e.actor.to_string(),
        e.via.map_or("-", Via::as_str).to_owned(),
        format!("{what}{}", changes.join("; ")),
    ]
}

/// `url: A → B`; a field set where it was absent reads `url: → B`.
pub fn change(c: &Change) -> String {
    let show = |v: &Option<Value>| match v {
        None => "(none)".to_owned(),
        Some(v) => value(c.field, v),
    };
    format!(
        "{}: {} → {}",
        c.field.as_str(),
        show(&c.before),
        show(&c.after)
    )
}

/// A value as a person reads it: text unquoted, rules counted.
fn value(field: Field, v: &Value) -> String {
    match (field, v) {
        (Field::Rules, Value::Array(rules)) => match rules.len() {
            1 => "1 rule".to_owned(),
            n => format!("{n} rules"),
        },
        (_, Value::String(s)) => s.clone(),
        (_, other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::history::entry;
    use crate::link::{Author, stamp_changed, stamp_created};
    use crate::values::actor::Actor;
    use serde_json::json;

    #[test]
    fn a_table_reads_who_when_via_and_what() {
        let t = |s| crate::link::parse_expires(s).expect("time");
        let mut d = json!({"url": "https://a.example/", "inactive": false})
            .as_object()
            .cloned()
            .unwrap_or_default();
        stamp_created(
            &mut d,
            t("2026-03-01T09:00:00Z"),
            &Author::cli(Via::Cli, "root", "box"),
        );
        let first = entry(1, None, &d, Some("1"), "x").expect("entry");
        let before = d.clone();
        d.insert("url".into(), json!("https://b.example/"));
        d.insert("rules".into(), json!([{"url": "/x", "os": ["ios"]}]));
        let ann = Author::new(Via::Console, Actor::Console { user: "ann".into() });
        stamp_changed(&mut d, t("2026-03-02T10:30:00Z"), &ann);
        let second = entry(2, Some(&before), &d, Some("2"), "x").expect("entry");
        let text = table(
            &History {
                entries: vec![first, second],
            },
            chrono_tz::Europe::Dublin,
        );
        assert_eq!(
            text,
            "N  WHEN                  WHO             VIA      CHANGES\n\
             1  2026-03-01 09:00 GMT  cli (root@box)  cli      created: url: (none) → https://a.example/; inactive: (none) → false\n\
             2  2026-03-02 10:30 GMT  ann (console)   console  url: https://a.example/ → https://b.example/; rules: (none) → 1 rule\n"
        );
        assert!(table(&History::default(), chrono_tz::UTC).starts_with("no history"));
    }
}

//! The link commands: `new`, `set`, `disable`, `enable`, `delete`, `show`, `list`.

use std::io::Write;
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::{Cli, Command};
use crate::link::Via;
use crate::link::{self, Link};
use crate::links;
use crate::links::chain;
use crate::store;
use crate::values::expiry::Expiry;
use crate::values::link_key::LinkKey;
use crate::values::usage::UsageError;

pub async fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let access = match &cli.command {
        Command::New { .. } => store::Access::Write,
        Command::Show { .. } | Command::List { .. } => store::Access::Read,
        _ => store::Access::Write,
    };
    let tz = cli.time_zone;
    // Said before the store is opened: a past expiry is a mistake in the
    // command, not a failure of the store.
    let expiry = match &cli.command {
        Command::New { expires, force, .. } | Command::Set { expires, force, .. } => {
            future_expiry(*expires, *force, tz)?
        }
        _ => None,
    };
    if let Command::Delete { key, yes: false } = &cli.command {
        confirm_delete(key)?;
    }
    // Issue 36: `--domain`'s store ([`Cli::open_store`]).
    let store = cli.open_store(access)?;
    let store = store.as_ref();
    let mut out = std::io::stdout().lock();
    match &cli.command {
        Command::New {
            url,
            key,
            inactive,
            take_over,
            notes,
            fallback,
            title,
            ..
        } => {
            let public_url = super::public_url::for_tags(cli, store, true).await?;
            if let Some(key) = key {
                refuse_looping_fallback(cli, store, key.as_str(), fallback.as_ref()).await?;
            }
            let mut doc = Link::new_document(url, *inactive);
            link::set_expires(&mut doc, expiry.flatten());
            if let Some(notes) = notes {
                link::set_notes(&mut doc, notes);
            }
            if let Some(fallback) = fallback {
                link::set_fallback_url(&mut doc, fallback.0.as_ref());
            }
            if let Some(title) = title {
                link::set_title(&mut doc, title);
            }
            let take_over = if *take_over {
                links::TakeOver::Allow
            } else {
                links::TakeOver::Refuse
            };
            let key = links::create_document_with(
                store,
                &crate::cli::author::author(Via::Cli),
                &doc,
                key.as_ref(),
                take_over,
            )
            .await
            .map_err(|e| match e {
                e @ links::LinkError::TakesOver { .. } => {
                    anyhow::anyhow!("{e} (--take-over creates it anyway)")
                }
                e => e.into(),
            })?;
            writeln!(out, "{}", public_url.short_url(key.as_str()))?;
            note_lowered(url);
            warn_broken_chain(store, cli, &key).await;
        }
        Command::Set {
            key,
            url,
            notes,
            title,
            enable,
            fallback,
            ..
        } => {
            refuse_looping_fallback(cli, store, key.as_str(), fallback.as_ref()).await?;
            let doc = links::update(store, &crate::cli::author::author(Via::Cli), key, |doc| {
                if let Some(url) = url {
                    link::set_url(doc, url);
                }
                if let Some(expires) = expiry {
                    link::set_expires(doc, expires);
                }
                if let Some(notes) = notes {
                    link::set_notes(doc, notes);
                }
                if let Some(fallback) = fallback {
                    link::set_fallback_url(doc, fallback.0.as_ref());
                }
                if let Some(title) = title {
                    link::set_title(doc, title);
                }
                if *enable {
                    link::set_inactive(doc, false);
                }
            })
            .await?;
            if let Some(url) = url {
                writeln!(out, "{}", repointed(key, url, &doc))?;
                note_lowered(url);
            }
            match expiry {
                Some(Some(t)) => writeln!(out, "{key} expires {}", t.to_rfc3339())?,
                Some(None) => writeln!(out, "{key} never expires")?,
                None => {}
            }
            match notes {
                Some(n) if n.is_empty() => writeln!(out, "{key} has no notes")?,
                Some(_) => writeln!(out, "{key} notes set")?,
                None => {}
            }
            match fallback {
                Some(super::FallbackArg(Some(f))) => {
                    writeln!(out, "{key} falls back to {f} while disabled or expired")?
                }
                Some(super::FallbackArg(None)) => writeln!(out, "{key} has no fallback")?,
                None => {}
            }
            match title {
                Some(t) if t.is_empty() => writeln!(out, "{key} has no title")?,
                Some(_) => writeln!(out, "{key} title set")?,
                None => {}
            }
            if *enable {
                writeln!(out, "{key} enabled")?;
            }
            warn_broken_chain(store, cli, key).await;
        }
        Command::Edit { key } => {
            super::edit::run(store, key).await?;
            warn_broken_chain(store, cli, key).await;
        }
        Command::Disable { key } => {
            links::set_inactive(store, &crate::cli::author::author(Via::Cli), key, true).await?;
            writeln!(out, "{key} disabled")?;
        }
        Command::Enable { key } => {
            links::set_inactive(store, &crate::cli::author::author(Via::Cli), key, false).await?;
            writeln!(out, "{key} enabled")?;
            warn_broken_chain(store, cli, key).await;
        }
        Command::Delete { key, .. } => {
            links::delete(store, &crate::cli::author::author(Via::Cli), key).await?;
            let scanned = match super::public_url::for_checks(cli, store).await {
                Some(url) => url.short_url(key.as_str()),
                None => format!("/{key}"),
            };
            writeln!(
                out,
                "deleted {key}: scans of {scanned} answer 404 from now on; \
                 the key is kept as a tombstone and never reused"
            )?;
        }
        Command::Show { key, .. } => {
            let doc = links::get(store, key).await?;
            let json = serde_json::to_string_pretty(&serde_json::Value::Object(doc.clone()))?;
            writeln!(out, "{json}")?;
            // Issue 34: stdout stays the document, for scripts.
            for line in super::rule::show_lines(key, &doc, chrono::Utc::now(), tz) {
                eprintln!("{line}");
            }
        }
        Command::Qr(_) | Command::Batch(_) => anyhow::bail!("internal error: not a link command"),
        Command::List { deleted, all, .. } => {
            let now = chrono::Utc::now();
            let mut links = store.list().await?;
            // Natural order: `table-2` before `table-10`, so `list | print -`
            // prints a numbered run in its numbers' order.
            links.sort_by(|a, b| crate::link::natural_order::cmp(&a.0, &b.0));
            for (key, doc) in links {
                let tombstone = link::is_tombstone(&doc);
                if tombstone && !(*deleted || *all) || !tombstone && *deleted {
                    continue;
                }
                let line = list_line(&key, &doc, now, tz);
                let mark = super::rule::list_mark(&doc);
                writeln!(out, "{line}{mark}{}", title_column(&doc))?;
            }
        }
        _ => {
            anyhow::bail!("internal error: not a link command")
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The `--expires` to write (`Some(None)` removes it), or a usage error for
/// a time already past unless `--force`.
fn future_expiry(
    expires: Option<Expiry>,
    force: bool,
    tz: Tz,
) -> anyhow::Result<Option<Option<DateTime<Utc>>>> {
    let Some(expires) = expires else {
        return Ok(None);
    };
    let time = expires.time(tz);
    if let Some(t) = time.filter(|_| !force) {
        crate::values::expiry::check_future(t, Utc::now(), tz)
            .map_err(|e| UsageError(format!("--expires {e}; give --force to set it anyway")))?;
    }
    Ok(Some(time))
}

/// What `set KEY URL` says: the new destination, and that scans still get
/// 404 when the link is inactive (a repoint does not enable it).
/// Says on stderr that a host written with capitals was stored in lower
/// case (stdout keeps its one line for scripts).
fn note_lowered(url: &crate::values::destination::Destination) {
    if let Some(note) = url.lowered_note() {
        eprintln!("qrtag: note: {note}");
    }
}

fn repointed(
    key: &LinkKey,
    url: &crate::values::destination::Destination,
    doc: &link::Document,
) -> String {
    match Link::from_document(doc) {
        Ok(l) if l.inactive => format!(
            "{key} -> {url} (inactive: scans answer 404 until qrtag enable {key}, or set --enable)"
        ),
        _ => format!("{key} -> {url}"),
    }
}

/// One line of `qrtag list`: key, destination and state, tab-separated;
/// the state's own spaces never hold a tab.
fn list_line(key: &str, doc: &link::Document, now: DateTime<Utc>, tz: Tz) -> String {
    let show = |t: DateTime<Utc>| crate::values::expiry::show(t, tz);
    if link::is_tombstone(doc) {
        let url = doc.get("url").and_then(|u| u.as_str()).unwrap_or("-");
        let when = link::deleted_at(doc).map(show).unwrap_or_default();
        return format!("{key}\t{url}\tdeleted {when}")
            .trim_end()
            .to_owned();
    }
    match Link::from_document(doc) {
        Ok(link) if link.is_live_at(now) => match link.expires {
            Some(t) => format!("{key}\t{}\tactive until {}", link.url, show(t)),
            None => format!("{key}\t{}\tactive", link.url),
        },
        Ok(link) if link.inactive => format!("{key}\t{}\tinactive", link.url),
        Ok(link) => {
            let when = link.expires.map(show).unwrap_or_default();
            format!("{key}\t{}\texpired {when}", link.url)
        }
        Err(e) => format!("{key}\t-\tinvalid: {e}"),
    }
}

/// The title as `list`'s fourth column, after a tab, when the link has one
/// (issue 33); a link without one keeps its three columns, as scripts
/// reading `list` expect. Control characters (a hand edit's tab or line
/// break) become spaces, so a title stays in its column and its line.
fn title_column(doc: &link::Document) -> String {
    link::title(doc).map_or_else(String::new, |t| {
        let one_line: String = t
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        format!("\t{one_line}")
    })
}

/// Deleting is for good (the key is never reused), so a person at a
/// terminal is asked; a script must say `--yes`, as there is nobody to ask.
fn confirm_delete(key: &LinkKey) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Err(UsageError(format!(
            "delete is for good and asks for confirmation at a terminal: \
             give --yes to delete {key} from a script"
        ))
        .into());
    }
    eprint!("Delete {key}? Its scans will answer 404, and the key is never used again. [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => anyhow::bail!("{key} not deleted"),
    }
}

/// The write is done either way; a chain of internal redirects the server
/// will refuse (a loop, too many hops) is said at once, naming its links.
pub(super) async fn warn_broken_chain(store: &dyn store::LinkStore, cli: &Cli, key: &LinkKey) {
    let origin = super::public_url::for_checks(cli, store).await;
    let origin = origin.as_ref().map_or("", |u| u.origin());
    match chain::check(store, origin, key).await {
        Ok(Some(broken)) => eprintln!("qrtag: warning: {}", broken.warning(key)),
        Ok(None) => {}
        Err(e) => eprintln!("qrtag: warning: could not check where {key} leads: {e}"),
    }
}

/// Issue 33: a `--fallback` at the link's own short URL (on a public URL
/// these links are known by) would send its scans back to it while it is
/// dead: refused with one line, exit 2, before anything is written.
async fn refuse_looping_fallback(
    cli: &Cli,
    store: &dyn store::LinkStore,
    key: &str,
    fallback: Option<&super::FallbackArg>,
) -> anyhow::Result<()> {
    let Some(super::FallbackArg(Some(fallback))) = fallback else {
        return Ok(());
    };
    for public_url in super::public_url::known(cli, store).await? {
        link::fallback_loop::check(fallback, key, public_url.origin())
            .map_err(|e| UsageError(format!("--fallback: {e}")))?;
    }
    Ok(())
}

//! The link commands: `new`, `set`, `disable`, `enable`, `show`, `list`.

use std::io::Write;
use std::process::ExitCode;

use super::{Cli, Command};
use crate::expiry::Expiry;
use crate::link::{self, Link};
use crate::link_chain;
use crate::link_key::LinkKey;
use crate::links;
use crate::store;

pub async fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let access = match &cli.command {
        Command::New { .. } => store::Access::Write,
        Command::Show { .. } | Command::List => store::Access::Read,
        _ => store::Access::Write,
    };
    let store = cli.open_store(access)?;
    let store = store.as_ref();
    let mut out = std::io::stdout().lock();
    match &cli.command {
        Command::New {
            url,
            key,
            inactive,
            expires,
        } => {
            let public_url = super::public_url::for_tags(cli, store, true).await?;
            let mut doc = Link::new_document(url, *inactive);
            link::set_expires(&mut doc, expires.and_then(Expiry::time));
            let key = links::create_document(store, &doc, key.as_ref()).await?;
            writeln!(out, "{}", public_url.short_url(key.as_str()))?;
            warn_broken_chain(store, cli, &key).await;
        }
        Command::Set {
            key,
            url,
            expires,
            notes,
        } => {
            links::update(store, key, |doc| {
                if let Some(url) = url {
                    link::set_url(doc, url);
                }
                if let Some(expires) = expires {
                    link::set_expires(doc, expires.time());
                }
                if let Some(notes) = notes {
                    link::set_notes(doc, notes);
                }
            })
            .await?;
            if let Some(url) = url {
                writeln!(out, "{key} -> {url}")?;
            }
            match expires {
                Some(Expiry::At(t)) => writeln!(out, "{key} expires {}", t.to_rfc3339())?,
                Some(Expiry::Never) => writeln!(out, "{key} never expires")?,
                None => {}
            }
            match notes {
                Some(n) if n.is_empty() => writeln!(out, "{key} has no notes")?,
                Some(_) => writeln!(out, "{key} notes set")?,
                None => {}
            }
            warn_broken_chain(store, cli, key).await;
        }
        Command::Edit { key } => {
            super::edit::run(store, key).await?;
            warn_broken_chain(store, cli, key).await;
        }
        Command::Disable { key } => {
            links::set_inactive(store, key, true).await?;
            writeln!(out, "{key} disabled")?;
        }
        Command::Enable { key } => {
            links::set_inactive(store, key, false).await?;
            writeln!(out, "{key} enabled")?;
            warn_broken_chain(store, cli, key).await;
        }
        Command::Show { key } => {
            let doc = links::get(store, key).await?;
            let json = serde_json::to_string_pretty(&serde_json::Value::Object(doc))?;
            writeln!(out, "{json}")?;
        }
        Command::Qr(_) | Command::Batch(_) => anyhow::bail!("internal error: not a link command"),
        Command::List => {
            let now = chrono::Utc::now();
            for (key, doc) in store.list().await? {
                let line = match Link::from_document(&doc) {
                    Ok(link) if link.is_live_at(now) => format!("{key}\t{}\tactive", link.url),
                    Ok(link) if link.inactive => format!("{key}\t{}\tinactive", link.url),
                    Ok(link) => format!("{key}\t{}\texpired", link.url),
                    Err(e) => format!("{key}\t-\tinvalid: {e}"),
                };
                writeln!(out, "{line}")?;
            }
        }
        _ => {
            anyhow::bail!("internal error: not a link command")
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The write is done either way; a chain of internal redirects the server
/// will refuse (a loop, too many hops) is said at once, naming its links.
async fn warn_broken_chain(store: &dyn store::LinkStore, cli: &Cli, key: &LinkKey) {
    let origin = super::public_url::for_checks(cli, store).await;
    let origin = origin.as_ref().map_or("", |u| u.origin());
    match link_chain::check(store, origin, key).await {
        Ok(Some(broken)) => eprintln!("qrtag: warning: {}", broken.warning(key)),
        Ok(None) => {}
        Err(e) => eprintln!("qrtag: warning: could not check where {key} leads: {e}"),
    }
}

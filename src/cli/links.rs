//! The link commands: `new`, `set`, `disable`, `enable`, `show`, `list`.

use std::io::Write;
use std::process::ExitCode;

use super::{Cli, Command};
use crate::link::Link;
use crate::link_chain;
use crate::link_key::LinkKey;
use crate::links;
use crate::store;

pub async fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let access = match &cli.command {
        Command::New { .. } => store::Access::Create,
        Command::Show { .. } | Command::List => store::Access::Read,
        _ => store::Access::Write,
    };
    let store = cli.open_store(access)?;
    let store = store.as_ref();
    let mut out = std::io::stdout().lock();
    match &cli.command {
        Command::New { url, key, inactive } => {
            let key = links::create(store, url, key.as_ref(), *inactive).await?;
            writeln!(out, "{}", cli.public_url.short_url(key.as_str()))?;
            warn_broken_chain(store, cli, &key).await;
        }
        Command::Set { key, url } => {
            links::set_url(store, key, url).await?;
            writeln!(out, "{key} -> {url}")?;
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
    match link_chain::check(store, cli.public_url.origin(), key).await {
        Ok(Some(broken)) => {
            eprintln!("qrtag: warning: scans of {key} will answer 404: {broken}");
        }
        Ok(None) => {}
        Err(e) => eprintln!("qrtag: warning: could not check where {key} leads: {e}"),
    }
}

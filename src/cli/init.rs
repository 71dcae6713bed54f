//! `qrtag init`: create the embedded database and record the public URL
//! with the links; the only command besides `serve` that creates one.

use std::io::Write;
use std::process::ExitCode;

use super::Cli;
use super::edge::UsageError;
use crate::settings::{PublicUrl, StoreSettings};
use crate::store::Access;

pub async fn run(cli: &Cli, force: bool) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let settings = cli.store.settings();
    let (store, said) = match &settings {
        StoreSettings::Sqlite { path } => {
            let existed = path.try_exists().unwrap_or(true);
            let store = cli.open_store(if existed {
                Access::Write
            } else {
                Access::Create
            })?;
            let state = if existed { "exists" } else { "created" };
            (store, format!("database {}: {state}", path.display()))
        }
        StoreSettings::CouchDb(couch) => {
            let store = cli.open_store(Access::Write)?;
            (
                store,
                format!("CouchDB database {} on {}: exists", couch.db, couch.url),
            )
        }
    };
    // Read first: with CouchDB this is what says whether the database exists.
    let recorded = match store.public_url().await? {
        Some(s) => Some(PublicUrl::parse(&s)?),
        None => None,
    };
    writeln!(out, "{said}")?;
    let given = cli.public_url.clone();
    match (recorded, given) {
        (None, None) => writeln!(
            out,
            "public URL: none recorded; to print tags, {}",
            cli.origin.how_to_set("public_url")
        )?,
        (Some(r), None) => writeln!(out, "public URL: {r} (recorded)")?,
        (Some(r), Some(g)) if r == g => writeln!(out, "public URL: {r} (recorded)")?,
        (recorded, Some(g)) => {
            let from = format!("from {}", cli.origin.source("public_url"));
            crate::recorded_url::printable(&g, &from, cli.allow_local_url)
                .map_err(|e| UsageError(e.to_string()))?;
            if let Some(r) = &recorded {
                if !force {
                    return Err(UsageError(format!(
                        "the links' recorded public URL is {r}, not {g} ({from}); pass --force to change it \
                         (tags printed with {r} stop working unless it still reaches this service)"
                    ))
                    .into());
                }
                eprintln!(
                    "qrtag: warning: tags printed with {r} stop working unless {r} still reaches this service"
                );
            }
            store.record_public_url(g.origin(), true).await?;
            match recorded {
                Some(r) => writeln!(out, "public URL: {g} (recorded; was {r})")?,
                None => writeln!(out, "public URL: {g} (recorded)")?,
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

//! `qrtag stats` at the command line: the links to count under, then the
//! counting ([`crate::stats`]).

use std::process::ExitCode;

use super::Cli;
use crate::stats::StatsArgs;
use crate::stats::attribute::LinkKeys;
use crate::store;

pub async fn run(cli: &Cli, args: &StatsArgs) -> anyhow::Result<ExitCode> {
    let links = links(cli).await?;
    let args = StatsArgs {
        time_zone: cli.time_zone,
        ..args.clone()
    };
    crate::stats::run_with_links(&args, links, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

/// The keys of the store's links, so that a path below a hierarchical key
/// counts under that key. Logs are often read where no database is (a
/// copy, another machine): a missing SQLite file is not an error, and
/// `Err` says what was not there.
async fn links(cli: &Cli) -> anyhow::Result<Result<LinkKeys, String>> {
    if cli.store.couchdb_url.is_none() && !cli.store.db.exists() {
        return Ok(Err(format!(
            "no link database at {}: ",
            cli.store.db.display()
        )));
    }
    let store = cli.open_store(store::Access::Read)?;
    Ok(Ok(store.keys().await?.into_iter().collect()))
}

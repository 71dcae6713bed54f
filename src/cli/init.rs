//! `qrtag init`: create the embedded database and record the public URL
//! with the links; the only command besides `serve` that creates one.

use std::io::Write;
use std::process::ExitCode;

use super::Cli;
use crate::store::Access;
use crate::store::options::StoreSettings;
use crate::values::public_url::PublicUrl;
use crate::values::usage::UsageError;

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
        (Some(r), Some(g)) if r == g => {
            writeln!(out, "public URL: {r} (recorded)")?;
            settle_configuration(cli, &g, &mut out)?;
        }
        (recorded, Some(g)) => {
            let from = format!("from {}", cli.origin.source("public_url"));
            crate::cli::recorded_url::printable(&g, &from, cli.allow_local_url)
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
            settle_configuration(cli, &g, &mut out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// After `url` became the recorded public URL: the configuration file in
/// force is changed to name it too (else the next command, and `serve`'s
/// next start, refuse the old one it names), and a `QRTAG_PUBLIC_URL`
/// naming another, which no command can change, is named with what to do.
fn settle_configuration(cli: &Cli, url: &PublicUrl, out: &mut impl Write) -> anyhow::Result<()> {
    let is_new = |s: &str| PublicUrl::parse(s).is_ok_and(|u| &u == url);
    if let Some((path, old)) =
        super::config_file::rewrite(&cli.origin, "public_url", url.origin(), is_new)?
    {
        writeln!(
            out,
            "configuration file {}: public_url = \"{url}\" (was {old})",
            path.display()
        )?;
    }
    if let Some(env) = std::env::var_os("QRTAG_PUBLIC_URL").filter(|v| !v.is_empty()) {
        let env = env.to_string_lossy();
        if !is_new(&env) {
            eprintln!(
                "qrtag: warning: QRTAG_PUBLIC_URL is {env}: set it to {url} or unset it, wherever \
                 it is set (shell profile, systemd unit, container), or commands and serve refuse to start"
            );
        }
    }
    Ok(())
}

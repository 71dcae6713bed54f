//! The public URL each command uses: the one recorded with the links, the
//! one given, or (for `serve` alone) its own listener's; decided by
//! [`crate::cli::recorded_url`], refused here with one line.

use anyhow::Context;

use super::Cli;
use crate::cli::recorded_url::{self, Choice, Given};
use crate::store::{LinkStore, StoreError};
use crate::values::public_url::PublicUrl;
use crate::values::usage::UsageError;

/// The public URL a command given on this command line, from any source.
fn given(cli: &Cli) -> Option<Given> {
    cli.public_url.clone().map(|url| Given {
        url,
        from: cli.origin.source("public_url"),
        on_command_line: cli.origin.typed("public_url"),
    })
}

/// The origin of the public URL recorded with the links, if one is and
/// it can be read.
pub(super) async fn recorded_origin(store: &dyn LinkStore) -> Option<String> {
    recorded(store)
        .await
        .ok()
        .flatten()
        .map(|u| u.origin().to_owned())
}

async fn recorded(store: &dyn LinkStore) -> anyhow::Result<Option<PublicUrl>> {
    match store.public_url().await? {
        None => Ok(None),
        Some(s) => PublicUrl::parse(&s)
            .map(Some)
            .context("the public URL recorded with the links"),
    }
}

/// The public URL to print or encode short URLs with, checked before
/// anything is written: the recorded one (or a one-off `--public-url`);
/// with none recorded, the one given, which `record` then records. Refuses
/// a local origin without `--allow-local-url`.
pub async fn for_tags(cli: &Cli, store: &dyn LinkStore, record: bool) -> anyhow::Result<PublicUrl> {
    // Issue 36: another domain's tags are on its configured public URL.
    if let Some((_, url)) = cli.other_domain(cli.domain.as_ref())? {
        return Ok(url);
    }
    let recorded = recorded(store).await?;
    let choice = recorded_url::choose(recorded.clone(), given(cli))
        .map_err(|e| UsageError(e.to_string()))?;
    let Choice::Use {
        url,
        record: first,
        one_off,
    } = choice
    else {
        return Err(UsageError(format!(
            "no public URL to print short URLs with: {}",
            cli.origin.how_to_set("public_url")
        ))
        .into());
    };
    let from = match (&recorded, one_off || first) {
        (Some(_), false) => "recorded with the links".to_owned(),
        _ => format!("from {}", cli.origin.source("public_url")),
    };
    recorded_url::printable(&url, &from, cli.allow_local_url)
        .map_err(|e| UsageError(e.to_string()))?;
    if let (true, Some(recorded)) = (one_off, &recorded) {
        eprintln!(
            "qrtag: note: printing with {url} from --public-url this once; the links' recorded public URL is {recorded}"
        );
    }
    if first && record {
        match store.record_public_url(url.origin(), false).await {
            // CouchDB keeps it where only an admin writes: an editor's
            // first tags are printed all the same, and told so.
            Err(StoreError::Refused {
                status: 401 | 403,
                detail,
            }) => eprintln!("qrtag: warning: {url} is not recorded with the links: {detail}"),
            other => {
                other?;
            }
        }
    }
    Ok(url)
}

/// The origin a link check compares absolute destinations with: the one
/// given, else the recorded one. Nothing is printed, so nothing is refused.
pub async fn for_checks(cli: &Cli, store: &dyn LinkStore) -> Option<PublicUrl> {
    if let Ok(Some((_, url))) = cli.other_domain(cli.domain.as_ref()) {
        return Some(url);
    }
    match &cli.public_url {
        Some(url) => Some(url.clone()),
        None => recorded(store).await.ok().flatten(),
    }
}

/// What `serve` answers with: the recorded public URL, or the one given
/// (a different one only from the command line); `None` leaves the server
/// to answer with its listener's address. Also returns whether to record
/// the one used once the server has created the store, and whether to
/// follow the recorded one while serving (not for a one-off).
pub async fn for_serve(cli: &Cli) -> anyhow::Result<(Option<PublicUrl>, bool, bool)> {
    let recorded = match stored(cli) {
        Some(store) => match recorded(store.as_ref()).await {
            Ok(url) => url,
            Err(e) => {
                eprintln!(
                    "qrtag: warning: cannot read the public URL recorded with the links: {e:#}"
                );
                None
            }
        },
        None => None,
    };
    match recorded_url::choose(recorded, given(cli)).map_err(|e| UsageError(e.to_string()))? {
        Choice::Nothing => Ok((None, false, true)),
        Choice::Use {
            url,
            record,
            one_off,
        } => {
            if one_off {
                eprintln!(
                    "qrtag: note: serving with {url} from --public-url, not the public URL recorded with the links"
                );
            }
            Ok((Some(url), record, !one_off))
        }
    }
}

/// The store, if it exists (`serve` creates it later, once it has bound its
/// ports).
fn stored(cli: &Cli) -> Option<std::sync::Arc<dyn LinkStore>> {
    cli.open_store(crate::store::Access::Read).ok()
}

/// Records the public URL `serve` used, the first time one is set.
pub async fn record_after_start(cli: &Cli, url: &PublicUrl) {
    let store = match cli.open_store(crate::store::Access::Write) {
        Ok(store) => store,
        Err(e) => {
            tracing::warn!(error = %format!("{e:#}"), "cannot record the public URL with the links");
            return;
        }
    };
    if let Err(e) = store.record_public_url(url.origin(), false).await {
        tracing::warn!(error = %e, "cannot record the public URL with the links");
    }
}

/// Issue 33: the public URLs these links' short URLs are on, the recorded
/// one and one given, for refusing a fallback that would loop back to its
/// own link; none is no error (nothing to loop through).
pub async fn known(cli: &Cli, store: &dyn LinkStore) -> anyhow::Result<Vec<PublicUrl>> {
    if let Some((_, url)) = cli.other_domain(cli.domain.as_ref())? {
        return Ok(vec![url]);
    }
    let mut urls: Vec<PublicUrl> = recorded(store).await?.into_iter().collect();
    urls.extend(given(cli).map(|g| g.url));
    Ok(urls)
}

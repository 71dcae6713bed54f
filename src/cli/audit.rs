//! `qrtag audit`: the audit log (issue 35) as JSON lines, oldest first, so
//! it reads and greps like any log; and who a command runs as, for the
//! entries the CLI's own actions leave.

use std::io::Write;
use std::process::ExitCode;

use chrono::{DateTime, Utc};

use super::Cli;
use crate::store::{Access, LinkStore};
use crate::values::audit::{AuditQuery, Event, Surface};

/// How many entries one read asks the store for.
const PAGE: usize = 1000;

#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// Only entries at or after this time: RFC 3339, or a date (UTC
    /// midnight).
    #[arg(long, value_name = "TIME", value_parser = crate::stats::args::parse_since)]
    pub since: Option<DateTime<Utc>>,
    /// Only the newest N entries (still printed oldest first).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
}

pub async fn run(cli: &Cli, args: &AuditArgs) -> anyhow::Result<ExitCode> {
    let store = cli.open_store(Access::Read)?;
    let wanted = args
        .limit
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    // Newest first a page at a time, then printed the other way round.
    let mut entries = Vec::new();
    let mut before = None;
    while entries.len() < wanted {
        let query = AuditQuery {
            since: args.since,
            before: before.take(),
            limit: PAGE.min(wanted - entries.len()),
        };
        let page = store.audit(&query).await?;
        let full = page.len() == query.limit;
        before = page.last().map(|e| e.id.clone());
        entries.extend(page);
        if !full {
            break;
        }
    }
    let mut out = std::io::stdout().lock();
    for entry in entries.iter().rev() {
        writeln!(out, "{}", entry.json_line())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Records what a command did (see [`crate::store::audit::record`]: a
/// store that refuses the entry leaves a warning, not a failed command).
pub async fn record(store: &dyn LinkStore, event: Event) {
    crate::store::audit::record(store, super::author::actor(), Surface::Cli, event).await;
}

//! `qrtag setup`: prepare the CouchDB database.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use clap::Args;

use crate::store::couch::setup::{self, DESIGN_ID, Requested, SetupReport};
use crate::store::options::{CouchSettings, StoreSettings};

#[derive(Debug, Clone, Args)]
pub struct SetupArgs {
    /// Copies of each document (CouchDB's n) when the database is created
    /// (by setup, or import --new-database): 3 on a cluster of three or
    /// more nodes. Default: the server's `[cluster] n`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=32))]
    pub replicas: Option<u32>,
    /// Shards the database is split into (CouchDB's q) when it is created.
    /// Default: the server's `[cluster] q`.
    #[arg(long, value_name = "Q", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub shards: Option<u32>,
}

pub async fn run(store: &StoreSettings, args: &SetupArgs) -> anyhow::Result<ExitCode> {
    let StoreSettings::CouchDb(couch) = store else {
        anyhow::bail!("setup prepares a CouchDB database: give --couchdb-url");
    };
    let report = setup::setup(couch, args.requested())
        .await
        .with_context(|| format!("setting up {} on {}", couch.db, couch.url))?;
    print_report(couch, &report, args)?;
    Ok(ExitCode::SUCCESS)
}

impl SetupArgs {
    pub fn requested(&self) -> Requested {
        Requested {
            n: self.replicas,
            q: self.shards,
        }
    }
}

/// What setup did, a line a part, on standard output; warnings about the
/// copies on standard error. `qrtag import --new-database` ends with it too.
pub fn print_report(
    couch: &CouchSettings,
    report: &SetupReport,
    args: &SetupArgs,
) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "database {}: {}", couch.db, report.database)?;
    if let Some(p) = report.placement {
        let nodes = report
            .cluster_nodes
            .map(|c| format!(" on a cluster of {c} node{}", if c == 1 { "" } else { "s" }))
            .unwrap_or_default();
        writeln!(
            out,
            "database {}: n = {} (copies of each link), q = {} (shards){nodes}",
            couch.db, p.n, p.q
        )?;
        let fewer = setup::fewer_copies_than_asked(
            couch.db.as_str(),
            args.replicas,
            p,
            report.cluster_nodes,
        );
        if let Some(warning) = fewer.or_else(|| {
            report
                .cluster_nodes
                .and_then(|c| setup::placement_warning(p, c))
        }) {
            eprintln!("qrtag: warning: {warning}");
        }
    } else if args.replicas.is_some() || args.shards.is_some() {
        eprintln!(
            "qrtag: warning: this server reports no copies or shards (not a CouchDB cluster?): \
             --replicas and --shards had no effect"
        );
    }
    writeln!(
        out,
        "{DESIGN_ID} (validation, links view): {}",
        report.design
    )?;
    if let Some(url) = &report.public_url_moved {
        writeln!(
            out,
            "{DESIGN_ID} (public URL): {url}, moved from _local/qrtag-service, which any member \
             could write: check that it is the origin your tags are printed with"
        )?;
    }
    writeln!(
        out,
        "_security (members: roles {}): {}",
        setup::LINK_ROLES.join(", "),
        report.security
    )?;
    let keys = &report.keys;
    writeln!(out, "database {} (API keys): {}", keys.name, keys.database)?;
    writeln!(
        out,
        "{}/{DESIGN_ID} (API key validation): {}",
        keys.name, keys.design
    )?;
    writeln!(
        out,
        "{}/_security (members: roles {}): {}",
        keys.name,
        setup::KEY_ROLES.join(", "),
        keys.security
    )?;
    // Issue 35: the audit log's database.
    let audit = &report.audit;
    writeln!(
        out,
        "database {} (audit log): {}",
        audit.name, audit.database
    )?;
    writeln!(
        out,
        "{}/{DESIGN_ID} (audit log validation, append-only): {}",
        audit.name, audit.design
    )?;
    writeln!(
        out,
        "{}/_security (members: roles {}): {}",
        audit.name,
        crate::store::couch::setup::AUDIT_ROLES.join(", "),
        audit.security
    )?;
    // Issue 35: the links' history database.
    let history = &report.history;
    writeln!(
        out,
        "database {} (link history): {}",
        history.name, history.database
    )?;
    writeln!(
        out,
        "{}/{DESIGN_ID} (link history validation, append-only): {}",
        history.name, history.design
    )?;
    writeln!(
        out,
        "{}/_security (members: roles {}): {}",
        history.name,
        crate::store::couch::setup::AUDIT_ROLES.join(", "),
        history.security
    )?;
    // Issue 35: an API key's user's role, readable by the keys' members.
    match &report.users {
        setup::UsersReport::Done(outcome) => writeln!(
            out,
            "_users (public fields name, roles; members: roles {}): {outcome}",
            setup::KEY_ROLES.join(", ")
        ),
        setup::UsersReport::Skipped(why) => writeln!(
            out,
            "_users: not opened, {why}: an API key's user is not checked (its scope alone decides)"
        ),
    }
}

//! `qrtag setup-clickhouse`: the schema of `crate::clickhouse` made or
//! upgraded on a server, what it did said a line a part.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use crate::clickhouse::schema::{ClusterName, Layout};
use crate::clickhouse::setup::{self, SetupReport};
use crate::clickhouse::{ClickHouseUrl, Client};
use crate::values::usage::UsageError;

#[derive(Debug, Clone, Args)]
pub struct SetupClickhouseArgs {
    /// The ClickHouse server and database:
    /// clickhouse://[USER[:PASSWORD]@]HOST[:PORT][/DATABASE] (HTTP, port
    /// 8123; clickhouses:// for HTTPS, 8443; http(s):// as written). The
    /// database defaults to `qrtag`.
    #[arg(long, value_name = "URL", env = "QRTAG_CLICKHOUSE")]
    pub clickhouse: ClickHouseUrl,
    /// Keep scans this many days (a table TTL). Needs ClickHouse 19.6 or
    /// later; on an older server the tables are made without it, and
    /// setup says so.
    #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(1..))]
    pub retention_days: Option<u32>,
    /// Make the schema on every node of this cluster (as the servers'
    /// `remote_servers` name it; ZooKeeper and each node's `shard` and
    /// `replica` macros configured): `Replicated*` tables behind
    /// `Distributed` ones, each statement `ON CLUSTER`. Without it, on the
    /// one server the URL names.
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<ClusterName>,
}

/// The host a command's ClickHouse rows are of (schema version 3): the
/// global `--domain`, else the default domain's (the configuration's
/// default `[[domains]]` host, else the public URL's), else none.
pub async fn domain_host(cli: &super::Cli) -> String {
    let configured = cli
        .domain
        .as_ref()
        .or(cli.origin.config.domains.default_host.as_ref())
        .map(|h| h.as_str());
    // As `serve` does: the public URL given, else the one recorded with
    // the links (read only when no host is configured).
    let origin = match (configured, &cli.public_url) {
        (Some(_), _) => None,
        (None, Some(url)) => Some(url.origin().to_owned()),
        (None, None) => match cli.open_store(crate::store::Access::Read) {
            Ok(store) => super::public_url::recorded_origin(store.as_ref()).await,
            Err(_) => None,
        },
    };
    crate::clickhouse::row::rows_host(configured, origin.as_deref())
}

pub async fn run(cli: &super::Cli, args: &SetupClickhouseArgs) -> anyhow::Result<ExitCode> {
    // An upgrade refills the aggregates a month at a time, which takes
    // minutes at a hundred million rows: wait for it (a server that cannot
    // be reached is still told within the connect timeout).
    let client = Client::new(args.clickhouse.clone(), Duration::from_secs(3600));
    let layout = match &args.cluster {
        Some(name) => Layout::Cluster(name.clone()),
        None => Layout::Single,
    };
    let report = match setup::setup(
        &client,
        args.retention_days,
        &layout,
        &domain_host(cli).await,
    )
    .await
    {
        Ok(r) => r,
        Err(e) if e.is_usage() => return Err(UsageError(e.to_string()).into()),
        Err(e) => return Err(e.into()),
    };
    print_report(&args.clickhouse, &layout, &report);
    Ok(ExitCode::SUCCESS)
}

fn print_report(url: &ClickHouseUrl, layout: &Layout, r: &SetupReport) {
    println!(
        "ClickHouse {} at {} ({})",
        r.release,
        url,
        layout.describe()
    );
    match r.before {
        None => println!("schema version {}: created", r.after),
        Some(v) if v == r.after => println!("schema version {}: already current", r.after),
        Some(v) => println!("schema version {}: upgraded from {v}", r.after),
    }
    if r.busy_days > 0 {
        println!(
            "{} rolled-up day{} kept again with their busy links' own counts",
            r.busy_days,
            if r.busy_days == 1 { "" } else { "s" }
        );
    }
    if r.retention_unsupported {
        eprintln!(
            "qrtag: warning: --retention-days needs table TTL, ClickHouse 19.6 or later; \
             this server ({}) keeps scans until they are deleted",
            r.release
        );
    }
}

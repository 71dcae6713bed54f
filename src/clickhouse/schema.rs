//! The schema qrtag owns in ClickHouse (pure: statements and checks, no
//! I/O), written for ClickHouse 18.16, the oldest release qrtag supports.
//!
//! Exactly once without a unique key: ClickHouse has none, so a row sent
//! twice (a retry after a timeout, a back-fill over lines the sink sent)
//! is stored twice until a merge. `scans` is a `ReplacingMergeTree` keyed
//! by the line's identity (node, log, offset), so merges keep one copy and
//! `FINAL` reads one; `link_days` keeps its counts as `uniqExact` states
//! over that identity (`cityHash64(node, log_id, line_offset)`), which a
//! duplicate cannot change, so the per-link-per-day numbers are exact at
//! once, before any merge, with no `FINAL` (read with `uniqExactMerge`
//! and, for the filtered ones, `uniqExactIfMerge`: 18.16 types an `-If`
//! state apart from the plain one). The price: a day's state holds
//! 8 bytes per scan (and each distinct scanner), so `link_days` grows with
//! the scans rather than staying one row a link and day as a
//! `SummingMergeTree` would; a `SummingMergeTree` would count every
//! duplicate the materialized view sees before the replacing merge.
//!
//! On a cluster ([`Layout::Cluster`], issue 38) the same two tables are
//! `Distributed` ones over `scans_local` and `link_days_local`, which are
//! `Replicated*` and made `ON CLUSTER` (so ZooKeeper is needed, as for any
//! replicated ClickHouse). Rows are spread by the line's identity hash, so
//! a row sent twice lands on the shard that holds the first, where the
//! replacing merge and the `uniqExact` states see both; the materialized
//! view runs on each shard over what that shard receives, and the
//! `Distributed` `link_days` merges the shards' states when read. Loading
//! and reading name `scans` and `link_days` either way, so nothing past
//! setup knows which layout it talks to. `schema_version` is replicated
//! to every node of the cluster (one ZooKeeper path, not one a shard), so
//! any node answers the version.
//!
//! Not used, because 18.16 lacks or fences them: `LowCardinality` (behind
//! `allow_experimental_low_cardinality_type`), `DateTime64` (20.1), table
//! `TTL` (19.6: emitted only by [`ttl_clause`] for a server that has it).

/// The version this build creates and understands. Version 2 added
/// `heads` and `not_found` to `link_days`, so a link's page reads every
/// number it shows from the per-day aggregate instead of the link's rows
/// of `scans`, which is ordered by line identity, not by link.
pub const VERSION: u32 = 2;

/// Columns of `scans`, in order, as `system.columns` reports them.
pub const SCANS_COLUMNS: &[(&str, &str)] = &[
    ("node", "String"),
    ("log_id", "UInt64"),
    ("line_offset", "UInt64"),
    ("time", "DateTime"),
    ("tenths", "UInt8"),
    ("day", "Date"),
    ("client_ip", "String"),
    ("tracking", "String"),
    ("user_agent", "String"),
    ("target", "String"),
    ("status", "UInt16"),
    ("location", "String"),
    ("fallback", "UInt8"),
    ("method", "String"),
    ("referer", "String"),
    ("link", "String"),
    ("scan", "UInt8"),
    ("fallback_scan", "UInt8"),
    ("bot", "UInt8"),
    ("device", "String"),
    ("os", "String"),
    ("browser", "String"),
    ("country", "String"),
    ("region", "String"),
    ("city", "String"),
    ("referrer_host", "String"),
];

pub const LINK_DAYS_COLUMNS: &[(&str, &str)] = &[
    ("link", "String"),
    ("day", "Date"),
    ("requests", "AggregateFunction(uniqExact, UInt64)"),
    ("scans", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
    ("fallback", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
    ("bots", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
    ("scanners", "AggregateFunction(uniqExactIf, String, UInt8)"),
    ("heads", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
    ("not_found", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
];

/// `link_days`' columns in version 1: all but the last [`ADDED_IN_2`].
pub const LINK_DAYS_V1_COLUMNS: &[(&str, &str)] = &[
    ("link", "String"),
    ("day", "Date"),
    ("requests", "AggregateFunction(uniqExact, UInt64)"),
    ("scans", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
    ("fallback", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
    ("bots", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
    ("scanners", "AggregateFunction(uniqExactIf, String, UInt8)"),
];

/// How many of `link_days`' last columns version 2 added.
pub const ADDED_IN_2: usize = 2;

pub const VERSION_COLUMNS: &[(&str, &str)] = &[("version", "UInt32"), ("applied", "DateTime")];

/// The tables qrtag owns, with the columns each must have.
pub const TABLES: &[(&str, &[(&str, &str)])] = &[
    ("schema_version", VERSION_COLUMNS),
    ("scans", SCANS_COLUMNS),
    ("link_days", LINK_DAYS_COLUMNS),
    ("scans_local", SCANS_COLUMNS),
    ("link_days_local", LINK_DAYS_COLUMNS),
];

/// One server, or a cluster named in the servers' `remote_servers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    Single,
    Cluster(ClusterName),
}

/// A cluster's name as `remote_servers` spells it: an identifier, since it
/// is written into statements unquoted (`ON CLUSTER name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterName(String);

impl ClusterName {
    pub fn parse(text: &str) -> Result<ClusterName, String> {
        let mut chars = text.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if first_ok && text.len() <= 64 && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            Ok(ClusterName(text.to_owned()))
        } else {
            Err(format!(
                "{text:?} is not a cluster name: letters, digits and _, not starting with a digit"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for ClusterName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ClusterName::parse(s)
    }
}

impl Layout {
    /// The engine `system.tables` reports for `scans` in this layout: what
    /// tells a single server's database from a cluster's.
    pub fn scans_engine(&self) -> &'static str {
        match self {
            Layout::Single => "ReplacingMergeTree",
            Layout::Cluster(_) => "Distributed",
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Layout::Single => "one server".to_owned(),
            Layout::Cluster(c) => format!("cluster {}", c.as_str()),
        }
    }
}

/// The oldest release whose SQL the schema needs (`uniqExact` states,
/// `ReplacingMergeTree` with a partition expression, `MATERIALIZED VIEW … TO`).
pub const OLDEST_RELEASE: (u32, u32) = (18, 16);
/// The release that brought table `TTL`.
pub const TTL_RELEASE: (u32, u32) = (19, 6);

fn columns(cols: &[(&str, &str)]) -> String {
    cols.iter()
        .map(|(n, t)| format!("{n} {t}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The statements that create version [`VERSION`] in `db` (each safe to run
/// again), the database first.
pub fn create_statements(
    db: &str,
    ttl_days: Option<u32>,
    release: (u32, u32),
    layout: &Layout,
) -> Vec<String> {
    match layout {
        Layout::Single => single_statements(db, ttl_days, release),
        Layout::Cluster(c) => cluster_statements(db, ttl_days, release, c.as_str()),
    }
}

/// `link_days`' states of `scans` rows, in its column order.
const LINK_DAYS_STATES: &str = "link, day, \
     uniqExactState(cityHash64(node, log_id, line_offset)) AS requests, \
     uniqExactIfState(cityHash64(node, log_id, line_offset), scan = 1) AS scans, \
     uniqExactIfState(cityHash64(node, log_id, line_offset), fallback_scan = 1) AS fallback, \
     uniqExactIfState(cityHash64(node, log_id, line_offset), bot = 1) AS bots, \
     uniqExactIfState(tracking, scan = 1 AND tracking != '') AS scanners, \
     uniqExactIfState(cityHash64(node, log_id, line_offset), method = 'HEAD') AS heads, \
     uniqExactIfState(cityHash64(node, log_id, line_offset), status = 404) AS not_found";

/// `link_days`' materialized view reading `source` into `target`.
fn link_days_view(db: &str, on_cluster: &str, target: &str, source: &str) -> String {
    format!(
        "CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.link_days_mv{on_cluster} TO {db}.{target} AS SELECT \
         {LINK_DAYS_STATES} FROM {db}.{source} GROUP BY link, day"
    )
}

/// The steps from version 1 that come before [`create_statements`]: the
/// view dropped (it is made again reading the new columns) and the
/// columns `link_days` lacks added (18.16 has no `ADD COLUMN IF NOT
/// EXISTS`, so `missing` names those the server reported absent).
pub fn upgrade_from_1(db: &str, layout: &Layout, missing: &[&str]) -> Vec<String> {
    let (on, tables): (String, &[&str]) = match layout {
        Layout::Single => (String::new(), &["link_days"]),
        Layout::Cluster(c) => (
            format!(" ON CLUSTER {}", c.as_str()),
            &["link_days_local", "link_days"],
        ),
    };
    let mut out = vec![format!("DROP TABLE IF EXISTS {db}.link_days_mv{on}")];
    let adds: Vec<String> = LINK_DAYS_COLUMNS
        .iter()
        .filter(|(n, _)| missing.contains(n))
        .map(|(n, t)| format!("ADD COLUMN {n} {t}"))
        .collect();
    if !adds.is_empty() {
        for table in tables {
            out.push(format!("ALTER TABLE {db}.{table}{on} {}", adds.join(", ")));
        }
    }
    out
}

/// After an upgrade, the states of every row already in `scans` for one
/// month (`YYYYMM`), added to `link_days` again: `uniqExact` states merge
/// by union, so the counts it had stay exact and the new columns fill in.
/// On a cluster into the node's `link_days_local`, read from every shard:
/// the `Distributed` `link_days` merges states across shards the same way.
pub fn refill_month(db: &str, layout: &Layout, month: u32) -> String {
    let target = match layout {
        Layout::Single => "link_days",
        Layout::Cluster(_) => "link_days_local",
    };
    format!(
        "INSERT INTO {db}.{target} SELECT {LINK_DAYS_STATES} FROM {db}.scans \
         WHERE toYYYYMM(day) = {month} GROUP BY link, day"
    )
}

/// The cluster's statements, each `ON CLUSTER` so every node gets it. The
/// ZooKeeper paths use the servers' own `{shard}` and `{replica}` macros,
/// which each node's configuration defines, as ClickHouse's guide does.
fn cluster_statements(
    db: &str,
    ttl_days: Option<u32>,
    release: (u32, u32),
    cluster: &str,
) -> Vec<String> {
    let ttl = ttl_clause(ttl_days, release, "time");
    let day_ttl = ttl_clause(ttl_days, release, "toDateTime(day)");
    let on = format!(" ON CLUSTER {cluster}");
    vec![
        format!("CREATE DATABASE IF NOT EXISTS {db}{on}"),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.schema_version{on} ({}) ENGINE = \
             ReplicatedMergeTree('/clickhouse/qrtag/{db}/schema_version', '{{shard}}-{{replica}}') \
             ORDER BY version",
            columns(VERSION_COLUMNS)
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.scans_local{on} ({}) ENGINE = \
             ReplicatedReplacingMergeTree('/clickhouse/tables/{{shard}}/{db}/scans_local', '{{replica}}') \
             PARTITION BY toYYYYMM(day) ORDER BY (node, log_id, line_offset){ttl}",
            columns(SCANS_COLUMNS)
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.scans{on} ({}) ENGINE = \
             Distributed({cluster}, {db}, scans_local, cityHash64(node, log_id, line_offset))",
            columns(SCANS_COLUMNS)
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.link_days_local{on} ({}) ENGINE = \
             ReplicatedAggregatingMergeTree('/clickhouse/tables/{{shard}}/{db}/link_days_local', '{{replica}}') \
             PARTITION BY toYYYYMM(day) ORDER BY (link, day){day_ttl}",
            columns(LINK_DAYS_COLUMNS)
        ),
        link_days_view(db, &on, "link_days_local", "scans_local"),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.link_days{on} ({}) ENGINE = \
             Distributed({cluster}, {db}, link_days_local)",
            columns(LINK_DAYS_COLUMNS)
        ),
    ]
}

fn single_statements(db: &str, ttl_days: Option<u32>, release: (u32, u32)) -> Vec<String> {
    let ttl = ttl_clause(ttl_days, release, "time");
    let day_ttl = ttl_clause(ttl_days, release, "toDateTime(day)");
    vec![
        format!("CREATE DATABASE IF NOT EXISTS {db}"),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.schema_version ({}) ENGINE = MergeTree() ORDER BY version",
            columns(VERSION_COLUMNS)
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.scans ({}) ENGINE = ReplacingMergeTree() \
             PARTITION BY toYYYYMM(day) ORDER BY (node, log_id, line_offset){ttl}",
            columns(SCANS_COLUMNS)
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.link_days ({}) ENGINE = AggregatingMergeTree() \
             PARTITION BY toYYYYMM(day) ORDER BY (link, day){day_ttl}",
            columns(LINK_DAYS_COLUMNS)
        ),
        link_days_view(db, "", "link_days", "scans"),
    ]
}

/// ` TTL column + INTERVAL n DAY` for a server of `release` that has table
/// TTL, nothing otherwise (the caller says so).
pub fn ttl_clause(days: Option<u32>, release: (u32, u32), column: &str) -> String {
    match days {
        Some(d) if release >= TTL_RELEASE => format!(" TTL {column} + INTERVAL {d} DAY"),
        _ => String::new(),
    }
}

/// `version()`'s answer (`18.16.1`, `23.8.2.7`) as (major, minor).
pub fn parse_release(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// What is wrong with a table that exists: its columns against the ones
/// qrtag makes, named so the operator sees which.
pub fn check_columns(
    table: &str,
    found: &[(String, String)],
    want: &[(&str, &str)],
) -> Result<(), String> {
    for (name, ty) in want {
        match found.iter().find(|(n, _)| n == name) {
            None => return Err(format!("table {table} has no column {name} ({ty})")),
            Some((_, t)) if t != ty => {
                return Err(format!("table {table}: column {name} is {t}, not {ty}"));
            }
            Some(_) => {}
        }
    }
    if let Some((n, t)) = found
        .iter()
        .find(|(n, _)| !want.iter().any(|(w, _)| w == n))
    {
        return Err(format!(
            "table {table} has a column qrtag does not make: {n} ({t})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_only_where_the_release_has_it() {
        assert_eq!(ttl_clause(Some(30), (18, 16), "time"), "");
        assert_eq!(
            ttl_clause(Some(30), (19, 6), "time"),
            " TTL time + INTERVAL 30 DAY"
        );
        assert_eq!(ttl_clause(None, (23, 8), "time"), "");
        assert_eq!(parse_release("18.16.1\n"), Some((18, 16)));
        assert_eq!(parse_release("23.8.2.7"), Some((23, 8)));
        assert_eq!(parse_release("x"), None);
    }

    #[test]
    fn a_cluster_gets_every_statement_on_cluster_and_the_same_names_to_load_and_read() {
        let cluster = Layout::Cluster(ClusterName::parse("three").unwrap());
        let statements = create_statements("qt", Some(30), (19, 6), &cluster);
        assert!(statements.iter().all(|s| s.contains(" ON CLUSTER three")));
        let made: Vec<&str> = statements
            .iter()
            .filter_map(|s| s.split("IF NOT EXISTS ").nth(1)?.split(' ').next())
            .collect();
        assert_eq!(
            made,
            [
                "qt",
                "qt.schema_version",
                "qt.scans_local",
                "qt.scans",
                "qt.link_days_local",
                "qt.link_days_mv",
                "qt.link_days"
            ]
        );
        assert!(statements[3].contains(
            "Distributed(three, qt, scans_local, cityHash64(node, log_id, line_offset))"
        ));
        assert!(statements[2].contains("'/clickhouse/tables/{shard}/qt/scans_local', '{replica}'"));
        assert!(statements[2].ends_with(" TTL time + INTERVAL 30 DAY"));
        assert!(
            statements[5].contains("TO qt.link_days_local")
                && statements[5].ends_with("FROM qt.scans_local GROUP BY link, day")
        );
        let single = create_statements("qt", None, (18, 16), &Layout::Single);
        assert!(
            single
                .iter()
                .all(|s| !s.contains("ON CLUSTER") && !s.contains("_local"))
        );
    }

    #[test]
    fn version_2_adds_two_columns_to_link_days_and_fills_them_from_scans() {
        let n = LINK_DAYS_COLUMNS.len();
        assert_eq!(&LINK_DAYS_COLUMNS[..n - ADDED_IN_2], LINK_DAYS_V1_COLUMNS);
        let single = upgrade_from_1("qt", &Layout::Single, &["heads", "not_found"]);
        assert_eq!(
            single,
            [
                "DROP TABLE IF EXISTS qt.link_days_mv",
                "ALTER TABLE qt.link_days ADD COLUMN heads AggregateFunction(uniqExactIf, UInt64, UInt8), \
                 ADD COLUMN not_found AggregateFunction(uniqExactIf, UInt64, UInt8)"
            ]
        );
        assert_eq!(upgrade_from_1("qt", &Layout::Single, &[]).len(), 1);
        let cluster = Layout::Cluster(ClusterName::parse("three").unwrap());
        let steps = upgrade_from_1("qt", &cluster, &["not_found"]);
        assert_eq!(
            steps[0],
            "DROP TABLE IF EXISTS qt.link_days_mv ON CLUSTER three"
        );
        assert!(
            steps[1].starts_with(
                "ALTER TABLE qt.link_days_local ON CLUSTER three ADD COLUMN not_found"
            )
        );
        assert!(
            steps[2].starts_with("ALTER TABLE qt.link_days ON CLUSTER three ADD COLUMN not_found")
        );
        let refill = refill_month("qt", &cluster, 202611);
        assert!(refill.starts_with("INSERT INTO qt.link_days_local SELECT link, day,"));
        assert!(refill.ends_with("FROM qt.scans WHERE toYYYYMM(day) = 202611 GROUP BY link, day"));
        for (name, _) in LINK_DAYS_COLUMNS.iter().skip(2) {
            assert!(refill.contains(&format!(" AS {name}")), "{name}");
        }
    }

    #[test]
    fn a_cluster_name_is_an_identifier() {
        for good in ["three", "_c", "shard_3x"] {
            assert_eq!(ClusterName::parse(good).unwrap().as_str(), good);
        }
        for bad in ["", "3x", "a-b", "a b", "x;DROP", "é"] {
            assert!(ClusterName::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_table_made_by_hand_is_named_by_its_first_difference() {
        let own = |c: &[(&str, &str)]| -> Vec<(String, String)> {
            c.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            check_columns("scans", &own(SCANS_COLUMNS), SCANS_COLUMNS),
            Ok(())
        );
        let mut other = own(SCANS_COLUMNS);
        other[3].1 = "String".into();
        assert_eq!(
            check_columns("scans", &other, SCANS_COLUMNS).unwrap_err(),
            "table scans: column time is String, not DateTime"
        );
        other[3].1 = "DateTime".into();
        other.pop();
        assert!(
            check_columns("scans", &other, SCANS_COLUMNS)
                .unwrap_err()
                .contains("no column")
        );
        let mut more = own(VERSION_COLUMNS);
        more.push(("extra".into(), "UInt8".into()));
        assert!(
            check_columns("v", &more, VERSION_COLUMNS)
                .unwrap_err()
                .contains("extra")
        );
    }
}

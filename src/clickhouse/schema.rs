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
//! Version 3 (issue 38) keys both aggregates by `domain`, the host whose
//! access log a line is in, and adds `link_shares`: per domain, link and
//! day, the scans of each value of each breakdown (device, OS, browser,
//! places, referrer host, and the UTC quarter-hour the hour × weekday map
//! is drawn from in any time zone), as `uniqExact` states of the line
//! identity like `link_days`' (bots left out, a row sent twice counted
//! once). A link's breakdowns then cost its distinct values × days, not
//! its scans. `link_days` also keeps a day's first and last scan time
//! (`minIf`/`maxIf` of time × 10 + tenths), which `qrtag stats` prints.
//!
//! Version 4 adds `link_destinations`: per domain, link and day, the
//! scans (and fallback answers) sent to each `Location`, the link page's
//! "scans per destination" (issue 34), counted as `link_shares` counts;
//! and `day_totals` and `rolled_days`, each closed day's numbers merged
//! once by `rollup` as plain counts, so a read of many links' days costs
//! those days rather than their scans.
//!
//! Version 5 adds `window_totals` and `windows`: each period the
//! console shows, its closed days summed once a day per link by
//! `windows`, so ranking a period's busiest links reads a row a link, not
//! a row a link and day. Each is partitioned by the window's last day,
//! whose partition is dropped a few days on.
//!
//! Version 6 makes a very busy link's page cost its days, not its scans.
//! `link_scanners` keeps each link's and day's scanners as
//! `uniqCombined` states: exact (up to 32-bit hash collisions) until a
//! few thousand scanners, then a fixed-size HyperLogLog (about 0.5%
//! error), so a link's unique scanners of all time merge a bounded state
//! a day, as the scan index counts exactly up to a bound and estimates
//! past it. `link_counts` and `busy_days` hold, for each closed day a
//! link had at least `busy::BUSY` scans on, its numbers, breakdowns and
//! destinations as plain counts, which `rollup` writes with the day's
//! totals (`busy`).
//!
//! Not used, because 18.16 lacks or fences them: `LowCardinality` (behind
//! `allow_experimental_low_cardinality_type`), `DateTime64` (20.1), table
//! `TTL` (19.6: emitted only by [`ttl_clause`] for a server that has it).

/// The version this build creates and understands. Version 2 added
/// `heads` and `not_found` to `link_days`, so a link's page reads every
/// number it shows from the per-day aggregate instead of the link's rows
/// of `scans`, which is ordered by line identity, not by link. Version 3
/// added `domain` to `scans` and to the aggregates' keys, the first and
/// last scan to `link_days`, and `link_shares`. Version 4 added
/// `link_destinations`, and `day_totals` and `rolled_days`, which `rollup`
/// writes. Version 5 added `window_totals` and `windows`, which
/// `windows` writes. Version 6 added `link_scanners`, and `link_counts`
/// and `busy_days`, which `rollup` writes through `busy`.
pub const VERSION: u32 = 6;

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
    ("domain", "String"),
];

/// `scans`' columns before version 3: all but `domain`, the last.
pub fn scans_v2_columns() -> &'static [(&'static str, &'static str)] {
    &SCANS_COLUMNS[..SCANS_COLUMNS.len() - 1]
}

pub const LINK_DAYS_COLUMNS: &[(&str, &str)] = &[
    ("domain", "String"),
    ("link", "String"),
    ("day", "Date"),
    ("requests", "AggregateFunction(uniqExact, UInt64)"),
    ("scans", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
    ("fallback", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
    ("bots", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
    ("scanners", "AggregateFunction(uniqExactIf, String, UInt8)"),
    ("heads", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
    ("not_found", "AggregateFunction(uniqExactIf, UInt64, UInt8)"),
    ("first_scan", "AggregateFunction(minIf, UInt64, UInt8)"),
    ("last_scan", "AggregateFunction(maxIf, UInt64, UInt8)"),
];

/// `link_days`' columns in version 2: keyed by link and day only.
pub const LINK_DAYS_V2_COLUMNS: &[(&str, &str)] = &[
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

/// `link_shares`' columns (version 3): one row per domain, link, day,
/// dimension and value.
pub const LINK_SHARES_COLUMNS: &[(&str, &str)] = &[
    ("domain", "String"),
    ("link", "String"),
    ("day", "Date"),
    ("dimension", "String"),
    ("value", "String"),
    ("scans", "AggregateFunction(uniqExact, UInt64)"),
];

/// `link_destinations`' columns (version 4): one row per domain, link,
/// day, destination and whether it was the link's fallback.
pub const LINK_DESTINATIONS_COLUMNS: &[(&str, &str)] = &[
    ("domain", "String"),
    ("link", "String"),
    ("day", "Date"),
    ("location", "String"),
    ("fallback_scan", "UInt8"),
    ("scans", "AggregateFunction(uniqExact, UInt64)"),
];

/// `day_totals`' columns (version 4): a closed day's numbers merged once
/// by `rollup`, as plain counts: per link (`kind` = `link`, `value` the
/// key: scans and fallback answers) and per breakdown value (`kind` the
/// dimension: scans), each row with the time of the roll that wrote it.
pub const DAY_TOTALS_COLUMNS: &[(&str, &str)] = &[
    ("domain", "String"),
    ("day", "Date"),
    ("kind", "String"),
    ("value", "String"),
    ("scans", "UInt64"),
    ("fallback", "UInt64"),
    ("rolled", "DateTime"),
];

/// `rolled_days`' columns (version 4): each roll of a day, written after
/// its rows, with the day's scans and fallback answers.
pub const ROLLED_DAYS_COLUMNS: &[(&str, &str)] = &[
    ("domain", "String"),
    ("day", "Date"),
    ("rolled", "DateTime"),
    ("scans", "UInt64"),
    ("fallback", "UInt64"),
];

/// `window_totals`' columns (version 5): a period's closed days, `days`
/// of them ending `end`, summed per link from `day_totals` by the build
/// at `built`.
pub const WINDOW_TOTALS_COLUMNS: &[(&str, &str)] = &[
    ("domain", "String"),
    ("days", "UInt16"),
    ("end", "Date"),
    ("built", "DateTime"),
    ("link", "String"),
    ("scans", "UInt64"),
];

/// `link_scanners`' columns (version 6): one row per domain, link and
/// day, its scanners (scans with a tracking ID) as a `uniqCombined` state.
pub const LINK_SCANNERS_COLUMNS: &[(&str, &str)] = &[
    ("domain", "String"),
    ("link", "String"),
    ("day", "Date"),
    (
        "scanners",
        "AggregateFunction(uniqCombinedIf, String, UInt8)",
    ),
];

/// `link_counts`' columns (version 6): a busy link's closed day as plain
/// counts, written by a roll at `rolled`: `kind` is `total` (`value`
/// names the number), a breakdown's dimension (`value` its value), or
/// `to`/`to_fallback` (`value` the destination).
pub const LINK_COUNTS_COLUMNS: &[(&str, &str)] = &[
    ("domain", "String"),
    ("link", "String"),
    ("day", "Date"),
    ("kind", "String"),
    ("value", "String"),
    ("n", "UInt64"),
    ("rolled", "DateTime"),
];

/// `busy_days`' columns (version 6): a link's closed day whose
/// `link_counts` a roll wrote whole, written after them.
pub const BUSY_DAYS_COLUMNS: &[(&str, &str)] = &[
    ("domain", "String"),
    ("link", "String"),
    ("day", "Date"),
    ("rolled", "DateTime"),
];

/// `windows`' columns (version 5): each build of a window, written after
/// its rows, with how many links and scans they hold.
pub const WINDOWS_COLUMNS: &[(&str, &str)] = &[
    ("domain", "String"),
    ("days", "UInt16"),
    ("end", "Date"),
    ("built", "DateTime"),
    ("links", "UInt64"),
    ("scans", "UInt64"),
];

/// The `dimension` of `link_shares` rows whose value is the scan's UTC
/// quarter-hour of its day (0–95): every time zone's offset is a whole
/// number of quarter-hours, so the hour × weekday map of any zone is
/// drawn from these rows when read.
pub const QUARTER: &str = "quarter";

/// `link_days`' columns in version 1: version 2's but the last [`ADDED_IN_2`].
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

/// Whether `found` are the columns of an older version's `table` (or of
/// this one's, met before the version is recorded): what setup accepts
/// before it upgrades.
pub fn older_columns(table: &str, found: &[(String, String)]) -> bool {
    let variants: &[&[(&str, &str)]] = match table {
        "scans" | "scans_local" => &[SCANS_COLUMNS, scans_v2_columns()],
        "link_days" | "link_days_local" => &[
            LINK_DAYS_COLUMNS,
            LINK_DAYS_V2_COLUMNS,
            LINK_DAYS_V1_COLUMNS,
        ],
        _ => &[],
    };
    variants
        .iter()
        .any(|want| check_columns(table, found, want).is_ok())
}

pub const VERSION_COLUMNS: &[(&str, &str)] = &[("version", "UInt32"), ("applied", "DateTime")];

/// The tables qrtag owns, with the columns each must have.
pub const TABLES: &[(&str, &[(&str, &str)])] = &[
    ("schema_version", VERSION_COLUMNS),
    ("scans", SCANS_COLUMNS),
    ("link_days", LINK_DAYS_COLUMNS),
    ("scans_local", SCANS_COLUMNS),
    ("link_days_local", LINK_DAYS_COLUMNS),
    ("link_shares", LINK_SHARES_COLUMNS),
    ("link_shares_local", LINK_SHARES_COLUMNS),
    ("link_destinations", LINK_DESTINATIONS_COLUMNS),
    ("link_destinations_local", LINK_DESTINATIONS_COLUMNS),
    ("day_totals", DAY_TOTALS_COLUMNS),
    ("rolled_days", ROLLED_DAYS_COLUMNS),
    ("window_totals", WINDOW_TOTALS_COLUMNS),
    ("windows", WINDOWS_COLUMNS),
    ("link_scanners", LINK_SCANNERS_COLUMNS),
    ("link_scanners_local", LINK_SCANNERS_COLUMNS),
    ("link_counts", LINK_COUNTS_COLUMNS),
    ("busy_days", BUSY_DAYS_COLUMNS),
];

/// The tables `windows` writes, with their keys: plain `MergeTree`s, since
/// a build has rows of its own (`built` in the key) and old ends are
/// dropped whole, a partition a day.
const WINDOWS: [TableOf; 2] = [
    (
        "window_totals",
        WINDOW_TOTALS_COLUMNS,
        "domain, days, end, built, link",
    ),
    ("windows", WINDOWS_COLUMNS, "domain, days, end, built"),
];

/// A table's name, its columns and its sort key.
type TableOf = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

/// The tables `rollup` writes, each a `ReplacingMergeTree` on the roll's
/// time, with its key: a roll again replaces a day's rows.
const ROLLUPS: [TableOf; 4] = [
    ("day_totals", DAY_TOTALS_COLUMNS, "domain, day, kind, value"),
    ("rolled_days", ROLLED_DAYS_COLUMNS, "domain, day"),
    (
        "link_counts",
        LINK_COUNTS_COLUMNS,
        "domain, link, day, kind, value",
    ),
    ("busy_days", BUSY_DAYS_COLUMNS, "domain, link, day"),
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

/// An aggregate qrtag keeps of `scans`: a table its materialized view
/// fills with the states of each row (`uniqExact` over the line's
/// identity, so a row sent twice counts once), and that setup fills again
/// from `scans` after an upgrade that makes it.
struct Aggregate {
    name: &'static str,
    columns: &'static [(&'static str, &'static str)],
    /// Its key, which the states are grouped by.
    key: &'static str,
    /// The states of `scans` rows, in the table's column order.
    states: &'static str,
    /// Between `FROM scans` and the condition: an `ARRAY JOIN`, or nothing.
    join: &'static str,
    /// Which rows it counts.
    filter: Option<&'static str>,
    /// The schema version that made it (as it is now).
    since: u32,
}

const LINK_DAYS: Aggregate = Aggregate {
    name: "link_days",
    columns: LINK_DAYS_COLUMNS,
    key: "domain, link, day",
    states: "domain, link, day, \
     uniqExactState(cityHash64(node, log_id, line_offset)) AS requests, \
     uniqExactIfState(cityHash64(node, log_id, line_offset), scan = 1) AS scans, \
     uniqExactIfState(cityHash64(node, log_id, line_offset), fallback_scan = 1) AS fallback, \
     uniqExactIfState(cityHash64(node, log_id, line_offset), bot = 1) AS bots, \
     uniqExactIfState(tracking, scan = 1 AND tracking != '') AS scanners, \
     uniqExactIfState(cityHash64(node, log_id, line_offset), method = 'HEAD') AS heads, \
     uniqExactIfState(cityHash64(node, log_id, line_offset), status = 404) AS not_found, \
     minIfState(toUInt64(time) * 10 + tenths, scan = 1) AS first_scan, \
     maxIfState(toUInt64(time) * 10 + tenths, scan = 1) AS last_scan",
    join: "",
    filter: None,
    since: 3,
};

/// A scan row made into one row per dimension by `ARRAY JOIN`, bots
/// (never scans) and other requests left out.
const LINK_SHARES: Aggregate = Aggregate {
    name: "link_shares",
    columns: LINK_SHARES_COLUMNS,
    key: "domain, link, day, dimension, value",
    states: "domain, link, day, share.1 AS dimension, share.2 AS value, \
     uniqExactState(cityHash64(node, log_id, line_offset)) AS scans",
    join: "ARRAY JOIN [('device', device), ('os', os), \
     ('browser', browser), ('country', country), ('region', region), ('city', city), \
     ('referrer', referrer_host), \
     ('quarter', toString(intDiv(toUInt32(time) % 86400, 900)))] AS share",
    filter: Some("scan = 1"),
    since: 3,
};

/// The lines the scan index counts per destination: scans and fallback
/// answers with a `Location`.
const LINK_DESTINATIONS: Aggregate = Aggregate {
    name: "link_destinations",
    columns: LINK_DESTINATIONS_COLUMNS,
    key: "domain, link, day, location, fallback_scan",
    states: "domain, link, day, location, fallback_scan, \
     uniqExactState(cityHash64(node, log_id, line_offset)) AS scans",
    join: "",
    filter: Some("(scan = 1 OR fallback_scan = 1) AND location != ''"),
    since: 4,
};

/// Scanners in a state of bounded size, so merging a link's days costs
/// the days, not the scanners.
const LINK_SCANNERS: Aggregate = Aggregate {
    name: "link_scanners",
    columns: LINK_SCANNERS_COLUMNS,
    key: "domain, link, day",
    states: "domain, link, day, \
     uniqCombinedIfState(tracking, scan = 1 AND tracking != '') AS scanners",
    join: "",
    filter: None,
    since: 6,
};

const AGGREGATES: [&Aggregate; 4] = [&LINK_DAYS, &LINK_SHARES, &LINK_DESTINATIONS, &LINK_SCANNERS];

impl Aggregate {
    /// `SELECT … FROM {db}.{source} … GROUP BY …`, with `and` added to
    /// the condition.
    fn select(&self, db: &str, source: &str, and: Option<&str>) -> String {
        let join = if self.join.is_empty() {
            String::new()
        } else {
            format!(" {}", self.join)
        };
        let condition = match (self.filter, and) {
            (Some(f), Some(a)) => format!(" WHERE {f} AND {a}"),
            (Some(c), None) | (None, Some(c)) => format!(" WHERE {c}"),
            (None, None) => String::new(),
        };
        format!(
            "SELECT {} FROM {db}.{source}{join}{condition} GROUP BY {}",
            self.states, self.key
        )
    }

    /// Its materialized view reading `source` into `target`.
    fn view(&self, db: &str, on_cluster: &str, target: &str, source: &str) -> String {
        format!(
            "CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.{}_mv{on_cluster} TO {db}.{target} AS {}",
            self.name,
            self.select(db, source, None)
        )
    }

    /// `CREATE TABLE` of it with `engine` (the rest of the statement).
    fn table(&self, db: &str, name: &str, on_cluster: &str, engine: &str, day_ttl: &str) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.{name}{on_cluster} ({}) ENGINE = {engine} \
             PARTITION BY toYYYYMM(day) ORDER BY ({}){day_ttl}",
            columns(self.columns),
            self.key
        )
    }

    /// On one server: the table and its view.
    fn single(&self, db: &str, day_ttl: &str) -> [String; 2] {
        [
            self.table(db, self.name, "", "AggregatingMergeTree()", day_ttl),
            self.view(db, "", self.name, "scans"),
        ]
    }

    /// On a cluster: each node's replicated `_local` table and its view,
    /// and the `Distributed` table over them that reads merge.
    fn cluster(&self, db: &str, cluster: &str, day_ttl: &str) -> [String; 3] {
        let on = format!(" ON CLUSTER {cluster}");
        let local = format!("{}_local", self.name);
        [
            self.table(
                db,
                &local,
                &on,
                &format!(
                    "ReplicatedAggregatingMergeTree('/clickhouse/tables/{{shard}}/{db}/{local}', '{{replica}}')"
                ),
                day_ttl,
            ),
            self.view(db, &on, &local, "scans_local"),
            format!(
                "CREATE TABLE IF NOT EXISTS {db}.{}{on} ({}) ENGINE = Distributed({cluster}, {db}, {local})",
                self.name,
                columns(self.columns)
            ),
        ]
    }
}

/// What an upgrade from version 1 or 2 finds: whether `scans` has its
/// `domain` column already (an upgrade cut short, run again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub scans_has_domain: bool,
}

/// The steps from version 1 or 2 that come before [`create_statements`]:
/// the views dropped, `scans` given `domain` (its rows so far get
/// `domain`, the default domain's host, as the column's default), and
/// `link_days` dropped, since its key gains the domain and no `ALTER`
/// of 18.16 changes a key's leading column: [`refill_month`] makes it
/// again from `scans`, whose rows are the record it was made from.
///
/// On a cluster the `Distributed` `scans`, which holds no rows, is
/// dropped and made again rather than altered: 18.16 runs an `ALTER … ON
/// CLUSTER` of a table only where the cluster's `internal_replication`
/// matches the table's replication, and `scans_local` (replicated) needs
/// it set, which a plain `Distributed` table then refuses.
pub fn upgrade_to_3(db: &str, layout: &Layout, found: Found, domain: &str) -> Vec<String> {
    let (on, altered, dropped): (String, &str, &[&str]) = match layout {
        Layout::Single => (String::new(), "scans", &["link_days"]),
        Layout::Cluster(c) => (
            format!(" ON CLUSTER {}", c.as_str()),
            "scans_local",
            &["scans", "link_days", "link_days_local"],
        ),
    };
    let mut out = vec![
        format!("DROP TABLE IF EXISTS {db}.link_days_mv{on}"),
        format!("DROP TABLE IF EXISTS {db}.link_shares_mv{on}"),
    ];
    if !found.scans_has_domain {
        out.push(format!(
            "ALTER TABLE {db}.{altered}{on} ADD COLUMN domain String DEFAULT {}",
            super::sql::literal(domain)
        ));
    }
    for table in dropped {
        out.push(format!("DROP TABLE IF EXISTS {db}.{table}{on}"));
    }
    out
}

/// After an upgrade from version `before`, the states of every row
/// already in `scans` for one month (`YYYYMM`), added to each aggregate
/// made since: `uniqExact` states merge by union, so a row the views also
/// saw counts once. On a cluster into the node's `_local` tables, read
/// from every shard: the `Distributed` tables merge states across shards
/// the same way.
pub fn refill_month(db: &str, layout: &Layout, month: u32, before: u32) -> Vec<String> {
    let local = match layout {
        Layout::Single => "",
        Layout::Cluster(_) => "_local",
    };
    let month = format!("toYYYYMM(day) = {month}");
    AGGREGATES
        .iter()
        .filter(|a| a.since > before)
        .map(|a| {
            format!(
                "INSERT INTO {db}.{}{local} {}",
                a.name,
                a.select(db, "scans", Some(&month))
            )
        })
        .collect()
}

/// Whether an upgrade from `before` makes an aggregate [`refill_month`]
/// fills (from 4, only tables the roll-ups write are new).
pub fn refills_after(before: u32) -> bool {
    AGGREGATES.iter().any(|a| a.since > before)
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
    let mut out = vec![
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
    ];
    for aggregate in AGGREGATES {
        out.extend(aggregate.cluster(db, cluster, &day_ttl));
    }
    // Small, and read whole by every node: each node holds all of it, one
    // ZooKeeper path for the cluster, as `schema_version`.
    for (name, cols, key) in ROLLUPS {
        out.push(format!(
            "CREATE TABLE IF NOT EXISTS {db}.{name}{on} ({}) ENGINE = \
             ReplicatedReplacingMergeTree('/clickhouse/qrtag/{db}/{name}', '{{shard}}-{{replica}}', rolled) \
             PARTITION BY toYYYYMM(day) ORDER BY ({key}){day_ttl}",
            columns(cols)
        ));
    }
    for (name, cols, key) in WINDOWS {
        out.push(format!(
            "CREATE TABLE IF NOT EXISTS {db}.{name}{on} ({}) ENGINE = \
             ReplicatedMergeTree('/clickhouse/qrtag/{db}/{name}', '{{shard}}-{{replica}}') \
             PARTITION BY toYYYYMMDD(end) ORDER BY ({key})",
            columns(cols)
        ));
    }
    out
}

fn single_statements(db: &str, ttl_days: Option<u32>, release: (u32, u32)) -> Vec<String> {
    let ttl = ttl_clause(ttl_days, release, "time");
    let day_ttl = ttl_clause(ttl_days, release, "toDateTime(day)");
    let mut out = vec![
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
    ];
    for aggregate in AGGREGATES {
        out.extend(aggregate.single(db, &day_ttl));
    }
    for (name, cols, key) in ROLLUPS {
        out.push(format!(
            "CREATE TABLE IF NOT EXISTS {db}.{name} ({}) ENGINE = ReplacingMergeTree(rolled) \
             PARTITION BY toYYYYMM(day) ORDER BY ({key}){day_ttl}",
            columns(cols)
        ));
    }
    for (name, cols, key) in WINDOWS {
        out.push(format!(
            "CREATE TABLE IF NOT EXISTS {db}.{name} ({}) ENGINE = MergeTree() \
             PARTITION BY toYYYYMMDD(end) ORDER BY ({key})",
            columns(cols)
        ));
    }
    out
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
                "qt.link_days",
                "qt.link_shares_local",
                "qt.link_shares_mv",
                "qt.link_shares",
                "qt.link_destinations_local",
                "qt.link_destinations_mv",
                "qt.link_destinations",
                "qt.link_scanners_local",
                "qt.link_scanners_mv",
                "qt.link_scanners",
                "qt.day_totals",
                "qt.rolled_days",
                "qt.link_counts",
                "qt.busy_days",
                "qt.window_totals",
                "qt.windows"
            ]
        );
        assert!(statements[3].contains(
            "Distributed(three, qt, scans_local, cityHash64(node, log_id, line_offset))"
        ));
        assert!(statements[2].contains("'/clickhouse/tables/{shard}/qt/scans_local', '{replica}'"));
        assert!(statements[2].ends_with(" TTL time + INTERVAL 30 DAY"));
        assert!(
            statements[5].contains("TO qt.link_days_local")
                && statements[5].ends_with("FROM qt.scans_local GROUP BY domain, link, day")
        );
        let single = create_statements("qt", None, (18, 16), &Layout::Single);
        assert!(
            single
                .iter()
                .all(|s| !s.contains("ON CLUSTER") && !s.contains("_local"))
        );
    }

    #[test]
    fn version_3_adds_the_domain_remakes_link_days_and_fills_both_aggregates_from_scans() {
        let n = LINK_DAYS_V2_COLUMNS.len();
        assert_eq!(
            &LINK_DAYS_V2_COLUMNS[..n - ADDED_IN_2],
            LINK_DAYS_V1_COLUMNS
        );
        assert_eq!(&LINK_DAYS_COLUMNS[1..=n], LINK_DAYS_V2_COLUMNS);
        let fresh = Found {
            scans_has_domain: false,
        };
        let single = upgrade_to_3("qt", &Layout::Single, fresh, "x'.ie");
        assert_eq!(
            single,
            [
                "DROP TABLE IF EXISTS qt.link_days_mv",
                "DROP TABLE IF EXISTS qt.link_shares_mv",
                r"ALTER TABLE qt.scans ADD COLUMN domain String DEFAULT 'x\'.ie'",
                "DROP TABLE IF EXISTS qt.link_days",
            ]
        );
        let again = Found {
            scans_has_domain: true,
        };
        assert!(
            upgrade_to_3("qt", &Layout::Single, again, "x.ie")
                .iter()
                .all(|s| !s.contains("ALTER"))
        );
        let cluster = Layout::Cluster(ClusterName::parse("three").unwrap());
        let steps = upgrade_to_3("qt", &cluster, fresh, "x.ie");
        assert!(steps.iter().all(|s| s.ends_with(" ON CLUSTER three")
            || s.contains(" ON CLUSTER three ADD COLUMN domain")));
        assert!(steps.contains(
            &"ALTER TABLE qt.scans_local ON CLUSTER three ADD COLUMN domain String DEFAULT 'x.ie'"
                .to_owned()
        ));
        assert!(
            steps.contains(&"DROP TABLE IF EXISTS qt.link_days_local ON CLUSTER three".to_owned())
        );
        // The Distributed `scans` is made again, not altered.
        assert!(steps.contains(&"DROP TABLE IF EXISTS qt.scans ON CLUSTER three".to_owned()));
        assert_eq!(steps.iter().filter(|s| s.contains("ALTER")).count(), 1);
        let refill = refill_month("qt", &cluster, 202611, 2);
        let [days, shares, destinations, scanners] = &refill[..] else {
            panic!("four aggregates to fill: {refill:?}");
        };
        assert!(scanners.starts_with("INSERT INTO qt.link_scanners_local SELECT"));
        assert!(days.starts_with("INSERT INTO qt.link_days_local SELECT domain, link, day,"));
        assert!(
            days.ends_with("FROM qt.scans WHERE toYYYYMM(day) = 202611 GROUP BY domain, link, day")
        );
        for (name, _) in LINK_DAYS_COLUMNS.iter().skip(3) {
            assert!(days.contains(&format!(" AS {name}")), "{name}");
        }
        assert!(shares.starts_with("INSERT INTO qt.link_shares_local SELECT domain, link, day,"));
        assert!(shares.contains("WHERE scan = 1 AND toYYYYMM(day) = 202611 GROUP BY"));
        assert!(destinations.starts_with("INSERT INTO qt.link_destinations_local SELECT"));
        let refill = refill_month("qt", &Layout::Single, 202611, 1);
        assert!(refill[0].starts_with("INSERT INTO qt.link_days SELECT"));
    }

    #[test]
    fn versions_4_and_6_fill_their_aggregates_alone_from_scans() {
        let scanners = "INSERT INTO qt.link_scanners SELECT domain, link, day, \
             uniqCombinedIfState(tracking, scan = 1 AND tracking != '') AS scanners FROM qt.scans \
             WHERE toYYYYMM(day) = 202611 GROUP BY domain, link, day";
        let refill = refill_month("qt", &Layout::Single, 202611, 3);
        assert_eq!(
            refill,
            [
                "INSERT INTO qt.link_destinations SELECT domain, link, day, location, fallback_scan, \
                 uniqExactState(cityHash64(node, log_id, line_offset)) AS scans FROM qt.scans \
                 WHERE (scan = 1 OR fallback_scan = 1) AND location != '' AND toYYYYMM(day) = 202611 \
                 GROUP BY domain, link, day, location, fallback_scan",
                scanners
            ]
        );
        for before in [4, 5] {
            assert_eq!(
                refill_month("qt", &Layout::Single, 202611, before),
                [scanners]
            );
        }
        assert!(refill_month("qt", &Layout::Single, 202611, 6).is_empty());
        assert!(refills_after(5) && !refills_after(6));
        assert_eq!(
            refill_month(
                "qt",
                &Layout::Cluster(ClusterName::parse("c").unwrap()),
                202611,
                5
            ),
            [scanners.replace("INTO qt.link_scanners", "INTO qt.link_scanners_local")]
        );
        let single = create_statements("qt", None, (18, 16), &Layout::Single);
        assert!(single.contains(
            &"CREATE MATERIALIZED VIEW IF NOT EXISTS qt.link_destinations_mv TO qt.link_destinations AS \
              SELECT domain, link, day, location, fallback_scan, \
              uniqExactState(cityHash64(node, log_id, line_offset)) AS scans FROM qt.scans \
              WHERE (scan = 1 OR fallback_scan = 1) AND location != '' \
              GROUP BY domain, link, day, location, fallback_scan"
                .to_owned()
        ));
    }

    #[test]
    fn an_older_table_is_accepted_only_before_an_upgrade() {
        let own = |c: &[(&str, &str)]| -> Vec<(String, String)> {
            c.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert!(older_columns("scans", &own(scans_v2_columns())));
        assert!(older_columns("link_days_local", &own(LINK_DAYS_V1_COLUMNS)));
        assert!(older_columns("link_days", &own(LINK_DAYS_V2_COLUMNS)));
        assert!(!older_columns("link_days", &own(SCANS_COLUMNS)));
        assert!(!older_columns("link_shares", &own(LINK_SHARES_COLUMNS)));
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

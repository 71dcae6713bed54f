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
//! Not used, because 18.16 lacks or fences them: `LowCardinality` (behind
//! `allow_experimental_low_cardinality_type`), `DateTime64` (20.1), table
//! `TTL` (19.6: emitted only by [`ttl_clause`] for a server that has it).

/// The version this build creates and understands.
pub const VERSION: u32 = 1;

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
];

pub const VERSION_COLUMNS: &[(&str, &str)] = &[("version", "UInt32"), ("applied", "DateTime")];

/// The tables qrtag owns, with the columns each must have.
pub const TABLES: &[(&str, &[(&str, &str)])] = &[
    ("schema_version", VERSION_COLUMNS),
    ("scans", SCANS_COLUMNS),
    ("link_days", LINK_DAYS_COLUMNS),
];

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
pub fn create_statements(db: &str, ttl_days: Option<u32>, release: (u32, u32)) -> Vec<String> {
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
        format!(
            "CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.link_days_mv TO {db}.link_days AS SELECT \
             link, day, \
             uniqExactState(cityHash64(node, log_id, line_offset)) AS requests, \
             uniqExactIfState(cityHash64(node, log_id, line_offset), scan = 1) AS scans, \
             uniqExactIfState(cityHash64(node, log_id, line_offset), fallback_scan = 1) AS fallback, \
             uniqExactIfState(cityHash64(node, log_id, line_offset), bot = 1) AS bots, \
             uniqExactIfState(tracking, scan = 1 AND tracking != '') AS scanners \
             FROM {db}.scans GROUP BY link, day"
        ),
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

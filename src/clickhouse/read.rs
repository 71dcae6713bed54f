//! `serve --scans-from` (issue 38): the numbers the console and the REST
//! API show, read from ClickHouse instead of the embedded scan index, by
//! the same definitions. Every number comes from `link_days`, the
//! aggregate ClickHouse keeps per link and day (HEAD requests and 404s
//! since schema version 2), or from the plain counts rolled from it, so a
//! read costs its links' days, not the rows of `scans`, which is ordered
//! by line identity, not by link. A link's own page is `link_page`'s.
//!
//! Each query names its links in `PREWHERE`: the link columns are the
//! table's sort key, which ClickHouse does not move to `PREWHERE` itself,
//! and without it 18.16 decodes the `uniqExact` states of whole granules
//! around the link's rows (`benches/clickhouse_scale.rs`: 5–7 times
//! slower at 1M–20M rows). A query of all links names its days there
//! too, or every link's states of every day are decoded before the days
//! are picked (at 100M rows the dashboard's busiest links of today then
//! took past the page's 3 s).
//!
//! Which links a query reads is written in one place, [`links_where`]:
//! always one domain's (schema version 3 keys the aggregates by domain
//! first, so the same key on two domains is two links).

use chrono::NaiveDate;

use super::busy;
use super::client::{ClickHouseError, Client};
use super::rollup;
use super::sql::{Links, day_rows, days_in, key_rows, links_where, with_quiet_days};
use super::windows;

/// One domain's scans in ClickHouse, which every read here names.
#[derive(Clone)]
pub struct DomainScans {
    pub client: Client,
    /// The host its rows carry (`sink::TappedLog`, `--load-into --domain`).
    pub domain: String,
    /// The time zone and places its breakdowns are shown in, as the scan
    /// index's (`serve --time-zone`, `--geoip-db`).
    pub basis: crate::scan_index::Basis,
}

impl DomainScans {
    /// All links' breakdowns over the days `from..=to`, with the days
    /// [`Self::rolled`] answered.
    pub async fn day_shares(
        &self,
        from: NaiveDate,
        to: NaiveDate,
        rolled: &Rolled,
    ) -> Result<crate::scan_index::Shares, ClickHouseError> {
        let rolled = rollup::days_of(&rollup::within(&rolled.days, from, to));
        super::shares::day_shares(&self.client, &self.domain, from, to, &rolled, &self.basis).await
    }

    /// The rolled days and windows of `from..=to` ([`rollup::rolled_in`]):
    /// asked once for a page of all links, whose reads each take theirs.
    pub async fn rolled(&self, from: NaiveDate, to: NaiveDate) -> Result<Rolled, ClickHouseError> {
        rolled_in(&self.client, &self.domain, from, to).await
    }
}

/// What a page of all links reads its rolled-up numbers from: the rolled
/// days of its span and the windows ending in it (`super::windows`),
/// asked once, each read taking its own.
#[derive(Debug, Clone, Default)]
pub struct Rolled {
    pub days: Vec<rollup::RolledDay>,
    pub windows: Vec<windows::Window>,
}

/// The rolled days and windows of `from..=to`, asked at once.
pub async fn rolled_in(
    client: &Client,
    domain: &str,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<Rolled, ClickHouseError> {
    let (days, windows) = tokio::join!(
        rollup::rolled_days(client, domain, from, to),
        windows::windows_in(client, domain, from, to)
    );
    Ok(Rolled {
        days: days?,
        windows: windows?,
    })
}

/// Each of `keys`' scans since `since` (inclusive), in their order: their
/// busy days (`busy`) from `link_counts`, the others from the states.
pub async fn scans_since(
    scans: &DomainScans,
    keys: &[&str],
    since: NaiveDate,
) -> Result<Vec<u64>, ClickHouseError> {
    let client = &scans.client;
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let marked = busy::marked(client, &scans.domain, Links::These(keys), Some(since)).await?;
    let (states, counts) = since_queries(&scans.domain, keys, since, &marked);
    let (states, counts) = client.query_both(&states, counts.as_deref()).await?;
    // A key in both answers (a busy day and others) is added up.
    let mut summed: std::collections::HashMap<String, u64> = Default::default();
    for (key, n) in key_rows(&(states + &counts), 1).map_err(|a| client.unexpected(a))? {
        *summed.entry(key).or_default() += n[0];
    }
    Ok(keys
        .iter()
        .map(|k| summed.get(*k).copied().unwrap_or(0))
        .collect())
}

/// The queries of [`scans_since`] (pure): each key's scans from the states
/// of its days since `since` but the `marked` ones, and, if any, from
/// `link_counts` on those.
fn since_queries(
    domain: &str,
    keys: &[&str],
    since: NaiveDate,
    marked: &[(String, NaiveDate)],
) -> (String, Option<String>) {
    let links = links_where(domain, Links::These(keys));
    let pairs = busy::link_days_in(marked);
    let states = format!(
        "SELECT link, uniqExactIfMerge(scans) FROM link_days PREWHERE {links} \
         AND day >= '{since}' AND NOT ({pairs}) GROUP BY link FORMAT TSV"
    );
    let counts = (!marked.is_empty()).then(|| {
        format!(
            "SELECT link, sum(n) FROM link_counts FINAL PREWHERE {links} AND {pairs} \
             WHERE kind = '{}' AND value = 'scans' GROUP BY link FORMAT TSV",
            busy::TOTAL
        )
    });
    (states, counts)
}

/// Each of `keys`' scans sent to its fallback, of all time, in their order.
pub async fn fallback_of(scans: &DomainScans, keys: &[&str]) -> Result<Vec<u64>, ClickHouseError> {
    let client = &scans.client;
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let links = links_where(&scans.domain, Links::These(keys));
    let text = client
        .query(&format!(
            "SELECT link, uniqExactIfMerge(fallback) FROM link_days PREWHERE {links} \
             GROUP BY link FORMAT TSV"
        ))
        .await?;
    let got = key_rows(&text, 1).map_err(|a| client.unexpected(a))?;
    Ok(in_order(keys, &got, 0))
}

/// The `column`th count of each key in `got`, in `keys`' order, 0 for a
/// key not there (pure).
fn in_order(keys: &[&str], got: &[(String, Vec<u64>)], column: usize) -> Vec<u64> {
    let got: std::collections::HashMap<&str, u64> = got
        .iter()
        .map(|(k, n)| (k.as_str(), n.get(column).copied().unwrap_or(0)))
        .collect();
    keys.iter()
        .map(|k| got.get(k).copied().unwrap_or(0))
        .collect()
}

/// The `n` links with the most scans from `since` to `today`, busiest
/// first, ties by key, as the scan index ranks them: from the longest
/// usable window of the span (`super::windows`) and the other days, rolled
/// ones from `day_totals`, the others from the states (`super::rollup`).
pub async fn top_keys(
    scans: &DomainScans,
    since: NaiveDate,
    today: NaiveDate,
    n: usize,
    rolled: &Rolled,
) -> Result<Vec<(String, u64)>, ClickHouseError> {
    let client = &scans.client;
    let to = today.max(since);
    let days = rollup::within(&rolled.days, since, to);
    let window = super::windows::best(&rolled.windows, &days, since, to);
    let rest = links_outside(&scans.domain, since, to, &days, window.as_ref());
    let sql = match window {
        Some(window) => super::windows::TopQuery {
            domain: &scans.domain,
            window,
            rest,
            n,
        }
        .sql(),
        None => format!(
            "SELECT link, sum(n) AS total FROM ({rest}) \
             GROUP BY link HAVING total > 0 ORDER BY total DESC, link LIMIT {n} FORMAT TSV"
        ),
    };
    let text = client.query(&sql).await?;
    let got = key_rows(&text, 1).map_err(|a| client.unexpected(a))?;
    Ok(got.into_iter().map(|(k, n)| (k, n[0])).collect())
}

/// `SELECT link, n …`, each link's scans on the days of `since..=to`
/// outside `window` (pure): the rolled ones' from `day_totals`, the
/// others' from the states.
fn links_outside(
    domain: &str,
    since: NaiveDate,
    to: NaiveDate,
    rolled: &[rollup::RolledDay],
    window: Option<&super::windows::Window>,
) -> String {
    let (outside, rolled): (String, Vec<NaiveDate>) = match window {
        Some(w) => (
            format!(" AND NOT (day >= '{}' AND day <= '{}')", w.start(), w.end),
            rolled
                .iter()
                .filter(|r| !w.covers(r.day))
                .map(|r| r.day)
                .collect(),
        ),
        None => (String::new(), rollup::days_of(rolled)),
    };
    format!(
        "SELECT link, uniqExactIfMerge(scans) AS n FROM link_days PREWHERE {links} \
         AND day >= '{since}' AND day <= '{to}'{outside} AND NOT {not_rolled} GROUP BY link \
         UNION ALL {rolled_links}",
        links = links_where(domain, Links::All),
        not_rolled = days_in(&rolled),
        rolled_links = rollup::links_query(domain, &rolled),
    )
}

/// All links' scans a day from `since` to `today` (quiet days as 0) and
/// their scans sent to a fallback over those days: a rolled day's from
/// its mark, another's as each link's count a day added up (a line counts
/// under one link, so the sum is exact).
pub async fn daily_totals(
    scans: &DomainScans,
    since: NaiveDate,
    today: NaiveDate,
    rolled: &Rolled,
) -> Result<DailyTotals, ClickHouseError> {
    let client = &scans.client;
    let links = links_where(&scans.domain, Links::All);
    let to = today.max(since);
    let rolled = rollup::within(&rolled.days, since, to);
    let text = client
        .query(&format!(
            "SELECT day, sum(s), sum(f) FROM (SELECT day, uniqExactIfMerge(scans) AS s, \
             uniqExactIfMerge(fallback) AS f FROM link_days PREWHERE {links} \
             AND day >= '{since}' AND day <= '{to}' AND NOT {} GROUP BY link, day) \
             GROUP BY day ORDER BY day FORMAT TSV",
            days_in(&rollup::days_of(&rolled))
        ))
        .await?;
    let mut rows: Vec<(NaiveDate, u64, u64)> = day_rows(&text, 2)
        .map_err(|a| client.unexpected(a))?
        .into_iter()
        .map(|(d, n)| (d, n[0], n[1]))
        .collect();
    rows.extend(rolled.iter().map(|r| (r.day, r.scans, r.fallback)));
    rows.sort_unstable();
    Ok(DailyTotals {
        fallback: rows.iter().map(|r| r.2).sum(),
        daily: with_quiet_days(since, to, rows.into_iter().map(|r| (r.0, r.1)).collect()),
    })
}

/// All links together over some days.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DailyTotals {
    /// Scans a day, oldest first, quiet days as 0.
    pub daily: Vec<(NaiveDate, u64)>,
    /// Scans sent to a link's fallback over those days, not in `daily`.
    pub fallback: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lists_busy_days_are_read_from_their_counts() {
        let day = |d: u32| NaiveDate::from_ymd_opt(2026, 11, d).expect("date");
        let (states, counts) = since_queries("d", &["a", "b"], day(1), &[]);
        assert_eq!(
            states,
            "SELECT link, uniqExactIfMerge(scans) FROM link_days PREWHERE domain = 'd' \
             AND link IN ('a', 'b') AND day >= '2026-11-01' AND NOT (0) GROUP BY link FORMAT TSV"
        );
        assert_eq!(counts, None);
        let marked = [("b".to_owned(), day(3))];
        let (states, counts) = since_queries("d", &["a", "b"], day(1), &marked);
        assert!(states.contains("AND NOT ((link, day) IN (('b', '2026-11-03'))) GROUP BY"));
        assert_eq!(
            counts.as_deref(),
            Some(
                "SELECT link, sum(n) FROM link_counts FINAL PREWHERE domain = 'd' \
                 AND link IN ('a', 'b') AND (link, day) IN (('b', '2026-11-03')) \
                 WHERE kind = 'total' AND value = 'scans' GROUP BY link FORMAT TSV"
            )
        );
    }

    #[test]
    fn keys_come_back_as_written_and_in_the_order_asked() {
        let got = key_rows("b\t3\na\\tb\t1\n", 1).expect("rows");
        assert_eq!(got[1].0, "a\tb");
        assert_eq!(in_order(&["a\tb", "c", "b"], &got, 0), vec![1, 0, 3]);
        assert!(key_rows("b\tx\n", 1).is_err());
    }
}

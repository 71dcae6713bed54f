//! Each closed day's totals, rolled up once, so the dashboard and
//! `GET /api/v1/scans` cost the days they show rather than the scans in
//! them (schema version 4, issue 38).
//!
//! `link_days` and `link_shares` keep `uniqExact` states, which make a row
//! sent twice count once but cost 8 bytes a scan to merge: a dashboard
//! over all links and 30 days merged every scan of the period on every
//! view (96 ms at 200,000 rows, seconds at 100 million). A day stops
//! changing once its rows have come, so its numbers are merged once into
//! `day_totals` (each link's scans and fallback answers, each breakdown
//! value's scans, as plain counts) and a row of `rolled_days` says so. A
//! read takes rolled days from there and the rest (today, a day not
//! rolled yet) from the states, so a number never depends on whether its
//! day was rolled: rolling changes the cost, not the answer.
//!
//! A day is rolled once it is closed, [`GRACE`] after its UTC end; a roll
//! again while it is [`FRESH`] catches rows a sink delivered late (after
//! an outage); `stats --load-into` rolls again every closed day it loaded
//! rows of, so a back-fill shows. `serve --scans-from` rolls on a timer
//! ([`EVERY`]); several nodes rolling the same day write the same numbers.
//! A roll writes its rows, then its mark, each with the roll's time: a
//! reader takes each value's latest row (`FINAL` of the table, a
//! `ReplacingMergeTree` on that time), so a roll seen half-written mixes
//! two rolls' counts of the same day, each whole.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};

use super::busy;
use super::client::{ClickHouseError, Client};
use super::sql::{day_rows, days_in, literal, unescape};

/// How long after its UTC end a day's rows are taken to have come.
pub const GRACE: chrono::TimeDelta = chrono::TimeDelta::hours(1);
/// How long after its end a day is rolled again at every round, for rows
/// a sink held back while ClickHouse was away.
pub const FRESH: chrono::TimeDelta = chrono::TimeDelta::hours(6);
/// How often `serve --scans-from` looks for days to roll.
pub const EVERY: Duration = Duration::from_secs(600);
/// How long a roll may take (a day of a hundred million rows' worth of
/// states takes seconds): the roller's client timeout.
pub const ROLL_TIMEOUT: Duration = Duration::from_secs(600);

/// `day_totals`' `kind` for a link's row (its `value` is the key).
pub const LINK: &str = "link";

fn day_end(day: NaiveDate) -> DateTime<Utc> {
    (day + chrono::Days::new(1))
        .and_hms_opt(0, 0, 0)
        .unwrap_or_default()
        .and_utc()
}

/// Whether `day`'s rows have all come by `now` (pure).
pub fn closed(day: NaiveDate, now: DateTime<Utc>) -> bool {
    now >= day_end(day) + GRACE
}

/// Whether `day` is past being rolled again on a timer by `now` (pure):
/// a row of it that comes later (a sink's, after a long outage) reaches
/// the roll-up only if whoever sent it rolls the day again.
pub fn settled(day: NaiveDate, now: DateTime<Utc>) -> bool {
    now >= day_end(day) + FRESH
}

/// Which days to roll (pure): every closed day with rows that has no
/// roll, and every day rolled before it was [`FRESH`] past its end.
pub fn to_roll(
    with_rows: &BTreeSet<NaiveDate>,
    rolled: &[(NaiveDate, DateTime<Utc>)],
    now: DateTime<Utc>,
) -> Vec<NaiveDate> {
    let last: std::collections::BTreeMap<NaiveDate, DateTime<Utc>> =
        rolled
            .iter()
            .fold(std::collections::BTreeMap::new(), |mut m, (day, at)| {
                let e = m.entry(*day).or_insert(*at);
                *e = (*e).max(*at);
                m
            });
    with_rows
        .iter()
        .copied()
        .filter(|d| closed(*d, now))
        .filter(|d| match last.get(d) {
            None => true,
            Some(at) => *at < day_end(*d) + FRESH,
        })
        .collect()
}

/// The statements that roll `day` of `domain` in `db` at `rolled` (Unix
/// seconds): the links' totals, the breakdowns' totals, the busy links'
/// own counts (`busy`), then the mark, which carries the day's scans and
/// fallback answers from the rows just written.
pub fn roll_statements(db: &str, domain: &str, day: NaiveDate, rolled: i64) -> Vec<String> {
    let d = literal(domain);
    let at = format!("toDateTime({rolled})");
    let mut out = vec![
        format!(
            "INSERT INTO {db}.day_totals SELECT domain, day, '{LINK}', link, \
             uniqExactIfMerge(scans), uniqExactIfMerge(fallback), {at} FROM {db}.link_days \
             PREWHERE domain = {d} AND day = '{day}' GROUP BY domain, day, link"
        ),
        format!(
            "INSERT INTO {db}.day_totals SELECT domain, day, dimension, value, \
             uniqExactMerge(scans), 0, {at} FROM {db}.link_shares \
             PREWHERE domain = {d} AND day = '{day}' GROUP BY domain, day, dimension, value"
        ),
    ];
    out.extend(busy_statements(db, domain, day, rolled));
    // Each link once, should two nodes roll the day in the same second.
    out.push(format!(
        "INSERT INTO {db}.rolled_days SELECT {d}, toDate('{day}'), {at}, \
             sum(s), sum(f) FROM (SELECT value, any(scans) AS s, any(fallback) AS f \
             FROM {db}.day_totals PREWHERE domain = {d} AND day = '{day}' AND kind = '{LINK}' \
             WHERE rolled = {at} GROUP BY value)"
    ));
    out
}

/// The statements that keep the busy links of `day` of `domain` as
/// plain counts (`busy`), from the `day_totals` rows of the roll at
/// `rolled` (pure).
fn busy_statements(db: &str, domain: &str, day: NaiveDate, rolled: i64) -> [String; 4] {
    let at = format!("toDateTime({rolled})");
    let busy = format!(
        "SELECT value FROM {db}.day_totals PREWHERE domain = {} AND day = '{day}' \
         AND kind = '{LINK}' WHERE rolled = {at} AND scans + fallback >= {}",
        literal(domain),
        busy::BUSY
    );
    busy::roll_statements(db, domain, day, &at, &busy)
}

/// After an upgrade to schema version 6: every day rolled before it gets
/// its busy links' counts, from the `day_totals` rows of its latest roll,
/// so a busy link's page reads those days as plain counts at once rather
/// than after they are rolled again. How many days.
pub async fn keep_busy_of_rolled(client: &Client) -> Result<usize, ClickHouseError> {
    let db = client.url().database.clone();
    let text = client
        .query_server(&format!(
            "SELECT domain, day, toUInt32(max(rolled)) FROM {db}.rolled_days \
             GROUP BY domain, day ORDER BY domain, day FORMAT TSV"
        ))
        .await?;
    let mut n = 0;
    for line in text.lines() {
        let bad = || client.unexpected(line.to_owned());
        let mut f = line.split('\t');
        let (Some(domain), Some(day), Some(at), None) = (f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad());
        };
        let day: NaiveDate = day.parse().map_err(|_| bad())?;
        let at: i64 = at.parse().map_err(|_| bad())?;
        for statement in busy_statements(&db, &unescape(domain), day, at) {
            client.query_server(&statement).await?;
        }
        n += 1;
    }
    Ok(n)
}

fn parse_days(client: &Client, text: &str) -> Result<BTreeSet<NaiveDate>, ClickHouseError> {
    text.lines()
        .map(|l| {
            l.trim()
                .parse()
                .map_err(|_| client.unexpected(l.to_owned()))
        })
        .collect()
}

/// Rolls `day` of `domain` now.
pub async fn roll_day(
    client: &Client,
    domain: &str,
    day: NaiveDate,
    now: DateTime<Utc>,
) -> Result<(), ClickHouseError> {
    let db = client.url().database.clone();
    for statement in roll_statements(&db, domain, day, now.timestamp()) {
        client.query_server(&statement).await?;
    }
    Ok(())
}

/// Rolls every day of `domain` [`to_roll`] names now: how many.
pub async fn roll_due(
    client: &Client,
    domain: &str,
    now: DateTime<Utc>,
) -> Result<usize, ClickHouseError> {
    let db = client.url().database.clone();
    let d = literal(domain);
    let with_rows = client
        .query_server(&format!(
            "SELECT DISTINCT day FROM {db}.link_days PREWHERE domain = {d} FORMAT TSV"
        ))
        .await?;
    let with_rows = parse_days(client, &with_rows)?;
    let rolled = client
        .query_server(&format!(
            "SELECT day, toUInt32(max(rolled)) FROM {db}.rolled_days PREWHERE domain = {d} \
             GROUP BY day FORMAT TSV"
        ))
        .await?;
    let mut marks = Vec::new();
    for (day, at) in day_rows(&rolled, 1).map_err(|a| client.unexpected(a))? {
        let at = DateTime::from_timestamp(at[0] as i64, 0)
            .ok_or_else(|| client.unexpected(format!("{day}\t{}", at[0])))?;
        marks.push((day, at));
    }
    let due = to_roll(&with_rows, &marks, now);
    for day in &due {
        roll_day(client, domain, *day, now).await?;
    }
    Ok(due.len())
}

/// Rolls again each of `days` that is closed (`stats --load-into`, after
/// loading rows of them): how many.
pub async fn roll_loaded(
    client: &Client,
    domain: &str,
    days: &BTreeSet<NaiveDate>,
    now: DateTime<Utc>,
) -> Result<usize, ClickHouseError> {
    let mut n = 0;
    for day in days.iter().filter(|d| closed(**d, now)) {
        roll_day(client, domain, *day, now).await?;
        n += 1;
    }
    Ok(n)
}

/// A rolled day, from its marks: its scans and fallback answers, and when
/// it was last rolled (Unix seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RolledDay {
    pub day: NaiveDate,
    pub scans: u64,
    pub fallback: u64,
    pub at: i64,
}

/// The days of `from..=to` that `domain` has rolled.
pub async fn rolled_days(
    client: &Client,
    domain: &str,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<Vec<RolledDay>, ClickHouseError> {
    let text = client
        .query(&format!(
            "SELECT day, argMax(scans, rolled), argMax(fallback, rolled), \
             toUInt32(max(rolled)) FROM rolled_days \
             PREWHERE domain = {} AND day >= '{from}' AND day <= '{to}' \
             GROUP BY day ORDER BY day FORMAT TSV",
            literal(domain)
        ))
        .await?;
    let rows = day_rows(&text, 3).map_err(|answer| client.unexpected(answer))?;
    Ok(rows
        .into_iter()
        .map(|(day, n)| RolledDay {
            day,
            scans: n[0],
            fallback: n[1],
            at: n[2] as i64,
        })
        .collect())
}

/// The rolled days of `from..=to` (pure).
pub fn within(rolled: &[RolledDay], from: NaiveDate, to: NaiveDate) -> Vec<RolledDay> {
    rolled
        .iter()
        .copied()
        .filter(|r| r.day >= from && r.day <= to)
        .collect()
}

/// The days of rolled rows (pure).
pub fn days_of(rolled: &[RolledDay]) -> Vec<NaiveDate> {
    rolled.iter().map(|r| r.day).collect()
}

/// The rolled days' links, each with its scans over them, to add to the
/// states' (pure: the inner query of a `UNION ALL`).
///
/// `FINAL` keeps each link's and day's latest row, as `argMax` over the
/// roll time would, at half its cost (`benches/clickhouse_scale.rs`, 10M
/// rows: 1.3–1.7 s against 2.4–3.6 s for 2.6M link-days).
pub fn links_query(domain: &str, rolled: &[NaiveDate]) -> String {
    link_rows("day_totals", domain, &days_in(rolled), "scans")
}

/// `SELECT value AS link, {n} AS n` of `domain`'s link rows of `table`
/// (`day_totals`, however named) on the days `days` picks, each day's
/// latest roll (pure): what a ranking and a window's build add up.
pub fn link_rows(table: &str, domain: &str, days: &str, n: &str) -> String {
    format!(
        "SELECT value AS link, {n} AS n FROM {table} FINAL \
         PREWHERE domain = {} AND {days} AND kind = '{LINK}'",
        literal(domain)
    )
}

/// The rolled days' breakdowns in the shape `shares::shares_query` answers
/// (pure).
pub fn shares_query(domain: &str, rolled: &[NaiveDate]) -> String {
    format!(
        "SELECT kind, value, if(kind = '{q}', toString(day), '') AS on_day, sum(scans) \
         FROM day_totals FINAL PREWHERE domain = {d} AND {days} WHERE kind != '{LINK}' \
         GROUP BY kind, value, on_day FORMAT TSV",
        q = super::schema::QUARTER,
        d = literal(domain),
        days = days_in(rolled)
    )
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A day of November 2026.
    pub(in crate::clickhouse) fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, d).expect("date")
    }

    /// An hour of [`day`].
    pub(in crate::clickhouse) fn at(d: u32, h: u32) -> DateTime<Utc> {
        day(d).and_hms_opt(h, 0, 0).expect("time").and_utc()
    }

    #[test]
    fn a_day_closes_an_hour_after_its_end() {
        assert!(!settled(day(28), at(29, 5)));
        assert!(settled(day(28), at(29, 6)));
        assert!(!closed(day(28), at(28, 23)));
        assert!(!closed(day(28), at(29, 0)));
        assert!(closed(day(28), at(29, 1)));
        assert!(closed(day(1), at(29, 0)));
    }

    #[test]
    fn closed_days_are_rolled_once_then_again_only_while_fresh() {
        let with_rows: BTreeSet<NaiveDate> = [day(20), day(27), day(28), day(29)].into();
        let rolled = [
            (day(20), at(21, 7)),
            (day(27), at(28, 2)),
            (day(27), at(28, 1)),
        ];
        // 29 Nov 03:00: the 28th is closed and not rolled; the 27th was
        // last rolled 2 h after its end (fresh: once more), the 20th 7 h
        // after (settled); the 29th is open.
        assert_eq!(to_roll(&with_rows, &rolled, at(29, 3)), [day(27), day(28)]);
        let later = [(day(27), at(28, 7))];
        assert_eq!(to_roll(&with_rows, &later, at(29, 3)), [day(20), day(28)]);
        assert!(to_roll(&with_rows, &[], at(28, 23)).contains(&day(27)));
        assert!(!to_roll(&with_rows, &[], at(28, 23)).contains(&day(28)));
    }

    #[test]
    fn a_roll_writes_its_rows_then_its_mark_at_one_time() {
        let all = roll_statements("qt", "x'.ie", day(28), 1_795_900_000);
        let [links, shares, numbers, _, _, marks, mark] = &all[..] else {
            panic!("{all:?}");
        };
        assert!(links.starts_with("INSERT INTO qt.day_totals SELECT domain, day, 'link', link,"));
        assert!(links.contains("PREWHERE domain = 'x\\'.ie' AND day = '2026-11-28'"));
        assert!(shares.contains("FROM qt.link_shares"));
        for s in &all {
            assert!(s.contains("toDateTime(1795900000)"), "{s}");
        }
        // The busy links' counts after the day's totals they are chosen
        // from, their marks after them, the day's mark last.
        let busy = "GLOBAL IN (SELECT value FROM qt.day_totals PREWHERE domain = 'x\\'.ie' \
                    AND day = '2026-11-28' AND kind = 'link' WHERE rolled = toDateTime(1795900000) \
                    AND scans + fallback >= 100)";
        assert!(numbers.starts_with("INSERT INTO qt.link_counts") && numbers.contains(busy));
        assert!(marks.starts_with("INSERT INTO qt.busy_days"));
        assert!(
            mark.starts_with("INSERT INTO qt.rolled_days SELECT 'x\\'.ie', toDate('2026-11-28')")
        );
        assert!(mark.ends_with("WHERE rolled = toDateTime(1795900000) GROUP BY value)"));
    }

    #[test]
    fn a_read_takes_the_rolled_days_of_its_own_span() {
        let r = |d, scans| RolledDay {
            day: day(d),
            scans,
            fallback: 0,
            at: 0,
        };
        let rolled = [r(20, 1), r(25, 2), r(28, 3)];
        assert_eq!(within(&rolled, day(21), day(28)), [r(25, 2), r(28, 3)]);
        assert!(within(&rolled, day(29), day(30)).is_empty());
    }

    #[test]
    fn rolled_days_are_named_in_one_condition() {
        assert_eq!(
            days_of(&[
                RolledDay {
                    day: day(26),
                    scans: 5,
                    fallback: 1,
                    at: 0
                },
                RolledDay {
                    day: day(27),
                    scans: 0,
                    fallback: 0,
                    at: 0
                }
            ]),
            [day(26), day(27)]
        );
        assert_eq!(days_in(&[]), "0");
        assert_eq!(
            days_in(&[day(1), day(2)]),
            "day IN ('2026-11-01', '2026-11-02')"
        );
    }
}

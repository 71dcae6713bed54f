//! One link's page from ClickHouse (issue 38): its numbers of all time,
//! its scans a day, its breakdowns and its destinations, by the scan
//! index's definitions, at a cost of its days rather than its scans.
//!
//! The link's busy days (`busy`) are asked first, once, and every read
//! then takes those days from `link_counts` and the others from the
//! states, so the parts of one page agree on which day is read where.
//! Unique scanners come from `link_scanners`, a bounded state a day.

use chrono::NaiveDate;

use super::busy::{self, TOTAL};
use super::client::{ClickHouseError, Client};
use super::read::DomainScans;
use super::sql::{Links, day_rows, days_in, links_where, numbers, with_quiet_days};
use crate::scan_index::{DestinationScans, Shares};

/// One link's numbers, as the scan index gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkNumbers {
    pub scans: u64,
    pub unique_scanners: u64,
    pub head: u64,
    pub bots: u64,
    pub not_found: u64,
    /// Scans answered by the link's fallback (issue 33), not in `scans`.
    pub fallback: u64,
    /// Scans a day from the first day asked to today (or that day, if
    /// later), quiet days as 0.
    pub daily: Vec<(NaiveDate, u64)>,
}

/// Everything a link's page shows.
#[derive(Debug, Clone)]
pub struct LinkPage {
    pub numbers: LinkNumbers,
    pub shares: Shares,
    pub destinations: Vec<DestinationScans>,
}

/// The numbers [`states_query`] merges, in its order, as `link_days` and
/// `link_counts` name them.
const NUMBERS: [&str; 5] = busy::NUMBERS;

/// `key`'s numbers of all time but its `busy` days, from the states
/// (pure).
pub fn states_query(domain: &str, key: &str, busy: &[NaiveDate]) -> String {
    let merged: Vec<String> = NUMBERS
        .iter()
        .map(|n| format!("uniqExactIfMerge({n})"))
        .collect();
    format!(
        "SELECT {} FROM link_days PREWHERE {} AND NOT ({}) FORMAT TSV",
        merged.join(", "),
        links_where(domain, Links::One(key)),
        days_in(busy)
    )
}

/// `key`'s scans a day from `since` to `to` but its `busy` days, from the
/// states (pure).
pub fn days_query(
    domain: &str,
    key: &str,
    busy: &[NaiveDate],
    since: NaiveDate,
    to: NaiveDate,
) -> String {
    format!(
        "SELECT day, uniqExactIfMerge(scans) FROM link_days PREWHERE {} AND NOT ({}) \
         WHERE day >= '{since}' AND day <= '{to}' GROUP BY day ORDER BY day FORMAT TSV",
        links_where(domain, Links::One(key)),
        days_in(busy)
    )
}

/// `key`'s numbers on its `busy` days, a row a day and number (pure).
pub fn counts_query(domain: &str, key: &str, busy: &[NaiveDate]) -> String {
    format!(
        "SELECT day, value, n {} ORDER BY day FORMAT TSV",
        busy::counts_of(domain, key, busy, &format!("kind = '{TOTAL}'"))
    )
}

/// `key`'s unique scanners of all time (pure).
pub fn scanners_query(domain: &str, key: &str) -> String {
    format!(
        "SELECT uniqCombinedIfMerge(scanners) FROM link_scanners PREWHERE {} FORMAT TSV",
        links_where(domain, Links::One(key))
    )
}

/// The answers of [`states_query`], [`days_query`] and [`counts_query`]
/// (and the scanners) as one link's numbers (pure); `Err` names the
/// answer that is not one.
pub fn parse_numbers(
    states: &str,
    days: &str,
    counts: &str,
    scanners: &str,
    (since, to): (NaiveDate, NaiveDate),
) -> Result<LinkNumbers, String> {
    let mut totals = numbers(states, NUMBERS.len())?;
    let mut daily: std::collections::BTreeMap<NaiveDate, u64> = day_rows(days, 1)?
        .into_iter()
        .map(|(d, n)| (d, n[0]))
        .collect();
    for line in counts.lines() {
        let bad = || line.to_owned();
        let mut f = line.split('\t');
        let (Some(day), Some(name), Some(n), None) = (f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad());
        };
        let day: NaiveDate = day.parse().map_err(|_| bad())?;
        let n: u64 = n.parse().map_err(|_| bad())?;
        let at = NUMBERS.iter().position(|k| *k == name).ok_or_else(bad)?;
        totals[at] += n;
        if at == 0 && (since..=to).contains(&day) {
            *daily.entry(day).or_default() += n;
        }
    }
    let unique = numbers(scanners, 1)?;
    let [scans, fallback, bots, heads, not_found] = totals[..] else {
        return Err(states.to_owned());
    };
    Ok(LinkNumbers {
        scans,
        unique_scanners: unique[0],
        head: heads,
        bots,
        not_found,
        fallback,
        daily: with_quiet_days(since, to, daily.into_iter().collect()),
    })
}

async fn link_numbers(
    client: &Client,
    domain: &str,
    key: &str,
    busy: &[NaiveDate],
    (since, to): (NaiveDate, NaiveDate),
) -> Result<LinkNumbers, ClickHouseError> {
    let counts = (!busy.is_empty()).then(|| counts_query(domain, key, busy));
    let (states, days, scanners) = (
        states_query(domain, key, busy),
        days_query(domain, key, busy, since, to),
        scanners_query(domain, key),
    );
    let (both, days, scanners) = tokio::join!(
        client.query_both(&states, counts.as_deref()),
        client.query(&days),
        client.query(&scanners),
    );
    let (states, counts) = both?;
    parse_numbers(&states, &days?, &counts, &scanners?, (since, to))
        .map_err(|a| client.unexpected(a))
}

/// `key`'s page: its numbers of all time and its scans a day from
/// `since` to today, its breakdowns and its destinations, all at once
/// once its busy days are known.
pub async fn read(
    scans: &DomainScans,
    key: &str,
    since: NaiveDate,
    today: NaiveDate,
) -> Result<LinkPage, ClickHouseError> {
    let (client, domain) = (&scans.client, scans.domain.as_str());
    let busy: Vec<NaiveDate> = busy::marked(client, domain, Links::One(key), None)
        .await?
        .into_iter()
        .map(|(_, day)| day)
        .collect();
    let (numbers, shares, destinations) = tokio::join!(
        link_numbers(client, domain, key, &busy, (since, today.max(since))),
        super::shares::key_shares(client, domain, key, &busy, &scans.basis),
        super::destinations::read(client, domain, key, &busy),
    );
    Ok(LinkPage {
        numbers: numbers?,
        shares: shares?,
        destinations: destinations?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, d).unwrap()
    }

    #[test]
    fn the_states_are_read_but_for_the_busy_days() {
        assert_eq!(
            states_query("0x1f.ie", "a'b", &[day(1), day(2)]),
            "SELECT uniqExactIfMerge(scans), uniqExactIfMerge(fallback), uniqExactIfMerge(bots), \
             uniqExactIfMerge(heads), uniqExactIfMerge(not_found) FROM link_days \
             PREWHERE domain = '0x1f.ie' AND link = 'a\\'b' AND NOT (day IN ('2026-11-01', '2026-11-02')) \
             FORMAT TSV"
        );
        assert!(states_query("d", "k", &[]).contains("AND NOT (0) FORMAT"));
        assert_eq!(
            days_query("d", "k", &[day(3)], day(1), day(9)),
            "SELECT day, uniqExactIfMerge(scans) FROM link_days PREWHERE domain = 'd' AND link = 'k' \
             AND NOT (day IN ('2026-11-03')) WHERE day >= '2026-11-01' AND day <= '2026-11-09' \
             GROUP BY day ORDER BY day FORMAT TSV"
        );
        assert_eq!(
            counts_query("d", "k", &[day(3)]),
            "SELECT day, value, n FROM link_counts FINAL PREWHERE domain = 'd' AND link = 'k' \
             AND day IN ('2026-11-03') WHERE kind = 'total' ORDER BY day FORMAT TSV"
        );
        assert_eq!(
            scanners_query("d", "k"),
            "SELECT uniqCombinedIfMerge(scanners) FROM link_scanners PREWHERE domain = 'd' \
             AND link = 'k' FORMAT TSV"
        );
    }

    #[test]
    fn a_busy_days_counts_add_to_the_states_of_the_others() {
        let got = parse_numbers(
            "7\t1\t2\t3\t4\n",
            "2026-11-02\t5\n2026-11-04\t2\n",
            "2026-11-03\tscans\t100\n2026-11-03\tbots\t9\n2026-11-03\tfallback\t1\n\
             2026-10-01\tscans\t50\n2026-10-01\theads\t2\n2026-11-03\tnot_found\t0\n",
            "42\n",
            (day(2), day(4)),
        )
        .expect("numbers");
        assert_eq!(
            got,
            LinkNumbers {
                scans: 157,
                unique_scanners: 42,
                head: 5,
                bots: 11,
                not_found: 4,
                fallback: 2,
                daily: vec![(day(2), 5), (day(3), 100), (day(4), 2)],
            }
        );
        let range = (day(2), day(4));
        for (states, counts) in [
            ("7\t1\t2\t3\n", ""),
            ("7\t1\t2\t3\t4\n", "2026-11-03\tvisits\t1\n"),
            ("7\t1\t2\t3\t4\n", "2026-11-03\tscans\n"),
            ("7\t1\t2\t3\t4\n", "someday\tscans\t1\n"),
        ] {
            assert!(
                parse_numbers(states, "", counts, "1\n", range).is_err(),
                "{states:?} {counts:?}"
            );
        }
    }
}

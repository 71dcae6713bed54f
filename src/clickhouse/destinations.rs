//! A link's scans per destination (issue 34) read from
//! `link_destinations` (schema version 4) as the scan index's
//! [`DestinationScans`]: the same rows in the same order, so the link page
//! and the REST API show the same whichever answers. A pure query builder
//! and answer parser, with the read on top.
//!
//! ClickHouse keeps every destination; the page shows a link's
//! [`KEY_CAP`] busiest and the rest together as "other destinations", as
//! the index does (the index keeps the first it meets rather than the
//! busiest, so the two differ only for a link sent to more than
//! [`KEY_CAP`] places, one that appends paths).

use chrono::NaiveDate;

use super::busy::{self, TO, TO_FALLBACK};
use super::client::{ClickHouseError, Client};
use super::sql::{Links, days_in, links_where, unescape};
use crate::scan_index::DestinationScans;
use crate::scan_index::destinations::{KEY_CAP, sort};

/// The query for `key`'s destinations of all time in `domain` but its
/// `busy` days.
pub fn query(domain: &str, key: &str, busy: &[NaiveDate]) -> String {
    let days = if busy.is_empty() {
        String::new()
    } else {
        format!(" AND NOT ({})", days_in(busy))
    };
    format!(
        "SELECT location, fallback_scan, uniqExactMerge(scans) FROM link_destinations \
         PREWHERE {}{days} GROUP BY location, fallback_scan FORMAT TSV",
        links_where(domain, Links::One(key))
    )
}

/// The query for `key`'s destinations on its `busy` days, from
/// `link_counts`, in the shape of [`query`]'s answer.
pub fn busy_query(domain: &str, key: &str, busy: &[NaiveDate]) -> String {
    format!(
        "SELECT value, toUInt8(kind = '{TO_FALLBACK}'), n {} FORMAT TSV",
        busy::counts_of(
            domain,
            key,
            busy,
            &format!("kind IN ('{TO}', '{TO_FALLBACK}')")
        )
    )
}

/// The answer of [`query`] (and of [`busy_query`] after it) as the
/// index's rows: busiest first, then by destination, a fallback after the
/// same destination as a scan; past the [`KEY_CAP`] busiest destinations,
/// the rest together. A destination in both answers is one row. `Err`
/// names the row that is not one of its rows.
pub fn parse(text: &str) -> Result<Vec<DestinationScans>, String> {
    let mut by_row: std::collections::BTreeMap<(String, bool), u64> = Default::default();
    for line in text.lines() {
        let bad = || line.to_owned();
        let mut f = line.split('\t');
        let (Some(location), Some(fallback), Some(n), None) =
            (f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad());
        };
        let fallback = match fallback {
            "0" => false,
            "1" => true,
            _ => return Err(bad()),
        };
        let scans: u64 = n.parse().map_err(|_| bad())?;
        *by_row.entry((unescape(location), fallback)).or_default() += scans;
    }
    let rows = by_row
        .into_iter()
        .map(|((destination, fallback), scans)| DestinationScans {
            destination: Some(destination),
            fallback,
            scans,
        })
        .collect();
    Ok(fold(rows))
}

/// The [`KEY_CAP`] busiest destinations (a destination's scans and
/// fallback answers together) named, the others' counts added up under
/// none, scans and fallback answers apart.
fn fold(mut rows: Vec<DestinationScans>) -> Vec<DestinationScans> {
    let mut by_name: std::collections::BTreeMap<&str, u64> = Default::default();
    for r in &rows {
        *by_name
            .entry(r.destination.as_deref().unwrap_or(""))
            .or_default() += r.scans;
    }
    if by_name.len() > KEY_CAP {
        let mut busiest: Vec<(&str, u64)> = by_name.into_iter().collect();
        busiest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let kept: std::collections::HashSet<String> = busiest[..KEY_CAP]
            .iter()
            .map(|(name, _)| (*name).to_owned())
            .collect();
        let mut other = [0u64; 2];
        rows.retain(|r| {
            let keep = r.destination.as_ref().is_some_and(|d| kept.contains(d));
            if !keep {
                other[usize::from(r.fallback)] += r.scans;
            }
            keep
        });
        for (fallback, scans) in [(false, other[0]), (true, other[1])] {
            if scans > 0 {
                rows.push(DestinationScans {
                    destination: None,
                    fallback,
                    scans,
                });
            }
        }
    }
    sort(&mut rows);
    rows
}

/// `key`'s scans per destination of all time in `domain`: its `busy`
/// days from `link_counts`, the others from the states.
pub async fn read(
    client: &Client,
    domain: &str,
    key: &str,
    busy: &[NaiveDate],
) -> Result<Vec<DestinationScans>, ClickHouseError> {
    let counts = (!busy.is_empty()).then(|| busy_query(domain, key, busy));
    let (states, counts) = client
        .query_both(&query(domain, key, busy), counts.as_deref())
        .await?;
    parse(&(states + &counts)).map_err(|answer| client.unexpected(answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(destination: Option<&str>, fallback: bool, scans: u64) -> DestinationScans {
        DestinationScans {
            destination: destination.map(str::to_owned),
            fallback,
            scans,
        }
    }

    #[test]
    fn a_links_destinations_are_read_from_its_own_rows() {
        assert_eq!(
            query("0x1f.ie", "a'b", &[]),
            "SELECT location, fallback_scan, uniqExactMerge(scans) FROM link_destinations \
             PREWHERE domain = '0x1f.ie' AND link = 'a\\'b' GROUP BY location, fallback_scan FORMAT TSV"
        );
        let busy = ["2026-11-03".parse().unwrap()];
        assert!(query("d", "k", &busy).contains(
            "PREWHERE domain = 'd' AND link = 'k' AND NOT (day IN ('2026-11-03')) GROUP BY"
        ));
        assert_eq!(
            busy_query("d", "k", &busy),
            "SELECT value, toUInt8(kind = 'to_fallback'), n FROM link_counts FINAL \
             PREWHERE domain = 'd' AND link = 'k' AND day IN ('2026-11-03') \
             WHERE kind IN ('to', 'to_fallback') FORMAT TSV"
        );
    }

    #[test]
    fn a_destination_of_busy_days_and_of_others_is_one_row() {
        let got =
            parse("https://a.example/\t0\t2\nhttps://a.example/\t1\t1\nhttps://a.example/\t0\t5\n")
                .expect("rows");
        assert_eq!(
            got,
            [
                row(Some("https://a.example/"), false, 7),
                row(Some("https://a.example/"), true, 1)
            ]
        );
    }

    #[test]
    fn rows_come_back_in_the_index_order_with_their_text() {
        let got = parse("https://b.example/\t0\t2\nhttps://a.example/x\\ty\t0\t2\nhttps://b.example/\t1\t2\nhttps://c.example/\t0\t9\n")
            .expect("rows");
        assert_eq!(
            got,
            [
                row(Some("https://c.example/"), false, 9),
                row(Some("https://a.example/x\ty"), false, 2),
                row(Some("https://b.example/"), false, 2),
                row(Some("https://b.example/"), true, 2),
            ]
        );
        assert_eq!(parse(""), Ok(Vec::new()));
        for bad in ["x\t2\t1", "x\t0", "x\t0\tmany", "x\t0\t1\t1"] {
            assert_eq!(parse(bad), Err(bad.to_owned()), "{bad}");
        }
    }

    #[test]
    fn past_the_cap_the_quietest_destinations_are_one_row() {
        let mut text = String::new();
        for i in 0..KEY_CAP + 3 {
            text.push_str(&format!("https://e.example/{i:02}\t0\t{}\n", 100 - i));
        }
        text.push_str("https://e.example/18\t1\t1\n");
        let got = parse(&text).expect("rows");
        assert_eq!(got.len(), KEY_CAP + 2);
        let named: Vec<&str> = got
            .iter()
            .filter_map(|r| r.destination.as_deref())
            .collect();
        let want: Vec<String> = (0..KEY_CAP)
            .map(|i| format!("https://e.example/{i:02}"))
            .collect();
        assert_eq!(named, want, "the busiest, busiest first");
        let other: Vec<_> = got.iter().filter(|r| r.destination.is_none()).collect();
        assert_eq!(
            other,
            [
                &row(None, false, (100 - 16) + (100 - 17) + (100 - 18)),
                &row(None, true, 1)
            ]
        );
        let total: u64 = got.iter().map(|r| r.scans).sum();
        let want: u64 = (0..KEY_CAP as u64 + 3).map(|i| 100 - i).sum::<u64>() + 1;
        assert_eq!(total, want, "nothing lost in the fold");
    }
}

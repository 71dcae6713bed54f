//! A link's breakdowns, or all links' over a span of days, read from
//! `link_shares` (schema version 3) as the scan index's [`Shares`]: the
//! same rows and hour × weekday map over the same lines, so the console
//! and the REST API show the same whichever answers. Pure query builders
//! and answer parsers, with the two reads on top.
//!
//! The heat map is kept in ClickHouse as UTC quarter-hours of each day
//! ([`QUARTER`]), and placed in the index's time zone here: every zone's
//! offset is a whole number of quarter-hours, so a quarter falls in one
//! local hour, and a zone chosen after the rows were written still draws
//! the map exactly. Unlike the index, no value is folded into "(other)"
//! past its caps (`KEY_CAP`, `DAY_CAP`): ClickHouse keeps every value.

use chrono::{Datelike, NaiveDate, TimeZone, Timelike};

use super::busy;
use super::client::{ClickHouseError, Client};
use super::rollup;
use super::schema::QUARTER;
use super::sql::{days_in, literal, unescape};
use crate::scan_index::{Basis, Share, Shares};
use crate::stats::breakdown::HeatMap;
use crate::stats::dimensions::Dimension;

/// The dimensions a [`Shares`] holds, in its order (places only with a
/// GeoIP database), as `link_shares` names them.
const DIMENSIONS: [Dimension; 7] = [
    Dimension::Device,
    Dimension::Os,
    Dimension::Browser,
    Dimension::Country,
    Dimension::Region,
    Dimension::City,
    Dimension::Referrer,
];

/// The query for the rows of `filter` (a condition, read first as
/// `PREWHERE`, as in `read`): each dimension's values' scans, the
/// quarters by day.
pub fn shares_query(filter: &str) -> String {
    format!(
        "SELECT dimension, value, if(dimension = '{QUARTER}', toString(day), '') AS on_day, \
         uniqExactMerge(scans) FROM link_shares PREWHERE {filter} \
         GROUP BY dimension, value, on_day FORMAT TSV"
    )
}

/// One link's rows in `domain`.
pub fn key_filter(domain: &str, key: &str) -> String {
    format!("domain = {} AND link = {}", literal(domain), literal(key))
}

/// Every link's rows in `domain` on the days `from..=to`.
pub fn days_filter(domain: &str, from: NaiveDate, to: NaiveDate) -> String {
    format!(
        "domain = {} AND day >= '{from}' AND day <= '{to}'",
        literal(domain)
    )
}

/// The local (weekday from Monday, hour) of the `quarter`th quarter-hour
/// of the UTC day `day`, in `tz`; `None` for a quarter past the day's.
pub fn local_cell(day: NaiveDate, quarter: u32, tz: chrono_tz::Tz) -> Option<(usize, usize)> {
    if quarter >= 96 {
        return None;
    }
    let utc = day.and_hms_opt(quarter / 4, quarter % 4 * 15, 0)?.and_utc();
    let local = tz.from_utc_datetime(&utc.naive_utc());
    Some((
        local.weekday().num_days_from_monday() as usize,
        local.hour() as usize,
    ))
}

/// The answer of [`shares_query`] as [`Shares`] drawn with `basis`; `Err`
/// names the row that is not one of its rows.
pub fn parse_shares(text: &str, basis: &Basis) -> Result<Shares, String> {
    let places = basis.geoip.is_some();
    // By value, so a value in a rolled day and in a day read from the
    // states is one row.
    let mut rows: Vec<std::collections::HashMap<String, u64>> =
        vec![Default::default(); DIMENSIONS.len()];
    let mut heat: HeatMap = [[0; 24]; 7];
    for line in text.lines() {
        let bad = || line.to_owned();
        let mut f = line.split('\t');
        let (Some(dimension), Some(value), Some(on_day), Some(n), None) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad());
        };
        let n: u64 = n.parse().map_err(|_| bad())?;
        if dimension == QUARTER {
            let day: NaiveDate = on_day.parse().map_err(|_| bad())?;
            let quarter: u32 = value.parse().map_err(|_| bad())?;
            let (weekday, hour) = local_cell(day, quarter, basis.time_zone).ok_or_else(bad)?;
            heat[weekday][hour] += n;
            continue;
        }
        let Some(at) = DIMENSIONS.iter().position(|d| d.name() == dimension) else {
            return Err(bad());
        };
        if DIMENSIONS[at].is_place() && !places {
            continue;
        }
        *rows[at].entry(unescape(value)).or_default() += n;
    }
    let dimensions = DIMENSIONS
        .iter()
        .zip(rows)
        .filter(|(d, _)| !d.is_place() || places)
        .map(|(d, rows)| {
            let mut rows: Vec<(String, u64)> = rows.into_iter().collect();
            rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            Share {
                dimension: *d,
                rows,
            }
        })
        .collect();
    Ok(Shares {
        dimensions,
        heat,
        time_zone: basis.time_zone,
    })
}

/// `key`'s breakdowns on its `busy` days, from `link_counts`, in the
/// shape of [`shares_query`]'s answer (pure).
pub fn busy_query(domain: &str, key: &str, busy: &[NaiveDate]) -> String {
    format!(
        "SELECT kind, value, if(kind = '{QUARTER}', toString(day), '') AS on_day, sum(n) {} \
         GROUP BY kind, value, on_day FORMAT TSV",
        busy::counts_of(domain, key, busy, &busy::share_kinds())
    )
}

/// `key`'s breakdowns of all time in `domain`, as the scan index's
/// `key_shares` with `basis` gives them: its `busy` days from
/// `link_counts`, the others from `link_shares`, a value in both added
/// up.
pub async fn key_shares(
    client: &Client,
    domain: &str,
    key: &str,
    busy: &[NaiveDate],
    basis: &Basis,
) -> Result<Shares, ClickHouseError> {
    let states = shares_query(&format!(
        "{} AND NOT ({})",
        key_filter(domain, key),
        days_in(busy)
    ));
    let counts = (!busy.is_empty()).then(|| busy_query(domain, key, busy));
    let (states, counts) = client.query_both(&states, counts.as_deref()).await?;
    parse_shares(&(states + &counts), basis).map_err(|answer| client.unexpected(answer))
}

/// Every link's breakdowns in `domain` over the UTC days `from..=to`, as
/// the scan index's `day_shares` gives them; `rolled`, those of its days
/// rolled up.
///
/// Rolled days are read from `day_totals`, the others from `link_shares`
/// (`super::rollup`): the two answers have one shape, and a value in both
/// is added up.
pub async fn day_shares(
    client: &Client,
    domain: &str,
    from: NaiveDate,
    to: NaiveDate,
    rolled: &[NaiveDate],
    basis: &Basis,
) -> Result<Shares, ClickHouseError> {
    let states = shares_query(&format!(
        "{} AND NOT {}",
        days_filter(domain, from, to),
        days_in(rolled)
    ));
    let totals = (!rolled.is_empty()).then(|| rollup::shares_query(domain, rolled));
    let (states, totals) = client.query_both(&states, totals.as_deref()).await?;
    parse_shares(&(states + &totals), basis).map_err(|answer| client.unexpected(answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basis(tz: chrono_tz::Tz, geoip: bool) -> Basis {
        Basis {
            time_zone: tz,
            geoip: geoip.then(|| "geo.mmdb".to_owned()),
        }
    }

    #[test]
    fn the_queries_name_the_domain_and_the_link_as_literals() {
        assert_eq!(
            key_filter("0x1f.ie", "a'b"),
            r"domain = '0x1f.ie' AND link = 'a\'b'"
        );
        let days = days_filter(
            "0x1f.ie",
            NaiveDate::from_ymd_opt(2026, 11, 1).unwrap(),
            NaiveDate::from_ymd_opt(2026, 11, 28).unwrap(),
        );
        assert_eq!(
            days,
            "domain = '0x1f.ie' AND day >= '2026-11-01' AND day <= '2026-11-28'"
        );
        let q = shares_query(&days);
        assert!(q.contains(&format!("FROM link_shares PREWHERE {days} GROUP BY")));
    }

    #[test]
    fn rows_are_sorted_busiest_first_and_places_only_with_geoip() {
        let text = "device\tphone\t\t3\ndevice\tdesktop\t\t3\ndevice\ttablet\t\t5\n\
                    country\t\t\t11\nreferrer\tt.co\\tx\t\t1\nos\tiOS 17\t\t11\n";
        let s = parse_shares(text, &basis(chrono_tz::UTC, false)).unwrap();
        let dims: Vec<Dimension> = s.dimensions.iter().map(|d| d.dimension).collect();
        assert_eq!(
            dims,
            [
                Dimension::Device,
                Dimension::Os,
                Dimension::Browser,
                Dimension::Referrer
            ]
        );
        assert_eq!(
            s.get(Dimension::Device).unwrap().rows,
            [
                ("tablet".to_owned(), 5),
                ("desktop".to_owned(), 3),
                ("phone".to_owned(), 3)
            ]
        );
        assert_eq!(
            s.get(Dimension::Referrer).unwrap().rows,
            [("t.co\tx".to_owned(), 1)]
        );
        let with_geo = parse_shares(text, &basis(chrono_tz::UTC, true)).unwrap();
        assert_eq!(with_geo.dimensions.len(), 7);
        assert_eq!(
            with_geo.get(Dimension::Country).unwrap().rows,
            [(String::new(), 11)]
        );
    }

    #[test]
    fn a_value_answered_twice_is_one_row() {
        let text = "device\tphone\t\t3\ndevice\ttablet\t\t1\ndevice\tphone\t\t2\n";
        let s = parse_shares(text, &basis(chrono_tz::UTC, false)).unwrap();
        assert_eq!(
            s.get(Dimension::Device).unwrap().rows,
            [("phone".to_owned(), 5), ("tablet".to_owned(), 1)]
        );
    }

    #[test]
    fn quarters_are_placed_in_the_time_zone_asked_for() {
        // 2026-11-28 is a Saturday; quarter 40 is 10:00 UTC.
        let text = "quarter\t40\t2026-11-28\t2\nquarter\t95\t2026-11-28\t1\n";
        let utc = parse_shares(text, &basis(chrono_tz::UTC, false)).unwrap();
        assert_eq!(utc.heat[5][10], 2);
        assert_eq!(utc.heat[5][23], 1);
        assert_eq!(utc.scans(), 3);
        // Kolkata is UTC+5:30: 23:45 UTC Saturday is 05:15 Sunday.
        let ist = parse_shares(text, &basis(chrono_tz::Asia::Kolkata, false)).unwrap();
        assert_eq!(ist.heat[5][15], 2);
        assert_eq!(ist.heat[6][5], 1);
        // Summer time: 10:00 UTC on 2026-07-01 (Wednesday) is 11:00 in Dublin.
        let day = NaiveDate::from_ymd_opt(2026, 7, 1).unwrap();
        assert_eq!(
            local_cell(day, 40, chrono_tz::Europe::Dublin),
            Some((2, 11))
        );
        assert_eq!(local_cell(day, 96, chrono_tz::UTC), None);
    }

    #[test]
    fn an_answer_of_another_shape_is_refused() {
        let b = basis(chrono_tz::UTC, false);
        for bad in [
            "device\tphone\t\tx\n",
            "device\tphone\t3\n",
            "colour\tred\t\t1\n",
            "quarter\t40\tyesterday\t1\n",
            "quarter\t99\t2026-11-28\t1\n",
        ] {
            assert!(parse_shares(bad, &b).is_err(), "{bad}");
        }
        assert_eq!(parse_shares("", &b).unwrap().scans(), 0);
    }
}

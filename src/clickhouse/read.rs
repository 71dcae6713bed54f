//! `serve --scans-from` (issue 38, its first page): one link's numbers
//! read from ClickHouse instead of the embedded scan index, by the same
//! definitions. Every number comes from `link_days`, the aggregate
//! ClickHouse keeps per link and day (HEAD requests and 404s since schema
//! version 2), so a link's page costs its days, not its scans.

use chrono::NaiveDate;

use super::client::{ClickHouseError, Client};

/// One link's numbers, as the scan index gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkNumbers {
    pub scans: u64,
    pub unique_scanners: u64,
    pub head: u64,
    pub bots: u64,
    pub not_found: u64,
    /// Scans a day from the first day asked to today (or that day, if
    /// later), quiet days as 0.
    pub daily: Vec<(NaiveDate, u64)>,
}

/// A string as a ClickHouse literal (pure): quoted, `\` and `'` escaped.
pub fn literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if matches!(c, '\\' | '\'') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

fn numbers(text: &str, want: usize) -> Result<Vec<u64>, String> {
    let got: Vec<u64> = text
        .trim()
        .split('\t')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| text.to_owned())?;
    if got.len() == want {
        Ok(got)
    } else {
        Err(text.to_owned())
    }
}

/// `key`'s numbers of all time, and its scans a day from `since`, over
/// every domain: [`link_numbers_in`] with no domain named.
pub async fn link_numbers(
    client: &Client,
    key: &str,
    since: NaiveDate,
    today: NaiveDate,
) -> Result<LinkNumbers, ClickHouseError> {
    link_numbers_in(client, None, key, since, today).await
}

/// The rows of `link_days` of one link: of `domain`'s, where one is named
/// (schema version 3 keys the aggregates by domain first).
pub fn link_filter(domain: Option<&str>, key: &str) -> String {
    match domain {
        Some(d) => format!("domain = {} AND link = {}", literal(d), literal(key)),
        None => format!("link = {}", literal(key)),
    }
}

/// `key`'s numbers in `domain` (`None`: every domain's together).
pub async fn link_numbers_in(
    client: &Client,
    domain: Option<&str>,
    key: &str,
    since: NaiveDate,
    today: NaiveDate,
) -> Result<LinkNumbers, ClickHouseError> {
    let unexpected = |answer: String| ClickHouseError::Unexpected {
        url: client.url().to_string(),
        answer,
    };
    let link = link_filter(domain, key);
    let totals = client
        .query(&format!(
            "SELECT uniqExactIfMerge(scans), uniqExactIfMerge(scanners), uniqExactIfMerge(bots), \
             uniqExactIfMerge(heads), uniqExactIfMerge(not_found) \
             FROM link_days WHERE {link} FORMAT TSV"
        ))
        .await?;
    let totals = numbers(&totals, 5).map_err(unexpected)?;
    let to = today.max(since);
    let days = client
        .query(&format!(
            "SELECT day, uniqExactIfMerge(scans) FROM link_days WHERE {link} \
             AND day >= '{since}' AND day <= '{to}' GROUP BY day ORDER BY day FORMAT TSV"
        ))
        .await?;
    let mut counted = Vec::new();
    for row in days.lines() {
        let (day, n) = row
            .split_once('\t')
            .and_then(|(d, n)| Some((d.parse::<NaiveDate>().ok()?, n.parse::<u64>().ok()?)))
            .ok_or_else(|| unexpected(row.to_owned()))?;
        counted.push((day, n));
    }
    let mut counted = counted.into_iter().peekable();
    let daily = since
        .iter_days()
        .take_while(|d| *d <= to)
        .map(|d| {
            (
                d,
                counted.next_if(|(day, _)| *day == d).map_or(0, |(_, n)| n),
            )
        })
        .collect();
    Ok(LinkNumbers {
        scans: totals[0],
        unique_scanners: totals[1],
        bots: totals[2],
        head: totals[3],
        not_found: totals[4],
        daily,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_one_literal_whatever_it_holds() {
        assert_eq!(literal("docs/api"), "'docs/api'");
        assert_eq!(literal(r"a'b\c"), r"'a\'b\\c'");
    }

    #[test]
    fn an_answer_of_another_shape_is_refused() {
        assert_eq!(numbers("3\t1\t0\n", 3), Ok(vec![3, 1, 0]));
        assert!(numbers("3\t1\n", 3).is_err());
        assert!(numbers("x\t1\t0\n", 3).is_err());
    }
}

//! The text of ClickHouse queries and answers (pure): literals, the one
//! condition that names a query's links and days, and the TSV answers
//! parsed back. Every reader and writer of `clickhouse` builds its SQL
//! from these, and none of them is built here from a reader's, so the
//! readers depend on this file and never on each other for it.

use chrono::NaiveDate;

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

pub fn numbers(text: &str, want: usize) -> Result<Vec<u64>, String> {
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

/// The links a query reads.
#[derive(Debug, Clone, Copy)]
pub enum Links<'a> {
    One(&'a str),
    These(&'a [&'a str]),
    All,
}

/// The one `WHERE` condition naming the links a query reads (pure): every
/// query of this module filters `link_days` through it.
pub fn links_where(domain: &str, links: Links<'_>) -> String {
    let links = match links {
        Links::One(key) => format!("link = {}", literal(key)),
        Links::These([]) => "0".to_owned(),
        Links::These(keys) => format!(
            "link IN ({})",
            keys.iter()
                .map(|k| literal(k))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Links::All => "1".to_owned(),
    };
    format!("domain = {} AND {links}", literal(domain))
}

/// `day IN ('…', …)` (pure); `0` for no day.
pub fn days_in(days: &[NaiveDate]) -> String {
    if days.is_empty() {
        return "0".to_owned();
    }
    let list: Vec<String> = days.iter().map(|d| format!("'{d}'")).collect();
    format!("day IN ({})", list.join(", "))
}

/// `day<TAB>n…` rows (pure), in the order given.
pub fn day_rows(text: &str, want: usize) -> Result<Vec<(NaiveDate, Vec<u64>)>, String> {
    text.lines()
        .map(|row| {
            let (day, rest) = row.split_once('\t').ok_or_else(|| row.to_owned())?;
            let day = day.parse::<NaiveDate>().map_err(|_| row.to_owned())?;
            Ok((day, numbers(rest, want)?))
        })
        .collect()
}

/// `key<TAB>n…` rows (pure). A key is written as TSV escapes it.
pub fn key_rows(text: &str, want: usize) -> Result<Vec<(String, Vec<u64>)>, String> {
    text.lines()
        .map(|row| {
            let (key, rest) = row.split_once('\t').ok_or_else(|| row.to_owned())?;
            Ok((unescape(key), numbers(rest, want)?))
        })
        .collect()
}

/// A TSV field as ClickHouse escapes it (`\\`, `\t`, `\n`, `\'`…) back to
/// its text (pure).
pub fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// Every day from `since` to `to` (pure), with the counts of `counted`
/// (sorted) and 0 for quiet days.
pub fn with_quiet_days(
    since: NaiveDate,
    to: NaiveDate,
    counted: Vec<(NaiveDate, u64)>,
) -> Vec<(NaiveDate, u64)> {
    let mut counted = counted.into_iter().peekable();
    since
        .iter_days()
        .take_while(|d| *d <= to)
        .map(|d| {
            while counted.next_if(|(day, _)| *day < d).is_some() {}
            (
                d,
                counted.next_if(|(day, _)| *day == d).map_or(0, |(_, n)| n),
            )
        })
        .collect()
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

    #[test]
    fn every_query_names_its_domain_and_links_through_one_condition() {
        let d = "go.brand-a.com";
        assert_eq!(
            links_where(d, Links::One("a'b")),
            r"domain = 'go.brand-a.com' AND link = 'a\'b'"
        );
        assert_eq!(
            links_where(d, Links::These(&["a", "b/c"])),
            "domain = 'go.brand-a.com' AND link IN ('a', 'b/c')"
        );
        assert_eq!(
            links_where(d, Links::These(&[])),
            "domain = 'go.brand-a.com' AND 0"
        );
        assert_eq!(links_where("it's", Links::All), r"domain = 'it\'s' AND 1");
    }

    #[test]
    fn quiet_days_are_zeros() {
        let day = |d: u32| NaiveDate::from_ymd_opt(2026, 11, d).expect("date");
        assert_eq!(
            with_quiet_days(day(2), day(4), vec![(day(1), 5), (day(3), 2)]),
            vec![(day(2), 0), (day(3), 2), (day(4), 0)]
        );
        let rows = day_rows("2026-11-03\t2\t1\n", 2).expect("rows");
        assert_eq!(rows, vec![(day(3), vec![2, 1])]);
        assert!(day_rows("yesterday\t2\t1\n", 2).is_err());
    }
}

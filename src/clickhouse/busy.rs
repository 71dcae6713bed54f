//! A busy link's closed days as plain counts (schema version 6, issue 38),
//! so its page costs its days, not its scans.
//!
//! A link's page merges its `uniqExact` states of every day: 8 bytes a
//! scan in `link_days`, eight rows a scan in `link_shares`, one in
//! `link_destinations`. At 900,000 scans that took 1.2 s, and it grows
//! with the scans. A day stops changing once it is closed, so the roll
//! that writes its `day_totals` (`rollup`) also merges, for each link with
//! at least [`BUSY`] scans that day, its numbers, breakdowns and
//! destinations once into `link_counts`, then marks the link's day in
//! `busy_days`. A page reads a marked day's plain rows and every other
//! day's states; the day's condition is in `PREWHERE`, so ClickHouse
//! skips the marked days' states rather than decoding and dropping them.
//! A link below [`BUSY`] on a day costs less than [`BUSY`] scans' states
//! for it, so a page costs at most its days × [`BUSY`] scans' states plus
//! today's.
//!
//! As with `day_totals`, a roll writes its rows, then its marks, each with
//! the roll's time; `link_counts` is a `ReplacingMergeTree` on that time
//! and read `FINAL`, so a roll again (late rows) replaces each value's
//! count whole. The links are named through `GLOBAL IN`: on a cluster
//! the set is made once, where the roll runs, from the `day_totals` rows
//! it just wrote, rather than on each shard from a replica that may not
//! have them yet.

use chrono::NaiveDate;

use super::client::{ClickHouseError, Client};
use super::sql::{Links, days_in, links_where, literal, unescape};

/// Scans (and fallback answers) a link has on a closed day for the roll
/// to keep its day as plain counts.
pub const BUSY: u64 = 100;

/// `link_counts`' `kind` of a day's numbers; `value` names which.
pub const TOTAL: &str = "total";
/// `link_counts`' `kind` of scans sent to a destination (`value`).
pub const TO: &str = "to";
/// The same for fallback answers.
pub const TO_FALLBACK: &str = "to_fallback";

/// The numbers of a day kept under [`TOTAL`], in `link_days`' columns'
/// names.
pub const NUMBERS: [&str; 5] = ["scans", "fallback", "bots", "heads", "not_found"];

/// The statements that keep `day`'s busy links of `domain` as plain
/// counts, for the roll at `at` (an SQL time) (pure): the numbers, the
/// breakdowns, the destinations, then the marks. `busy` is the query of
/// the links, which the roll answers from the `day_totals` rows it wrote.
pub fn roll_statements(
    db: &str,
    domain: &str,
    day: NaiveDate,
    at: &str,
    busy: &str,
) -> [String; 4] {
    let d = literal(domain);
    let of_day = format!("domain = {d} AND day = '{day}' AND link GLOBAL IN ({busy})");
    let merged: Vec<String> = NUMBERS
        .iter()
        .map(|n| format!("uniqExactIfMerge({n}) AS day_{n}"))
        .collect();
    let pairs: Vec<String> = NUMBERS
        .iter()
        .map(|n| format!("('{n}', day_{n})"))
        .collect();
    [
        format!(
            "INSERT INTO {db}.link_counts SELECT domain, link, day, '{TOTAL}', number.1, \
             number.2, {at} FROM (SELECT domain, link, day, {} FROM {db}.link_days \
             PREWHERE {of_day} GROUP BY domain, link, day) ARRAY JOIN [{}] AS number",
            merged.join(", "),
            pairs.join(", ")
        ),
        format!(
            "INSERT INTO {db}.link_counts SELECT domain, link, day, dimension, value, \
             uniqExactMerge(scans), {at} FROM {db}.link_shares PREWHERE {of_day} \
             GROUP BY domain, link, day, dimension, value"
        ),
        format!(
            "INSERT INTO {db}.link_counts SELECT domain, link, day, \
             if(fallback_scan = 1, '{TO_FALLBACK}', '{TO}'), location, uniqExactMerge(scans), {at} \
             FROM {db}.link_destinations PREWHERE {of_day} \
             GROUP BY domain, link, day, fallback_scan, location"
        ),
        format!(
            "INSERT INTO {db}.busy_days SELECT DISTINCT {d}, value, toDate('{day}'), {at} \
             FROM ({busy})"
        ),
    ]
}

/// The query for the days of `links` in `domain` kept as plain counts,
/// from `since` if given (pure).
pub fn marked_query(domain: &str, links: Links<'_>, since: Option<NaiveDate>) -> String {
    let since = since.map_or(String::new(), |d| format!(" AND day >= '{d}'"));
    format!(
        "SELECT DISTINCT link, day FROM busy_days PREWHERE {}{since} ORDER BY link, day \
         FORMAT TSV",
        links_where(domain, links)
    )
}

/// The days of `links` kept as plain counts (from `since`), by link and
/// day: what a read of them takes from `link_counts` rather than from
/// the states.
pub async fn marked(
    client: &Client,
    domain: &str,
    links: Links<'_>,
    since: Option<NaiveDate>,
) -> Result<Vec<(String, NaiveDate)>, ClickHouseError> {
    let text = client.query(&marked_query(domain, links, since)).await?;
    parse_marked(&text).map_err(|line| client.unexpected(line))
}

/// The answer of [`marked_query`] (pure); `Err` names the row that is
/// not one of its rows.
pub fn parse_marked(text: &str) -> Result<Vec<(String, NaiveDate)>, String> {
    text.lines()
        .map(|line| {
            let (link, day) = line.split_once('\t').ok_or_else(|| line.to_owned())?;
            let day = day.parse().map_err(|_| line.to_owned())?;
            Ok((unescape(link), day))
        })
        .collect()
}

/// `(link, day) IN (…)` of `marked` (pure); `0` for none.
pub fn link_days_in(marked: &[(String, NaiveDate)]) -> String {
    if marked.is_empty() {
        return "0".to_owned();
    }
    let pairs: Vec<String> = marked
        .iter()
        .map(|(link, day)| format!("({}, '{day}')", literal(link)))
        .collect();
    format!("(link, day) IN ({})", pairs.join(", "))
}

/// `link_counts` rows of `key` on `days` (pure): the condition of a read,
/// `kind` and the rest after it.
pub fn counts_of(domain: &str, key: &str, days: &[NaiveDate], kinds: &str) -> String {
    format!(
        "FROM link_counts FINAL PREWHERE {} AND {} WHERE {kinds}",
        links_where(domain, Links::One(key)),
        days_in(days)
    )
}

/// `link_counts`' breakdown rows (pure): every kind but the numbers and
/// the destinations.
pub fn share_kinds() -> String {
    format!("kind NOT IN ('{TOTAL}', '{TO}', '{TO_FALLBACK}')")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn a_roll_keeps_its_busy_links_counts_then_marks_them() {
        let busy = "SELECT value FROM busy";
        let [numbers, shares, destinations, marks] =
            roll_statements("qt", "x'.ie", day("2026-11-20"), "toDateTime(5)", busy);
        let of_day =
            format!("domain = 'x\\'.ie' AND day = '2026-11-20' AND link GLOBAL IN ({busy})");
        assert_eq!(
            numbers,
            format!(
                "INSERT INTO qt.link_counts SELECT domain, link, day, 'total', number.1, number.2, \
                 toDateTime(5) FROM (SELECT domain, link, day, uniqExactIfMerge(scans) AS day_scans, \
                 uniqExactIfMerge(fallback) AS day_fallback, uniqExactIfMerge(bots) AS day_bots, \
                 uniqExactIfMerge(heads) AS day_heads, uniqExactIfMerge(not_found) AS day_not_found \
                 FROM qt.link_days PREWHERE {of_day} GROUP BY domain, link, day) ARRAY JOIN \
                 [('scans', day_scans), ('fallback', day_fallback), ('bots', day_bots), \
                 ('heads', day_heads), ('not_found', day_not_found)] AS number"
            )
        );
        assert!(
            shares.starts_with("INSERT INTO qt.link_counts SELECT domain, link, day, dimension")
        );
        assert!(shares.contains(&format!("FROM qt.link_shares PREWHERE {of_day} GROUP BY")));
        assert!(destinations.contains(&format!(
            "if(fallback_scan = 1, 'to_fallback', 'to'), location, uniqExactMerge(scans), \
             toDateTime(5) FROM qt.link_destinations PREWHERE {of_day} GROUP BY"
        )));
        assert_eq!(
            marks,
            format!(
                "INSERT INTO qt.busy_days SELECT DISTINCT 'x\\'.ie', value, \
                 toDate('2026-11-20'), toDateTime(5) FROM ({busy})"
            )
        );
    }

    #[test]
    fn a_page_reads_the_counts_of_its_busy_days_alone() {
        assert_eq!(
            marked_query("0x1f.ie", Links::One("a'b"), None),
            "SELECT DISTINCT link, day FROM busy_days PREWHERE domain = '0x1f.ie' AND link = 'a\\'b' \
             ORDER BY link, day FORMAT TSV"
        );
        assert!(
            marked_query("d", Links::These(&["a", "b"]), Some(day("2026-11-01")))
                .contains("link IN ('a', 'b') AND day >= '2026-11-01' ORDER BY")
        );
        let marked = parse_marked("a\\tb\t2026-11-01\nc\t2026-11-02\n").expect("rows");
        assert_eq!(
            marked,
            [
                ("a\tb".to_owned(), day("2026-11-01")),
                ("c".to_owned(), day("2026-11-02"))
            ]
        );
        assert_eq!(
            link_days_in(&marked),
            "(link, day) IN (('a\tb', '2026-11-01'), ('c', '2026-11-02'))"
        );
        assert_eq!(link_days_in(&[]), "0");
        for bad in ["a", "a\tyesterday"] {
            assert_eq!(parse_marked(bad), Err(bad.to_owned()));
        }
        assert_eq!(
            counts_of("0x1f.ie", "k", &[day("2026-11-01")], &share_kinds()),
            "FROM link_counts FINAL PREWHERE domain = '0x1f.ie' AND link = 'k' AND \
             day IN ('2026-11-01') WHERE kind NOT IN ('total', 'to', 'to_fallback')"
        );
        assert!(counts_of("d", "k", &[], "1").contains("AND 0 WHERE"));
    }
}

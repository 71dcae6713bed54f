//! The busiest links of a period, ranked from one row a link (schema
//! version 5, issue 38).
//!
//! Ranking a period's links from the daily roll-up (`super::rollup`)
//! reads a row per link and day: when most links are scanned about once
//! on the days they are scanned, that is nearly a row a scan, and the
//! dashboard's 30 days at 10M rows took 1.3–3 s of its 3 s, a year
//! minutes. So for each period the console shows ([`PERIODS`], today
//! included), the closed days before today are summed once a day into
//! `window_totals`, one row per link, and a row of `windows` says so.
//!
//! A ranking then reads that window and the few days around it (today
//! from the states, a day rolled since from `day_totals`) and stays exact
//! without adding them up for every link: with T the `n`th largest
//! window total and S the largest total any link has on the other days, a
//! link whose window total is below T − S cannot reach the `n` links
//! whose window totals are T or more, so only the window's rows of T − S
//! or more are read ([`TopQuery`]). A window built before one of its days
//! was rolled again (a back-fill, a late row) is not used
//! ([`usable`]): its days are then read as before, slower, never wrong.
//!
//! Windows end on the last day past [`super::rollup::FRESH`], which is
//! no longer rolled again on a timer, so a window is built once a day;
//! the roller builds them after its roll (`serve --scans-from`), and
//! `stats --load-into` after the days it rolled again. Each end's rows
//! are a partition of their own, dropped [`KEEP`] days later.

use chrono::{DateTime, NaiveDate, Utc};

use super::client::{ClickHouseError, Client};
use super::rollup::{self, RolledDay};
use super::sql::literal;

/// The periods, in days to today inclusive, that windows are kept for:
/// the console's week, month, quarter and year (`pages::chart::Period`).
pub const PERIODS: [u32; 4] = [7, 30, 90, 365];

/// How many days' ends are kept before the oldest is dropped: a reader
/// that chose a window a moment ago still finds its rows.
pub const KEEP: u64 = 3;

/// One period's closed days summed per link, as `windows` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// How many days it sums, ending at `end`.
    pub days: u32,
    pub end: NaiveDate,
    /// When it was built (Unix seconds): its rows carry it.
    pub built: i64,
}

impl Window {
    pub fn start(&self) -> NaiveDate {
        self.end - chrono::Days::new(u64::from(self.days.max(1)) - 1)
    }

    pub fn covers(&self, day: NaiveDate) -> bool {
        day >= self.start() && day <= self.end
    }
}

/// The last day no timer rolls again by `now` (pure): its window is built
/// once.
pub fn settled_end(now: DateTime<Utc>) -> NaiveDate {
    (now - rollup::FRESH).date_naive() - chrono::Days::new(1)
}

/// How many days each period's window sums: its days before today.
pub fn spans() -> impl Iterator<Item = u32> {
    PERIODS.iter().map(|p| p - 1)
}

/// Whether `w` holds every roll of its days there is (pure): built after
/// the latest roll of each. Times are whole seconds, so a roll in the
/// second of a build may have come after it: a build takes a time past
/// every roll it read ([`build_time`]).
pub fn usable(w: &Window, rolled: &[RolledDay]) -> bool {
    rolled
        .iter()
        .filter(|r| w.covers(r.day))
        .all(|r| r.at < w.built)
}

/// The time a build at `now` carries (pure): `now`, or a second past the
/// latest of `rolled`, if later.
pub fn build_time(now: DateTime<Utc>, rolled: &[RolledDay]) -> i64 {
    let latest = rolled.iter().map(|r| r.at).max().unwrap_or(i64::MIN);
    now.timestamp().max(latest.saturating_add(1))
}

/// The window to rank `since..=to` from (pure): a usable one inside the
/// range, the longest, then the latest.
pub fn best(
    windows: &[Window],
    rolled: &[RolledDay],
    since: NaiveDate,
    to: NaiveDate,
) -> Option<Window> {
    windows
        .iter()
        .filter(|w| w.days > 0 && w.start() >= since && w.end <= to && usable(w, rolled))
        .max_by_key(|w| (w.days, w.end, w.built))
        .copied()
}

/// The latest usable build of `days` ending `end` (pure).
fn usable_build(
    windows: &[Window],
    rolled: &[RolledDay],
    days: u32,
    end: NaiveDate,
) -> Option<Window> {
    windows
        .iter()
        .filter(|w| w.days == days && w.end == end && usable(w, rolled))
        .max_by_key(|w| w.built)
        .copied()
}

/// The spans whose window ending `end` is missing or no longer usable
/// (pure): what a round builds.
pub fn due(windows: &[Window], rolled: &[RolledDay], end: NaiveDate) -> Vec<u32> {
    spans()
        .filter(|days| usable_build(windows, rolled, *days, end).is_none())
        .collect()
}

fn partition(end: NaiveDate) -> String {
    end.format("%Y%m%d").to_string()
}

/// How a window is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// From `day_totals`, every day of it: a row per link and day.
    Whole,
    /// From the same period's window ending a day before, with its new
    /// last day added and the day that left it taken off: a row per link
    /// and two days' rows, whatever the period's length.
    Next(Window),
}

/// How to build `days` ending `end` (pure): from the window a day before
/// where one is usable (every roll of its days came before it, so the
/// day that leaves it is as it was summed), else whole.
pub fn plan(windows: &[Window], rolled: &[RolledDay], days: u32, end: NaiveDate) -> Build {
    usable_build(windows, rolled, days, end - chrono::Days::new(1))
        .map_or(Build::Whole, Build::Next)
}

/// The statements that build `days` ending `end` of `domain` at `built`
/// as `how` says (pure): the links' sums, then the mark, from the rows
/// just written.
pub fn build_statements(
    db: &str,
    domain: &str,
    days: u32,
    end: NaiveDate,
    built: i64,
    how: Build,
) -> [String; 2] {
    let d = literal(domain);
    let start = Window { days, end, built }.start();
    let at = format!("toDateTime({built})");
    let totals = format!("{db}.day_totals");
    let day =
        |day: NaiveDate, n: &str| rollup::link_rows(&totals, domain, &format!("day = '{day}'"), n);
    let sums = match how {
        Build::Whole => rollup::link_rows(
            &totals,
            domain,
            &format!("day >= '{start}' AND day <= '{end}'"),
            "toInt64(scans)",
        ),
        Build::Next(before) => format!(
            "SELECT link, toInt64(scans) AS n FROM {db}.window_totals PREWHERE domain = {d} \
             AND days = {days} AND end = '{}' AND built = toDateTime({}) \
             UNION ALL {} UNION ALL {}",
            before.end,
            before.built,
            day(end, "toInt64(scans)"),
            day(before.start(), "-toInt64(scans)")
        ),
    };
    [
        format!(
            "INSERT INTO {db}.window_totals SELECT {d}, {days}, toDate('{end}'), {at}, link, \
             toUInt64(sum(n)) AS total FROM ({sums}) GROUP BY link HAVING sum(n) > 0"
        ),
        format!(
            "INSERT INTO {db}.windows SELECT {d}, {days}, toDate('{end}'), {at}, count(), \
             sum(scans) FROM {db}.window_totals PREWHERE domain = {d} AND days = {days} \
             AND end = '{end}' AND built = {at}"
        ),
    ]
}

/// The windows of `domain` ending in `from..=to`, each its latest build.
pub async fn windows_in(
    client: &Client,
    domain: &str,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<Vec<Window>, ClickHouseError> {
    let text = client
        .query(&format!(
            "SELECT end, days, toUInt32(max(built)) FROM windows PREWHERE domain = {} \
             AND end >= '{from}' AND end <= '{to}' GROUP BY end, days FORMAT TSV",
            literal(domain)
        ))
        .await?;
    let rows = super::sql::day_rows(&text, 2).map_err(|answer| client.unexpected(answer))?;
    Ok(rows
        .into_iter()
        .map(|(end, n)| Window {
            end,
            days: n[0] as u32,
            built: n[1] as i64,
        })
        .collect())
}

/// What a round built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Built {
    /// Summed from every day of the period.
    pub whole: usize,
    /// From the window a day before ([`Build::Next`]).
    pub next: usize,
}

impl Built {
    pub fn total(&self) -> usize {
        self.whole + self.next
    }
}

/// Builds every window of `domain` [`due`] to end at [`settled_end`]
/// (after the closed days are rolled), each as [`plan`] says, then drops
/// the ends older than [`KEEP`] days.
pub async fn build_due(
    client: &Client,
    domain: &str,
    now: DateTime<Utc>,
) -> Result<Built, ClickHouseError> {
    let db = client.url().database.clone();
    let end = settled_end(now);
    let longest = spans().max().unwrap_or(0);
    // A day before the longest, for the window it is built from.
    let first = end - chrono::Days::new(u64::from(longest) + 1);
    let (windows, rolled) = tokio::join!(
        windows_in(client, domain, end - chrono::Days::new(1), end),
        rollup::rolled_days(client, domain, first, end)
    );
    let (windows, rolled) = (windows?, rolled?);
    let built = build_time(now, &rolled);
    let mut report = Built::default();
    for days in due(&windows, &rolled, end) {
        let how = plan(&windows, &rolled, days, end);
        for statement in build_statements(&db, domain, days, end, built, how) {
            client.query_server(&statement).await?;
        }
        match how {
            Build::Whole => report.whole += 1,
            Build::Next(_) => report.next += 1,
        }
    }
    drop_old(client, &db, end).await?;
    Ok(report)
}

/// Drops the partitions of ends more than [`KEEP`] days before `end`,
/// marks first, so no mark names rows that are gone.
async fn drop_old(client: &Client, db: &str, end: NaiveDate) -> Result<(), ClickHouseError> {
    let oldest = partition(end - chrono::Days::new(KEEP));
    for table in ["windows", "window_totals"] {
        let text = client
            .query_server(&format!(
                "SELECT DISTINCT partition FROM system.parts WHERE database = {} \
                 AND table = '{table}' AND active FORMAT TSV",
                literal(db)
            ))
            .await?;
        for old in old_partitions(&text, &oldest) {
            client
                .query_server(&format!("ALTER TABLE {db}.{table} DROP PARTITION {old}"))
                .await?;
        }
    }
    Ok(())
}

/// The partitions (`YYYYMMDD`) of `system.parts`' answer before `oldest`
/// (pure); anything else is left alone.
fn old_partitions<'a>(text: &'a str, oldest: &str) -> Vec<&'a str> {
    text.lines()
        .map(str::trim)
        .filter(|p| p.len() == 8 && p.bytes().all(|b| b.is_ascii_digit()) && *p < oldest)
        .collect()
}

/// The ranking of `since..=to`'s `n` busiest links from window `w` and the
/// rest of the days (pure).
pub struct TopQuery<'a> {
    pub domain: &'a str,
    pub window: Window,
    /// `SELECT link, n …` of each link's scans on the days outside the
    /// window (a row a link and day, or more).
    pub rest: String,
    pub n: usize,
}

impl TopQuery<'_> {
    pub fn sql(&self) -> String {
        let Window { days, end, built } = self.window;
        let this = format!(
            "FROM window_totals PREWHERE domain = {} AND days = {days} AND end = '{end}' \
             AND built = toDateTime({built})",
            literal(self.domain)
        );
        let n = self.n.max(1);
        // T: the window's nth largest total (0 with fewer than n links);
        // S: the largest total of a link on the other days.
        let t = format!(
            "(SELECT if(count() < {n}, 0, toInt64(min(scans))) FROM \
             (SELECT scans {this} ORDER BY scans DESC LIMIT {n}))"
        );
        let s = format!(
            "(SELECT toInt64(max(t)) FROM (SELECT link, sum(n) AS t FROM ({rest}) GROUP BY link))",
            rest = self.rest
        );
        format!(
            "SELECT link, sum(n) AS total FROM (SELECT link, scans AS n {this} \
             AND toInt64(scans) >= {t} - {s} UNION ALL {rest}) \
             GROUP BY link HAVING total > 0 ORDER BY total DESC, link LIMIT {n} FORMAT TSV",
            rest = self.rest
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clickhouse::rollup::tests::{at, day};

    fn rolled(d: u32, at: i64) -> RolledDay {
        RolledDay {
            day: day(d),
            scans: 1,
            fallback: 0,
            at,
        }
    }

    #[test]
    fn a_window_ends_on_the_last_day_no_timer_rolls_again() {
        // The 28th is rolled again until 06:00 on the 29th.
        assert_eq!(settled_end(at(29, 5)), day(27));
        assert_eq!(settled_end(at(29, 6)), day(28));
        assert_eq!(settled_end(at(29, 23)), day(28));
        assert_eq!(spans().collect::<Vec<_>>(), [6, 29, 89, 364]);
        let w = Window {
            days: 6,
            end: day(28),
            built: 0,
        };
        assert_eq!(w.start(), day(23));
    }

    #[test]
    fn a_window_built_before_a_roll_of_its_days_is_not_used() {
        let w = Window {
            days: 6,
            end: day(28),
            built: 100,
        };
        assert!(usable(&w, &[rolled(23, 99), rolled(28, 50)]));
        assert!(!usable(&w, &[rolled(25, 101)]));
        // A roll in the second of the build may have come after it.
        assert!(!usable(&w, &[rolled(25, 100)]));
        assert_eq!(
            build_time(at(29, 0), &[rolled(25, 100)]),
            at(29, 0).timestamp()
        );
        let now = at(29, 0).timestamp();
        assert_eq!(build_time(at(29, 0), &[rolled(25, now)]), now + 1);
        assert_eq!(build_time(at(29, 0), &[]), now);
        // A day outside it may be rolled at any time.
        assert!(usable(&w, &[rolled(22, 900), rolled(29, 900)]));
        assert_eq!(due(&[w], &[rolled(25, 101)], day(28)), [6, 29, 89, 364]);
        assert_eq!(due(&[w], &[], day(28)), [29, 89, 364]);
        assert_eq!(due(&[w], &[], day(27)), [6, 29, 89, 364]);
    }

    #[test]
    fn the_longest_usable_window_inside_the_range_is_chosen() {
        let w = |days, end, built| Window { days, end, built };
        let windows = [
            w(6, day(28), 10),
            w(29, day(27), 10),
            w(29, day(28), 10),
            w(29, day(28), 20),
        ];
        // 30 days to the 29th: the month's, latest build and end.
        let month = day(30) - chrono::Days::new(30);
        assert_eq!(
            best(&windows, &[], month, day(29)),
            Some(w(29, day(28), 20))
        );
        // Its day 20 rolled before its latest build: that build holds.
        assert_eq!(
            best(&windows, &[rolled(20, 15)], month, day(29)),
            Some(w(29, day(28), 20))
        );
        // Rolled after every month's build: the week's, which does not
        // hold it.
        assert_eq!(
            best(&windows, &[rolled(20, 25)], month, day(29)),
            Some(w(6, day(28), 10))
        );
        // A week: the month's windows start before it.
        assert_eq!(
            best(&windows, &[], day(23), day(29)),
            Some(w(6, day(28), 10))
        );
        assert_eq!(best(&windows, &[], day(24), day(29)), None);
        let earlier = month - chrono::Days::new(1);
        assert_eq!(
            best(&windows, &[], earlier, day(27)),
            Some(w(29, day(27), 10))
        );
        assert_eq!(best(&windows, &[], day(1), day(27)), None);
        assert_eq!(best(&[], &[], day(1), day(29)), None);
    }

    #[test]
    fn a_build_writes_its_rows_then_its_mark_at_one_time() {
        let [rows, mark] =
            build_statements("qt", "x'.ie", 29, day(28), 1_795_900_000, Build::Whole);
        assert!(rows.starts_with(
            "INSERT INTO qt.window_totals SELECT 'x\\'.ie', 29, toDate('2026-11-28'), \
             toDateTime(1795900000), link, toUInt64(sum(n)) AS total FROM (SELECT value AS link"
        ));
        assert!(rows.contains("AND day >= '2026-10-31' AND day <= '2026-11-28' AND kind = 'link'"));
        assert!(mark.ends_with("AND end = '2026-11-28' AND built = toDateTime(1795900000)"));
    }

    #[test]
    fn a_window_is_built_from_the_one_a_day_before_when_that_is_usable() {
        let before = Window {
            days: 29,
            end: day(27),
            built: 100,
        };
        let others = [
            Window { days: 6, ..before },
            Window {
                end: day(26),
                ..before
            },
        ];
        let all = [others[0], others[1], before];
        assert_eq!(plan(&all, &[], 29, day(28)), Build::Next(before));
        assert_eq!(plan(&others, &[], 29, day(28)), Build::Whole);
        // Its first day, which leaves it, rolled again after it.
        assert_eq!(
            plan(&all, &[rolled(1, 50)], 29, day(28)),
            Build::Next(before)
        );
        let leaving = RolledDay {
            day: before.start(),
            scans: 1,
            fallback: 0,
            at: 101,
        };
        assert_eq!(plan(&all, &[leaving], 29, day(28)), Build::Whole);
        let [rows, _] = build_statements("qt", "d", 29, day(28), 200, Build::Next(before));
        assert!(rows.contains(
            "FROM qt.window_totals PREWHERE domain = 'd' AND days = 29 AND end = '2026-11-27' \
             AND built = toDateTime(100) UNION ALL SELECT value AS link, toInt64(scans) AS n \
             FROM qt.day_totals FINAL PREWHERE domain = 'd' AND day = '2026-11-28'"
        ));
        assert!(rows.contains(
            "UNION ALL SELECT value AS link, -toInt64(scans) AS n FROM qt.day_totals FINAL \
             PREWHERE domain = 'd' AND day = '2026-10-30' AND kind = 'link'"
        ));
        assert!(rows.ends_with("GROUP BY link HAVING sum(n) > 0"));
    }

    #[test]
    fn only_whole_day_partitions_before_the_oldest_kept_are_dropped() {
        let text = "20261124\n20261125\n20261128\ntuple()\n202611\n";
        assert_eq!(old_partitions(text, "20261125"), ["20261124"]);
        assert_eq!(partition(day(28) - chrono::Days::new(KEEP)), "20261125");
    }

    #[test]
    fn the_ranking_prunes_the_window_by_its_nth_total_less_the_rest_s_largest() {
        let q = TopQuery {
            domain: "qr.example",
            window: Window {
                days: 29,
                end: day(28),
                built: 7,
            },
            rest: "SELECT link, 1 AS n FROM x".to_owned(),
            n: 10,
        }
        .sql();
        assert!(q.contains(
            "FROM window_totals PREWHERE domain = 'qr.example' AND days = 29 \
             AND end = '2026-11-28' AND built = toDateTime(7) AND toInt64(scans) >= \
             (SELECT if(count() < 10, 0, toInt64(min(scans)))"
        ));
        assert!(q.contains("ORDER BY scans DESC LIMIT 10)) - (SELECT toInt64(max(t))"));
        assert!(q.ends_with("ORDER BY total DESC, link LIMIT 10 FORMAT TSV"));
    }
}

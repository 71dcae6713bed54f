//! Issue 38, `serve --scans-from`: the console's scan numbers from
//! ClickHouse.
//!
//! [`ScanCounts`] is synchronous, and every page reads its numbers through
//! it while it renders; ClickHouse answers over HTTP, and an actix worker
//! must never wait on HTTP in a blocking call. So a handler first asks,
//! in one async step, for exactly what its page shows ([`for_link`],
//! [`for_dashboard`], [`for_list`]: the queries of one step run at once),
//! and renders from an [`Asked`], a `ScanCounts` that answers from those
//! answers alone. With the embedded index the step asks nothing and hands
//! on the domain's own counts, so the pages have one path for both.
//!
//! The domain's counts say which they are: [`FromClickHouse`] answers
//! nothing in place (every sync method "not available", so the list's
//! "never scanned" filter, which needs every link's scans, says it is not
//! available) and names the client the step asks. A query that fails or
//! takes longer than the client's timeout leaves the page's numbers "—"
//! and [`Counts::away`] set, which the page says in one line: never a 500.

use std::sync::Arc;

use chrono::NaiveDate;

use super::scans::{KeyScans, ScanCounts};
use crate::clickhouse::ClickHouseError;
use crate::clickhouse::read::{self, DailyTotals, DomainScans};
use crate::scan_index::{DestinationScans, Shares};

/// How long a page waits for ClickHouse before it renders without its
/// numbers: a link page's queries take milliseconds, so this is an
/// outage's bound, not a slow query's.
pub const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// A domain's scan counts with `--scans-from`: none in place, the client
/// to ask before a page renders.
pub struct FromClickHouse {
    pub scans: DomainScans,
}

/// Every number "not available" in place; [`ScanCounts::ask_first`] names
/// the client a page asks first.
impl ScanCounts for FromClickHouse {
    fn ask_first(&self) -> Option<&DomainScans> {
        Some(&self.scans)
    }
}

/// What a page renders from: the counts, and whether ClickHouse was asked
/// and did not answer.
pub struct Counts {
    pub scans: Arc<dyn ScanCounts>,
    pub away: bool,
}

/// The answers one page asked for, each with the arguments it was asked
/// with: a question the page did not ask first is "not available".
#[derive(Debug, Default)]
pub struct Asked {
    key: Option<(String, NaiveDate, KeyScans)>,
    since: Option<(Vec<String>, NaiveDate, Vec<u64>)>,
    top: Option<(NaiveDate, Vec<(String, u64)>)>,
    daily: Option<(NaiveDate, DailyTotals)>,
    fallback_of: Option<(Vec<String>, Vec<u64>)>,
    key_shares: Option<(String, Shares)>,
    destinations: Option<(String, Vec<DestinationScans>)>,
    day_shares: Option<(NaiveDate, NaiveDate, Shares)>,
}

fn same(asked: &[String], keys: &[&str]) -> bool {
    asked.len() == keys.len() && asked.iter().zip(keys).all(|(a, k)| a == k)
}

impl ScanCounts for Asked {
    fn key(&self, key: &str, day: NaiveDate) -> Option<KeyScans> {
        let (asked, since, scans) = self.key.as_ref()?;
        (asked == key && *since <= day).then(|| KeyScans {
            daily: scans
                .daily
                .iter()
                .copied()
                .filter(|(d, _)| *d >= day)
                .collect(),
            ..scans.clone()
        })
    }

    fn scans_since(&self, keys: &[&str], day: NaiveDate) -> Option<Vec<u64>> {
        let (asked, since, scans) = self.since.as_ref()?;
        (same(asked, keys) && *since == day).then(|| scans.clone())
    }

    fn top_keys(&self, day: NaiveDate, n: usize) -> Option<Vec<(String, u64)>> {
        let (since, top) = self.top.as_ref()?;
        (*since == day).then(|| top.iter().take(n).cloned().collect())
    }

    fn daily_totals(&self, day: NaiveDate) -> Option<Vec<(NaiveDate, u64)>> {
        let (since, totals) = self.daily.as_ref()?;
        (*since == day).then(|| totals.daily.clone())
    }

    fn fallback_since(&self, day: NaiveDate) -> Option<u64> {
        let (since, totals) = self.daily.as_ref()?;
        (*since == day).then_some(totals.fallback)
    }

    fn fallback_of(&self, keys: &[&str]) -> Option<Vec<u64>> {
        let (asked, scans) = self.fallback_of.as_ref()?;
        same(asked, keys).then(|| scans.clone())
    }

    fn key_shares(&self, key: &str) -> Option<Shares> {
        let (asked, shares) = self.key_shares.as_ref()?;
        (asked == key).then(|| shares.clone())
    }

    fn key_destinations(&self, key: &str) -> Option<Vec<DestinationScans>> {
        let (asked, rows) = self.destinations.as_ref()?;
        (asked == key).then(|| rows.clone())
    }

    fn day_shares(&self, from: NaiveDate, to: NaiveDate) -> Option<Shares> {
        let (f, t, shares) = self.day_shares.as_ref()?;
        (*f == from && *t == to).then(|| shares.clone())
    }
}

/// The answers, or the page's numbers left out with the reason logged.
fn settled(asked: Result<Asked, ClickHouseError>) -> Counts {
    match asked {
        Ok(asked) => Counts {
            scans: Arc::new(asked),
            away: false,
        },
        Err(e) => {
            tracing::warn!(error = %e, "--scans-from: a console page's scan numbers from ClickHouse failed");
            Counts {
                scans: Arc::new(Asked::default()),
                away: true,
            }
        }
    }
}

fn in_place(scans: &Arc<dyn ScanCounts>) -> Counts {
    Counts {
        scans: Arc::clone(scans),
        away: false,
    }
}

fn owned(keys: &[&str]) -> Vec<String> {
    keys.iter().map(|k| (*k).to_owned()).collect()
}

/// A link page's numbers: the key's totals and its days since `since`,
/// its breakdowns and its destinations (`clickhouse::link_page`).
pub async fn for_link(scans: &Arc<dyn ScanCounts>, key: &str, since: NaiveDate) -> Counts {
    let Some(from) = scans.ask_first() else {
        return in_place(scans);
    };
    let today = chrono::Utc::now().date_naive();
    let asked = async {
        let crate::clickhouse::link_page::LinkPage {
            numbers: n,
            shares,
            destinations,
        } = crate::clickhouse::link_page::read(from, key, since, today).await?;
        Ok(Asked {
            key: Some((
                key.to_owned(),
                since,
                KeyScans {
                    scans: n.scans,
                    unique_scanners: n.unique_scanners,
                    head: n.head,
                    bots: n.bots,
                    not_found: n.not_found,
                    fallback: n.fallback,
                    daily: n.daily,
                },
            )),
            key_shares: Some((key.to_owned(), shares)),
            destinations: Some((key.to_owned(), destinations)),
            // Its fallback answers of all time, which the page and its
            // breakdowns download show beside the breakdowns.
            fallback_of: Some((vec![key.to_owned()], vec![n.fallback])),
            ..Asked::default()
        })
    };
    settled(asked.await)
}

/// The dashboard's numbers: which days are rolled up, then the `top`
/// busiest links, the daily totals and the breakdowns since `since` at
/// once, then the busiest links' fallback answers.
pub async fn for_dashboard(scans: &Arc<dyn ScanCounts>, since: NaiveDate, top: usize) -> Counts {
    let Some(from) = scans.ask_first() else {
        return in_place(scans);
    };
    let today = chrono::Utc::now().date_naive();
    let asked = async {
        let rolled = from.rolled(since, today.max(since)).await?;
        let (busiest, daily, shares) = tokio::join!(
            read::top_keys(from, since, today, top, &rolled),
            read::daily_totals(from, since, today, &rolled),
            from.day_shares(since, today, &rolled)
        );
        let (busiest, daily, shares) = (busiest?, daily?, shares?);
        let keys: Vec<&str> = busiest.iter().map(|(k, _)| k.as_str()).collect();
        let fallback = read::fallback_of(from, &keys).await?;
        Ok(Asked {
            fallback_of: Some((owned(&keys), fallback)),
            top: Some((since, busiest)),
            daily: Some((since, daily)),
            day_shares: Some((since, today, shares)),
            ..Asked::default()
        })
    };
    settled(asked.await)
}

/// The links list's numbers: the shown rows' scans since `since`.
pub async fn for_list(scans: &Arc<dyn ScanCounts>, keys: &[&str], since: NaiveDate) -> Counts {
    let Some(from) = scans.ask_first() else {
        return in_place(scans);
    };
    settled(read::scans_since(from, keys, since).await.map(|n| Asked {
        since: Some((owned(keys), since, n)),
        ..Asked::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clickhouse::Client;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, d).expect("date")
    }

    fn away(client: Client) -> DomainScans {
        DomainScans {
            client,
            domain: "qr.example".to_owned(),
            basis: crate::scan_index::Basis {
                time_zone: chrono_tz::UTC,
                geoip: None,
            },
        }
    }

    #[test]
    fn an_answer_is_given_only_to_the_question_asked() {
        let asked = Asked {
            key: Some((
                "a".into(),
                day(1),
                KeyScans {
                    scans: 3,
                    daily: vec![(day(1), 1), (day(2), 2)],
                    ..KeyScans::default()
                },
            )),
            since: Some((vec!["a".into(), "b".into()], day(2), vec![2, 0])),
            ..Asked::default()
        };
        assert_eq!(asked.key("b", day(1)), None);
        assert_eq!(
            asked.key("a", day(2)).map(|k| k.daily),
            Some(vec![(day(2), 2)])
        );
        assert_eq!(asked.key("a", day(1)).map(|k| k.scans), Some(3));
        assert_eq!(asked.scans_since(&["a", "b"], day(2)), Some(vec![2, 0]));
        assert_eq!(asked.scans_since(&["b", "a"], day(2)), None);
        assert_eq!(asked.top_keys(day(2), 10), None);
        assert!(!asked.with_all_time(&mut |_| {}));
    }

    #[tokio::test]
    async fn the_embedded_index_is_handed_on_unasked() {
        let index: Arc<dyn ScanCounts> = Arc::new(crate::console::scans::NoScanCounts);
        let counts = for_list(&index, &["a"], day(1)).await;
        assert!(!counts.away);
        assert!(Arc::ptr_eq(&counts.scans, &index));
    }

    /// A ClickHouse that takes the connection and never answers costs a
    /// page the client's timeout, then the page renders without numbers.
    #[tokio::test]
    async fn a_clickhouse_that_does_not_answer_in_time_is_away() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let port = listener.local_addr().expect("its address").port();
        let silent = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((conn, _)) = listener.accept().await {
                held.push(conn);
            }
        });
        let url: crate::clickhouse::ClickHouseUrl = format!("clickhouse://127.0.0.1:{port}/qrtag")
            .parse()
            .expect("url");
        let timeout = std::time::Duration::from_millis(300);
        let scans: Arc<dyn ScanCounts> = Arc::new(FromClickHouse {
            scans: away(Client::new(url, timeout)),
        });
        let started = std::time::Instant::now();
        let counts = for_link(&scans, "a", day(1)).await;
        let took = started.elapsed();
        assert!(counts.away);
        assert_eq!(counts.scans.key("a", day(1)), None);
        assert!(
            took >= timeout && took < timeout * 5,
            "waited {took:?} for a {timeout:?} timeout"
        );
        silent.abort();
    }

    #[tokio::test]
    async fn clickhouse_away_leaves_the_numbers_out_and_says_so() {
        let url: crate::clickhouse::ClickHouseUrl =
            "clickhouse://127.0.0.1:1/qrtag".parse().expect("url");
        let scans: Arc<dyn ScanCounts> = Arc::new(FromClickHouse {
            scans: away(Client::new(url, TIMEOUT)),
        });
        let counts = for_dashboard(&scans, day(1), 10).await;
        assert!(counts.away);
        assert_eq!(counts.scans.top_keys(day(1), 10), None);
        assert_eq!(counts.scans.daily_totals(day(1)), None);
    }
}

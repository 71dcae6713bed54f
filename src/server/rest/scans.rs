//! Scan counts: of one link (`/links/{key}/scans`) and of all links
//! (`/scans`), from the scan index the console reads (`ScanCounts`), so the
//! numbers are the console's and `qrtag stats`'s.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::problem::{self, Kind};
use super::{RestState, admit};
use crate::console::scans::Shares;
use crate::stats::dimensions::Dimension;
use crate::values::link_key::LinkKey;

/// How far back a range reaches when `since` is left out.
const DEFAULT_DAYS: i64 = 30;
/// The busiest links `/scans` names.
const TOP: usize = 10;

/// The days asked for, both inclusive, as `YYYY-MM-DD` (UTC days).
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct Range {
    /// The first day, not after `until` (default: 30 days before `until`).
    pub since: Option<String>,
    /// The last day (default: today).
    pub until: Option<String>,
    /// Only these breakdowns, comma-separated: device, os, browser,
    /// country, region, city (with a GeoIP database; a 400 without one),
    /// referrer, hour, weekday (either gives the hour × weekday map).
    /// Default: all kept.
    #[param(example = "device,country")]
    pub by: Option<String>,
    /// Issue 36: read by [`super::domain`].
    pub domain: Option<String>,
}

/// Scans with one value of a breakdown.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValueScans {
    pub value: String,
    pub scans: u64,
}

/// One breakdown: its values, busiest first (then by value). `(other)`
/// counts values past what the index keeps apart.
#[derive(Debug, Serialize, ToSchema)]
pub struct Breakdown {
    /// device, os, browser, country, region, city or referrer.
    pub dimension: String,
    pub values: Vec<ValueScans>,
}

/// The breakdowns the scan index keeps, as `qrtag stats --by` counts them
/// (bots left out).
#[derive(Debug, Serialize, ToSchema)]
pub struct Breakdowns {
    /// Scans counted in them.
    pub scans: u64,
    /// The zone hours and weekdays are counted in (`serve --time-zone`).
    pub time_zone: String,
    pub dimensions: Vec<Breakdown>,
    /// Scans per weekday (Monday first) and hour (0 to 23): seven rows of
    /// 24, when asked for (`by` without hour or weekday leaves it out).
    pub hour_weekday: Option<Vec<Vec<u64>>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Day {
    pub day: String,
    pub scans: u64,
}

/// One link's scans.
#[derive(Debug, Serialize, ToSchema)]
pub struct LinkScans {
    pub key: String,
    /// Scans of all time, by `qrtag stats`'s definitions.
    pub scans: u64,
    pub unique_scanners: u64,
    pub head: u64,
    pub bots: u64,
    pub not_found: u64,
    /// Scans in the range.
    pub in_range: u64,
    /// Per day in the range, quiet days as 0.
    pub daily: Vec<Day>,
    /// The link's breakdowns of all time (not limited to the range);
    /// null when the scan index keeps none.
    pub breakdowns: Option<Breakdowns>,
    /// Where the link's scans were sent, of all time, busiest first
    /// (issue 34): which of its rules answered, as `qrtag stats --by
    /// destination --key KEY` counts it.
    pub destinations: Vec<DestinationRow>,
}

/// Scans of one link sent to one destination (issue 34).
#[derive(Debug, Serialize, ToSchema)]
pub struct DestinationRow {
    /// The `Location` sent, as the access log holds it; null for the
    /// destinations past the 16 a link keeps apart, together.
    #[schema(example = "https://example.com/landing?variant=a")]
    pub destination: Option<String>,
    /// Answers with the link's fallback while it was dead (issue 33),
    /// which are no scans.
    pub fallback: bool,
    pub scans: u64,
}

impl From<crate::console::scans::DestinationScans> for DestinationRow {
    fn from(d: crate::console::scans::DestinationScans) -> DestinationRow {
        DestinationRow {
            destination: d.destination,
            fallback: d.fallback,
            scans: d.scans,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TopLink {
    pub key: String,
    pub scans: u64,
}

/// Every link's scans.
#[derive(Debug, Serialize, ToSchema)]
pub struct AllScans {
    /// Scans in the range.
    pub in_range: u64,
    pub daily: Vec<Day>,
    /// The busiest links since `since` (to today).
    pub top: Vec<TopLink>,
    /// Every link's breakdowns over the range; null when the scan index
    /// keeps none.
    pub breakdowns: Option<Breakdowns>,
}

/// The breakdowns `by` may name: `qrtag stats --by`'s but destination,
/// which the scan index keeps per link only (issue 34: a link's
/// `destinations`).
pub fn breakdowns() -> impl Iterator<Item = Dimension> {
    Dimension::ALL
        .into_iter()
        .filter(|d| *d != Dimension::Destination)
}

/// The dimensions `by` names (pure): `None` for all of them.
fn wanted(by: Option<&str>) -> Result<Option<Vec<Dimension>>, String> {
    let Some(by) = by else {
        return Ok(None);
    };
    by.split(',')
        .map(|name| {
            breakdowns()
                .find(|d| d.name() == name.trim())
                .ok_or_else(|| {
                    format!(
                        "by: {name:?} is not a breakdown (device, os, browser, country, region, city, referrer, hour, weekday)"
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The index's breakdowns as the API gives them, `wanted` only. A wanted
/// dimension the index does not keep (a place without `--geoip-db`) is an
/// error naming it, as `qrtag stats --by` refuses it: an answer without it
/// would read as "no scans from anywhere".
fn body(s: Shares, wanted: Option<&[Dimension]>) -> Result<Breakdowns, String> {
    if let Some(missing) = wanted
        .into_iter()
        .flatten()
        .find(|d| !matches!(d, Dimension::Hour | Dimension::Weekday) && s.get(**d).is_none())
    {
        return Err(format!(
            "by: {missing} needs a GeoIP database, and this server runs without --geoip-db"
        ));
    }
    let asked = |d: Dimension| wanted.is_none_or(|w| w.contains(&d));
    let heat = asked(Dimension::Hour) || asked(Dimension::Weekday);
    Ok(Breakdowns {
        scans: s.scans(),
        time_zone: s.time_zone.name().to_owned(),
        hour_weekday: heat.then(|| s.heat.iter().map(|d| d.to_vec()).collect()),
        dimensions: s
            .dimensions
            .into_iter()
            .filter(|share| asked(share.dimension))
            .map(|share| Breakdown {
                dimension: share.dimension.name().to_owned(),
                values: share
                    .rows
                    .into_iter()
                    .map(|(value, scans)| ValueScans { value, scans })
                    .collect(),
            })
            .collect(),
    })
}

/// The range's days (pure): `since` to `until`, checked in order.
fn days(range: &Range, today: NaiveDate) -> Result<(NaiveDate, NaiveDate), String> {
    let parse = |name: &str, s: &str| {
        NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .map_err(|_| format!("{name}: {s:?} is not a date (YYYY-MM-DD)"))
    };
    let until = match &range.until {
        Some(s) => parse("until", s)?,
        None => today,
    };
    let since = match &range.since {
        Some(s) => parse("since", s)?,
        None => until - chrono::Duration::days(DEFAULT_DAYS - 1),
    };
    if since > until {
        return Err("since is after until".into());
    }
    Ok((since, until))
}

fn in_range(daily: &[(NaiveDate, u64)], until: NaiveDate) -> (u64, Vec<Day>) {
    let days: Vec<Day> = daily
        .iter()
        .filter(|(d, _)| *d <= until)
        .map(|(d, n)| Day {
            day: d.format("%Y-%m-%d").to_string(),
            scans: *n,
        })
        .collect();
    (days.iter().map(|d| d.scans).sum(), days)
}

fn unavailable() -> HttpResponse {
    problem::respond(
        Kind::Unavailable,
        "scan counts are not available on this node yet (they need --console or --scan-log, and the index's first pass over the logs)",
    )
}

/// What a request asks for: its days and breakdowns.
struct Asked {
    since: NaiveDate,
    until: NaiveDate,
    by: Option<Vec<Dimension>>,
}

/// The range and breakdowns asked for. The caller was admitted (and
/// counted against its key's rate) by the handler.
async fn checked(req: &HttpRequest) -> Result<Asked, HttpResponse> {
    let range = web::Query::<Range>::from_query(req.query_string())
        .map_err(|e| problem::respond(Kind::BadRequest, e))?;
    let bad = |e: String| problem::respond(Kind::BadRequest, e);
    let (since, until) = days(&range, chrono::Utc::now().date_naive()).map_err(bad)?;
    let by = wanted(range.by.as_deref()).map_err(bad)?;
    Ok(Asked { since, until, by })
}

#[utoipa::path(
    get, path = "/api/v1/links/{key}/scans", tag = "scans",
    params(("key" = String, Path, description = "The link's key", example = "spring"), Range),
    responses(
        (status = 200, body = LinkScans),
        (status = 400, body = problem::Problem, content_type = "application/problem+json"),
        (status = 401, body = problem::Problem, content_type = "application/problem+json"),
        (status = 404, body = problem::Problem, content_type = "application/problem+json"),
        (status = 429, body = problem::Problem, content_type = "application/problem+json"),
        (status = 503, body = problem::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn of_link(req: &HttpRequest, state: &RestState, key: LinkKey) -> HttpResponse {
    // Reached through `links::get`, which admitted the caller.
    let Asked { since, until, by } = match checked(req).await {
        Ok(r) => r,
        Err(res) => return res,
    };
    if let Err(res) = super::read(state, &key).await {
        return res;
    }
    if let Some(from) = &state.scans_from {
        return from_clickhouse(from, &key, since, until, by.as_deref()).await;
    }
    let Some(k) = state.scans.key(key.as_str(), since) else {
        return unavailable();
    };
    let (in_range, daily) = in_range(&k.daily, until);
    let breakdowns = match state
        .scans
        .key_shares(key.as_str())
        .map(|s| body(s, by.as_deref()))
    {
        Some(Err(e)) => return problem::respond(Kind::BadRequest, e),
        Some(Ok(b)) => Some(b),
        None => None,
    };
    HttpResponse::Ok().json(LinkScans {
        key: key.to_string(),
        scans: k.scans,
        unique_scanners: k.unique_scanners,
        head: k.head,
        bots: k.bots,
        not_found: k.not_found,
        in_range,
        daily,
        breakdowns,
        destinations: state
            .scans
            .key_destinations(key.as_str())
            .unwrap_or_default()
            .into_iter()
            .map(DestinationRow::from)
            .collect(),
    })
}

/// Issue 38, `--scans-from`: the link's numbers and breakdowns from
/// ClickHouse, by the index's definitions, at once.
async fn from_clickhouse(
    from: &crate::clickhouse::read::DomainScans,
    key: &LinkKey,
    since: NaiveDate,
    until: NaiveDate,
    by: Option<&[Dimension]>,
) -> HttpResponse {
    let today = chrono::Utc::now().date_naive();
    match crate::clickhouse::link_page::read(from, key.as_str(), since, today).await {
        Ok(crate::clickhouse::link_page::LinkPage {
            numbers: n,
            shares,
            destinations,
        }) => {
            let breakdowns = match body(shares, by) {
                Ok(b) => b,
                Err(e) => return problem::respond(Kind::BadRequest, e),
            };
            let (in_range, daily) = in_range(&n.daily, until);
            HttpResponse::Ok().json(LinkScans {
                key: key.to_string(),
                scans: n.scans,
                unique_scanners: n.unique_scanners,
                head: n.head,
                bots: n.bots,
                not_found: n.not_found,
                in_range,
                daily,
                breakdowns: Some(breakdowns),
                destinations: destinations.into_iter().map(DestinationRow::from).collect(),
            })
        }
        Err(e) => {
            tracing::warn!(error = %e, "--scans-from: reading a link's scans from ClickHouse failed");
            clickhouse_away()
        }
    }
}

#[utoipa::path(
    get, path = "/api/v1/scans", tag = "scans",
    params(Range),
    responses(
        (status = 200, body = AllScans),
        (status = 400, body = problem::Problem, content_type = "application/problem+json"),
        (status = 401, body = problem::Problem, content_type = "application/problem+json"),
        (status = 429, body = problem::Problem, content_type = "application/problem+json"),
        (status = 503, body = problem::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn all(req: HttpRequest, state: super::domain::InDomain) -> HttpResponse {
    if let Err(res) = admit(&req, &state, super::needs::READ).await {
        return res;
    }
    let Asked { since, until, by } = match checked(&req).await {
        Ok(r) => r,
        Err(res) => return res,
    };
    if let Some(from) = &state.scans_from {
        return all_from_clickhouse(from, since, until, by.as_deref()).await;
    }
    let (Some(daily), Some(top)) = (
        state.scans.daily_totals(since),
        state.scans.top_keys(since, TOP),
    ) else {
        return unavailable();
    };
    let (in_range, daily) = in_range(&daily, until);
    let breakdowns = match state
        .scans
        .day_shares(since, until)
        .map(|s| body(s, by.as_deref()))
    {
        Some(Err(e)) => return problem::respond(Kind::BadRequest, e),
        Some(Ok(b)) => Some(b),
        None => None,
    };
    HttpResponse::Ok().json(AllScans {
        in_range,
        daily,
        top: top
            .into_iter()
            .map(|(key, scans)| TopLink { key, scans })
            .collect(),
        breakdowns,
    })
}

/// Issue 38, `--scans-from`: every link's numbers and breakdowns from
/// ClickHouse, by the index's definitions (the days, the busiest links
/// and the breakdowns at once).
async fn all_from_clickhouse(
    from: &crate::clickhouse::read::DomainScans,
    since: NaiveDate,
    until: NaiveDate,
    by: Option<&[Dimension]>,
) -> HttpResponse {
    let today = chrono::Utc::now().date_naive();
    let away = |e: crate::clickhouse::ClickHouseError| {
        tracing::warn!(error = %e, "--scans-from: reading all links' scans from ClickHouse failed");
        clickhouse_away()
    };
    // Which days are rolled up, asked once for the three reads.
    let rolled = match from.rolled(since, today.max(until).max(since)).await {
        Ok(r) => r,
        Err(e) => return away(e),
    };
    let (daily, top, shares) = tokio::join!(
        crate::clickhouse::read::daily_totals(from, since, today, &rolled),
        crate::clickhouse::read::top_keys(from, since, today, TOP, &rolled),
        from.day_shares(since, until, &rolled)
    );
    match (daily, top, shares) {
        (Ok(daily), Ok(top), Ok(shares)) => {
            let breakdowns = match body(shares, by) {
                Ok(b) => b,
                Err(e) => return problem::respond(Kind::BadRequest, e),
            };
            let (in_range, daily) = in_range(&daily.daily, until);
            HttpResponse::Ok().json(AllScans {
                in_range,
                daily,
                top: top
                    .into_iter()
                    .map(|(key, scans)| TopLink { key, scans })
                    .collect(),
                breakdowns: Some(breakdowns),
            })
        }
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => away(e),
    }
}

fn clickhouse_away() -> HttpResponse {
    problem::respond(
        Kind::Unavailable,
        "scan counts are not available: ClickHouse (--scans-from) did not answer; try again",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").expect("date")
    }

    #[test]
    fn ranges_default_to_thirty_days_to_today_and_must_be_in_order() {
        let today = date("2026-11-25");
        let none = Range {
            since: None,
            until: None,
            by: None,
            domain: None,
        };
        assert_eq!(days(&none, today), Ok((date("2026-10-27"), today)));
        let bad = Range {
            since: Some("2026-11-26".into()),
            until: Some("2026-11-25".into()),
            by: None,
            domain: None,
        };
        assert!(days(&bad, today).is_err());
        let bad = Range {
            since: Some("yesterday".into()),
            until: None,
            by: None,
            domain: None,
        };
        assert!(days(&bad, today).unwrap_err().contains("since"));
    }

    #[test]
    fn by_names_breakdowns_and_refuses_others() {
        assert_eq!(wanted(None), Ok(None));
        assert_eq!(
            wanted(Some("device, country")),
            Ok(Some(vec![Dimension::Device, Dimension::Country]))
        );
        assert!(wanted(Some("day")).unwrap_err().contains("\"day\""));
        assert!(wanted(Some("")).is_err());
    }

    #[test]
    fn a_breakdown_the_index_does_not_keep_is_refused_by_name() {
        let shares = || Shares {
            dimensions: vec![crate::console::scans::Share {
                dimension: Dimension::Device,
                rows: vec![("phone".into(), 2)],
            }],
            heat: [[0; 24]; 7],
            time_zone: chrono_tz::UTC,
        };
        let err = body(shares(), Some(&[Dimension::Device, Dimension::Region])).unwrap_err();
        assert!(
            err.contains("region") && err.contains("--geoip-db"),
            "{err}"
        );
        let ok = body(shares(), Some(&[Dimension::Device, Dimension::Hour])).expect("kept");
        assert_eq!(ok.dimensions.len(), 1);
        assert!(ok.hour_weekday.is_some());
        assert!(body(shares(), None).is_ok());
    }

    #[test]
    fn days_after_until_are_left_out() {
        let daily = [(date("2026-11-24"), 2), (date("2026-11-25"), 3)];
        let (n, days) = in_range(&daily, date("2026-11-24"));
        assert_eq!((n, days.len()), (2, 1));
    }
}

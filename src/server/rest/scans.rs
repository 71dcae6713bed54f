//! Scan counts: of one link (`/links/{key}/scans`) and of all links
//! (`/scans`), from the scan index the console reads (`ScanCounts`), so the
//! numbers are the console's and `qrtag stats`'s.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::problem::{self, Kind};
use super::{RestState, admit};
use crate::link_key::LinkKey;

/// How far back a range reaches when `since` is left out.
const DEFAULT_DAYS: i64 = 30;
/// The busiest links `/scans` names.
const TOP: usize = 10;

/// The days asked for, both inclusive, as `YYYY-MM-DD` (UTC days).
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct Range {
    /// The first day (default: 30 days ago).
    pub since: Option<String>,
    /// The last day (default: today).
    pub until: Option<String>,
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

async fn checked(
    req: &HttpRequest,
    state: &RestState,
) -> Result<(NaiveDate, NaiveDate), HttpResponse> {
    admit(req, state, false).await?;
    let range = web::Query::<Range>::from_query(req.query_string())
        .map_err(|e| problem::respond(Kind::BadRequest, e))?;
    days(&range, chrono::Utc::now().date_naive()).map_err(|e| problem::respond(Kind::BadRequest, e))
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
    let (since, until) = match checked(req, state).await {
        Ok(r) => r,
        Err(res) => return res,
    };
    if let Err(res) = super::links::read(state, &key).await {
        return res;
    }
    let Some(k) = state.scans.key(key.as_str(), since) else {
        return unavailable();
    };
    let (in_range, daily) = in_range(&k.daily, until);
    HttpResponse::Ok().json(LinkScans {
        key: key.to_string(),
        scans: k.scans,
        unique_scanners: k.unique_scanners,
        head: k.head,
        bots: k.bots,
        not_found: k.not_found,
        in_range,
        daily,
    })
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
pub async fn all(req: HttpRequest, state: web::Data<RestState>) -> HttpResponse {
    let (since, until) = match checked(&req, &state).await {
        Ok(r) => r,
        Err(res) => return res,
    };
    let (Some(daily), Some(top)) = (
        state.scans.daily_totals(since),
        state.scans.top_keys(since, TOP),
    ) else {
        return unavailable();
    };
    let (in_range, daily) = in_range(&daily, until);
    HttpResponse::Ok().json(AllScans {
        in_range,
        daily,
        top: top
            .into_iter()
            .map(|(key, scans)| TopLink { key, scans })
            .collect(),
    })
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
        };
        assert_eq!(days(&none, today), Ok((date("2026-10-27"), today)));
        let bad = Range {
            since: Some("2026-11-26".into()),
            until: Some("2026-11-25".into()),
        };
        assert!(days(&bad, today).is_err());
        let bad = Range {
            since: Some("yesterday".into()),
            until: None,
        };
        assert!(days(&bad, today).unwrap_err().contains("since"));
    }

    #[test]
    fn days_after_until_are_left_out() {
        let daily = [(date("2026-11-24"), 2), (date("2026-11-25"), 3)];
        let (n, days) = in_range(&daily, date("2026-11-24"));
        assert_eq!((n, days.len()), (2, 1));
    }
}

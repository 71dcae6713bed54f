//! `qrtag rule add`'s condition flags turned into a rule's JSON object
//! (issue 34), pure. Only the shorthand is read here (`--days mon-fri`,
//! `--hours 11:00-15:00`, `--split 0-50`, times in the command's zone); the
//! values themselves are judged by the core (`Rules::from_json`), so the
//! command line accepts exactly what a document accepts and says it in the
//! core's words.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use clap::Args;
use serde_json::{Map, Value, json};

use crate::link::rules::window::DaySet;

/// The conditions of one rule, as flags; each list flag takes commas.
#[derive(Debug, Clone, Default, Args)]
pub struct Conditions {
    /// The scanner's OS, from its User-Agent: ios, ipados, android, other.
    #[arg(long, value_name = "OS,...", value_delimiter = ',')]
    pub os: Vec<String>,
    /// The scanner's device class, from its User-Agent: phone, tablet,
    /// desktop.
    #[arg(long, value_name = "CLASS,...", value_delimiter = ',')]
    pub class: Vec<String>,
    /// The country of the scanner's address (ISO 3166-1 codes: IE, GB):
    /// needs a GeoIP database (--geoip-db, as serve has it).
    #[arg(long, value_name = "CC,...", value_delimiter = ',')]
    pub country: Vec<String>,
    /// The scanner's most preferred language (Accept-Language), matched
    /// as RFC 4647 basic filtering: en holds for en-GB.
    #[arg(long, value_name = "TAG,...", value_delimiter = ',')]
    pub lang: Vec<String>,
    /// From this time on: RFC 3339, or a date or `YYYY-MM-DD HH:MM` in
    /// --tz (a date is its first minute).
    #[arg(long, value_name = "TIME")]
    pub from: Option<String>,
    /// Until this time (not included): RFC 3339, or a date or `YYYY-MM-DD
    /// HH:MM` in --tz (a date is the end of that day).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// On these weekdays, in --tz: `mon-fri`, `sat,sun`.
    #[arg(long, value_name = "DAYS")]
    pub days: Option<String>,
    /// Between these local times, in --tz: `11:00-15:00`; an end before
    /// the start crosses midnight (`22:00-02:00`).
    #[arg(long, value_name = "HH:MM-HH:MM")]
    pub hours: Option<String>,
    /// A percentage of scanners, sticky per person: `0-50` and `50-100`
    /// for a 50/50 test.
    #[arg(long, value_name = "LO-HI")]
    pub split: Option<String>,
}

/// A flag written in a shape no rule has; said as one line naming it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--{flag}: {why}")]
pub struct FlagError {
    pub flag: &'static str,
    pub why: String,
}

fn bad(flag: &'static str, why: impl Into<String>) -> FlagError {
    FlagError {
        flag,
        why: why.into(),
    }
}

impl Conditions {
    /// The rule's object for `url`: the lists as given, the shorthand
    /// spelled out, `tz` (the command's zone) with days or hours. The core
    /// judges the result; a rule with no condition is its refusal too.
    pub fn to_rule(&self, url: &str, tz: Tz, now: DateTime<Utc>) -> Result<Value, FlagError> {
        let mut rule = Map::new();
        rule.insert("url".into(), json!(url));
        for (field, items) in [
            ("os", &self.os),
            ("class", &self.class),
            ("country", &self.country),
            ("lang", &self.lang),
        ] {
            if !items.is_empty() {
                rule.insert(field.into(), json!(items));
            }
        }
        if let Some(t) = &self.from {
            rule.insert(
                "from".into(),
                json!(instant(t, tz, now, Edge::Start, "from")?),
            );
        }
        if let Some(t) = &self.until {
            rule.insert(
                "until".into(),
                json!(instant(t, tz, now, Edge::End, "until")?),
            );
        }
        if let Some(d) = &self.days {
            rule.insert("days".into(), json!(days(d)?));
        }
        if let Some(h) = &self.hours {
            let (start, end) = pair(h, "hours", "11:00-15:00")?;
            rule.insert("hours".into(), json!([start, end]));
        }
        if self.days.is_some() || self.hours.is_some() {
            rule.insert("tz".into(), json!(tz.name()));
        }
        if let Some(s) = &self.split {
            let (lo, hi) = pair(s, "split", "0-50")?;
            let number = |p: &str| {
                p.trim()
                    .parse::<u64>()
                    .map_err(|_| bad("split", format!("`{p}` is not a whole percentage")))
            };
            rule.insert("split".into(), json!([number(lo)?, number(hi)?]));
        }
        Ok(Value::Object(rule))
    }
}

/// `A-B` split at its one `-`.
fn pair<'a>(s: &'a str, flag: &'static str, e_g: &str) -> Result<(&'a str, &'a str), FlagError> {
    s.split_once('-')
        .filter(|(a, b)| !a.is_empty() && !b.contains('-'))
        .map(|(a, b)| (a.trim(), b.trim()))
        .ok_or_else(|| {
            bad(
                flag,
                format!("`{s}` is not a range: give START-END, e.g. {e_g}"),
            )
        })
}

/// `mon-fri`, `sat,sun`, `mon-wed,fri`: the weekdays in order from
/// Monday; a range may wrap (`fri-mon`). A name that is no day is passed
/// on for the core to refuse in its words.
fn days(s: &str) -> Result<Vec<String>, FlagError> {
    let mut names = Vec::new();
    for part in s.split(',').map(str::trim) {
        match part.split_once('-') {
            None => names.push(part.to_owned()),
            Some((a, b)) => {
                let index = |d: &str| {
                    DaySet::index(d.trim()).ok_or_else(|| {
                        bad(
                            "days",
                            format!("`{d}` is not a day: give mon, tue, wed, thu, fri, sat or sun"),
                        )
                    })
                };
                let (mut i, end) = (index(a)?, index(b)?);
                loop {
                    names.push(DaySet::NAMES[i as usize].to_owned());
                    if i == end {
                        break;
                    }
                    i = (i + 1) % 7;
                }
            }
        }
    }
    Ok(names)
}

#[derive(Clone, Copy)]
enum Edge {
    Start,
    End,
}

/// A `--from`/`--until` time as a rule stores it (RFC 3339, UTC, to the
/// second). RFC 3339 as written; a date is the start of that day in `tz`
/// (the end, for `--until`: the next midnight, since `until` is not
/// included); a date and time is in `tz`; a duration (`90m`, `2d`) counts
/// from `now`, as `--expires` takes it.
fn instant(
    s: &str,
    tz: Tz,
    now: DateTime<Utc>,
    edge: Edge,
    flag: &'static str,
) -> Result<String, FlagError> {
    let s = s.trim();
    if DateTime::parse_from_rfc3339(s).is_ok() {
        return Ok(s.to_owned());
    }
    let local = if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        let d = match edge {
            Edge::Start => Some(d),
            Edge::End => d.succ_opt(),
        };
        d.and_then(|d| d.and_hms_opt(0, 0, 0))
    } else {
        ["%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S"]
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
    };
    let utc = match local {
        Some(local) => in_zone(local, tz).ok_or_else(|| {
            bad(
                flag,
                format!("{s} does not exist in {} (the clocks skip it)", tz.name()),
            )
        })?,
        None => match crate::values::expiry::Expiry::parse(s, now) {
            Ok(crate::values::expiry::Expiry::At(t)) => t,
            _ => {
                return Err(bad(
                    flag,
                    format!(
                        "`{s}` is not a time: give RFC 3339 (2026-12-01T09:00:00Z), a date \
                         (2026-12-01), a date and time in --tz (2026-12-01 09:00) or a \
                         duration from now (90m, 2d)"
                    ),
                ));
            }
        },
    };
    Ok(crate::values::timestamp::time_text(utc))
}

/// A local time in `tz`; the earlier of two in an autumn fold.
fn in_zone(local: NaiveDateTime, tz: Tz) -> Option<DateTime<Utc>> {
    tz.from_local_datetime(&local)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
}

/// `--at` of `qrtag try`: the same forms as `--from`.
pub fn at(s: &str, tz: Tz, now: DateTime<Utc>) -> Result<DateTime<Utc>, FlagError> {
    let text = instant(s, tz, now, Edge::Start, "at")?;
    DateTime::parse_from_rfc3339(&text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| bad("at", format!("`{s}` is not a time")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-28T09:00:00Z")
            .expect("now")
            .with_timezone(&Utc)
    }

    #[test]
    fn shorthand_is_spelled_out() {
        let c = Conditions {
            os: vec!["ios".into(), "ipados".into()],
            days: Some("mon-fri".into()),
            hours: Some("11:00-15:00".into()),
            split: Some("0-50".into()),
            ..Conditions::default()
        };
        let rule = c
            .to_rule(
                "https://example.com/lunch",
                chrono_tz::Europe::Dublin,
                now(),
            )
            .expect("rule");
        assert_eq!(
            rule,
            json!({"url": "https://example.com/lunch", "os": ["ios", "ipados"],
                   "days": ["mon", "tue", "wed", "thu", "fri"], "hours": ["11:00", "15:00"],
                   "tz": "Europe/Dublin", "split": [0, 50]})
        );
        assert_eq!(days("sat,sun").expect("days"), ["sat", "sun"]);
        assert_eq!(days("fri-mon").expect("days"), ["fri", "sat", "sun", "mon"]);
        assert_eq!(days("mon-wed,fri").expect("days").len(), 4);
        assert_eq!(days("Mon").expect("passed on"), ["Mon"]);
        assert!(days("mon-fry").is_err());
        assert!(pair("11:00", "hours", "x").is_err());
        assert!(pair("1-2-3", "split", "x").is_err());
    }

    #[test]
    fn times_in_the_zone() {
        let dublin = chrono_tz::Europe::Dublin;
        let t = |s: &str, edge| instant(s, dublin, now(), edge, "from");
        assert_eq!(
            t("2026-12-01T08:00:00Z", Edge::Start).as_deref(),
            Ok("2026-12-01T08:00:00Z")
        );
        assert_eq!(
            t("2026-07-01 09:00", Edge::Start).as_deref(),
            Ok("2026-07-01T08:00:00Z")
        );
        assert_eq!(
            t("2026-12-01", Edge::Start).as_deref(),
            Ok("2026-12-01T00:00:00Z")
        );
        assert_eq!(
            t("2026-07-01", Edge::End).as_deref(),
            Ok("2026-07-01T23:00:00Z")
        );
        assert_eq!(t("2d", Edge::Start).as_deref(), Ok("2026-11-30T09:00:00Z"));
        // The spring gap in Dublin: 01:30 on 29 March 2026 never happens.
        assert!(t("2026-03-29 01:30", Edge::Start).is_err());
        let e = t("next week", Edge::Start).expect_err("not a time");
        assert!(e.to_string().starts_with("--from: `next week`"), "{e}");
    }
}

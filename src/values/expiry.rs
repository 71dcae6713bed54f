//! When a link stops redirecting, as a person writes it on the command line:
//! an RFC 3339 time, a bare date (the end of that day), a duration from now
//! (`30d`, `12h`, `2w`), or `never`.

use chrono::{DateTime, Duration, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;

/// A parsed `--expires` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    At(DateTime<Utc>),
    /// A bare date: the end of that day (23:59:59) in the time zone the
    /// command runs with, which the parser does not know yet.
    EndOf(NaiveDate),
    Never,
}

/// An expiry before now: the tag would answer 404 from the moment it is
/// written, which is never what a person typing a date meant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is in the past (it is now {}): the tag would answer 404 at once", show(*.at, *.tz), show(*.now, *.tz))]
pub struct PastExpiry {
    pub at: DateTime<Utc>,
    pub now: DateTime<Utc>,
    pub tz: Tz,
}

/// A time as people read it in `tz`, to the minute: `2026-12-31 23:59 UTC`.
pub fn show(t: DateTime<Utc>, tz: Tz) -> String {
    t.with_timezone(&tz).format("%Y-%m-%d %H:%M %Z").to_string()
}

/// `at` if it is after `now`, or why not.
pub fn check_future(at: DateTime<Utc>, now: DateTime<Utc>, tz: Tz) -> Result<(), PastExpiry> {
    if at > now {
        Ok(())
    } else {
        Err(PastExpiry { at, now, tz })
    }
}

impl Expiry {
    /// Reads `s`; a duration counts from `now`.
    pub fn parse(s: &str, now: DateTime<Utc>) -> Result<Self, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("never") {
            return Ok(Expiry::Never);
        }
        if let Ok(t) = DateTime::parse_from_rfc3339(s) {
            return Ok(Expiry::At(t.with_timezone(&Utc)));
        }
        if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            return Ok(Expiry::EndOf(d));
        }
        let bad = || {
            format!(
                "`{s}` is not a time: give an RFC 3339 time (2026-12-31T23:59:59Z), \
                 a date (2026-12-31, the end of that day), a duration from now \
                 (90m, 12h, 30d, 2w) or never"
            )
        };
        // The last character, not byte: a multi-byte one is no unit, and
        // must not split a character (found by schemathesis on the API).
        let unit_at = s
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
            .filter(|&i| i > 0)
            .ok_or_else(bad)?;
        let (number, unit) = s.split_at(unit_at);
        let n: i64 = number.parse().map_err(|_| bad())?;
        let duration = match unit {
            "s" => Duration::try_seconds(n),
            "m" => Duration::try_minutes(n),
            "h" => Duration::try_hours(n),
            "d" => Duration::try_days(n),
            "w" => Duration::try_weeks(n),
            _ => None,
        }
        .filter(|d| *d > Duration::zero())
        .ok_or_else(bad)?;
        now.checked_add_signed(duration)
            .map(Expiry::At)
            .ok_or_else(bad)
    }

    /// The time to store, `None` for no expiry; a bare date ends at
    /// 23:59:59 in `tz` (the later one when a clock change repeats it).
    pub fn time(self, tz: Tz) -> Option<DateTime<Utc>> {
        match self {
            Expiry::At(t) => Some(t),
            Expiry::EndOf(d) => {
                let local = d.and_hms_opt(23, 59, 59)?;
                let t = tz.from_local_datetime(&local);
                // A time in a clock change's gap does not exist: the
                // day ends at the gap's start, so take the hour before.
                let t = t.latest().or_else(|| {
                    tz.from_local_datetime(&(local - Duration::hours(1)))
                        .latest()
                })?;
                Some(t.with_timezone(&Utc))
            }
            Expiry::Never => None,
        }
    }
}

/// A form's expiry field as the time to store: empty or `never` for none,
/// and a time already past refused (a form has no `--force`).
pub fn parse_future(s: &str, now: DateTime<Utc>, tz: Tz) -> Result<Option<DateTime<Utc>>, String> {
    if s.trim().is_empty() {
        return Ok(None);
    }
    let time = Expiry::parse(s, now)?.time(tz);
    if let Some(t) = time {
        check_future(t, now, tz).map_err(|e| e.to_string())?;
    }
    Ok(time)
}

/// For clap: durations count from the moment the command line is read.
pub fn parse_arg(s: &str) -> Result<Expiry, String> {
    Expiry::parse(s, Utc::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-24T06:00:00Z")
            .expect("time")
            .with_timezone(&Utc)
    }

    fn at(s: &str) -> Expiry {
        Expiry::At(
            DateTime::parse_from_rfc3339(s)
                .expect("time")
                .with_timezone(&Utc),
        )
    }

    #[test]
    fn times_durations_and_never() {
        for (input, want) in [
            ("2026-12-31T23:59:59Z", at("2026-12-31T23:59:59Z")),
            ("2026-12-31T23:59:59+01:00", at("2026-12-31T22:59:59Z")),
            ("30d", at("2026-12-24T06:00:00Z")),
            ("2w", at("2026-12-08T06:00:00Z")),
            ("12h", at("2026-11-24T18:00:00Z")),
            ("90m", at("2026-11-24T07:30:00Z")),
            ("45s", at("2026-11-24T06:00:45Z")),
            ("never", Expiry::Never),
            ("NEVER", Expiry::Never),
        ] {
            assert_eq!(Expiry::parse(input, now()), Ok(want), "{input}");
        }
    }

    #[test]
    fn a_bare_date_is_the_end_of_that_day_in_the_zone() {
        let e = Expiry::parse("2026-12-31", now()).expect("a date");
        let t = |s| at(s).time(Tz::UTC);
        assert_eq!(e.time(Tz::UTC), t("2026-12-31T23:59:59Z"));
        assert_eq!(e.time(Tz::Europe__Dublin), t("2026-12-31T23:59:59Z"));
        assert_eq!(e.time(Tz::Europe__Berlin), t("2026-12-31T22:59:59Z"));
        assert_eq!(e.time(Tz::America__New_York), t("2027-01-01T04:59:59Z"));
        let summer = Expiry::parse("2026-07-01", now()).expect("a date");
        assert_eq!(summer.time(Tz::Europe__Dublin), t("2026-07-01T22:59:59Z"));
        assert_eq!(Expiry::Never.time(Tz::UTC), None);
    }

    #[test]
    fn a_past_time_is_named_with_now() {
        let past = at("2020-01-01T00:00:00Z").time(Tz::UTC).expect("time");
        let err = check_future(past, now(), Tz::UTC).expect_err("past");
        assert_eq!(
            err.to_string(),
            "2020-01-01 00:00 UTC is in the past (it is now 2026-11-24 06:00 UTC): \
             the tag would answer 404 at once"
        );
        assert!(check_future(now(), now(), Tz::UTC).is_err(), "now is past");
        let later = now() + Duration::seconds(1);
        assert_eq!(check_future(later, now(), Tz::UTC), Ok(()));
    }

    #[test]
    fn a_multi_byte_last_character_is_refused_not_split() {
        for s in ["3¬", "12€", "\u{83a44}¬", "é"] {
            assert!(Expiry::parse(s, now()).is_err(), "{s:?}");
        }
    }

    #[test]
    fn anything_else_is_refused_with_the_forms_named() {
        for bad in [
            "",
            "d",
            "30",
            "30x",
            "-3d",
            "0d",
            "tomorrow",
            "2026-12-32",
            "31/12/2026",
            "99999999999999w",
        ] {
            let err = Expiry::parse(bad, now()).expect_err(bad);
            assert!(
                err.contains("RFC 3339") && err.contains("30d"),
                "{bad}: {err}"
            );
        }
    }
}

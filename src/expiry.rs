//! When a link stops redirecting, as a person writes it on the command line:
//! an RFC 3339 time, a duration from now (`30d`, `12h`, `2w`), or `never`.

use chrono::{DateTime, Duration, Utc};

/// A parsed `--expires` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    At(DateTime<Utc>),
    Never,
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
        let bad = || {
            format!(
                "`{s}` is not a time: give an RFC 3339 time (2026-12-31T23:59:59Z), \
                 a duration from now (90m, 12h, 30d, 2w) or never"
            )
        };
        let unit_at = s.len().checked_sub(1).filter(|&i| i > 0).ok_or_else(bad)?;
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

    /// The time to store, `None` for no expiry.
    pub fn time(self) -> Option<DateTime<Utc>> {
        match self {
            Expiry::At(t) => Some(t),
            Expiry::Never => None,
        }
    }
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
    fn anything_else_is_refused_with_the_forms_named() {
        for bad in [
            "",
            "d",
            "30",
            "30x",
            "-3d",
            "0d",
            "tomorrow",
            "2026-12-31",
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

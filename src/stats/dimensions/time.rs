//! Hour of day and weekday of a scan in the reader's time zone: a poster
//! in Dublin is scanned at Dublin's hours, whatever UTC says.

use chrono::{Datelike, Timelike, Weekday};
use chrono_tz::Tz;

use crate::access_log::format::LogTime;

/// The local hour (0–23) and weekday of `t` in `tz`.
pub fn hour_and_weekday(t: LogTime, tz: Tz) -> (u32, Weekday) {
    let local = t.to_datetime().with_timezone(&tz);
    (local.hour(), local.weekday())
}

/// A weekday as the breakdowns name it.
pub fn weekday_name(day: Weekday) -> &'static str {
    match day {
        Weekday::Mon => "Monday",
        Weekday::Tue => "Tuesday",
        Weekday::Wed => "Wednesday",
        Weekday::Thu => "Thursday",
        Weekday::Fri => "Friday",
        Weekday::Sat => "Saturday",
        Weekday::Sun => "Sunday",
    }
}

/// An hour as the breakdowns name it, `07:00`.
pub fn hour_name(hour: u32) -> String {
    format!("{hour:02}:00")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_hours() {
        let t = LogTime::parse("20261125233000.0").unwrap(); // a Wednesday, UTC
        assert_eq!(hour_and_weekday(t, Tz::UTC), (23, Weekday::Wed));
        // Dublin is on UTC in winter, Sydney 11 hours ahead, on Thursday.
        assert_eq!(
            hour_and_weekday(t, chrono_tz::Europe::Dublin),
            (23, Weekday::Wed)
        );
        assert_eq!(
            hour_and_weekday(t, chrono_tz::Australia::Sydney),
            (10, Weekday::Thu)
        );
        // Summer time: Dublin one hour ahead.
        let summer = LogTime::parse("20260701120000.0").unwrap();
        assert_eq!(hour_and_weekday(summer, chrono_tz::Europe::Dublin).0, 13);
        // Half-hour zones.
        assert_eq!(
            hour_and_weekday(t, chrono_tz::Asia::Kolkata),
            (5, Weekday::Thu)
        );
        assert_eq!(hour_name(7), "07:00");
    }
}

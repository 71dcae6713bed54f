//! When to renew, and how long to wait after a failure (pure).
//!
//! The rule: renew once the time left is at most a third of the lifetime or
//! 30 days, whichever is less. A 90-day Let's Encrypt certificate renews with
//! 30 days left (what Let's Encrypt advises), a 6-day one with 2 days left, a
//! one-year one with 30 days left, and Pebble's short test certificates a
//! third before their end; renewing is never due before two thirds of the
//! lifetime have passed, so a short-lived certificate does not renew in a
//! loop.

use std::time::Duration;

/// A longer certificate renews this long before it ends.
pub const LONG_MARGIN_SECS: i64 = 30 * 24 * 3600;

/// A certificate's validity in Unix seconds, as its leaf states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    pub not_before: i64,
    pub not_after: i64,
}

impl Validity {
    pub fn lifetime(&self) -> i64 {
        (self.not_after - self.not_before).max(0)
    }

    /// The instant renewing becomes due.
    pub fn renew_at(&self) -> i64 {
        self.not_after - (self.lifetime() / 3).min(LONG_MARGIN_SECS)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// No usable certificate, one not covering the names, or one due.
    RenewNow,
    /// The stored certificate serves until this instant (Unix seconds).
    RenewAt(i64),
}

/// `stored` is the certificate the store holds, with whether it covers every
/// configured name.
pub fn decide(now: i64, stored: Option<(Validity, bool)>) -> Decision {
    match stored {
        Some((validity, true)) if now < validity.renew_at() => {
            Decision::RenewAt(validity.renew_at())
        }
        _ => Decision::RenewNow,
    }
}

/// The wait after `failures` failed renewals in a row (at least 1): `base`
/// doubled each time, at most `cap`.
pub fn backoff(failures: u32, base: Duration, cap: Duration) -> Duration {
    let doublings = failures.saturating_sub(1).min(30);
    base.saturating_mul(1u32 << doublings).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 24 * 3600;

    /// Every lifetime from 1 second to a day, second by second, then every
    /// minute to 400 days: the due instant is inside the validity, at least
    /// two thirds in, and leaves min(lifetime/3, 30 days) to spare.
    #[test]
    fn renew_at_over_lifetimes() {
        let start = 1_700_000_000;
        let lifetimes = (1..=DAY).chain((DAY..=400 * DAY).step_by(60));
        for lifetime in lifetimes {
            let v = Validity {
                not_before: start,
                not_after: start + lifetime,
            };
            let at = v.renew_at();
            assert!(at > v.not_before && at <= v.not_after, "{lifetime}");
            assert!(3 * (at - v.not_before) >= 2 * lifetime, "{lifetime}");
            let left = v.not_after - at;
            assert_eq!(left, (lifetime / 3).min(30 * DAY), "{lifetime}");
            if lifetime >= 90 * DAY {
                assert_eq!(left, 30 * DAY);
            }
            assert_eq!(decide(at - 1, Some((v, true))), Decision::RenewAt(at));
            assert_eq!(decide(at, Some((v, true))), Decision::RenewNow);
            assert_eq!(decide(v.not_before, Some((v, false))), Decision::RenewNow);
        }
    }

    #[test]
    fn known_lifetimes() {
        let at = |days: i64| {
            let v = Validity {
                not_before: 0,
                not_after: days * DAY,
            };
            (v.not_after - v.renew_at()) / DAY
        };
        assert_eq!(at(90), 30);
        assert_eq!(at(6), 2);
        assert_eq!(at(365), 30);
        assert_eq!(at(45), 15);
        // Pebble at 30 s: due with 10 s left.
        let pebble = Validity {
            not_before: 100,
            not_after: 130,
        };
        assert_eq!(pebble.renew_at(), 120);
    }

    #[test]
    fn nothing_stored_or_broken_renews_now() {
        assert_eq!(decide(0, None), Decision::RenewNow);
        let backwards = Validity {
            not_before: 10,
            not_after: 5,
        };
        assert_eq!(decide(0, Some((backwards, true))), Decision::RenewAt(5));
        assert_eq!(decide(5, Some((backwards, true))), Decision::RenewNow);
    }

    #[test]
    fn backoff_doubles_to_its_cap() {
        let base = Duration::from_secs(60);
        let cap = Duration::from_secs(3600);
        let waits: Vec<u64> = (1..=9).map(|f| backoff(f, base, cap).as_secs()).collect();
        assert_eq!(waits, [60, 120, 240, 480, 960, 1920, 3600, 3600, 3600]);
        assert_eq!(backoff(0, base, cap), base);
        assert_eq!(backoff(u32::MAX, base, cap), cap);
    }
}

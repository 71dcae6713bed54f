//! How the store's follower is doing, as plain atomics: `/readyz` and
//! `/metrics` read them at any time without a lock, and the follower updates
//! them only when something happens (a batch, an outage, a reconnect).
//!
//! Times are kept as nanoseconds since this value was made, plus one, so
//! that zero can mean "never" without an `Option` behind a lock.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct FollowerStats {
    base: Instant,
    changes_applied: AtomicU64,
    reconnects: AtomicU64,
    /// When the last batch of changes (or the first load) reached the table.
    last_change: AtomicU64,
    /// When the link source last stopped being current; zero while it is.
    away_since: AtomicU64,
}

impl FollowerStats {
    /// A follower that has not reached its store yet: away from the start.
    pub(super) fn new() -> Self {
        let s = Self {
            base: Instant::now(),
            changes_applied: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            last_change: AtomicU64::new(0),
            away_since: AtomicU64::new(0),
        };
        s.away_since.store(s.stamp(), Relaxed);
        s
    }

    fn stamp(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos())
            .unwrap_or(u64::MAX - 1)
            .saturating_add(1)
    }

    fn age(&self, stamp: u64) -> Option<Duration> {
        let then = Duration::from_nanos(stamp.checked_sub(1)?);
        Some(self.base.elapsed().saturating_sub(then))
    }

    pub(super) fn applied(&self, changes: usize) {
        self.changes_applied.fetch_add(changes as u64, Relaxed);
        self.last_change.store(self.stamp(), Relaxed);
    }

    /// The snapshot's problem was set (`away`) or cleared. Only the start of
    /// an outage is kept, so a follower retrying every second does not reset
    /// how long it has been away.
    pub(super) fn set_away(&self, away: bool) {
        if !away {
            self.away_since.store(0, Relaxed);
        } else if self.away_since.load(Relaxed) == 0 {
            self.away_since.store(self.stamp(), Relaxed);
        }
    }

    /// The follower lost its connection to the store and is making a new one.
    pub fn reconnected(&self) {
        self.reconnects.fetch_add(1, Relaxed);
    }

    /// Changes read from the store and applied to the table (not counting
    /// the documents of full loads).
    pub fn changes_applied(&self) -> u64 {
        self.changes_applied.load(Relaxed)
    }

    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Relaxed)
    }

    /// Whether the follower is in contact with the store and current.
    pub fn store_up(&self) -> bool {
        self.away_since.load(Relaxed) == 0
    }

    /// How long the table may be behind the store: zero while the follower
    /// is current, else the time since it stopped being (since start, before
    /// the first load).
    pub fn lag(&self) -> Duration {
        self.age(self.away_since.load(Relaxed))
            .unwrap_or(Duration::ZERO)
    }

    /// Time since a change (or the first load) last reached the table;
    /// `None` before any did.
    pub fn since_last_change(&self) -> Option<Duration> {
        self.age(self.last_change.load(Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_timed_from_its_start() {
        let s = FollowerStats::new();
        assert!(!s.store_up(), "away until the store is reached");
        assert_eq!(s.since_last_change(), None);
        s.set_away(false);
        assert!(s.store_up());
        assert_eq!(s.lag(), Duration::ZERO);
        s.set_away(true);
        std::thread::sleep(Duration::from_millis(20));
        let first = s.lag();
        assert!(first >= Duration::from_millis(20), "{first:?}");
        s.set_away(true);
        assert!(s.lag() >= first, "a retry does not restart the clock");
        s.applied(3);
        s.applied(2);
        assert_eq!(s.changes_applied(), 5);
        assert!(s.since_last_change().is_some_and(|d| d < first));
        s.reconnected();
        assert_eq!(s.reconnects(), 1);
    }
}

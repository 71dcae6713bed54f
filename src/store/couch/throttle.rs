//! A warning that would repeat with every change (issue 35: the history
//! recorder of a database where `qrtag setup` never ran fails on each
//! one) is said once, then at most once an interval, with how many were
//! held back, so the log keeps one line a problem instead of one a scan
//! of the feed. Pure: the caller passes the time.

use std::time::{Duration, Instant};

pub(crate) struct Throttle {
    every: Duration,
    last: Option<Instant>,
    held: u64,
}

impl Throttle {
    pub(crate) fn new(every: Duration) -> Self {
        Self {
            every,
            last: None,
            held: 0,
        }
    }

    /// Whether to warn now: `Some(n)`, with the `n` warnings held back
    /// since the last one said, the first time and once `every` has passed
    /// since; `None` (one more held back) otherwise.
    pub(crate) fn due(&mut self, now: Instant) -> Option<u64> {
        match self.last {
            Some(last) if now.saturating_duration_since(last) < self.every => {
                self.held += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.held))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_then_once_an_interval_with_the_count_held_back() {
        let start = Instant::now();
        let every = Duration::from_secs(300);
        let mut t = Throttle::new(every);
        assert_eq!(t.due(start), Some(0));
        for s in 1..300 {
            assert_eq!(t.due(start + Duration::from_secs(s)), None);
        }
        assert_eq!(t.due(start + every), Some(299));
        assert_eq!(t.due(start + every), None);
        assert_eq!(t.due(start + 2 * every), Some(1));
    }
}

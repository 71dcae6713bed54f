//! How many password checks run at once in the whole process, and how many
//! may wait for one.
//!
//! An argon2id check takes 19 MiB and tens of milliseconds of a core.
//! Unbounded, a flood of wrong passwords from a few hundred addresses ran
//! hundreds of them at once on the blocking pool, grew the process by
//! gigabytes and ended it with a failed allocation, redirects included
//! (issue 30). With one check at a time and a short queue, the console's
//! logins cost at most one core and a few tens of MiB whatever arrives;
//! an attempt that finds the queue full is told to come back at once,
//! before anything is read or hashed.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{Semaphore, SemaphorePermit};

/// Checks that run at once: one core's worth, so the other serves scans.
pub const RUNNING: usize = 1;
/// Attempts that may wait for a check besides those running; each waits
/// a few checks' time at most.
pub const WAITING: usize = 4;

pub struct CheckGate {
    running: Semaphore,
    admitted: AtomicUsize,
}

/// The gate is full: come back in a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("too many logins are being checked right now; try again in a moment")]
pub struct Busy;

/// A place in the gate, given back on drop (also when the request is
/// dropped while it waits).
struct Ticket<'a>(&'a CheckGate);

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.0.admitted.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The turn to run one check: held while it runs.
pub struct Admitted<'a> {
    _permit: SemaphorePermit<'a>,
    _ticket: Ticket<'a>,
}

impl CheckGate {
    pub const fn new() -> Self {
        Self {
            running: Semaphore::const_new(RUNNING),
            admitted: AtomicUsize::new(0),
        }
    }

    /// Waits for a turn to check a password, or refuses at once when
    /// [`RUNNING`] + [`WAITING`] attempts are already in.
    pub async fn enter(&self) -> Result<Admitted<'_>, Busy> {
        let admitted = self
            .admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < RUNNING + WAITING).then_some(n + 1)
            });
        if admitted.is_err() {
            return Err(Busy);
        }
        let ticket = Ticket(self);
        // Never closed, so the only error is impossible; count it as busy.
        let permit = self.running.acquire().await.map_err(|_| Busy)?;
        Ok(Admitted {
            _permit: permit,
            _ticket: ticket,
        })
    }
}

impl Default for CheckGate {
    fn default() -> Self {
        Self::new()
    }
}

/// The process's one gate: every console password check and hash.
pub static PASSWORD_CHECKS: CheckGate = CheckGate::new();

#[cfg(test)]
mod tests {
    use super::*;

    use futures_util::FutureExt as _;

    #[tokio::test]
    async fn past_the_running_and_the_waiting_the_gate_says_busy_at_once() {
        let gate = CheckGate::new();
        let running = gate.enter().await.expect("first runs");
        let mut waiting = Vec::new();
        for _ in 0..WAITING {
            waiting.push(Box::pin(gate.enter()));
        }
        // Each waiter is admitted on its first poll, then waits for the permit.
        for w in &mut waiting {
            assert!(w.now_or_never().is_none(), "waits");
        }
        assert_eq!(gate.enter().await.err(), Some(Busy));
        drop(running);
        let next = waiting.remove(0).await.expect("the first waiter runs next");
        let mut one_more = Box::pin(gate.enter());
        assert!(
            (&mut one_more).now_or_never().is_none(),
            "the freed place is taken"
        );
        assert_eq!(gate.enter().await.err(), Some(Busy), "full again");
        drop(next);
        drop(one_more);
        // Waiters that give up (a closed connection) give their place back.
        drop(waiting);
        assert_eq!(gate.admitted.load(Ordering::Acquire), 0);
        assert!(gate.enter().await.is_ok());
    }
}

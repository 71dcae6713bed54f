//! Login attempts per client address, and in all, per minute: a password
//! guesser gets a handful of tries a minute from one address and the whole
//! console a bounded number, answered 429 with `Retry-After`.
//!
//! An attempt is counted before the password is checked (so that parallel
//! guesses cannot all pass while the slow hash runs) and given back when
//! it succeeds: only failures use up the limit, and a person who types
//! their password right is never held up by having logged in before.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(60);
/// Attempts one address may make per window.
pub const PER_ADDRESS: u32 = 5;
/// Attempts all addresses together may make per window.
pub const GLOBAL: u32 = 60;
/// Addresses remembered before stale ones are dropped.
const TRACKED: usize = 10_000;

#[derive(Debug, Default)]
pub struct LoginLimiter {
    inner: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    per_address: HashMap<IpAddr, (Instant, u32)>,
    global: Option<(Instant, u32)>,
}

/// Counts an attempt in a fixed window starting at its first attempt;
/// `Err` with the seconds until the window ends when over `limit`.
fn count(slot: &mut (Instant, u32), now: Instant, limit: u32) -> Result<(), u64> {
    if now.duration_since(slot.0) >= WINDOW {
        *slot = (now, 0);
    }
    if slot.1 >= limit {
        let left = WINDOW.saturating_sub(now.duration_since(slot.0));
        return Err(left.as_secs().max(1));
    }
    slot.1 += 1;
    Ok(())
}

impl LoginLimiter {
    /// Records an attempt from `addr` at `now`; `Err(seconds)` to wait.
    pub fn attempt(&self, addr: IpAddr, now: Instant) -> Result<(), u64> {
        let Ok(mut state) = self.inner.lock() else {
            return Err(WINDOW.as_secs());
        };
        let state = &mut *state;
        if state.per_address.len() >= TRACKED {
            state
                .per_address
                .retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        let mine = state.per_address.entry(addr).or_insert((now, 0));
        count(mine, now, PER_ADDRESS)?;
        let global = state.global.get_or_insert((now, 0));
        count(global, now, GLOBAL)
    }

    /// Gives back an attempt from `addr` that succeeded (in the window it
    /// was counted in; a window that has ended has nothing to give back).
    pub fn succeeded(&self, addr: IpAddr, now: Instant) {
        let Ok(mut state) = self.inner.lock() else {
            return;
        };
        let state = &mut *state;
        let slots = state.per_address.get_mut(&addr).into_iter();
        for slot in slots.chain(state.global.as_mut()) {
            if now.duration_since(slot.0) < WINDOW {
                slot.1 = slot.1.saturating_sub(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_its_tries_then_waits_out_the_window() {
        let l = LoginLimiter::default();
        let a: IpAddr = [192, 0, 2, 1].into();
        let b: IpAddr = [192, 0, 2, 2].into();
        let t0 = Instant::now();
        for _ in 0..PER_ADDRESS {
            assert_eq!(l.attempt(a, t0), Ok(()));
        }
        let wait = l.attempt(a, t0).expect_err("over");
        assert!((1..=60).contains(&wait), "{wait}");
        assert_eq!(l.attempt(b, t0), Ok(()), "another address is not held up");
        assert_eq!(l.attempt(a, t0 + WINDOW), Ok(()), "a new window");
    }

    #[test]
    fn successes_give_their_attempt_back() {
        let l = LoginLimiter::default();
        let a: IpAddr = [192, 0, 2, 1].into();
        let t0 = Instant::now();
        for _ in 0..(3 * PER_ADDRESS) {
            assert_eq!(l.attempt(a, t0), Ok(()));
            l.succeeded(a, t0);
        }
        for _ in 0..PER_ADDRESS {
            assert_eq!(l.attempt(a, t0), Ok(()), "failures still have their tries");
        }
        assert!(l.attempt(a, t0).is_err());
        l.succeeded([192, 0, 2, 9].into(), t0);
        assert!(
            l.attempt(a, t0).is_err(),
            "another address gives nothing back"
        );
    }

    #[test]
    fn the_global_cap_holds_across_addresses() {
        let l = LoginLimiter::default();
        let t0 = Instant::now();
        let mut refused = 0;
        for i in 0..(GLOBAL + 10) {
            let addr: IpAddr = [10, 0, (i / 256) as u8, (i % 256) as u8].into();
            if l.attempt(addr, t0).is_err() {
                refused += 1;
            }
        }
        assert_eq!(refused, 10);
    }
}

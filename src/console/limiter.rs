//! Login attempts per client address, and in all, per minute: a password
//! guesser gets a handful of tries a minute from one address (an IPv6
//! client's whole /64, which one host usually has), answered 429 with
//! `Retry-After`.
//!
//! The global ceiling is far above what one address may do, and past it an
//! address only loses its *further* tries: an address with no failures in
//! the window always gets its attempt, so guesses spread over many
//! addresses can slow down guessing but never lock the administrator out.
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
/// Attempts all addresses together may make per window before each
/// address is held to one try (a hundred addresses' worth).
pub const GLOBAL: u32 = 100 * PER_ADDRESS;
/// Addresses remembered before stale ones are dropped.
const TRACKED: usize = 10_000;

#[derive(Debug, Default)]
pub struct LoginLimiter {
    inner: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    per_address: HashMap<Client, (Instant, u32)>,
    global: Option<(Instant, u32)>,
}

/// Whom attempts are counted against: an IPv4 address (also when written
/// IPv4-mapped), or an IPv6 /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Client {
    V4([u8; 4]),
    V6Prefix([u8; 8]),
}

impl From<IpAddr> for Client {
    fn from(addr: IpAddr) -> Self {
        match addr.to_canonical() {
            IpAddr::V4(v4) => Self::V4(v4.octets()),
            IpAddr::V6(v6) => {
                let mut prefix = [0; 8];
                prefix.copy_from_slice(&v6.octets()[..8]);
                Self::V6Prefix(prefix)
            }
        }
    }
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
        let mine = state
            .per_address
            .entry(Client::from(addr))
            .or_insert((now, 0));
        count(mine, now, PER_ADDRESS)?;
        let clean = mine.1 == 1;
        let global = state.global.get_or_insert((now, 0));
        match count(global, now, GLOBAL) {
            Err(wait) if !clean => {
                mine.1 -= 1;
                Err(wait)
            }
            _ => Ok(()),
        }
    }

    /// Gives back an attempt from `addr` that succeeded (in the window it
    /// was counted in; a window that has ended has nothing to give back).
    pub fn succeeded(&self, addr: IpAddr, now: Instant) {
        let Ok(mut state) = self.inner.lock() else {
            return;
        };
        let state = &mut *state;
        let slots = state.per_address.get_mut(&Client::from(addr)).into_iter();
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

    fn addr(i: u32) -> IpAddr {
        [10, (i >> 16) as u8, (i >> 8) as u8, i as u8].into()
    }

    #[test]
    fn past_the_global_ceiling_each_address_keeps_one_try() {
        let l = LoginLimiter::default();
        let t0 = Instant::now();
        let spenders = GLOBAL / PER_ADDRESS;
        for i in 0..spenders {
            for _ in 0..PER_ADDRESS {
                assert_eq!(l.attempt(addr(i), t0), Ok(()));
            }
        }
        for i in spenders..spenders + 50 {
            assert_eq!(l.attempt(addr(i), t0), Ok(()), "a first try gets through");
            assert!(l.attempt(addr(i), t0).is_err(), "a second is held back");
        }
        assert_eq!(l.attempt(addr(9999), t0 + WINDOW), Ok(()), "a new window");
    }

    #[test]
    fn failures_from_twelve_addresses_do_not_hold_up_a_thirteenth() {
        let l = LoginLimiter::default();
        let t0 = Instant::now();
        for i in 0..12 {
            for _ in 0..PER_ADDRESS {
                assert_eq!(l.attempt(addr(i), t0), Ok(()));
            }
        }
        for _ in 0..PER_ADDRESS {
            assert_eq!(l.attempt(addr(12), t0), Ok(()));
        }
    }

    #[test]
    fn an_ipv6_64_is_one_client_and_mapped_ipv4_is_ipv4() {
        let l = LoginLimiter::default();
        let t0 = Instant::now();
        for i in 0..PER_ADDRESS {
            let host: IpAddr = format!("2001:db8:1:2::{i:x}").parse().expect("v6");
            assert_eq!(l.attempt(host, t0), Ok(()));
        }
        let same_64: IpAddr = "2001:db8:1:2:ffff::1".parse().expect("v6");
        assert!(l.attempt(same_64, t0).is_err());
        let next_64: IpAddr = "2001:db8:1:3::1".parse().expect("v6");
        assert_eq!(l.attempt(next_64, t0), Ok(()));
        let v4: IpAddr = [192, 0, 2, 7].into();
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().expect("mapped");
        assert_eq!(Client::from(v4), Client::from(mapped));
    }
}

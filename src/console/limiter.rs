//! Login attempts per client address, per known device, and in all, per
//! minute: a password guesser gets a handful of tries a minute from one
//! address (an IPv6 client's whole /64, which one host usually has),
//! answered 429 with `Retry-After`.
//!
//! Attempts from addresses also count towards a global ceiling, and past
//! it every address waits for the window to end: the cost of wrong
//! passwords (each an argon2 check) is at most [`GLOBAL`] checks a minute
//! however many addresses send them (issue 30). A browser that has logged
//! in before carries a device cookie ([`super::device`]); its attempts
//! count against the device alone, so neither a flood from elsewhere nor
//! strangers behind the same proxy can lock its owner out.
//!
//! An attempt is counted before the password is checked (so that parallel
//! guesses cannot all pass while the slow hash runs) and given back when
//! it succeeds or was never checked: only failures use up the limit, and
//! a person who types their password right is never held up by having
//! logged in before.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::device::DeviceId;

const WINDOW: Duration = Duration::from_secs(60);
/// Attempts one address, or one device, may make per window.
pub const PER_ADDRESS: u32 = 5;
/// Attempts all addresses together may make per window; past it they all
/// wait, and only known devices get in.
pub const GLOBAL: u32 = 20 * PER_ADDRESS;
/// Addresses remembered; past it stale ones are dropped, and while every
/// one is live a new address waits like past the global ceiling.
const TRACKED: usize = 10_000;

#[derive(Debug, Default)]
pub struct LoginLimiter {
    inner: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    per_client: HashMap<Client, (Instant, u32)>,
    global: Option<(Instant, u32)>,
}

/// Whom attempts are counted against: a browser's device cookie, or an
/// IPv4 address (also when written IPv4-mapped), or an IPv6 /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Client {
    Device(DeviceId),
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

/// Starts a new fixed window at `now` once the slot's has ended.
fn renew(slot: &mut (Instant, u32), now: Instant) {
    if now.duration_since(slot.0) >= WINDOW {
        *slot = (now, 0);
    }
}

/// The seconds until a slot's window ends.
fn wait(slot: &(Instant, u32), now: Instant) -> u64 {
    let left = WINDOW.saturating_sub(now.duration_since(slot.0));
    left.as_secs().max(1)
}

/// Counts an attempt in a fixed window starting at its first attempt;
/// `Err` with the seconds until the window ends when over `limit`.
fn count(slot: &mut (Instant, u32), now: Instant, limit: u32) -> Result<(), u64> {
    renew(slot, now);
    if slot.1 >= limit {
        return Err(wait(slot, now));
    }
    slot.1 += 1;
    Ok(())
}

impl LoginLimiter {
    /// Records an attempt by `client` at `now`; `Err(seconds)` to wait.
    pub fn attempt(&self, client: Client, now: Instant) -> Result<(), u64> {
        let Ok(mut state) = self.inner.lock() else {
            return Err(WINDOW.as_secs());
        };
        let state = &mut *state;
        if state.per_client.len() >= TRACKED {
            state
                .per_client
                .retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        if let Client::Device(_) = client {
            // Only a successful login makes one: never a flood.
            let mine = state.per_client.entry(client).or_insert((now, 0));
            return count(mine, now, PER_ADDRESS);
        }
        let global = state.global.get_or_insert((now, 0));
        renew(global, now);
        let full = state.per_client.len() >= TRACKED && !state.per_client.contains_key(&client);
        if global.1 >= GLOBAL || full {
            return Err(wait(global, now));
        }
        let mine = state.per_client.entry(client).or_insert((now, 0));
        count(mine, now, PER_ADDRESS)?;
        global.1 += 1;
        Ok(())
    }

    /// Gives back an attempt by `client` that succeeded or was never
    /// checked (in the window it was counted in; a window that has ended
    /// has nothing to give back).
    pub fn give_back(&self, client: Client, now: Instant) {
        let Ok(mut state) = self.inner.lock() else {
            return;
        };
        let state = &mut *state;
        let global = match client {
            Client::Device(_) => None,
            _ => state.global.as_mut(),
        };
        let slots = state.per_client.get_mut(&client).into_iter();
        for slot in slots.chain(global) {
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
            assert_eq!(l.attempt(a.into(), t0), Ok(()));
        }
        let wait = l.attempt(a.into(), t0).expect_err("over");
        assert!((1..=60).contains(&wait), "{wait}");
        assert_eq!(
            l.attempt(b.into(), t0),
            Ok(()),
            "another address is not held up"
        );
        assert_eq!(l.attempt(a.into(), t0 + WINDOW), Ok(()), "a new window");
    }

    #[test]
    fn successes_give_their_attempt_back() {
        let l = LoginLimiter::default();
        let a: IpAddr = [192, 0, 2, 1].into();
        let t0 = Instant::now();
        for _ in 0..(3 * PER_ADDRESS) {
            assert_eq!(l.attempt(a.into(), t0), Ok(()));
            l.give_back(a.into(), t0);
        }
        for _ in 0..PER_ADDRESS {
            assert_eq!(
                l.attempt(a.into(), t0),
                Ok(()),
                "failures still have their tries"
            );
        }
        assert!(l.attempt(a.into(), t0).is_err());
        l.give_back(Client::from(IpAddr::from([192, 0, 2, 9])), t0);
        assert!(
            l.attempt(a.into(), t0).is_err(),
            "another address gives nothing back"
        );
    }

    fn addr(i: u32) -> IpAddr {
        [10, (i >> 16) as u8, (i >> 8) as u8, i as u8].into()
    }

    #[test]
    fn past_the_global_ceiling_every_address_waits_and_devices_get_in() {
        let l = LoginLimiter::default();
        let t0 = Instant::now();
        let spenders = GLOBAL / PER_ADDRESS;
        for i in 0..spenders {
            for _ in 0..PER_ADDRESS {
                assert_eq!(l.attempt(addr(i).into(), t0), Ok(()));
            }
        }
        for i in spenders..spenders + 300 {
            let wait = l
                .attempt(addr(i).into(), t0)
                .expect_err("a fresh address waits too");
            assert!((1..=60).contains(&wait), "{wait}");
        }
        let device = Client::Device([1; 16]);
        for _ in 0..PER_ADDRESS {
            assert_eq!(
                l.attempt(device, t0),
                Ok(()),
                "a known device has its own tries"
            );
        }
        assert!(l.attempt(device, t0).is_err(), "and only those");
        assert_eq!(
            l.attempt(Client::Device([2; 16]), t0),
            Ok(()),
            "another device is not held up"
        );
        assert_eq!(
            l.attempt(addr(9999).into(), t0 + WINDOW),
            Ok(()),
            "a new window"
        );
    }

    #[test]
    fn refused_attempts_remember_nothing() {
        let l = LoginLimiter::default();
        let t0 = Instant::now();
        for i in 0..GLOBAL {
            assert_eq!(l.attempt(addr(i).into(), t0), Ok(()));
        }
        for i in GLOBAL..GLOBAL + 50_000 {
            assert!(l.attempt(addr(i).into(), t0).is_err());
        }
        let tracked = l.inner.lock().expect("lock").per_client.len();
        assert_eq!(
            tracked, GLOBAL as usize,
            "addresses past the ceiling are not kept"
        );
    }

    #[test]
    fn an_attempt_given_back_is_not_counted_globally_either() {
        let l = LoginLimiter::default();
        let t0 = Instant::now();
        for i in 0..(3 * GLOBAL) {
            assert_eq!(l.attempt(addr(i).into(), t0), Ok(()), "{i}");
            l.give_back(addr(i).into(), t0);
        }
    }

    #[test]
    fn failures_from_twelve_addresses_do_not_hold_up_a_thirteenth() {
        let l = LoginLimiter::default();
        let t0 = Instant::now();
        for i in 0..12 {
            for _ in 0..PER_ADDRESS {
                assert_eq!(l.attempt(addr(i).into(), t0), Ok(()));
            }
        }
        for _ in 0..PER_ADDRESS {
            assert_eq!(l.attempt(addr(12).into(), t0), Ok(()));
        }
    }

    #[test]
    fn an_ipv6_64_is_one_client_and_mapped_ipv4_is_ipv4() {
        let l = LoginLimiter::default();
        let t0 = Instant::now();
        for i in 0..PER_ADDRESS {
            let host: IpAddr = format!("2001:db8:1:2::{i:x}").parse().expect("v6");
            assert_eq!(l.attempt(host.into(), t0), Ok(()));
        }
        let same_64: IpAddr = "2001:db8:1:2:ffff::1".parse().expect("v6");
        assert!(l.attempt(same_64.into(), t0).is_err());
        let next_64: IpAddr = "2001:db8:1:3::1".parse().expect("v6");
        assert_eq!(l.attempt(next_64.into(), t0), Ok(()));
        let v4: IpAddr = [192, 0, 2, 7].into();
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().expect("mapped");
        assert_eq!(Client::from(v4), Client::from(mapped));
    }
}

//! How many connections one client network may hold open on a listener
//! (public or admin, each its own count), and how full the listener is.
//!
//! A slow client holds a connection for as long as it likes to take;
//! without a cap per client, one machine can hold them all. The cap is per
//! network, not per address (IPv4 /24, IPv6 /64, an IPv4-mapped IPv6 address
//! as IPv4): one host usually has a whole /64, and one rented server a run
//! of IPv4 addresses, so a per-address cap let 14 addresses of one /24 fill
//! a listener of 3,011 (issue 30). A peer inside a `--trusted-proxy` network
//! is counted by its own address, as before: every client of a proxy has
//! its address, and several proxies often share a network.
//!
//! The listener's fill is one atomic counter, read by each connection when
//! it waits for a read ([`Slot::crowded`]): from [`HIGH_WATER_PERCENT`] of
//! the cap until it is back under [`LOW_WATER_PERCENT`], the request-line
//! adapter gives waits a much shorter deadline. The gap matters: the
//! connections accepted together time out together, and without it the
//! first few to go would make the listener uncrowded for all the others,
//! which would then hold their places another round.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use ipnet::IpNet;

/// The share of a listener's cap past which it is crowded: new and idle
/// connections then make room (see `request_line`).
pub const HIGH_WATER_PERCENT: usize = 75;
/// The share under which a crowded listener is no longer crowded.
pub const LOW_WATER_PERCENT: usize = 50;

/// Counts open connections per client network and in all, shared by every
/// worker of one listener.
#[derive(Debug)]
pub struct ConnectionLimiter {
    per_network: usize,
    trusted: Vec<IpNet>,
    open: Mutex<HashMap<IpAddr, usize>>,
    total: AtomicUsize,
    high_water: usize,
    low_water: usize,
    /// Set when `total` reached `high_water`, cleared when it fell under
    /// `low_water` (a race may leave it set: it is believed only from
    /// `low_water` up).
    crowded: AtomicBool,
}

/// One open connection, counted until it is dropped with the connection.
#[derive(Debug)]
pub struct Slot {
    limiter: Arc<ConnectionLimiter>,
    /// The network it is counted under; `None`: counted only in the total.
    network: Option<IpAddr>,
}

/// The network a peer's connections are counted under: its /24 (IPv4) or
/// /64 (IPv6), or the address itself when it is a trusted proxy.
pub fn network_of(ip: IpAddr, trusted: &[IpNet]) -> IpAddr {
    let ip = ip.to_canonical();
    if trusted.iter().any(|net| net.contains(&ip)) {
        return ip;
    }
    match ip {
        IpAddr::V4(v4) => IpAddr::V4((u32::from(v4) & 0xffff_ff00).into()),
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & (!0u128 << 64)).into()),
    }
}

impl ConnectionLimiter {
    /// `per_network` of 0 means no cap. `cap` is the listener's cap in all,
    /// of which [`HIGH_WATER_PERCENT`] is the high-water mark.
    pub fn new(per_network: usize, cap: usize, trusted: Vec<IpNet>) -> Arc<Self> {
        Arc::new(Self {
            per_network,
            trusted,
            open: Mutex::new(HashMap::new()),
            total: AtomicUsize::new(0),
            high_water: (cap * HIGH_WATER_PERCENT / 100).max(1),
            low_water: cap * LOW_WATER_PERCENT / 100,
            crowded: AtomicBool::new(false),
        })
    }

    /// A slot for a new connection from `ip` (`None`: unknown, counted only
    /// in the total), or `None` when its network already holds its share.
    pub fn acquire(self: &Arc<Self>, ip: Option<IpAddr>) -> Option<Slot> {
        let network = ip.map(|ip| network_of(ip, &self.trusted));
        if let Some(network) = network {
            let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
            let n = open.entry(network).or_insert(0);
            if self.per_network != 0 && *n >= self.per_network {
                return None;
            }
            *n += 1;
        }
        if self.total.fetch_add(1, Ordering::Relaxed) + 1 >= self.high_water {
            self.crowded.store(true, Ordering::Relaxed);
        }
        Some(Slot {
            limiter: Arc::clone(self),
            network,
        })
    }

    /// Connections open from `ip`'s network.
    pub fn open_from(&self, ip: IpAddr) -> usize {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let network = network_of(ip, &self.trusted);
        open.get(&network).copied().unwrap_or(0)
    }

    /// Connections open on the listener.
    pub fn open(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    fn crowded(&self) -> bool {
        let open = self.open();
        open >= self.high_water || open >= self.low_water && self.crowded.load(Ordering::Relaxed)
    }
}

impl Slot {
    /// Whether the listener is crowded: it reached its high-water mark and
    /// is not yet back under its low-water mark. Two atomic loads.
    pub fn crowded(&self) -> bool {
        self.limiter.crowded()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.limiter.total.fetch_sub(1, Ordering::Relaxed) - 1 < self.limiter.low_water {
            self.limiter.crowded.store(false, Ordering::Relaxed);
        }
        let Some(network) = self.network else {
            return;
        };
        let mut open = self
            .limiter
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = open.get_mut(&network) {
            *n -= 1;
            if *n == 0 {
                open.remove(&network);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn a_network_gets_its_share_and_slots_come_back() {
        let limiter = ConnectionLimiter::new(2, 100, Vec::new());
        let a = ip("192.0.2.1");
        let mapped = ip("::ffff:192.0.2.1");
        let neighbour = ip("192.0.2.200");
        let b = ip("192.0.3.1");
        let one = limiter.acquire(Some(a)).expect("first");
        let two = limiter
            .acquire(Some(mapped))
            .expect("second, the same address");
        assert!(limiter.acquire(Some(a)).is_none(), "a third is refused");
        assert!(
            limiter.acquire(Some(neighbour)).is_none(),
            "so is one from the same /24"
        );
        assert!(
            limiter.acquire(Some(b)).is_some(),
            "others are not affected"
        );
        drop(one);
        assert_eq!(limiter.open_from(neighbour), 1);
        let _three = limiter.acquire(Some(neighbour)).expect("room again");
        drop(two);
        assert_eq!(limiter.open_from(a), 1);
        assert!(
            ConnectionLimiter::new(0, 100, Vec::new())
                .acquire(Some(a))
                .is_some(),
            "0: no cap"
        );
    }

    #[test]
    fn networks_are_ipv4_slash_24_and_ipv6_slash_64() {
        let none: &[IpNet] = &[];
        assert_eq!(network_of(ip("198.51.100.77"), none), ip("198.51.100.0"));
        assert_eq!(
            network_of(ip("::ffff:198.51.100.77"), none),
            ip("198.51.100.0")
        );
        assert_eq!(
            network_of(ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), none),
            ip("2001:db8:1:2::")
        );
        assert_ne!(
            network_of(ip("2001:db8:1:2::1"), none),
            network_of(ip("2001:db8:1:3::1"), none)
        );
    }

    #[test]
    fn a_trusted_proxy_is_counted_by_its_own_address() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/24".parse().expect("net")];
        assert_eq!(network_of(ip("10.0.0.7"), &trusted), ip("10.0.0.7"));
        assert_eq!(network_of(ip("10.0.1.7"), &trusted), ip("10.0.1.0"));
        let limiter = ConnectionLimiter::new(1, 100, trusted);
        let _one = limiter.acquire(Some(ip("10.0.0.7"))).expect("first proxy");
        assert!(limiter.acquire(Some(ip("10.0.0.8"))).is_some(), "another");
    }

    #[test]
    fn the_listener_is_crowded_past_its_high_water_mark() {
        let limiter = ConnectionLimiter::new(0, 8, Vec::new());
        let mut held: Vec<Slot> = (0..5)
            .map(|i| limiter.acquire(Some(ip(&format!("192.0.2.{i}")))))
            .map(|s| s.expect("slot"))
            .collect();
        assert!(!held[0].crowded(), "5 of 8");
        held.push(limiter.acquire(None).expect("unknown peer"));
        assert!(held[0].crowded(), "6 of 8 is 75 %");
        held.truncate(4);
        assert!(held[0].crowded(), "still at 4 of 8, half");
        held.pop();
        assert!(!held[0].crowded(), "under half");
        held.push(limiter.acquire(None).expect("slot"));
        assert!(!held[0].crowded(), "not again before 75 %");
        assert_eq!(limiter.open(), 4);
    }
}

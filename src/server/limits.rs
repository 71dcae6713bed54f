//! How many connections one client address may hold open on a listener
//! (public or admin, each its own count). A slow client holds a connection
//! for as long as it likes to take; without a cap per address, one machine
//! can hold them all.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

/// Counts open connections per client address, shared by every worker.
#[derive(Debug)]
pub struct ConnectionLimiter {
    per_address: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One open connection, counted until it is dropped with the connection.
#[derive(Debug)]
pub struct Slot {
    limiter: Arc<ConnectionLimiter>,
    ip: IpAddr,
}

impl ConnectionLimiter {
    /// `per_address` of 0 means no cap.
    pub fn new(per_address: usize) -> Arc<Self> {
        Arc::new(Self {
            per_address,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for a new connection from `ip`, or `None` when that address
    /// already holds its share.
    pub fn acquire(self: &Arc<Self>, ip: IpAddr) -> Option<Slot> {
        let ip = ip.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let n = open.entry(ip).or_insert(0);
        if self.per_address != 0 && *n >= self.per_address {
            return None;
        }
        *n += 1;
        Some(Slot {
            limiter: Arc::clone(self),
            ip,
        })
    }

    pub fn open_from(&self, ip: IpAddr) -> usize {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.get(&ip.to_canonical()).copied().unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self
            .limiter
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_its_share_and_slots_come_back() {
        let limiter = ConnectionLimiter::new(2);
        let a: IpAddr = "192.0.2.1".parse().expect("ip");
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().expect("ip");
        let b: IpAddr = "192.0.2.2".parse().expect("ip");
        let one = limiter.acquire(a).expect("first");
        let two = limiter.acquire(mapped).expect("second, the same address");
        assert!(limiter.acquire(a).is_none(), "a third is refused");
        assert!(limiter.acquire(b).is_some(), "others are not affected");
        drop(one);
        assert_eq!(limiter.open_from(a), 1);
        let _three = limiter.acquire(a).expect("room again");
        drop(two);
        assert_eq!(limiter.open_from(a), 1);
        assert!(ConnectionLimiter::new(0).acquire(a).is_some(), "0: no cap");
    }
}

//! The rate limit of requests that present no valid API key: per client
//! address (an IPv4 address, an IPv6 /64, what one host or one customer
//! of a provider holds), since there is no key to count them by. Without
//! it anyone who can reach the API listener could make it read the key
//! store as fast as it answers (issue 30).
//!
//! Only refusals count: an address that made [`StrangerLimiter::per_second`]
//! requests answered 401 in the current second is answered 429 before its
//! key is looked at, so the key check's store read is not paid past the
//! limit. A valid key from that address waits out the second too; it is
//! never counted.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};
use ipnet::IpNet;

use super::problem::{self, Kind};

/// Refused requests per address per second before the address is
/// answered 429: a person retrying a mistyped key never meets it.
pub const STRANGERS_PER_SECOND: u32 = 10;

/// Addresses counted in one second at most; past it a new address is
/// counted under one shared slot, so a flood from many addresses cannot
/// grow the table.
const MAX_ADDRESSES: usize = 100_000;

pub struct StrangerLimiter {
    started: Instant,
    per_second: u32,
    trusted: Vec<IpNet>,
    window: Mutex<(u64, HashMap<u128, u32>)>,
}

impl StrangerLimiter {
    /// `trusted`: the proxies whose `X-Forwarded-For` names the client
    /// (`--trusted-proxy`), as on the public listener.
    pub fn new(per_second: u32, trusted: Vec<IpNet>) -> Self {
        Self {
            started: Instant::now(),
            per_second,
            trusted,
            window: Mutex::new((0, HashMap::new())),
        }
    }

    pub fn per_second(&self) -> u32 {
        self.per_second
    }

    /// The network the request is counted under.
    pub fn network_of(&self, req: &HttpRequest) -> Option<u128> {
        let peer = req.peer_addr()?.ip();
        let forwarded: Vec<&[u8]> = req
            .headers()
            .get_all("x-forwarded-for")
            .map(|v| v.as_bytes())
            .collect();
        Some(network(crate::tracking::client_ip::client_ip(
            peer,
            &forwarded,
            &self.trusted,
        )))
    }

    /// 429 with `Retry-After` when `net` is past its refusals this second.
    pub fn check(&self, net: Option<u128>) -> Result<(), HttpResponse> {
        let Some(net) = net else { return Ok(()) };
        let second = self.started.elapsed().as_secs();
        let over = {
            let mut window = self.window.lock().unwrap_or_else(|p| p.into_inner());
            refusals(&mut window, second, net) >= self.per_second
        };
        if !over {
            return Ok(());
        }
        let mut res = problem::respond(
            Kind::RateLimited,
            format!(
                "more than {} requests in a second without a valid API key from this address",
                self.per_second
            ),
        );
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        Err(res)
    }

    /// Counts a refused request of `net`.
    pub fn refused(&self, net: Option<u128>) {
        let Some(net) = net else { return };
        let second = self.started.elapsed().as_secs();
        let mut window = self.window.lock().unwrap_or_else(|p| p.into_inner());
        count(&mut window, second, net);
    }
}

/// An address as the number its network is counted under: an IPv4
/// address whole (IPv4-mapped IPv6 read as IPv4), an IPv6 address's /64.
/// The two never meet: IPv4 numbers are below 2^32, a /64 with a zero
/// prefix is `::/64`, which holds the IPv4-compatible addresses only.
fn network(ip: IpAddr) -> u128 {
    match ip.to_canonical() {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6) & !((1u128 << 64) - 1),
    }
}

fn roll(window: &mut (u64, HashMap<u128, u32>), second: u64) {
    if window.0 != second {
        *window = (second, HashMap::new());
    }
}

/// The refusals of `net` in `second` so far (pure but for the map).
fn refusals(window: &mut (u64, HashMap<u128, u32>), second: u64, net: u128) -> u32 {
    roll(window, second);
    let slot = slot(&window.1, net);
    window.1.get(&slot).copied().unwrap_or(0)
}

/// Counts one refusal of `net` in `second`.
fn count(window: &mut (u64, HashMap<u128, u32>), second: u64, net: u128) {
    roll(window, second);
    let slot = slot(&window.1, net);
    let n = window.1.entry(slot).or_insert(0);
    *n = n.saturating_add(1);
}

/// Where `net` is counted: its own entry, or once the table is full the
/// shared one (`u128::MAX`, no network's number).
fn slot(table: &HashMap<u128, u32>, net: u128) -> u128 {
    if table.len() < MAX_ADDRESSES || table.contains_key(&net) {
        net
    } else {
        u128::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_is_counted_by_address_and_ipv6_by_its_64() {
        let ip = |s: &str| network(s.parse().expect("address"));
        assert_ne!(ip("192.0.2.1"), ip("192.0.2.2"));
        assert_eq!(ip("::ffff:192.0.2.1"), ip("192.0.2.1"));
        assert_eq!(ip("2001:db8:1:2::1"), ip("2001:db8:1:2:ffff::9"));
        assert_ne!(ip("2001:db8:1:2::1"), ip("2001:db8:1:3::1"));
    }

    #[test]
    fn refusals_restart_each_second_and_a_full_table_shares_one_slot() {
        let mut w = (0, HashMap::new());
        count(&mut w, 0, 7);
        count(&mut w, 0, 7);
        assert_eq!(refusals(&mut w, 0, 7), 2);
        assert_eq!(refusals(&mut w, 0, 8), 0);
        assert_eq!(refusals(&mut w, 1, 7), 0, "a new second");
        for net in 0..MAX_ADDRESSES as u128 {
            count(&mut w, 1, net);
        }
        count(&mut w, 1, u128::from(u64::MAX));
        count(&mut w, 1, u128::from(u64::MAX) + 1);
        assert_eq!(w.1.len(), MAX_ADDRESSES + 1);
        assert_eq!(refusals(&mut w, 1, u128::from(u64::MAX)), 2);
    }
}

//! Which address to log as the client's when requests may come through proxies.
//!
//! `X-Forwarded-For` is a list that each proxy extends with the address of its
//! own peer, so only entries appended by proxies we trust are facts; everything
//! to their left may have been written by the client. Walking from the right and
//! stopping at the first address that is not a trusted proxy gives the nearest
//! party that a trusted hop actually saw. Pure, so that every chain shape can be
//! tested without a socket.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

/// The address to log for a request from `peer` that carried the given
/// `X-Forwarded-For` header values, in the order received.
///
/// - A peer that is not a trusted proxy is the client; its header is ignored,
///   since anyone can send one.
/// - Otherwise the right-most entry that is not itself trusted is the client.
/// - An entry that is not an address (`unknown`, an obfuscated identifier,
///   garbage) ends the walk: nothing to its left can be vouched for, so the
///   trusted hop that wrote it (the entry to its right, or the peer) is logged.
/// - When every entry is trusted (an internal client behind our own proxies),
///   the left-most one is the client.
/// - Empty list elements (`a,,b`, trailing commas) are skipped, as HTTP's list
///   syntax requires.
///
/// IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`, what a dual-stack listener
/// reports for IPv4 peers) are treated and returned as the IPv4 address, so
/// that IPv4 CIDRs match them and the log shows one form per client.
pub fn client_ip(peer: IpAddr, forwarded_for: &[&[u8]], trusted: &[IpNet]) -> IpAddr {
    let peer = peer.to_canonical();
    if !is_trusted(peer, trusted) {
        return peer;
    }
    let mut nearest = peer;
    for value in forwarded_for.iter().rev() {
        for entry in value.rsplit(|&b| b == b',') {
            let entry = entry.trim_ascii();
            if entry.is_empty() {
                continue;
            }
            let Some(ip) = parse_entry(entry) else {
                return nearest;
            };
            if !is_trusted(ip, trusted) {
                return ip;
            }
            nearest = ip;
        }
    }
    nearest
}

/// Issue 36: whether `peer` is one of `trusted` (as [`client_ip`] decides
/// it), so a header only a proxy may set (`X-Forwarded-Host`) is believed.
pub fn is_trusted_proxy(peer: IpAddr, trusted: &[IpNet]) -> bool {
    is_trusted(peer.to_canonical(), trusted)
}

fn is_trusted(ip: IpAddr, trusted: &[IpNet]) -> bool {
    trusted.iter().any(|net| net.contains(&ip))
}

/// An address as proxies write them: bare, or with a port (`192.0.2.1:4711`,
/// `[2001:db8::1]:4711`), or bracketed without one.
fn parse_entry(entry: &[u8]) -> Option<IpAddr> {
    let s = std::str::from_utf8(entry).ok()?;
    let ip = s
        .parse::<IpAddr>()
        .ok()
        .or_else(|| s.parse::<SocketAddr>().ok().map(|sa| sa.ip()))
        .or_else(|| {
            s.strip_prefix('[')
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|inner| inner.parse::<std::net::Ipv6Addr>().ok())
                .map(IpAddr::V6)
        })?;
    Some(ip.to_canonical())
}

/// Why a `--trusted-proxy` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an IP address or CIDR block (like 10.0.0.0/8 or 2001:db8::/32): {0:?}")]
pub struct InvalidTrustedProxy(pub String);

/// Parses a trusted-proxy block; a bare address means just that host, since
/// that is what an operator listing one proxy means.
pub fn parse_trusted_proxy(s: &str) -> Result<IpNet, InvalidTrustedProxy> {
    let s = s.trim();
    s.parse::<IpNet>()
        .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
        .map(|net| net.trunc())
        .map_err(|_| InvalidTrustedProxy(s.to_owned()))
}

/// How much of a client's address the access log keeps (`serve
/// --client-ip`). Applied before the line is written, so a truncated or
/// dropped address is never on disk, not even for the flush interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ClientIpMode {
    /// The address as received (behind a trusted proxy, the client's).
    #[default]
    Full,
    /// IPv4 to its /24 and IPv6 to its /48: still the network, and so the
    /// country a GeoIP database gives, but no longer one household.
    Truncated,
    /// No address at all: the log's field is `-`.
    None,
}

/// The /24 of an IPv4 address, and the /48 of an IPv6 one.
pub const TRUNCATED_V4_PREFIX: u8 = 24;
pub const TRUNCATED_V6_PREFIX: u8 = 48;

impl ClientIpMode {
    /// What the log writes for a client at `ip`: the address, its network
    /// (host bits zero) or nothing. An IPv4-mapped IPv6 address is truncated
    /// as the IPv4 address it is, so its /24 is kept and not a /48 that
    /// would keep all of it.
    pub fn logged(self, ip: IpAddr) -> Option<IpAddr> {
        match self {
            ClientIpMode::Full => Some(ip),
            ClientIpMode::None => None,
            ClientIpMode::Truncated => {
                let prefix = match ip.to_canonical() {
                    IpAddr::V4(_) => TRUNCATED_V4_PREFIX,
                    IpAddr::V6(_) => TRUNCATED_V6_PREFIX,
                };
                // The prefixes are in range for their family, so this cannot fail.
                IpNet::new(ip.to_canonical(), prefix)
                    .ok()
                    .map(|net| net.network())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("test address")
    }

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter()
            .map(|s| parse_trusted_proxy(s).expect("test CIDR"))
            .collect()
    }

    fn resolve(peer: &str, headers: &[&str], trusted: &[&str]) -> IpAddr {
        let values: Vec<&[u8]> = headers.iter().map(|h| h.as_bytes()).collect();
        client_ip(ip(peer), &values, &nets(trusted))
    }

    const PROXIES: &[&str] = &["10.0.0.0/8", "2001:db8:ffff::/48"];

    #[test]
    fn untrusted_peer_is_the_client_whatever_it_claims() {
        assert_eq!(resolve("203.0.113.7", &[], &[]), ip("203.0.113.7"));
        assert_eq!(
            resolve("203.0.113.7", &["198.51.100.1"], &[]),
            ip("203.0.113.7")
        );
        assert_eq!(
            resolve("203.0.113.7", &["198.51.100.1"], PROXIES),
            ip("203.0.113.7")
        );
        assert_eq!(
            resolve("2001:db8::7", &["198.51.100.1"], PROXIES),
            ip("2001:db8::7")
        );
    }

    #[test]
    fn trusted_peer_without_header_is_the_client() {
        assert_eq!(resolve("10.1.2.3", &[], PROXIES), ip("10.1.2.3"));
        assert_eq!(resolve("10.1.2.3", &[""], PROXIES), ip("10.1.2.3"));
        assert_eq!(resolve("10.1.2.3", &[" , ,"], PROXIES), ip("10.1.2.3"));
    }

    #[test]
    fn rightmost_untrusted_entry_wins() {
        assert_eq!(
            resolve("10.0.0.1", &["198.51.100.1"], PROXIES),
            ip("198.51.100.1")
        );
        // The left-most entry is what the client claimed; it is not believed.
        assert_eq!(
            resolve("10.0.0.1", &["1.1.1.1, 198.51.100.1, 10.0.0.2"], PROXIES),
            ip("198.51.100.1")
        );
        assert_eq!(
            resolve(
                "10.0.0.1",
                &["1.1.1.1,198.51.100.1,10.0.0.2,10.9.9.9"],
                PROXIES
            ),
            ip("198.51.100.1")
        );
    }

    #[test]
    fn several_header_fields_are_one_list_in_order() {
        assert_eq!(
            resolve("10.0.0.1", &["1.1.1.1, 198.51.100.1", "10.0.0.2"], PROXIES),
            ip("198.51.100.1")
        );
        assert_eq!(
            resolve(
                "10.0.0.1",
                &["198.51.100.1", "10.0.0.2, 192.0.2.4"],
                PROXIES
            ),
            ip("192.0.2.4")
        );
    }

    #[test]
    fn ipv6_entries_and_peers() {
        assert_eq!(
            resolve("2001:db8:ffff::1", &["2001:db8::abcd"], PROXIES),
            ip("2001:db8::abcd")
        );
        assert_eq!(
            resolve(
                "2001:db8:ffff::1",
                &["2001:db8::abcd, 2001:db8:ffff::2"],
                PROXIES
            ),
            ip("2001:db8::abcd")
        );
        // A chain that mixes families.
        assert_eq!(
            resolve("10.0.0.1", &["2001:db8::abcd, 2001:db8:ffff::9"], PROXIES),
            ip("2001:db8::abcd")
        );
        assert_eq!(
            resolve("2001:db8:ffff::1", &["192.0.2.77"], PROXIES),
            ip("192.0.2.77")
        );
    }

    #[test]
    fn ipv4_mapped_peers_and_entries_are_ipv4() {
        // An IPv4 proxy seen through a dual-stack socket is still trusted.
        assert_eq!(
            resolve("::ffff:10.0.0.1", &["192.0.2.1"], PROXIES),
            ip("192.0.2.1")
        );
        // An untrusted mapped peer is logged in IPv4 form.
        assert_eq!(resolve("::ffff:192.0.2.9", &[], PROXIES), ip("192.0.2.9"));
        assert_eq!(resolve("::ffff:192.0.2.9", &[], &[]), ip("192.0.2.9"));
        // A trusted mapped peer with no header.
        assert_eq!(resolve("::ffff:10.0.0.1", &[], PROXIES), ip("10.0.0.1"));
        // Mapped entries are matched and reported as IPv4.
        assert_eq!(
            resolve("10.0.0.1", &["::ffff:192.0.2.5, ::ffff:10.0.0.3"], PROXIES),
            ip("192.0.2.5")
        );
        // A trusted IPv6 block does not trust mapped addresses by accident.
        assert_eq!(
            resolve("::ffff:10.0.0.1", &["192.0.2.1"], &["2001:db8::/32"]),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn entries_with_ports_and_brackets() {
        assert_eq!(
            resolve("10.0.0.1", &["192.0.2.1:4711"], PROXIES),
            ip("192.0.2.1")
        );
        assert_eq!(
            resolve("10.0.0.1", &["[2001:db8::5]:4711"], PROXIES),
            ip("2001:db8::5")
        );
        assert_eq!(
            resolve("10.0.0.1", &["[2001:db8::5]"], PROXIES),
            ip("2001:db8::5")
        );
        assert_eq!(
            resolve("10.0.0.1", &["\t192.0.2.1 ,\t10.0.0.2\t"], PROXIES),
            ip("192.0.2.1")
        );
    }

    #[test]
    fn garbage_stops_the_walk_at_the_hop_that_wrote_it() {
        // The trusted peer wrote garbage: log the peer.
        assert_eq!(resolve("10.0.0.1", &["unknown"], PROXIES), ip("10.0.0.1"));
        assert_eq!(
            resolve("10.0.0.1", &["192.0.2.1, unknown"], PROXIES),
            ip("10.0.0.1")
        );
        // A trusted hop further in wrote garbage: log that hop.
        assert_eq!(
            resolve("10.0.0.1", &["192.0.2.1, _hidden, 10.0.0.2"], PROXIES),
            ip("10.0.0.2")
        );
        // Garbage left of the client does not matter.
        assert_eq!(
            resolve("10.0.0.1", &["not-an-ip, 192.0.2.1, 10.0.0.2"], PROXIES),
            ip("192.0.2.1")
        );
        for junk in [
            "1.2.3",
            "1.2.3.4.5",
            "256.1.1.1",
            "::ffff:1.2.3.256",
            "fe80::1%eth0",
            "[2001:db8::5",
            "192.0.2.1:99999",
            "2001:db8::5:4711:1:2:3:4:5",
            "1.2.3.4 5.6.7.8",
            "\"192.0.2.1\"",
            "for=192.0.2.1",
        ] {
            assert_eq!(
                resolve("10.0.0.1", &[junk], PROXIES),
                ip("10.0.0.1"),
                "{junk:?} was taken for an address"
            );
        }
    }

    #[test]
    fn non_utf8_entries_are_garbage() {
        let values: [&[u8]; 1] = [b"192.0.2.1, \xff\xfe, 10.0.0.2"];
        assert_eq!(
            client_ip(ip("10.0.0.1"), &values, &nets(PROXIES)),
            ip("10.0.0.2")
        );
        let values: [&[u8]; 1] = [b"\xc3\xa9192.0.2.1"];
        assert_eq!(
            client_ip(ip("10.0.0.1"), &values, &nets(PROXIES)),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn all_trusted_chain_gives_the_leftmost() {
        assert_eq!(
            resolve("10.0.0.1", &["10.0.0.4, 10.0.0.3, 10.0.0.2"], PROXIES),
            ip("10.0.0.4")
        );
        assert_eq!(
            resolve("10.0.0.1", &["10.0.0.4, ,10.0.0.3,", "10.0.0.2"], PROXIES),
            ip("10.0.0.4")
        );
        assert_eq!(
            resolve("2001:db8:ffff::1", &["10.0.0.4, 2001:db8:ffff::2"], PROXIES),
            ip("10.0.0.4")
        );
    }

    #[test]
    fn trusted_lists_are_matched_by_block() {
        let everyone = &["0.0.0.0/0", "::/0"];
        assert_eq!(
            resolve("198.51.100.1", &["192.0.2.1, 203.0.113.1"], everyone),
            ip("192.0.2.1")
        );
        let one_host = &["10.0.0.1"];
        assert_eq!(resolve("10.0.0.1", &["10.0.0.2"], one_host), ip("10.0.0.2"));
        assert_eq!(
            resolve("10.0.0.2", &["192.0.2.1"], one_host),
            ip("10.0.0.2")
        );
    }

    #[test]
    fn trusted_proxy_values_parse() {
        assert_eq!(
            parse_trusted_proxy("10.0.0.0/8").map(|n| n.to_string()),
            Ok("10.0.0.0/8".into())
        );
        assert_eq!(
            parse_trusted_proxy(" 10.1.2.3/8 ").map(|n| n.to_string()),
            Ok("10.0.0.0/8".into())
        );
        assert_eq!(
            parse_trusted_proxy("192.0.2.1").map(|n| n.to_string()),
            Ok("192.0.2.1/32".into())
        );
        assert_eq!(
            parse_trusted_proxy("2001:db8::1").map(|n| n.to_string()),
            Ok("2001:db8::1/128".into())
        );
        for bad in ["", "10.0.0.0/33", "example.com", "10.0.0.0/8,", "::/129"] {
            assert!(parse_trusted_proxy(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn full_keeps_the_address() {
        for a in ["203.0.113.7", "2001:db8:1:2:3:4:5:6", "::"] {
            assert_eq!(ClientIpMode::Full.logged(ip(a)), Some(ip(a)));
        }
    }

    #[test]
    fn truncated_keeps_ipv4_slash_24_and_ipv6_slash_48() {
        let t = |a: &str| ClientIpMode::Truncated.logged(ip(a));
        assert_eq!(t("203.0.113.7"), Some(ip("203.0.113.0")));
        assert_eq!(t("203.0.113.255"), Some(ip("203.0.113.0")));
        assert_eq!(t("10.0.0.0"), Some(ip("10.0.0.0")));
        assert_eq!(t("2001:db8:abcd:12:3:4:5:6"), Some(ip("2001:db8:abcd::")));
        assert_eq!(t("2001:db8:abcd:ffff::1"), Some(ip("2001:db8:abcd::")));
        assert_eq!(t("::1"), Some(ip("::")));
        // A mapped IPv4 address is truncated as IPv4.
        assert_eq!(t("::ffff:198.51.100.9"), Some(ip("198.51.100.0")));
    }

    #[test]
    fn none_keeps_nothing() {
        assert_eq!(ClientIpMode::None.logged(ip("203.0.113.7")), None);
        assert_eq!(ClientIpMode::None.logged(ip("2001:db8::1")), None);
    }

    proptest::proptest! {
        /// Truncation only zeroes host bits: the result is inside the
        /// client's network, the same for every host in it, and idempotent.
        #[test]
        fn truncation_is_the_network(bits: u128, v4: bool) {
            let a = if v4 {
                IpAddr::V4(std::net::Ipv4Addr::from(bits as u32))
            } else {
                IpAddr::V6(std::net::Ipv6Addr::from(bits))
            };
            let t = ClientIpMode::Truncated.logged(a).expect("an address");
            let prefix = if a.to_canonical().is_ipv4() { 24 } else { 48 };
            let net = IpNet::new(a.to_canonical(), prefix).expect("prefix");
            proptest::prop_assert!(net.contains(&t));
            proptest::prop_assert_eq!(ClientIpMode::Truncated.logged(t), Some(t));
            proptest::prop_assert_eq!(net.network(), t);
        }
    }
}

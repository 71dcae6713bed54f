//! The origin tags are printed with, checked once: an http(s) origin and
//! nothing after the host.

use std::fmt;

/// The origin that short URLs are printed with, e.g. `https://0x1f.ie`.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicUrl {
    /// ASCII-serialized origin, no trailing slash.
    origin: String,
    https: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the public URL must be an http(s) origin with nothing after the host, like https://0x1f.ie: {0:?}"
)]
pub struct InvalidPublicUrl(pub String);

impl PublicUrl {
    pub fn parse(s: &str) -> Result<Self, InvalidPublicUrl> {
        let bad = || InvalidPublicUrl(s.to_owned());
        let u = url::Url::parse(s).map_err(|_| bad())?;
        let plain_origin = matches!(u.scheme(), "http" | "https")
            && u.host_str().is_some()
            && u.username().is_empty()
            && u.password().is_none()
            && u.path() == "/"
            && u.query().is_none()
            && u.fragment().is_none();
        if !plain_origin {
            return Err(bad());
        }
        Ok(Self {
            origin: u.origin().ascii_serialization(),
            https: u.scheme() == "https",
        })
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub fn is_https(&self) -> bool {
        self.https
    }

    /// The short URL for `key`: what is printed on the tag.
    pub fn short_url(&self, key: &str) -> String {
        format!("{}/{}", self.origin, key)
    }

    /// The origin a listener answers on when no public URL is configured:
    /// `http://` and its bound address (an unspecified address is not one
    /// anybody can reach, so it stays as bound and counts as local).
    pub fn of_listener(addr: std::net::SocketAddr) -> Self {
        Self::of_listen_address(&addr.to_string())
    }

    /// `http://` and a listen address as configured (`127.0.0.1:8080`), not
    /// checked: what the settings name before the listener is bound.
    pub fn of_listen_address(listen: &str) -> Self {
        Self {
            origin: format!("http://{listen}"),
            https: false,
        }
    }

    /// Whether a tag printed with this origin can only work on this machine
    /// or its own network: a loopback, private-range, link-local or
    /// unspecified address (IPv4 or IPv6), or `localhost` and its
    /// subdomains. Printing one needs `--allow-local-url`.
    pub fn is_local(&self) -> bool {
        let Ok(u) = url::Url::parse(&self.origin) else {
            return false;
        };
        match u.host() {
            Some(url::Host::Domain(d)) => {
                let d = d.trim_end_matches('.').to_ascii_lowercase();
                d == "localhost" || d.ends_with(".localhost")
            }
            Some(url::Host::Ipv4(ip)) => is_local_v4(ip),
            Some(url::Host::Ipv6(ip)) => match ip.to_ipv4_mapped() {
                Some(v4) => is_local_v4(v4),
                None => {
                    let first = ip.segments()[0];
                    ip.is_loopback()
                        || ip.is_unspecified()
                        || (first & 0xfe00) == 0xfc00 // unique local, fc00::/7
                        || (first & 0xffc0) == 0xfe80 // link-local, fe80::/10
                }
            },
            None => false,
        }
    }
}

fn is_local_v4(ip: std::net::Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        // Carrier-grade NAT, 100.64.0.0/10: no more reachable from outside.
        || (a == 100 && (64..128).contains(&b))
}

impl std::str::FromStr for PublicUrl {
    type Err = InvalidPublicUrl;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin)
    }
}

impl fmt::Debug for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicUrl({})", self.origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_origins() {
        for local in [
            "http://127.0.0.1:8080",
            "http://127.9.9.9",
            "http://10.1.2.3",
            "http://172.16.0.1",
            "http://192.168.1.10:8080",
            "http://169.254.1.1",
            "http://0.0.0.0:8080",
            "http://100.64.0.1",
            "http://[::1]:8080",
            "http://[::]",
            "http://[fd00::1]",
            "http://[fe80::1]",
            "http://[::ffff:192.168.0.1]",
            "http://localhost:8080",
            "http://LOCALHOST",
            "http://qrtag.localhost",
        ] {
            assert!(PublicUrl::parse(local).expect(local).is_local(), "{local}");
        }
        for public in [
            "https://0x1f.ie",
            "http://93.184.215.14",
            "http://172.32.0.1",
            "http://100.128.0.1",
            "http://[2001:db8::1]",
            "https://localhost.example",
            "https://mylocalhost",
        ] {
            assert!(
                !PublicUrl::parse(public).expect(public).is_local(),
                "{public}"
            );
        }
    }

    #[test]
    fn public_url_is_an_origin() {
        let p = PublicUrl::parse("https://0x1f.ie").expect("valid");
        assert_eq!(p.short_url("H83if"), "https://0x1f.ie/H83if");
        assert!(p.is_https());
        assert_eq!(
            PublicUrl::parse("HTTPS://Bücher.example:443/").map(|p| p.origin().to_owned()),
            Ok("https://xn--bcher-kva.example".into())
        );
        for bad in [
            "0x1f.ie",
            "ftp://a.example",
            "https://a.example/x",
            "https://a.example/?q",
            "https://u@a.example",
        ] {
            assert!(PublicUrl::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}

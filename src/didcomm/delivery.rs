//! Outbound delivery of replies that were not asked for on the HTTP
//! response: an HTTP POST of the encrypted reply to the sender's DIDComm
//! endpoint, a few tries with backoff; failures are logged and counted.
//!
//! A sender's DID names the endpoint, so without a guard any allowed agent
//! could make the server POST into the network it runs in. Loopback,
//! private-range, link-local and other non-public addresses are refused
//! unless the operator says `--didcomm-allow-private-endpoints`: a literal
//! address before anything is sent ([`Delivery::refuses`]), a host name at
//! every connection (the resolver drops such addresses, so a name that
//! resolves there, now or after a rebinding, cannot be reached).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub const MEDIA_TYPE: &str = "application/didcomm-encrypted+json";

/// Pauses before the second, third and fourth tries.
const BACKOFF: [Duration; 3] = [
    Duration::from_millis(200),
    Duration::from_secs(1),
    Duration::from_secs(3),
];

#[derive(Debug, Default)]
pub struct Counters {
    pub delivered: AtomicU64,
    pub failed: AtomicU64,
}

/// Whether `ip` is an address of the public internet, where a stranger's
/// endpoint may be: not loopback, private (RFC 1918, CGNAT, IPv6 unique
/// local), link-local, unspecified, broadcast, multicast or documentation.
pub fn is_public(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        || first == 0x2001 && ip.segments()[1] == 0x0db8)
}

/// Why `endpoint` is not delivered to without `--didcomm-allow-private-endpoints`,
/// as far as the URL alone tells: a literal non-public address, or a
/// `localhost` name. Other names are checked as they resolve.
pub fn private_endpoint(endpoint: &str) -> Option<String> {
    let url = url::Url::parse(endpoint).ok()?;
    let private = match url.host()? {
        url::Host::Ipv4(v4) => !is_public(IpAddr::V4(v4)),
        url::Host::Ipv6(v6) => !is_public(IpAddr::V6(v6)),
        url::Host::Domain(d) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
    };
    private.then(|| {
        format!(
            "{} is not a public address",
            url.host_str().unwrap_or_default()
        )
    })
}

/// The system resolver without the addresses [`is_public`] refuses.
struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| is_public(a.ip()))
                .collect();
            if found.is_empty() {
                return Err(format!("{host} resolves to no public address").into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

#[derive(Clone)]
pub struct Delivery {
    client: reqwest::Client,
    counters: Arc<Counters>,
    allow_private: bool,
}

impl Delivery {
    /// `allow_private`: deliver to loopback and private-range endpoints too
    /// (`--didcomm-allow-private-endpoints`, for agents on the same host or
    /// network).
    pub fn new(allow_private: bool) -> Self {
        let builder = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none());
        let builder = if allow_private {
            builder
        } else {
            builder.dns_resolver(PublicOnly)
        };
        let client = builder.build().unwrap_or_else(|_| reqwest::Client::new());
        Self {
            client,
            counters: Arc::default(),
            allow_private,
        }
    }

    /// Why a reply is not posted to `endpoint`, if it is not.
    pub fn refuses(&self, endpoint: &str) -> Option<String> {
        if self.allow_private {
            None
        } else {
            private_endpoint(endpoint)
        }
    }

    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// Sends `body` to `endpoint` in the background.
    pub fn send(&self, endpoint: String, body: String) {
        let this = self.clone();
        tokio::spawn(async move { this.deliver(&endpoint, body).await });
    }

    async fn deliver(&self, endpoint: &str, body: String) {
        let mut last = String::new();
        for attempt in 0..=BACKOFF.len() {
            if attempt > 0 {
                tokio::time::sleep(BACKOFF[attempt - 1]).await;
            }
            let sent = self
                .client
                .post(endpoint)
                .header(reqwest::header::CONTENT_TYPE, MEDIA_TYPE)
                .body(body.clone())
                .send()
                .await;
            match sent {
                Ok(r) if r.status().is_success() => {
                    self.counters.delivered.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Ok(r) => last = format!("answered {}", r.status()),
                Err(e) => last = e.to_string(),
            }
        }
        let failed = self.counters.failed.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!(%endpoint, error = %last, failed_deliveries = failed, "could not deliver a DIDComm reply");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_public_endpoints() {
        for private in [
            "http://127.0.0.1:9/didcomm",
            "http://[::1]/",
            "https://10.1.2.3/",
            "https://172.16.0.1/",
            "https://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data",
            "http://[fe80::1]/",
            "http://[fd00::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://0.0.0.0/",
            "http://100.64.0.1/",
            "http://localhost:8080/",
            "http://api.LOCALHOST./",
        ] {
            assert!(private_endpoint(private).is_some(), "{private}");
        }
        for public in [
            "https://agent.example/didcomm",
            "https://93.184.215.14/",
            "http://[2606:4700::1111]/",
        ] {
            assert_eq!(private_endpoint(public), None, "{public}");
        }
        assert!(Delivery::new(true).refuses("http://127.0.0.1/").is_none());
        assert!(Delivery::new(false).refuses("http://127.0.0.1/").is_some());
    }
}

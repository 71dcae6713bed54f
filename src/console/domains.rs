//! Every domain as the surfaces see it (issue 36): what the REST API, the
//! console, DIDComm, print and health need of one domain, made once at
//! start and looked up by the host a request names.
//!
//! It lives beside the console because a domain's key order is the
//! console's ([`key_order`]); the REST API (`server::rest`) already reads
//! the console's list and scan counts, so it imports this too, and the
//! console never imports `server`.
//!
//! One key order a domain, shared by the console and the REST API: each
//! order holds only its own domain's links, so several domains together
//! cost per link what one did.
//!
//! [`key_order`]: super::key_order

use std::sync::{Arc, Mutex};

use super::key_order::KeyOrder;
use super::scans::ScanCounts;
use crate::snapshot::Snapshot;
use crate::store::LinkStore;
use crate::store::live_url::LiveUrl;
use crate::values::host::Host;

/// One domain's view: its links (snapshot), how its links are written
/// (answered once served), where its short URLs point, its key order and
/// its scan counts.
pub struct Domain {
    /// `None` on a service without `[[domains]]`: the one domain, which no
    /// request names.
    pub host: Option<Host>,
    pub snapshot: Arc<Snapshot>,
    /// The domain's store as its writers get it (`links::served::Served`).
    pub writes: Arc<dyn LinkStore>,
    pub public_url: LiveUrl,
    /// The domain's links in key order, kept following its snapshot.
    pub order: Arc<Mutex<KeyOrder>>,
    /// Counted from the domain's own access log.
    pub scans: Arc<dyn ScanCounts>,
}

impl Domain {
    /// The domain's name as people write it: its host, or the host of its
    /// public URL on a service without `[[domains]]`.
    pub fn name(&self) -> String {
        match &self.host {
            Some(host) => host.to_string(),
            None => host_of(self.public_url.load().origin()).to_owned(),
        }
    }
}

/// The host of an origin (`https://go.example:8443` → `go.example`).
fn host_of(origin: &str) -> &str {
    let rest = origin.split_once("://").map_or(origin, |(_, r)| r);
    match rest.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => rest,
    }
}

/// A domain a request named that the service does not serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no domain {asked} here (domains: {})", known.join(", "))]
pub struct UnknownDomain {
    pub asked: String,
    pub known: Vec<String>,
}

/// Every domain, the default first. A handful is the design (as for the
/// public listener's routing), so a lookup is a scan of a few hosts.
pub struct Domains {
    all: Vec<Arc<Domain>>,
}

impl Domains {
    /// `default` and then the others, in the configuration's order.
    pub fn new(default: Domain, others: Vec<Domain>) -> Self {
        let mut all = Vec::with_capacity(others.len() + 1);
        all.push(Arc::new(default));
        all.extend(others.into_iter().map(Arc::new));
        Self { all }
    }

    /// The one domain of a service without `[[domains]]`.
    pub fn single(domain: Domain) -> Self {
        Self::new(domain, Vec::new())
    }

    pub fn default_domain(&self) -> &Arc<Domain> {
        &self.all[0]
    }

    /// Every domain, the default first.
    pub fn all(&self) -> &[Arc<Domain>] {
        &self.all
    }

    /// Whether there is more than one (the console's switcher shows then).
    pub fn several(&self) -> bool {
        self.all.len() > 1
    }

    /// The domain `asked` names (as a Host header would: case, a port and
    /// a trailing dot aside), or the default when nothing is asked.
    pub fn get(&self, asked: Option<&str>) -> Result<&Arc<Domain>, UnknownDomain> {
        self.position(asked).map(|at| &self.all[at])
    }

    /// [`Domains::get`]'s domain as its place in [`Domains::all`].
    pub fn position(&self, asked: Option<&str>) -> Result<usize, UnknownDomain> {
        let Some(asked) = asked else {
            return Ok(0);
        };
        self.all
            .iter()
            .position(|d| match &d.host {
                Some(host) => host.matches(asked.as_bytes()),
                // Without `[[domains]]` the one domain answers to its
                // public URL's host.
                None => crate::values::host::name_of(asked.as_bytes())
                    .eq_ignore_ascii_case(d.name().as_bytes()),
            })
            .ok_or_else(|| UnknownDomain {
                asked: asked.to_owned(),
                known: self.all.iter().map(|d| d.name()).collect(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::public_url::PublicUrl;

    fn domain(dir: &std::path::Path, host: Option<&str>, url: &str) -> Domain {
        let snapshot = Snapshot::new();
        Domain {
            host: host.map(|h| Host::parse(h).expect("host")),
            writes: Arc::new(
                crate::store::sqlite::SqliteStore::open(
                    &dir.join(format!("{url}.db").replace([':', '/'], "_")),
                )
                .expect("store"),
            ),
            public_url: LiveUrl::new(PublicUrl::parse(url).expect("url")),
            order: Arc::default(),
            scans: Arc::new(super::super::scans::NoScanCounts),
            snapshot,
        }
    }

    #[test]
    fn a_domain_is_found_by_its_host_and_none_is_the_default() {
        let dir = tempfile::tempdir().expect("tempdir");
        let domains = Domains::new(
            domain(dir.path(), Some("0x1f.ie"), "https://0x1f.ie"),
            vec![domain(
                dir.path(),
                Some("qr.brand-b.ie"),
                "https://qr.brand-b.ie",
            )],
        );
        assert!(domains.several());
        assert_eq!(domains.get(None).expect("default").name(), "0x1f.ie");
        assert_eq!(
            domains.get(Some("QR.Brand-B.ie.")).expect("b").name(),
            "qr.brand-b.ie"
        );
        let err = domains.get(Some("nope.example")).err().expect("unknown");
        assert_eq!(
            err.to_string(),
            "no domain nope.example here (domains: 0x1f.ie, qr.brand-b.ie)"
        );
    }

    #[test]
    fn without_domains_the_one_domain_is_its_public_urls_host() {
        let dir = tempfile::tempdir().expect("tempdir");
        let domains = Domains::single(domain(dir.path(), None, "http://127.0.0.1:8080"));
        assert!(!domains.several());
        assert_eq!(domains.default_domain().name(), "127.0.0.1");
        assert!(domains.get(Some("127.0.0.1")).is_ok());
        assert!(domains.get(Some("other.example")).is_err());
    }
}

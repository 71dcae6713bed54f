//! Which certificate a TLS handshake gets: by the client's SNI server name
//! among the installed ones, else the default. The table is swapped whole
//! (arc-swap), so installing a certificate (a reload, a renewal) never
//! waits for a handshake nor drops a connection: connections already open
//! keep the certificate they were made with, the next handshake gets the
//! new one.

use std::collections::BTreeMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::certified::Certified;

/// One installed certificate, under the domain it is reported for.
#[derive(Debug, Clone)]
pub struct Installed {
    pub domain: String,
    pub certified: Certified,
}

#[derive(Debug, Default)]
struct Table {
    /// By server name, lower case.
    names: BTreeMap<String, Arc<Installed>>,
    default: Option<Arc<Installed>>,
}

/// The certificates served, shared by every worker of the public listener
/// and by whatever installs them (the SIGHUP reload, ACME).
#[derive(Debug, Default)]
pub struct Certificates {
    table: ArcSwap<Table>,
    /// Issue 36: TLS-ALPN-01 answers by server name, served only to a
    /// handshake offering ALPN `acme-tls/1` (a CA validating), never to
    /// a scan.
    alpn_answers: ArcSwap<BTreeMap<String, Arc<CertifiedKey>>>,
}

/// The ALPN protocol of TLS-ALPN-01 (RFC 8737).
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

impl Certificates {
    /// Serves `certified` to handshakes naming `server_name` (any case).
    pub fn install(&self, server_name: &str, certified: Certified) {
        let name = server_name.to_ascii_lowercase();
        let entry = Arc::new(Installed {
            domain: name.clone(),
            certified,
        });
        self.table.rcu(|t| {
            let mut names = t.names.clone();
            names.insert(name.clone(), Arc::clone(&entry));
            Table {
                names,
                default: t.default.clone(),
            }
        });
    }

    /// Serves `certified`, reported under `domain`, to handshakes naming no
    /// installed server name (or none at all: an IP address, an old client).
    pub fn install_default(&self, domain: &str, certified: Certified) {
        let entry = Arc::new(Installed {
            domain: domain.to_ascii_lowercase(),
            certified,
        });
        self.table.rcu(|t| Table {
            names: t.names.clone(),
            default: Some(Arc::clone(&entry)),
        });
    }

    /// Every installed certificate once (the default first), for
    /// `/metrics` and `/readyz`.
    pub fn installed(&self) -> Vec<Arc<Installed>> {
        let t = self.table.load();
        let mut out: Vec<Arc<Installed>> = t.default.iter().cloned().collect();
        for entry in t.names.values() {
            if !out.iter().any(|o| Arc::ptr_eq(o, entry)) {
                out.push(Arc::clone(entry));
            }
        }
        out
    }

    /// Issue 36: serves `answer` to a handshake naming `server_name` that
    /// offers ALPN `acme-tls/1`, until [`remove_alpn_answer`](Self::remove_alpn_answer).
    pub fn put_alpn_answer(&self, server_name: &str, answer: Arc<CertifiedKey>) {
        let name = server_name.to_ascii_lowercase();
        self.alpn_answers.rcu(|m| {
            let mut m = BTreeMap::clone(m);
            m.insert(name.clone(), Arc::clone(&answer));
            m
        });
    }

    pub fn remove_alpn_answer(&self, server_name: &str) {
        let name = server_name.to_ascii_lowercase();
        self.alpn_answers.rcu(|m| {
            let mut m = BTreeMap::clone(m);
            m.remove(&name);
            m
        });
    }

    /// Issue 36: what a handshake offering `acme-tls/1` is served: the
    /// answer for its server name, or nothing (the handshake fails).
    pub fn pick_alpn_answer(&self, server_name: Option<&str>) -> Option<Arc<CertifiedKey>> {
        let name = server_name?.to_ascii_lowercase();
        self.alpn_answers.load().get(&name).cloned()
    }

    /// What a handshake naming `server_name` is served.
    pub fn pick(&self, server_name: Option<&str>) -> Option<Arc<CertifiedKey>> {
        let t = self.table.load();
        let by_name = server_name.and_then(|n| {
            t.names
                .get(n)
                .or_else(|| t.names.get(&n.to_ascii_lowercase()))
        });
        by_name
            .or(t.default.as_ref())
            .map(|e| Arc::clone(&e.certified.key))
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // Issue 36: a CA validating TLS-ALPN-01 offers `acme-tls/1`.
        if hello
            .alpn()
            .is_some_and(|mut offered| offered.any(|p| p == ACME_TLS_ALPN))
        {
            return self.pick_alpn_answer(hello.server_name());
        }
        self.pick(hello.server_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certified(name: &str) -> Certified {
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        super::super::certified::parse(
            std::path::Path::new("c"),
            cert.pem().as_bytes(),
            std::path::Path::new("k"),
            key.serialize_pem().as_bytes(),
        )
        .expect("parsed")
    }

    #[test]
    fn picks_by_server_name_then_the_default() {
        let certs = Certificates::default();
        assert!(certs.pick(Some("a.example")).is_none(), "nothing installed");
        let a = certified("a.example");
        let d = certified("d.example");
        certs.install("A.example", a.clone());
        certs.install_default("d.example", d.clone());
        let served = |name| certs.pick(name).expect("a certificate").cert[0].clone();
        assert_eq!(served(Some("a.example")), a.key.cert[0]);
        assert_eq!(served(Some("A.EXAMPLE")), a.key.cert[0]);
        assert_eq!(served(Some("b.example")), d.key.cert[0]);
        assert_eq!(served(None), d.key.cert[0]);
        let domains: Vec<String> = certs.installed().iter().map(|i| i.domain.clone()).collect();
        assert_eq!(domains, ["d.example", "a.example"]);
    }

    #[test]
    fn an_alpn_answer_is_kept_apart_from_what_scans_get() {
        let certs = Certificates::default();
        let served = certified("d.example");
        let answer = certified("d.example");
        certs.install_default("d.example", served.clone());
        certs.put_alpn_answer("D.example", Arc::clone(&answer.key));
        assert_eq!(
            certs
                .pick_alpn_answer(Some("d.example"))
                .expect("answer")
                .cert[0],
            answer.key.cert[0]
        );
        assert!(certs.pick_alpn_answer(Some("other.example")).is_none());
        assert!(certs.pick_alpn_answer(None).is_none());
        assert_eq!(
            certs.pick(Some("d.example")).expect("served").cert[0],
            served.key.cert[0]
        );
        assert_eq!(
            certs.installed().len(),
            1,
            "an answer is no certificate served"
        );
        certs.remove_alpn_answer("d.example");
        assert!(certs.pick_alpn_answer(Some("d.example")).is_none());
    }

    #[test]
    fn an_install_replaces_what_the_next_handshake_gets_not_what_was_taken() {
        let certs = Certificates::default();
        let old = certified("d.example");
        let new = certified("d.example");
        certs.install_default("d.example", old.clone());
        let held = certs.pick(None).expect("old");
        certs.install_default("d.example", new.clone());
        assert_eq!(held.cert[0], old.key.cert[0]);
        assert_eq!(certs.pick(None).expect("new").cert[0], new.key.cert[0]);
        assert_eq!(certs.installed().len(), 1);
    }
}

//! The ACME renewer's two seams (`crate::acme::seams`) met by this folder's
//! types: challenges go into [`Challenges`], which the port 80 listener
//! answers from, and a new certificate into [`Certificates`] under its
//! name, checked as a file pair is, so ACME needs no listener of its own.

use std::path::Path;
use std::sync::Arc;

use super::certified;
use super::challenges::Challenges;
use super::resolver::Certificates;
use crate::acme::{CertificateBundle, Http01Responder, Installer};

impl Http01Responder for Challenges {
    fn put(&self, token: &str, key_authorization: &str) {
        if let Err(e) = Challenges::put(self, token, key_authorization) {
            tracing::warn!(token, "{e}");
        }
    }

    fn remove(&self, token: &str) {
        Challenges::remove(self, token);
    }
}

impl Installer for Certificates {
    fn install(&self, name: &str, bundle: &CertificateBundle) -> Result<(), String> {
        let label = Path::new(name);
        let certified = certified::parse(
            label,
            bundle.chain_pem.as_bytes(),
            label,
            bundle.key_pem.as_bytes(),
        )
        .map_err(|e| e.to_string())?;
        Certificates::install(self, name, certified);
        Ok(())
    }
}

/// Installs `serve`'s one ACME certificate as the default under its first
/// name and under each other name, so a handshake naming any domain of the
/// certificate, or none, is served it (the renewer gives the first name
/// only); each name once, so `/metrics` has one expiry series a domain.
#[derive(Debug)]
pub struct ServedEverywhere {
    pub certificates: Arc<Certificates>,
    pub names: Vec<String>,
}

impl Installer for ServedEverywhere {
    fn install(&self, name: &str, bundle: &CertificateBundle) -> Result<(), String> {
        let label = Path::new(name);
        let certified = certified::parse(
            label,
            bundle.chain_pem.as_bytes(),
            label,
            bundle.key_pem.as_bytes(),
        )
        .map_err(|e| e.to_string())?;
        for other in self.names.iter().filter(|n| n.as_str() != name) {
            self.certificates.install(other, certified.clone());
        }
        self.certificates.install_default(name, certified);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acme_fills_the_challenges_and_installs_by_name() {
        let challenges = Challenges::default();
        Http01Responder::put(&challenges, "t", "t.k");
        assert_eq!(challenges.get("t").as_deref(), Some("t.k"));
        Http01Responder::remove(&challenges, "t");
        assert_eq!(challenges.get("t"), None);

        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["go.example".to_owned()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        let certs = Certificates::default();
        let bundle = CertificateBundle {
            chain_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        };
        Installer::install(&certs, "go.example", &bundle).expect("installed");
        assert_eq!(
            certs.pick(Some("go.example")).expect("served").cert[0],
            cert.der().clone()
        );
        let bad = CertificateBundle {
            chain_pem: cert.pem(),
            key_pem: String::new(),
        };
        let err = Installer::install(&certs, "go.example", &bad).expect_err("no key");
        assert!(err.contains("holds no PEM private key"), "{err}");
    }

    #[test]
    fn serves_every_name_and_the_default_each_once() {
        let key = rcgen::KeyPair::generate().expect("key");
        let names = vec!["go.example".to_owned(), "other.example".to_owned()];
        let cert = rcgen::CertificateParams::new(names.clone())
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        let served = ServedEverywhere {
            certificates: Arc::new(Certificates::default()),
            names,
        };
        let bundle = CertificateBundle {
            chain_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        };
        Installer::install(&served, "go.example", &bundle).expect("installed");
        for asked in [Some("go.example"), Some("OTHER.example"), None] {
            assert_eq!(
                served.certificates.pick(asked).expect("served").cert[0],
                cert.der().clone()
            );
        }
        let mut domains: Vec<String> = served
            .certificates
            .installed()
            .iter()
            .map(|i| i.domain.clone())
            .collect();
        domains.sort();
        assert_eq!(domains, ["go.example", "other.example"]);
    }
}

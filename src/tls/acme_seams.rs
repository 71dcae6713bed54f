//! The ACME renewer's two seams (`crate::acme::seams`) met by this folder's
//! types: challenges go into [`Challenges`], which the port 80 listener
//! answers from, and a new certificate into [`Certificates`] under its
//! name, checked as a file pair is, so ACME needs no listener of its own.

use std::path::Path;
use std::sync::Arc;

use super::certified;
use super::challenges::Challenges;
use super::resolver::Certificates;
use crate::acme::{CertificateBundle, Http01Responder, Installer, TlsAlpn01Responder};

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

/// Issue 36: TLS-ALPN-01 answers, served by the public listener itself.
impl TlsAlpn01Responder for Certificates {
    /// Not read as a served certificate is: webpki refuses the critical
    /// acmeIdentifier extension every answer carries (only the CA reads
    /// it), so the pair is loaded as it is.
    fn put(&self, name: &str, answer: &CertificateBundle) -> Result<(), String> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let cert = CertificateDer::from_pem_slice(answer.chain_pem.as_bytes())
            .map_err(|e| format!("the TLS-ALPN-01 answer for {name}: {e}"))?;
        let key = PrivateKeyDer::from_pem_slice(answer.key_pem.as_bytes())
            .map_err(|e| format!("the TLS-ALPN-01 answer's key for {name}: {e}"))?;
        let key = super::provider()
            .key_provider
            .load_private_key(key)
            .map_err(|e| format!("the TLS-ALPN-01 answer's key for {name}: {e}"))?;
        self.put_alpn_answer(
            name,
            Arc::new(rustls::sign::CertifiedKey::new(vec![cert], key)),
        );
        Ok(())
    }

    fn remove(&self, name: &str) {
        self.remove_alpn_answer(name);
    }
}

/// Installs one domain's ACME certificate (issue 36: an order a domain,
/// so one brand's DNS pointing elsewhere stops no other's renewals): the
/// default domain's as the default, served to every handshake naming no
/// other domain (or none), another's under its own server name only. Each
/// once, so `/metrics` has one expiry series a domain.
#[derive(Debug)]
pub struct ServedFor {
    pub certificates: Arc<Certificates>,
    /// Whether this is the default domain's certificate.
    pub default: bool,
}

impl Installer for ServedFor {
    fn install(&self, name: &str, bundle: &CertificateBundle) -> Result<(), String> {
        let label = Path::new(name);
        let certified = certified::parse(
            label,
            bundle.chain_pem.as_bytes(),
            label,
            bundle.key_pem.as_bytes(),
        )
        .map_err(|e| e.to_string())?;
        if self.default {
            self.certificates.install_default(name, certified);
        } else {
            self.certificates.install(name, certified);
        }
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

    fn bundle(name: &str) -> (CertificateBundle, Vec<u8>) {
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        let der = cert.der().to_vec();
        (
            CertificateBundle {
                chain_pem: cert.pem(),
                key_pem: key.serialize_pem(),
            },
            der,
        )
    }

    #[test]
    fn each_domain_is_installed_for_itself_the_default_for_the_rest() {
        let certificates = Arc::new(Certificates::default());
        let (a, a_der) = bundle("go.example");
        let (b, b_der) = bundle("other.example");
        let default = ServedFor {
            certificates: Arc::clone(&certificates),
            default: true,
        };
        let other = ServedFor {
            certificates: Arc::clone(&certificates),
            default: false,
        };
        Installer::install(&other, "other.example", &b).expect("installed");
        Installer::install(&default, "go.example", &a).expect("installed");
        let served = |asked| certificates.pick(asked).expect("served").cert[0].to_vec();
        assert_eq!(served(Some("go.example")), a_der);
        assert_eq!(served(Some("OTHER.example")), b_der);
        assert_eq!(served(Some("unknown.example")), a_der);
        assert_eq!(served(None), a_der);
        let domains: Vec<String> = certificates
            .installed()
            .iter()
            .map(|i| i.domain.clone())
            .collect();
        assert_eq!(domains, ["go.example", "other.example"]);
    }
}

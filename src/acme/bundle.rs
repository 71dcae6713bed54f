//! A certificate as the CA issued it: the PEM chain (leaf first) and the PEM
//! private key made for it, and what the renewer reads from the leaf.

use thiserror::Error;
use x509_parser::pem::Pem;

use super::schedule::Validity;

#[derive(Clone, PartialEq, Eq)]
pub struct CertificateBundle {
    pub chain_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for CertificateBundle {
    // The key never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateBundle")
            .field("chain_pem", &self.chain_pem)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum BundleError {
    #[error("the certificate file holds no PEM certificate")]
    NoCertificate,
    #[error("the certificate file holds no PEM private key")]
    NoKey,
    #[error("the certificate does not parse: {0}")]
    Unparsable(String),
}

/// What the leaf says: its names and when it is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub names: Vec<String>,
    pub validity: Validity,
    /// The serial in hex, to tell one issue from the next in logs and tests.
    pub serial: String,
}

impl CertificateBundle {
    /// The leaf, the first certificate of the chain.
    pub fn leaf(&self) -> Result<Leaf, BundleError> {
        let pem = Pem::iter_from_buffer(self.chain_pem.as_bytes())
            .next()
            .ok_or(BundleError::NoCertificate)?
            .map_err(|e| BundleError::Unparsable(e.to_string()))?;
        let cert = pem
            .parse_x509()
            .map_err(|e| BundleError::Unparsable(e.to_string()))?;
        let validity = cert.validity();
        let mut names = Vec::new();
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            for name in &san.value.general_names {
                if let x509_parser::extensions::GeneralName::DNSName(dns) = name {
                    names.push(dns.to_ascii_lowercase());
                }
            }
        }
        Ok(Leaf {
            names,
            validity: Validity {
                not_before: validity.not_before.timestamp(),
                not_after: validity.not_after.timestamp(),
            },
            serial: cert.raw_serial_as_string().replace(':', ""),
        })
    }

    /// One file: the key first, then the chain, so a single rename replaces
    /// both and no reader sees a new chain with an old key.
    pub fn to_file_text(&self) -> String {
        let mut text = String::with_capacity(self.key_pem.len() + self.chain_pem.len() + 2);
        for part in [&self.key_pem, &self.chain_pem] {
            text.push_str(part.trim_end());
            text.push('\n');
        }
        text
    }

    /// Splits a file written by `to_file_text` (or by hand: key and
    /// certificates in any order) into key and chain.
    pub fn from_file_text(text: &str) -> Result<Self, BundleError> {
        let mut chain_pem = String::new();
        let mut key_pem = String::new();
        let mut current: Option<&mut String> = None;
        for line in text.lines() {
            if let Some(label) = line.strip_prefix("-----BEGIN ") {
                current = if label.contains("PRIVATE KEY") {
                    Some(&mut key_pem)
                } else if label.starts_with("CERTIFICATE") {
                    Some(&mut chain_pem)
                } else {
                    None
                };
            }
            let end = line.starts_with("-----END ");
            if let Some(out) = current.as_deref_mut() {
                out.push_str(line);
                out.push('\n');
            }
            if end {
                current = None;
            }
        }
        if chain_pem.is_empty() {
            return Err(BundleError::NoCertificate);
        }
        if key_pem.is_empty() {
            return Err(BundleError::NoKey);
        }
        Ok(Self { chain_pem, key_pem })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed(names: &[&str]) -> CertificateBundle {
        let key = rcgen::KeyPair::generate().unwrap();
        let params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        let cert = params.self_signed(&key).unwrap();
        CertificateBundle {
            chain_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    #[test]
    fn file_text_round_trips_and_leaf_reads_names() {
        let bundle = self_signed(&["a.example", "b.example"]);
        let back = CertificateBundle::from_file_text(&bundle.to_file_text()).unwrap();
        assert_eq!(back.chain_pem.trim(), bundle.chain_pem.trim());
        assert_eq!(back.key_pem.trim(), bundle.key_pem.trim());
        let leaf = back.leaf().unwrap();
        assert_eq!(leaf.names, ["a.example", "b.example"]);
        assert!(leaf.validity.not_after > leaf.validity.not_before);
        assert!(!format!("{bundle:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn missing_parts_are_named() {
        let bundle = self_signed(&["a.example"]);
        assert_eq!(
            CertificateBundle::from_file_text(&bundle.key_pem),
            Err(BundleError::NoCertificate)
        );
        assert_eq!(
            CertificateBundle::from_file_text(&bundle.chain_pem),
            Err(BundleError::NoKey)
        );
    }
}

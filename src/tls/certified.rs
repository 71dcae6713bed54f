//! A certificate chain and its private key, read from PEM and checked once,
//! so a file that cannot be served is refused where it is read (at start:
//! one line and exit 2; on a reload: the old certificate stays) rather than
//! at a client's handshake.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// What serving a certificate needs, and what `/metrics` and `/readyz` say
/// of it.
#[derive(Debug, Clone)]
pub struct Certified {
    pub key: Arc<CertifiedKey>,
    /// The end-entity certificate's notAfter, Unix seconds.
    pub not_after: i64,
    /// Its serial number in hex (lower case, no separators), for logs.
    pub serial: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("cannot read the TLS {what} {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the TLS certificate file {path} holds no PEM certificate")]
    NoCertificate { path: PathBuf },
    #[error("the TLS key file {path} holds no PEM private key")]
    NoKey { path: PathBuf },
    #[error("the TLS {what} {path} is not valid PEM: {message}")]
    Pem {
        what: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error("the TLS certificate in {path} is not an X.509 certificate: {message}")]
    NotX509 { path: PathBuf, message: String },
    #[error("the TLS key {key} cannot be used: {message}")]
    BadKey { key: PathBuf, message: String },
    #[error("the TLS key {key} does not match the certificate {cert}")]
    KeyMismatch { cert: PathBuf, key: PathBuf },
}

/// Reads `cert` (the chain, end-entity first) and `key` (PKCS#8, PKCS#1 or
/// SEC1) and checks that they belong together.
pub fn load(cert: &Path, key: &Path) -> Result<Certified, CertError> {
    let read = |what, path: &Path| {
        std::fs::read(path).map_err(|source| CertError::Read {
            what,
            path: path.to_owned(),
            source,
        })
    };
    let cert_pem = read("certificate", cert)?;
    let key_pem = read("key", key)?;
    parse(cert, &cert_pem, key, &key_pem)
}

/// [`load`] on the files' contents; the paths only name them in errors.
pub fn parse(
    cert: &Path,
    cert_pem: &[u8],
    key: &Path,
    key_pem: &[u8],
) -> Result<Certified, CertError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CertError::Pem {
            what: "certificate",
            path: cert.to_owned(),
            message: e.to_string(),
        })?;
    let Some(first) = chain.first() else {
        return Err(CertError::NoCertificate {
            path: cert.to_owned(),
        });
    };
    let (not_after, serial) = validity(first).map_err(|message| CertError::NotX509 {
        path: cert.to_owned(),
        message,
    })?;
    let private = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| match e {
        rustls_pki_types::pem::Error::NoItemsFound => CertError::NoKey {
            path: key.to_owned(),
        },
        e => CertError::Pem {
            what: "key",
            path: key.to_owned(),
            message: e.to_string(),
        },
    })?;
    let provider = super::provider();
    let signing = provider
        .key_provider
        .load_private_key(private)
        .map_err(|e| CertError::BadKey {
            key: key.to_owned(),
            message: e.to_string(),
        })?;
    let certified = CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {}
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            return Err(CertError::KeyMismatch {
                cert: cert.to_owned(),
                key: key.to_owned(),
            });
        }
        Err(e) => {
            return Err(CertError::NotX509 {
                path: cert.to_owned(),
                message: e.to_string(),
            });
        }
    }
    Ok(Certified {
        key: Arc::new(certified),
        not_after,
        serial,
    })
}

/// The end-entity certificate's notAfter (Unix seconds) and serial.
fn validity(der: &CertificateDer<'_>) -> Result<(i64, String), String> {
    let (_, parsed) =
        x509_parser::parse_x509_certificate(der.as_ref()).map_err(|e| e.to_string())?;
    let serial = parsed
        .raw_serial()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((parsed.validity().not_after.timestamp(), serial))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec![name.to_owned()]).expect("params");
        let cert = params.self_signed(&key).expect("cert");
        (cert.pem(), key.serialize_pem())
    }

    fn parse_texts(cert: &str, key: &str) -> Result<Certified, CertError> {
        parse(
            Path::new("c.pem"),
            cert.as_bytes(),
            Path::new("k.pem"),
            key.as_bytes(),
        )
    }

    #[test]
    fn a_matching_pair_is_read_with_its_expiry() {
        let (cert, key) = made("go.example");
        let c = parse_texts(&cert, &key).expect("served");
        // rcgen's default validity ends in 4096.
        assert!(c.not_after > 4_000_000_000, "{}", c.not_after);
        assert!(!c.serial.is_empty());
        assert_eq!(c.key.cert.len(), 1);
    }

    #[test]
    fn each_refusal_says_what_is_wrong() {
        let (cert, key) = made("go.example");
        let (_, other_key) = made("go.example");
        let cases = [
            (String::new(), key.clone(), "holds no PEM certificate"),
            (key.clone(), key.clone(), "holds no PEM certificate"),
            (cert.clone(), String::new(), "holds no PEM private key"),
            (cert.clone(), cert.clone(), "holds no PEM private key"),
            (
                "-----BEGIN CERTIFICATE-----\nAAAA\n".into(),
                key.clone(),
                "not valid PEM",
            ),
            (
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".into(),
                key.clone(),
                "not an X.509 certificate",
            ),
            (cert.clone(), other_key, "does not match the certificate"),
        ];
        for (cert, key, said) in cases {
            let err = parse_texts(&cert, &key).expect_err(said).to_string();
            assert!(err.contains(said), "{err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn an_unreadable_file_is_named() {
        let err = load(
            Path::new("/nonexistent/c.pem"),
            Path::new("/nonexistent/k.pem"),
        )
        .expect_err("missing");
        assert!(
            err.to_string()
                .starts_with("cannot read the TLS certificate /nonexistent/c.pem: "),
            "{err}"
        );
    }
}

//! HTTPS on the public listener (issue 36) with certificates read from
//! files managed elsewhere: read once at start (a bad file stops the start),
//! read again on SIGHUP (a bad file keeps the old certificate served and is
//! said on `/readyz`), served per handshake by [`resolver::Certificates`],
//! where ACME installs its certificates too. Behind a reverse proxy none of
//! this runs.

pub mod certified;
pub mod listener;
pub mod resolver;

use std::path::PathBuf;
use std::sync::Arc;

use self::certified::CertError;
use self::resolver::Certificates;

/// The crypto the listener uses: the aws-lc-rs provider rustls is built
/// with in this tree, named rather than left to a process-wide default
/// another crate might install.
pub fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

/// `tls = { cert = …, key = … }`.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// PEM: the certificate chain, end-entity first.
    pub cert: PathBuf,
    /// PEM: its private key.
    pub key: PathBuf,
}

/// The running TLS state: what is served, where it was read from.
#[derive(Debug)]
pub struct Tls {
    pub certificates: Arc<Certificates>,
    files: TlsSettings,
}

impl Tls {
    /// Reads the files; an error is the start's one line.
    pub fn start(files: TlsSettings, domain: &str) -> Result<Self, CertError> {
        let first = certified::load(&files.cert, &files.key)?;
        let certificates = Arc::new(Certificates::default());
        certificates.install_default(domain, first);
        Ok(Self {
            certificates,
            files,
        })
    }

    pub fn settings(&self) -> &TlsSettings {
        &self.files
    }
}

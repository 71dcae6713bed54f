//! HTTPS on the public listener (issue 36) with certificates read from
//! files managed elsewhere: read once at start (a bad file stops the start),
//! read again on SIGHUP (a bad file keeps the old certificate served and is
//! said on `/readyz`), served per handshake by [`resolver::Certificates`],
//! where ACME installs its certificates too. Behind a reverse proxy none of
//! this runs.

pub mod certified;
pub mod challenges;
pub mod hsts;
pub mod listener;
pub mod resolver;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use self::certified::{CertError, Certified};
use self::challenges::Challenges;
use self::resolver::Certificates;

/// The crypto the listener uses: the aws-lc-rs provider rustls is built
/// with in this tree, named rather than left to a process-wide default
/// another crate might install.
pub fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

/// `tls = { cert = …, key = … }`, `hsts`, `http_listen`.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// PEM: the certificate chain, end-entity first.
    pub cert: PathBuf,
    /// PEM: its private key.
    pub key: PathBuf,
    /// `Strict-Transport-Security` on HTTPS answers; `None`: not sent.
    pub hsts: Option<hsts::Hsts>,
    /// The plain listener that redirects to HTTPS and answers ACME
    /// challenges (`:80` in production); `None`: none.
    pub http_listen: Option<String>,
}

/// The running TLS state: what is served, where it was read from, what the
/// last reload said.
#[derive(Debug)]
pub struct Tls {
    pub certificates: Arc<Certificates>,
    pub challenges: Arc<Challenges>,
    files: TlsSettings,
    /// The domain the files' certificate is reported under.
    domain: String,
    /// The last reload's failure, until one succeeds.
    problem: Mutex<Option<String>>,
}

impl Tls {
    /// Reads the files; an error is the start's one line.
    pub fn start(files: TlsSettings, domain: &str) -> Result<Self, CertError> {
        let first = certified::load(&files.cert, &files.key)?;
        let certificates = Arc::new(Certificates::default());
        certificates.install_default(domain, first);
        Ok(Self {
            certificates,
            challenges: Arc::new(Challenges::default()),
            files,
            domain: domain.to_owned(),
            problem: Mutex::new(None),
        })
    }

    pub fn settings(&self) -> &TlsSettings {
        &self.files
    }

    /// Reads the files again (SIGHUP). A failure keeps what is served and
    /// is kept for `/readyz` until a reload succeeds.
    pub fn reload(&self) -> Result<Certified, CertError> {
        let result = certified::load(&self.files.cert, &self.files.key);
        let mut problem = self.problem.lock().unwrap_or_else(|p| p.into_inner());
        match &result {
            Ok(c) => {
                self.certificates.install_default(&self.domain, c.clone());
                *problem = None;
                tracing::info!(domain = %self.domain, serial = %c.serial, "TLS certificate reloaded");
            }
            Err(e) => {
                let line = format!("TLS reload failed, the old certificate is served: {e}");
                tracing::warn!("{line}");
                *problem = Some(line);
            }
        }
        result
    }

    /// What `/readyz` says: a failed reload.
    pub fn problems(&self) -> Vec<String> {
        self.problem
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

//! HTTPS on the public listener (issue 36) with certificates read from
//! files managed elsewhere: read once at start (a bad file stops the start),
//! read again on SIGHUP (a bad file keeps the old certificate served and is
//! said on `/readyz`), served per handshake by [`resolver::Certificates`],
//! where ACME installs its certificates too. Behind a reverse proxy none of
//! this runs.

pub mod acme_seams;
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

/// A certificate whose notAfter is closer than this is a `/readyz` warning.
pub const EXPIRY_WARNING: std::time::Duration = std::time::Duration::from_secs(14 * 24 * 3600);

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

    /// What `/readyz` says: a failed reload, and each certificate within
    /// [`EXPIRY_WARNING`] of its notAfter (or past it).
    pub fn problems(&self, now: i64) -> Vec<String> {
        let mut out: Vec<String> = self
            .problem
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect();
        for i in self.certificates.installed() {
            if let Some(line) = expiry_warning(&i.domain, i.certified.not_after, now) {
                out.push(line);
            }
        }
        out
    }
}

/// The warning for a certificate of `domain` ending at `not_after`, if it
/// ends within [`EXPIRY_WARNING`] of `now` (Unix seconds).
pub fn expiry_warning(domain: &str, not_after: i64, now: i64) -> Option<String> {
    let left = not_after - now;
    let bound = i64::try_from(EXPIRY_WARNING.as_secs()).unwrap_or(i64::MAX);
    if left >= bound {
        return None;
    }
    Some(if left <= 0 {
        format!("the TLS certificate for {domain} has expired")
    } else {
        let days = left / 86_400;
        let hours = (left % 86_400) / 3_600;
        format!("the TLS certificate for {domain} expires in {days} days {hours} hours")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_a_warning_under_fourteen_days() {
        let now = 1_000_000_000;
        let day = 86_400;
        assert_eq!(expiry_warning("a.example", now + 14 * day, now), None);
        assert_eq!(
            expiry_warning("a.example", now + 14 * day - 1, now).as_deref(),
            Some("the TLS certificate for a.example expires in 13 days 23 hours")
        );
        assert_eq!(
            expiry_warning("a.example", now, now).as_deref(),
            Some("the TLS certificate for a.example has expired")
        );
    }
}

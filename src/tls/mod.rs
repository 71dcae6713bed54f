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

/// `tls = { cert = …, key = … }` or `tls = "acme"`, `hsts`, `http_listen`.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// Where the served certificate comes from.
    pub source: CertSource,
    /// `Strict-Transport-Security` on HTTPS answers; `None`: not sent.
    pub hsts: Option<hsts::Hsts>,
    /// The plain listener that redirects to HTTPS and answers ACME
    /// challenges (`:80` in production); `None`: none.
    pub http_listen: Option<String>,
    /// Issue 36: the other domains' certificates, each its own (files of
    /// its `[[domains]]` entry, or an ACME order of its own); a domain not
    /// listed is served the default domain's.
    pub domains: Vec<DomainCert>,
}

/// A domain other than the default and where its certificate comes from.
#[derive(Debug, Clone)]
pub struct DomainCert {
    /// The server name (SNI) it is served for, lower case.
    pub host: String,
    pub source: CertSource,
}

impl TlsSettings {
    /// Every certificate's domain and source, the default domain's first
    /// (reported under `default_domain`).
    pub fn sources<'a>(
        &'a self,
        default_domain: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a CertSource)> {
        std::iter::once((default_domain, &self.source))
            .chain(self.domains.iter().map(|d| (d.host.as_str(), &d.source)))
    }
}

/// Where the served certificate comes from.
#[derive(Debug, Clone)]
pub enum CertSource {
    /// PEM files managed elsewhere: the chain (end-entity first) and its
    /// key, read at start and again on SIGHUP.
    Files { cert: PathBuf, key: PathBuf },
    /// Ordered from an ACME CA by [`crate::acme::Renewer`]: nothing is
    /// served (handshakes fail) until its first certificate is installed,
    /// rather than a self-signed placeholder no client would trust either.
    Acme(crate::acme::AcmeSettings),
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
    /// The last reload's failure of each domain's files, until one
    /// succeeds.
    problem: Mutex<std::collections::BTreeMap<String, String>>,
    /// With ACME: each domain's renewer status, whose last failure
    /// `/readyz` says.
    renewal: Mutex<Vec<Arc<Mutex<crate::acme::RenewalStatus>>>>,
}

impl Tls {
    /// Reads the files; an error is the start's one line. With ACME nothing
    /// is read: the renewer installs.
    pub fn start(files: TlsSettings, domain: &str) -> Result<Self, CertError> {
        let tls = Self {
            certificates: Arc::new(Certificates::default()),
            challenges: Arc::new(Challenges::default()),
            files,
            domain: domain.to_owned(),
            problem: Mutex::new(Default::default()),
            renewal: Mutex::new(Vec::new()),
        };
        for (name, source) in tls.files.sources(domain) {
            if let CertSource::Files { cert, key } = source {
                tls.install(name, certified::load(cert, key)?);
            }
        }
        Ok(tls)
    }

    /// Serves `certified` for `name`: the default domain's to every
    /// handshake naming no other domain, another's to its server name.
    fn install(&self, name: &str, certified: Certified) {
        if name == self.domain {
            self.certificates.install_default(name, certified);
        } else {
            self.certificates.install(name, certified);
        }
    }

    /// With ACME: a renewer's status, for [`problems`](Self::problems)
    /// (one a domain).
    pub fn watch_renewal(&self, status: Arc<Mutex<crate::acme::RenewalStatus>>) {
        self.renewal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(status);
    }

    pub fn settings(&self) -> &TlsSettings {
        &self.files
    }

    /// Reads every domain's files again (SIGHUP), each on its own: a
    /// failure keeps what that domain is served and is kept for `/readyz`
    /// until a reload of it succeeds, the other domains' go ahead. With
    /// ACME there are no files: nothing.
    pub fn reload(&self) -> Vec<Result<Certified, CertError>> {
        let mut out = Vec::new();
        for (name, source) in self.files.sources(&self.domain) {
            let CertSource::Files { cert, key } = source else {
                continue;
            };
            let result = certified::load(cert, key);
            let mut problem = self.problem.lock().unwrap_or_else(|p| p.into_inner());
            match &result {
                Ok(c) => {
                    self.install(name, c.clone());
                    problem.remove(name);
                    tracing::info!(domain = %name, serial = %c.serial, "TLS certificate reloaded");
                }
                Err(e) => {
                    let line =
                        format!("TLS reload failed for {name}, the old certificate is served: {e}");
                    tracing::warn!("{line}");
                    problem.insert(name.to_owned(), line);
                }
            }
            out.push(result);
        }
        out
    }

    /// What `/readyz` says: a failed reload, and each certificate within
    /// [`EXPIRY_WARNING`] of its notAfter (or past it).
    pub fn problems(&self, now: i64) -> Vec<String> {
        let mut out: Vec<String> = self
            .problem
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        let renewals = self.renewal.lock().unwrap_or_else(|p| p.into_inner());
        for status in renewals.iter() {
            let s = status.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(e) = &s.last_error {
                out.push(format!(
                    "ACME: renewing the certificate for {} failed ({} in a row): {e}",
                    s.name, s.failures
                ));
            }
        }
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

//! The ACME settings, checked once where they are read: a directory URL, the
//! contact e-mail, the root the CA's own HTTPS chains to (Pebble's is not in
//! any trust store) and the names of one certificate.

use std::path::PathBuf;

use thiserror::Error;

/// Let's Encrypt's production directory, the default.
pub const LETS_ENCRYPT_PRODUCTION: &str = "https://acme-v02.api.letsencrypt.org/directory";
/// Let's Encrypt's staging directory: untrusted certificates, generous limits.
pub const LETS_ENCRYPT_STAGING: &str = "https://acme-staging-v02.api.letsencrypt.org/directory";

/// Why a setting was refused, in one line naming the value.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum InvalidAcmeSettings {
    #[error(
        "ACME directory {0:?} is not an https:// URL (or \"production\", \"staging\"); the CA's directory is the URL it publishes, e.g. {LETS_ENCRYPT_PRODUCTION}"
    )]
    Directory(String),
    #[error("ACME contact {0:?} is not an e-mail address")]
    Contact(String),
    #[error(
        "{0:?} is not a name an ACME CA can certify over HTTP-01 (lower-case letters, digits, '-' and '.', at least two labels, no wildcard)"
    )]
    Name(String),
    #[error("an ACME certificate needs at least one name")]
    NoNames,
    #[error("{0:?} is listed twice among one certificate's names")]
    Duplicate(String),
    #[error("ACME challenge {0:?} is not one qrtag answers: http-01 or tls-alpn-01")]
    Challenge(String),
}

/// An ACME directory: `production` and `staging` name Let's Encrypt's, any
/// other value must be an `https://` URL (Pebble's, a company CA's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryUrl(String);

impl DirectoryUrl {
    pub fn parse(text: &str) -> Result<Self, InvalidAcmeSettings> {
        let text = text.trim();
        match text {
            "" | "production" | "letsencrypt" => Ok(Self(LETS_ENCRYPT_PRODUCTION.into())),
            "staging" | "letsencrypt-staging" => Ok(Self(LETS_ENCRYPT_STAGING.into())),
            _ => match url::Url::parse(text) {
                Ok(url) if url.scheme() == "https" && url.host_str().is_some() => {
                    Ok(Self(url.into()))
                }
                _ => Err(InvalidAcmeSettings::Directory(text.into())),
            },
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for DirectoryUrl {
    fn default() -> Self {
        Self(LETS_ENCRYPT_PRODUCTION.into())
    }
}

/// A DNS name to certify, in the lower-case ASCII form the CA compares.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DnsName(String);

impl DnsName {
    pub fn parse(text: &str) -> Result<Self, InvalidAcmeSettings> {
        let name = text.trim().trim_end_matches('.').to_ascii_lowercase();
        let labels_ok = name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        });
        if name.len() > 253 || !labels_ok || !name.contains('.') {
            return Err(InvalidAcmeSettings::Name(text.into()));
        }
        Ok(Self(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Issue 36: how the CA is shown control of a name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Challenge {
    /// `http-01`: the CA fetches an answer from port 80 (`--http-listen`).
    #[default]
    Http01,
    /// `tls-alpn-01`: the CA opens a TLS connection to port 443 offering
    /// ALPN `acme-tls/1` and is served a certificate carrying the answer
    /// (RFC 8737), so no port 80 is needed.
    TlsAlpn01,
}

impl Challenge {
    pub fn parse(text: &str) -> Result<Self, InvalidAcmeSettings> {
        match text.trim().to_ascii_lowercase().as_str() {
            "http-01" => Ok(Self::Http01),
            "tls-alpn-01" => Ok(Self::TlsAlpn01),
            _ => Err(InvalidAcmeSettings::Challenge(text.into())),
        }
    }
}

/// An `acme` table of the configuration, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcmeSettings {
    pub directory: DirectoryUrl,
    /// `mailto:` is added; the CA writes here before a certificate expires
    /// unrenewed.
    pub contact: Option<String>,
    /// A PEM root the directory's own HTTPS chains to; none trusts the
    /// system's roots.
    pub ca_root: Option<PathBuf>,
    /// The certificate's names, the first one naming it in the store.
    pub names: Vec<DnsName>,
    /// Issue 36: the challenge the CA is answered with.
    pub challenge: Challenge,
}

impl AcmeSettings {
    pub fn new(
        directory: &str,
        contact: Option<&str>,
        ca_root: Option<PathBuf>,
        names: &[&str],
    ) -> Result<Self, InvalidAcmeSettings> {
        let contact = match contact.map(str::trim) {
            None | Some("") => None,
            Some(mail) => Some(check_mail(mail)?),
        };
        let mut checked: Vec<DnsName> = Vec::with_capacity(names.len());
        for name in names {
            let name = DnsName::parse(name)?;
            if checked.contains(&name) {
                return Err(InvalidAcmeSettings::Duplicate(name.0));
            }
            checked.push(name);
        }
        if checked.is_empty() {
            return Err(InvalidAcmeSettings::NoNames);
        }
        Ok(Self {
            directory: DirectoryUrl::parse(directory)?,
            contact,
            ca_root,
            names: checked,
            challenge: Challenge::Http01,
        })
    }

    /// Issue 36: the same settings answering `challenge`.
    pub fn with_challenge(self, challenge: Challenge) -> Self {
        Self { challenge, ..self }
    }

    /// The name the certificate is stored and installed under.
    pub fn primary(&self) -> &str {
        self.names[0].as_str()
    }

    /// The same CA, contact and root for a certificate of `name` alone:
    /// each domain of `serve` is ordered, stored and leased on its own
    /// (issue 36).
    pub fn for_name(&self, name: &str) -> Result<Self, InvalidAcmeSettings> {
        Ok(Self {
            names: vec![DnsName::parse(name)?],
            ..self.clone()
        })
    }

    pub fn name_list(&self) -> Vec<String> {
        self.names.iter().map(|n| n.0.clone()).collect()
    }
}

fn check_mail(mail: &str) -> Result<String, InvalidAcmeSettings> {
    let mail = mail.strip_prefix("mailto:").unwrap_or(mail);
    let ok = match mail.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !mail
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || matches!(c, ',' | '<' | '>'))
        }
        None => false,
    };
    if ok {
        Ok(mail.to_string())
    } else {
        Err(InvalidAcmeSettings::Contact(mail.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories() {
        assert_eq!(
            DirectoryUrl::parse("").unwrap().as_str(),
            LETS_ENCRYPT_PRODUCTION
        );
        assert_eq!(
            DirectoryUrl::parse("staging").unwrap().as_str(),
            LETS_ENCRYPT_STAGING
        );
        assert_eq!(
            DirectoryUrl::parse("https://127.0.0.1:14000/dir")
                .unwrap()
                .as_str(),
            "https://127.0.0.1:14000/dir"
        );
        for bad in ["http://ca.example/dir", "ca.example", "https://"] {
            assert!(DirectoryUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_and_contact() {
        let s =
            AcmeSettings::new("", Some("ops@brand.example"), None, &["Go.Brand.Example."]).unwrap();
        assert_eq!(s.primary(), "go.brand.example");
        assert_eq!(s.contact.as_deref(), Some("ops@brand.example"));
        for bad in [
            "*.brand.example",
            "localhost",
            "a..b",
            "-a.b",
            "a_b.c",
            "ü.example",
        ] {
            assert_eq!(
                AcmeSettings::new("", None, None, &[bad]),
                Err(InvalidAcmeSettings::Name(bad.into()))
            );
        }
        assert_eq!(
            AcmeSettings::new("", None, None, &["a.example", "A.example"]),
            Err(InvalidAcmeSettings::Duplicate("a.example".into()))
        );
        assert_eq!(
            AcmeSettings::new("", None, None, &[]),
            Err(InvalidAcmeSettings::NoNames)
        );
        assert!(AcmeSettings::new("", Some("ops"), None, &["a.example"]).is_err());
        assert!(AcmeSettings::new("", Some("a b@c.d"), None, &["a.example"]).is_err());
    }
}

//! Where certificates and the ACME account are kept, and the renewal lease
//! that lets one node order while the others wait and read the result.

pub mod couch;
pub mod disk;

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use thiserror::Error;

use super::CertificateBundle;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a certificate file qrtag can read: {detail}", path.display())]
    Corrupt { path: PathBuf, detail: String },
    #[error("the certificate database on CouchDB: {0}")]
    Couch(String),
    /// Issue 36: the account may not use the certificate database, said
    /// as what to do.
    #[error("{0}")]
    Access(String),
}

/// The account credentials (instant-acme's JSON, with its private key),
/// certificates by their first name, and the lease. Implementations keep the
/// account and the certificates readable by the service's operator only.
#[async_trait]
pub trait CertStore: Send + Sync {
    async fn account(&self, directory: &str) -> Result<Option<String>, StoreError>;
    async fn put_account(&self, directory: &str, credentials: &str) -> Result<(), StoreError>;
    async fn certificate(&self, name: &str) -> Result<Option<CertificateBundle>, StoreError>;
    async fn put_certificate(
        &self,
        name: &str,
        bundle: &CertificateBundle,
    ) -> Result<(), StoreError>;
    /// The right to renew `name`, or `None` while another holder has it.
    /// `holder` names this node in the lease; a lease not released lapses
    /// after `ttl` (on disk, when its process ends).
    async fn try_lease(
        &self,
        name: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Box<dyn Lease>>, StoreError>;

    // Issue 36: HTTP-01 answers shared by the nodes, since the CA's request
    // may reach any node behind port 80, not the one that ordered. A store
    // one machine keeps (the disk) shares none: only one process there
    // binds port 80.
    /// Keeps `token`'s answer where every node's port-80 listener finds it.
    async fn put_challenge(
        &self,
        _token: &str,
        _key_authorization: &str,
    ) -> Result<(), StoreError> {
        Ok(())
    }
    async fn remove_challenge(&self, _token: &str) -> Result<(), StoreError> {
        Ok(())
    }
    /// The answer another node keeps for `token`.
    async fn challenge(&self, _token: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
}

/// A lease held; dropping it without `release` leaves it to lapse.
#[async_trait]
pub trait Lease: Send + Sync {
    async fn release(self: Box<Self>) -> Result<(), StoreError>;
}

/// A short stable file or document name for a directory URL: each CA has its
/// own account.
pub(crate) fn directory_id(directory: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(directory.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

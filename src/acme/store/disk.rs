//! Certificates on one machine, in a folder of the data directory (0700):
//! `NAME.pem` (key, then chain) and `account-ID.json`, each 0600 and written
//! atomically (a temporary file renamed into place), and `NAME.lock`, the
//! lease: an exclusive `flock`, which the kernel drops when its holder's
//! process ends, so a dead node's lease never needs a stale timeout.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;

use super::{CertStore, Lease, StoreError, directory_id};
use crate::acme::CertificateBundle;
use crate::snapshot::file::write_atomically;

/// The folder beside an embedded database: `links.db` → `links.db.acme/`.
pub fn default_dir(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".acme");
    PathBuf::from(name)
}

#[derive(Debug, Clone)]
pub struct DiskStore {
    dir: PathBuf,
}

impl DiskStore {
    /// Creates the folder (0700) if it is missing.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let dir = dir.into();
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|source| StoreError::Io {
                what: "cannot create the certificate folder",
                path: dir.clone(),
                source,
            })?;
        Ok(Self { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn certificate_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.pem"))
    }

    pub fn account_path(&self, directory: &str) -> PathBuf {
        self.dir
            .join(format!("account-{}.json", directory_id(directory)))
    }

    fn lock_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.lock"))
    }
}

fn read_optional(path: &Path) -> Result<Option<String>, StoreError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(StoreError::Io {
            what: "cannot read",
            path: path.to_owned(),
            source,
        }),
    }
}

/// The temporary file's name is the target's and the process id, so two
/// writes of one file in this process (two domains' first orders both
/// storing the account) take turns.
static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn write_private(path: &Path, text: &str) -> Result<(), StoreError> {
    let _turn = WRITING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    write_atomically(path, |w| w.write_all(text.as_bytes())).map_err(|source| StoreError::Io {
        what: "cannot write",
        path: path.to_owned(),
        source,
    })
}

/// Runs file work off the runtime's threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

#[async_trait]
impl CertStore for DiskStore {
    async fn account(&self, directory: &str) -> Result<Option<String>, StoreError> {
        let path = self.account_path(directory);
        blocking(move || read_optional(&path)).await
    }

    async fn put_account(&self, directory: &str, credentials: &str) -> Result<(), StoreError> {
        let path = self.account_path(directory);
        let text = credentials.to_owned();
        blocking(move || write_private(&path, &text)).await
    }

    async fn certificate(&self, name: &str) -> Result<Option<CertificateBundle>, StoreError> {
        let path = self.certificate_path(name);
        blocking(move || match read_optional(&path)? {
            None => Ok(None),
            Some(text) => CertificateBundle::from_file_text(&text)
                .map(Some)
                .map_err(|e| StoreError::Corrupt {
                    path,
                    detail: e.to_string(),
                }),
        })
        .await
    }

    async fn put_certificate(
        &self,
        name: &str,
        bundle: &CertificateBundle,
    ) -> Result<(), StoreError> {
        let path = self.certificate_path(name);
        let text = bundle.to_file_text();
        blocking(move || write_private(&path, &text)).await
    }

    async fn try_lease(
        &self,
        name: &str,
        holder: &str,
        _ttl: Duration,
    ) -> Result<Option<Box<dyn Lease>>, StoreError> {
        let path = self.lock_path(name);
        let holder = holder.to_owned();
        blocking(move || {
            let io_error = |source| StoreError::Io {
                what: "cannot take the renewal lock",
                path: path.clone(),
                source,
            };
            let mut file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
                .map_err(io_error)?;
            // SAFETY: flock on a descriptor this function owns.
            let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if locked != 0 {
                let e = io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::EWOULDBLOCK) => Ok(None),
                    _ => Err(io_error(e)),
                };
            }
            // Who holds it, for a person looking at the folder.
            let _ = file.set_len(0).and_then(|()| writeln!(file, "{holder}"));
            Ok(Some(Box::new(DiskLease { _file: file }) as Box<dyn Lease>))
        })
        .await
    }
}

/// Holds the lock while the file is open: closing it releases.
struct DiskLease {
    _file: fs::File,
}

#[async_trait]
impl Lease for DiskLease {
    async fn release(self: Box<Self>) -> Result<(), StoreError> {
        drop(self);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn bundle() -> CertificateBundle {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["a.example".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        CertificateBundle {
            chain_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[tokio::test]
    async fn files_are_private_and_replaced_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let store = DiskStore::open(tmp.path().join("links.db.acme")).unwrap();
        assert_eq!(mode(store.dir()), 0o700);
        assert_eq!(store.certificate("a.example").await.unwrap(), None);

        let first = bundle();
        store.put_certificate("a.example", &first).await.unwrap();
        let path = store.certificate_path("a.example");
        assert_eq!(mode(&path), 0o600);
        let read = store.certificate("a.example").await.unwrap().unwrap();
        assert_eq!(read.chain_pem.trim(), first.chain_pem.trim());

        // Replaced by a rename: the old file's inode is not written into.
        let before = fs::metadata(&path).unwrap();
        let second = bundle();
        store.put_certificate("a.example", &second).await.unwrap();
        let after = fs::metadata(&path).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_ne!(before.ino(), after.ino());
        assert_eq!(mode(&path), 0o600);
        let read = store.certificate("a.example").await.unwrap().unwrap();
        assert_eq!(read.key_pem.trim(), second.key_pem.trim());
        // No temporary file left behind.
        let names: Vec<_> = fs::read_dir(store.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["a.example.pem"]);

        store.put_account("https://ca/dir", "{}").await.unwrap();
        assert_eq!(mode(&store.account_path("https://ca/dir")), 0o600);
        assert_eq!(
            store.account("https://ca/dir").await.unwrap().as_deref(),
            Some("{}")
        );
        assert_eq!(store.account("https://other/dir").await.unwrap(), None);
    }

    #[tokio::test]
    async fn one_lease_at_a_time_and_released() {
        let tmp = tempfile::tempdir().unwrap();
        let one = DiskStore::open(tmp.path()).unwrap();
        let two = DiskStore::open(tmp.path()).unwrap();
        let ttl = Duration::from_secs(60);
        let held = one.try_lease("a.example", "node-1", ttl).await.unwrap();
        assert!(held.is_some());
        assert!(
            two.try_lease("a.example", "node-2", ttl)
                .await
                .unwrap()
                .is_none()
        );
        // Another certificate has its own lease.
        assert!(
            two.try_lease("b.example", "node-2", ttl)
                .await
                .unwrap()
                .is_some()
        );
        held.unwrap().release().await.unwrap();
        assert!(
            two.try_lease("a.example", "node-2", ttl)
                .await
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn a_corrupt_file_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let store = DiskStore::open(tmp.path()).unwrap();
        fs::write(store.certificate_path("a.example"), "junk").unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let err = runtime
            .block_on(store.certificate("a.example"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a.example.pem") && err.contains("no PEM certificate"),
            "{err}"
        );
    }
}

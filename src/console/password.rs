//! The embedded store's console password: an argon2id hash in the
//! database's `meta` table (so a backup of the database carries it), never
//! the password itself, which is never logged either.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

use crate::store::StoreError;
use crate::store::sqlite::SqliteStore;

/// The `meta` row holding the hash.
pub const META_NAME: &str = "console_password";

/// Shorter passwords are refused by `qrtag console-password`.
pub const MIN_LEN: usize = 10;

#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("a console password has at least {MIN_LEN} characters")]
    TooShort,
    #[error("hashing the password failed: {0}")]
    Hash(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The PHC string of `password` under a fresh salt.
pub fn hash(password: &str) -> Result<String, PasswordError> {
    if password.chars().count() < MIN_LEN {
        return Err(PasswordError::TooShort);
    }
    let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>())
        .map_err(|e| PasswordError::Hash(e.to_string()))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| PasswordError::Hash(e.to_string()))
}

/// Whether `password` matches the stored PHC string; a malformed one
/// matches nothing. Slow on purpose (tens of milliseconds): call it off the
/// async workers.
pub fn verify(stored: &str, password: &str) -> bool {
    PasswordHash::new(stored).is_ok_and(|h| {
        Argon2::default()
            .verify_password(password.as_bytes(), &h)
            .is_ok()
    })
}

/// [`hash`] on the blocking pool: argon2 takes tens of milliseconds of CPU
/// that an async worker (the console's only one) must not spend.
async fn hash_off_workers(password: &str) -> Result<String, PasswordError> {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || hash(&password))
        .await
        .map_err(|e| PasswordError::Hash(e.to_string()))?
}

/// Stores the hash of `password` as the console password.
pub async fn set(store: &SqliteStore, password: &str) -> Result<(), PasswordError> {
    let phc = hash_off_workers(password).await?;
    store.set_meta(META_NAME, &phc).await?;
    Ok(())
}

/// Stores the hash of `password` only if no console password is set yet
/// (the first-run setup page must not replace one `qrtag console-password`
/// set meanwhile); whether it did.
pub async fn set_first(store: &SqliteStore, password: &str) -> Result<bool, PasswordError> {
    let phc = hash_off_workers(password).await?;
    Ok(store.insert_meta(META_NAME, &phc).await?)
}

/// Whether a console password is set.
pub async fn is_set(store: &SqliteStore) -> Result<bool, StoreError> {
    Ok(store.meta(META_NAME).await?.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_only() {
        let h = hash("correct horse battery").expect("hash");
        assert!(h.starts_with("$argon2id$"), "{h}");
        assert!(!h.contains("correct"));
        assert!(verify(&h, "correct horse battery"));
        assert!(!verify(&h, "correct horse battery "));
        assert!(!verify("not a hash", "correct horse battery"));
        assert!(matches!(hash("short"), Err(PasswordError::TooShort)));
    }
}

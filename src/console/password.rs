//! The embedded store's console passwords: argon2id hashes in the
//! database's `users` table (issue 35; so a backup of the database carries
//! them), never a password itself, which is never logged either.

use std::sync::{Mutex, PoisonError};

use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};

use super::check_gate::{Busy, PASSWORD_CHECKS};
use crate::store::StoreError;
use crate::store::sqlite::SqliteStore;

/// The `meta` row that held the single password before accounts (moved
/// onto the user `admin` when the database is opened for writing).
pub const META_NAME: &str = crate::store::sqlite::users::OLD_PASSWORD_META;

/// A hash no password is likely to match, checked for an unknown or
/// invited user so that a login takes as long as for a known one. Made
/// at the default cost on first use.
pub fn stand_in() -> &'static str {
    static STAND_IN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    STAND_IN.get_or_init(|| {
        let random: [u8; 24] = rand::random();
        hash(&format!("{random:?}")).unwrap_or_default()
    })
}

/// Shorter passwords are refused by `qrtag console-password`.
pub const MIN_LEN: usize = 10;

#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("a console password has at least {MIN_LEN} characters")]
    TooShort,
    #[error("hashing the password failed: {0}")]
    Hash(String),
    #[error(transparent)]
    Busy(#[from] Busy),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The largest memory cost a stored hash may ask for (KiB): 16 times
/// argon2's default. A larger one (never written by qrtag) matches nothing.
const MAX_M_COST: u32 = 16 * Params::DEFAULT_M_COST;

/// The process's one argon2 memory area (19 MiB at the default cost),
/// reused by every hash and check. Given a fresh allocation each time, the
/// allocator kept each blocking thread's 19 MiB after its check (glibc
/// raises its mmap threshold past a freed block and gives every thread an
/// arena), so a login flood grew the process by gigabytes (issue 30).
/// [`super::check_gate`] runs one check at a time; the lock only makes
/// that safe to rely on.
static MEMORY: Mutex<Vec<Block>> = Mutex::new(Vec::new());

/// Argon2 of `password` and `salt` into `out`, in [`MEMORY`].
fn hash_into(argon: &Argon2<'_>, password: &[u8], salt: &[u8], out: &mut [u8]) -> bool {
    let blocks = argon.params().block_count();
    let mut memory = MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    if memory.len() != blocks {
        *memory = vec![Block::new(); blocks];
    }
    argon
        .hash_password_into_with_memory(password, salt, out, &mut memory[..])
        .is_ok()
}

/// The PHC string of `password` under a fresh salt.
pub fn hash(password: &str) -> Result<String, PasswordError> {
    if password.chars().count() < MIN_LEN {
        return Err(PasswordError::TooShort);
    }
    let salt_bytes: [u8; 16] = rand::random();
    let salt =
        SaltString::encode_b64(&salt_bytes).map_err(|e| PasswordError::Hash(e.to_string()))?;
    let argon = Argon2::default();
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    if !hash_into(&argon, password.as_bytes(), &salt_bytes, &mut out) {
        return Err(PasswordError::Hash("argon2 refused its inputs".into()));
    }
    let output = Output::new(&out).map_err(|e| PasswordError::Hash(e.to_string()))?;
    let params =
        ParamsString::try_from(argon.params()).map_err(|e| PasswordError::Hash(e.to_string()))?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params,
        salt: Some(salt.as_salt()),
        hash: Some(output),
    };
    Ok(phc.to_string())
}

/// Whether `password` matches the stored PHC string; a malformed one
/// matches nothing. Slow on purpose (tens of milliseconds): call it off the
/// async workers.
pub fn verify(stored: &str, password: &str) -> bool {
    let Ok(phc) = PasswordHash::new(stored) else {
        return false;
    };
    let (Some(salt), Some(expected)) = (phc.salt, phc.hash) else {
        return false;
    };
    let (Ok(algorithm), Ok(params)) = (Algorithm::try_from(phc.algorithm), Params::try_from(&phc))
    else {
        return false;
    };
    let version = match phc.version.map(Version::try_from) {
        None => Version::default(),
        Some(Ok(v)) => v,
        Some(Err(_)) => return false,
    };
    if params.m_cost() > MAX_M_COST {
        return false;
    }
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let mut out = vec![0u8; expected.len()];
    let argon = Argon2::new(algorithm, version, params);
    // `Output`'s comparison is in constant time.
    hash_into(&argon, password.as_bytes(), salt, &mut out)
        && Output::new(&out).is_ok_and(|computed| computed == expected)
}

/// [`hash`] on the blocking pool: argon2 takes tens of milliseconds of CPU
/// that an async worker (the console's only one) must not spend. Its turn
/// in the process's [`PASSWORD_CHECKS`] is held until the hash is done,
/// even if the request that asked goes away meanwhile.
pub async fn hash_off_workers(password: &str) -> Result<String, PasswordError> {
    let password = password.to_owned();
    let turn = PASSWORD_CHECKS.enter().await?;
    tokio::task::spawn_blocking(move || {
        let hashed = hash(&password);
        drop(turn);
        hashed
    })
    .await
    .map_err(|e| PasswordError::Hash(e.to_string()))?
}

/// [`verify`] on the blocking pool, in its turn (as [`hash_off_workers`]).
pub async fn verify_off_workers(stored: String, password: &str) -> Result<bool, PasswordError> {
    let password = password.to_owned();
    let turn = PASSWORD_CHECKS.enter().await?;
    tokio::task::spawn_blocking(move || {
        let ok = verify(&stored, &password);
        drop(turn);
        ok
    })
    .await
    .map_err(|e| PasswordError::Hash(e.to_string()))
}

/// Stores the hash of `password` as the password of the user `admin`
/// (made an admin if there is none): `qrtag console-password`.
pub async fn set(store: &SqliteStore, password: &str) -> Result<(), PasswordError> {
    let phc = hash_off_workers(password).await?;
    store.set_first_admin_password(&phc).await?;
    Ok(())
}

/// Makes the user `admin` with `password` only if there is no user yet
/// (the first-run setup page must not replace one `qrtag console-password`
/// set meanwhile); whether it did.
pub async fn set_first(store: &SqliteStore, password: &str) -> Result<bool, PasswordError> {
    let phc = hash_off_workers(password).await?;
    Ok(store.insert_first_admin(&phc).await?)
}

/// Whether anyone can log in or has been invited: a user exists.
pub async fn is_set(store: &SqliteStore) -> Result<bool, StoreError> {
    store.has_users().await
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

    #[test]
    fn hashes_are_the_argon2_crate_s_own_both_ways() {
        use argon2::password_hash::{PasswordHasher, PasswordVerifier};
        let ours = hash("correct horse battery").expect("hash");
        let parsed = PasswordHash::new(&ours).expect("PHC");
        assert!(
            Argon2::default()
                .verify_password(b"correct horse battery", &parsed)
                .is_ok()
        );
        let salt = SaltString::encode_b64(b"sixteen salt byt").expect("salt");
        for params in [
            Params::default(),
            Params::new(8, 1, 1, None).expect("params"),
        ] {
            let theirs = Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
                .hash_password(b"correct horse battery", &salt)
                .expect("hash")
                .to_string();
            assert!(verify(&theirs, "correct horse battery"), "{theirs}");
            assert!(!verify(&theirs, "correct horse battery!"), "{theirs}");
        }
        let v10 = Argon2::new(Algorithm::Argon2i, Version::V0x10, Params::default())
            .hash_password(b"correct horse battery", &salt)
            .expect("hash")
            .to_string();
        assert!(verify(&v10, "correct horse battery"), "{v10}");
    }

    #[test]
    fn a_stored_hash_asking_for_too_much_memory_matches_nothing() {
        let huge = format!(
            "$argon2id$v=19$m={},t=2,p=1$c2l4dGVlbiBzYWx0IGJ5dA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            MAX_M_COST + 1
        );
        assert!(PasswordHash::new(&huge).is_ok(), "{huge}");
        assert!(!verify(&huge, "correct horse battery"));
    }
}

//! The service's own identity: an X25519 key agreement key and an Ed25519
//! signing key in a key file (mode 0600, created on first use), and the
//! `did:peer:2` they make together with the service endpoint.
//!
//! Every node of a cluster reads a copy of the same file, so every node is
//! the same DID. Nothing here logs or displays a private key.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use affinidi_crypto::jose::key_agreement::{Curve, PrivateKeyAgreement, PublicKeyAgreement};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;

use super::did::Did;
use super::resolve;

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("DIDComm key file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("DIDComm key file {path} is not a qrtag key file: {why}")]
    Malformed { path: PathBuf, why: &'static str },
}

/// The private keys as stored. `Debug` shows no key.
#[derive(Clone)]
pub struct Keys {
    x25519: [u8; 32],
    ed25519: [u8; 32],
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Keys(***)")
    }
}

impl Keys {
    pub fn generate() -> Self {
        let x25519 = match PrivateKeyAgreement::generate(Curve::X25519) {
            PrivateKeyAgreement::X25519(k) => k,
            // Unreachable: asked for X25519. Fall back to our own random
            // bytes, which X25519 clamps into a valid scalar anyway.
            _ => random32(),
        };
        Self {
            x25519,
            ed25519: random32(),
        }
    }

    pub fn agreement_private(&self) -> PrivateKeyAgreement {
        PrivateKeyAgreement::X25519(self.x25519)
    }

    pub fn agreement_public(&self) -> [u8; 32] {
        match self.agreement_private().public_key() {
            PublicKeyAgreement::X25519(p) => p,
            _ => [0; 32],
        }
    }

    pub fn signing_public(&self) -> [u8; 32] {
        affinidi_crypto::jose::signing::public_key_from_private(&self.ed25519)
    }

    fn to_file(&self) -> String {
        serde_json::json!({
            "qrtag_didcomm_keys": 1,
            "x25519": URL_SAFE_NO_PAD.encode(self.x25519),
            "ed25519": URL_SAFE_NO_PAD.encode(self.ed25519),
        })
        .to_string()
    }

    fn from_file(text: &str) -> Result<Self, &'static str> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|_| "not JSON")?;
        if v.get("qrtag_didcomm_keys").and_then(|n| n.as_u64()) != Some(1) {
            return Err("no \"qrtag_didcomm_keys\": 1");
        }
        let key = |name: &str| -> Result<[u8; 32], &'static str> {
            let s = v
                .get(name)
                .and_then(|s| s.as_str())
                .ok_or("a key is missing")?;
            let bytes = URL_SAFE_NO_PAD
                .decode(s)
                .map_err(|_| "a key is not base64url")?;
            bytes.try_into().map_err(|_| "a key is not 32 bytes")
        };
        Ok(Self {
            x25519: key("x25519")?,
            ed25519: key("ed25519")?,
        })
    }
}

fn random32() -> [u8; 32] {
    let mut b = [0u8; 32];
    rand::rng().fill_bytes(&mut b);
    b
}

/// Reads the key file, or creates it (mode 0600, never overwriting a file
/// another process created meanwhile) when there is none.
pub fn load_or_create(path: &Path) -> Result<Keys, IdentityError> {
    let io = |source| IdentityError::Io {
        path: path.to_owned(),
        source,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            return Keys::from_file(&text).map_err(|why| IdentityError::Malformed {
                path: path.to_owned(),
                why,
            });
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    let keys = Keys::generate();
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    match opts.open(path) {
        Ok(mut f) => {
            f.write_all(keys.to_file().as_bytes()).map_err(io)?;
            f.sync_all().map_err(io)?;
            Ok(keys)
        }
        // Someone else created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => load_or_create(path),
        Err(e) => Err(io(e)),
    }
}

/// The default key file: beside the database.
pub fn default_key_file(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".didcomm-keys.json");
    PathBuf::from(name)
}

/// The service as a DIDComm party: its DID and keys.
#[derive(Clone)]
pub struct ServiceIdentity {
    did: Did,
    keys: Keys,
}

impl fmt::Debug for ServiceIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ServiceIdentity({})", self.did)
    }
}

impl ServiceIdentity {
    /// The identity for `keys` reachable at `endpoint` (`API_PUBLIC_URL/didcomm`).
    pub fn new(keys: Keys, endpoint: Option<&str>) -> Self {
        let did = resolve::peer2(&keys.agreement_public(), &keys.signing_public(), endpoint);
        Self {
            did: Did::generated(did),
            keys,
        }
    }

    pub fn did(&self) -> &Did {
        &self.did
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// Our agreement key in the current spelling.
    pub fn agreement_kid(&self) -> String {
        format!("{}#key-1", self.did)
    }

    /// Whether `kid` names our agreement key, in any spelling.
    pub fn is_our_agreement_kid(&self, kid: &str) -> bool {
        let Some((did, fragment)) = kid.split_once('#') else {
            return false;
        };
        if did != self.did.as_str() {
            return false;
        }
        let key = resolve::AgreementKey {
            public: self.keys.agreement_public(),
            multibase: resolve::encode_multikey(resolve::X25519_PUB, &self.keys.agreement_public()),
            key_number: 1,
            segment_number: 1,
        };
        key.answers_to(fragment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_file_is_created_once_with_mode_0600_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("keys.json");
        let a = load_or_create(&path).expect("created");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let b = load_or_create(&path).expect("read back");
        let (ia, ib) = (
            ServiceIdentity::new(a, Some("https://api.example/didcomm")),
            ServiceIdentity::new(b, Some("https://api.example/didcomm")),
        );
        assert_eq!(ia.did(), ib.did(), "same file, same DID");
        assert!(ia.did().as_str().starts_with("did:peer:2.Ez6LS"));
        assert!(
            !format!("{ia:?} {:?}", ia.keys()).contains(&URL_SAFE_NO_PAD.encode(ia.keys().x25519))
        );
        let r = resolve::resolve(ia.did()).expect("our DID resolves");
        assert_eq!(r.endpoint.as_deref(), Some("https://api.example/didcomm"));
        assert_eq!(r.agreement[0].public, ia.keys().agreement_public());
        assert!(ia.is_our_agreement_kid(&ia.agreement_kid()));
        let old = format!("{}#{}", ia.did(), &r.agreement[0].multibase[1..9]);
        assert!(ia.is_our_agreement_kid(&old));
        assert!(!ia.is_our_agreement_kid(&format!("{}#key-2", ia.did())));
    }

    #[test]
    fn a_foreign_file_is_refused_not_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("keys.json");
        std::fs::write(&path, "{\"x\":1}").expect("write");
        assert!(matches!(
            load_or_create(&path),
            Err(IdentityError::Malformed { .. })
        ));
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "{\"x\":1}");
    }
}

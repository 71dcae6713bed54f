//! Resolving the DIDs a sender may use, offline: `did:peer:2`, `did:peer:0`
//! and `did:key`. Nothing here fetches anything (a `did:web` named in a
//! message would make the server request whatever URL a stranger chooses).
//!
//! Only what the service needs is kept from a DID document: the X25519 key
//! agreement keys (each with every key id spelling it is known by) and the
//! DIDComm v2 service endpoint.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::did::{Did, KeyId};

/// Multicodec prefixes (unsigned varints) of the public keys we handle.
pub const X25519_PUB: [u8; 2] = [0xec, 0x01];
pub const ED25519_PUB: [u8; 2] = [0xed, 0x01];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("DID method not supported here (only did:peer:2, did:peer:0 and did:key): {0}")]
    UnsupportedMethod(String),
    #[error("malformed DID: {0}")]
    Malformed(String),
    #[error("the DID has no X25519 key agreement key with id #{0}")]
    NoSuchKey(String),
}

/// An X25519 key agreement key of a resolved DID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgreementKey {
    pub public: [u8; 32],
    /// The multibase form (`z6LS…`), from which the older id spelling comes.
    pub multibase: String,
    /// 1-based position among the DID's keys: the `#key-N` spelling.
    pub key_number: usize,
    /// 1-based position among all segments (Affinidi's numbering).
    pub segment_number: usize,
}

impl AgreementKey {
    /// Whether `fragment` names this key in any spelling seen in the wild:
    /// `key-N` (current spec; N over keys, or over all segments), or the
    /// multibase key's first 8 characters with or without the `z`, or the
    /// whole multibase key (did:key, peerdid's numalgo 0).
    pub fn answers_to(&self, fragment: &str) -> bool {
        if let Some(n) = fragment.strip_prefix("key-") {
            return n
                .parse::<usize>()
                .is_ok_and(|n| n == self.key_number || n == self.segment_number);
        }
        let m = self.multibase.as_str();
        let without_z = m.strip_prefix('z').unwrap_or(m);
        fragment == m
            || fragment == without_z
            || (fragment.len() == 8 && (m.starts_with(fragment) || without_z.starts_with(fragment)))
    }
}

/// What the service uses from a sender's DID document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub did: Did,
    pub agreement: Vec<AgreementKey>,
    /// The first DIDComm messaging endpoint that is an http(s) URL.
    pub endpoint: Option<String>,
}

impl Resolved {
    /// The key `kid` names, if it is one of this DID's agreement keys.
    pub fn agreement_key(&self, kid: &KeyId) -> Result<&AgreementKey, ResolveError> {
        if kid.did != self.did {
            return Err(ResolveError::NoSuchKey(kid.fragment.clone()));
        }
        self.agreement
            .iter()
            .find(|k| k.answers_to(&kid.fragment))
            .ok_or_else(|| ResolveError::NoSuchKey(kid.fragment.clone()))
    }
}

pub fn resolve(did: &Did) -> Result<Resolved, ResolveError> {
    let s = did.as_str();
    if let Some(rest) = s.strip_prefix("did:peer:2") {
        return resolve_peer2(did, rest);
    }
    let single = s
        .strip_prefix("did:peer:0")
        .or_else(|| s.strip_prefix("did:key:"));
    match single {
        Some(mb) => {
            let (codec, public) = decode_multikey(mb)?;
            let agreement = if codec == X25519_PUB {
                vec![AgreementKey {
                    public,
                    multibase: mb.to_owned(),
                    key_number: 1,
                    segment_number: 1,
                }]
            } else {
                // An Ed25519 did:key agrees with the X25519 key it converts
                // to (the did:key method's rule), named by that key's
                // multibase form.
                let x = ed25519_dalek::VerifyingKey::from_bytes(&public)
                    .map_err(|_| ResolveError::Malformed("not an Ed25519 point".into()))?
                    .to_montgomery()
                    .to_bytes();
                vec![AgreementKey {
                    public: x,
                    multibase: encode_multikey(X25519_PUB, &x),
                    key_number: 1,
                    segment_number: 1,
                }]
            };
            Ok(Resolved {
                did: did.clone(),
                agreement,
                endpoint: None,
            })
        }
        None => Err(ResolveError::UnsupportedMethod(did.method().to_owned())),
    }
}

fn resolve_peer2(did: &Did, rest: &str) -> Result<Resolved, ResolveError> {
    let segments = rest
        .strip_prefix('.')
        .ok_or_else(|| ResolveError::Malformed("did:peer:2 without segments".into()))?;
    let mut agreement = Vec::new();
    let mut endpoint = None;
    let mut keys = 0;
    for (i, seg) in segments.split('.').enumerate() {
        let mut chars = seg.chars();
        let purpose = chars
            .next()
            .ok_or_else(|| ResolveError::Malformed("empty segment".into()))?;
        let value = chars.as_str();
        match purpose {
            'E' | 'V' | 'A' | 'I' | 'D' => {
                keys += 1;
                let (codec, public) = decode_multikey(value)?;
                if purpose == 'E' && codec == X25519_PUB {
                    agreement.push(AgreementKey {
                        public,
                        multibase: value.to_owned(),
                        key_number: keys,
                        segment_number: i + 1,
                    });
                }
            }
            'S' => {
                if endpoint.is_none() {
                    endpoint = service_endpoint(value)?;
                }
            }
            other => {
                return Err(ResolveError::Malformed(format!(
                    "unknown did:peer:2 purpose {other:?}"
                )));
            }
        }
    }
    Ok(Resolved {
        did: did.clone(),
        agreement,
        endpoint,
    })
}

/// The http(s) URI of an abbreviated (or full) DIDComm service, in either
/// the v2 form `{"t":"dm","s":{"uri":…}}` or the older `{"s":"https://…"}`.
fn service_endpoint(encoded: &str) -> Result<Option<String>, ResolveError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(encoded.trim_end_matches('='))
        .map_err(|_| ResolveError::Malformed("service segment is not base64url".into()))?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|_| ResolveError::Malformed("service segment is not JSON".into()))?;
    let services = match value {
        serde_json::Value::Array(list) => list,
        one => vec![one],
    };
    for svc in services {
        let t = svc
            .get("t")
            .or_else(|| svc.get("type"))
            .and_then(|t| t.as_str());
        if !matches!(t, Some("dm" | "DIDCommMessaging")) {
            continue;
        }
        let s = svc.get("s").or_else(|| svc.get("serviceEndpoint"));
        let uri = match s {
            Some(serde_json::Value::String(u)) => Some(u.as_str()),
            Some(obj) => obj.get("uri").and_then(|u| u.as_str()),
            None => None,
        };
        if let Some(uri) = uri
            && url::Url::parse(uri).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
        {
            return Ok(Some(uri.to_owned()));
        }
    }
    Ok(None)
}

/// `z` + base58btc(multicodec prefix ‖ 32-byte key) → (prefix, key).
pub fn decode_multikey(mb: &str) -> Result<([u8; 2], [u8; 32]), ResolveError> {
    let b58 = mb
        .strip_prefix('z')
        .ok_or_else(|| ResolveError::Malformed("a key must be multibase base58btc (z…)".into()))?;
    let bytes = bs58::decode(b58)
        .into_vec()
        .map_err(|_| ResolveError::Malformed("a key is not base58btc".into()))?;
    if bytes.len() != 34 {
        return Err(ResolveError::Malformed(
            "only 32-byte X25519 and Ed25519 keys are supported".into(),
        ));
    }
    let codec = [bytes[0], bytes[1]];
    if codec != X25519_PUB && codec != ED25519_PUB {
        return Err(ResolveError::Malformed(
            "only X25519 and Ed25519 keys are supported".into(),
        ));
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(&bytes[2..]);
    Ok((codec, key))
}

pub fn encode_multikey(codec: [u8; 2], key: &[u8; 32]) -> String {
    let mut bytes = Vec::with_capacity(34);
    bytes.extend_from_slice(&codec);
    bytes.extend_from_slice(key);
    format!("z{}", bs58::encode(bytes).into_string())
}

/// A `did:peer:2` of one X25519 agreement key, one Ed25519 authentication
/// key and, optionally, a DIDComm v2 endpoint, in that order: `#key-1` is the
/// agreement key, `#key-2` the signing key, in every numbering.
pub fn peer2(x25519: &[u8; 32], ed25519: &[u8; 32], endpoint: Option<&str>) -> String {
    let mut did = format!(
        "did:peer:2.E{}.V{}",
        encode_multikey(X25519_PUB, x25519),
        encode_multikey(ED25519_PUB, ed25519)
    );
    if let Some(uri) = endpoint {
        let svc = serde_json::json!({"t": "dm", "s": {"uri": uri, "a": ["didcomm/v2"]}});
        did.push_str(".S");
        did.push_str(&URL_SAFE_NO_PAD.encode(svc.to_string()));
    }
    did
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer2_round_trip_and_both_key_id_spellings() {
        let did = peer2(&[7; 32], &[9; 32], Some("https://api.example/didcomm"));
        let did = Did::parse(&did).expect("valid DID");
        let r = resolve(&did).expect("resolves");
        assert_eq!(r.endpoint.as_deref(), Some("https://api.example/didcomm"));
        assert_eq!(r.agreement.len(), 1);
        let k = &r.agreement[0];
        assert_eq!(k.public, [7; 32]);
        assert!(k.multibase.starts_with("z6LS"));
        let kid = |f: &str| KeyId::parse(&format!("{did}#{f}")).expect("kid");
        assert!(r.agreement_key(&kid("key-1")).is_ok());
        assert!(
            r.agreement_key(&kid(&k.multibase[1..9])).is_ok(),
            "peerdid 0.5 spelling"
        );
        assert!(r.agreement_key(&kid(&k.multibase[..8])).is_ok());
        assert!(
            r.agreement_key(&kid("key-2")).is_err(),
            "key-2 is the signing key"
        );
        assert!(r.agreement_key(&kid("6LSxxxxx")).is_err());
        let other = KeyId::parse("did:peer:2.Ez6LSother#key-1").expect("kid");
        assert!(r.agreement_key(&other).is_err());
    }

    #[test]
    fn older_string_endpoints_and_did_key() {
        let svc = URL_SAFE_NO_PAD.encode(r#"{"t":"dm","s":"http://127.0.0.1:9/x"}"#);
        let did = format!(
            "did:peer:2.Vz6MkqRYqQiSgvZQdnBytw86Qbs2ZWUkGv22od935YF4s8M7V.E{}.S{svc}",
            encode_multikey(X25519_PUB, &[1; 32])
        );
        let r = resolve(&Did::parse(&did).expect("did")).expect("resolves");
        assert_eq!(r.endpoint.as_deref(), Some("http://127.0.0.1:9/x"));
        assert_eq!(r.agreement[0].key_number, 2);
        let key = format!("did:key:{}", encode_multikey(X25519_PUB, &[3; 32]));
        let r = resolve(&Did::parse(&key).expect("did")).expect("did:key");
        assert_eq!(r.agreement[0].public, [3; 32]);
        let kid = KeyId::parse(&format!("{key}#{}", r.agreement[0].multibase)).expect("kid");
        assert!(r.agreement_key(&kid).is_ok());
    }

    #[test]
    fn an_ed25519_did_key_agrees_with_its_x25519_conversion() {
        let signing = ed25519_dalek::SigningKey::from_bytes(&[5; 32]);
        let ed = signing.verifying_key().to_bytes();
        let did = format!("did:key:{}", encode_multikey(ED25519_PUB, &ed));
        let r = resolve(&Did::parse(&did).expect("did")).expect("did:key");
        // The sender's X25519 private key is its clamped Ed25519 scalar.
        let x_private = signing.to_scalar_bytes();
        let x_public =
            match affinidi_crypto::jose::key_agreement::PrivateKeyAgreement::X25519(x_private)
                .public_key()
            {
                affinidi_crypto::jose::key_agreement::PublicKeyAgreement::X25519(p) => p,
                _ => [0; 32],
            };
        assert_eq!(r.agreement[0].public, x_public);
        assert!(r.agreement[0].multibase.starts_with("z6LS"));
        let kid = KeyId::parse(&format!("{did}#{}", r.agreement[0].multibase)).expect("kid");
        assert!(r.agreement_key(&kid).is_ok());
        let peer0 = format!("did:peer:0{}", encode_multikey(ED25519_PUB, &ed));
        let r0 = resolve(&Did::parse(&peer0).expect("did")).expect("did:peer:0");
        assert_eq!(r0.agreement[0].public, x_public);
    }

    #[test]
    fn refuses_what_it_must_not_fetch_or_cannot_read() {
        for bad in [
            "did:web:evil.example",
            "did:peer:1zQmZ",
            "did:peer:2",
            "did:peer:2.Xz6LS",
            "did:peer:2.Enot-base58",
            "did:key:zzzz",
        ] {
            let did = Did::parse(bad).expect("syntactically a DID");
            assert!(resolve(&did).is_err(), "{bad}");
        }
    }
}

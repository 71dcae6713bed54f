//! DIDComm v2 encryption through `affinidi-messaging-didcomm`: opening an
//! authcrypt JWE sent to the service (the sender's key resolved from the
//! JWE's `skid`, offline), and sealing the reply back to that sender.
//! No cryptography is written here.

use affinidi_crypto::jose::key_agreement::{Curve, PublicKeyAgreement};
use affinidi_messaging_didcomm::jwe::decrypt::{SenderKey, decrypt_bound};
use affinidi_messaging_didcomm::jwe::encrypt::authcrypt;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use super::did::{Did, KeyId};
use super::identity::ServiceIdentity;
use super::resolve::{self, Resolved};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    #[error("not a DIDComm encrypted message (JWE JSON): {0}")]
    NotAJwe(&'static str),
    #[error(
        "anonymous encryption (ECDH-ES) is refused: send authcrypt (ECDH-1PU+A256KW) so the sender is known"
    )]
    Anoncrypt,
    #[error("unsupported key management algorithm {0:?}: send ECDH-1PU+A256KW")]
    UnsupportedAlg(String),
    #[error("the sender key id (skid) is not a did:peer:2, did:peer:0 or did:key key: {0}")]
    Sender(String),
    #[error("the message is not encrypted to this service's DID")]
    NotForUs,
    #[error("the message does not decrypt: {0}")]
    Decrypt(String),
    #[error(
        "the decrypted message is not a JSON object (signed messages inside are not supported)"
    )]
    NotPlaintext,
    #[error("the message's \"from\" is not the DID that encrypted it")]
    FromMismatch,
}

/// A decrypted, sender-authenticated message.
#[derive(Debug)]
pub struct Opened {
    pub message: Value,
    /// The authenticated sender.
    pub sender: Resolved,
    /// The sender's key id as the JWE named it (the reply goes to it).
    pub sender_kid: String,
    /// Our key id as the sender spelled it (the reply comes from it).
    pub our_kid: String,
}

fn protected_alg(jwe: &Value) -> Result<String, EnvelopeError> {
    let protected = jwe
        .get("protected")
        .and_then(Value::as_str)
        .ok_or(EnvelopeError::NotAJwe("no \"protected\" header"))?;
    let bytes = URL_SAFE_NO_PAD
        .decode(protected.trim_end_matches('='))
        .map_err(|_| EnvelopeError::NotAJwe("\"protected\" is not base64url"))?;
    let header: Value = serde_json::from_slice(&bytes)
        .map_err(|_| EnvelopeError::NotAJwe("\"protected\" is not JSON"))?;
    header
        .get("alg")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or(EnvelopeError::NotAJwe("no \"alg\""))
}

/// Opens an authcrypt message to `me`. Anoncrypt is refused: the protocol
/// needs to know who asks.
pub fn open(jwe_text: &str, me: &ServiceIdentity) -> Result<Opened, EnvelopeError> {
    let jwe: Value =
        serde_json::from_str(jwe_text).map_err(|_| EnvelopeError::NotAJwe("not JSON"))?;
    let alg = protected_alg(&jwe)?;
    if alg.starts_with("ECDH-ES") {
        return Err(EnvelopeError::Anoncrypt);
    }
    if alg != "ECDH-1PU+A256KW" {
        return Err(EnvelopeError::UnsupportedAlg(
            alg.chars().take(40).collect(),
        ));
    }
    let skid = affinidi_messaging_didcomm::jwe::decrypt::authcrypt_sender_kid(jwe_text)
        .map_err(|e| EnvelopeError::Decrypt(e.to_string()))?
        .ok_or(EnvelopeError::Anoncrypt)?;
    let kid = KeyId::parse(&skid).map_err(|e| EnvelopeError::Sender(e.to_string()))?;
    let sender = resolve::resolve(&kid.did).map_err(|e| EnvelopeError::Sender(e.to_string()))?;
    let key = sender
        .agreement_key(&kid)
        .map_err(|e| EnvelopeError::Sender(e.to_string()))?;
    let public = PublicKeyAgreement::from_raw_bytes(Curve::X25519, &key.public)
        .map_err(|e| EnvelopeError::Sender(e.to_string()))?;
    let our_kid = jwe
        .get("recipients")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("header")?.get("kid")?.as_str())
        .find(|k| me.is_our_agreement_kid(k))
        .ok_or(EnvelopeError::NotForUs)?
        .to_owned();
    let decrypted = decrypt_bound(
        jwe_text,
        &our_kid,
        &me.keys().agreement_private(),
        Some(SenderKey::new(&skid, &public)),
    )
    .map_err(|e| EnvelopeError::Decrypt(e.to_string()))?;
    let message: Value =
        serde_json::from_slice(&decrypted.plaintext).map_err(|_| EnvelopeError::NotPlaintext)?;
    if !message.is_object() || message.get("payload").is_some() {
        return Err(EnvelopeError::NotPlaintext);
    }
    let from = message.get("from").and_then(Value::as_str);
    if from != Some(kid.did.as_str()) {
        return Err(EnvelopeError::FromMismatch);
    }
    Ok(Opened {
        message,
        sender,
        sender_kid: skid,
        our_kid,
    })
}

/// Seals `reply` (a plaintext v2 message) from `me` to the sender of `opened`,
/// adding `from`, `to` and `created_time`.
pub fn seal_reply(
    reply: &Value,
    me: &ServiceIdentity,
    opened: &Opened,
    now: i64,
) -> Result<String, EnvelopeError> {
    let mut msg = reply.clone();
    msg["from"] = Value::String(me.did().to_string());
    msg["to"] = serde_json::json!([opened.sender.did.as_str()]);
    msg["created_time"] = serde_json::json!(now);
    seal(&msg, me, &opened.our_kid, &opened.sender_kid)
}

/// Authcrypt `msg` from our key `our_kid` to the X25519 key `their_kid`.
pub fn seal(
    msg: &Value,
    me: &ServiceIdentity,
    our_kid: &str,
    their_kid: &str,
) -> Result<String, EnvelopeError> {
    let kid = KeyId::parse(their_kid).map_err(|e| EnvelopeError::Sender(e.to_string()))?;
    let them = resolve::resolve(&kid.did).map_err(|e| EnvelopeError::Sender(e.to_string()))?;
    let key = them
        .agreement_key(&kid)
        .map_err(|e| EnvelopeError::Sender(e.to_string()))?;
    let public = PublicKeyAgreement::from_raw_bytes(Curve::X25519, &key.public)
        .map_err(|e| EnvelopeError::Sender(e.to_string()))?;
    let bytes = serde_json::to_vec(msg).map_err(|e| EnvelopeError::Decrypt(e.to_string()))?;
    authcrypt(
        &bytes,
        our_kid,
        &me.keys().agreement_private(),
        &[(their_kid, &public)],
    )
    .map_err(|e| EnvelopeError::Decrypt(e.to_string()))
}

/// The authenticated sender's DID.
pub fn sender_did(opened: &Opened) -> &Did {
    &opened.sender.did
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::didcomm::identity::Keys;
    use serde_json::json;

    fn party(endpoint: &str) -> ServiceIdentity {
        ServiceIdentity::new(Keys::generate(), Some(endpoint))
    }

    fn request_from(sender: &ServiceIdentity) -> Value {
        json!({
            "type": "https://didcomm.org/shorten-url/1.0/request-shortened-url",
            "id": "r1",
            "from": sender.did().as_str(),
            "body": {"url": "https://e.example/", "goal_code": "shorten"}
        })
    }

    #[test]
    fn round_trip_in_both_key_id_spellings() {
        let me = party("https://api.example/didcomm");
        let agent = party("http://127.0.0.1:9/inbox");
        let r = resolve::resolve(me.did()).expect("resolves");
        let old_spelling = format!("{}#{}", me.did(), &r.agreement[0].multibase[1..9]);
        for our_kid in [me.agreement_kid(), old_spelling] {
            let jwe = seal(
                &request_from(&agent),
                &agent,
                &agent.agreement_kid(),
                &our_kid,
            )
            .expect("sealed");
            let opened = open(&jwe, &me).expect("opens");
            assert_eq!(opened.sender.did, *agent.did());
            assert_eq!(opened.our_kid, our_kid);
            assert_eq!(opened.message["id"], "r1");
            assert_eq!(
                opened.sender.endpoint.as_deref(),
                Some("http://127.0.0.1:9/inbox")
            );
            let reply = seal_reply(
                &json!({"type": "t", "id": "x", "body": {}}),
                &me,
                &opened,
                5,
            )
            .expect("reply sealed");
            let back = open(&reply, &agent).expect("the agent opens the reply");
            assert_eq!(back.message["to"], json!([agent.did().as_str()]));
            assert_eq!(back.sender.did, *me.did());
        }
    }

    #[test]
    fn refusals() {
        let me = party("https://api.example/didcomm");
        let agent = party("http://127.0.0.1:9/inbox");
        let other = party("https://other.example/didcomm");

        let mut forged = request_from(&agent);
        forged["from"] = json!(other.did().as_str());
        let jwe =
            seal(&forged, &agent, &agent.agreement_kid(), &me.agreement_kid()).expect("sealed");
        assert_eq!(open(&jwe, &me).err(), Some(EnvelopeError::FromMismatch));

        let jwe = seal(
            &request_from(&agent),
            &agent,
            &agent.agreement_kid(),
            &other.agreement_kid(),
        )
        .expect("sealed");
        assert_eq!(open(&jwe, &me).err(), Some(EnvelopeError::NotForUs));

        let pk = PublicKeyAgreement::from_raw_bytes(Curve::X25519, &me.keys().agreement_public())
            .expect("key");
        let anon = affinidi_messaging_didcomm::jwe::encrypt::anoncrypt(
            b"{}",
            &[(me.agreement_kid().as_str(), &pk)],
        )
        .expect("anoncrypt");
        assert_eq!(open(&anon, &me).err(), Some(EnvelopeError::Anoncrypt));

        for garbage in [
            "",
            "[]",
            "{}",
            "{\"protected\":\"!!\"}",
            "{\"protected\":\"e30\"}",
        ] {
            assert!(
                matches!(open(garbage, &me), Err(EnvelopeError::NotAJwe(_))),
                "{garbage}"
            );
        }
        // A tampered ciphertext does not decrypt.
        let jwe = seal(
            &request_from(&agent),
            &agent,
            &agent.agreement_kid(),
            &me.agreement_kid(),
        )
        .expect("sealed");
        let mut v: Value = serde_json::from_str(&jwe).expect("json");
        let ct = v["ciphertext"].as_str().expect("ct").to_owned();
        let first = if ct.starts_with('A') { "B" } else { "A" };
        let flipped = format!("{first}{}", ct.get(1..).unwrap_or_default());
        v["ciphertext"] = json!(flipped);
        assert!(matches!(
            open(&v.to_string(), &me),
            Err(EnvelopeError::Decrypt(_))
        ));
    }
}

//! The server secret that makes tracking cookies unforgeable.
//!
//! A tracking cookie carries the ID and an HMAC-SHA256 of it under this secret,
//! truncated to 128 bits and written in base64url (22 characters):
//! `0Vh3kY2s4fLq9ZxA01b.` + MAC. Without the MAC any well-formed ID would be
//! echoed and logged, so "unique scanners" would be whatever clients claim.
//!
//! The secret file holds one secret per line, 64 hex digits (32 bytes) each:
//! the first line signs and verifies, later lines (older secrets, during a
//! rotation) only verify. Every node of one service reads the same file, so a
//! cookie set by one is accepted by all. [`TrackingKeys`] is pure; only
//! [`load_or_create`] touches the disk.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::digest::generic_array::GenericArray;

use crate::tracking::id::TrackingId;

/// Bytes of a secret.
pub const SECRET_LEN: usize = 32;
/// Bytes of the MAC kept: 128 bits, beyond guessing at any request rate.
const MAC_LEN: usize = 16;
/// Characters of the MAC in base64url without padding.
pub const MAC_CHARS: usize = 22;
/// Between the ID and the MAC: a cookie-octet that neither alphabet uses.
pub const SEPARATOR: u8 = b'.';
/// Length of every cookie value: ID, separator, MAC.
pub const VALUE_LEN: usize = TrackingId::LEN + 1 + MAC_CHARS;

/// The secrets of a secret file, keyed once: the first signs, all verify.
/// Never printed: `Debug` shows only how many there are.
#[derive(Clone)]
pub struct TrackingKeys {
    /// Non-empty; the first is the current secret.
    keys: Vec<KeyedMac>,
}

/// HMAC-SHA256 under one secret, for a message that fits in one block with
/// its padding (at most 55 bytes; an ID is 19). The key's inner and outer
/// states are compressed once, at load, so a MAC costs two SHA-256 blocks;
/// and the message's last block is laid out by hand instead of through the
/// `hmac` crate's buffers, which cost about 500 instructions a request
/// besides the blocks (issue 24). The tests pin it to the `hmac` crate.
#[derive(Clone)]
struct KeyedMac {
    inner: [u32; 8],
    outer: [u32; 8],
}

/// SHA-256's initial state (FIPS 180-4, 5.3.3).
const SHA256_IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];
const BLOCK: usize = 64;

impl KeyedMac {
    /// A key of at most one block is used as it is, padded with zeros.
    fn new(secret: &[u8; SECRET_LEN]) -> Self {
        const _: () = assert!(SECRET_LEN <= BLOCK);
        let keyed = |pad: u8| {
            let mut block = [pad; BLOCK];
            for (b, k) in block.iter_mut().zip(secret) {
                *b ^= k;
            }
            let mut state = SHA256_IV;
            sha2::compress256(&mut state, &[GenericArray::from(block)]);
            state
        };
        Self {
            inner: keyed(0x36),
            outer: keyed(0x5c),
        }
    }

    /// The full 32-byte MAC of `message` (at most 55 bytes).
    fn tag(&self, message: &[u8]) -> [u8; 32] {
        let mut state = self.inner;
        sha2::compress256(&mut state, &[last_block(message)]);
        let digest = state_bytes(&state);
        let mut state = self.outer;
        sha2::compress256(&mut state, &[last_block(&digest)]);
        state_bytes(&state)
    }
}

/// The one block that ends a message of `message.len()` (at most 55) bytes
/// after one block of key: the bytes, 0x80, zeros, the bit length.
fn last_block(message: &[u8]) -> GenericArray<u8, sha2::digest::consts::U64> {
    let mut block = [0u8; BLOCK];
    block[..message.len()].copy_from_slice(message);
    block[message.len()] = 0x80;
    let bits = (BLOCK + message.len()) as u64 * 8;
    block[BLOCK - 8..].copy_from_slice(&bits.to_be_bytes());
    GenericArray::from(block)
}

fn state_bytes(state: &[u32; 8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(state) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Each byte's value in [`BASE64URL`], or 64 for a byte not in it.
const BASE64URL_VALUES: [u8; 256] = {
    let mut values = [64u8; 256];
    let mut i = 0;
    while i < 64 {
        values[BASE64URL[i] as usize] = i as u8;
        i += 1;
    }
    values
};

/// A MAC in base64url without padding (what the `base64` crate's
/// `URL_SAFE_NO_PAD` writes, pinned by the tests), in a fixed number of
/// steps: the engine's general path cost about 230 instructions a request.
fn encode_mac(mac: &[u8; MAC_LEN]) -> [u8; MAC_CHARS] {
    let mut out = [0u8; MAC_CHARS];
    // Five groups of three bytes are 20 characters; the last byte is two.
    for (group, chars) in mac.chunks_exact(3).zip(out.chunks_exact_mut(4)) {
        let n = u32::from(group[0]) << 16 | u32::from(group[1]) << 8 | u32::from(group[2]);
        for (i, c) in chars.iter_mut().enumerate() {
            *c = BASE64URL[(n >> (18 - 6 * i) & 63) as usize];
        }
    }
    let last = mac[MAC_LEN - 1];
    out[MAC_CHARS - 2] = BASE64URL[usize::from(last >> 2)];
    out[MAC_CHARS - 1] = BASE64URL[usize::from(last & 3) << 4];
    out
}

/// The MAC written in `text`, if it is exactly [`MAC_CHARS`] base64url
/// characters with the unused low bits of the last one zero (one spelling
/// per MAC, as the `base64` crate decodes by default; the tests pin it).
fn decode_mac(text: &[u8]) -> Option<[u8; MAC_LEN]> {
    if text.len() != MAC_CHARS {
        return None;
    }
    let mut values = [0u8; MAC_CHARS];
    let mut bad = 0u8;
    for (v, &c) in values.iter_mut().zip(text) {
        *v = BASE64URL_VALUES[usize::from(c)];
        bad |= *v;
    }
    // Any 64 sets bit 6, which no value of the alphabet has; the last
    // character carries two bits and four that must be zero.
    if bad & 64 != 0 || values[MAC_CHARS - 1] & 15 != 0 {
        return None;
    }
    let mut mac = [0u8; MAC_LEN];
    for (group, bytes) in values.chunks_exact(4).zip(mac.chunks_exact_mut(3)) {
        let n = group.iter().fold(0u32, |n, &v| n << 6 | u32::from(v));
        bytes.copy_from_slice(&n.to_be_bytes()[1..]);
    }
    mac[MAC_LEN - 1] = values[MAC_CHARS - 2] << 2 | values[MAC_CHARS - 1] >> 4;
    Some(mac)
}

/// Compares two MACs in time that does not depend on where they differ.
fn same_tag(a: &[u8; MAC_LEN], b: &[u8]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0 && b.len() == MAC_LEN
}

/// A cookie value whose MAC verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    pub id: TrackingId,
    /// Signed with the current secret (not an older one of a rotation).
    pub current: bool,
}

/// Why a secret file's text is not a list of secrets. Never quotes the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadSecrets {
    #[error("no secret in it (expected 64 hex digits on the first line)")]
    Empty,
    #[error("line {0} is not a secret of 64 hex digits (32 bytes)")]
    Line(usize),
}

impl TrackingKeys {
    /// Parses a secret file's text: one secret per line, 64 hex digits each,
    /// the current one first. Surrounding whitespace and empty lines at the
    /// end are ignored; an empty line before a secret is an error (a first
    /// line left empty by mistake must not silently promote an old secret).
    pub fn parse(text: &str) -> Result<Self, BadSecrets> {
        let text = text.trim_end();
        if text.is_empty() {
            return Err(BadSecrets::Empty);
        }
        let keys = text
            .lines()
            .enumerate()
            .map(|(i, line)| {
                let secret = decode_hex(line.trim()).ok_or(BadSecrets::Line(i + 1))?;
                Ok(Self::keyed(&secret))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { keys })
    }

    /// Keys from raw secrets (first signs); `None` if there are none.
    pub fn from_secrets(secrets: &[[u8; SECRET_LEN]]) -> Option<Self> {
        if secrets.is_empty() {
            return None;
        }
        Some(Self {
            keys: secrets.iter().map(Self::keyed).collect(),
        })
    }

    fn keyed(secret: &[u8; SECRET_LEN]) -> KeyedMac {
        KeyedMac::new(secret)
    }

    /// A key for another purpose derived from the current secret
    /// (HMAC-SHA256 of `purpose`, at most 55 bytes), so that everything a
    /// node signs besides the cookie works on every node sharing the file
    /// and outlives a restart, without a second secret to distribute.
    pub fn derived_key(&self, purpose: &[u8]) -> [u8; 32] {
        assert!(purpose.len() <= 55, "a purpose fits in one block");
        self.keys[0].tag(purpose)
    }

    /// How many secrets verify (the current one and older ones).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Appends the cookie value for `id`: the ID, `.`, and its MAC under the
    /// current secret ([`VALUE_LEN`] bytes).
    pub fn write_value(&self, id: &TrackingId, out: &mut Vec<u8>) {
        const _: () = assert!(TrackingId::LEN <= BLOCK - 9);
        let tag = self.keys[0].tag(id.as_bytes());
        let mut mac = [0u8; MAC_LEN];
        mac.copy_from_slice(&tag[..MAC_LEN]);
        out.extend_from_slice(id.as_bytes());
        out.push(SEPARATOR);
        out.extend_from_slice(&encode_mac(&mac));
    }

    /// The cookie value for `id`, as a string.
    pub fn value(&self, id: &TrackingId) -> String {
        let mut v = Vec::with_capacity(VALUE_LEN);
        self.write_value(id, &mut v);
        String::from_utf8(v).unwrap_or_default()
    }

    /// The ID in a cookie value whose MAC verifies under any of the secrets;
    /// `None` for anything else (a bare 19-character ID of the old format, a
    /// forged or tampered value, one signed with an unknown secret). The MAC
    /// is compared in constant time.
    pub fn verify(&self, value: &[u8]) -> Option<TrackingId> {
        self.check(value).map(|v| v.id)
    }

    /// Like [`verify`](Self::verify), and tells whether the current secret
    /// signed the value: then it is exactly what [`write_value`](Self::write_value)
    /// would write for its ID (one MAC, one spelling), so it can be sent back
    /// as it came, without signing it again.
    pub fn check(&self, value: &[u8]) -> Option<Verified> {
        if value.len() != VALUE_LEN || value[TrackingId::LEN] != SEPARATOR {
            return None;
        }
        let id_bytes = &value[..TrackingId::LEN];
        let id = TrackingId::parse_bytes(id_bytes).ok()?;
        // Strict base64url: a non-canonical last character is refused, so one
        // MAC has exactly one spelling.
        let tag = decode_mac(&value[TrackingId::LEN + 1..])?;
        let signer = self
            .keys
            .iter()
            .position(|key| same_tag(&tag, &key.tag(id_bytes)[..MAC_LEN]))?;
        Some(Verified {
            id,
            current: signer == 0,
        })
    }
}

impl fmt::Debug for TrackingKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TrackingKeys({} secrets, ***)", self.keys.len())
    }
}

fn decode_hex(s: &str) -> Option<[u8; SECRET_LEN]> {
    let bytes = s.as_bytes();
    if bytes.len() != 2 * SECRET_LEN {
        return None;
    }
    let nibble = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; SECRET_LEN];
    for (o, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *o = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

fn encode_hex(secret: &[u8; SECRET_LEN]) -> String {
    secret.iter().map(|b| format!("{b:02x}")).collect()
}

/// A secret file that cannot be used, in one line that names the file and
/// never its contents.
#[derive(Debug, thiserror::Error)]
#[error("tracking secret file {}: {reason}", path.display())]
pub struct SecretFileError {
    pub path: PathBuf,
    pub reason: String,
}

/// Reads the secret file at `path`, creating it first (mode 0600, one fresh
/// secret from the OS's generator) if there is none. Creation is atomic and
/// never replaces a file: the secret is written whole to a temporary file
/// that is then hard-linked into place, so a second node starting at the
/// same moment reads the first node's secret rather than half of one.
pub fn load_or_create(path: &Path) -> Result<TrackingKeys, SecretFileError> {
    let err = |reason: String| SecretFileError {
        path: path.to_owned(),
        reason,
    };
    match std::fs::metadata(path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create(path).map_err(|e| err(format!("cannot create it: {e}")))?;
        }
        Err(e) => return Err(err(format!("cannot read it: {e}"))),
    }
    let bytes = std::fs::read(path).map_err(|e| err(format!("cannot read it: {e}")))?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| err("not text: expected lines of 64 hex digits".into()))?;
    TrackingKeys::parse(text).map_err(|e| err(e.to_string()))
}

fn create(path: &Path) -> std::io::Result<()> {
    use rand::TryRngCore;
    use std::os::unix::fs::OpenOptionsExt;

    let mut secret = [0u8; SECRET_LEN];
    rand::rngs::OsRng
        .try_fill_bytes(&mut secret)
        .map_err(std::io::Error::other)?;
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp_name);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(format!("{}\n", encode_hex(&secret)).as_bytes())?;
        f.sync_all()?;
        match std::fs::hard_link(&tmp, path) {
            // Another node (or process) created it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            other => other,
        }
    })();
    let _ = std::fs::remove_file(&tmp);
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use hmac::{Hmac, Mac};
    use proptest::prelude::*;
    use sha2::Sha256;

    const ID: &str = "0Vh3kY2s4fLq9ZxA01b";

    proptest! {
        /// The hand-laid blocks give the `hmac` crate's MAC, for any secret
        /// and any message that fits.
        #[test]
        fn keyed_mac_is_hmac_sha256(secret in any::<[u8; 32]>(),
                                    message in proptest::collection::vec(any::<u8>(), 0..=55)) {
            let mut mac = Hmac::<Sha256>::new_from_slice(&secret).expect("key");
            mac.update(&message);
            let expected: [u8; 32] = mac.finalize().into_bytes().into();
            prop_assert_eq!(KeyedMac::new(&secret).tag(&message), expected);
        }
    }

    proptest! {
        /// The MAC's spelling is the `base64` crate's, both ways: written the
        /// same, and read back only where the crate reads a 16-byte value.
        #[test]
        fn mac_spelling_is_base64url_without_padding(mac in any::<[u8; MAC_LEN]>(),
                                                     text in "[A-Za-z0-9_=+/-]{22}",
                                                     noise in proptest::collection::vec(any::<u8>(), 0..30)) {
            let written = encode_mac(&mac);
            let theirs = URL_SAFE_NO_PAD.encode(mac);
            prop_assert_eq!(&written[..], theirs.as_bytes());
            prop_assert_eq!(decode_mac(&written), Some(mac));
            for t in [text.as_bytes(), &noise[..]] {
                let mut theirs = [0u8; MAC_LEN];
                let expected = match URL_SAFE_NO_PAD.decode_slice(t, &mut theirs) {
                    Ok(MAC_LEN) => Some(theirs),
                    _ => None,
                };
                prop_assert_eq!(decode_mac(t), expected);
            }
        }
    }

    #[test]
    fn every_last_character_of_a_mac() {
        for c in BASE64URL.iter().chain(b"=+/.") {
            let text = [&[b'A'; MAC_CHARS - 1][..], &[*c]].concat();
            let mut theirs = [0u8; MAC_LEN];
            let expected = match URL_SAFE_NO_PAD.decode_slice(&text, &mut theirs) {
                Ok(MAC_LEN) => Some(theirs),
                _ => None,
            };
            assert_eq!(decode_mac(&text), expected, "last character {}", *c as char);
        }
    }

    #[test]
    fn same_tag_compares_every_byte() {
        let a = [7u8; MAC_LEN];
        assert!(same_tag(&a, &a));
        for i in 0..MAC_LEN {
            let mut b = a;
            b[i] ^= 1;
            assert!(!same_tag(&a, &b), "byte {i}");
        }
        assert!(!same_tag(&a, &a[..MAC_LEN - 1]));
    }
    const A: [u8; 32] = [1; 32];
    const B: [u8; 32] = [2; 32];

    fn id() -> TrackingId {
        TrackingId::parse(ID).expect("test ID")
    }

    fn keys(secrets: &[[u8; 32]]) -> TrackingKeys {
        TrackingKeys::from_secrets(secrets).expect("some secrets")
    }

    #[test]
    fn a_signed_value_round_trips() {
        let k = keys(&[A]);
        let v = k.value(&id());
        assert_eq!(v.len(), VALUE_LEN);
        assert!(v.starts_with("0Vh3kY2s4fLq9ZxA01b."), "{v}");
        assert!(
            v[20..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{v}"
        );
        assert_eq!(k.verify(v.as_bytes()), Some(id()));
        for _ in 0..50 {
            let fresh = TrackingId::generate();
            assert_eq!(k.verify(k.value(&fresh).as_bytes()), Some(fresh));
        }
    }

    #[test]
    fn the_mac_is_hmac_sha256_truncated_to_128_bits() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let mut mac = Hmac::<Sha256>::new_from_slice(b"Jefe").expect("key");
        mac.update(b"what do ya want for nothing?");
        let full = mac.finalize().into_bytes();
        assert_eq!(
            encode_hex(&<[u8; 32]>::try_from(&full[..]).expect("32 bytes")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // And the cookie's MAC is the first 16 bytes of the full one.
        let k = keys(&[A]);
        let mut mac = Hmac::<Sha256>::new_from_slice(&A).expect("key");
        mac.update(ID.as_bytes());
        let expected = URL_SAFE_NO_PAD.encode(&mac.finalize().into_bytes()[..16]);
        assert_eq!(k.value(&id()), format!("{ID}.{expected}"));
    }

    #[test]
    fn forged_tampered_and_old_format_values_are_refused() {
        let k = keys(&[A]);
        let good = k.value(&id());
        let mut tampered_id = good.clone().into_bytes();
        tampered_id[3] = if tampered_id[3] == b'a' { b'b' } else { b'a' };
        let mut tampered_mac = good.clone().into_bytes();
        let last = tampered_mac.len() - 2;
        tampered_mac[last] = if tampered_mac[last] == b'A' {
            b'B'
        } else {
            b'A'
        };
        let other_id = TrackingId::parse("0Vh3kY2s4fLq9ZxA01c").expect("id");
        let mac_of_good = &good[20..];
        let swapped = format!("{other_id}.{mac_of_good}");
        for bad in [
            ID.as_bytes().to_vec(), // the old format: a bare ID
            format!("{ID}.").into_bytes(),
            format!("{ID}.AAAAAAAAAAAAAAAAAAAAAA").into_bytes(),
            tampered_id,
            tampered_mac,
            swapped.into_bytes(),
            format!("{good}A").into_bytes(),
            good.as_bytes()[..good.len() - 1].to_vec(),
            good.replacen('.', "-", 1).into_bytes(),
            format!("{ID}.{}", "=".repeat(22)).into_bytes(),
            b"".to_vec(),
            vec![0xff; VALUE_LEN],
        ] {
            assert_eq!(
                k.verify(&bad),
                None,
                "{:?} accepted",
                String::from_utf8_lossy(&bad)
            );
        }
    }

    #[test]
    fn a_non_canonical_mac_spelling_is_refused() {
        // 16 bytes leave 4 unused bits in the 22nd character: flipping one
        // decodes to the same bytes in a lax decoder, and must not verify.
        let k = keys(&[A]);
        let good = k.value(&id());
        let mut lax = good.clone().into_bytes();
        let last = lax.len() - 1;
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let pos = alphabet.iter().position(|&c| c == lax[last]).expect("b64");
        lax[last] = alphabet[pos ^ 1];
        assert_eq!(k.verify(&lax), None);
    }

    #[test]
    fn a_cookie_from_another_secret_is_refused_and_old_secrets_verify() {
        let a = keys(&[A]);
        let b = keys(&[B]);
        let rotated = keys(&[B, A]);
        let from_a = a.value(&id());
        assert_eq!(b.verify(from_a.as_bytes()), None);
        // During a rotation the old secret still verifies; the new one signs.
        assert_eq!(rotated.verify(from_a.as_bytes()), Some(id()));
        assert_eq!(rotated.value(&id()), b.value(&id()));
        assert_eq!(a.verify(rotated.value(&id()).as_bytes()), None);
        // Only the signing secret's values can go back as they came.
        let current = |k: &TrackingKeys, v: &str| k.check(v.as_bytes()).map(|v| v.current);
        assert_eq!(current(&rotated, &from_a), Some(false));
        assert_eq!(current(&rotated, &rotated.value(&id())), Some(true));
        assert_eq!(current(&a, &from_a), Some(true));
    }

    #[test]
    fn secret_file_text() {
        let a = encode_hex(&A);
        let b = encode_hex(&B);
        let k = TrackingKeys::parse(&format!("{b}\n{a}\n\n")).expect("two secrets");
        assert_eq!(k.len(), 2);
        assert_eq!(k.value(&id()), keys(&[B]).value(&id()));
        let upper = TrackingKeys::parse(&format!("  {}\r\n", b.to_uppercase())).expect("one");
        assert_eq!(upper.value(&id()), keys(&[B]).value(&id()));
        assert_eq!(TrackingKeys::parse("").err(), Some(BadSecrets::Empty));
        assert_eq!(TrackingKeys::parse(" \n\n").err(), Some(BadSecrets::Empty));
        for (text, line) in [
            (a[..62].to_owned(), 1),
            (format!("{a}00"), 1),
            (format!("{}g", &a[..63]), 1),
            (format!("{a}\nnot hex"), 2),
            (format!("\n{a}"), 1),
            (
                "aGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8gd29ybGQh".to_owned(),
                1,
            ),
        ] {
            assert_eq!(
                TrackingKeys::parse(&text).err(),
                Some(BadSecrets::Line(line)),
                "{text:?}"
            );
        }
    }

    #[test]
    fn debug_never_shows_a_secret() {
        let k = keys(&[A, B]);
        let shown = format!("{k:?}");
        assert_eq!(shown, "TrackingKeys(2 secrets, ***)");
        assert!(!shown.contains(&encode_hex(&A)));
        let e = TrackingKeys::parse(&format!("{}\nzz{}", encode_hex(&A), &encode_hex(&B)[2..]))
            .expect_err("bad line 2");
        assert!(!e.to_string().contains(&encode_hex(&B)[2..]), "{e}");
    }

    #[test]
    fn a_missing_file_is_created_0600_and_reused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tracking-secret");
        let first = load_or_create(&path).expect("created");
        let mode = std::fs::metadata(&path)
            .expect("exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let text = std::fs::read_to_string(&path).expect("text");
        assert_eq!(text.len(), 65, "{} hex digits and a newline", text.len());
        let again = load_or_create(&path).expect("read back");
        assert_eq!(first.value(&id()), again.value(&id()));
        assert_eq!(
            std::fs::read_dir(dir.path()).expect("dir").count(),
            1,
            "no temporary file left"
        );
        let other = tempfile::tempdir().expect("tempdir");
        let fresh = load_or_create(&other.path().join("s")).expect("created");
        assert_ne!(fresh.value(&id()), first.value(&id()), "secrets are random");
    }

    #[test]
    fn a_bad_file_is_one_line_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("secret");
        for content in [&b"short\n"[..], b"", &[0xff; 65][..]] {
            std::fs::write(&path, content).expect("write");
            let e = load_or_create(&path).expect_err("refused").to_string();
            assert!(
                e.starts_with(&format!("tracking secret file {}: ", path.display())),
                "{e}"
            );
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        let e = load_or_create(&dir.path().join("no-such-dir").join("s"))
            .expect_err("cannot create")
            .to_string();
        assert!(e.contains("cannot create it"), "{e}");
    }
}

//! The snapshot file's format: every link the server serves, the store it
//! came from and the sequence it reflects, so a restart serves at once and
//! catches up from that sequence instead of reading the whole store first.
//!
//! Pure encoding and decoding; [`super::saver`] does the file I/O. A file is
//! believed only whole: the magic, the version, a CRC-32 of everything before
//! it, every length inside the bounds and every string UTF-8. A CRC says the
//! file is whole, not who wrote it, so every link is judged again as a store
//! write is ([`TableBuilder::push_rechecked`]): one that fails is loaded as an invalid
//! document, reported and never served.
//!
//! Layout, integers little-endian:
//!
//! ```text
//! "QRTAGSNP" version:u32
//! identity_len:u32 identity        (which store: see LinkStore::snapshot_identity)
//! seq_len:u32 seq                  (JSON text)
//! links:u64, then per link:
//!     key_len:u16 flags:u8 url_len:u32 [direct_len:u32] [expires_ms:i64]
//!     [created:u32] [changed:u32]  (seconds since the epoch)
//!     [fallback_len:u32]           (version 4, issue 33)
//!     [rules_len:u32]              (version 6, issue 34)
//!     key url [direct] [fallback] [rules]   (rules: the JSON array as stored)
//!     title_len:u32 notes_len:u32 title notes   (version 5, issue 33)
//! invalid:u64, then per invalid document: key_len:u16 reason_len:u32 key reason
//!                                  (version 6: a link served with its url whose
//!                                  rules were refused is listed too)
//! crc32:u32                        (of every byte before it)
//! ```

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{LinkTable, LinkView, TableBuilder, Texts};
use crate::link::rules::{Capabilities, Rules};

const MAGIC: &[u8; 8] = b"QRTAGSNP";
/// 2: destinations are judged by stricter rules (userinfo, dot segments, a
/// host not in served form are refused). A version-1 file may hold links that
/// are now invalid, and its links are not parsed again, so it is ignored and
/// the store read whole once.
/// 3: a link carries its creation and change times and whether it is a
/// tombstone; a version-2 file has none of them, so it is ignored the same way.
/// 4: a link may carry a fallback (issue 33); a version-3 file cannot say
/// which links have one, so it is ignored the same way.
/// 5: a link carries its title and notes (issue 33), which the console's
/// list shows and searches; a version-4 file has none, so it is ignored the
/// same way.
/// 6: a link may carry rules (issue 34), and a link whose rules were refused
/// is both served and listed as invalid; a version-5 file cannot say which
/// links have rules, so it is ignored the same way.
const VERSION: u32 = 6;

const INACTIVE: u8 = 1;
const EXPIRES: u8 = 2;
const DIRECT_IS_URL: u8 = 4;
const DIRECT_OWN: u8 = 8;
const CREATED: u8 = 16;
const CHANGED: u8 = 32;
const FALLBACK: u8 = 64;
/// Issue 34: the link has rules, their JSON text after the fallback.
const RULES: u8 = 128;
// Every bit of the flags byte is a flag since version 6 (issue 34).

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("not a qrtag snapshot file")]
    NotASnapshot,
    #[error("snapshot format version {0}, this qrtag reads version {VERSION}")]
    Version(u32),
    #[error("checksum mismatch: the file is damaged or was cut short")]
    Checksum,
    #[error("malformed snapshot file: {0}")]
    Malformed(&'static str),
    #[error("the snapshot is of another store ({found}), not {expected}")]
    OtherStore { found: String, expected: String },
    #[error(
        "the snapshot was taken from another state of this database \
         (restored from a backup?)"
    )]
    OtherState,
}

/// Between a store's identity and the marker of its state in a file's
/// identity.
const STATE: &str = " state ";

/// What a snapshot file records as its store: the store's identity and,
/// where the store keeps one, the marker of the database state the file
/// was taken from (see [`crate::store::LinkStore::mark_snapshot`]).
pub fn marked_identity(identity: &str, mark: Option<&str>) -> String {
    match mark {
        Some(mark) => format!("{identity}{STATE}{mark}"),
        None => identity.to_owned(),
    }
}

fn store_part(identity: &str) -> &str {
    identity
        .split_once(STATE)
        .map_or(identity, |(store, _)| store)
}

/// What a snapshot file holds.
pub struct Decoded {
    pub identity: String,
    pub seq: Value,
    pub links: TableBuilder,
}

impl Decoded {
    /// The marker of the store's state the file was saved with, if any.
    pub fn mark(&self) -> Option<&str> {
        self.identity.split_once(STATE).map(|(_, mark)| mark)
    }
}

/// Writes `table` as a snapshot of store `identity` at the table's sequence.
pub fn encode(table: &LinkTable, identity: &str, out: impl Write) -> io::Result<()> {
    let mut w = Crc32Writer {
        inner: out,
        crc: crc32fast::Hasher::new(),
    };
    w.write_all(MAGIC)?;
    w.write_all(&VERSION.to_le_bytes())?;
    write_str32(&mut w, identity)?;
    let seq = table.seq().unwrap_or(&Value::Null).to_string();
    write_str32(&mut w, &seq)?;
    w.write_all(&(table.len() as u64).to_le_bytes())?;
    for (link, texts) in table.iter_with_texts() {
        write_link(&mut w, &link)?;
        write_texts(&mut w, texts)?;
    }
    w.write_all(&(table.invalid_count() as u64).to_le_bytes())?;
    for (key, reason) in table.invalid() {
        w.write_all(&len16(key)?.to_le_bytes())?;
        w.write_all(&len32(reason)?.to_le_bytes())?;
        w.write_all(key.as_bytes())?;
        w.write_all(reason.as_bytes())?;
    }
    let crc = w.crc.clone().finalize();
    w.inner.write_all(&crc.to_le_bytes())?;
    w.inner.flush()
}

fn write_link(w: &mut impl Write, link: &LinkView<'_>) -> io::Result<()> {
    let mut flags = 0;
    let own_direct = match link.direct {
        Some(d) if d == link.url => {
            flags |= DIRECT_IS_URL;
            None
        }
        Some(d) => {
            flags |= DIRECT_OWN;
            Some(d)
        }
        None => None,
    };
    if link.inactive {
        flags |= INACTIVE;
    }
    if link.expires_ms.is_some() {
        flags |= EXPIRES;
    }
    if link.created.is_some() {
        flags |= CREATED;
    }
    if link.changed.is_some() {
        flags |= CHANGED;
    }
    if link.fallback.is_some() {
        flags |= FALLBACK;
    }
    let rules = link.rules.map(|r| r.to_json().to_string());
    if rules.is_some() {
        flags |= RULES;
    }
    w.write_all(&len16(link.key)?.to_le_bytes())?;
    w.write_all(&[flags])?;
    w.write_all(&len32(link.url)?.to_le_bytes())?;
    if let Some(d) = own_direct {
        w.write_all(&len32(d)?.to_le_bytes())?;
    }
    if let Some(ms) = link.expires_ms {
        w.write_all(&ms.to_le_bytes())?;
    }
    for t in [link.created, link.changed].into_iter().flatten() {
        w.write_all(&t.to_le_bytes())?;
    }
    if let Some(f) = link.fallback {
        w.write_all(&len32(f)?.to_le_bytes())?;
    }
    if let Some(r) = &rules {
        w.write_all(&len32(r)?.to_le_bytes())?;
    }
    w.write_all(link.key.as_bytes())?;
    w.write_all(link.url.as_bytes())?;
    if let Some(d) = own_direct {
        w.write_all(d.as_bytes())?;
    }
    if let Some(f) = link.fallback {
        w.write_all(f.as_bytes())?;
    }
    if let Some(r) = &rules {
        w.write_all(r.as_bytes())?;
    }
    Ok(())
}

// Issue 33: the texts block of a link. ------------------------------------
fn write_texts(w: &mut impl Write, texts: Texts<'_>) -> io::Result<()> {
    let (title, notes) = (texts.title.unwrap_or(""), texts.notes.unwrap_or(""));
    w.write_all(&len32(title)?.to_le_bytes())?;
    w.write_all(&len32(notes)?.to_le_bytes())?;
    w.write_all(title.as_bytes())?;
    w.write_all(notes.as_bytes())
}

fn read_texts<'a>(r: &mut Reader<'a>) -> Result<Texts<'a>, DecodeError> {
    let title_len = r.u32()? as usize;
    let notes_len = r.u32()? as usize;
    let title = r.str(title_len)?;
    let notes = r.str(notes_len)?;
    Ok(Texts::new(Some(title), Some(notes)))
}
// End of the texts block. -------------------------------------------------

/// Issue 34: a link's rules as the file holds them (the JSON array), parsed
/// as the snapshot reads a stored document's.
fn read_rules(text: &str) -> Result<Rules, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("rules: not JSON: {e}"))?;
    Rules::from_json(&value, &Capabilities { geoip: true }).map_err(|e| e.to_string())
}

fn write_str32(w: &mut impl Write, s: &str) -> io::Result<()> {
    w.write_all(&len32(s)?.to_le_bytes())?;
    w.write_all(s.as_bytes())
}

fn len16(s: &str) -> io::Result<u16> {
    u16::try_from(s.len()).map_err(|_| io::Error::other("key longer than 65535 bytes"))
}

fn len32(s: &str) -> io::Result<u32> {
    u32::try_from(s.len()).map_err(|_| io::Error::other("string longer than 4 GiB"))
}

/// Reads a snapshot file's bytes; `expected` is the identity of the store
/// the server is configured with.
pub fn decode(bytes: &[u8], expected: &str) -> Result<Decoded, DecodeError> {
    decode_checking(bytes, expected, true)
}

/// Like [`decode`], but takes a file of any state of the store `store`
/// (see [`Decoded::mark`]), for a store whose follower compares the marker
/// once it reaches the store ([`crate::store::LinkStore::checks_mark_when_following`]).
pub fn decode_any_state(bytes: &[u8], store: &str) -> Result<Decoded, DecodeError> {
    decode_checking(bytes, store, false)
}

/// The store a snapshot file names (its identity without the marker), read
/// from the head alone before anything is checked: for choosing which store
/// to decode the file as ([`decode_any_state`] then checks it whole), never
/// for believing it.
pub fn named_store(bytes: &[u8]) -> Option<&str> {
    let mut r = Reader {
        bytes: bytes.strip_prefix(MAGIC.as_slice())?,
    };
    if r.u32().ok()? != VERSION {
        return None;
    }
    r.str32().ok().map(store_part)
}

fn decode_checking(bytes: &[u8], expected: &str, state: bool) -> Result<Decoded, DecodeError> {
    if bytes.len() < MAGIC.len() + 4 + 4 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(DecodeError::NotASnapshot);
    }
    let mut r = Reader {
        bytes: &bytes[MAGIC.len()..],
    };
    let version = r.u32()?;
    if version != VERSION {
        return Err(DecodeError::Version(version));
    }
    let (body, trailer) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    if crc32fast::hash(body) != stored {
        return Err(DecodeError::Checksum);
    }
    let mut r = Reader {
        bytes: &body[MAGIC.len() + 4..],
    };
    let identity = r.str32()?.to_owned();
    let same_store = store_part(&identity) == store_part(expected);
    if same_store && identity != expected && state {
        return Err(DecodeError::OtherState);
    }
    if !same_store {
        return Err(DecodeError::OtherStore {
            found: identity,
            expected: expected.to_owned(),
        });
    }
    let seq: Value = serde_json::from_str(r.str32()?)
        .map_err(|_| DecodeError::Malformed("the sequence is not JSON"))?;
    if seq.is_null() {
        return Err(DecodeError::Malformed("no store sequence"));
    }
    let mut links = TableBuilder::default();
    let count = r.u64()?;
    for _ in 0..count {
        let key_len = r.u16()? as usize;
        let flags = r.u8()?;
        if flags & DIRECT_IS_URL != 0 && flags & DIRECT_OWN != 0 {
            return Err(DecodeError::Malformed("unknown link flags"));
        }
        let url_len = r.u32()? as usize;
        let direct_len = if flags & DIRECT_OWN != 0 {
            Some(r.u32()? as usize)
        } else {
            None
        };
        let expires_ms = if flags & EXPIRES != 0 {
            Some(r.i64()?)
        } else {
            None
        };
        let mut time = |flag: u8| -> Result<Option<u32>, DecodeError> {
            if flags & flag == 0 {
                return Ok(None);
            }
            match r.u32()? {
                0 => Err(DecodeError::Malformed("a time of 0")),
                t => Ok(Some(t)),
            }
        };
        let created = time(CREATED)?;
        let changed = time(CHANGED)?;
        let fallback_len = if flags & FALLBACK != 0 {
            Some(r.u32()? as usize)
        } else {
            None
        };
        let rules_len = if flags & RULES != 0 {
            Some(r.u32()? as usize)
        } else {
            None
        };
        let key = r.str(key_len)?;
        let url = r.str(url_len)?;
        let direct = match direct_len {
            Some(n) => Some(r.str(n)?),
            None if flags & DIRECT_IS_URL != 0 => Some(url),
            None => None,
        };
        let fallback = match fallback_len {
            Some(n) => Some(r.str(n)?),
            None => None,
        };
        // Issue 34: judged again as a store load judges them.
        let rules = match rules_len {
            Some(n) => Some(read_rules(r.str(n)?)),
            None => None,
        };
        if key.is_empty() || url.is_empty() {
            return Err(DecodeError::Malformed("an empty key or URL"));
        }
        let read = LinkView {
            key,
            url,
            inactive: flags & INACTIVE != 0,
            expires_ms,
            direct,
            created,
            changed,
            fallback,
            rules: None,
        };
        let texts = read_texts(&mut r)?;
        links.push_rechecked(&read, texts, rules);
    }
    let invalid = r.u64()?;
    for _ in 0..invalid {
        let key_len = r.u16()? as usize;
        let reason_len = r.u32()? as usize;
        let key = r.str(key_len)?;
        let reason = r.str(reason_len)?;
        links.push_note(key, reason.to_owned());
    }
    if !r.bytes.is_empty() {
        return Err(DecodeError::Malformed("bytes after the last record"));
    }
    Ok(Decoded {
        identity,
        seq,
        links,
    })
}

/// Checksums what it writes; the checksum itself goes to `inner` directly.
/// Shared with the scan index's checkpoint.
pub(crate) struct Crc32Writer<W> {
    pub(crate) inner: W,
    pub(crate) crc: crc32fast::Hasher,
}

impl<W: Write> Write for Crc32Writer<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.bytes.len() < n {
            return Err(DecodeError::Malformed("a record runs past the end"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn str(&mut self, n: usize) -> Result<&'a str, DecodeError> {
        std::str::from_utf8(self.take(n)?)
            .map_err(|_| DecodeError::Malformed("a string is not UTF-8"))
    }

    fn str32(&mut self) -> Result<&'a str, DecodeError> {
        let n = self.u32()? as usize;
        self.str(n)
    }
}

/// Writes a private file (mode 0600) through `write` to a temporary file
/// beside `path`, syncs it and renames it over `path`, so a crash leaves
/// the old file or the new one, never half of one. Shared with the scan
/// index's checkpoint.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<fs::File>) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "snapshot".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let f = open_private(&tmp)?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        write(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        // The rename itself is durable only once the directory is synced.
        fs::File::open(&dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// The links may be private to the operator: the file is readable by the
/// service's user only.
fn open_private(path: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::test_upsert;
    use serde_json::json;

    fn table() -> LinkTable {
        let mut b = TableBuilder::default();
        b.apply([
            test_upsert(
                "H83if",
                json!({"url": "https://a.example/x?y=1", "title": "Spring 🎟", "notes": "bus stop\nMain St"}),
            ),
            test_upsert("up", json!({"url": "https://b.example"})),
            test_upsert(
                "docs/api",
                json!({"url": "/H83if", "inactive": true, "expires": "2030-01-01T00:00:00Z", "notes": ["by hand"]}),
            ),
            test_upsert("bad01", json!({"url": 3})),
            test_upsert(
                "gone1",
                json!({"url": "https://c.example/", "created_at": "2026-01-02T03:04:05Z",
                       "changed_at": "2026-02-03T04:05:06Z"}),
            ),
            test_upsert(
                "new01",
                json!({"url": "https://d.example/", "changed_at": "2026-02-03T04:05:06Z"}),
            ),
            test_upsert(
                "after",
                json!({"url": "https://e.example/", "inactive": true,
                       "expires": "2026-01-01T00:00:00Z",
                       "fallback_url": "https://venue.example/home"}),
            ),
        ]);
        b.build(Some(json!("12-g1AAAA")))
    }

    fn encoded(t: &LinkTable, identity: &str) -> Vec<u8> {
        let mut out = Vec::new();
        encode(t, identity, &mut out).expect("writes to a Vec");
        out
    }

    fn links_of(t: &LinkTable) -> Vec<String> {
        let mut v: Vec<String> = t
            .iter_with_texts()
            .map(|(l, texts)| format!("{l:?} {texts:?}"))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn round_trips_links_invalid_documents_and_sequence() {
        let t = table();
        let bytes = encoded(&t, "sqlite:abc");
        let d = decode(&bytes, "sqlite:abc").expect("decodes");
        assert_eq!(d.identity, "sqlite:abc");
        assert_eq!(d.seq, json!("12-g1AAAA"));
        let back = d.links.build(Some(d.seq));
        assert_eq!(links_of(&back), links_of(&t));
        assert_eq!(back.invalid_count(), 1);
        assert_eq!(
            back.direct_location("up", 0, "https://0x1f.ie"),
            Some("https://b.example/")
        );
        let gone = back.get("gone1").expect("kept");
        assert_eq!(
            (gone.created, gone.changed),
            (Some(1_767_323_045), Some(1_770_091_506))
        );
        assert_eq!(
            back.texts("H83if"),
            Some(Texts::new(Some("Spring 🎟"), Some("bus stop\nMain St")))
        );
        assert_eq!(
            back.texts("docs/api"),
            Some(Texts::new(None, Some(r#"["by hand"]"#)))
        );
        assert_eq!(back.texts("up"), Some(Texts::default()));
        let new = back.get("new01").expect("kept");
        assert_eq!((new.created, new.changed), (None, Some(1_770_091_506)));
        assert_eq!(
            back.fallback_at("after", 0),
            Some("https://venue.example/home")
        );
        assert_eq!(back.fallback_at("up", 0), None);
    }

    /// Issue 34: a link's rules come back compiled; a link whose rules were
    /// refused comes back served with its url and still counted.
    #[test]
    fn round_trips_rules_and_links_served_without_them() {
        let mut b = TableBuilder::default();
        b.apply([
            test_upsert(
                "smart",
                json!({"url": "https://a.example/", "rules": [
                    {"url": "https://apps.apple.com/x", "os": ["ios"]},
                    {"url": "https://b.example/de", "lang": ["de"], "country": ["DE"]}]}),
            ),
            test_upsert(
                "broken",
                json!({"url": "https://c.example/", "rules": [{"url": "https://d.example/"}]}),
            ),
            test_upsert("bad01", json!({"url": 3})),
        ]);
        let t = b.build(Some(json!(3)));
        assert_eq!((t.len(), t.invalid_count()), (2, 2));
        let bytes = encoded(&t, "id");
        let back = decode(&bytes, "id")
            .expect("decodes")
            .links
            .build(Some(json!(3)));
        assert_eq!(links_of(&back), links_of(&t));
        assert_eq!((back.len(), back.invalid_count()), (2, 2));
        let rules = back.get("smart").and_then(|l| l.rules).expect("rules");
        assert!(rules.url_is_direct(), "judged again when read");
        assert_eq!(
            rules.to_json(),
            t.get("smart")
                .and_then(|l| l.rules)
                .expect("rules")
                .to_json()
        );
        assert_eq!(back.live_url("broken", 0), Some("https://c.example/"));
        assert!(
            back.invalid()
                .any(|(k, r)| k == "broken" && r.contains("rules[0]"))
        );
        assert_eq!(back.live_url("bad01", 0), None);
    }

    /// Issue 34: rules rewritten in a file are judged again; refused ones
    /// leave the link served with its url, counted.
    #[test]
    fn rules_are_judged_again_when_read() {
        let mut b = TableBuilder::default();
        let read = LinkView {
            key: "smart",
            url: "https://a.example/",
            inactive: false,
            expires_ms: None,
            direct: None,
            created: None,
            changed: None,
            fallback: None,
            rules: None,
        };
        b.push_rechecked(
            &read,
            Texts::default(),
            Some(read_rules(r#"[{"url": "javascript:x", "os": ["ios"]}]"#)),
        );
        let t = b.build(None);
        assert_eq!(t.live_url("smart", 0), Some("https://a.example/"));
        assert!(t.get("smart").and_then(|l| l.rules).is_none());
        assert_eq!(t.invalid_count(), 1);
        assert!(read_rules("not json").is_err());
    }

    #[test]
    fn refuses_another_store() {
        let bytes = encoded(&table(), "sqlite:abc");
        assert!(matches!(
            decode(&bytes, "sqlite:xyz"),
            Err(DecodeError::OtherStore { .. })
        ));
    }

    #[test]
    fn refuses_another_state_of_the_same_store() {
        let bytes = encoded(&table(), &marked_identity("sqlite:abc", Some("m1")));
        for expected in [
            marked_identity("sqlite:abc", Some("m0")),
            marked_identity("sqlite:abc", None),
        ] {
            assert_eq!(
                decode(&bytes, &expected).err(),
                Some(DecodeError::OtherState)
            );
        }
        for other in ["m0", "m1"] {
            let d = decode_any_state(&bytes, &marked_identity("sqlite:abc", Some(other)))
                .expect("any state of the same store");
            assert_eq!(d.mark(), Some("m1"));
        }
        assert!(matches!(
            decode_any_state(&bytes, "sqlite:xyz"),
            Err(DecodeError::OtherStore { .. })
        ));
        let same = marked_identity("sqlite:abc", Some("m1"));
        assert!(decode(&bytes, &same).is_ok());
        assert!(matches!(
            decode(&bytes, &marked_identity("sqlite:xyz", Some("m1"))),
            Err(DecodeError::OtherStore { .. })
        ));
    }

    #[test]
    fn refuses_every_damaged_or_cut_file() {
        let bytes = encoded(&table(), "id");
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut], "id").is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x20;
            assert!(decode(&damaged, "id").is_err(), "byte {i} flipped");
        }
        assert_eq!(
            decode(b"{\"url\": \"not a snapshot\"}", "id").err(),
            Some(DecodeError::NotASnapshot)
        );
        let mut future = bytes.clone();
        future[8] = 7;
        assert_eq!(decode(&future, "id").err(), Some(DecodeError::Version(7)));
        // Version 1 held links judged by older, looser destination rules,
        // version 2 links without their times, version 3 without fallbacks,
        // version 4 without their titles and notes (issue 33).
        for old in [1, 2, 3, 4, 5] {
            let mut past = bytes.clone();
            past[8] = old;
            assert_eq!(
                decode(&past, "id").err(),
                Some(DecodeError::Version(old.into()))
            );
        }
    }

    #[test]
    fn a_table_without_a_sequence_is_not_restored() {
        let mut b = TableBuilder::default();
        b.apply([]);
        let bytes = encoded(&b.build(None), "id");
        assert!(matches!(
            decode(&bytes, "id"),
            Err(DecodeError::Malformed(_))
        ));
    }

    /// A file rewritten by hand, its checksum made right: what a store
    /// write would refuse is loaded as invalid, never served.
    #[test]
    fn links_a_store_would_refuse_are_invalid_whatever_the_checksum() {
        let mut b = TableBuilder::default();
        let forged =
            |key: &'static str, url: &'static str, direct: Option<&'static str>| LinkView {
                key,
                url,
                inactive: false,
                expires_ms: None,
                direct,
                created: None,
                changed: None,
                fallback: None,
                rules: None,
            };
        for link in [
            forged(
                "evil1",
                "//evil.example/phish",
                Some("//evil.example/phish"),
            ),
            forged("evil2", "javascript:alert(1)", Some("javascript:alert(1)")),
            forged("bad key!", "https://a.example/", Some("https://a.example/")),
            forged("good1", "https://a.example/", Some("//evil.example/x")),
            LinkView {
                fallback: Some("/H83if"),
                ..forged("evil3", "https://a.example/", None)
            },
        ] {
            b.push_live(link.key, &link);
        }
        let bytes = encoded(&b.build(Some(json!(7))), "id");
        let back = decode(&bytes, "id")
            .expect("whole")
            .links
            .build(Some(json!(7)));
        assert_eq!(back.invalid_count(), 4);
        for key in ["evil1", "evil2", "bad key!", "evil3"] {
            assert!(back.get(key).is_none(), "{key} served");
            assert_eq!(back.direct_location(key, 0, "https://0x1f.ie"), None);
        }
        assert_eq!(
            back.direct_location("good1", 0, "https://0x1f.ie"),
            Some("https://a.example/"),
            "the direct location is worked out again, not read"
        );
    }
}

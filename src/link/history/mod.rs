//! A link's history (issue 35), pure: what one write changed, told from the
//! documents before and after it, and how to go back to an earlier state.
//! The stores keep the entries (SQLite in the write's own transaction); this
//! module decides what an entry says, so both stores and every surface
//! agree on it.
//!
//! The bound: a link keeps its last [`KEEP`] entries. Past that the oldest
//! is dropped with each write; entries keep their numbers, so the first one
//! kept says how many came before it ([`History::dropped`]). A write that
//! changes none of the [`Field`]s (only a stamp, or a field qrtag does not
//! own) leaves no entry.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Document, Via, changed_actor, changed_via, is_tombstone, reverted_to};
use crate::values::actor::Actor;

mod revert;
pub use revert::{RevertError, apply, revert_edit, state_after};

/// How many entries a link keeps: enough for years of weekly repoints,
/// while a link edited in a loop stays a few hundred kilobytes at most.
pub const KEEP: u64 = 200;

/// A field a history entry follows: what decides where a scan goes, and
/// what people read about the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Url,
    Rules,
    Inactive,
    Expires,
    Title,
    Notes,
    FallbackUrl,
    /// The tombstone's `deleted_at`.
    Deleted,
}

impl Field {
    /// Every field, in the order entries list their changes.
    pub const ALL: [Field; 8] = [
        Field::Url,
        Field::Rules,
        Field::Inactive,
        Field::Expires,
        Field::Title,
        Field::Notes,
        Field::FallbackUrl,
        Field::Deleted,
    ];

    /// The name in an entry and on every surface.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Url => "url",
            Field::Rules => "rules",
            Field::Inactive => "inactive",
            Field::Expires => "expires",
            Field::Title => "title",
            Field::Notes => "notes",
            Field::FallbackUrl => "fallback_url",
            Field::Deleted => "deleted",
        }
    }

    /// The document field it reads.
    pub fn doc_name(self) -> &'static str {
        match self {
            Field::Deleted => "deleted_at",
            other => other.as_str(),
        }
    }

    /// The field's value in `doc`; an absent field and `null` are the same.
    pub fn value(self, doc: &Document) -> Option<&Value> {
        doc.get(self.doc_name()).filter(|v| !v.is_null())
    }
}

/// One field's value before and after a write (`None`: absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub field: Field,
    #[serde(default)]
    pub before: Option<Value>,
    #[serde(default)]
    pub after: Option<Value>,
}

/// What kind of write an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Create,
    Edit,
    Delete,
}

/// One write to a link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// 1 for the link's first write, one more for each after it.
    pub n: u64,
    /// `changed_at` as the write stamped it.
    pub at: String,
    pub actor: Actor,
    /// The surface, when the write named one qrtag knows.
    #[serde(default, with = "via_name", skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    /// The revision written, where the store has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    pub kind: Kind,
    pub changes: Vec<Change>,
    /// For a revert, the entry it went back to (entries written before
    /// qrtag said so have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverted_to: Option<u64>,
}

impl Entry {
    /// The change of `field`, if this entry made one.
    pub fn change(&self, field: Field) -> Option<&Change> {
        self.changes.iter().find(|c| c.field == field)
    }

    /// What the entry did, in the words every surface shows.
    pub fn summary(&self) -> String {
        match (self.kind, self.reverted_to) {
            (Kind::Create, _) => "created".to_owned(),
            (Kind::Delete, _) => "deleted".to_owned(),
            (Kind::Edit, Some(n)) => format!("reverted to #{n}"),
            (Kind::Edit, None) => "edited".to_owned(),
        }
    }
}

/// The changes from `before` (`None`: no document) to `after`, in
/// [`Field::ALL`]'s order.
pub fn diff(before: Option<&Document>, after: &Document) -> Vec<Change> {
    Field::ALL
        .into_iter()
        .filter_map(|field| {
            let old = before.and_then(|d| field.value(d));
            let new = field.value(after);
            (old != new).then(|| Change {
                field,
                before: old.cloned(),
                after: new.cloned(),
            })
        })
        .collect()
}

/// The entry numbered `n` for a write from `before` to `after` at revision
/// `rev`, or `None` when the write changed no [`Field`] of an existing
/// document. Who and through which surface are read from the document's
/// stamps; a write without qrtag's stamp (a document edited by hand) is
/// [`Actor::Outside`] with its revision, and never a revert, whatever
/// stamp an earlier write left. `now` is the time when the document names
/// none.
pub fn entry(
    n: u64,
    before: Option<&Document>,
    after: &Document,
    rev: Option<&str>,
    now: &str,
) -> Option<Entry> {
    let changes = diff(before, after);
    let kind = match before {
        None => Kind::Create,
        Some(b) if !is_tombstone(b) && is_tombstone(after) => Kind::Delete,
        Some(_) if changes.is_empty() => return None,
        Some(_) => Kind::Edit,
    };
    let (actor, reverted) = match changed_actor(after) {
        Some(actor) => (actor, reverted_to(after)),
        None => (
            Actor::Outside {
                rev: rev.map(str::to_owned),
            },
            None,
        ),
    };
    let at = after
        .get("changed_at")
        .and_then(Value::as_str)
        .unwrap_or(now)
        .to_owned();
    Some(Entry {
        n,
        at,
        actor,
        via: changed_via(after),
        rev: rev.map(str::to_owned),
        kind,
        changes,
        reverted_to: reverted,
    })
}

/// A link's kept entries, oldest first, as a reader gets them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct History {
    pub entries: Vec<Entry>,
}

impl History {
    /// How many older entries were dropped past [`KEEP`]: the first kept
    /// entry's number tells, since numbers are never reused.
    pub fn dropped(&self) -> u64 {
        self.entries.first().map_or(0, |e| e.n.saturating_sub(1))
    }

    /// The entry numbered `n`.
    pub fn get(&self, n: u64) -> Option<&Entry> {
        let first = self.entries.first()?.n;
        let e = self
            .entries
            .get(usize::try_from(n.checked_sub(first)?).ok()?)?;
        (e.n == n).then_some(e)
    }
}

/// The first entry number that a link whose latest entry is `last` still
/// keeps: the store drops every one before it.
pub fn first_kept(last: u64) -> u64 {
    last.saturating_sub(KEEP - 1).max(1)
}

mod via_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::link::Via;

    pub fn serialize<S: Serializer>(via: &Option<Via>, s: S) -> Result<S::Ok, S::Error> {
        match via {
            Some(v) => s.serialize_str(v.as_str()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Via>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.and_then(|s| Via::parse(&s)))
    }
}

#[cfg(test)]
mod tests;

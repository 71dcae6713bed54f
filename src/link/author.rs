//! Who wrote a link, and through which surface (issue 35): every `links::`
//! writer takes one [`Author`] where it took a [`Via`], so a history entry
//! can name the person or program and not only the surface. The actor is
//! stamped into the document beside `changed_via` (`changed_actor`), so the
//! store that keeps the history reads it from the write itself, in the same
//! transaction, and no writer can forget to say who it was.

use serde_json::Value;

use super::{Document, Via};
use crate::values::actor::Actor;

/// The document field that names who made the last write.
pub const ACTOR_FIELD: &str = "changed_actor";

/// The document field that names the history entry a revert went back
/// to: stamped by the revert's write and removed by every other one, so a
/// store that records the write (CouchDB's recorder reads only the
/// document) can say "reverted to #N".
pub const REVERTED_FIELD: &str = "reverted_to";

/// Who made a write and through which surface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    pub via: Via,
    pub actor: Actor,
    /// The entry this write goes back to, for a revert.
    pub reverted_to: Option<u64>,
}

impl Author {
    pub fn new(via: Via, actor: Actor) -> Self {
        Self {
            via,
            actor,
            reverted_to: None,
        }
    }

    /// The same author writing a revert to entry `n`.
    pub fn reverting(self, n: u64) -> Self {
        Self {
            reverted_to: Some(n),
            ..self
        }
    }

    /// A `qrtag` command run by `os_user` on `host` (the CLI reads both at
    /// its edge; tests and benchmarks name their own).
    pub fn cli(via: Via, os_user: &str, host: &str) -> Self {
        Self::new(
            via,
            Actor::Cli {
                os_user: os_user.to_owned(),
                host: host.to_owned(),
            },
        )
    }
}

/// Stamps `changed_actor` alone: an import keeps the times and surfaces
/// a document brings, but the write is the one who imports it.
pub fn stamp_actor(doc: &mut Document, actor: &Actor) {
    set_actor(doc, actor);
    doc.shift_remove(REVERTED_FIELD);
}

/// Stamps `changed_actor` (the actor as tagged JSON).
pub(super) fn set_actor(doc: &mut Document, actor: &Actor) {
    let value = serde_json::to_value(actor).unwrap_or(Value::Null);
    doc.insert(ACTOR_FIELD.into(), value);
}

/// Stamps [`REVERTED_FIELD`] for a revert, and removes it for any other
/// write, so it never outlives the write it describes.
pub(super) fn set_reverted(doc: &mut Document, author: &Author) {
    match author.reverted_to {
        Some(n) => {
            doc.insert(REVERTED_FIELD.into(), Value::from(n));
        }
        None => {
            doc.shift_remove(REVERTED_FIELD);
        }
    }
}

/// The entry the last write reverted to, when it was a revert.
pub fn reverted_to(doc: &Document) -> Option<u64> {
    doc.get(REVERTED_FIELD).and_then(Value::as_u64)
}

/// The actor of the last write, when the document names one that parses.
pub fn changed_actor(doc: &Document) -> Option<Actor> {
    doc.get(ACTOR_FIELD)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_actor_is_stamped_and_read_back() {
        let mut d = json!({"url": "/x"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(changed_actor(&d), None);
        let author = Author::cli(Via::Cli, "ann", "box");
        set_actor(&mut d, &author.actor);
        assert_eq!(
            d.get(ACTOR_FIELD),
            Some(&json!({"kind": "cli", "os_user": "ann", "host": "box"}))
        );
        assert_eq!(changed_actor(&d), Some(author.actor));
        d.insert(ACTOR_FIELD.into(), json!("someone"));
        assert_eq!(changed_actor(&d), None, "a hand-written value is no actor");
    }
}

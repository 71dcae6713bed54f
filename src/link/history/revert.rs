//! One step back: "back to how it was after step N". Entries keep only the
//! fields a write changed, so a field's value after entry N is the `after`
//! of the latest entry up to N that changed it; failing that, the `before`
//! of the first later entry that changed it (the entries after the first
//! kept one are never cut, so that is the value it had since); failing
//! that, its value now. That also holds for a field whose last change
//! before N was dropped past the bound.

use serde_json::Value;

use super::{Field, History};
use crate::link::{Document, is_tombstone};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RevertError {
    #[error("entry {n} does not exist; the link's history has entries {first} to {last}")]
    NoEntry { n: u64, first: u64, last: u64 },
    #[error("entry {n} does not exist; the link has no history")]
    NoHistory { n: u64 },
    #[error(
        "entry {n} was dropped: a link keeps its last {} entries, and this one's history starts at {first}",
        super::KEEP
    )]
    Dropped { n: u64, first: u64 },
    #[error("entry {n} deleted the link; a deleted key is never brought back")]
    TargetDeleted { n: u64 },
    #[error("the link is deleted; a deleted key is never brought back")]
    LinkDeleted,
}

/// Each [`Field`]'s value just after entry `n` (`None`: absent), given the
/// document as it is now.
pub fn state_after(
    history: &History,
    n: u64,
    current: &Document,
) -> Result<Vec<(Field, Option<Value>)>, RevertError> {
    let (Some(first), Some(last)) = (history.entries.first(), history.entries.last()) else {
        return Err(RevertError::NoHistory { n });
    };
    if n < first.n {
        return Err(RevertError::Dropped { n, first: first.n });
    }
    if history.get(n).is_none() {
        return Err(RevertError::NoEntry {
            n,
            first: first.n,
            last: last.n,
        });
    }
    let (upto, later): (Vec<_>, Vec<_>) = history.entries.iter().partition(|e| e.n <= n);
    Ok(Field::ALL
        .into_iter()
        .map(|field| {
            let value = match upto.iter().rev().find_map(|e| e.change(field)) {
                Some(c) => c.after.clone(),
                None => match later.iter().find_map(|e| e.change(field)) {
                    Some(c) => c.before.clone(),
                    None => field.value(current).cloned(),
                },
            };
            (field, value)
        })
        .collect())
}

/// The fields to set (`None`: remove) so that `current` is as it was after
/// entry `n`, only those that differ now; empty when it is so already. A
/// deleted link, or an entry that deleted it, is refused: a tombstone
/// stays one.
pub fn revert_edit(
    history: &History,
    n: u64,
    current: &Document,
) -> Result<Vec<(Field, Option<Value>)>, RevertError> {
    if is_tombstone(current) {
        return Err(RevertError::LinkDeleted);
    }
    let target = state_after(history, n, current)?;
    if target
        .iter()
        .any(|(f, v)| *f == Field::Deleted && v.is_some())
    {
        return Err(RevertError::TargetDeleted { n });
    }
    Ok(target
        .into_iter()
        .filter(|(f, v)| f.value(current) != v.as_ref())
        .collect())
}

/// Writes `edit` (from [`revert_edit`]) into `doc`.
pub fn apply(doc: &mut Document, edit: &[(Field, Option<Value>)]) {
    for (field, value) in edit {
        match value {
            Some(v) => {
                doc.insert(field.doc_name().into(), v.clone());
            }
            None => {
                doc.shift_remove(field.doc_name());
            }
        }
    }
}

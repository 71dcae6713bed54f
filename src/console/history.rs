//! What the link page's history is read from (issue 35), apart from the
//! page's handler and the Revert handler that both use it, so neither
//! imports the other for it.

use crate::console::ConsoleState;
use crate::console::session::User;
use crate::link::history::History;
use crate::values::link_key::LinkKey;

/// What the link page's history section is made from.
pub enum Loaded {
    /// The kept entries and the revision they were read at (`None`: the
    /// link has no document, only history).
    Entries(History, Option<String>),
    Unreadable,
}

/// The link's history for its page. The revision is read before the
/// entries, so a write between the two makes the page's revert a 409
/// rather than a revert of a state the page did not show.
pub async fn load(_state: &ConsoleState, user: &User, key: &LinkKey) -> Loaded {
    let rev = match user.store.get(key).await {
        Ok(stored) => stored.map(|s| s.rev),
        Err(e) => {
            tracing::warn!(error = %e, %key, "console could not read a link's revision");
            return Loaded::Unreadable;
        }
    };
    match user.store.history(key).await {
        Ok(entries) => Loaded::Entries(History { entries }, rev),
        Err(e) => {
            tracing::warn!(error = %e, %key, "console could not read a link's history");
            Loaded::Unreadable
        }
    }
}

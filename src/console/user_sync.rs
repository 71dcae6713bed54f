//! Issue 35 (i35-users): the embedded store's sessions held to its users.
//! Sessions live in each node's memory, while users are changed by any
//! node or by `qrtag user` in another process; so every node reads the
//! users' roles and session counters once every [`EVERY`] (one small query)
//! and ends the sessions of a removed or reset user, or of one who logged
//! out everywhere, and gives the others their user's current role. A
//! change thus reaches every session on every node within [`EVERY`] plus
//! the query's time.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::ConsoleState;

/// How often the users are read.
pub const EVERY: Duration = Duration::from_secs(1);

/// Starts the task on the current runtime; it ends with the state. Nothing
/// to do for CouchDB's accounts, whose role is read at login.
pub fn keep_sessions_held(state: &Arc<ConsoleState>) {
    if state.accounts.password_db().is_none() {
        return;
    }
    let weak: Weak<ConsoleState> = Arc::downgrade(state);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(state) = weak.upgrade() else {
                return;
            };
            hold_once(&state).await;
        }
    });
}

/// One pass: read the users, hold the sessions to them. A failed read
/// changes nothing (a store away for a moment logs no one out).
pub async fn hold_once(state: &ConsoleState) {
    let Some(db) = state.accounts.password_db() else {
        return;
    };
    match db.session_marks().await {
        Ok(marks) => state.sessions.hold_to(&marks),
        Err(e) => tracing::warn!(error = %e, "console: could not read the users"),
    }
}

//! The call every surface makes to keep an audit entry (issue 35):
//! [`record`]. Recording never fails the action it records: a login that
//! succeeded stays logged in and a failed login stays a 401 when the store
//! cannot take the entry. The entry is lost then, which is said twice: a
//! warning in the server's log with the whole entry (so it is still on
//! record there), and `qrtag_audit_write_failures_total` on `/metrics`,
//! which an alert can watch. Refusing the action instead would let a store
//! outage lock every admin out of the console.

use std::sync::LazyLock;

use prometheus_client::metrics::counter::Counter;

use super::LinkStore;
use crate::values::actor::Actor;
use crate::values::audit::{AuditEntry, Event, Surface};

static FAILURES: LazyLock<Counter> = LazyLock::new(Counter::default);

/// The process's count of entries no store took (one counter shared by
/// every clone), for `/metrics`.
pub fn failures() -> Counter {
    FAILURES.clone()
}

/// Appends an entry stamped now; returns whether the store took it.
pub async fn record(store: &dyn LinkStore, actor: Actor, surface: Surface, event: Event) -> bool {
    let entry = AuditEntry::new(chrono::Utc::now(), actor, surface, event);
    match store.append_audit(&entry).await {
        Ok(()) => true,
        Err(e) => {
            FAILURES.inc();
            tracing::warn!(error = %e, entry = %entry.json_line(), "the audit log could not keep an entry");
            false
        }
    }
}

//! How qrtag writes an instant into a stored document (links, API keys):
//! RFC 3339 in UTC to the second, `2026-11-28T05:18:20Z`.

use chrono::{DateTime, Utc};

/// A time as qrtag writes it into a document: RFC 3339 UTC, whole seconds.
pub fn time_text(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

//! Tracking: the signed scanner cookie, its ID and secret, and what the
//! access log keeps of a client's address.

pub mod client_ip;
pub mod cookie;
pub mod id;
pub mod secret;

use std::path::PathBuf;

use cookie::CookieName;

/// Whether and how scans are tracked (`serve --no-tracking` leaves it out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackingSettings {
    pub cookie_name: CookieName,
    /// The secrets that sign and verify cookies (see
    /// [`secret`]); created on first use, shared by all nodes.
    pub secret_file: PathBuf,
}

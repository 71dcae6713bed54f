//! Values every layer shares: parsed once at the edge, valid by construction
//! (parse, don't validate). Nothing here imports a feature of qrtag.

pub mod actor;
pub mod api_key;
pub mod audit;
pub mod couch;
pub mod destination;
pub mod expiry;
// Issue 36: the domains the public listener answers for.
pub mod host;
pub mod link_key;
pub mod node_name;
pub mod public_url;
pub mod role;
pub mod secret;
pub mod short_id;
pub mod timestamp;
pub mod usage;
// Issue 35 (i35-users): accounts on the embedded store.
pub mod user_name;

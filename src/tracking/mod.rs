//! Tracking: the signed scanner cookie, its ID and secret, and what the
//! access log keeps of a client's address.

pub mod client_ip;
pub mod cookie;
pub mod id;
pub mod secret;

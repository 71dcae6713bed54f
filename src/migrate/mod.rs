//! Moving in from other shorteners (issue 37): each source's export or API
//! read into one shape ([`source`]), planned against the store (what is
//! created, what collides, what cannot come over and why), written, and
//! its visits kept as access-log lines.
//!
//! A source's module names the release of that project its format was read
//! from: formats change, and a failed import should say which one it expected.

pub mod plan;
pub mod report;
pub mod source;
pub mod sources;
pub mod visits;
pub mod yourls;
pub mod yourls_api;

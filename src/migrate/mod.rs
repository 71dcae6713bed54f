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

// Issue 37: the readers of Shlink, Kutt, Bitly, Dub and chhoto-url, and
// what they share (the CSV records, the HTTP shell).
pub mod api;
pub mod bitly;
pub mod bitly_csv;
pub mod chhoto;
pub mod csv_rows;
pub mod dub;
pub mod kutt;
pub mod shlink;
pub mod shlink_csv;
pub mod sources;
pub mod visits;
pub mod yourls;
pub mod yourls_api;

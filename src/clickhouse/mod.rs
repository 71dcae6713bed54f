//! ClickHouse as the scan store past one machine (issue 38): where the
//! server is (`url`), how qrtag speaks to it (`client`, its HTTP
//! interface), the schema qrtag owns (`schema`, pure) and the command
//! that makes and upgrades it (`setup`). Layer 2, beside `access_log`
//! and `stats`: it keeps scans, and answers no one itself.

pub mod busy;
pub mod client;
pub mod destinations;
pub mod link_page;
pub mod load;
pub mod read;
pub mod report;
pub mod roller;
pub mod rollup;
pub mod row;
pub mod rows;
pub mod schema;
pub mod setup;
pub mod shares;
pub mod sink;
pub mod sql;
pub mod url;
pub mod windows;

pub use client::{ClickHouseError, Client};
pub use url::ClickHouseUrl;

pub mod access_log;
pub mod stats;
pub mod tracking_id;

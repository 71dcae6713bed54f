pub mod access_log;
pub mod tracking_id;

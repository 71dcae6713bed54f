pub mod tracking_id;

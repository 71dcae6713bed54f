//! qrtag: a self-hosted QR-tag short-URL service.
//!
//! See ARCHITECTURE.md for the map. The pure core (IDs, keys, destinations,
//! the resolver and redirect policy) does no I/O; the server, stores and CLI
//! are thin shells around it.

pub mod access_log;
pub mod api_key;
pub mod cli;
pub mod client_ip;
pub mod config;
pub mod console;
pub mod destination;
pub mod didcomm;
pub mod expiry;
pub mod fd_budget;
pub mod file_size_limit;
pub mod health;
pub mod key_suggest;
pub mod link;
pub mod link_chain;
pub mod link_key;
pub mod links;
pub mod live_url;
pub mod metrics;
pub mod natural_order;
pub mod print;
pub mod qr;
pub mod qr_image;
pub mod recorded_url;
pub mod redirect_policy;
pub mod resolver;
pub mod scan_index;
pub mod server;
pub mod settings;
pub mod short_id;
pub mod snapshot;
pub mod startup;
pub mod stats;
pub mod store;
pub mod tracking_cookie;
pub mod tracking_id;
pub mod tracking_secret;
pub mod transfer;

//! qrtag: a self-hosted QR-tag short-URL service.
//!
//! See ARCHITECTURE.md for the map. The pure core (IDs, keys, destinations,
//! the resolver and redirect policy) does no I/O; the server, stores and CLI
//! are thin shells around it.

pub mod access_log;
pub mod acme;
pub mod cli;
pub mod clickhouse;
pub mod console;
pub mod didcomm;
pub mod link;
pub mod links;
pub mod metrics;
pub mod migrate;
pub mod print;
pub mod qr;
pub mod redirect;
pub mod scan_index;
pub mod server;
pub mod settings;
pub mod snapshot;
pub mod startup;
pub mod stats;
pub mod store;
pub mod tls;
pub mod tracking;
pub mod transfer;
pub mod values;

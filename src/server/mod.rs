//! The two HTTP listeners. Thin shells: the decisions are made by
//! [`redirect::policy`](crate::redirect::policy) and the snapshot.

pub mod accept;
pub mod admin;
pub mod api;
pub mod dead_tag;
pub mod etag;
pub mod header_value;
pub mod https_redirect;
pub mod limits;
pub mod own_answer;
pub mod public;
pub mod qr;
pub mod request_heads;
pub mod request_line;
pub mod rest;
pub mod scan_facts;
// Issue 36: one site per domain on the public listener.
pub mod sites;
pub mod waits;

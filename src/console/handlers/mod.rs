//! The console's request handlers, by page.

pub mod auth;
pub mod dashboard;
pub mod link;
pub mod links;
pub mod pdf;
pub mod setup;
pub mod sheet;

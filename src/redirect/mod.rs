//! The redirect path's pure decisions: resolving a short URL (the draft's
//! algorithm) and what a scan of a stored link answers.

pub mod policy;
pub mod resolver;

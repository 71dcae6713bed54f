//! TEMPORARY stub until the resolver branch lands.
#[derive(Debug, thiserror::Error)]
#[error("too many internal redirects")]
pub struct ResolveError;

//! TEMPORARY stub until the resolver branch lands.
use crate::resolver::ResolveError;
pub enum Decision {
    Redirect { location: String, key: String },
    NotFound,
    BadRequest(&'static str),
    Broken(ResolveError),
}
pub fn decide<'r>(
    _public_origin: &str,
    raw_path: &str,
    _raw_query: Option<&str>,
    lookup: impl Fn(&str) -> Option<&'r str>,
) -> Decision {
    let key = raw_path.trim_start_matches('/');
    match lookup(key) {
        Some(u) => Decision::Redirect {
            location: u.to_owned(),
            key: key.to_owned(),
        },
        None => Decision::NotFound,
    }
}
pub fn resolve_url_str(
    url: &str,
    _rules: &std::collections::HashMap<String, String>,
) -> Result<String, ResolveError> {
    Ok(url.to_owned())
}

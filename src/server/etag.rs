//! Entity tags for answers computed from a few inputs (a tag's image or
//! PDF): the tag is a digest of the inputs, so a revalidation is answered
//! `304` without rendering anything.
//!
//! With `Cache-Control: no-cache` a cache asks again on every use: a link
//! deleted since is a 404 at once, while an unchanged image costs a `304`.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};
use sha2::{Digest, Sha256};

/// Stored, but revalidated on every use.
pub const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache");

/// A strong tag for the answer `parts` determine (with this build: a new
/// release may render differently). Each part is length-prefixed, so no two
/// lists give the same bytes.
pub fn of(parts: &[&[u8]]) -> HeaderValue {
    let mut hash = Sha256::new();
    hash.update(env!("CARGO_PKG_VERSION").as_bytes());
    for part in parts {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    let digest = hash.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    // Hex digits between quotes: always a valid header value.
    HeaderValue::from_str(&format!("\"{hex}\"")).unwrap_or(HeaderValue::from_static("\"0\""))
}

/// Whether the request's `If-None-Match` names `tag` (or is `*`); weak
/// comparison, as RFC 9110 asks for `If-None-Match`.
pub fn matches(req: &HttpRequest, tag: &HeaderValue) -> bool {
    let Ok(tag) = tag.to_str() else {
        return false;
    };
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim())
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == tag)
}

/// `304 Not Modified` for `tag`, with the caching it was served with.
pub fn not_modified(tag: HeaderValue) -> HttpResponse {
    HttpResponse::NotModified()
        .insert_header((header::ETAG, tag))
        .insert_header((header::CACHE_CONTROL, NO_CACHE))
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    #[test]
    fn the_tag_follows_every_part_and_their_boundaries() {
        let a = of(&[b"ab", b"c"]);
        assert_eq!(a, of(&[b"ab", b"c"]));
        assert_ne!(a, of(&[b"a", b"bc"]));
        assert_ne!(a, of(&[b"ab", b"d"]));
    }

    #[test]
    fn if_none_match_lists_star_and_weak_tags_match() {
        let tag = of(&[b"x"]);
        let t = tag.to_str().expect("ascii").to_owned();
        let req = |v: &str| {
            TestRequest::default()
                .insert_header((header::IF_NONE_MATCH, v.to_owned()))
                .to_http_request()
        };
        assert!(matches(&req(&format!("\"a\", {t}")), &tag));
        assert!(matches(&req(&format!("W/{t}")), &tag));
        assert!(matches(&req("*"), &tag));
        assert!(!matches(&req("\"a\""), &tag));
        assert!(!matches(&TestRequest::default().to_http_request(), &tag));
    }
}

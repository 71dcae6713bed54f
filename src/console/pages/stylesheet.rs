//! The console's stylesheet, embedded in the binary (no file to deploy, no
//! build step), and the address pages link it by.
//!
//! The address carries a hash of the stylesheet's bytes, so a browser may
//! keep it for a long time and still never shows an upgraded console with
//! the stylesheet of the version before.

use actix_web::HttpResponse;
use actix_web::http::header;

use super::BASE;

const CSS: &str = include_str!("../../../assets/console/console.css");

/// FNV-1a, 64 bits: enough to tell two versions of one file apart, and a
/// `const fn`, so the hash is worked out at compile time.
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

const VERSION: u64 = fnv1a(CSS.as_bytes());

/// Where the stylesheet is served, under the console's scope.
pub const PATH: &str = "/assets/console.css";

/// The address pages link: the path and this stylesheet's version.
pub fn href() -> String {
    format!("{BASE}{PATH}?v={VERSION:016x}")
}

/// The stylesheet, whatever version the query names (an old page asking
/// after an upgrade gets the new one rather than a 404).
pub async fn serve() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "public, max-age=604800"))
        .body(CSS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_names_the_stylesheet_s_version() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(fnv1a(b"body{}"), fnv1a(b"body{ }"));
        let href = href();
        assert!(href.starts_with("/console/assets/console.css?v="), "{href}");
        assert_eq!(href.len(), "/console/assets/console.css?v=".len() + 16);
    }
}

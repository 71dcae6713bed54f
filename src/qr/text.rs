//! The exact text a tag encodes.

/// Builds `public_url + "/" + key`.
///
/// A trailing `/` on `public_url` is dropped so a configured
/// `https://0x1f.ie/` does not produce a double slash.
///
/// With `uppercase_prefix`, the scheme and host (with port) are written in
/// capitals. Both are case-insensitive (RFC 3986 §3.1, §3.2.2) and capitals
/// put them in the QR alphanumeric set, at 5.5 bits a character instead of 8,
/// often saving a whole version. Everything after the host keeps its case
/// because paths and keys are case-sensitive; so does userinfo, should a
/// public URL ever carry one. A public URL without `://` is left as is since
/// there is no reliable host to find.
pub fn short_url_text(public_url: &str, key: &str, uppercase_prefix: bool) -> String {
    let base = public_url.trim_end_matches('/');
    let mut out = String::with_capacity(base.len() + 1 + key.len());
    match base.find("://").filter(|_| uppercase_prefix) {
        Some(scheme_end) => {
            let authority_start = scheme_end + 3;
            let authority_end = base[authority_start..]
                .find(['/', '?', '#'])
                .map_or(base.len(), |i| authority_start + i);
            let authority = &base[authority_start..authority_end];
            let host_start = authority.rfind('@').map_or(0, |at| at + 1);
            out.push_str(&base[..authority_start].to_ascii_uppercase());
            out.push_str(&authority[..host_start]);
            out.push_str(&authority[host_start..].to_ascii_uppercase());
            out.push_str(&base[authority_end..]);
        }
        None => out.push_str(base),
    }
    out.push('/');
    out.push_str(key);
    out
}

#[cfg(test)]
mod tests {
    use super::short_url_text;

    #[test]
    fn plain_text_is_url_slash_key() {
        assert_eq!(
            short_url_text("https://0x1f.ie", "H83if", false),
            "https://0x1f.ie/H83if"
        );
        assert_eq!(
            short_url_text("https://0x1f.ie/", "H83if", false),
            "https://0x1f.ie/H83if"
        );
    }

    #[test]
    fn uppercase_touches_only_scheme_and_host() {
        assert_eq!(
            short_url_text("http://0x1f.ie", "H83if", true),
            "HTTP://0X1F.IE/H83if"
        );
        assert_eq!(
            short_url_text("http://localhost:8080", "ab-c/d_e", true),
            "HTTP://LOCALHOST:8080/ab-c/d_e"
        );
        assert_eq!(
            short_url_text("https://example.org/qr/Tags/", "x1", true),
            "HTTPS://EXAMPLE.ORG/qr/Tags/x1"
        );
        assert_eq!(
            short_url_text("https://us:Pw@example.org", "k", true),
            "HTTPS://us:Pw@EXAMPLE.ORG/k"
        );
        assert_eq!(short_url_text("example.org", "k", true), "example.org/k");
    }
}

//! The referrer host of a scan: where the scanner came from. A camera app
//! sends no `Referer`, so most scans read "none".

use std::borrow::Cow;

use crate::access_log::format::decode_lossy;

/// A request without a `Referer`.
pub const NONE: &str = "none";

/// A `Referer` that names no host (not a URL, or a URL without a host).
pub const UNREADABLE: &str = "unreadable";

/// The host of a logged (strict-encoded) `Referer` field, lower-case, with
/// its port if it has one; `None` (absent) reads [`NONE`].
pub fn host(referer: Option<&str>) -> Cow<'static, str> {
    let Some(field) = referer else {
        return Cow::Borrowed(NONE);
    };
    let decoded = decode_lossy(field);
    match url::Url::parse(decoded.trim()) {
        Ok(url) => match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => Cow::Owned(format!("{host}:{port}")),
            (Some(host), None) if !host.is_empty() => Cow::Owned(host.to_owned()),
            _ => Cow::Borrowed(UNREADABLE),
        },
        Err(_) => Cow::Borrowed(UNREADABLE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        assert_eq!(host(None), NONE);
        assert_eq!(
            host(Some("https%3A%2F%2Fwww.Example.com%2Fposter%3Fa%3D1")),
            "www.example.com"
        );
        assert_eq!(
            host(Some("http%3A%2F%2Fl.facebook.com%3A8080%2F")),
            "l.facebook.com:8080"
        );
        assert_eq!(
            host(Some("android-app%3A%2F%2Fcom.google.android.gm%2F")),
            "com.google.android.gm"
        );
        assert_eq!(host(Some("not%20a%20url")), UNREADABLE);
        assert_eq!(host(Some("about%3Ablank")), UNREADABLE);
    }
}

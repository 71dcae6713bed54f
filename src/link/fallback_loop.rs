//! A fallback that would send a dead link's scans back to itself (issue
//! 33): one on the public origin whose path is the link's own key, or a
//! path below it (the resolver matches the longest key that is a prefix, so
//! `/gig/x` comes back to `gig`). While the link is dead every scan would
//! be redirected to itself, for ever; so every surface that sets a
//! fallback refuses one, knowing the key and the public origin.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

use crate::values::destination::Destination;

/// Why a fallback is refused: the phrase each surface puts after its own
/// field name (`--fallback`, `fallback_url`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{fallback} is the link {key}'s own short URL: its scans would come back to it while it is disabled or expired"
)]
pub struct FallbackLoops {
    pub fallback: String,
    pub key: String,
}

/// Refuses `fallback` for the link `key` when it is on `public_origin` (an
/// ASCII origin without a trailing slash, as `PublicUrl::origin` gives) at
/// the key or below it; a query or fragment does not change where the
/// resolver sends it.
pub fn check(fallback: &Destination, key: &str, public_origin: &str) -> Result<(), FallbackLoops> {
    let on_origin = fallback
        .as_str()
        .strip_prefix(public_origin)
        .filter(|rest| rest.starts_with('/'));
    let Some(rest) = on_origin else {
        return Ok(());
    };
    let path = rest[1..].split(['?', '#']).next().unwrap_or_default();
    let path: Cow<'_, str> = percent_decode_str(path).decode_utf8_lossy();
    let below = path
        .strip_prefix(key)
        .is_some_and(|after| after.is_empty() || after.starts_with('/'));
    if below {
        Err(FallbackLoops {
            fallback: fallback.as_str().to_owned(),
            key: key.to_owned(),
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Destination {
        Destination::parse_absolute(s).expect("a destination")
    }

    #[test]
    fn the_own_key_and_below_it_are_refused() {
        let origin = "https://0x1f.ie";
        for bad in [
            "https://0x1f.ie/gig",
            "https://0x1f.ie/gig?x=1",
            "https://0x1f.ie/gig#top",
            "https://0x1f.ie/gig/later",
            "https://0x1f.ie/%67ig",
            "https://0X1F.IE/gig",
        ] {
            assert!(check(&d(bad), "gig", origin).is_err(), "{bad}");
        }
        for good in [
            "https://0x1f.ie/gig2",
            "https://0x1f.ie/other",
            "https://0x1f.ie/",
            "https://venue.example/gig",
            "http://0x1f.ie/gig",
            "https://0x1f.ie:8443/gig",
        ] {
            assert_eq!(check(&d(good), "gig", origin), Ok(()), "{good}");
        }
    }
}

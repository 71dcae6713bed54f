//! What the redirector answers, on top of the draft's algorithm.
//!
//! The draft resolves any URL, including ones that should never become a
//! `Location`: the request itself when nothing matched, other origins reached
//! through origin-relative values, paths with dot segments. Keeping this
//! policy pure keeps it testable apart from actix.

use std::collections::HashMap;

use url::{Position, Url};

use crate::redirect::resolver::{self, Parts, RequestParts, ResolveError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Redirect {
        location: String,
        /// First-iteration key: the shortlink the client actually asked for,
        /// not a key reached through internal redirects.
        key: String,
    },
    NotFound,
    BadRequest(&'static str),
    /// The ruleset cannot resolve this request (redirect loop, invalid rule,
    /// unparsable result). Answer like `NotFound` so clients learn nothing
    /// about the ruleset, but log it: an operator has to fix a rule.
    Broken(ResolveError),
}

/// Decides the response for a request path (raw, percent-encoded, as
/// received) and query string (without `?`).
///
/// `public_origin` must be the ASCII serialization of the service's origin
/// (e.g. `https://0x1f.ie`, no trailing slash): it is compared verbatim, so
/// a mismatch fails closed (internal redirects turn into `NotFound`).
pub fn decide<'r>(
    public_origin: &str,
    raw_path: &str,
    raw_query: Option<&str>,
    lookup: impl Fn(&str) -> Option<&'r str>,
) -> Decision {
    if let Err(reason) = check_path(raw_path) {
        return Decision::BadRequest(reason);
    }
    if raw_query.is_some_and(|q| q.bytes().filter(|&b| b == b'&').count() >= MAX_QUERY_PARAMS) {
        return Decision::BadRequest("request query has too many parameters");
    }
    let parts = Parts {
        origin: public_origin,
        own_origin_internal: true,
        pathname: raw_path,
        query: raw_query.unwrap_or(""),
        // Browsers never send the fragment.
        fragment: "",
    };
    let walk = match resolver::walk(&parts, lookup) {
        Ok(walk) => walk,
        Err(error) => return Decision::Broken(error),
    };
    // Nothing matched the request itself: the draft would "resolve" to the
    // request URL, which as a redirect would only loop back here.
    if walk.first_key.is_none() {
        return Decision::NotFound;
    }
    let resolution = match walk.finish(&parts) {
        Ok(resolution) => resolution,
        Err(error) => return Decision::Broken(error),
    };
    let Some(key) = resolution.first_key else {
        return Decision::NotFound;
    };
    // Only an absolute rule is a deliberate choice of another origin; a
    // foreign origin reached otherwise came from `//host` or `/\host` text
    // in the request or a value, i.e. an open redirect.
    if !resolution.absolute && !resolver::is_on_origin(&resolution.url, public_origin) {
        return Decision::NotFound;
    }
    Decision::Redirect {
        location: resolution.url.into(),
        key,
    }
}

/// What [`decide`] answers for a request of exactly `/KEY` (no query) when
/// `key` holds the absolute destination `value`. Such a request matches
/// `key` in the first iteration and stops there, so no other link takes part
/// and the answer can be computed once, when the link is loaded, by the very
/// same function. `None` if that answer is not a redirect.
///
/// The public origin is not known here (the table is built without it), so
/// a value on that origin gets the answer as if it were not; the caller
/// drops such an answer with [`is_on_public_origin`].
pub fn direct_location(key: &str, value: &str) -> Option<String> {
    // A valid key (whose `/KEY` path passes `check_path`) and a value
    // already in its parser's form: the answer is the value itself, without
    // parsing it twice (a full load does this for every link; issue 24).
    // The property test `direct_location_shortcut_is_the_full_answer`
    // holds this to the full computation below.
    if is_plain_key(key) && crate::values::destination::is_plain_absolute(value) {
        return Some(value.to_owned());
    }
    direct_location_in_full(key, value)
}

/// Issue 34: [`direct_location`]'s shortcut alone, borrowing: `value`
/// itself when `key` and `value` are plain (what [`decide`] answers for
/// `/KEY`, property-tested there), else `None` (ask [`decide`]). For a
/// destination chosen per scan by a link's rules, which has no precomputed
/// answer.
pub fn plain_direct_location<'v>(key: &str, value: &'v str) -> Option<&'v str> {
    (is_plain_key(key) && crate::values::destination::is_plain_absolute(value)).then_some(value)
}

/// Issue 34: [`plain_direct_location`] for a key found in the snapshot
/// (valid, as every key there is) and a value whose plainness was judged
/// when its link was loaded ([`crate::link::rules::Rules::is_plain`]), so a
/// scan judges neither again.
pub fn judged_direct_location<'v>(
    table_key: &str,
    value: &'v str,
    value_is_plain: bool,
) -> Option<&'v str> {
    (value_is_plain && direct_is_value(table_key)).then_some(value)
}

/// A link key whose `/KEY` request [`check_path`] lets through.
fn is_plain_key(key: &str) -> bool {
    crate::values::link_key::LinkKey::is_valid(key) && direct_is_value(key)
}

/// For a key already known valid ([`crate::values::link_key::LinkKey::is_valid`])
/// and a value already known plain ([`crate::values::destination::is_plain_absolute`]):
/// whether [`direct_location`] answers the value itself. A load that has
/// judged both (every link, once) asks this instead of judging them again
/// (issue 24); `false` only sends the caller to [`direct_location`].
pub(crate) fn direct_is_value(valid_key: &str) -> bool {
    valid_key.bytes().filter(|&b| b == b'/').count() < MAX_PATH_SEGMENTS
}

/// [`direct_location`] without its shortcut.
fn direct_location_in_full(key: &str, value: &str) -> Option<String> {
    let path = format!("/{key}");
    // The origin plays no part for an absolute rule.
    match decide("http://direct.invalid", &path, None, |k| {
        (k == key).then_some(value)
    }) {
        Decision::Redirect { location, .. } => Some(location),
        _ => None,
    }
}

/// The most `/`-separated segments a request path may have. A printed
/// short URL has a few; the longest-prefix match looks a key up per
/// segment, so a path of 30,000 segments cost 46 ms (issue 19, item 3).
pub const MAX_PATH_SEGMENTS: usize = 128;

/// The most query parameters a request may carry (each is merged into the
/// destination's query).
pub const MAX_QUERY_PARAMS: usize = 256;
/// Whether `location`, a `Location` [`decide`] or [`direct_location`] gave
/// (a serialised URL, so in normal form), is on `public_origin`. Such a
/// destination is one of the service's own URLs, which [`decide`] follows
/// as an internal redirect: the answer precomputed without the origin then
/// does not hold, and the request must go through [`decide`].
pub fn is_on_public_origin(location: &str, public_origin: &str) -> bool {
    location
        .strip_prefix(public_origin)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// Rejects paths whose meaning would change when the resolved URL is parsed:
/// dot segments would climb out of the destination path the rule chose.
/// Also paths of more segments than any link needs.
fn check_path(raw_path: &str) -> Result<(), &'static str> {
    if !raw_path.starts_with('/') {
        return Err("request path must start with '/'");
    }
    if raw_path.bytes().filter(|&b| b == b'/').count() > MAX_PATH_SEGMENTS {
        return Err("request path has too many segments");
    }
    // The URL parser strips tabs and newlines and trims spaces and controls
    // at the end, which could turn e.g. ".\t." into a dot segment; such
    // bytes are not valid in an HTTP request target anyway.
    if raw_path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err("request path contains whitespace or control characters");
    }
    // '\' separates segments too in http(s) URLs. So do '?' and '#' here:
    // the resolver splits the last of each off the path and leaves any
    // others to end the path of the resolved URL, so "/k/..?a" and
    // "/k/..?a?b" would climb like "/k/..". (The HTTP layer passes neither
    // character in a path, but `decide` takes any raw path.)
    if raw_path.split(['/', '\\', '?', '#']).any(is_dot_segment) {
        return Err("request path contains a dot segment");
    }
    Ok(())
}

/// `.` or `..`, each dot possibly written `%2e` / `%2E`, as the URL
/// standard recognizes them.
fn is_dot_segment(segment: &str) -> bool {
    fn dot(s: &[u8]) -> bool {
        s == b"." || s.eq_ignore_ascii_case(b"%2e")
    }
    let s = segment.as_bytes();
    if dot(s) {
        return true;
    }
    [1, 3]
        .iter()
        .any(|&split| s.len() > split && dot(&s[..split]) && dot(&s[split..]))
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveUrlError {
    #[error("invalid URL {input:?}: {source}")]
    Parse {
        input: String,
        #[source]
        source: url::ParseError,
    },
    #[error(transparent)]
    Resolve(#[from] ResolveError),
}

/// The bare algorithm for `qrtag resolve --rules rules.json URL...`: unlike
/// `decide`, it shows what the draft yields, including no-match results and
/// foreign origins, which is what one wants when debugging a ruleset.
pub fn resolve_url_str(
    url: &str,
    rules: &HashMap<String, String>,
) -> Result<String, ResolveUrlError> {
    let parsed = Url::parse(url).map_err(|source| ResolveUrlError::Parse {
        input: url.to_owned(),
        source,
    })?;
    let origin = parsed.origin().ascii_serialization();
    let req = RequestParts {
        origin: &origin,
        pathname: parsed.path(),
        search: &parsed[Position::AfterPath..Position::AfterQuery],
        hash: &parsed[Position::AfterQuery..],
    };
    let resolution = resolver::resolve(&req, |key| rules.get(key).map(String::as_str))?;
    Ok(resolution.url.into())
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;

    const ORIGIN: &str = "https://0x1f.ie";

    fn ruleset(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn paths_and_queries_past_the_caps_are_refused_and_at_them_answered() {
        let rules = [("docs", "https://docs.example/")];
        let at_cap = format!("/docs{}", "/a".repeat(MAX_PATH_SEGMENTS - 1));
        assert!(matches!(
            decide_with(&rules, &at_cap, None),
            Decision::Redirect { .. }
        ));
        let over = format!("{at_cap}/a");
        assert_eq!(
            decide_with(&rules, &over, None),
            Decision::BadRequest("request path has too many segments")
        );
        let query = vec!["a=1"; MAX_QUERY_PARAMS].join("&");
        assert!(matches!(
            decide_with(&rules, "/docs", Some(&query)),
            Decision::Redirect { .. }
        ));
        let query = format!("{query}&b=2");
        assert_eq!(
            decide_with(&rules, "/docs", Some(&query)),
            Decision::BadRequest("request query has too many parameters")
        );
    }

    fn decide_with(pairs: &[(&str, &str)], path: &str, query: Option<&str>) -> Decision {
        let rules = ruleset(pairs);
        decide(ORIGIN, path, query, |k| rules.get(k).map(String::as_str))
    }

    fn redirect(location: &str, key: &str) -> Decision {
        Decision::Redirect {
            location: location.into(),
            key: key.into(),
        }
    }

    const WHELANS: (&str, &str) = ("H83if", "http://innerfunction.com/wp/whelans/?p=14");

    #[test]
    fn known_key_redirects_to_its_url() {
        assert_eq!(
            decide_with(&[WHELANS], "/H83if", None),
            redirect("http://innerfunction.com/wp/whelans/?p=14", "H83if")
        );
    }

    #[test]
    fn unknown_key_is_not_found_never_a_redirect_to_itself() {
        assert_eq!(decide_with(&[WHELANS], "/H83iF", None), Decision::NotFound);
        assert_eq!(
            decide_with(&[], "/anything/at/all", Some("a=1")),
            Decision::NotFound
        );
    }

    #[test]
    fn keys_are_not_percent_decoded() {
        assert_eq!(
            decide_with(&[WHELANS], "/H83%69f", None),
            Decision::NotFound
        );
    }

    #[test]
    fn inactive_links_are_absent() {
        // The storage layer maps `inactive: true` to `None`.
        let rules = ruleset(&[WHELANS]);
        let inactive = |_: &str| -> Option<&str> { None };
        assert_eq!(decide(ORIGIN, "/H83if", None, inactive), Decision::NotFound);
        let only_active = |k: &str| {
            (k != "H83if")
                .then(|| rules.get(k).map(String::as_str))
                .flatten()
        };
        assert_eq!(
            decide(ORIGIN, "/H83if/x", None, only_active),
            Decision::NotFound
        );
    }

    #[test]
    fn inactive_link_inside_a_chain_falls_back_to_own_origin() {
        let rules = ruleset(&[("a", "/b/c"), WHELANS]);
        let lookup = |k: &str| {
            (k != "b")
                .then(|| rules.get(k).map(String::as_str))
                .flatten()
        };
        assert_eq!(
            decide(ORIGIN, "/a/d", None, lookup),
            redirect("https://0x1f.ie/b/c/d", "a")
        );
    }

    #[test]
    fn root_without_empty_key_is_not_found() {
        assert_eq!(decide_with(&[WHELANS], "/", None), Decision::NotFound);
    }

    #[test]
    fn root_with_empty_key_redirects() {
        let rules = [("", "https://home.example/welcome")];
        assert_eq!(
            decide_with(&rules, "/", Some("src=qr")),
            redirect("https://home.example/welcome?src=qr", "")
        );
        // The empty key does not swallow ordinary paths.
        assert_eq!(decide_with(&rules, "/H83if", None), Decision::NotFound);
    }

    #[test]
    fn path_appending_and_query_merge_through_decide() {
        let rules = [("H83if", "https://d.example/base?ref=qr&x=1")];
        assert_eq!(
            decide_with(&rules, "/H83if/more/path%20x", Some("x=2&y=~&ref=qr")),
            redirect(
                "https://d.example/base/more/path%20x?ref=qr&x=2&y=%7E",
                "H83if"
            )
        );
    }

    #[test]
    fn query_is_taken_verbatim_without_its_question_mark() {
        let rules = [("k", "https://d.example/")];
        assert_eq!(
            decide_with(&rules, "/k", Some("?a=1")),
            redirect("https://d.example/?%3Fa=1", "k")
        );
        assert_eq!(
            decide_with(&rules, "/k", Some("")),
            decide_with(&rules, "/k", None)
        );
    }

    #[test]
    fn internal_redirect_within_own_origin_redirects() {
        let rules = [("a", "/landing/page")];
        assert_eq!(
            decide_with(&rules, "/a/x", Some("q=1")),
            redirect("https://0x1f.ie/landing/page/x?q=1", "a")
        );
        let rules = ruleset(&[("a", "/b")]);
        assert_eq!(
            decide("http://localhost:8080", "/a", None, |k| rules
                .get(k)
                .map(String::as_str)),
            redirect("http://localhost:8080/b", "a")
        );
    }

    #[test]
    fn internal_redirect_reports_the_first_key() {
        let rules = [("a", "/b"), ("b", "https://d.example/")];
        assert_eq!(
            decide_with(&rules, "/a", None),
            redirect("https://d.example/", "a")
        );
    }

    #[test]
    fn leftover_question_mark_in_an_internal_value_is_query_on_own_origin() {
        // Issue #8: the reference keeps "a=1" as the lowest-ranked query.
        let rules = [("k", "/docs?a=1?b=2")];
        assert_eq!(
            decide_with(&rules, "/k", Some("c=3")),
            redirect("https://0x1f.ie/docs?a=1&b=2&c=3", "k")
        );
    }

    #[test]
    fn absolute_rules_may_leave_the_origin() {
        let rules = [("k", "https://other.example/")];
        assert_eq!(
            decide_with(&rules, "/k//evil.example/x", None),
            redirect("https://other.example//evil.example/x", "k")
        );
    }

    // --- open redirects ------------------------------------------------------

    #[test]
    fn scheme_relative_request_path_is_not_an_open_redirect() {
        // "//evil.example/x" reaches the empty key through prefix matching.
        assert_eq!(
            decide_with(&[], "//evil.example/x", None),
            Decision::NotFound
        );
        let rules = [("", "/")];
        assert!(matches!(
            decide_with(&rules, "//evil.example/x", None),
            Decision::NotFound | Decision::Broken(_)
        ));
        let rules = [("k", "/")];
        assert_eq!(
            decide_with(&rules, "/k//evil.example/x", None),
            Decision::NotFound
        );
        assert_eq!(
            decide_with(&rules, "/k/\\evil.example/x", None),
            Decision::NotFound
        );
        // "///" trips a url crate bug (EmptyHost), still no redirect.
        assert!(matches!(
            decide_with(&rules, "/k///evil.example/x", None),
            Decision::Broken(ResolveError::InvalidUrl { .. })
        ));
    }

    #[test]
    fn scheme_relative_rule_value_is_not_an_open_redirect() {
        for value in [
            "//evil.example",
            "//evil.example/x?y#z",
            "/\\evil.example",
            "//user@evil.example",
        ] {
            assert_eq!(
                decide_with(&[("a", value)], "/a", None),
                Decision::NotFound,
                "{value}"
            );
        }
        // Reached after several hops, too.
        let rules = [("a", "/b"), ("b", "//evil.example")];
        assert_eq!(decide_with(&rules, "/a", None), Decision::NotFound);
    }

    #[test]
    fn leftover_markers_do_not_open_a_redirect() {
        // The value's path is "/" once its leftover query or fragment is cut
        // off, so the remaining "//evil.example/x" is joined to it exactly
        // as it would be to the value "/": a foreign origin, refused.
        for value in ["/?x?y", "/#x#y", "/?x#y#z"] {
            assert_eq!(
                decide_with(&[("k", value)], "/k//evil.example/x", None),
                Decision::NotFound,
                "{value}"
            );
        }
        // An absolute rule after a hop keeps its host whatever follows.
        let rules = [("a", "/k//evil.example#x#y"), ("k", "https://d.example/")];
        assert_eq!(
            decide_with(&rules, "/a", None),
            redirect("https://d.example//evil.example#x#y", "a")
        );
    }

    #[test]
    fn other_scheme_or_port_on_own_host_is_foreign() {
        let url = Url::parse("http://0x1f.ie/x").unwrap();
        assert!(!resolver::is_on_origin(&url, ORIGIN));
        let url = Url::parse("https://0x1f.ie:8443/x").unwrap();
        assert!(!resolver::is_on_origin(&url, ORIGIN));
        let url = Url::parse("https://0x1f.ie.evil.example/x").unwrap();
        assert!(!resolver::is_on_origin(&url, ORIGIN));
        let url = Url::parse("https://u@0x1f.ie/x").unwrap();
        assert!(!resolver::is_on_origin(&url, ORIGIN));
        let url = Url::parse("https://0x1f.ie:443/x").unwrap();
        assert!(resolver::is_on_origin(&url, ORIGIN));
    }

    #[test]
    fn a_destination_on_the_public_origin_is_an_internal_redirect() {
        // Its own short URL: a loop the resolver sees, not a 302 to itself.
        for value in ["https://0x1f.ie/selfie", "https://0x1f.ie:443/selfie?x=1"] {
            assert_eq!(
                decide_with(&[("selfie", value)], "/selfie", None),
                Decision::Broken(ResolveError::TooManyInternalRedirects),
                "{value}"
            );
        }
        // A chain through short URLs ends at the off-site destination.
        let rules = [
            ("a", "https://0x1f.ie/b/x?q=1"),
            ("b", "https://d.example/base"),
        ];
        assert_eq!(
            decide_with(&rules, "/a/y", None),
            redirect("https://d.example/base/x/y?q=1", "a")
        );
        // Another scheme or port is another origin: an ordinary redirect.
        for value in ["http://0x1f.ie/a", "https://0x1f.ie:8443/a"] {
            assert_eq!(
                decide_with(&[("a", value)], "/a", None),
                redirect(value, "a"),
                "{value}"
            );
        }
        // Nothing matches on the own origin: a redirect there, as for "/c".
        assert_eq!(
            decide_with(&[("a", "https://0x1f.ie/c")], "/a", None),
            redirect("https://0x1f.ie/c", "a")
        );
    }

    #[test]
    fn the_precomputed_answer_is_dropped_on_the_public_origin() {
        assert!(is_on_public_origin("https://0x1f.ie/a", ORIGIN));
        assert!(is_on_public_origin("https://0x1f.ie/", ORIGIN));
        assert!(!is_on_public_origin(
            "https://0x1f.ie.evil.example/",
            ORIGIN
        ));
        assert!(!is_on_public_origin("https://0x1f.ie:8443/", ORIGIN));
        assert!(!is_on_public_origin("http://0x1f.ie/", ORIGIN));
        let location = direct_location("a", "https://0x1f.ie:443/a").expect("a redirect");
        assert!(is_on_public_origin(&location, ORIGIN), "{location}");
    }

    // --- bad requests ----------------------------------------------------------

    #[test]
    fn dot_segments_in_any_spelling_are_bad_requests() {
        for path in [
            "/a/./b",
            "/a/../b",
            "/a/%2e%2E/b",
            "/a/%2E",
            "/a/.%2e",
            "/a/%2e.",
            "/..",
            "/.",
            "/H83if/..",
            "/a\\..\\b",
            // A '?' or '#' left in the path ends it in the resolved URL.
            "/H83if/..?x?y",
            "/H83if/%2e#x#y",
            "/H83if/..?x",
        ] {
            assert_eq!(
                decide_with(&[WHELANS], path, None),
                Decision::BadRequest("request path contains a dot segment"),
                "{path}"
            );
        }
    }

    #[test]
    fn dot_lookalikes_are_ordinary_segments() {
        for path in [
            "/a/.../b",
            "/a/.b",
            "/a/b.",
            "/%2e%2e%2e",
            "/%252e",
            "/%2e%2",
            "/.%2",
        ] {
            assert_eq!(decide_with(&[], path, None), Decision::NotFound, "{path}");
        }
        assert_eq!(
            decide_with(&[("k", "https://d.example/")], "/k/.well-known", None),
            redirect("https://d.example/.well-known", "k")
        );
    }

    #[test]
    fn malformed_paths_are_bad_requests() {
        for path in ["", "H83if", "/a\tb", "/a b", "/a\n", "/x/.\t./y", "/\u{7f}"] {
            assert!(
                matches!(decide_with(&[WHELANS], path, None), Decision::BadRequest(_)),
                "{path:?}"
            );
        }
    }

    // --- broken rulesets ----------------------------------------------------

    #[test]
    fn loops_and_invalid_rules_are_broken() {
        assert_eq!(
            decide_with(&[("a", "/b"), ("b", "/a")], "/a", None),
            Decision::Broken(ResolveError::TooManyInternalRedirects)
        );
        assert_eq!(
            decide_with(&[("a", "ftp://files.example/")], "/a", None),
            Decision::Broken(ResolveError::InvalidRule {
                key: "a".into(),
                value: "ftp://files.example/".into()
            })
        );
    }

    // --- CLI helper ---------------------------------------------------------------

    #[test]
    fn resolve_url_str_runs_the_bare_algorithm() {
        let rules = ruleset(&[("github", "https://github.com"), ("a%20b", "/spaced")]);
        assert_eq!(
            resolve_url_str("https://example.com/github/ietf/guidelines#x", &rules).unwrap(),
            "https://github.com/ietf/guidelines#x"
        );
        // The pathname is the serialized (percent-encoded) path.
        assert_eq!(
            resolve_url_str("https://example.com/a b/c", &rules).unwrap(),
            "https://example.com/spaced/c"
        );
        // No match is not an error here: the draft returns the request.
        assert_eq!(
            resolve_url_str("https://example.com/colors?z=1", &rules).unwrap(),
            "https://example.com/colors?z=1"
        );
    }

    #[test]
    fn resolve_url_str_reports_parse_and_resolve_errors() {
        let rules = ruleset(&[("a", "/a")]);
        assert!(matches!(
            resolve_url_str("/relative", &rules),
            Err(ResolveUrlError::Parse { .. })
        ));
        let err = resolve_url_str("https://example.com/a", &rules).unwrap_err();
        assert_eq!(
            err,
            ResolveUrlError::Resolve(ResolveError::TooManyInternalRedirects)
        );
        assert_eq!(err.to_string(), "too many internal redirects");
    }

    // --- properties ---------------------------------------------------------------

    fn internal_values() -> impl Strategy<Value = String> {
        "/[ab/\\\\?#.%é]{0,8}"
    }

    proptest! {
        #[test]
        fn decide_never_panics_and_locations_parse(
            rules in prop::collection::hash_map(
                "[ab/?#.%é]{0,4}",
                prop_oneof!["/[ab/\\\\?#.%é]{0,8}", "https?://[a-z]{1,5}[ab/?#.%é]{0,6}", any::<String>()],
                0..8,
            ),
            path in prop_oneof!["/[ab/\\\\?#.%é2eE]{0,10}", any::<String>()],
            query in proptest::option::of(any::<String>()),
        ) {
            let decision = decide(ORIGIN, &path, query.as_deref(), |k| rules.get(k).map(String::as_str));
            if let Decision::Redirect { location, key } = decision {
                let url = Url::parse(&location).expect("locations parse");
                prop_assert!(matches!(url.scheme(), "http" | "https"));
                prop_assert!(path[1..].starts_with(key.as_str()));
            }
        }

        /// A value on the public origin decides exactly like its path
        /// written as an internal value, whichever links are spelled so.
        #[test]
        fn own_origin_values_decide_like_their_paths(
            rules in prop::collection::hash_map(
                "[ab/]{0,4}",
                ("/[ab/?#]{0,8}", any::<bool>()),
                0..8,
            ),
            path in "/[ab/?#]{0,10}",
            query in proptest::option::of("[ab=&]{0,4}"),
        ) {
            let as_paths: HashMap<String, String> =
                rules.iter().map(|(k, (v, _))| (k.clone(), v.clone())).collect();
            let mixed: HashMap<String, String> = rules
                .iter()
                .map(|(k, (v, own))| (k.clone(), if *own { format!("{ORIGIN}{v}") } else { v.clone() }))
                .collect();
            prop_assert_eq!(
                decide(ORIGIN, &path, query.as_deref(), |k| mixed.get(k).map(String::as_str)),
                decide(ORIGIN, &path, query.as_deref(), |k| as_paths.get(k).map(String::as_str))
            );
        }

        #[test]
        fn origin_relative_rules_never_leave_the_origin(
            rules in prop::collection::hash_map("[ab/.%é]{0,4}", internal_values(), 0..8),
            path in "/[ab/\\\\?#.%é]{0,12}",
            query in proptest::option::of("[ab=&%/?#]{0,6}"),
        ) {
            let decision = decide(ORIGIN, &path, query.as_deref(), |k| rules.get(k).map(String::as_str));
            if let Decision::Redirect { location, .. } = decision {
                let url = Url::parse(&location).expect("locations parse");
                prop_assert_eq!(url.origin().ascii_serialization(), ORIGIN);
            }
        }
    }

    /// Pieces of URLs on both sides of the shortcut's line: plain bytes,
    /// and every spelling the URL parser rewrites or a check refuses.
    pub(crate) fn url_near_plain() -> impl Strategy<Value = String> {
        let scheme = prop_oneof![
            8 => Just("https://"),
            4 => Just("http://"),
            1 => Just("HTTPS://"),
            1 => Just("ftp://"),
            1 => Just("https:/"),
            1 => Just(""),
        ];
        let host_piece = prop_oneof![
            30 => "[a-z]{1,4}",
            6 => "[a-z0-9-]{1,4}\\.[a-z0-9-]{1,4}",
            1 => Just(".".to_owned()),
            1 => Just("xn--".to_owned()),
            1 => Just("xn--bcher-kva".to_owned()),
            1 => Just("0x1f".to_owned()),
            1 => Just("1.2.3.4".to_owned()),
            1 => Just("B".to_owned()),
            1 => Just("\u{e9}".to_owned()),
            1 => Just("_".to_owned()),
            1 => Just("direct.invalid".to_owned()),
            1 => Just("%41".to_owned()),
            1 => Just("[::1]".to_owned()),
            1 => Just("u@".to_owned()),
            1 => Just(":80".to_owned()),
            1 => Just(":443".to_owned()),
            1 => Just(":".to_owned()),
        ];
        let path_piece = prop_oneof![
            60 => "/[a-zA-Z0-9._~:@!$&'()*+,;=%-]{0,6}",
            1 => Just("/".to_owned()),
            1 => Just("/.".to_owned()),
            1 => Just("/..".to_owned()),
            1 => Just("/%2e".to_owned()),
            1 => Just("/.%2E".to_owned()),
            1 => Just("%".to_owned()),
            1 => Just("%41".to_owned()),
            1 => Just("%zz".to_owned()),
            1 => Just(" ".to_owned()),
            1 => Just("\"".to_owned()),
            1 => Just("<".to_owned()),
            1 => Just("`".to_owned()),
            1 => Just("{".to_owned()),
            1 => Just("|".to_owned()),
            1 => Just("^".to_owned()),
            1 => Just("[".to_owned()),
            1 => Just("\\".to_owned()),
            1 => Just("\u{e9}".to_owned()),
            1 => Just("\u{202e}".to_owned()),
            1 => Just("\t".to_owned()),
            1 => Just("#f".to_owned()),
            1 => Just("?".to_owned()),
        ];
        let query = prop_oneof![
            8 => "[a-zA-Z0-9*._=+&-]{0,12}",
            8 => "[a-z]{1,3}=[a-z0-9+*._-]{0,4}(&[a-z]{1,3}=[a-z0-9]{0,3}){0,2}",
            1 => Just("a=%20".to_owned()),
            1 => Just("a='".to_owned()),
            1 => Just("a=\u{e9}".to_owned()),
            1 => Just("a b=c".to_owned()),
            1 => Just("a=b?c".to_owned()),
            1 => Just("a=b#c".to_owned()),
            1 => Just("a".to_owned()),
        ];
        (
            scheme,
            prop::collection::vec(host_piece, 1..3),
            prop::collection::vec(path_piece, 1..4),
            proptest::option::of(query),
        )
            .prop_map(|(scheme, host, path, query)| {
                let mut s = format!("{scheme}{}{}", host.concat(), path.concat());
                if let Some(q) = query {
                    s.push('?');
                    s.push_str(&q);
                }
                s
            })
    }

    /// Keys on both sides of the shortcut's line (valid, invalid, and of
    /// as many segments as a request may have and one more).
    pub(crate) fn key_near_plain() -> impl Strategy<Value = String> {
        prop_oneof![
            "[A-Za-z0-9_-]{1,8}",
            "[A-Za-z0-9]{1,4}/[A-Za-z0-9_-]{1,4}",
            Just(String::new()),
            Just("_a".to_owned()),
            Just("a//b".to_owned()),
            Just("a/./b".to_owned()),
            Just("a/b/".to_owned()),
            Just(["a"; 128].join("/")),
            Just(["a"; 129].join("/")),
        ]
    }

    /// The generator reaches both sides of the shortcut's line, so the
    /// property test below compares the shortcut where it is taken.
    #[test]
    fn the_generator_reaches_both_sides_of_the_shortcut() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = url_near_plain();
        let plain = (0..2000)
            .filter(|_| {
                let url = strategy.new_tree(&mut runner).expect("a value").current();
                crate::values::destination::is_plain_absolute(&url)
            })
            .count();
        assert!((200..=1800).contains(&plain), "{plain} of 2000 plain");
    }

    #[test]
    fn the_shapes_qrtag_stores_take_the_shortcut() {
        for url in [
            "https://www.example.com/campaigns/spring/poster-0000001?src=qr",
            "http://innerfunction.com/wp/whelans/?p=14",
            "https://a.example/",
            "https://docs.example.org/guide/page_2.html",
        ] {
            assert!(crate::values::destination::is_plain_absolute(url), "{url}");
        }
        for url in [
            "https://example.com",
            "https://a.example:8443/",
            "https://a.example/a/../b",
            "https://xn--bcher-kva.example/",
            "https://1.2.3.4/",
            "https://a.example/x#top",
            "/docs/page",
        ] {
            assert!(!crate::values::destination::is_plain_absolute(url), "{url}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The shortcut of `Destination::parse` and of `direct_location`
        /// gives what the full computation gives, for every text: a
        /// destination a full load or a restart trusts without the URL
        /// parser is one the parser would have passed, unchanged.
        #[test]
        fn direct_location_shortcut_is_the_full_answer(
            url in url_near_plain(),
            key in key_near_plain(),
        ) {
            prop_assert_eq!(
                crate::values::destination::Destination::parse(&url),
                crate::values::destination::Destination::parse_in_full(&url),
                "{}", url
            );
            prop_assert_eq!(
                direct_location(&key, &url),
                direct_location_in_full(&key, &url),
                "{} {}", key, url
            );
            // The one-pass query test is the pair-by-pair one it replaced.
            let query = url.split_once('?').map_or("", |(_, q)| q);
            let pairwise = query.is_empty()
                || query.split('&').all(|pair| {
                    pair.bytes().filter(|&b| b == b'=').count() == 1
                        && pair.bytes().all(|b| {
                            b.is_ascii_alphanumeric()
                                || matches!(b, b'*' | b'-' | b'.' | b'_' | b'=' | b'+')
                        })
                });
            prop_assert_eq!(crate::values::destination::is_serialized_form(query), pairwise, "{}", query);
            // Issue 34: a snapshot key (valid) with its value judged once
            // is answered as `plain_direct_location` answers it.
            if crate::values::link_key::LinkKey::is_valid(&key) {
                let plain = crate::values::destination::is_plain_absolute(&url);
                prop_assert_eq!(
                    judged_direct_location(&key, &url, plain),
                    plain_direct_location(&key, &url),
                    "{} {}", key, url
                );
            }
        }
    }
}

//! The synchronizer token: every form carries the session's token in a
//! hidden `csrf` field, and a POST whose field does not match is refused
//! before anything else is read. `SameSite=Strict` alone would do in
//! today's browsers; the token also covers older ones and a login form
//! posted from another site.

use subtle::ConstantTimeEq;

/// The form field's name.
pub const FIELD: &str = "csrf";

/// The one-line body of the 403.
pub const REFUSED: &str = "missing or wrong CSRF token: reload the page and try again\n";

/// Whether the form's token is the session's, compared in constant time.
pub fn matches(session_token: &str, given: Option<&str>) -> bool {
    match given {
        Some(given) if !session_token.is_empty() => {
            bool::from(session_token.as_bytes().ct_eq(given.as_bytes()))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_token_matches() {
        assert!(matches("abc", Some("abc")));
        assert!(!matches("abc", Some("abd")));
        assert!(!matches("abc", Some("ab")));
        assert!(!matches("abc", None));
        assert!(!matches("", Some("")));
    }
}

//! `UserName`: an account's name on the embedded store (issue 35). Kept to
//! a plain shape so it reads the same in the CLI's tab-separated lists, a
//! URL's query, the audit log and the device cookie, with no look-alikes
//! (lower case only) and nothing to escape.

use std::fmt;

/// The longest name.
pub const MAX_LEN: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UserName(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a user name: 1 to {MAX_LEN} lower-case letters, digits, '.', '_' or '-', \
     starting with a letter or a digit"
)]
pub struct BadUserName(pub String);

impl UserName {
    pub fn parse(s: &str) -> Result<Self, BadUserName> {
        let ok_char = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b".-_".contains(&b);
        let bytes = s.as_bytes();
        let ok = !bytes.is_empty()
            && bytes.len() <= MAX_LEN
            && bytes.iter().all(|&b| ok_char(b))
            && bytes[0].is_ascii_alphanumeric();
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(BadUserName(s.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UserName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for UserName {
    type Err = BadUserName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_pass_and_others_are_refused() {
        for ok in [
            "ann",
            "a",
            "bob.smith",
            "x_1-2",
            "9lives",
            &"a".repeat(MAX_LEN),
        ] {
            assert_eq!(
                UserName::parse(ok).map(|n| n.to_string()),
                Ok(ok.to_owned())
            );
        }
        for bad in [
            "",
            "Ann",
            "-ann",
            ".x",
            "a b",
            "ann:",
            "ü",
            &"a".repeat(MAX_LEN + 1),
        ] {
            assert!(UserName::parse(bad).is_err(), "{bad:?}");
        }
        let e = UserName::parse("Ann").expect_err("capital");
        assert!(
            e.to_string().starts_with("\"Ann\" is not a user name"),
            "{e}"
        );
    }
}

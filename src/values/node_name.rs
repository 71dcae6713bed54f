//! What one node of a several-node service calls itself.

use std::fmt;

/// What one node of a several-node service calls itself in its own
/// diagnostics and metrics. Kept to characters that need no quoting in a log
/// line, a label value or a file name, so it reads the same everywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeName(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a node name is 1 to 64 letters, digits, '.', '_' or '-': {0:?}")]
pub struct InvalidNodeName(pub String);

impl NodeName {
    pub fn parse(s: &str) -> Result<Self, InvalidNodeName> {
        let valid = (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if valid {
            Ok(Self(s.to_owned()))
        } else {
            Err(InvalidNodeName(s.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for NodeName {
    type Err = InvalidNodeName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_name_needs_no_quoting() {
        for ok in ["a", "edge-1", "dub_2.example", &"n".repeat(64)] {
            assert_eq!(
                NodeName::parse(ok).map(|n| n.to_string()),
                Ok(ok.to_owned())
            );
        }
        for bad in ["", "edge 1", "a\"b", "node=1", "caf\u{e9}", &"n".repeat(65)] {
            assert!(NodeName::parse(bad).is_err(), "{bad:?}");
        }
    }
}

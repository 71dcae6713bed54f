//! `hsts`: whether HTTPS answers carry `Strict-Transport-Security`, and
//! for how long browsers keep to HTTPS. Off unless asked: once a browser
//! has seen it, the domain cannot go back to plain HTTP for `max-age`.

/// `hsts = true`: a year, what HSTS preload lists ask for.
pub const DEFAULT_MAX_AGE: u64 = 365 * 24 * 3600;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hsts {
    pub max_age: u64,
}

/// `--hsts` as given: `true`, `false`, or a max-age in seconds (0 tells
/// browsers to forget an earlier one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HstsArg(pub Option<Hsts>);

impl HstsArg {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim() {
            "true" => Ok(Self(Some(Hsts {
                max_age: DEFAULT_MAX_AGE,
            }))),
            "false" => Ok(Self(None)),
            n => n
                .parse::<u64>()
                .ok()
                .filter(|n| *n <= 2 * DEFAULT_MAX_AGE)
                .map(|max_age| Self(Some(Hsts { max_age })))
                .ok_or_else(|| {
                    format!(
                        "`{s}` is not true, false or a max-age in seconds (at most {})",
                        2 * DEFAULT_MAX_AGE
                    )
                }),
        }
    }
}

impl Hsts {
    /// The header's value.
    pub fn header_value(self) -> String {
        format!("max-age={}", self.max_age)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn true_false_or_seconds() {
        assert_eq!(
            HstsArg::parse("true").map(|a| a.0.map(Hsts::header_value)),
            Ok(Some("max-age=31536000".into()))
        );
        assert_eq!(HstsArg::parse("false"), Ok(HstsArg(None)));
        assert_eq!(
            HstsArg::parse("600").map(|a| a.0),
            Ok(Some(Hsts { max_age: 600 }))
        );
        for bad in ["yes", "-1", "1e9", "99999999999"] {
            assert!(HstsArg::parse(bad).is_err(), "{bad}");
        }
    }
}
